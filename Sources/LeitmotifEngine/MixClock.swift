import Dispatch
import FoundationEssentials
import LeitmotifDecoding
import LeitmotifOutput
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The mix clock as other threads see it: frames the streaming thread has mixed, and, while it
/// mixes nothing (nothing plays), the time since it stopped, so the clock keeps pace with the
/// wall clock and a scheduled change still has a frame to land on. When mixing starts again the
/// streaming thread moves its own clock on to match (`StreamingLoop.leaveIdle`).
///
/// The mix runs ahead of the ear by what the music bus holds (`MusicBus.targetQueuedFrames`):
/// a frame of this clock is heard that much later.
package final class MixClock: Sendable {
  let sampleRate: Int
  /// Frames mixed (written by the streaming thread only).
  let mixedFrames = Atomic<Int64>(0)
  /// When the streaming thread stopped mixing (uptime nanoseconds), or 0 while it mixes.
  let idleSinceNanoseconds = Atomic<UInt64>(0)
  /// Timed commands that arrived after their frame was mixed (they took effect late, on the
  /// first frame mixed after they came): 0 means every scheduled change landed on its frame.
  let lateCommands = Atomic<Int>(0)
  /// The mix frame OpenAL is playing (frames mixed less what the bus and, as far as it says, the
  /// device still hold), as of the streaming thread's last refill: what the ear hears now.
  let heardFrames = Atomic<Int64>(0)
  /// What the streaming thread keeps queued on the bus ahead of OpenAL's mix, in frames
  /// (`MusicBus.targetQueuedFrames`; 0 on a device that renders on demand).
  let queuedAheadFrames = Atomic<Int>(0)

  init(sampleRate: Int) { self.sampleRate = sampleRate }

  /// The frame being mixed now.
  package var now: Int64 {
    let idle = idleSinceNanoseconds.load(ordering: .acquiring)
    let frames = mixedFrames.load(ordering: .acquiring)
    guard idle != 0 else { return frames }
    return frames + Self.frames(nanoseconds: DispatchTime.now().uptimeNanoseconds &- idle, rate: sampleRate)
  }

  static func frames(nanoseconds: UInt64, rate: Int) -> Int64 {
    Int64(nanoseconds / 1_000) * Int64(rate) / 1_000_000
  }
}

/// The mix frame at which the commands posted on this thread take effect, while
/// `AudioEngine.performing(atMixFrame:)` runs (a thread-local: the director stamps everything
/// one of its steps makes the players do, without the players knowing).
package enum CommandTime {
  private static let key: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
  }()

  /// The frame set on this thread, if any.
  package static var current: Int64? {
    guard let pointer = pthread_getspecific(key) else { return nil }
    return Int64(Int(bitPattern: pointer)) - 1
  }

  /// Runs `body` with commands posted on this thread stamped with `frame` (>= 0).
  static func with<Result>(_ frame: Int64, _ body: () throws -> Result) rethrows -> Result {
    let previous = pthread_getspecific(key)
    pthread_setspecific(key, UnsafeRawPointer(bitPattern: Int(max(0, frame) + 1)))
    defer { pthread_setspecific(key, previous) }
    return try body()
  }
}
