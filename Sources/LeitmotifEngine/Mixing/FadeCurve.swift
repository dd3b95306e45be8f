import FoundationEssentials
import LeitmotifDecoding
import LeitmotifOutput

#if canImport(Glibc)
  import Glibc
#endif

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
