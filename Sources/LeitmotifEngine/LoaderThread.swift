import Dispatch
import FoundationEssentials
import LeitmotifOutput
import Synchronization

/// The engine's loader: one thread of its own, for the whole life of the engine, that opens
/// files and sets up their decoders in the order the work was given.
///
/// Why not a serial dispatch queue: libdispatch runs a queue's work on worker threads that come
/// and go, and glibc's malloc gives each new thread an arena of its own. Opening a file makes
/// about a hundred allocations (libvorbis's codebooks, tables, buffers); spread over changing
/// threads, they fragment many arenas that each keep their own free memory, and a long game's
/// RSS creeps. One loader thread keeps them in one arena.
final class LoaderThread: @unchecked Sendable {
  /// What the thread and its callers share (the thread holds this, not the loader).
  private final class State: Sendable {
    let pending = Mutex<[@Sendable () -> Void]>([])
    let wake = DispatchSemaphore(value: 0)
    let stopping = Atomic<Bool>(false)
    /// Work given and not yet finished (see `settle`).
    let outstanding = Atomic<Int>(0)
  }
  private let state = State()
  /// Set once in `init`; only read after (its own properties are thread-safe).
  private let thread: NativeThread

  /// Whether the thread has ended (after `stop`).
  var isFinished: Bool { thread.isFinished }

  /// Whether this is the loader thread (a diagnostics handler runs here, and may shut down).
  var isCurrent: Bool { thread.isCurrent }

  init() {
    let state = self.state
    thread = NativeThread {
      nameCurrentThread("lm.loader")
      var batch: [@Sendable () -> Void] = []
      while true {
        state.wake.wait()
        state.pending.withLock { swap(&batch, &$0) }
        for work in batch {
          work()
          state.outstanding.subtract(1, ordering: .releasing)
        }
        batch.removeAll(keepingCapacity: true)
        if state.stopping.load(ordering: .acquiring) && state.pending.withLock({ $0.isEmpty }) { break }
      }
    }
    thread.start()
  }

  /// Runs `work` on the loader thread, after everything given before it.
  func async(_ work: @escaping @Sendable () -> Void) {
    state.outstanding.add(1, ordering: .relaxed)
    state.pending.withLock { $0.append(work) }
    state.wake.signal()
  }

  /// Returns once everything given so far has run.
  func drain() {
    let done = DispatchSemaphore(value: 0)
    async { done.signal() }
    done.wait()
  }

  /// Whether work given earlier has not finished yet.
  var isBusy: Bool { state.outstanding.load(ordering: .acquiring) > 0 }

  /// An offline render's wait: when work is outstanding, returns once it has run (true); else
  /// returns false at once, having waited for nothing. On the loader thread itself (a voice it
  /// is making looks at its stream) it never waits: that would wait for itself.
  func settle() -> Bool {
    guard isBusy, !thread.isCurrent else { return false }
    drain()
    return true
  }

  /// Ends the thread once what was given has run (work given later is never run).
  func stop() {
    state.stopping.store(true, ordering: .releasing)
    state.wake.signal()
  }
}
