/// Turns one decoded frame of any channel count into the decoder's output (mono or stereo).
///
/// Leitmotif plays music, not surround beds: files with more than two channels are folded down
/// with the usual -3 dB for centre and surrounds (Vorbis channel order). Mono output of a stereo
/// source is the mean of both sides.
enum ChannelMixing {
  /// WAVE's channel order (front left, right, centre, LFE, back left, right, ...), which FLAC and
  /// WAV files use, to Vorbis's, which `mix` folds: Vorbis channel k is WAVE channel
  /// `waveToVorbisOrder[count][k]`.
  static let waveToVorbisOrder: [Int: [Int]] = [
    3: [0, 2, 1], 4: [0, 1, 2, 3], 5: [0, 2, 1, 3, 4], 6: [0, 2, 1, 4, 5, 3], 7: [0, 2, 1, 5, 6, 4, 3],
    8: [0, 2, 1, 6, 7, 4, 5, 3],
  ]

  /// `sample(c)` gives input channel `c` of the frame; writes `outputChannels` samples at `output`.
  @inline(__always)
  static func mix(
    inputChannels: Int, outputChannels: Int, output: UnsafeMutablePointer<Float>,
    sample: (Int) -> Float
  ) {
    let minus3dB: Float = 0.707_106_77
    switch (inputChannels, outputChannels) {
    case (1, 1): output[0] = sample(0)
    case (1, _):
      let value = sample(0)
      output[0] = value
      output[1] = value
    case (2, 2):
      output[0] = sample(0)
      output[1] = sample(1)
    case (2, _): output[0] = (sample(0) + sample(1)) * 0.5
    default:
      // Vorbis order: 3: L C R; 4: FL FR RL RR; 5: FL C FR RL RR; 6: + LFE; 7/8: FL C FR SL SR ...
      let left: Float
      let right: Float
      switch inputChannels {
      case 3: (left, right) = (sample(0) + minus3dB * sample(1), sample(2) + minus3dB * sample(1))
      case 4: (left, right) = (sample(0) + minus3dB * sample(2), sample(1) + minus3dB * sample(3))
      default:
        let centre = minus3dB * sample(1)
        left = sample(0) + centre + minus3dB * sample(3)
        right = sample(2) + centre + minus3dB * sample(4)
      }
      if outputChannels == 2 {
        output[0] = left
        output[1] = right
      } else {
        output[0] = (left + right) * 0.5
      }
    }
  }
}
