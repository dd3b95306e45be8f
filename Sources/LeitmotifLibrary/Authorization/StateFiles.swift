import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

#if canImport(Glibc)
  import Glibc
#endif

/// The one file in the authorization code that makes POSIX file calls (stat, open, read, flock,
/// mkdirat, renameat, fsync): every `errno` is read right after its call and turned into a
/// `StateFileError` here, once.
///
/// The state folder is Leitmotif's own: it is opened once with O_NOFOLLOW (`StateFolder`) and
/// every file in it is created, read, renamed and chmod-ed relative to that descriptor, never by
/// a path that a symbolic link put in place could redirect. The policy file is the
/// administrator's and may be a link, but one that leads nowhere is not "no policy".

/// Why a state file (the remembered answers, the policy, their lock, their folder) could not be
/// used.
package struct StateFileError: Error, Sendable, CustomStringConvertible {
  package enum Kind: Sendable {
    /// A system call failed with this `errno`.
    case system(call: String, errno: Int32)
    /// The path is there but is not a regular file (a directory, a FIFO, a device).
    case notRegularFile
    /// The path is there but is not a folder.
    case notDirectory
    /// A symbolic link where Leitmotif's own folder or file (`expected`) should be: not followed.
    case symbolicLink(expected: String)
    /// A symbolic link to `target`, which does not exist.
    case danglingLink(target: String)
    /// Owned by another user than the one running: not the player's own answers.
    case notOwnedByUser(owner: UInt32, user: UInt32)
    /// Writable by the group or others (`mode`): anybody could have written it.
    case writableByOthers(mode: UInt32)
    /// Bigger than the limit for its kind: not something Leitmotif wrote.
    case tooLarge(bytes: Int64, limitBytes: Int)
  }
  var path: String
  var kind: Kind

  package var description: String {
    switch kind {
    case .system(let call, let code): return "\(call) failed: \(String(cString: strerror(code)))"
    case .notRegularFile: return "not a regular file"
    case .notDirectory: return "not a folder"
    case .symbolicLink(let expected):
      return "a symbolic link (expected \(expected); links are not followed there)"
    case .danglingLink(let target): return "a symbolic link to \(target), which does not exist"
    case .notOwnedByUser(let owner, let user):
      return "owned by uid \(owner), not by the user running this (uid \(user))"
    case .writableByOthers(let mode):
      return
        "writable by other users (mode \(String(mode, radix: 8)), expected 0600), so anybody could have written it"
    case .tooLarge(let bytes, let limit): return "\(bytes) bytes, more than the \(limit) such a file can have"
    }
  }
}

/// One version of a file: what `status()` compares on every check, for the price of a `stat`.
/// An atomic replace (a rename) gives a new inode; an edit in place changes the size or the
/// modification or change time.
package struct FileVersion: Equatable, Sendable {
  var device: UInt64
  var inode: UInt64
  var sizeBytes: Int64
  var modifiedNanoseconds: Int64
  var changedNanoseconds: Int64

  init(_ status: stat) {
    device = UInt64(status.st_dev)
    inode = UInt64(status.st_ino)
    sizeBytes = Int64(status.st_size)
    modifiedNanoseconds = Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
    changedNanoseconds = Int64(status.st_ctim.tv_sec) * 1_000_000_000 + Int64(status.st_ctim.tv_nsec)
  }
}

