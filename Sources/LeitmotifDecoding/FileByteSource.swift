#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// An open file the decoders read through their libraries' custom I/O callbacks.
///
/// Owns one file descriptor and closes it in `deinit`, or, for a path under a mount
/// (`MountedFiles`), the mount's reader with a position of its own. Reading through our own descriptor (rather
/// than handing a path to the C library) means every open goes through one place that checks what
/// the path is and turns `errno` into a `DecodeError`, and the read error of a failing disk is kept
/// (`lastReadErrno`) instead of looking like an ordinary end of file.
///
/// Thread safety: one thread at a time, like the decoder that owns it.
package final class FileByteSource {
  package let path: String
  package let sizeBytes: Int64
  /// The descriptor, -1 for a mounted file.
  private let descriptor: Int32
  /// A mounted file's reader, and where the next read starts (a descriptor keeps its own).
  private let mounted: OpenMountedFile?
  private var position: Int64 = 0
  /// The `errno` of the last failed read, if any: the decoders report it after the C library gives up.
  private(set) var lastReadErrno: Int32?

  package init(path: String) throws(DecodeError) {
    self.path = path
    if let mounted = try MountedFiles.open(path) {
      guard mounted.reader.sizeBytes > 0 else { throw DecodeError(path: path, reason: .emptyFile) }
      self.mounted = mounted
      descriptor = -1
      sizeBytes = mounted.reader.sizeBytes
      return
    }
    if MountedFiles.kind(of: path) == .folder { throw DecodeError(path: path, reason: .isDirectory) }
    mounted = nil
    // Non-blocking for the open only: opening a FIFO (or a device) for reading would otherwise
    // wait for a writer forever, hanging whoever opened it (the loader thread, a scan). fstat
    // then refuses everything but a regular file, and reads go back to blocking.
    // The path's own bytes (`FileSystemPath`), so a name that is not UTF-8 opens too.
    let descriptor = FileSystemPath.withCString(path) { Glibc.open($0, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) }
    if descriptor < 0 {
      let code = errno
      switch code {
      case ENOENT, ENOTDIR: throw DecodeError(path: path, reason: .fileNotFound)
      case EACCES, EPERM: throw DecodeError(path: path, reason: .permissionDenied)
      case EISDIR: throw DecodeError(path: path, reason: .isDirectory)
      default: throw DecodeError(path: path, reason: .readFailed(errno: code))
      }
    }
    var status = stat()
    guard fstat(descriptor, &status) == 0 else {
      let code = errno
      close(descriptor)
      throw DecodeError(path: path, reason: .readFailed(errno: code))
    }
    if (status.st_mode & S_IFMT) == S_IFDIR {
      close(descriptor)
      throw DecodeError(path: path, reason: .isDirectory)
    }
    guard (status.st_mode & S_IFMT) == S_IFREG else {
      close(descriptor)
      throw DecodeError(path: path, reason: .unsupported("not a regular file (\(Self.kind(of: status.st_mode)))"))
    }
    if status.st_size == 0 {
      close(descriptor)
      throw DecodeError(path: path, reason: .emptyFile)
    }
    let flags = fcntl(descriptor, F_GETFL)
    guard flags >= 0, fcntl(descriptor, F_SETFL, flags & ~O_NONBLOCK) == 0 else {
      let code = errno
      close(descriptor)
      throw DecodeError(path: path, reason: .readFailed(errno: code))
    }
    self.descriptor = descriptor
    self.sizeBytes = Int64(status.st_size)
  }

  deinit { if descriptor >= 0 { close(descriptor) } }

  /// What a file that is not a regular file is, for the error.
  private static func kind(of mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFIFO: return "a FIFO"
    case S_IFCHR: return "a character device"
    case S_IFBLK: return "a block device"
    case S_IFSOCK: return "a socket"
    default: return "a special file"
    }
  }

  /// Reads up to `count` bytes at the current position; 0 at the end, -1 on an error.
  package func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
    if let mounted {
      let got = mounted.reader.read(into: buffer, count: count, at: position)
      if got < 0 {
        // As a failed read(2) would: the C libraries look at errno.
        errno = EIO
        lastReadErrno = EIO
        return -1
      }
      position += Int64(min(got, count))
      return min(got, count)
    }
    while true {
      let result = Glibc.read(descriptor, buffer, count)
      if result < 0 && errno == EINTR { continue }
      if result < 0 { lastReadErrno = errno }
      return result
    }
  }

  /// `lseek`: returns the new position or -1.
  func seek(offset: Int64, whence: Int32) -> Int64 {
    guard mounted != nil else { return Int64(lseek(descriptor, off_t(offset), whence)) }
    let base: Int64
    switch whence {
    case SEEK_SET: base = 0
    case SEEK_CUR: base = position
    case SEEK_END: base = sizeBytes
    default: return -1
    }
    let (target, overflow) = base.addingReportingOverflow(offset)
    guard !overflow, target >= 0 else { return -1 }
    position = target
    return target
  }

  /// Up to `count` bytes from `offset`, without moving the read position (for format sniffing).
  func bytes(at offset: Int64, count: Int) -> [UInt8] {
    var result = [UInt8](repeating: 0, count: count)
    let mounted = self.mounted
    let got = result.withUnsafeMutableBytes { raw -> Int in
      if let mounted {
        var total = 0
        while total < count {
          let n = mounted.reader.read(into: raw.baseAddress! + total, count: count - total, at: offset + Int64(total))
          if n <= 0 { break }
          total += n
        }
        return total
      }
      var total = 0
      while total < count {
        let n = pread(descriptor, raw.baseAddress! + total, count - total, off_t(offset) + off_t(total))
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        total += n
      }
      return total
    }
    result.removeLast(count - got)
    return result
  }
}
