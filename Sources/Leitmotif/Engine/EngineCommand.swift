import Foundation
import Synchronization

/// A file opened by the loader, its decode thread already running and its ring filled, handed
/// to the streaming thread. The loader never touches it again after sending.
struct LoadedStream: @unchecked Sendable {
  var stream: DecodeAheadStream
  var startFrame: Int64
  /// A hand-over armed before the voice existed.
  var handoff: Voice.Handoff? = nil
}

/// Requests from game threads to the streaming thread.
enum EngineCommand: Sendable {
  case attach(slot: Int, LoadedStream)
  case loadFailed(slot: Int, DecodeError)
  case play(slot: Int)
  case pause(slot: Int)
  case stop(slot: Int, generation: Int)
  case seek(slot: Int, seconds: Double, generation: Int)
  case setRate(slot: Int, Float)
  case setVolume(slot: Int, Float)
  /// The high-frequency gain of the slot's low-pass filter, 0...1 (1: unfiltered).
  case setLowPass(slot: Int, Float)
  case scan(slot: Int, direction: Int)  // +1 forward, -1 backward, 0 ends the scan
  case release(slot: Int)
  /// Arms (or, with nil, disarms) the hand-over from a voice to a follower (see `Voice.Handoff`).
  case arm(slot: Int, Voice.Handoff?)
  /// Starts `to` with a fade-in, and fades out every voice in `from` from its audible level, all in
  /// the same mix, as soon as `to` has audio queued.
  case crossfade(to: Int, from: [Int], seconds: Double, curve: FadeCurve)
  /// Fades a voice out for good; it reports `.fadedOut` when silent.
  case fadeOutAndFinish(slot: Int, seconds: Double, curve: FadeCurve)
  /// Drops what the voice decoded after the segment being heard (see `Voice.resync`).
  case resync(slot: Int)
  case setMasterGain(Float)
  case simulateDeviceDisconnect
  /// Tests only: the streaming thread sleeps this long, as a descheduled thread on a loaded
  /// machine would, so the sources run dry.
  case stallForTesting(milliseconds: Int)
}

/// What the streaming thread reports back; delivered on the notification thread.
enum EngineEvent: @unchecked Sendable {
  case prepared(slot: Int)
  case ended(slot: Int)
  /// A gapless join became audible: segment `token` is heard now.
  case segmentStarted(slot: Int, token: Int)
  /// A segment failed mid-stream; the stream went on with the next one.
  case segmentFailed(slot: Int, token: Int, DecodeError)
  /// A voice that was let go (a crossfade's outgoing side) is silent now.
  case fadedOut(slot: Int)
  /// An armed hand-over started: `to` fades in, `from` fades out.
  case handedOff(from: Int, to: Int)
  /// A segment to be joined gaplessly could not be opened, or has another sample rate than the
  /// stream (`rateMismatch`: one OpenAL source plays one rate).
  case appendFailed(slot: Int, token: Int, DecodeError, rateMismatch: Bool)
  case failed(slot: Int, DecodeError)
  case underrun(slot: Int)
  case deviceLost(String)
  case deviceRestored(OutputDevice.Kind, String)
  case interrupted(slot: Int, Bool)
  case diagnostic(Diagnostic)
  /// The voice pool gave this owner's voice to another (see `AudioEngine.allocateSlot`).
  case stolenFrom(@Sendable (EngineEvent) -> Void, slot: Int)
  /// Something the streaming thread is done with, to be freed off the streaming thread.
  case reclaim(AnyObject)
}

/// Many producers, one consumer; the consumer never waits.
///
/// Game threads append under the mutex (they may wait a moment for each other). The streaming
/// thread only ever *tries* the lock and swaps the whole batch out for its own empty array, so a
/// game thread holding the lock can delay a command by one pump but never stall the audio.
///
/// A consumer that has nothing to do sleeps in `waitForPost` and is woken by the next post (one
/// wake per batch, however many posts it holds), so idle engines do not poll.
final class CommandQueue<Element: Sendable>: Sendable {
  private let pending = Mutex<[Element]>([])
  private let wake = DispatchSemaphore(value: 0)
  private let wakePending = Atomic<Bool>(false)

  func post(_ element: Element) {
    pending.withLock { $0.append(element) }
    wakeUp()
  }

  /// Wakes a consumer sleeping in `waitForPost` (a semaphore signal: it never blocks).
  func wakeUp() {
    if !wakePending.exchange(true, ordering: .acquiringAndReleasing) { wake.signal() }
  }

  /// Sleeps until something is posted (or `wakeUp`), at most `timeout`.
  func waitForPost(timeout: DispatchTimeInterval) {
    _ = wake.wait(timeout: .now() + timeout)
    wakePending.store(false, ordering: .releasing)
  }

  /// Moves everything pending into `batch` (which must be empty) without blocking.
  /// Returns false if the lock was busy; the caller tries again next time.
  func takeAll(into batch: inout [Element]) -> Bool {
    pending.withLockIfAvailable { queue in
      swap(&queue, &batch)
    } != nil
  }

  /// Appends `batch` to the queue without blocking; false (and nothing moved) if the lock was busy.
  func tryPost(contentsOf batch: [Element]) -> Bool {
    let posted = pending.withLockIfAvailable { queue in queue.append(contentsOf: batch) } != nil
    if posted { wakeUp() }
    return posted
  }

  /// Blocking variant for consumers that may wait (the notification thread).
  func takeAllWaiting(into batch: inout [Element]) {
    pending.withLock { queue in swap(&queue, &batch) }
  }
}
