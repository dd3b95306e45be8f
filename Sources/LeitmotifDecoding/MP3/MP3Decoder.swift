import CMPG123

#if canImport(Glibc)
  import Glibc
#endif

/// MPEG audio (MP3) through libmpg123. This is the only file that calls libmpg123.
///
/// Owns one `mpg123_handle` and frees it with `mpg123_delete` in `deinit`. Reads go through
/// `FileByteSource` by `mpg123_replace_reader_handle`. Output is Float32 at the file's own rate.
///
/// Length: with a LAME/Info tag libmpg123 trims encoder delay and padding (gapless) and knows the
/// exact length at once. Without one its length is a guess from the file size, so the file is
/// scanned (`mpg123_scan` walks every frame header) to make the length and seek index exact.
/// Seeks are sample-accurate in both cases: the next frame is the one a linear decode has there.
/// Its value can differ from the linear decode's in the last bit or two (about 1e-7): libmpg123's
/// synthesis filter keeps a ring-buffer phase across seeks, and some of its kernels (mono, and
/// MPEG-2 stereo) round differently at another phase. Inaudible, but not bit-identical.
final class MP3Decoder: AudioDecoder {
  let containerFormat = ContainerFormat.mp3
  let format: AudioFormat
  let lengthFrames: Int64
  private(set) var cursorFrames: Int64 = 0
  let tags: AudioTags
  let artwork: Artwork?
  private(set) var warnings: [String] = []
  var path: String { source.path }
  /// Whether the file carried gapless information (a LAME/Info tag), so nothing had to be scanned.
  let hasGaplessInfo: Bool

  /// Tags larger than this are skipped rather than parsed: a megabyte of ID3 is cover art or an
  /// attack, never a title, and parsing it costs memory on the loading thread.
  static let maximumParsedID3v2Bytes: Int64 = 1 << 20
  /// When the cover is asked for (`AudioFile.artwork`), a tag up to this size is parsed.
  static let maximumArtworkID3v2Bytes: Int64 = 16 << 20

  private let source: FileByteSource
  private let handle: OpaquePointer
  private var ended = false

