import Dispatch
import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

extension MediaLibrary: LibraryIndexAccess {
  package func checkAccess() throws(LibraryError) { try access.check() }
}

/// A registration made with `addLibraryObserver`; pass it to `removeLibraryObserver`.
public struct LibraryObserverToken: Hashable, Sendable {
  let id: UInt64
}

extension MediaLibrary {
  /// Scans the library folders into the index and returns what changed; waits up to 30 s when
  /// another scan (this library, another `MediaLibrary` on the same folders, or another process)
  /// holds the index. See `scan(waitingUpToSeconds:)`.
  @discardableResult
  public func scan() throws(LibraryError) -> ScanReport {
    try scan(waitingUpToSeconds: 30)
  }

  /// Scans the library folders into the index and returns what changed.
  ///
  /// Checks authorization first: without it nothing under the folders is read. Walks every
  /// folder (symbolic links are never followed; hidden names are skipped), opens only `.ogg`,
  /// `.oga`, `.opus`, `.mp3` and `.flac` files that are new or whose size or modification time changed, writes
  /// every change in one transaction, hands the playlist files found to the playlist importer,
  /// and then tells the library's observers when anything changed. Damaged, empty or non-audio
  /// files are recorded as failed and not retried until they change; the scan goes on.
  ///
  /// Thread safety: any thread; it does I/O (seconds for a first scan of a large library), so not
  /// on the game's frame thread. One scan at a time per index, across processes (a lock file
  /// next to the index).
  /// - Parameters:
  ///   - waitingUpToSeconds: how long to wait for another scan to finish (0: do not wait).
  ///   - progress: told after each file the scan reads (on this thread): a first scan decodes
  ///     and analyses every song, which takes about 1 % of the music's length.
  /// - Throws: `LibraryError.accessDenied` (nothing was read), `.busy` when another scan held the
  ///   index all that time, `.index` when the index cannot be written.
  @discardableResult
  public func scan(
    waitingUpToSeconds: Double, progress: (ScanProgress) -> Void = { _ in }
  ) throws(LibraryError) -> ScanReport {
    // The gate first: consent, and the index (which creates the cache folder).
    try withIndex { _ in }
    let lock = try ScanLock(path: configuration.indexPath + ".scan-lock", waitingUpToSeconds: waitingUpToSeconds)
    defer { _ = lock }
    let report = try LibraryScanner(folders: folders).scan(through: self, progress: progress)
    withExtendedLifetime(lock) {}
    if report.hasChanges { scanState.notify(report) }
    return report
  }

  /// When anything in the library last changed (items added, updated, moved or removed, or a
  /// play or skip recorded); nil before the first change, or without authorization.
  public var lastModifiedDate: Date? {
    try? withIndex { (index) throws(LibraryError) -> Date? in try? index.lastModifiedDate() }
  }

  /// Calls `handler` after every scan (a `scan()` call or watch mode) that changed the library,
  /// with what it did. Handlers run one at a time on the library's notification queue, never
  /// under the index lock.
  @discardableResult
  public func addLibraryObserver(_ handler: @escaping @Sendable (ScanReport) -> Void) -> LibraryObserverToken {
    scanState.addObserver(handler)
  }

  /// Stops calling the observer registered under `token`.
  public func removeLibraryObserver(_ token: LibraryObserverToken) {
    scanState.removeObserver(token)
  }

  /// The library's changes as an `AsyncStream`: one report per scan that changed something.
  /// The stream ends its registration when its consumer stops.
  public func libraryChanges() -> AsyncStream<ScanReport> {
    let (stream, continuation) = AsyncStream<ScanReport>.makeStream(bufferingPolicy: .bufferingNewest(16))
    let token = addLibraryObserver { report in continuation.yield(report) }
    continuation.onTermination = { [weak self] _ in self?.removeLibraryObserver(token) }
    return stream
  }

  /// Starts watch mode: inotify on every library folder and subfolder; a change is followed,
  /// after 300 ms of quiet, by a rescan (which reads only what changed) and the observers hear of
  /// it. Starts with a scan of its own, on the watch thread. Calling it again does nothing.
  ///
  /// When access is revoked while watching, the rescans fail with `accessDenied` (reported to the
  /// diagnostics handler) and read nothing.
  /// - Throws: `LibraryError.accessDenied` without authorization; `.folder` when inotify cannot be set up.
  public func startWatching() throws(LibraryError) {
    try withIndex { _ in }
    try scanState.watcher.withLock { (slot) throws(LibraryError) in
      guard slot == nil else { return }
      let walk = FolderWalker(folders: folders).walk()
      let watcher = try LibraryWatcher(
        folders: walk.folders,
        rescan: { [weak self] in self?.watchRescan() },
        warn: { [weak self] message in self?.report(Diagnostic(.warning, message)) },
        isOwnerAlive: { [weak self] in self != nil },
        isReady: { [weak self] in self?.authorizationStatus == .authorized })
      slot = watcher
      watcher.start()
    }
  }

