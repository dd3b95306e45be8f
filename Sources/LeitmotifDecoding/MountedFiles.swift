import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// One open file of a mount: the bytes a game hands Leitmotif from its own storage (a pak, an
/// archive, a download), read at any offset.
///
/// Thread safety: one thread at a time per reader (the decoder that owns it); readers of the same
/// mount may be used on several threads at once.
public protocol MountedFileReader: AnyObject {
  /// The file's length in bytes.
  var sizeBytes: Int64 { get }
  /// Copies up to `count` bytes from `offset` into `buffer`: the number copied, 0 at or past the
  /// end, -1 when the storage failed (the decoder then reports a read error naming the file).
  func read(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) -> Int
}

/// Files that live in the game's memory or its own archive, not on disk, under paths the game
/// chooses: music from a pak file, a cue file shipped inside one, a song downloaded into memory.
///
/// A mounted path shadows the disk for everything Leitmotif opens: queue items, one-shot players,
/// a cue file and its `assets` folder (a mounted folder is listed from its mount, so bundled
/// selections by tag work), the analysis cache. Paths are absolute after mounting: a relative one
/// is taken against the current directory when it is mounted, and `.`, `..` and repeated slashes
/// are resolved, so `"Assets/music"` mounted in `/game` is opened as `/game/Assets/music/...` and
/// as `Assets/music/...`.
///
/// The table is the process's (like the file system it stands in for), not one engine's: mount
/// before you create the engine that plays from it, and unmount after its music has stopped.
///
/// Thread safety: every call may be made from any thread. Opening a mounted file takes a lock
/// the mount table holds only while it looks the path up; reads take none.
public enum MountedFiles {
  /// Why a mount or unmount was refused.
  public struct MountError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong.
    public enum Reason: Sendable, Equatable {
      /// Something is already mounted at the path, or inside it, or around it.
      case alreadyMounted(String)
      /// Nothing is mounted at the path.
      case notMounted
      /// Files of the mount are open (music playing from it): stop it first.
      case inUse(openFiles: Int)
      /// A name the mount cannot hold (empty, absolute, with `..`, or twice).
      case badName(String)
      /// The path is empty.
      case emptyPath
    }

    /// The path as given.
    public var path: String
    /// What was wrong.
    public var reason: Reason

    /// A refusal of `path` for `reason`.
    public init(path: String, reason: Reason) {
      self.path = path
      self.reason = reason
    }

