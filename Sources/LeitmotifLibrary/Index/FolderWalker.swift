import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

#if canImport(Glibc)
  import Glibc
#endif

/// Walks the library folders with `opendir`/`readdir`/`lstat` and lists the audio and playlist
/// files in them, reading nothing but directories and file sizes.
///
/// The rules (see "The index" in the README):
/// - Only names that end in `.ogg`, `.oga`, `.opus`, `.mp3` or `.flac` are audio candidates (a scan of a folder of
///   artwork and notes stays cheap), `.m3u`, `.m3u8` and `.pls` are playlists (case-insensitive).
/// - Hidden files and folders (names starting with ".") are skipped: trash folders, thumbnails
///   and tools' caches live there.
/// - Every path is a real path (the folders are resolved with `realpath` first), so "inside the
///   library" is a plain prefix test.
/// - Symbolic links are never followed. A link is resolved with `realpath`: when its target is
///   inside a library folder the walk reaches the target under its own path anyway (so following
///   it would only list the file twice); when it is outside, loops or points nowhere, it is
///   reported in `skipped`. So nothing outside the folders is read and link loops cannot recur.
/// - Folders are walked once each (by device and inode), which also covers bind mounts and
///   overlapping library folders.
/// - A name that is not UTF-8 (an old Latin-1 rip's `Caf\xE9.mp3`) is indexed like any other:
///   its path is the `FileSystemPath` string that keeps its bytes exact (so it opens), shown with
///   replacement characters. Every call that hands a path to the kernel goes through
///   `FileSystemPath.withCString`.
/// - An unreadable folder is reported, and its indexed items are kept (they may come back).
///
/// Thread safety: a value type; walk on any thread.
package struct FolderWalker {
  package static let audioExtensions: Set<String> = [
    "ogg", "oga", "opus", "mp3", "flac", "wav", "wave", "aif", "aiff", "aifc",
  ]
  static let playlistExtensions: Set<String> = ["m3u", "m3u8", "pls"]
  /// Audio a music folder often holds that Leitmotif does not play: counted by extension and
  /// reported by the scan (so a folder of them does not scan as "0 added, 0 failed" with no word
  /// why), never opened.
  static let unsupportedAudioExtensions: Set<String> = [
    "m4a", "m4b", "mp4", "aac", "alac", "wma", "ape", "wv", "mpc", "dsf", "dff", "ac3",
    "mka", "webm", "spx", "mp2",
  ]

  package struct File: Sendable, Hashable {
    package var path: String
    var sizeBytes: Int64
    var modificationNanoseconds: Int64
  }

  package struct Result: Sendable {
    package var audioFiles: [File] = []
    var playlists: [String] = []
    var folders: [String] = []
    package var failures: [ScanFailure] = []
    var skipped: [ScanFailure] = []
    /// Files of `unsupportedAudioExtensions`, by extension (lowercased).
    var unsupported: [String: Int] = [:]
    /// Folders (and library roots) that could not be read: items under them are not removed.
    var unreadableFolders: [String] = []
  }

  /// The library folders, resolved to real paths (missing ones reported in `failures`).
  let roots: [String]
  private let missingRoots: [ScanFailure]

  package init(folders: [URL]) {
    var roots: [String] = []
    var missing: [ScanFailure] = []
    for folder in folders {
      if let real = FileSystemPath.realPath(folder.path) {
        if !roots.contains(real) { roots.append(real) }
      } else {
        missing.append(ScanFailure(path: folder.path, reason: "library folder: \(Self.errnoText(errno))"))
      }
    }
    self.roots = roots
    missingRoots = missing
  }

  /// Whether `path` (a real path) is one of the library folders or inside one.
  func isInside(_ path: String) -> Bool {
    roots.contains { root in root == "/" || path == root || path.hasPrefix(root + "/") }
  }

  package func walk() -> Result {
    var result = Result()
    result.failures = missingRoots
    result.unreadableFolders = missingRoots.map(\.path)
    var visited = Set<FolderID>()
    var pending = roots.reversed().map { $0 }
    while let folder = pending.popLast() {
      var status = stat()
      guard FileSystemPath.withCString(folder, { stat($0, &status) }) == 0 else {
        result.failures.append(ScanFailure(path: folder, reason: "cannot read folder: \(Self.errnoText(errno))"))
        result.unreadableFolders.append(folder)
        continue
      }
      guard visited.insert(FolderID(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))).inserted else {
        continue
      }
      guard let directory = FileSystemPath.withCString(folder, { opendir($0) }) else {
        result.failures.append(ScanFailure(path: folder, reason: "cannot read folder: \(Self.errnoText(errno))"))
        result.unreadableFolders.append(folder)
        continue
      }
      result.folders.append(folder)
      var subfolders: [String] = []
      while let entry = readdir(directory) {
        let (nameBytes, type) = withUnsafeBytes(of: entry.pointee.d_name) { raw in
          (Array(raw.prefix(while: { $0 != 0 })), entry.pointee.d_type)
        }
        if nameBytes.first == UInt8(ascii: ".") { continue }  // ".", ".." and hidden names
        let name = FileSystemPath.string(decoding: nameBytes)
        let path = folder == "/" ? "/" + name : folder + "/" + name
        switch type {
        case UInt8(DT_DIR):
          subfolders.append(path)
        case UInt8(DT_REG):
          add(path, name: name, in: dirfd(directory), to: &result)
        case UInt8(DT_LNK):
          checkLink(path, into: &result)
        default:
          // DT_UNKNOWN (some file systems): ask lstat.
          var entryStatus = stat()
          guard FileSystemPath.withCString(path, { lstat($0, &entryStatus) }) == 0 else { continue }
          switch entryStatus.st_mode & S_IFMT {
          case S_IFDIR: subfolders.append(path)
          case S_IFREG: add(path, name: name, in: dirfd(directory), to: &result)
          case S_IFLNK: checkLink(path, into: &result)
          default: break
          }
        }
      }
      closedir(directory)
      pending.append(contentsOf: subfolders.sorted().reversed())
    }
    return result
  }

  package enum Kind { case audio, playlist }

  static func kind(of path: String) -> Kind? {
    guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return nil }
    let ext = path[path.index(after: dot)...].lowercased()
    if audioExtensions.contains(ext) { return .audio }
    if playlistExtensions.contains(ext) { return .playlist }
    return nil
  }

  /// `name` in the open folder `folder`: `fstatat` on the folder's descriptor spares the kernel
  /// walking the whole path again for every file.
  private func add(_ path: String, name: String, in folder: Int32, to result: inout Result) {
    switch Self.kind(of: name) {
    case .audio:
      // A file that vanished since readdir is simply not there.
      var status = stat()
      guard FileSystemPath.withCString(name, { fstatat(folder, $0, &status, AT_SYMLINK_NOFOLLOW) }) == 0,
        status.st_mode & S_IFMT == S_IFREG
      else {
        return
      }
      result.audioFiles.append(Self.file(path, status))
    case .playlist:
      result.playlists.append(path)
    case nil:
      if let dot = name.lastIndex(of: ".") {
        let ext = name[name.index(after: dot)...].lowercased()
        if Self.unsupportedAudioExtensions.contains(ext) { result.unsupported[ext, default: 0] += 1 }
      }
    }
  }

  /// A symbolic link: never followed (see the type's comment); reported when it leaves the
  /// library, loops or dangles.
  private func checkLink(_ path: String, into result: inout Result) {
    guard let target = FileSystemPath.realPath(path) else {
      let code = errno
      let reason =
        code == ELOOP
        ? "a symbolic-link loop: not followed"
        : "a symbolic link to nothing (\(Self.errnoText(code))): not followed"
      result.skipped.append(ScanFailure(path: path, reason: reason))
      return
    }
    if !isInside(target) {
      result.skipped.append(
        ScanFailure(path: path, reason: "a symbolic link that leaves the library folders (to \(target)): not followed"))
    }
  }

  /// Size and modification time (`lstat`), or nil when the file is gone or not a regular file.
  static func status(of path: String) -> File? {
    var status = stat()
    guard FileSystemPath.withCString(path, { lstat($0, &status) }) == 0, status.st_mode & S_IFMT == S_IFREG else {
      return nil
    }
    return file(path, status)
  }

  private static func file(_ path: String, _ status: stat) -> File {
    let nanoseconds = Int64(status.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(status.st_mtim.tv_nsec)
    return File(path: path, sizeBytes: Int64(status.st_size), modificationNanoseconds: nanoseconds)
  }

  package static func errnoText(_ code: Int32) -> String { String(cString: strerror(code)) }

  /// What a shell would say about a failed file call of FoundationEssentials (`FileManager`,
  /// `Data(contentsOf:)`, `String(contentsOfFile:)`): the text of the errno its `CocoaError`
  /// carries ("Not a directory"). Essentials' errors have no `localizedDescription`, and full
  /// Foundation's was long and mentions Cocoa ("The operation could not be completed.
  /// (NSCocoaErrorDomain error 512.)"); without an errno, the sentence Foundation gave.
  package static func errorText(_ error: any Error) -> String {
    guard let error = error as? CocoaError else { return String(describing: error) }
    if let posix = error.underlying as? POSIXError { return errnoText(posix.code.rawValue) }
    switch error.code {
    case .fileNoSuchFile, .fileReadNoSuchFile: return errnoText(ENOENT)
    case .fileReadNoPermission, .fileWriteNoPermission: return errnoText(EACCES)
    case .fileReadCorruptFile: return "The file isn’t in the correct format."
    default: return "The operation could not be completed. (NSCocoaErrorDomain error \(error.code.rawValue).)"
    }
  }

  private struct FolderID: Hashable {
    var device: UInt64
    var inode: UInt64
  }
}
