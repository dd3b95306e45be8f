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

  /// "RATE Hz, mono" or "RATE Hz, stereo".
  public var description: String { "\(sampleRate) Hz, \(channelCount == 1 ? "mono" : "stereo")" }
}

/// The encodings Leitmotif reads. The format of a file is decided by its content, never its name.
public enum ContainerFormat: String, Sendable, Hashable {
  /// Ogg Vorbis (libvorbisfile).
  case vorbis
  /// MPEG audio, layer III (and I/II) (libmpg123).
  case mp3
}