package enum StateFiles {
  /// The version of the file at `path` (following symbolic links), or nil when there is none.
  /// A symbolic link whose target is missing is not "none": the link's own version is returned,
  /// so that reading it (and failing) decides, and the target appearing is a change.
  static func version(of path: String) throws(StateFileError) -> FileVersion? {
    var status = stat()
    guard stat(path, &status) == 0 else {
      let code = errno
      guard code == ENOENT || code == ENOTDIR else {
        throw StateFileError(path: path, kind: .system(call: "stat", errno: code))
      }
      guard lstat(path, &status) == 0 else { return nil }
      return FileVersion(status)
    }
    return FileVersion(status)
  }

  /// The contents of the regular file at `path` (following symbolic links: the policy file is
  /// the administrator's to place) and the version that was read, or nil when there is no file.
  /// Opened non-blocking, so a FIFO put in its place cannot hang the caller.
  /// - Throws: `.danglingLink` for a link to nothing: that is a policy somebody meant to have,
  ///   not the absence of one.
  static func readRegularFile(_ path: String, limitBytes: Int) throws(StateFileError) -> (Data, FileVersion)? {
    let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
    guard descriptor >= 0 else {
      let code = errno
      guard code == ENOENT || code == ENOTDIR else {
        throw StateFileError(path: path, kind: .system(call: "open", errno: code))
      }
      var status = stat()
      if code == ENOENT, lstat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFLNK {
        throw StateFileError(path: path, kind: .danglingLink(target: linkTarget(path) ?? "a missing file"))
      }
      return nil
    }
    defer { close(descriptor) }
    return try readAll(descriptor, path: path, limitBytes: limitBytes) { _ throws(StateFileError) in }
  }

  /// Where the symbolic link at `path` points, as written in it.
  private static func linkTarget(_ path: String) -> String? {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let count = readlink(path, &buffer, buffer.count - 1)
    guard count >= 0 else { return nil }
    return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// Reads the open `descriptor` to its end: a regular file of at most `limitBytes`, which
  /// `check` accepts given its `stat`.
  fileprivate static func readAll(
    _ descriptor: Int32, path: String, limitBytes: Int, check: (stat) throws(StateFileError) -> Void
  ) throws(StateFileError) -> (Data, FileVersion) {
    var status = stat()
    guard fstat(descriptor, &status) == 0 else {
      throw StateFileError(path: path, kind: .system(call: "fstat", errno: errno))
    }
    guard (status.st_mode & S_IFMT) == S_IFREG else { throw StateFileError(path: path, kind: .notRegularFile) }
    try check(status)
    guard status.st_size <= limitBytes else {
      throw StateFileError(path: path, kind: .tooLarge(bytes: Int64(status.st_size), limitBytes: limitBytes))
    }
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 16_384)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
      if count < 0 {
        if errno == EINTR { continue }
        throw StateFileError(path: path, kind: .system(call: "read", errno: errno))
      }
      if count == 0 { break }
      data.append(contentsOf: buffer[0..<count])
      guard data.count <= limitBytes else {
        throw StateFileError(path: path, kind: .tooLarge(bytes: Int64(data.count), limitBytes: limitBytes))
      }
    }
    return (data, FileVersion(status))
  }
}