  /// Stops watch mode (the thread ends within 100 ms; a rescan in progress finishes).
  public func stopWatching() {
    scanState.watcher.withLock { slot in
      slot?.stop()
      slot = nil
    }
  }

  /// Whether watch mode is on.
  public var isWatching: Bool { scanState.watcher.withLock { $0 != nil } }

  private func watchRescan() -> [String]? {
    do {
      return try scan(waitingUpToSeconds: 60).walkedFolders
    } catch {
      report(Diagnostic(.warning, "watch mode: the rescan failed: \(error)", error: error))
      return nil
    }
  }

  /// Counts a play of `item` (by its persistent id): play count plus one, last-played date.
  /// Items without a persistent id (not from the library), or no longer in it, are not counted.
  /// - Returns: whether it was counted (false: no such item in the library).
  /// - Throws: `LibraryError.accessDenied`, or `.index` when the index cannot be written.
  @discardableResult
  public func recordPlay(of item: MediaItem, at date: Date = Date()) throws(LibraryError) -> Bool {
    guard let id = item.persistentID else { return false }
    return try withIndex { (index) throws(LibraryError) -> Bool in
      do throws(SQLiteError) {
        guard try index.recordPlay(persistentID: Int64(bitPattern: id), at: date) else { return false }
        try index.touch()
        return true
      } catch {
        throw LibraryError.index(path: index.path, reason: error.description)
      }
    }
  }

  /// Counts a skip of `item` (by its persistent id); see `recordPlay(of:at:)`.
  /// - Returns: whether it was counted (false: no such item in the library).
  @discardableResult
  public func recordSkip(of item: MediaItem) throws(LibraryError) -> Bool {
    guard let id = item.persistentID else { return false }
    return try withIndex { (index) throws(LibraryError) -> Bool in
      do throws(SQLiteError) {
        guard try index.recordSkip(persistentID: Int64(bitPattern: id)) else { return false }
        try index.touch()
        return true
      } catch {
        throw LibraryError.index(path: index.path, reason: error.description)
      }
    }
  }

  /// This library's observers and watcher. MediaLibrary has no stored property for them (it
  /// belongs to the consent layer); they live in a table keyed by the library's identity.
  package var scanState: LibraryScanState { LibraryScanState.state(for: self) }
}

/// Observers and the watcher of one `MediaLibrary`.
package final class LibraryScanState: Sendable {
  let notifyQueue = DispatchQueue(label: "lm.library.notify")
  let watcher = Mutex<LibraryWatcher?>(nil)
  private let observers = Mutex<(next: UInt64, handlers: [UInt64: @Sendable (ScanReport) -> Void])>((1, [:]))

  func addObserver(_ handler: @escaping @Sendable (ScanReport) -> Void) -> LibraryObserverToken {
    observers.withLock { state in
      let id = state.next
      state.next += 1
      state.handlers[id] = handler
      return LibraryObserverToken(id: id)
    }
  }

  func removeObserver(_ token: LibraryObserverToken) {
    _ = observers.withLock { $0.handlers.removeValue(forKey: token.id) }
  }

  func notify(_ report: ScanReport) {
    let handlers = observers.withLock { $0.handlers.sorted { $0.key < $1.key }.map(\.value) }
    guard !handlers.isEmpty else { return }
    notifyQueue.async { for handler in handlers { handler(report) } }
  }

  private struct Entry {
    weak var library: MediaLibrary?
    let state: LibraryScanState
  }
  private static let table = Mutex<[ObjectIdentifier: Entry]>([:])

  static func state(for library: MediaLibrary) -> LibraryScanState {
    table.withLock { table in
      let key = ObjectIdentifier(library)
      if let entry = table[key], entry.library === library { return entry.state }
      // A new library (or a new one at a freed address): drop entries whose library is gone.
      for (key, entry) in table where entry.library == nil {
        entry.state.watcher.withLock { $0?.stop() }
        table[key] = nil
      }
      let state = LibraryScanState()
      table[key] = Entry(library: library, state: state)
      return state
    }
  }
}

/// One scan at a time per index, across threads and processes: an exclusive `flock` on a lock
/// file next to the index (flock locks belong to the open file, so two opens in one process
/// exclude each other too). Released when the value goes (the descriptor is closed).
package final class ScanLock: Sendable {
  private let descriptor: Int32

  init(path: String, waitingUpToSeconds: Double) throws(LibraryError) {
    let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard fd >= 0 else {
      throw LibraryError.index(path: path, reason: "cannot open the scan lock: \(FolderWalker.errnoText(errno))")
    }
    // Held to 1e9 s, so that 1e308 (or NaN, which max makes 0) cannot trap in the conversion.
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(min(max(0, waitingUpToSeconds), 1e9) * 1e9)
    while flock(fd, LOCK_EX | LOCK_NB) != 0 {
      guard errno == EWOULDBLOCK || errno == EINTR, DispatchTime.now().uptimeNanoseconds < deadline else {
        close(fd)
        throw LibraryError.busy(path: path)
      }
      usleep(20_000)
    }
    descriptor = fd
  }

  deinit { close(descriptor) }
}