  init(source: FileByteSource, id3v2SizeBytes: Int64, keepingArtwork: Bool = false) throws(DecodeError) {
    self.source = source
    var code: Int32 = 0
    guard let handle = mpg123_new(nil, &code) else {
      throw DecodeError(path: source.path, reason: .unsupported("libmpg123 could not create a decoder"), code: code)
    }
    self.handle = handle
    var flags = MPG123_QUIET.rawValue | MPG123_GAPLESS.rawValue | MPG123_NO_FRANKENSTEIN.rawValue
    // APIC frames (covers) are parsed only when asked for; the tag-size limit below still holds
    // for them only up to `maximumArtworkID3v2Bytes`.
    if keepingArtwork { flags |= MPG123_PICTURE.rawValue }
    if id3v2SizeBytes > (keepingArtwork ? Self.maximumArtworkID3v2Bytes : Self.maximumParsedID3v2Bytes) {
      flags |= MPG123_SKIP_ID3V2.rawValue
      warnings.append("ID3v2 tag of \(id3v2SizeBytes) bytes is over 1 MiB: skipped, tags not read")
    }
    var failure: DecodeError? = nil
    func check(_ result: Int32, _ action: String) {
      if result != MPG123_OK.rawValue && failure == nil {
        failure = Self.error(result, handle: handle, source: source, during: action)
      }
    }
    check(mpg123_param2(handle, Int32(MPG123_ADD_FLAGS.rawValue), Int(flags), 0), "configuring")
    check(mpg123_format_none(handle), "configuring")
    check(
      mpg123_format2(
        handle, 0, Int32(MPG123_MONO.rawValue | MPG123_STEREO.rawValue), Int32(MPG123_ENC_FLOAT_32.rawValue)),
      "configuring")
    check(
      mpg123_replace_reader_handle(
        handle,
        { datasource, buffer, count in
          let source = Unmanaged<FileByteSource>.fromOpaque(datasource!).takeUnretainedValue()
          return source.read(into: buffer!, count: count)
        },
        { datasource, offset, whence in
          let source = Unmanaged<FileByteSource>.fromOpaque(datasource!).takeUnretainedValue()
          return off_t(source.seek(offset: Int64(offset), whence: whence))
        },
        nil),  // FileByteSource closes its own descriptor
      "installing the reader")
    check(mpg123_open_handle(handle, Unmanaged.passUnretained(source).toOpaque()), "opening")
    var rate = 0
    var channels: Int32 = 0
    var encoding: Int32 = 0
    let first = mpg123_getformat(handle, &rate, &channels, &encoding)
    if first == MPG123_DONE.rawValue && failure == nil {
      // libmpg123's words for it are "I am done with this track": it read to the end of the file
      // without finding one MPEG audio frame.
      mpg123_delete(handle)
      throw DecodeError(
        path: source.path, reason: .corrupt("no MPEG audio frame in the whole file (not an MP3, or damaged throughout)")
      )
    }
    check(first, "reading the first frame")
    if let failure {
      mpg123_delete(handle)
      throw failure
    }
    guard rate > 0, channels == 1 || channels == 2 else {
      mpg123_delete(handle)
      throw DecodeError(path: source.path, reason: .corrupt("no valid MPEG audio frame"))
    }
    format = AudioFormat(sampleRate: rate, channelCount: Int(channels))

    // Layer III frames borrow up to 511 bytes (MPEG-1) or 255 bytes (MPEG-2/2.5) of data from the
    // frames before them (the bit reservoir). After a seek libmpg123 decodes MPG123_PREFRAMES
    // frames ahead of the target and discards them to refill it; its default of 4 is too few for
    // low bitrates (a 64 kbit/s 48 kHz file came out wrong for whole frames after some seeks).
    // Enough frames for the largest reservoir at the smallest frame, plus two for the overlap and
    // the filterbank: MPEG-1 at 32 kbit/s, 48 kHz has 75 bytes of main data (7 + 2); MPEG-2 at
    // 8 kbit/s, 24 kHz has 11 (24 + 2). MPEG-1 is 32 kHz and up.
    let preframes = rate >= 32_000 ? 9 : 26
    mpg123_param2(handle, Int32(MPG123_PREFRAMES.rawValue), preframes, 0)

    var accurate = 0
    var unusedFloat = 0.0
    mpg123_getstate2(handle, Int32(MPG123_ACCURATE.rawValue), &accurate, &unusedFloat)
    var encoderDelay = -1
    mpg123_getstate2(handle, Int32(MPG123_ENC_DELAY.rawValue), &encoderDelay, &unusedFloat)
    hasGaplessInfo = encoderDelay >= 0
    // Opened only for its cover (`AudioFile.artwork`), a file without a LAME tag is not read
    // through to the end for an exact length nobody asks for.
    if !keepingArtwork && (accurate == 0 || !hasGaplessInfo) {
      let scanned = mpg123_scan(handle)
      if scanned != MPG123_OK.rawValue {
        let error = Self.error(scanned, handle: handle, source: source, during: "scanning")
        mpg123_delete(handle)
        throw error
      }
    }
    let length = Int64(mpg123_length(handle))
    guard length > 0 else {
      mpg123_delete(handle)
      throw DecodeError(path: source.path, reason: .corrupt("no decodable MPEG audio frames"))
    }
    lengthFrames = length

    if hasGaplessInfo, let claimed = Self.xingAudioBytes(source, from: id3v2SizeBytes) {
      // The exact length came from the Xing/Info header, which also gives the audio's size in
      // bytes: a file cut off in a download or a copy still claims the whole length.
      let present = source.sizeBytes - id3v2SizeBytes
      if claimed > present + present / 50 + 4096 {
        let fraction = Int((Double(present) / Double(claimed) * 100).rounded())
        warnings.append(
          "the file is cut off: its header claims \(claimed) bytes of audio (\(length) frames), only \(present) "
            + "(about \(fraction)%) are there; it ends early")
      }
    }

    var collector = TagCollector()
    collector.keepsArtwork = keepingArtwork
    Self.readTags(handle, into: &collector)
    tags = collector.finished(lengthFrames: length)
    artwork = collector.artwork
  }

  deinit { mpg123_delete(handle) }

