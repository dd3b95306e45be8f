import Foundation
import Synchronization

/// A file opened by the loader, its decode thread already running and its ring filled, handed
/// to the streaming thread. The loader never touches it again after sending.
struct LoadedStream: @unchecked Sendable {
  var stream: DecodeAheadStream
  var startFrame: Int64
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
  case scan(slot: Int, direction: Int)  // +1 forward, -1 backward, 0 ends the scan
  case release(slot: Int)
  case simulateDeviceDisconnect
  /// Tests only: the streaming thread sleeps this long, as a descheduled thread on a loaded
  /// machine would, so the sources run dry.
  case stallForTesting(milliseconds: Int)
}

/// What the streaming thread reports back; delivered on the notification thread.
enum EngineEvent: @unchecked Sendable {
  case prepared(slot: Int)
  case ended(slot: Int)
  case failed(slot: Int, DecodeError)
  case underrun(slot: Int)
  case deviceLost(String)
  case deviceRestored(OutputDevice.Kind, String)
  case interrupted(slot: Int, Bool)
  case diagnostic(Diagnostic)
  /// Something the streaming thread is done with, to be freed off the streaming thread.
  case reclaim(AnyObject)
}

/// Many producers, one consumer; the consumer never waits.
///
/// Game threads append under the mutex (they may wait a moment for each other). The streaming
/// thread only ever *tries* the lock and swaps the whole batch out for its own empty array, so a
/// game thread holding the lock can delay a command by one pump but never stall the audio.
final class CommandQueue<Element: Sendable>: Sendable {
  private let pending = Mutex<[Element]>([])

  func post(_ element: Element) { pending.withLock { $0.append(element) } }

  /// Moves everything pending into `batch` (which must be empty) without blocking.
  /// Returns false if the lock was busy; the caller tries again next time.
  func takeAll(into batch: inout [Element]) -> Bool {
    pending.withLockIfAvailable { queue in
      swap(&queue, &batch)
    } != nil
  }

  /// Appends `batch` to the queue without blocking; false (and nothing moved) if the lock was busy.
  func tryPost(contentsOf batch: [Element]) -> Bool {
    pending.withLockIfAvailable { queue in
      queue.append(contentsOf: batch)
    } != nil
  }

  /// Blocking variant for consumers that may wait (the notification thread).
  func takeAllWaiting(into batch: inout [Element]) {
    pending.withLock { queue in swap(&queue, &batch) }
  }
}
