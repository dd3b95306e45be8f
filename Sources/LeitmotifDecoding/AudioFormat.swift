/// The shape of decoded audio: how many frames per second and how many samples per frame.
///
/// Decoders produce interleaved 32-bit float samples in this format. A frame holds one sample per
/// channel; Leitmotif's decoders give mono or stereo (files with more channels are mixed down).
public struct AudioFormat: Sendable, Hashable, CustomStringConvertible {
  public var sampleRate: Int
  public var channelCount: Int

  public init(sampleRate: Int, channelCount: Int) {
    self.sampleRate = sampleRate
    self.channelCount = channelCount
  }

  public var description: String { "\(sampleRate) Hz, \(channelCount == 1 ? "mono" : "stereo")" }
}

/// The encodings Leitmotif reads. The format of a file is decided by its content, never its name.
public enum ContainerFormat: String, Sendable, Hashable {
  case vorbis
  case mp3
}
