import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput

/// How one item hands over to the next.
///
/// A duration of 0 is a gapless join: the next item's first sample follows the previous item's
/// last one, with no gap and no overlap. Anything longer is a crossfade: the outgoing item keeps
/// playing and fades out while the incoming one fades in on a second voice, both with `curve`.
public struct Transition: Sendable, Equatable, Codable, CustomStringConvertible {
  /// The crossfade's length in seconds; 0 is a gapless join.
  public private(set) var duration: TimeInterval
  /// The shape of both fades.
  public private(set) var curve: FadeCurve

  /// Joins with no gap and no overlap.
  public static let gapless = Transition(validDuration: 0, curve: .equalPower)
  /// Leitmotif's default: an equal-power crossfade of 3 seconds.
  public static let defaultCrossfade = Transition(validDuration: 3, curve: .equalPower)

  /// The longest crossfade: one day, as the cue file and the C API allow (a slip such as 1e9 s is
  /// caught here, not heard as music that never changes).
  public static let maximumDuration: TimeInterval = 86_400

  /// A crossfade of `duration` seconds (0 is gapless).
  /// - Throws: `QueueError.invalidCrossfade` for a negative, NaN or infinite duration, or one
  ///   longer than `maximumDuration`.
  public init(duration: TimeInterval, curve: FadeCurve = .equalPower) throws(QueueError) {
    guard duration.isFinite, duration >= 0, duration <= Self.maximumDuration else {
      throw QueueError.invalidCrossfade(duration)
    }
    self.duration = duration
    self.curve = curve
  }

  package init(validDuration: TimeInterval, curve: FadeCurve) {
    duration = validDuration
    self.curve = curve
  }

  /// Whether this is a gapless join (a duration of 0).
  public var isGapless: Bool { duration == 0 }

  /// "gapless", or the curve and length, e.g. "s-curve crossfade of 2.0 s".
  public var description: String { isGapless ? "gapless" : "\(curve.rawValue) crossfade of \(duration) s" }
}
