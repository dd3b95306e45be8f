/// The shape of decoded audio: how many frames per second and how many samples per frame.
///
/// Decoders produce interleaved 32-bit float samples in this format. A frame holds one sample per
/// channel; Leitmotif's decoders give mono or stereo (files with more channels are mixed down).
public struct AudioFormat: Sendable, Hashable, CustomStringConvertible {
  /// Frames per second.
  public var sampleRate: Int
  /// Samples per frame: 1 (mono) or 2 (stereo).
  public var channelCount: Int

  /// A format of `sampleRate` frames per second and `channelCount` channels.
  public init(sampleRate: Int, channelCount: Int) {
    self.sampleRate = sampleRate
    self.channelCount = channelCount
  }

  /// The sample rates Leitmotif plays: 1 kHz to 768 kHz. Every real recording lies inside (8 kHz
  /// telephone speech to 768 kHz studio masters); a header that says 255 Hz or 2^31 Hz is damaged
  /// or hostile, and further down such a rate would overflow a 32-bit field (OpenAL, WAV) or
  /// turn a short file into gigabytes when it is resampled. Decoders refuse the rest with a
  /// `DecodeError` naming the file.
  public static let supportedSampleRates: ClosedRange<Int> = 1_000...768_000

  /// The longest stream Leitmotif believes a header about: 2^40 frames (288 days at 44.1 kHz,
  /// 16 days at 768 kHz). A length beyond it is damage (a granule position near 2^63), and
  /// counting in frames of such lengths would overflow 64-bit arithmetic.
  public static let maximumLengthFrames: Int64 = 1 << 40

  /// "RATE Hz, mono" or "RATE Hz, stereo".
  public var description: String { "\(sampleRate) Hz, \(channelCount == 1 ? "mono" : "stereo")" }
}

/// The encodings Leitmotif reads. The format of a file is decided by its content, never its name.
public enum ContainerFormat: String, Sendable, Hashable {
  /// Ogg Vorbis (libvorbisfile).
  case vorbis
  /// MPEG audio, layer III (and I/II) (libmpg123).
  case mp3
  /// FLAC, native (not in Ogg) (libFLAC).
  case flac
  /// Ogg Opus (opusfile), always 48 kHz.
  case opus
  /// WAV: RIFF, RIFX or RF64 WAVE, any codec libsndfile reads (PCM, float, A-law, u-law, ADPCM).
  case wav
  /// AIFF or AIFF-C (libsndfile).
  case aiff
}
