/// A streaming decoder: a source of interleaved Float32 frames with a cursor, a length and a seek.
///
/// The five operations follow miniaudio's data-source shape: read frames, seek to a frame,
/// the format, the cursor and the length, all counted in PCM frames of `format.sampleRate`.
///
/// Thread safety: a decoder is used by one thread at a time (the C libraries behind it are not
/// reentrant per handle). It may be created on one thread and handed to another.
/// Callback safety: none of these may be called from a real-time audio callback; they do I/O.
public protocol AudioDecoder: AnyObject {
  /// The file being decoded.
  var path: String { get }
  /// What the file holds: Ogg Vorbis, MP3, FLAC, Ogg Opus, WAV or AIFF.
  var containerFormat: ContainerFormat { get }
  /// The format of the frames `readFrames` produces: mono or stereo, at the file's sample rate.
  var format: AudioFormat { get }
  /// The exact number of frames in the file (gapless for MP3 with a LAME/Info tag).
  var lengthFrames: Int64 { get }
  /// The index of the next frame `readFrames` will produce.
  var cursorFrames: Int64 { get }
  /// The file's tags (Vorbis comments or ID3v2), read when it was opened.
  var tags: AudioTags { get }
  /// The file's picture (its front cover, else its first), when it was opened to keep it
  /// (`AudioFile.artwork(path:)`); nil otherwise.
  var artwork: Artwork? { get }
  /// Things worth knowing that did not stop decoding (an oversized tag skipped, a hole in the stream).
  var warnings: [String] { get }

  /// Decodes up to `frameCapacity` frames into `buffer` (interleaved, `format.channelCount` samples
  /// per frame). Returns the number of frames written, 0 only at the end of the file.
  /// - Throws: `DecodeError` when the stream is damaged beyond recovery or the file cannot be read.
  func readFrames(into buffer: UnsafeMutablePointer<Float>, frameCapacity: Int) throws(DecodeError) -> Int

  /// Moves the cursor to `frame` exactly: the next read starts with that frame of a linear decode.
  /// - Throws: `DecodeError.Reason.seekOutOfRange` for a frame outside `0...lengthFrames`.
  func seek(toFrame frame: Int64) throws(DecodeError)

  /// Sets the decoder up for reading now, on this thread, rather than at the first read. The
  /// engine calls it on its loader thread, so that the thread that decodes a stream (one per
  /// stream, short-lived) allocates almost nothing: malloc gives each thread an arena, and the
  /// allocations of many such threads spread over many arenas that each keep their own free
  /// memory. Together with the loader's thread of its own, this kept the soak's RSS flat (on its
  /// own it did not: the loader's work then still moved between Dispatch's worker threads).
  func prepareForDecoding() throws(DecodeError)
}

extension AudioDecoder {
  /// Nothing to do for a decoder that sets itself up when it opens.
  public func prepareForDecoding() throws(DecodeError) {}
}

extension AudioDecoder {
  /// The file's length in seconds (`lengthFrames` at `format.sampleRate`).
  public var durationSeconds: Double { Double(lengthFrames) / Double(format.sampleRate) }
}

/// Opening audio files: the format is chosen from the content, not the name.
public enum AudioFile {
  /// Opens `path` with the decoder its content calls for.
  /// - Throws: `DecodeError` naming the file and the reason (missing, a directory, unreadable,
  ///   empty, not Ogg Vorbis, Opus, MP3, FLAC, WAV or AIFF, damaged).
  public static func openDecoder(path: String) throws(DecodeError) -> any AudioDecoder {
    try openDecoder(path: path, keepingArtwork: false)
  }

  /// The picture `path` carries (its front cover, else its first: `METADATA_BLOCK_PICTURE` in Ogg
  /// Vorbis and Opus, a PICTURE block in FLAC, APIC in MP3), nil when it has none. Opens the file
  /// (I/O: not on a game's or the mixer's thread).
  /// - Throws: `DecodeError` as `openDecoder` does.
  public static func artwork(path: String) throws(DecodeError) -> Artwork? {
    try openDecoder(path: path, keepingArtwork: true).artwork
  }

  static func openDecoder(path: String, keepingArtwork: Bool) throws(DecodeError) -> any AudioDecoder {
    let source = try FileByteSource(path: path)
    let kind = FormatSniffer.sniff(source)
    let decoder: any AudioDecoder
    switch kind {
    case .vorbis: decoder = try VorbisDecoder(source: source, keepingArtwork: keepingArtwork)
    case .mp3(let id3v2SizeBytes):
      decoder = try MP3Decoder(source: source, id3v2SizeBytes: id3v2SizeBytes, keepingArtwork: keepingArtwork)
    case .flac: decoder = try FLACDecoder(source: source, keepingArtwork: keepingArtwork)
    case .opus: decoder = try OpusDecoder(source: source, keepingArtwork: keepingArtwork)
    case .wav: decoder = try WAVDecoder(source: source, container: .wav)
    case .aiff: decoder = try WAVDecoder(source: source, container: .aiff)
    case .other(let detected):
      throw DecodeError(path: path, reason: .unrecognizedFormat(detected: detected))
    case .truncatedTag(let claimed):
      throw DecodeError(
        path: path,
        reason: .truncated("the ID3v2 tag claims \(claimed) bytes but the file has \(source.sizeBytes)"))
    }
    // Each decoder checks its own header numbers before it computes with them; this is the
    // promise every caller relies on, whatever the format.
    try checkRate(decoder.format.sampleRate, path: path)
    guard decoder.lengthFrames <= AudioFormat.maximumLengthFrames else {
      throw DecodeError(
        path: path, reason: .corrupt("the stream claims \(decoder.lengthFrames) frames, more than a file can hold"))
    }
    return decoder
  }

  /// Throws unless `rate` is one of `AudioFormat.supportedSampleRates`.
  static func checkRate(_ rate: Int, path: String, what: String = "the stream") throws(DecodeError) {
    let range = AudioFormat.supportedSampleRates
    guard range.contains(rate) else {
      throw DecodeError(
        path: path,
        reason: .unsupported(
          "\(what) declares a sample rate of \(rate) Hz; expected \(range.lowerBound) to \(range.upperBound) Hz"))
    }
  }

  /// Decodes a whole file into memory (interleaved). For tests and tools; the engine streams.
  public static func decodeAll(_ decoder: any AudioDecoder) throws(DecodeError) -> [Float] {
    let channels = decoder.format.channelCount
    var samples: [Float] = []
    samples.reserveCapacity(Int(max(0, decoder.lengthFrames)) * channels)
    var block = [Float](repeating: 0, count: 4096 * channels)
    while true {
      let frames = try block.withUnsafeMutableBufferPointer { (pointer) throws(DecodeError) -> Int in
        try decoder.readFrames(into: pointer.baseAddress!, frameCapacity: 4096)
      }
      if frames == 0 { break }
      samples.append(contentsOf: block[0..<(frames * channels)])
    }
    return samples
  }
}
