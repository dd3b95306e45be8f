import Dispatch
import LeitmotifOutput
import Synchronization

/// Runs work when the audio it is about reaches the ear: a beat callback at the moment its beat
/// is heard, not when the mixer mixed it (that is a bus and a device buffer earlier).
///
/// Its own thread (`lm.audible`), made on first use and ended with the engine: the notification
/// thread hands it each piece of work with the uptime it is due at and goes on; this thread
/// sleeps until the earliest is due. Work stamped 0 (an offline engine's) runs at once on the
/// caller's thread, in the order it came.
///
/// Thread safety: `schedule` from any thread; `stop` once, when the engine shuts down.
final class AudibleDispatcher: Sendable {
  private struct Pending {
    var dueNanoseconds: UInt64
    var order: UInt64
    var work: @Sendable () -> Void
  }

  private struct State {
    var pending: [Pending] = []
    var nextOrder: UInt64 = 0
    var thread: NativeThread?
    var stopped = false
  }

  private let state = Mutex(State())
  private let wake = DispatchSemaphore(value: 0)
  /// Signalled by the thread as it ends. `stop` waits on this, not on `wake`: waiting on `wake`
  /// took back its own signal, and the thread slept out its wait (up to a second), so every
  /// engine shutdown (`lm_engine_destroy`) took about 0.8 s.
  private let finished = DispatchSemaphore(value: 0)

  /// Runs `work` at `dueNanoseconds` of the uptime clock (`DispatchTime.now().uptimeNanoseconds`).
  func schedule(at dueNanoseconds: UInt64, _ work: @escaping @Sendable () -> Void) {
    if dueNanoseconds == 0 {
      // An offline engine's: heard as it is rendered, so now (on the caller's thread, in order).
      if !state.withLock({ $0.stopped }) { work() }
      return
    }
    let thread = state.withLock { state -> NativeThread? in
      guard !state.stopped else { return nil }
      state.pending.append(Pending(dueNanoseconds: dueNanoseconds, order: state.nextOrder, work: work))
      state.nextOrder += 1
      guard state.thread == nil else { return nil }
      let made = NativeThread { [self] in run() }
      state.thread = made
      return made
    }
    thread?.start()
    wake.signal()
  }

  /// Drops what is pending and ends the thread (waits for it, at most `seconds`).
  func stop(waitingUpTo seconds: Double) {
    let thread = state.withLock { state -> NativeThread? in
      state.stopped = true
      state.pending.removeAll()
      return state.thread
    }
    wake.signal()
    guard let thread, !thread.isCurrent else { return }
    _ = finished.wait(timeout: .now() + seconds)
  }

  private func run() {
    nameCurrentThread("lm.audible")
    defer { finished.signal() }
    while true {
      let next = state.withLock { state -> (work: (@Sendable () -> Void)?, sleep: UInt64?, stop: Bool) in
        if state.stopped { return (nil, nil, true) }
        guard
          let index = state.pending.indices.min(by: {
            (state.pending[$0].dueNanoseconds, state.pending[$0].order)
              < (state.pending[$1].dueNanoseconds, state.pending[$1].order)
          })
        else { return (nil, nil, false) }
        let now = DispatchTime.now().uptimeNanoseconds
        let due = state.pending[index].dueNanoseconds
        if due > now { return (nil, due - now, false) }
        return (state.pending.remove(at: index).work, nil, false)
      }
      if next.stop { return }
      if let work = next.work {
        work()
      } else if let sleep = next.sleep {
        _ = wake.wait(timeout: .now() + .nanoseconds(Int(min(sleep, 1_000_000_000))))
      } else {
        _ = wake.wait(timeout: .now() + .seconds(1))
      }
    }
  }
}
