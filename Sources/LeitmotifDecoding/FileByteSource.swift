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
/// Reads of a file on disk go through a read-ahead buffer of `readAheadBytes`. libmpg123 asks for
/// each MPEG frame's header and body separately, a few hundred bytes at a time: 46,000 `read`
/// calls for a 10-minute MP3, each a trip into the kernel, on the decode thread of every voice.
/// The buffer turns them into one `pread` per 16 KiB (a read that large or larger goes straight
/// into the caller's memory), and a seek is only arithmetic on the position, so a seek back
/// within what was just read reads nothing again.
///
/// Thread safety: one thread at a time, like the decoder that owns it.
package final class FileByteSource {
  package let path: String
  package let sizeBytes: Int64
  /// The descriptor, -1 for a mounted file.
  private let descriptor: Int32
  /// A mounted file's reader (nil for a file on disk).
  private let mounted: OpenMountedFile?
  /// Where the next read starts, for both kinds (a file on disk is read with `pread` at it).
  private var position: Int64 = 0
  /// A file on disk's read-ahead: `bufferCount` bytes of the file from `bufferStart`, allocated
  /// at the first read smaller than it.
  static let readAheadBytes = 16_384
  private var buffer: UnsafeMutableRawPointer?
  private var bufferStart: Int64 = 0
  private var bufferCount = 0
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

  deinit {
    if descriptor >= 0 { close(descriptor) }
    buffer?.deallocate()
  }

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

  /// Reads up to `count` bytes at the current position; 0 at the end, -1 on an error. Like
  /// `fread`, it returns fewer only at the end of the file or on an error (the bytes before the
  /// error are returned, and the error comes with the next read).
  package func read(into destination: UnsafeMutableRawPointer, count: Int) -> Int {
    guard count > 0 else { return 0 }
    if let mounted {
      let got = mounted.reader.read(into: destination, count: count, at: position)
      if got < 0 {
        // As a failed read(2) would: the C libraries look at errno.
        errno = EIO
        lastReadErrno = EIO
        return -1
      }
      position += Int64(min(got, count))
      return min(got, count)
    }
    var done = 0
    while done < count {
      // What the read-ahead already holds.
      if buffer != nil, position >= bufferStart, position < bufferStart + Int64(bufferCount) {
        let offset = Int(position - bufferStart)
        let copied = min(count - done, bufferCount - offset)
        (destination + done).copyMemory(from: buffer! + offset, byteCount: copied)
        position += Int64(copied)
        done += copied
        continue
      }
      let got: Int
      if count - done >= Self.readAheadBytes {
        // Large enough to go straight to the caller.
        got = readFile(into: destination + done, count: count - done, at: position)
        if got > 0 {
          position += Int64(got)
          done += got
        }
      } else {
        if buffer == nil { buffer = .allocate(byteCount: Self.readAheadBytes, alignment: 16) }
        got = readFile(into: buffer!, count: Self.readAheadBytes, at: position)
        bufferStart = position
        bufferCount = max(0, got)
      }
      if got < 0 { return done > 0 ? done : -1 }
      if got == 0 { break }
    }
    return done
  }

  /// One `pread` at `offset` (retried when a signal interrupts it); remembers a failure's errno.
  private func readFile(into destination: UnsafeMutableRawPointer, count: Int, at offset: Int64) -> Int {
    while true {
      let result = pread(descriptor, destination, count, off_t(offset))
      if result < 0 && errno == EINTR { continue }
      if result < 0 { lastReadErrno = errno }
      return result
    }
  }

  /// `lseek`: returns the new position or -1. Only the position moves: the next read starts
  /// there (from the read-ahead if it holds that byte).
  func seek(offset: Int64, whence: Int32) -> Int64 {
    let base: Int64
    switch whence {
    case SEEK_SET: base = 0
    case SEEK_CUR: base = position
    case SEEK_END: base = currentSizeBytes
    default:
      errno = EINVAL
      return -1
    }
    let (target, overflow) = base.addingReportingOverflow(offset)
    guard !overflow, target >= 0 else {
      errno = EINVAL
      return -1
    }
    position = target
    return target
  }

  /// The file's size now (a file on disk may have grown since it was opened).
  private var currentSizeBytes: Int64 {
    guard mounted == nil else { return sizeBytes }
    var status = stat()
    return fstat(descriptor, &status) == 0 ? Int64(status.st_size) : sizeBytes
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
