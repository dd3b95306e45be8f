import FoundationEssentials
import LeitmotifEngine
import LeitmotifOutput

#if canImport(Glibc)
  import Glibc
#endif

/// The thread a scan reads files on (`lm.library.read`), at nice `niceness`.
///
/// A first scan decodes every song whole and listens to it (loudness, tempo, beats): minutes of
/// both cores' worth for a large library, started while the game runs. The scan is called on the
/// game's background thread of its choosing, whose priority is not ours to lower (on Linux an
/// unprivileged thread cannot raise it back), so the reading moves to a thread of its own whose
/// nice value is 10: the game's threads and the real-time mixer (nice 0 or better) win every
/// contended core, and the scan takes what is left. Linux's nice value is per thread, and
/// `setpriority(PRIO_PROCESS, 0, ...)` sets the calling thread's only.
///
/// The scan hands one file at a time and waits (`perform`), so the index, the journal and the
/// report stay on the scan's thread as before; the reader holds no lock while it reads.
///
/// Owns its thread: `deinit` ends it (after the job in hand, if any).
/// Thread safety: `perform` from one thread at a time (the scan's).
final class LowPriorityReader: Sendable {
  /// The nice value of the reading thread: 10, what `nice` gives by default.
  static let niceness: Int32 = 10
  static let threadName = "lm.library.read"

  /// What the two threads share. The thread holds the mailbox, not the reader, so the reader's
  /// `deinit` (which closes the mailbox and so ends the thread) can run.
  private let mailbox = Mailbox()

  init() {
    let mailbox = mailbox
    NativeThread { mailbox.serve() }.start()
  }

  deinit { mailbox.close() }

  /// Runs `body` on the reading thread and returns its result; this thread waits meanwhile.
  func perform<Result>(_ body: () -> Result) -> Result {
    withoutActuallyEscaping(body) { body in
      nonisolated(unsafe) var result: Result?
      mailbox.run { result = body() }
      return result!
    }
  }

  private final class Mailbox: @unchecked Sendable {
    private let condition = Condition()
    /// The job in hand (guarded by `condition`); nil when idle.
    private var job: (() -> Void)?
    private var closed = false

    /// Hands `job` to the reading thread and waits until it has run.
    func run(_ body: @escaping () -> Void) {
      condition.lock()
      job = body
      condition.broadcast()
      while job != nil { condition.wait() }
      condition.unlock()
    }

    func close() {
      condition.lock()
      closed = true
      condition.broadcast()
      condition.unlock()
    }

    /// The reading thread's loop.
    func serve() {
      nameCurrentThread(LowPriorityReader.threadName)
      // The calling thread only (see the type's comment). Failing is harmless: the scan then
      // reads at the priority it was given.
      _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, LowPriorityReader.niceness)
      condition.lock()
      while true {
        while job == nil && !closed { condition.wait() }
        guard let next = job else { break }
        condition.unlock()
        next()
        condition.lock()
        job = nil
        condition.broadcast()
      }
      condition.unlock()
    }
  }
}

/// A mutex and its condition variable, like Foundation's `NSCondition` (FoundationEssentials has
/// none; Synchronization's `Mutex` has no condition to wait on). Heap-allocated: a pthread mutex
/// must not move.
private final class Condition: @unchecked Sendable {
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let variable = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

  init() {
    pthread_mutex_init(mutex, nil)
    pthread_cond_init(variable, nil)
  }

  deinit {
    pthread_cond_destroy(variable)
    pthread_mutex_destroy(mutex)
    variable.deallocate()
    mutex.deallocate()
  }

  func lock() { pthread_mutex_lock(mutex) }
  func unlock() { pthread_mutex_unlock(mutex) }
  /// Unlocks, waits for a `broadcast`, and locks again (it may also wake spuriously: callers loop).
  func wait() { pthread_cond_wait(variable, mutex) }
  func broadcast() { pthread_cond_broadcast(variable) }
}
