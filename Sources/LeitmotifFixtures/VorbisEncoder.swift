import CVorbisEnc

#if canImport(Glibc)
  import Glibc
#endif

/// Writes Ogg Vorbis files with libvorbisenc, streaming: frames go in as they are made, pages go
/// out to the file at once, so a 10-minute fixture never sits in memory. This is the only file
/// that calls libvorbisenc and libogg.
///
/// Files are deterministic: the Ogg serial number of the first logical stream is fixed
/// (`firstSerialNumber`), each further link of a chained file takes the next one, and samples reach
/// libvorbis in blocks of 1024 frames however the caller cut them up. Same samples, same bytes
/// (on the same libvorbis build).
///
/// Chained files: `startNextLink(format:tags:)` ends the current logical stream and begins another
/// in the same file, with its own rate, channel count and tags (a chained Ogg file is just logical
/// streams one after the other).
///
/// ```swift
/// let encoder = try VorbisEncoder(path: path, format: .stereo44100, tags: [("TITLE", "Theme")])
/// for chunk in 0..<600 {
///   try encoder.write(frames: ToneGenerator.sine(
///     frequency: 440, frameCount: 44_100, format: .stereo44100, startFrame: chunk * 44_100))
/// }
/// try encoder.finish()
/// ```
///
/// Owns the `FILE*` and the libvorbis/libogg state (heap-allocated: libvorbis keeps pointers between
/// its structs) and frees them in `finish()` or `deinit`.
/// Thread safety: one thread at a time.
public final class VorbisEncoder {
  /// Why an encode failed: the file and what went wrong (with libvorbis's code where it gave one).
  public struct Error: Swift.Error, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var code: Int32?
    public var description: String { "\(path): \(reason)" + (code.map { " [code \($0)]" } ?? "") }
  }

  /// The serial number of the first logical stream: "LMTF" in ASCII.
  public static let firstSerialNumber: Int32 = 0x4C4D_5446

  public let path: String
  /// libvorbisenc's VBR quality, -0.1 (smallest) ... 1.0 (best); 0.4 is about 128 kbit/s stereo.
  public let quality: Float
  /// The format of the link being written.
  public private(set) var format: PCMFormat
  /// Frames written to the current link.
  public private(set) var linkFramesWritten: Int64 = 0
  /// Frames written to all links.
  public private(set) var totalFramesWritten: Int64 = 0
  /// How many logical streams (links) the file has so far.
  public private(set) var linkCount = 0

  private var file: UnsafeMutablePointer<FILE>?
  private var stream: LinkStream?
  /// Interleaved input not yet handed to libvorbis (less than one block).
  private var pendingInput: [Float] = []
  private var nextSerialNumber: Int32

  /// Creates (or truncates) `path` and writes the headers of the first link.
  /// - Parameters:
  ///   - format: sample rate and channel count (libvorbisenc accepts 1...255 channels and rates
  ///     it has a setup for, in practice 8 kHz and up).
  ///   - tags: Vorbis comments as (name, value), written in this order; names such as `TITLE`,
  ///     `LOOPSTART`. Names must not contain `=`.
  ///   - quality: VBR quality, -0.1 ... 1.0.
  ///   - serialNumber: the Ogg serial number of the first link.
  /// - Throws: `VorbisEncoder.Error` when the file cannot be created or libvorbisenc refuses the
  ///   format.
  public init(
    path: String, format: PCMFormat, tags: [(String, String)] = [], quality: Float = 0.4,
    serialNumber: Int32 = VorbisEncoder.firstSerialNumber
  ) throws(Error) {
    self.path = path
    self.quality = quality
    self.format = format
    nextSerialNumber = serialNumber
    guard let file = fopen(path, "wb") else {
      throw Error(path: path, reason: "cannot create the file (errno \(errno))")
    }
    self.file = file
    try beginLink(format: format, tags: tags)
  }

  deinit {
    try? finish()
  }

  /// Appends interleaved frames (`format.channelCount` samples each) to the current link.
  /// - Throws: `VorbisEncoder.Error` if the sample count is not a whole number of frames, the
  ///   encoder is finished, or the file cannot be written.
  public func write(frames samples: UnsafeBufferPointer<Float>) throws(Error) {
    guard let stream else { throw Error(path: path, reason: "write after finish()") }
    let channels = format.channelCount
    guard samples.count % channels == 0 else {
      throw Error(path: path, reason: "\(samples.count) samples is not a whole number of \(channels)-channel frames")
    }
    // libvorbis's output depends on how its input was cut up (its block decisions look at what
    // has arrived so far), so input is handed over in blocks of exactly `Self.blockFrames`
    // whatever the caller's chunks: the same samples give the same file.
    var consumed = 0
    while consumed < samples.count {
      let take = min(samples.count - consumed, Self.blockFrames * channels - pendingInput.count)
      pendingInput.append(contentsOf: samples[consumed..<(consumed + take)])
      consumed += take
      if pendingInput.count == Self.blockFrames * channels { try analysePendingInput(in: stream) }
    }
    let frameCount = samples.count / channels
    linkFramesWritten += Int64(frameCount)
    totalFramesWritten += Int64(frameCount)
  }

  /// Frames handed to libvorbis at a time.
  static let blockFrames = 1024

  /// Gives libvorbis the pending frames (de-interleaved into its buffer) and writes whatever
  /// pages that completes.
  private func analysePendingInput(in stream: LinkStream) throws(Error) {
    defer { pendingInput.removeAll(keepingCapacity: true) }
    let channels = format.channelCount
    let frames = pendingInput.count / channels
    guard frames > 0 else { return }
    guard let planar = vorbis_analysis_buffer(stream.dsp, Int32(frames)) else {
      throw Error(path: path, reason: "libvorbis could not allocate an analysis buffer")
    }
    for channel in 0..<channels {
      let destination = planar[channel]!
      for frame in 0..<frames { destination[frame] = pendingInput[frame * channels + channel] }
    }
    vorbis_analysis_wrote(stream.dsp, Int32(frames))
    try drain(stream)
  }

  /// Appends interleaved frames; see `write(frames:)` for an unsafe buffer.
  public func write(frames samples: [Float]) throws(Error) {
    try samples.withUnsafeBufferPointer { (buffer) throws(Error) in try write(frames: buffer) }
  }

  /// Ends the current logical stream and begins the next link of a chained file, with its own
  /// format and tags and the next serial number.
  public func startNextLink(format: PCMFormat, tags: [(String, String)] = []) throws(Error) {
    guard file != nil else { throw Error(path: path, reason: "startNextLink after finish()") }
    try endLink()
    self.format = format
    linkFramesWritten = 0
    try beginLink(format: format, tags: tags)
  }

  /// Ends the last logical stream (flushing its final pages) and closes the file. Calling it
  /// again does nothing. `deinit` calls it if forgotten, but then errors are lost.
  public func finish() throws(Error) {
    guard let file else { return }
    var failure: Error? = nil
    do { try endLink() } catch { failure = error }
    self.file = nil
    if fclose(file) != 0 && failure == nil {
      failure = Error(path: path, reason: "closing the file failed (errno \(errno))")
    }
    if let failure { throw failure }
  }

  // MARK: - Convenience

  /// Encodes `samples` (interleaved) to a one-link Ogg Vorbis file at `path`.
  public static func encode(
    samples: [Float], format: PCMFormat, tags: [(String, String)] = [], quality: Float = 0.4, to path: String
  ) throws(Error) {
    let encoder = try VorbisEncoder(path: path, format: format, tags: tags, quality: quality)
    try encoder.write(frames: samples)
    try encoder.finish()
  }

  /// One link of a chained file for `encodeChain`.
  public struct Link: Sendable {
    public var samples: [Float]
    public var format: PCMFormat
    public var tags: [(String, String)]

    public init(samples: [Float], format: PCMFormat, tags: [(String, String)] = []) {
      self.samples = samples
      self.format = format
      self.tags = tags
    }
  }

  /// Encodes several links, each its own logical stream with its own format and tags, one after
  /// the other into a chained Ogg Vorbis file at `path`.
  public static func encodeChain(_ links: [Link], quality: Float = 0.4, to path: String) throws(Error) {
    guard let first = links.first else { throw Error(path: path, reason: "a chained file needs at least one link") }
    let encoder = try VorbisEncoder(path: path, format: first.format, tags: first.tags, quality: quality)
    try encoder.write(frames: first.samples)
    for link in links.dropFirst() {
      try encoder.startNextLink(format: link.format, tags: link.tags)
      try encoder.write(frames: link.samples)
    }
    try encoder.finish()
  }

  // MARK: - libvorbisenc and libogg

  /// The state of one logical stream. The structs are heap-allocated because libvorbis keeps
  /// pointers from one to another (the DSP state points at the info, the block at the DSP state).
  private final class LinkStream {
    let info = UnsafeMutablePointer<vorbis_info>.allocate(capacity: 1)
    let comment = UnsafeMutablePointer<vorbis_comment>.allocate(capacity: 1)
    let dsp = UnsafeMutablePointer<vorbis_dsp_state>.allocate(capacity: 1)
    let block = UnsafeMutablePointer<vorbis_block>.allocate(capacity: 1)
    let ogg = UnsafeMutablePointer<ogg_stream_state>.allocate(capacity: 1)
    var analysisStarted = false

    init() {
      vorbis_info_init(info)
      vorbis_comment_init(comment)
    }

    deinit {
      if analysisStarted {
        ogg_stream_clear(ogg)
        vorbis_block_clear(block)
        vorbis_dsp_clear(dsp)
      }
      vorbis_comment_clear(comment)
      vorbis_info_clear(info)
      info.deallocate()
      comment.deallocate()
      dsp.deallocate()
      block.deallocate()
      ogg.deallocate()
    }
  }

  private func beginLink(format: PCMFormat, tags: [(String, String)]) throws(Error) {
    guard format.channelCount >= 1, format.channelCount <= 255, format.sampleRate > 0 else {
      throw Error(path: path, reason: "unsupported format \(format)")
    }
    let stream = LinkStream()
    let result = vorbis_encode_init_vbr(stream.info, format.channelCount, format.sampleRate, quality)
    guard result == 0 else {
      throw Error(path: path, reason: "libvorbisenc has no setup for \(format) at quality \(quality)", code: result)
    }
    for (name, value) in tags {
      guard !name.contains("=") else { throw Error(path: path, reason: "tag name \"\(name)\" contains \"=\"") }
      vorbis_comment_add_tag(stream.comment, name, value)
    }
    vorbis_analysis_init(stream.dsp, stream.info)
    vorbis_block_init(stream.dsp, stream.block)
    ogg_stream_init(stream.ogg, nextSerialNumber)
    stream.analysisStarted = true
    nextSerialNumber &+= 1

    // The three header packets; the identification header must be alone on the first page, and
    // audio must start on a fresh page, so flush after them.
    var identification = ogg_packet()
    var comments = ogg_packet()
    var codebooks = ogg_packet()
    let headers = vorbis_analysis_headerout(stream.dsp, stream.comment, &identification, &comments, &codebooks)
    guard headers == 0 else { throw Error(path: path, reason: "libvorbis could not make the headers", code: headers) }
    ogg_stream_packetin(stream.ogg, &identification)
    ogg_stream_packetin(stream.ogg, &comments)
    ogg_stream_packetin(stream.ogg, &codebooks)
    var page = ogg_page()
    while ogg_stream_flush(stream.ogg, &page) != 0 { try writePage(page) }
    self.stream = stream
    linkCount += 1
  }

  /// Tells libvorbis the link is complete and writes its last pages (the final one marked end of
  /// stream, with the exact granule position that makes the decoded length exact).
  private func endLink() throws(Error) {
    guard let stream else { return }
    self.stream = nil
    try analysePendingInput(in: stream)
    vorbis_analysis_wrote(stream.dsp, 0)
    try drain(stream)
  }

  /// Moves every finished block through analysis and bitrate management into Ogg pages on disk.
  private func drain(_ stream: LinkStream) throws(Error) {
    var packet = ogg_packet()
    var page = ogg_page()
    while vorbis_analysis_blockout(stream.dsp, stream.block) == 1 {
      vorbis_analysis(stream.block, nil)
      vorbis_bitrate_addblock(stream.block)
      while vorbis_bitrate_flushpacket(stream.dsp, &packet) == 1 {
        ogg_stream_packetin(stream.ogg, &packet)
        while ogg_stream_pageout(stream.ogg, &page) != 0 {
          try writePage(page)
        }
      }
    }
    // After the last packet, pageout may still hold a partial page: flush it at the end.
    if stream.ogg.pointee.e_o_s != 0 {
      while ogg_stream_flush(stream.ogg, &page) != 0 { try writePage(page) }
    }
  }

  private func writePage(_ page: ogg_page) throws(Error) {
    guard let file else { throw Error(path: path, reason: "write after finish()") }
    let headerLength = Int(page.header_len)
    let bodyLength = Int(page.body_len)
    guard fwrite(page.header, 1, headerLength, file) == headerLength,
      fwrite(page.body, 1, bodyLength, file) == bodyLength
    else {
      throw Error(path: path, reason: "writing the file failed (errno \(errno))")
    }
  }
}
