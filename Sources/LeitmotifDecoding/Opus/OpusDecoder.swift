import COpusFile

#if canImport(Glibc)
  import Glibc
#endif

/// Ogg Opus through opusfile. This is the only file that calls opusfile.
///
/// Owns one `OggOpusFile` and frees it with `op_free` in `deinit`. Reads go through
/// `FileByteSource` by opusfile's stream callbacks (opusfile never closes it: the source does).
///
/// Opus always decodes at 48 kHz, whatever rate the file was made from; opusfile trims the
/// encoder's pre-skip and the end padding (gapless) and seeks to the exact sample; a chained file
/// plays its links one after the other. Mono files decode mono; anything with two or more
/// channels (or a chain that mixes counts) is folded to stereo by opusfile itself
/// (`op_read_float_stereo`, which downmixes surround with the mapping's own coefficients). The
/// header's output gain is applied (opusfile does that by default, as RFC 7845 asks), and
/// R128_TRACK_GAIN counts as the track's ReplayGain (see `TagCollector`).
/// A hole in the stream (a lost page) is skipped with a warning, as libvorbisfile's are.
final class OpusDecoder: AudioDecoder {
  let containerFormat = ContainerFormat.opus
  let format: AudioFormat
  let lengthFrames: Int64
  private(set) var cursorFrames: Int64 = 0
  let tags: AudioTags
  let artwork: Artwork?
  private(set) var warnings: [String] = []
  var path: String { source.path }

  private let source: FileByteSource
  private let file: OpaquePointer
  /// Set by the first hard error: every later read or seek throws it.
  private var poisoned: DecodeError?
  private var holes = 0

  init(source: FileByteSource, keepingArtwork: Bool = false) throws(DecodeError) {
    self.source = source
    var callbacks = OpusFileCallbacks(
      read: { stream, buffer, count in
        guard let stream, let buffer, count > 0 else { return 0 }
        let got = Unmanaged<FileByteSource>.fromOpaque(stream).takeUnretainedValue().read(
          into: buffer, count: Int(count))
        return Int32(got)
      },
      seek: { stream, offset, whence in
        guard let stream else { return -1 }
        return Unmanaged<FileByteSource>.fromOpaque(stream).takeUnretainedValue().seek(offset: offset, whence: whence)
          < 0 ? -1 : 0
      },
      tell: { stream in
        guard let stream else { return -1 }
        return Unmanaged<FileByteSource>.fromOpaque(stream).takeUnretainedValue().seek(offset: 0, whence: SEEK_CUR)
      },
      close: nil)
    var code: Int32 = 0
    guard let file = op_open_callbacks(Unmanaged.passUnretained(source).toOpaque(), &callbacks, nil, 0, &code) else {
      throw Self.error(code, source: source, during: "opening")
    }
    guard let head = op_head(file, -1), head.pointee.channel_count > 0 else {
      op_free(file)
      throw DecodeError(path: source.path, reason: .corrupt("no Opus header"))
    }
    let total = op_pcm_total(file, -1)
    guard total > 0, total <= AudioFormat.maximumLengthFrames else {
      op_free(file)
      throw DecodeError(
        path: source.path,
        reason: total <= 0
          ? .corrupt("no decodable Opus audio (length \(total))") : .corrupt("the stream claims \(total) frames"))
    }
    self.file = file
    // Mono only when every link of a chain is: opusfile's stereo read folds any link to two
    // channels, its plain read gives each link's own count.
    let allMono = (0..<op_link_count(file)).allSatisfy { op_channel_count(file, $0) == 1 }
    format = AudioFormat(sampleRate: 48_000, channelCount: allMono ? 1 : 2)
    lengthFrames = total
    var collector = TagCollector()
    collector.keepsArtwork = keepingArtwork
    if let comments = op_tags(file, -1), let entries = comments.pointee.user_comments {
      for index in 0..<Int(comments.pointee.comments) {
        guard let entry = entries[index] else { continue }
        let length = Int(comments.pointee.comment_lengths[index])
        collector.add(comment: UnsafeRawBufferPointer(start: entry, count: length))
      }
    }
    tags = collector.finished(lengthFrames: total)
    artwork = collector.artwork
  }

  deinit { op_free(file) }

  func readFrames(into buffer: UnsafeMutablePointer<Float>, frameCapacity: Int) throws(DecodeError) -> Int {
    if let poisoned { throw poisoned }
    let channels = format.channelCount
    var written = 0
    while written < frameCapacity {
      let room = Int32(min(frameCapacity - written, 1 << 20) * channels)
      let output = buffer + written * channels
      let got = channels == 1 ? op_read_float(file, output, room, nil) : op_read_float_stereo(file, output, room)
      if got == OP_HOLE {
        holes += 1
        if holes == 1 { warnings.append("the stream has a hole (a lost or damaged page): skipped") }
        continue
      }
      if got < 0 {
        let failure = Self.error(got, source: source, during: "decoding")
        poisoned = failure
        if written > 0 { return written }
        throw failure
      }
      if got == 0 { break }
      written += Int(got)
      cursorFrames += Int64(got)
    }
    return written
  }

  func seek(toFrame frame: Int64) throws(DecodeError) {
    if let poisoned { throw poisoned }
    guard frame >= 0 && frame <= lengthFrames else {
      throw DecodeError(path: source.path, reason: .seekOutOfRange(frame: frame, lengthFrames: lengthFrames))
    }
    let result = op_pcm_seek(file, frame)
    guard result == 0 else {
      let failure = Self.error(result, source: source, during: "seeking to frame \(frame)")
      poisoned = failure
      throw failure
    }
    cursorFrames = frame
  }

  private static func error(_ code: Int32, source: FileByteSource, during action: String) -> DecodeError {
    if let errno = source.lastReadErrno { return DecodeError(path: source.path, reason: .readFailed(errno: errno)) }
    let why: String
    switch code {
    // The sniffer saw an OpusHead: a file that then is "not Opus" to opusfile is a damaged one.
    case OP_ENOTFORMAT: why = "the Opus headers cannot be read"
    case OP_EBADHEADER: why = "a bad Opus header"
    case OP_EVERSION: why = "an Opus version this decoder does not know"
    case OP_EBADLINK, OP_EBADTIMESTAMP: why = "the stream's pages do not fit together"
    case OP_EBADPACKET: why = "a bad Opus packet"
    case OP_EIMPL:
      return DecodeError(path: source.path, reason: .unsupported("an Opus feature opusfile does not implement"))
    default: why = "opusfile error \(code)"
    }
    return DecodeError(path: source.path, reason: .corrupt("\(why) while \(action)"))
  }
}