  /// The byte count of a Xing or Info header (LAME writes one in the first frame), if the file
  /// has one with that field: the size of the audio it was encoded with.
  static func xingAudioBytes(_ source: FileByteSource, from offset: Int64) -> Int64? {
    let head = source.bytes(at: offset, count: Int(min(4096, max(0, source.sizeBytes - offset))))
    guard head.count > 64,
      let sync = (0..<(head.count - 4)).first(where: { head[$0] == 0xFF && head[$0 + 1] & 0xE0 == 0xE0 })
    else { return nil }
    func word(_ at: Int) -> Int64 {
      (0..<4).reduce(Int64(0)) { ($0 << 8) | Int64(head[at + $1]) }
    }
    // The tag follows the side information, 9 to 32 bytes after the 4-byte frame header.
    let window = (sync + 4)..<min(head.count - 16, sync + 4 + 40)
    guard
      let tag = window.first(where: {
        let name = head[$0..<($0 + 4)]
        return name.elementsEqual("Xing".utf8) || name.elementsEqual("Info".utf8)
      })
    else { return nil }
    let flags = word(tag + 4)
    var field = tag + 8
    if flags & 1 != 0 { field += 4 }  // the frame count comes first
    guard flags & 2 != 0, field + 4 <= head.count else { return nil }
    let bytes = word(field)
    return bytes > 0 ? bytes : nil
  }

  func readFrames(into buffer: UnsafeMutablePointer<Float>, frameCapacity: Int) throws(DecodeError) -> Int {
    guard !ended else { return 0 }
    let bytesPerFrame = 4 * format.channelCount
    let capacityBytes = frameCapacity * bytesPerFrame
    let bytes = UnsafeMutableRawPointer(buffer).assumingMemoryBound(to: UInt8.self)
    var filled = 0
    while filled < capacityBytes {
      var done = 0
      let result = mpg123_read(handle, bytes + filled, capacityBytes - filled, &done)
      filled += done
      if result == MPG123_OK.rawValue { continue }
      if result == MPG123_DONE.rawValue {
        ended = true
        let reached = cursorFrames + Int64(filled / bytesPerFrame)
        if reached < lengthFrames && filled == 0 {
          // The LAME/Info tag promised more frames than the file holds: it was cut off.
          throw DecodeError(
            path: path,
            reason: .truncated("the stream ends at frame \(reached) of the \(lengthFrames) its header promises"))
        }
        if reached < lengthFrames { ended = false }  // report it on the next call, after these frames
        break
      }
      if result == MPG123_NEW_FORMAT.rawValue {
        var rate = 0
        var channels: Int32 = 0
        var encoding: Int32 = 0
        mpg123_getformat(handle, &rate, &channels, &encoding)
        if rate != format.sampleRate || Int(channels) != format.channelCount {
          // A stream that changes its nature mid-way is ended here (no Frankenstein streams).
          warnings.append(
            "the stream changes format at frame \(cursorFrames + Int64(filled / bytesPerFrame)); ended there")
          ended = true
          break
        }
        continue
      }
      cursorFrames += Int64(filled / bytesPerFrame)
      throw Self.error(result, handle: handle, source: source, during: "decoding")
    }
    let frames = filled / bytesPerFrame
    cursorFrames += Int64(frames)
    return frames
  }

  func seek(toFrame frame: Int64) throws(DecodeError) {
    guard frame >= 0 && frame <= lengthFrames else {
      throw DecodeError(path: path, reason: .seekOutOfRange(frame: frame, lengthFrames: lengthFrames))
    }
    let result = mpg123_seek(handle, off_t(frame), SEEK_SET)
    guard result >= 0 else {
      throw Self.error(Int32(result), handle: handle, source: source, during: "seeking to frame \(frame)")
    }
    ended = false
    cursorFrames = frame
  }

