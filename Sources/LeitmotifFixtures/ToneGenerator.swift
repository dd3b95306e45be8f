import LeitmotifDecoding

#if canImport(Glibc)
  import Glibc
#endif

/// The shape of generated PCM: the decoders' own `AudioFormat`, so fixtures and decodes compare
/// directly.
public typealias PCMFormat = AudioFormat

extension AudioFormat {
  public static let stereo44100 = AudioFormat(sampleRate: 44_100, channelCount: 2)
  public static let stereo48000 = AudioFormat(sampleRate: 48_000, channelCount: 2)
  public static let mono22050 = AudioFormat(sampleRate: 22_050, channelCount: 1)

  /// The number of frames in `seconds`, rounded to the nearest frame.
  public func frames(seconds: Double) -> Int { Int((seconds * Double(sampleRate)).rounded()) }
}

/// Deterministic test signals as interleaved Float32 frames.
///
/// Every generator is a pure function of the absolute frame index, so a long signal can be made in
/// chunks (`startFrame:`) that join into exactly the samples a single call would give: that is how
/// a 10-minute fixture is encoded without holding it in memory.
///
/// Thread safety: pure functions; call from any thread.
public enum ToneGenerator {
  /// The frequency used for channel `channel` when a sine is asked for with one `frequency`:
  /// channel 0 gets `frequency`, channel 1 a fifth above (x 1.5), channel 2 an octave above, ...
  /// so channels can be told apart (a swap or a duplicated channel shows).
  public static func channelFrequency(_ frequency: Double, channel: Int) -> Double {
    frequency * (1 + 0.5 * Double(channel))
  }

  /// A sine tone: `frequency` on the first channel, and `channelFrequency` on the others.
  /// - Parameters:
  ///   - amplitude: peak value, 0...1.
  ///   - startFrame: the absolute index of the first frame to make (for chunked generation).
  public static func sine(
    frequency: Double, amplitude: Float = 0.5, frameCount: Int, format: PCMFormat, startFrame: Int = 0
  ) -> [Float] {
    let frequencies = (0..<format.channelCount).map { channelFrequency(frequency, channel: $0) }
    return sine(
      frequencies: frequencies, amplitude: amplitude, frameCount: frameCount, sampleRate: format.sampleRate,
      startFrame: startFrame)
  }

  /// A sine tone of `seconds` (rounded to whole frames); see `sine(frequency:amplitude:frameCount:format:startFrame:)`.
  public static func sine(frequency: Double, amplitude: Float = 0.5, seconds: Double, format: PCMFormat) -> [Float] {
    sine(frequency: frequency, amplitude: amplitude, frameCount: format.frames(seconds: seconds), format: format)
  }

  /// A sine tone with its own frequency per channel (`frequencies.count` channels).
  public static func sine(
    frequencies: [Double], amplitude: Float = 0.5, frameCount: Int, sampleRate: Int, startFrame: Int = 0
  ) -> [Float] {
    let channels = frequencies.count
    var samples = [Float](repeating: 0, count: frameCount * channels)
    for channel in 0..<channels {
      // Phase from the absolute frame index in Double: exact enough for hours at 48 kHz, and the
      // same whether made in one call or many.
      let step = 2 * Double.pi * frequencies[channel] / Double(sampleRate)
      for frame in 0..<frameCount {
        samples[frame * channels + channel] = amplitude * Float(sin(step * Double(startFrame + frame)))
      }
    }
    return samples
  }

  /// Uniform white noise in [-amplitude, amplitude) from a SplitMix64 stream: the same `seed`
  /// always gives the same samples, and frame `n` does not depend on where the chunk started.
  public static func whiteNoise(
    seed: UInt64, amplitude: Float = 0.5, frameCount: Int, channelCount: Int, startFrame: Int = 0
  ) -> [Float] {
    let first = UInt64(startFrame * channelCount)
    return (0..<(frameCount * channelCount)).map { index in
      amplitude * SplitMix64.unitFloat(SplitMix64.value(seed: seed, index: first + UInt64(index)))
    }
  }

  /// Something closer to music than a steady tone, for codecs and level meters: a bass note and an
  /// arpeggio of plucked notes (a new note every eighth at `beatsPerMinute`, with an attack and
  /// exponential decay) from a minor pentatonic scale, chosen by `seed`. Stereo places the
  /// arpeggio slightly right and the bass left. Peaks stay below 0.8.
  public static func musicLike(
    seed: UInt64, beatsPerMinute: Double = 120, frameCount: Int, format: PCMFormat, startFrame: Int = 0
  ) -> [Float] {
    let channels = format.channelCount
    let rate = Double(format.sampleRate)
    let framesPerNote = rate * 60 / beatsPerMinute / 2
    let scale: [Double] = [0, 3, 5, 7, 10, 12, 15, 17]  // semitones above A3
    var samples = [Float](repeating: 0, count: frameCount * channels)
    for frame in 0..<frameCount {
      let absolute = Double(startFrame + frame)
      let noteIndex = Int(absolute / framesPerNote)
      let sinceNote = (absolute - Double(noteIndex) * framesPerNote) / rate
      let pick = SplitMix64.value(seed: seed, index: UInt64(noteIndex))
      let pitch = 220 * pow(2, scale[Int(pick % UInt64(scale.count))] / 12)
      let envelope = min(1, sinceNote / 0.005) * exp(-sinceNote * 6)
      let time = absolute / rate
      let lead = 0.35 * envelope * (sin(2 * .pi * pitch * time) + 0.3 * sin(4 * .pi * pitch * time))
      let barIndex = noteIndex / 8
      let bassPitch = 55 * pow(2, [0.0, 5, 7, 3][barIndex % 4] / 12)
      let bass = 0.25 * sin(2 * .pi * bassPitch * time)
      if channels == 1 {
        samples[frame] = Float(lead + bass)
      } else {
        samples[frame * channels] = Float(0.8 * lead + 1.0 * bass)
        samples[frame * channels + 1] = Float(1.0 * lead + 0.6 * bass)
        // Channels beyond stereo get the mono mix.
        for channel in 2..<max(2, channels) { samples[frame * channels + channel] = Float((lead + bass) * 0.5) }
      }
    }
    return samples
  }
}
