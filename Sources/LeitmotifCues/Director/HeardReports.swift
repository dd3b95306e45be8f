import Dispatch
import LeitmotifEngine
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// When an observer gets a report (`Director.addObserver(timing:_:)`).
public enum ReportTiming: String, Sendable, CaseIterable {
  /// When the director decides it: in real time ahead of the music it speaks of, by the
  /// director's scheduling lead plus what the output still holds (150 to 165 ms on the headless
  /// device). For logs, tools, and a game that wants to know a change is coming.
  case whenDecided
  /// When the music it speaks of is heard: the report's `time` reaches the ear (as beat and
  /// marker callbacks do), so a game can change its lights or its screen on the change itself.
  /// Reports keep their order; offline, where the director steps on the frames it renders,
  /// both timings are the same.
  case whenHeard
}

/// Holds reports for the `.whenHeard` observers until their time is heard, then hands them on
/// in order, on the engine's audible thread (`AudioEngine.whenAudible`).
///
/// One queue for all of a director's heard observers: a report waits until the mix frame of its
/// `time` has been heard (OpenAL's playback position, as `AudioEngine.heardFrame` reads it), and
/// no report passes the one before it. A device that stops playing (lost, or a stalled sound
/// server) must not hold the reports for ever: each goes at most `latestSeconds` after the time
/// its frame was due when it was queued.
///
/// Thread safety: `enqueue` from the director's step (any thread); drains run on the audible thread.
final class HeardReports: Sendable {
  private struct Waiting {
    var frame: Int64
    /// Uptime past which it goes whether heard or not.
    var latest: UInt64
    var report: DirectorReport
  }

  private struct State {
    var waiting: [Waiting] = []
    /// Whether a drain is scheduled (at most one at a time, so the order holds).
    var draining = false
    var handlers: [UInt64: @Sendable (DirectorReport) -> Void] = [:]
    var stopped = false
  }

  private let state = Mutex(State())
  private let engine: AudioEngine

  /// How far the known playback position may lag a report's frame when it is handed on: the
  /// position moves in steps of a bus block or a device period (as for beats).
  static let slackFrames: Int64 = 256
  /// How long after it was due a report goes when the device does not get there.
  static let latestSeconds = 1.0

  init(engine: AudioEngine) {
    self.engine = engine
  }

  var isEmpty: Bool { state.withLock { $0.waiting.isEmpty && !$0.draining } }
  var hasHandlers: Bool { state.withLock { !$0.handlers.isEmpty } }

  func add(_ token: UInt64, _ handler: @escaping @Sendable (DirectorReport) -> Void) {
    state.withLock { $0.handlers[token] = handler }
  }

  /// Whether `token` was one of these observers.
  func remove(_ token: UInt64) -> Bool { state.withLock { $0.handlers.removeValue(forKey: token) != nil } }

  /// Queues `reports` (in order), `originFrame` being the mix frame of director time 0.
  func enqueue(_ reports: [DirectorReport], originFrame: Int64) {
    let rate = Double(engine.sampleRate)
    let now = DispatchTime.now().uptimeNanoseconds
    let heard = engine.heardFrame
    let start = state.withLock { state -> Bool in
      guard !state.stopped, !state.handlers.isEmpty else { return false }
      for report in reports {
        let frame = originFrame + Int64((report.time * rate).rounded())
        let due = now + UInt64(Double(max(0, frame - heard)) / rate * 1e9)
        state.waiting.append(
          Waiting(frame: frame, latest: due + UInt64(Self.latestSeconds * 1e9), report: report))
      }
      guard !state.draining, !state.waiting.isEmpty else { return false }
      state.draining = true
      return true
    }
    // The first look on the audible thread too: a handler never runs inside the director's step.
    if start { engine.whenAudible(at: now) { [weak self] in self?.drain() } }
  }

  /// Hands on every report whose frame has been heard, in order; then waits for the next one.
  private func drain() {
    let heard = engine.heardFrame
    let now = DispatchTime.now().uptimeNanoseconds
    let (ready, handlers, next) = state.withLock {
      state -> ([DirectorReport], [@Sendable (DirectorReport) -> Void], UInt64?) in
      var count = 0
      while count < state.waiting.count,
        state.waiting[count].frame <= heard + Self.slackFrames || state.waiting[count].latest <= now
      {
        count += 1
      }
      let ready = state.waiting.prefix(count).map(\.report)
      state.waiting.removeFirst(count)
      let handlers = state.handlers.sorted { $0.key < $1.key }.map(\.value)
      guard let head = state.waiting.first, !state.stopped else {
        state.draining = false
        return (ready, handlers, nil)
      }
      let untilHeard = UInt64(Double(max(0, head.frame - heard)) / Double(engine.sampleRate) * 1e9)
      return (ready, handlers, min(now + max(untilHeard, 1_000_000), head.latest))
    }
    deliver(ready, to: handlers)
    if let next {
      engine.whenAudible(at: next) { [weak self] in self?.drain() }
    }
  }

  /// What still waits, with the handlers to give it to (the director is shutting down: nothing
  /// is lost; it hands them on, on its notification queue); takes no more.
  func takeRest() -> (reports: [DirectorReport], handlers: [@Sendable (DirectorReport) -> Void]) {
    state.withLock { state in
      state.stopped = true
      // A drain scheduled on an engine that has shut down never runs: nothing waits for it.
      state.draining = false
      let rest = state.waiting.map(\.report)
      state.waiting.removeAll()
      return (rest, state.handlers.sorted { $0.key < $1.key }.map(\.value))
    }
  }

  /// The thread handing reports on now (0: none), so that `Director.waitForReports()` called
  /// from a heard observer returns at once instead of waiting for itself.
  private let deliveringThread = Atomic<UInt>(0)

  var isDeliveringOnThisThread: Bool { deliveringThread.load(ordering: .acquiring) == UInt(pthread_self()) }

  private func deliver(_ reports: [DirectorReport], to handlers: [@Sendable (DirectorReport) -> Void]) {
    guard !reports.isEmpty else { return }
    deliveringThread.store(UInt(pthread_self()), ordering: .releasing)
    defer { deliveringThread.store(0, ordering: .releasing) }
    for report in reports {
      for handler in handlers { handler(report) }
    }
  }
}