    /// The refusal in a sentence that names the path.
    public var description: String {
      let shown = FileSystemPath.displayed(path)
      switch reason {
      case .alreadyMounted(let other): return "cannot mount \(shown): \(other) is mounted already"
      case .notMounted: return "cannot unmount \(shown): nothing is mounted there"
      case .inUse(let count):
        return
          "cannot unmount \(shown): \(count) of its files \(count == 1 ? "is" : "are") open (stop the music that plays from it first)"
      case .badName(let name):
        return "cannot mount \(shown): the file name \"\(name)\" must be a relative path without \"..\", given once"
      case .emptyPath: return "cannot mount an empty path"
      }
    }
  }

  /// Mounts a copy of `contents` as one file at `path`. The copy is Leitmotif's, so the caller's
  /// buffer may go at once.
  /// - Throws: `MountError` when the path is empty or overlaps a mount.
  public static func mount(contents: [UInt8], at path: String) throws(MountError) {
    let bytes = MemoryBytes(contents)
    try add(path: path) { root, generation in Mount(root: root, generation: generation, content: .memory(bytes)) }
  }

  /// Mounts a folder at `path` holding `files` (relative paths, `"battle/drums.ogg"`), each read
  /// through `open`: it gets a name from `files` and returns that file's reader, or nil when it
  /// cannot (the open then fails as a missing file would). `open` is called on Leitmotif's loader
  /// and decode threads, and on whichever thread loads a cue file, possibly several at once.
  /// - Throws: `MountError` when the path is empty or overlaps a mount, or a name is not a clean
  ///   relative path.
  public static func mount(
    folder path: String, files: [String], open: @escaping @Sendable (String) -> (any MountedFileReader)?
  ) throws(MountError) {
    var names: Set<String> = []
    for name in files {
      let clean = name.split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }
      guard !name.hasPrefix("/"), !clean.isEmpty, !clean.contains(".."),
        names.insert(clean.joined(separator: "/")).inserted
      else { throw MountError(path: path, reason: .badName(name)) }
    }
    try add(path: path) { root, generation in
      Mount(root: root, generation: generation, content: .folder(names: names, open: open))
    }
  }

  /// Removes the mount at `path` (as it was mounted). Its files can no longer be opened.
  /// - Throws: `MountError` when nothing is mounted there, or files of it are still open.
  public static func unmount(_ path: String) throws(MountError) {
    guard let root = absolute(path) else { throw MountError(path: path, reason: .emptyPath) }
    try table.withLock { (mounts) throws(MountError) in
      guard let index = mounts.firstIndex(where: { $0.root == root }) else {
        throw MountError(path: path, reason: .notMounted)
      }
      let open = mounts[index].openFiles.load(ordering: .acquiring)
      guard open == 0 else { throw MountError(path: path, reason: .inUse(openFiles: open)) }
      mounts.remove(at: index)
    }
  }

  /// The absolute path of every mount, sorted.
  public static var mountedPaths: [String] { table.withLock { $0.map(\.root).sorted() } }

  /// What `path` names among the mounts: a file, a folder (a mounted folder, a folder inside one,
  /// or a folder that holds a mount), or nothing (nil: look on disk).
  public static func kind(of path: String) -> Kind? {
    guard !isEmpty, let target = absolute(path) else { return nil }
    return table.withLock { mounts in
      for mount in mounts {
        if mount.fileName(for: target) != nil { return .file }
        if mount.holdsFolder(target) { return .folder }
      }
      return nil
    }
  }

  /// A file or a folder.
  public enum Kind: Sendable, Equatable {
    case file
    case folder
  }

  /// The absolute path of every mounted file under the folder `path`, sorted; nil when `path` is
  /// not a mounted folder (look on disk).
  public static func files(under path: String) -> [String]? {
    guard !isEmpty, let target = absolute(path) else { return nil }
    return table.withLock { mounts -> [String]? in
      var found: [String]? = nil
      let prefix = target == "/" ? "/" : target + "/"
      for mount in mounts where mount.holdsFolder(target) {
        found = (found ?? []) + mount.filePaths.filter { $0.hasPrefix(prefix) }
      }
      return found?.sorted()
    }
  }

  /// A version number of what is mounted at `path`, new at every mount: a cue file's watcher
  /// reloads when a game mounts a new version. Nil when the path is not a mounted file.
  package static func generation(of path: String) -> Int? {
    guard !isEmpty, let target = absolute(path) else { return nil }
    return table.withLock { mounts in mounts.first { $0.fileName(for: target) != nil }?.generation }
  }

  /// Every byte of the file at `path`, mounted or on disk (a cue file, for one).
  /// - Throws: `DecodeError` naming the file when it cannot be opened or read.
  public static func contents(of path: String) throws(DecodeError) -> [UInt8] {
    let source = try FileByteSource(path: path)
    var bytes = [UInt8](repeating: 0, count: Int(source.sizeBytes))
    let got = bytes.withUnsafeMutableBytes { raw -> Int in
      var total = 0
      while total < raw.count {
        let n = source.read(into: raw.baseAddress! + total, count: raw.count - total)
        if n <= 0 { return n < 0 ? -1 : total }
        total += n
      }
      return total
    }
    guard got >= 0 else { throw DecodeError(path: path, reason: .readFailed(errno: source.lastReadErrno ?? EIO)) }
    return Array(bytes.prefix(got))
  }

  /// Opens the mounted file at `path` (nil: not mounted, look on disk).
  /// - Throws: `DecodeError.fileNotFound` when the mount's opener gives no reader.
  static func open(_ path: String) throws(DecodeError) -> OpenMountedFile? {
    guard !isEmpty, let target = absolute(path) else { return nil }
    let found = table.withLock { mounts -> (Mount, String)? in
      for mount in mounts {
        if let name = mount.fileName(for: target) {
          // Counted before the lock is let go, so an unmount cannot slip in between.
          mount.openFiles.add(1, ordering: .acquiringAndReleasing)
          return (mount, name)
        }
      }
      return nil
    }
    guard let (mount, name) = found else { return nil }
    let reader: any MountedFileReader
    switch mount.content {
    case .memory(let bytes): reader = bytes
    case .folder(_, let open):
      guard let opened = open(name) else {
        mount.openFiles.subtract(1, ordering: .acquiringAndReleasing)
        throw DecodeError(path: path, reason: .fileNotFound)
      }
      reader = opened
    }
    return OpenMountedFile(reader: reader, mount: mount)
  }

  // MARK: - The table

  private static let table = Mutex<[Mount]>([])
  /// Whether nothing is mounted, read without the lock: most games mount nothing, and every file
  /// open asks.
  private static let count = Atomic<Int>(0)
  private static let nextGeneration = Atomic<Int>(1)
  private static var isEmpty: Bool { count.load(ordering: .acquiring) == 0 }

  private static func add(path: String, _ make: (String, Int) -> Mount) throws(MountError) {
    guard let root = absolute(path) else { throw MountError(path: path, reason: .emptyPath) }
    let generation = nextGeneration.add(1, ordering: .relaxed).oldValue
    try table.withLock { (mounts) throws(MountError) in
      for mount in mounts {
        if mount.root == root || mount.root.hasPrefix(root == "/" ? "/" : root + "/")
          || root.hasPrefix(mount.root + "/")
        {
          throw MountError(path: path, reason: .alreadyMounted(FileSystemPath.displayed(mount.root)))
        }
      }
      mounts.append(make(root, generation))
      count.store(mounts.count, ordering: .releasing)
    }
  }

  /// `path` as an absolute path with `.`, `..` and repeated slashes resolved (a relative one
  /// against the current directory): the form mounts are kept in. Nil for an empty one.
  public static func absolute(_ path: String) -> String? {
    guard !path.isEmpty else { return nil }
    var full = path
    if !path.hasPrefix("/") {
      var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
      guard getcwd(&buffer, buffer.count) != nil else { return nil }
      full = FileSystemPath.string(cString: buffer) + "/" + path
    }
    var parts: [Substring] = []
    for part in full.split(separator: "/", omittingEmptySubsequences: true) {
      if part == "." { continue }
      if part == ".." {
        if !parts.isEmpty { parts.removeLast() }
        continue
      }
      parts.append(part)
    }
    return "/" + parts.joined(separator: "/")
  }
}

