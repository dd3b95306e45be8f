/// Seconds become frames here, and nowhere else by hand.
///
/// A time in seconds comes from a game (`currentPlaybackTime = x`), a cue file or a command line,
/// and can be anything a `Double` holds: `Int64(1e308)` traps, and so does `1e15 * 48000` once it
/// is added to a position. Every conversion in the engine goes through `frames(seconds:rate:)`,
/// which saturates: NaN is 0 and any magnitude is held to `limit` frames, far beyond any real
/// music and far enough below `Int64.max` that positions, lengths and fades built from such
/// values can be added together without overflowing.
///
/// The cue checker and the command line refuse times above `maximumSeconds` with an error that
/// says the range; the saturation is for the Swift and C APIs, where a value cannot be refused.
package enum FrameMath {
  /// The largest frame count a conversion gives: 2^50 frames, 745 years at 48 kHz.
  package static let limit: Int64 = 1 << 50

  /// The longest time a cue file or a command-line option may name: one day. A fade, a seek or
  /// an event time beyond it is a typing mistake, and the checker says so.
  package static let maximumSeconds: Double = 86_400

  /// `seconds` at `rate` frames per second, rounded by `rule`, held to `-limit...limit`.
  @inline(__always)
  package static func frames(
    seconds: Double, rate: Double, rounding rule: FloatingPointRoundingRule = .toNearestOrAwayFromZero
  ) -> Int64 {
    clamp((seconds * rate).rounded(rule))
  }

  /// A frame count computed in floating point, held to `-limit...limit` (NaN is 0).
  @inline(__always)
  package static func clamp(_ frames: Double) -> Int64 {
    guard frames == frames else { return 0 }
    if frames >= Double(limit) { return limit }
    if frames <= -Double(limit) { return -limit }
    return Int64(frames)
  }
}
