import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// The music bus's safety limiter: no sample leaves the mixer above full scale (1.0), live or
/// offline, whatever the voices add up to (two loud masters in an equal-power crossfade reach
/// 1.41 where their peaks meet; a stinger over the score can do the same).
///
/// Why Leitmotif's own and not OpenAL Soft's: OpenAL's output limiter (on by default on a
/// playback device in 1.19) runs a compressor with a `logf` and an `expf` per sample even when
/// nothing comes near full scale; it cost a fifth of a one-voice engine's CPU on OpenAL's null
/// device (measured: 0.0149 against 0.0116 CPU s per audio s). And an offline render must have it
/// off to come out bit-exact, so with it on live, what the game heard past full scale was not
/// what the render promised. Both devices now run with it off, and this one runs in the mix,
/// the same live as offline.
///
/// How: a peak limiter without look-ahead (look-ahead would delay the bus, and every transition
/// would land late by it). The gain drops at once, on the frame that would go over, to just what
/// keeps that frame at full scale, and returns towards 1 exponentially (`releaseSeconds`), so
/// after the peak the music is turned down smoothly instead of clipped flat. While the gain is 1
/// and a block stays within full scale, the block is not touched: music that never goes over
/// comes out bit for bit as mixed, and costs one vectorized pass that looks for a sample over
/// full scale (`anyOver`).
///
/// Streaming-thread only (offline: under the engine's render lock); no allocation.
package struct PeakLimiter {
  /// The most a sample may be, in either direction.
  static let ceiling: Float = 1
  /// The time constant of the return to unity gain.
  static let releaseSeconds = 0.1
  /// The gain counts as back at 1 once it is this close (−0.0009 dB): the fast path resumes.
  static let unityDistance: Float = 0.0001

  /// How far below 1 the gain of the last frame was (0 when the limiter is not acting). Kept as
  /// the distance, not the gain: near 1 a float gain stops moving (each step is less than half its
  /// last place), the distance keeps shrinking.
  private var reduction: Float = 0
  /// The fraction of the distance kept each frame of the release.
  private let keep: Float

  init(sampleRate: Int) {
    keep = Float(exp(-1 / (Self.releaseSeconds * Double(max(1, sampleRate)))))
  }

  /// Limits `frames` stereo frames in place.
  mutating func process(_ samples: UnsafeMutablePointer<Float>, frames: Int) {
    if reduction == 0 && !Self.anyOver(samples, count: 2 * frames) { return }
    var reduction = self.reduction
    for frame in 0..<frames {
      let left = samples[2 * frame]
      let right = samples[2 * frame + 1]
      if reduction > 0 {
        reduction *= keep
        if reduction < Self.unityDistance { reduction = 0 }
      }
      let level = max(abs(left), abs(right))
      // (An infinite sample makes the gain 0, and the music comes back over the release.)
      if level * (1 - reduction) > Self.ceiling { reduction = 1 - Self.ceiling / level }
      let gain = 1 - reduction
      samples[2 * frame] = min(Self.ceiling, max(-Self.ceiling, left * gain))
      samples[2 * frame + 1] = min(Self.ceiling, max(-Self.ceiling, right * gain))
    }
    self.reduction = reduction
  }

  /// Whether any of `count` samples is beyond full scale: the common case's one pass, eight
  /// samples at a time. Written with SIMD types because a scalar `max(peak, abs(x))` loop does not
  /// vectorize (Swift's `max` orders NaN, so LLVM may not reassociate it): as a scalar loop this
  /// pass was 6.6 % of an offline render's whole CPU, more than OpenAL's mix of the bus.
  /// (A NaN sample is not over, as before: the comparisons are false for it.)
  static func anyOver(_ samples: UnsafePointer<Float>, count: Int) -> Bool {
    let raw = UnsafeRawPointer(samples)
    var over = SIMDMask<SIMD8<Int32>>(repeating: false)
    var index = 0
    while index + 8 <= count {
      let block = raw.loadUnaligned(fromByteOffset: 4 * index, as: SIMD8<Float>.self)
      over .|= (block .> ceiling) .| (block .< -ceiling)
      index += 8
    }
    if any(over) { return true }
    while index < count {
      if abs(samples[index]) > ceiling { return true }
      index += 1
    }
    return false
  }
}
