import Foundation

/// The shape of a fade: a fade-in (`fadeInGain`, rising from 0 to 1) and a fade-out
/// (`fadeOutGain`, falling from 1 to 0) over the same progress. An outgoing and an incoming item
/// that crossfade with one curve use its two sides together.
///
/// No curve lets the summed power of two unrelated pieces dip by more than 3 dB (linear and
/// s-curve dip exactly 3.01 dB mid-way; equal-power and exponential keep it constant).
public enum FadeCurve: String, Sendable, CaseIterable, Codable {
  /// Gain rises evenly. The summed power dips by 3 dB mid-way for unrelated music (right for two
  /// copies of the same recording, which add in amplitude).
  case linear
  /// sin/cos: the summed power of unrelated music stays constant through the fade. The default.
  case equalPower = "equal-power"
  /// Slow at both ends, quick in the middle (a raised cosine): the new item sneaks in.
  case sCurve = "s-curve"
  /// The fade-in is even in decibels, a 60 dB rise (−60 dB to 0 dB), the way ears hear a fade;
  /// the fade-out is its power complement, √(1 − in²), so a crossfade keeps the summed power
  /// constant: the new music arrives late while the old holds on and then gives way. (A mirrored
  /// pair of decibel-even fades would meet at −30 dB, a 27 dB hole mid-way.)
  case exponential

  /// The gain of a fade-in at `progress` in 0...1.
  public func fadeInGain(_ progress: Double) -> Double {
    let p = max(0, min(1, progress))
    switch self {
    case .linear: return p
    case .equalPower: return sin(p * Double.pi / 2)
    case .sCurve: return (1 - cos(p * Double.pi)) / 2
    case .exponential: return p <= 0 ? 0 : pow(10, -3 * (1 - p))
    }
  }

  /// The gain of a fade-out at `progress` in 0...1 (1 at the start, 0 at the end).
  public func fadeOutGain(_ progress: Double) -> Double {
    let p = max(0, min(1, progress))
    switch self {
    case .linear, .equalPower, .sCurve: return fadeInGain(1 - p)
    case .exponential:
      let rising = fadeInGain(p)
      return p >= 1 ? 0 : (1 - rising * rising).squareRoot()
    }
  }
}

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

  /// A crossfade of `duration` seconds (0 is gapless).
  /// - Throws: `QueueError.invalidCrossfade` for a negative, NaN or infinite duration.
  public init(duration: TimeInterval, curve: FadeCurve = .equalPower) throws(QueueError) {
    guard duration.isFinite, duration >= 0 else { throw QueueError.invalidCrossfade(duration) }
    self.duration = duration
    self.curve = curve
  }

  init(validDuration: TimeInterval, curve: FadeCurve) {
    duration = validDuration
    self.curve = curve
  }

  /// Whether this is a gapless join (a duration of 0).
  public var isGapless: Bool { duration == 0 }

  /// "gapless", or the curve and length, e.g. "s-curve crossfade of 2.0 s".
  public var description: String { isGapless ? "gapless" : "\(curve.rawValue) crossfade of \(duration) s" }
}