/// One mount: a file of bytes in memory, or a folder of files read through the game's opener.
final class Mount: Sendable {
  enum Content: Sendable {
    case memory(MemoryBytes)
    case folder(names: Set<String>, open: @Sendable (String) -> (any MountedFileReader)?)
  }

  let root: String
  let generation: Int
  let content: Content
  /// Readers of this mount not yet closed: an unmount waits for none.
  let openFiles = Atomic<Int>(0)

  init(root: String, generation: Int, content: Content) {
    self.root = root
    self.generation = generation
    self.content = content
  }

  /// The name the opener knows `path` by ("" for a memory file), nil when `path` is not one of
  /// this mount's files.
  func fileName(for path: String) -> String? {
    switch content {
    case .memory: return path == root ? "" : nil
    case .folder(let names, _):
      guard path.hasPrefix(root == "/" ? "/" : root + "/") else { return nil }
      let name = String(path.dropFirst(root == "/" ? 1 : root.count + 1))
      return names.contains(name) ? name : nil
    }
  }

  /// Whether `path` is a folder here: the mounted folder, a folder inside it, or one around the
  /// mount.
  func holdsFolder(_ path: String) -> Bool {
    let prefix = path == "/" ? "/" : path + "/"
    if root.hasPrefix(prefix) { return true }
    guard case .folder = content else { return false }
    return path == root || filePaths.contains { $0.hasPrefix(prefix) }
  }

  /// The absolute path of each file of the mount.
  var filePaths: [String] {
    switch content {
    case .memory: return [root]
    case .folder(let names, _): return names.map { (root == "/" ? "" : root) + "/" + $0 }
    }
  }
}

/// A mounted file opened by a `FileByteSource`: its reader, counted open on its mount until the
/// source lets it go.
final class OpenMountedFile {
  let reader: any MountedFileReader
  private let mount: Mount

  init(reader: any MountedFileReader, mount: Mount) {
    self.reader = reader
    self.mount = mount
  }

  deinit { mount.openFiles.subtract(1, ordering: .acquiringAndReleasing) }
}

/// The bytes of a file mounted from memory: a copy, immutable, freed with the last reader.
final class MemoryBytes: MountedFileReader, @unchecked Sendable {
  // Immutable after init; reads only copy out of it, from any thread.
  private let storage: [UInt8]

  init(_ bytes: [UInt8]) { storage = bytes }

  var sizeBytes: Int64 { Int64(storage.count) }

  func read(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) -> Int {
    guard offset >= 0, offset < Int64(storage.count), count > 0 else { return 0 }
    let start = Int(offset)
    let copied = min(count, storage.count - start)
    storage.withUnsafeBytes { raw in buffer.copyMemory(from: raw.baseAddress! + start, byteCount: copied) }
    return copied
  }
}
