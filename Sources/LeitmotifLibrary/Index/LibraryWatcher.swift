import Dispatch
import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Watch mode: an inotify instance on every library folder and subfolder, read by a background
/// thread (`lm.library.watch`) that rescans once the folders have been quiet for
/// `debounceSeconds` after a change. It starts with a rescan of its own.
///
/// A rescan walks every folder but opens only files whose size or modification time changed, so
/// "rescan what changed" costs a walk (about a second for 100,000 files) plus the changed files.
/// New folders get a watch after each rescan; deleted ones drop out by themselves (IN_IGNORED).
/// An event-queue overflow (IN_Q_OVERFLOW) just means a rescan. A rescan that failed (the
/// player withdrew consent, the index was busy) is owed: it is tried again, twice a second, as
/// soon as `isReady` says it can run. Before, a file deleted while consent was withdrawn stayed in
/// the index after consent came back, until the game scanned by hand (a developer's trial).
///
/// Owns the inotify descriptor: closed when the thread ends.
/// Thread safety: `start` and `stop` from any thread; the rescan runs on the watch thread.
package final class LibraryWatcher: Sendable {
  static let debounceSeconds = 0.3
  /// Events the watch asks for: entries created, deleted, moved, and files finished writing.
  static let eventMask: UInt32 =
    UInt32(IN_CREATE) | UInt32(IN_DELETE) | UInt32(IN_MOVED_FROM) | UInt32(IN_MOVED_TO) | UInt32(IN_CLOSE_WRITE)
    | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF) | UInt32(IN_ATTRIB)

  private let descriptor: Int32
  private let stopping = Atomic<Bool>(false)
  /// Rescans and returns the folders to watch, or nil when it could not (access revoked, ...).
  private let rescan: @Sendable () -> [String]?
  private let warn: @Sendable (String) -> Void
  /// False once the library that started the watch is gone: the thread ends.
  private let isOwnerAlive: @Sendable () -> Bool
  /// Whether a rescan can run now (the player's consent): an owed rescan waits for it.
  private let isReady: @Sendable () -> Bool

  /// - Throws: `LibraryError.folder` when inotify cannot be set up (with errno's words).
  init(
    folders: [String], rescan: @escaping @Sendable () -> [String]?, warn: @escaping @Sendable (String) -> Void,
    isOwnerAlive: @escaping @Sendable () -> Bool = { true }, isReady: @escaping @Sendable () -> Bool = { true }
  ) throws(LibraryError) {
    let fd = inotify_init1(Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC))
    guard fd >= 0 else {
      throw LibraryError.folder(path: folders.first ?? "", reason: "inotify_init1: \(FolderWalker.errnoText(errno))")
    }
    descriptor = fd
    self.rescan = rescan
    self.warn = warn
    self.isOwnerAlive = isOwnerAlive
    self.isReady = isReady
    addWatches(folders)
  }

  func start() {
    NativeThread { [self] in run() }.start()
  }

  /// Stops the thread (within 100 ms) and closes the inotify descriptor.
  func stop() { stopping.store(true, ordering: .releasing) }

  private func addWatches(_ folders: [String]) {
    for folder in folders
    where FileSystemPath.withCString(folder, { inotify_add_watch(descriptor, $0, Self.eventMask) }) < 0 {
      let code = errno
      if code == ENOSPC {
        warn(
          "cannot watch \(FileSystemPath.displayed(folder)): too many watches (raise fs.inotify.max_user_watches); rescan by hand"
        )
        return
      }
      if code != ENOENT { warn("cannot watch \(FileSystemPath.displayed(folder)): \(FolderWalker.errnoText(code))") }
    }
  }

  private func run() {
    defer { close(descriptor) }
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    var lastEvent: UInt64?
    var firstEvent: UInt64?
    // A rescan that failed, to try again when it can run; when it was last looked at, and how
    // long until the next look (half a second while consent is missing; 30 s after a rescan that
    // failed with it, a broken index say, so its warning does not come twice a second).
    var owed = false
    var lastLook: UInt64 = 0
    var lookAfter: UInt64 = 500_000_000
    func rescanNow() {
      if let folders = rescan() {
        addWatches(folders)
        owed = false
      } else {
        owed = true
        lastLook = DispatchTime.now().uptimeNanoseconds
        lookAfter = isReady() ? 30_000_000_000 : 500_000_000
      }
    }
    // Catch up with what changed while nobody watched (the watches are already in place).
    rescanNow()
    while !stopping.load(ordering: .acquiring) && isOwnerAlive() {
      var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
      let ready = poll(&poller, 1, 100)
      let now = DispatchTime.now().uptimeNanoseconds
      if owed && lastEvent == nil && now - lastLook >= lookAfter {
        lastLook = now
        lookAfter = 500_000_000
        if isReady() { rescanNow() }
      }
      if ready > 0 {
        // Drain: the events themselves do not matter, only that something changed.
        while buffer.withUnsafeMutableBytes({ read(descriptor, $0.baseAddress, $0.count) }) > 0 {}
        lastEvent = now
        if firstEvent == nil { firstEvent = now }
      }
      guard let last = lastEvent, let first = firstEvent else { continue }
      // Quiet for the debounce time, or changing for 2 s without a pause (a long copy): rescan.
      let quiet = Double(now - last) / 1e9 >= Self.debounceSeconds
      if quiet || Double(now - first) / 1e9 >= 2 {
        lastEvent = nil
        firstEvent = nil
        if stopping.load(ordering: .acquiring) { break }
        if isReady() { rescanNow() } else { owed = true }
      }
    }
  }
}