  /// ID3v2 text frames mapped onto the Vorbis comment names `TagCollector` speaks; ID3v1 as a fallback.
  private static func readTags(_ handle: OpaquePointer, into collector: inout TagCollector) {
    guard (mpg123_meta_check(handle) & MPG123_ID3) != 0 else { return }
    var version1: UnsafeMutablePointer<mpg123_id3v1>? = nil
    var version2: UnsafeMutablePointer<mpg123_id3v2>? = nil
    guard mpg123_id3(handle, &version1, &version2) == MPG123_OK.rawValue else { return }
    let names: [String: String] = [
      "TIT2": "TITLE", "TPE1": "ARTIST", "TALB": "ALBUM", "TPE2": "ALBUMARTIST", "TCON": "GENRE",
      "TCOM": "COMPOSER", "TRCK": "TRACKNUMBER", "TPOS": "DISCNUMBER", "TBPM": "BPM",
      "TYER": "YEAR", "TDRC": "DATE", "TCMP": "COMPILATION", "TMOO": "MOOD",
    ]
    if let tag = version2?.pointee {
      for index in 0..<tag.texts {
        let text = tag.text[index]
        let id = withUnsafeBytes(of: text.id) { String(decoding: $0, as: UTF8.self) }
        // ID3v2.4 keeps several values in one frame, NUL between them (two artists of a duet).
        guard let name = names[id] else { continue }
        for value in strings(text.text) {
          collector.add(name: name, value: id == "TCON" ? ID3Genre.resolved(value) : value)
        }
      }
      for index in 0..<tag.extras {
        let extra = tag.extra[index]
        if let name = string(extra.description), let value = string(extra.text) {
          collector.add(name: name, value: value)
        }
      }
      // Set only with MPG123_PICTURE (a decoder opened for its artwork).
      for index in 0..<(tag.picture == nil ? 0 : tag.pictures) {
        let picture = tag.picture[index]
        guard let data = picture.data, picture.size > 0 else { continue }
        collector.add(
          artwork: Artwork(
            mimeType: string(picture.mime_type) ?? "image/jpeg",
            data: Array(UnsafeBufferPointer(start: data, count: picture.size)), pictureType: Int(picture.type)))
      }
    }
    if let tag = version1?.pointee {
      func field<T>(_ value: T) -> String {
        withUnsafeBytes(of: value) { raw in
          let bytes = raw.prefix(while: { $0 != 0 })
          return String(decoding: bytes, as: UTF8.self)
        }
      }
      // Only what ID3v2 left out: its text wins over ID3v1's truncated copy.
      for (name, value) in [
        ("TITLE", field(tag.title)), ("ARTIST", field(tag.artist)), ("ALBUM", field(tag.album)),
        ("YEAR", field(tag.year)),
      ] where !collector.has(name) {
        collector.add(name: name, value: value)
      }
    }
  }

  /// Each of the NUL-separated strings of a text frame (ID3v2.4's multiple values), in order,
  /// empty ones left out.
  private static func strings(_ value: mpg123_string) -> [String] {
    guard let pointer = value.p, value.fill > 1 else { return [] }
    let bytes = UnsafeRawBufferPointer(start: pointer, count: value.fill - 1)
    return bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
  }

  /// The first of them: text where a frame holds one value (a TXXX name or value). `fill` counts
  /// the terminating NUL, and after libmpg123 converts UTF-16 (lame writes TXXX descriptions that
  /// way) more than one: "LOOPSTART\0\0".
  private static func string(_ value: mpg123_string) -> String? { strings(value).first }

  /// The single place libmpg123's codes become `DecodeError`s.
  private static func error(
    _ result: Int32, handle: OpaquePointer, source: FileByteSource, during action: String
  ) -> DecodeError {
    let path = source.path
    let code = result == MPG123_ERR.rawValue ? mpg123_errcode(handle) : result
    let text = mpg123_plain_strerror(code).map { String(cString: $0) } ?? "unknown error"
    if let readErrno = source.lastReadErrno {
      return DecodeError(path: path, reason: .readFailed(errno: readErrno), code: code)
    }
    if code == MPG123_RESYNC_FAIL.rawValue || code == MPG123_OUT_OF_SYNC.rawValue {
      return DecodeError(
        path: path, reason: .corrupt("no MPEG audio stream found (\(text)) while \(action)"), code: code)
    }
    if code == MPG123_NO_SEEK.rawValue || code == MPG123_NO_SEEK_FROM_END.rawValue {
      return DecodeError(path: path, reason: .unsupported("\(text) while \(action)"), code: code)
    }
    return DecodeError(path: path, reason: .corrupt("\(text) while \(action)"), code: code)
  }
}
