#if canImport(Glibc)
  import Glibc
#endif

/// The file a scan is reading right now, kept on disk beside the index (`INDEX.reading`).
///
/// A music file that crashes the decoder (a libvorbis bug, say) takes the scan down before the
/// scan's one transaction records anything, so the next scan would open it again and die again,
/// on every run. So before each file is opened its path, size and modification time are written
/// here, and the journal is emptied once the files are read. A scan that finds the journal not
/// empty knows the last one ended inside that file, and records it as failed (until it changes)
/// in the index at once, before it reads anything else.
///
/// A scan killed on purpose (Ctrl-C) while reading a good file marks that file too; it is read
/// again as soon as it changes, and the failure's reason says what happened.
final class ScanJournal {
  /// The journal's path: beside the index.
  let path: String
  private let descriptor: Int32

  /// What the journal names: the file being read when the last scan ended.
  struct Entry: Equatable {
    var path: String
    var sizeBytes: Int64
    var modificationNanoseconds: Int64
  }

  /// Opens (or creates, 0600) the journal for the index at `indexPath`; nil where no journal
  /// can be kept (an in-memory index, an unwritable folder): the scan works, without the guard.
  init?(indexPath: String) {
    guard indexPath.hasPrefix("/") else { return nil }
    let path = indexPath + ".reading"
    self.path = path
    let descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { return nil }
    self.descriptor = descriptor
  }

  deinit { close(descriptor) }

  /// The entry left by a scan that ended while reading a file, if any.
  func leftOver() -> Entry? {
    var bytes = [UInt8](repeating: 0, count: 8192)
    let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
    guard count > 0 else { return nil }
    // "SIZE MTIME PATH\n": the path last, so any byte in it (but a newline) survives.
    let text = String(decoding: bytes[0..<count], as: UTF8.self)
    guard text.hasSuffix("\n") else { return nil }
    let fields = text.dropLast().split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
    guard fields.count == 3, let size = Int64(fields[0]), let mtime = Int64(fields[1]), !fields[2].isEmpty else {
      return nil
    }
    return Entry(path: String(fields[2]), sizeBytes: size, modificationNanoseconds: mtime)
  }

  /// Notes that `entry`'s file is about to be opened.
  func reading(_ entry: Entry) {
    let line = Array("\(entry.sizeBytes) \(entry.modificationNanoseconds) \(entry.path)\n".utf8)
    _ = line.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
    _ = ftruncate(descriptor, off_t(line.count))
  }

  /// No file is being read.
  func clear() { _ = ftruncate(descriptor, 0) }
}
