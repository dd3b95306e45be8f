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
/// A scan killed on purpose (Ctrl-C, a game quit while it scanned) while reading a good file
/// leaves that file in the journal too. So a file gets a second chance: the next scan reads it
/// last, journaled as a retry, and only a scan that ends inside it again records it as failed
/// (until it changes), with a reason that says what happened. The first ending used to record
/// it at once: one Ctrl-C left a good song out of the library until the file was edited.
final class ScanJournal {
  /// The journal's path: beside the index.
  let path: String
  private let descriptor: Int32

  /// What the journal names: the file being read when the last scan ended.
  struct Entry: Equatable {
    var path: String
    var sizeBytes: Int64
    var modificationNanoseconds: Int64
    /// Whether this reading is the file's second chance (a scan already ended inside it).
    var isRetry = false
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
    // "SIZE MTIME PATH\n", after "retry " for a second chance: the path last, so any byte in it
    // (but a newline) survives.
    var text = Substring(String(decoding: bytes[0..<count], as: UTF8.self))
    guard text.hasSuffix("\n") else { return nil }
    let isRetry = text.hasPrefix(Self.retryMark)
    if isRetry { text = text.dropFirst(Self.retryMark.count) }
    let fields = text.dropLast().split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
    guard fields.count == 3, let size = Int64(fields[0]), let mtime = Int64(fields[1]), !fields[2].isEmpty else {
      return nil
    }
    return Entry(path: String(fields[2]), sizeBytes: size, modificationNanoseconds: mtime, isRetry: isRetry)
  }

  /// Notes that `entry`'s file is about to be opened.
  func reading(_ entry: Entry) {
    let mark = entry.isRetry ? Self.retryMark : ""
    let line = Array("\(mark)\(entry.sizeBytes) \(entry.modificationNanoseconds) \(entry.path)\n".utf8)
    _ = line.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
    _ = ftruncate(descriptor, off_t(line.count))
  }

  /// No file is being read.
  func clear() { _ = ftruncate(descriptor, 0) }

  /// What starts the line of a second chance.
  private static let retryMark = "retry "
}
