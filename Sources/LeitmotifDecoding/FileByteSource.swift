#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// An open file the decoders read through their libraries' custom I/O callbacks.
///
/// Owns one file descriptor and closes it in `deinit`. Reading through our own descriptor (rather
/// than handing a path to the C library) means every open goes through one place that checks what
/// the path is and turns `errno` into a `DecodeError`, and the read error of a failing disk is kept
/// (`lastReadErrno`) instead of looking like an ordinary end of file.
///
/// Thread safety: one thread at a time, like the decoder that owns it.
final class FileByteSource {
  let path: String
  let sizeBytes: Int64
  private let descriptor: Int32
  /// The `errno` of the last failed read, if any: the decoders report it after the C library gives up.
  private(set) var lastReadErrno: Int32?

  init(path: String) throws(DecodeError) {
    self.path = path
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

  deinit { close(descriptor) }

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
  func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
    while true {
      let result = Glibc.read(descriptor, buffer, count)
      if result < 0 && errno == EINTR { continue }
      if result < 0 { lastReadErrno = errno }
      return result
    }
  }

  /// `lseek`: returns the new position or -1.
  func seek(offset: Int64, whence: Int32) -> Int64 {
    Int64(lseek(descriptor, off_t(offset), whence))
  }

  /// Up to `count` bytes from `offset`, without moving the read position (for format sniffing).
  func bytes(at offset: Int64, count: Int) -> [UInt8] {
    var result = [UInt8](repeating: 0, count: count)
    let got = result.withUnsafeMutableBytes { raw -> Int in
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
