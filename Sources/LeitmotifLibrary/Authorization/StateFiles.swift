import Foundation
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

#if canImport(Glibc)
  import Glibc
#endif

/// The one file in the authorization code that makes POSIX file calls (stat, open, read, flock,
/// mkstemp, rename, fsync): every `errno` is read right after its call and turned into a
/// `StateFileError` here, once.

/// Why a state file (the remembered answers, the policy, their lock) could not be used.
package struct StateFileError: Error, Sendable, CustomStringConvertible {
  package enum Kind: Sendable {
    /// A system call failed with this `errno`.
    case system(call: String, errno: Int32)
    /// The path is there but is not a regular file (a directory, a FIFO, a device).
    case notRegularFile
    /// Bigger than the limit for its kind: not something Leitmotif wrote.
    case tooLarge(bytes: Int64, limitBytes: Int)
  }
  var path: String
  var kind: Kind

  package var description: String {
    switch kind {
    case .system(let call, let code): return "\(call) failed: \(String(cString: strerror(code)))"
    case .notRegularFile: return "not a regular file"
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
  static func version(of path: String) throws(StateFileError) -> FileVersion? {
    var status = stat()
    guard stat(path, &status) == 0 else {
      let code = errno
      if code == ENOENT || code == ENOTDIR { return nil }
      throw StateFileError(path: path, kind: .system(call: "stat", errno: code))
    }
    return FileVersion(status)
  }

  /// The contents of the regular file at `path` and the version that was read, or nil when there
  /// is no file. Opened non-blocking, so a FIFO put in its place cannot hang the caller.
  static func readRegularFile(_ path: String, limitBytes: Int) throws(StateFileError) -> (Data, FileVersion)? {
    let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
    guard descriptor >= 0 else {
      let code = errno
      if code == ENOENT || code == ENOTDIR { return nil }
      throw StateFileError(path: path, kind: .system(call: "open", errno: code))
    }
    defer { close(descriptor) }
    var status = stat()
    guard fstat(descriptor, &status) == 0 else {
      throw StateFileError(path: path, kind: .system(call: "fstat", errno: errno))
    }
    guard (status.st_mode & S_IFMT) == S_IFREG else { throw StateFileError(path: path, kind: .notRegularFile) }
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

  /// Makes `path` and any missing parents, each new one with `mode`; `path` itself gets `mode`
  /// even when it was there already (it is Leitmotif's own folder).
  static func makeDirectory(_ path: String, mode: mode_t) throws(StateFileError) {
    let parent = (path as NSString).deletingLastPathComponent
    if !parent.isEmpty, parent != path, (try version(of: parent)) == nil {
      try makeDirectory(parent, mode: mode)
    }
    if mkdir(path, mode) != 0 {
      let code = errno
      guard code == EEXIST else { throw StateFileError(path: path, kind: .system(call: "mkdir", errno: code)) }
    }
    // mkdir's mode is filtered by the umask; chmod is not.
    guard chmod(path, mode) == 0 else { throw StateFileError(path: path, kind: .system(call: "chmod", errno: errno)) }
  }

  /// Replaces the file at `path` with `data` atomically: a temporary file in the same folder
  /// (mode `mode` from the start, so the contents are never readable by others), written and
  /// flushed, renamed over `path`, then the folder flushed. A reader sees the old file or the
  /// new one, never half of one.
  static func writeAtomically(_ data: Data, to path: String, mode: mode_t) throws(StateFileError) {
    let folder = (path as NSString).deletingLastPathComponent
    var template = Array("\(path).XXXXXX".utf8CString)
    // mkstemp makes the file with mode 0600, so the contents are never readable by others.
    let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard descriptor >= 0 else { throw StateFileError(path: path, kind: .system(call: "mkstemp", errno: errno)) }
    // (mkostemp, which could set it at once, is not visible to Swift through Glibc.)
    _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
    let temporary = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    var closed = false
    defer {
      if !closed { close(descriptor) }
    }
    do throws(StateFileError) {
      guard fchmod(descriptor, mode) == 0 else {
        throw StateFileError(path: temporary, kind: .system(call: "fchmod", errno: errno))
      }
      var written = 0
      while written < data.count {
        let count = data.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, $0.count - written) }
        if count < 0 {
          if errno == EINTR { continue }
          throw StateFileError(path: temporary, kind: .system(call: "write", errno: errno))
        }
        written += count
      }
      guard fsync(descriptor) == 0 else {
        throw StateFileError(path: temporary, kind: .system(call: "fsync", errno: errno))
      }
      closed = true
      guard close(descriptor) == 0 else {
        throw StateFileError(path: temporary, kind: .system(call: "close", errno: errno))
      }
      guard rename(temporary, path) == 0 else {
        throw StateFileError(path: path, kind: .system(call: "rename", errno: errno))
      }
    } catch {
      unlink(temporary)
      throw error
    }
    // The rename is durable once the folder is flushed; a failure here loses nothing now.
    let folderDescriptor = open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if folderDescriptor >= 0 {
      fsync(folderDescriptor)
      close(folderDescriptor)
    }
  }

  /// Renames `path` to `newPath` (replacing it); nothing to do when there is no `path`.
  static func move(_ path: String, to newPath: String) throws(StateFileError) {
    guard rename(path, newPath) == 0 else {
      let code = errno
      if code == ENOENT { return }
      throw StateFileError(path: path, kind: .system(call: "rename", errno: code))
    }
  }
}

/// An exclusive `flock` on a lock file, held from `init` until this value goes away (closing the
/// descriptor releases it). Writers of the remembered answers take it so that two processes
/// changing different applications' answers at once do not lose one of them; readers need no
/// lock, since the file is only ever replaced whole.
package struct StateFileLock: ~Copyable {
  private let descriptor: Int32

  /// Blocks until the lock is free. Creates the lock file (mode 0600) when missing.
  init(path: String) throws(StateFileError) {
    let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { throw StateFileError(path: path, kind: .system(call: "open", errno: errno)) }
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