/// Leitmotif's state folder, open: one directory descriptor, opened with O_NOFOLLOW and closed
/// when this value goes away. The files in it are created (O_CREAT with O_NOFOLLOW or O_EXCL),
/// read, renamed and removed relative to the descriptor, and the folder's mode is set with
/// `fchmod` on it, so a symbolic link at the folder or at a file in it is refused, never followed:
/// `leitmotif access allow` must not chmod or write into wherever a link points.
///
/// The folders above it (`$HOME`, `$XDG_STATE_HOME`) are the user's own layout, where a link may
/// be deliberate: they are followed, and made (with the folder's mode) when missing.
package struct StateFolder: ~Copyable {
  let path: String
  /// Fileprivate: `StateFileLock` opens its file relative to it.
  fileprivate let descriptor: Int32

  /// The folder at `path`, or nil when there is none.
  /// - Throws: `.symbolicLink` or `.notDirectory` when something else is there.
  init?(opening path: String) throws(StateFileError) {
    let parent = try Self.openAncestor(FileSystemPath.deletingLastComponent(path), creatingWith: nil)
    guard let parent else { return nil }
    defer { close(parent) }
    guard let descriptor = try Self.openChild(of: parent, path: path) else { return nil }
    self.path = path
    self.descriptor = descriptor
  }

  /// The folder at `path`, made when missing (with any missing parents), with mode `mode` even
  /// when it was there already: it is Leitmotif's own folder.
  /// - Throws: `.symbolicLink` or `.notDirectory` when something else is there, `.notOwnedByUser`
  ///   for another user's folder (whose mode is not ours to change).
  init(creating path: String, mode: mode_t) throws(StateFileError) {
    let parent = try Self.openAncestor(FileSystemPath.deletingLastComponent(path), creatingWith: mode)
    guard let parent else { throw StateFileError(path: path, kind: .system(call: "open", errno: ENOENT)) }
    defer { close(parent) }
    let descriptor = try Self.makeChild(of: parent, path: path, mode: mode)
    var status = stat()
    guard fstat(descriptor, &status) == 0 else {
      let code = errno
      close(descriptor)
      throw StateFileError(path: path, kind: .system(call: "fstat", errno: code))
    }
    guard status.st_uid == geteuid() else {
      close(descriptor)
      throw StateFileError(path: path, kind: .notOwnedByUser(owner: status.st_uid, user: geteuid()))
    }
    // mkdir's mode is filtered by the umask; fchmod is not, and it changes this very folder.
    guard fchmod(descriptor, mode) == 0 else {
      let code = errno
      close(descriptor)
      throw StateFileError(path: path, kind: .system(call: "fchmod", errno: code))
    }
    self.path = path
    self.descriptor = descriptor
  }

  deinit { close(descriptor) }

  func path(of name: String) -> String { path + "/" + name }

  /// The folder at `ancestor` (following links), or nil when it is missing and `creatingWith` is
  /// nil; missing folders are made with that mode (and fchmod-ed to it: they are new and ours).
  private static func openAncestor(_ ancestor: String, creatingWith mode: mode_t?)
    throws(StateFileError) -> Int32?
  {
    let folder = ancestor.isEmpty ? "." : ancestor
    let descriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if descriptor >= 0 { return descriptor }
    let code = errno
    guard code == ENOENT, let mode else {
      if mode == nil, code == ENOENT || code == ENOTDIR { return nil }
      throw StateFileError(path: folder, kind: .system(call: "open", errno: code))
    }
    let parentPath = FileSystemPath.deletingLastComponent(folder)
    guard parentPath != folder else { throw StateFileError(path: folder, kind: .system(call: "open", errno: code)) }
    guard let parent = try openAncestor(parentPath, creatingWith: mode) else {
      throw StateFileError(path: parentPath, kind: .system(call: "open", errno: ENOENT))
    }
    defer { close(parent) }
    return try makeChild(of: parent, path: folder, mode: mode)
  }

  /// mkdirat, then opens what is there without following a link; a folder this call made is
  /// fchmod-ed to `mode`.
  private static func makeChild(of parent: Int32, path: String, mode: mode_t) throws(StateFileError) -> Int32 {
    let name = FileSystemPath.lastComponent(path)
    var made = true
    if mkdirat(parent, name, mode) != 0 {
      let code = errno
      guard code == EEXIST else { throw StateFileError(path: path, kind: .system(call: "mkdir", errno: code)) }
      made = false
    }
    guard let descriptor = try openChild(of: parent, path: path) else {
      throw StateFileError(path: path, kind: .system(call: "open", errno: ENOENT))
    }
    if made, fchmod(descriptor, mode) != 0 {
      let code = errno
      close(descriptor)
      throw StateFileError(path: path, kind: .system(call: "fchmod", errno: code))
    }
    return descriptor
  }

  /// The folder `path`'s last component in `parent`, opened without following a link; nil when
  /// there is nothing there.
  private static func openChild(of parent: Int32, path: String) throws(StateFileError) -> Int32? {
    let name = FileSystemPath.lastComponent(path)
    let descriptor = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
    if descriptor >= 0 { return descriptor }
    let code = errno
    if code == ENOENT { return nil }
    // ELOOP for a link, ENOTDIR for anything else that is not a folder: say which it is.
    var status = stat()
    if fstatat(parent, name, &status, AT_SYMLINK_NOFOLLOW) == 0 {
      if (status.st_mode & S_IFMT) == S_IFLNK {
        throw StateFileError(path: path, kind: .symbolicLink(expected: "a folder of Leitmotif's own"))
      }
      if (status.st_mode & S_IFMT) != S_IFDIR { throw StateFileError(path: path, kind: .notDirectory) }
    }
    throw StateFileError(path: path, kind: .system(call: "open", errno: code))
  }

  /// The contents of the file `name` in this folder and the version read, or nil when there is
  /// none. Only the player's own file counts: a symbolic link, a file owned by another user, or
  /// one the group or others can write (anybody could have put an answer in it) is refused.
  /// Opened non-blocking, so a FIFO put in its place cannot hang the caller.
  func readOwnFile(_ name: String, limitBytes: Int) throws(StateFileError) -> (Data, FileVersion)? {
    let filePath = path(of: name)
    let file = openat(descriptor, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
    guard file >= 0 else {
      let code = errno
      if code == ENOENT { return nil }
      if code == ELOOP {
        throw StateFileError(path: filePath, kind: .symbolicLink(expected: "a regular file of Leitmotif's own"))
      }
      throw StateFileError(path: filePath, kind: .system(call: "open", errno: code))
    }
    defer { close(file) }
    return try StateFiles.readAll(file, path: filePath, limitBytes: limitBytes) { status throws(StateFileError) in
      guard status.st_uid == geteuid() else {
        throw StateFileError(path: filePath, kind: .notOwnedByUser(owner: status.st_uid, user: geteuid()))
      }
      guard status.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
        throw StateFileError(path: filePath, kind: .writableByOthers(mode: status.st_mode & 0o7777))
      }
    }
  }

  /// Replaces the file `name` with `data` atomically: a temporary file in this folder (made with
  /// O_EXCL, mode `mode` from the start, so the contents are never readable by others), written
  /// and flushed, renamed over `name`, then the folder flushed. A reader sees the old file or the
  /// new one, never half of one; a link at `name` is replaced, not followed.
  func writeAtomically(_ data: Data, to name: String, mode: mode_t) throws(StateFileError) {
    var temporary = ""
    var file: Int32 = -1
    for _ in 0..<100 {
      temporary = "\(name).\(String(UInt64.random(in: 0...UInt64.max), radix: 36))"
      // O_EXCL: never an existing file, never through a link.
      file = openat(descriptor, temporary, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
      if file >= 0 || errno != EEXIST { break }
    }
    guard file >= 0 else {
      throw StateFileError(path: path(of: temporary), kind: .system(call: "open", errno: errno))
    }
    var closed = false
    defer {
      if !closed { close(file) }
    }
    do throws(StateFileError) {
      // The open's mode is filtered by the umask; fchmod is not.
      guard fchmod(file, mode) == 0 else {
        throw StateFileError(path: path(of: temporary), kind: .system(call: "fchmod", errno: errno))
      }
      var written = 0
      while written < data.count {
        let count = data.withUnsafeBytes { write(file, $0.baseAddress! + written, $0.count - written) }
        if count < 0 {
          if errno == EINTR { continue }
          throw StateFileError(path: path(of: temporary), kind: .system(call: "write", errno: errno))
        }
        written += count
      }
      guard fsync(file) == 0 else {
        throw StateFileError(path: path(of: temporary), kind: .system(call: "fsync", errno: errno))
      }
      closed = true
      guard close(file) == 0 else {
        throw StateFileError(path: path(of: temporary), kind: .system(call: "close", errno: errno))
      }
      guard renameat(descriptor, temporary, descriptor, name) == 0 else {
        throw StateFileError(path: path(of: name), kind: .system(call: "rename", errno: errno))
      }
    } catch {
      unlinkat(descriptor, temporary, 0)
      throw error
    }
    // The rename is durable once the folder is flushed; a failure here loses nothing now.
    fsync(descriptor)
  }

  /// Renames `name` to `newName` in this folder (replacing it); nothing to do when there is no
  /// `name`.
  func move(_ name: String, to newName: String) throws(StateFileError) {
    guard renameat(descriptor, name, descriptor, newName) == 0 else {
      let code = errno
      if code == ENOENT { return }
      throw StateFileError(path: path(of: name), kind: .system(call: "rename", errno: code))
    }
  }
}

/// An exclusive `flock` on a lock file, held from `init` until this value goes away (closing the
/// descriptor releases it). Writers of the remembered answers take it so that two processes
/// changing different applications' answers at once do not lose one of them; readers need no
/// lock, since the file is only ever replaced whole.
package struct StateFileLock: ~Copyable {
  private let descriptor: Int32

  /// Blocks until the lock is free. Creates the lock file `name` in `folder` (mode 0600) when
  /// missing; a symbolic link there is refused (O_NOFOLLOW), so no file is made where it points.
  init(_ name: String, in folder: borrowing StateFolder) throws(StateFileError) {
    let path = folder.path(of: name)
    // O_NONBLOCK: a FIFO or device put there cannot hang the open (and flock blocks regardless).
    let descriptor = openat(folder.descriptor, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else {
      let code = errno
      if code == ELOOP {
        throw StateFileError(path: path, kind: .symbolicLink(expected: "a regular file of Leitmotif's own"))
      }
      throw StateFileError(path: path, kind: .system(call: "open", errno: code))
    }
    var status = stat()
    guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
      close(descriptor)
      throw StateFileError(path: path, kind: .notRegularFile)
    }
    while flock(descriptor, LOCK_EX) != 0 {
      let code = errno
      if code == EINTR { continue }
      close(descriptor)
      throw StateFileError(path: path, kind: .system(call: "flock", errno: code))
    }
    self.descriptor = descriptor
  }

  deinit { close(descriptor) }
}
