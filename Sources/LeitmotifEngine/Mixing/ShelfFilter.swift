import FoundationEssentials
import LeitmotifDecoding
import LeitmotifOutput

#if canImport(Glibc)
  import Glibc
#endif

/// The "muffle" filter of a voice and of the music bus: a biquad high shelf from Robert
/// Bristow-Johnson's Audio EQ Cookbook, with the parameters OpenAL Soft gives its EFX low-pass
/// (`AL_FILTER_LOWPASS` is that same shelf in OpenAL Soft: reference frequency 5 kHz, the shelf's
/// gain at the reference equal to `gainHF`, slope 1, limited to -60 dB), so music sounds as it did
/// when the filter was OpenAL's, but runs inside Leitmotif's own mix, per frame, on any voice.
///
/// `gainHF` 1 bypasses the filter entirely: the output is then the input bit for bit. A change
/// of `gainHF` takes effect at the next frame mixed; the filter keeps its state across a change,
/// so the sound does not jump.
///
/// Streaming-thread only; no allocation.
package struct ShelfFilter {
  /// The shelf's reference frequency (OpenAL's `LOWPASSFREQREF`).
  static let referenceHertz = 5_000.0

  private(set) var gainHF: Float = 1
  private var b0: Float = 1, b1: Float = 0, b2: Float = 0, a1: Float = 0, a2: Float = 0
  // Transposed direct form II state, per channel.
  private var left1: Float = 0, left2: Float = 0, right1: Float = 0, right2: Float = 0
  private let sampleRate: Double

  init(sampleRate: Int) { self.sampleRate = Double(sampleRate) }

  var isBypassed: Bool { gainHF == 1 }

  /// Sets the high-frequency gain (0...1; NaN and infinities mean 1).
  mutating func set(gainHF newValue: Float) {
    let gainHF = newValue.isFinite ? max(0, min(1, newValue)) : 1
    guard gainHF != self.gainHF else { return }
    if self.gainHF == 1 { left1 = 0; left2 = 0; right1 = 0; right2 = 0 }  // from bypass: start clean
    self.gainHF = gainHF
    guard gainHF < 1 else { return }
    // The cookbook's high shelf with A = gain (OpenAL Soft's convention: the gain at the reference
    // frequency is `gainHF`), S = 1, so 1/Q = sqrt((A + 1/A)(1/S - 1) + 2) = sqrt(2).
    let gain = Double(max(gainHF, 0.001))
    let w0 = 2 * Double.pi * min(Self.referenceHertz, sampleRate * 0.49) / sampleRate
    let cosine = cos(w0)
    let alpha = sin(w0) / 2 * 2.0.squareRoot()
    let twoRootAlpha = 2 * gain.squareRoot() * alpha
    let a0 = (gain + 1) - (gain - 1) * cosine + twoRootAlpha
    b0 = Float(gain * ((gain + 1) + (gain - 1) * cosine + twoRootAlpha) / a0)
    b1 = Float(-2 * gain * ((gain - 1) + (gain + 1) * cosine) / a0)
    b2 = Float(gain * ((gain + 1) + (gain - 1) * cosine - twoRootAlpha) / a0)
    a1 = Float(2 * ((gain - 1) - (gain + 1) * cosine) / a0)
    a2 = Float(((gain + 1) - (gain - 1) * cosine - twoRootAlpha) / a0)
  }

  /// Filters `frames` stereo frames in place.
  mutating func process(_ samples: UnsafeMutablePointer<Float>, frames: Int) {
    guard gainHF < 1 else { return }
    var l1 = left1, l2 = left2, r1 = right1, r2 = right2
    for frame in 0..<frames {
      let left = samples[2 * frame]
      let outLeft = b0 * left + l1
      l1 = b1 * left - a1 * outLeft + l2
      l2 = b2 * left - a2 * outLeft
      samples[2 * frame] = outLeft
      let right = samples[2 * frame + 1]
      let outRight = b0 * right + r1
      r1 = b1 * right - a1 * outRight + r2
      r2 = b2 * right - a2 * outRight
      samples[2 * frame + 1] = outRight
    }
    // Denormals would make a silent tail expensive: flush what is too small to hear.
    left1 = abs(l1) < 1e-20 ? 0 : l1
    left2 = abs(l2) < 1e-20 ? 0 : l2
    right1 = abs(r1) < 1e-20 ? 0 : r1
    right2 = abs(r2) < 1e-20 ? 0 : r2
  }
}
