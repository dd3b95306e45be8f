import CSndFile

#if canImport(Glibc)
  import Glibc
#endif

/// WAV and AIFF through libsndfile. This is the only file that calls libsndfile.
///
/// Owns one `SNDFILE` and closes it with `sf_close` in `deinit`. Reads go through `FileByteSource`
/// by libsndfile's virtual I/O, which gets a `WAVSource` as its user data, so mounted files
/// (`MountedFiles`) play like files on disk.
///
/// Why libsndfile: game audio is often delivered as WAV, with its loop in the `smpl` chunk that
/// sound editors write, in any of PCM 8 to 32 bits, float, A-law, u-law or ADPCM, and in RF64 or
/// WAVE_FORMAT_EXTENSIBLE; libsndfile reads all of them, and AIFF/AIFF-C with its INST loop, and
/// hands out float frames (full scale ±1) with sample-exact seeks.
///
/// Tags: the LIST INFO strings (title, artist, album, genre, track number, date; AIFF's NAME and
/// AUTH chunks), the first loop of the `smpl` or INST chunk as the loop points (libsndfile gives
/// its end as the frame after the loop's last, which is what `loopEndFrame` means), and the
/// tempo and meter of an ACID chunk. Files with more than two channels are folded to stereo
/// (`ChannelMixing`, after putting WAVE's channel order into Vorbis's).
final class WAVDecoder: AudioDecoder {
  let containerFormat: ContainerFormat
  let format: AudioFormat
  let lengthFrames: Int64
  private(set) var cursorFrames: Int64 = 0
  let tags: AudioTags
  let artwork: Artwork? = nil
  private(set) var warnings: [String] = []
  var path: String { source.source.path }

  private let source: WAVSource
  private let file: OpaquePointer
  private let fileChannels: Int
  /// For files with more than two channels: one block of the file's frames, folded from here.
  private var scratch: [Float] = []
  /// Set by the first hard error: every later read or seek throws it.
  private var poisoned: DecodeError?

  init(source byteSource: FileByteSource, container: ContainerFormat) throws(DecodeError) {
    let path = byteSource.path
    source = WAVSource(byteSource)
    var info = SF_INFO()
    var io = SF_VIRTUAL_IO(
      get_filelen: wavLength, seek: wavSeek, read: wavRead, write: { _, _, _ in 0 }, tell: wavTell)
    guard let opened = sf_open_virtual(&io, Int32(SFM_READ), &info, Unmanaged.passUnretained(source).toOpaque())
    else {
      if let code = byteSource.lastReadErrno { throw DecodeError(path: path, reason: .readFailed(errno: code)) }
      // sf_error_number's strings are static; sf_strerror(nil) may return libsndfile's one global
      // buffer for system errors, which another failing open could be rewriting right now.
      throw DecodeError(
        path: path, reason: .corrupt("libsndfile cannot read it: \(String(cString: sf_error_number(sf_error(nil))))"))
    }
    do throws(DecodeError) {
      try AudioFile.checkRate(Int(info.samplerate), path: path)
      guard (1...8).contains(info.channels) else {
        throw DecodeError(path: path, reason: .unsupported("the file has \(info.channels) channels; expected 1 to 8"))
      }
      guard info.frames >= 0, info.frames <= AudioFormat.maximumLengthFrames else {
        throw DecodeError(path: path, reason: .corrupt("the file claims \(info.frames) frames"))
      }
      guard info.frames > 0 else { throw DecodeError(path: path, reason: .corrupt("the file holds no audio frames")) }
    } catch {
      sf_close(opened)
      throw error
    }
    file = opened
    containerFormat = container
    fileChannels = Int(info.channels)
    format = AudioFormat(sampleRate: Int(info.samplerate), channelCount: fileChannels == 1 ? 1 : 2)
    lengthFrames = Int64(info.frames)
    if fileChannels > 2 { scratch = [Float](repeating: 0, count: Self.scratchFrames * fileChannels) }

    var collector = TagCollector()
    for (kind, name) in [
      (SF_STR_TITLE, "TITLE"), (SF_STR_ARTIST, "ARTIST"), (SF_STR_ALBUM, "ALBUM"), (SF_STR_GENRE, "GENRE"),
      (SF_STR_TRACKNUMBER, "TRACKNUMBER"), (SF_STR_DATE, "DATE"),
    ] {
      if let text = sf_get_string(opened, Int32(kind)) { collector.add(name: name, value: Self.text(text)) }
    }
    var loopMode: Int32 = 0
    var loopStart: UInt32 = 0
    var loopEnd: UInt32 = 0
    let looped = lm_sf_first_loop(opened, &loopMode, &loopStart, &loopEnd) != 0 && loopMode != Int32(SF_LOOP_NONE)
    if looped {
      collector.add(name: "LOOPSTART", value: String(loopStart))
      collector.add(name: "LOOPEND", value: String(loopEnd))
    }
    var acid = SF_LOOP_INFO()
    if sf_command(opened, Int32(SFC_GET_LOOP_INFO), &acid, Int32(MemoryLayout<SF_LOOP_INFO>.size)) != 0 {
      if acid.bpm.isFinite, acid.bpm > 0 { collector.add(name: "BPM", value: String(Double(acid.bpm))) }
      if acid.time_sig_num > 0 { collector.add(name: "METER", value: String(acid.time_sig_num)) }
    }
    tags = collector.finished(lengthFrames: lengthFrames)
    if looped && tags.loopStartFrame == nil {
      warnings.append("the loop (\(loopStart) to \(loopEnd)) does not fit the file's \(lengthFrames) frames: ignored")
    }
  }

  deinit { sf_close(file) }

  /// Frames read at a time from a file of more than two channels.
  private static let scratchFrames = 1024

  /// A LIST INFO string: UTF-8 when it is, else Latin-1 (what older tools wrote).
  private static func text(_ pointer: UnsafePointer<CChar>) -> String {
    let bytes = UnsafeRawBufferPointer(start: pointer, count: strlen(pointer))
    if let utf8 = String(validating: bytes, as: UTF8.self) { return utf8 }
    return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
  }

  func readFrames(into buffer: UnsafeMutablePointer<Float>, frameCapacity: Int) throws(DecodeError) -> Int {
    if let poisoned { throw poisoned }
    let capacity = Int(min(Int64(frameCapacity), max(0, lengthFrames - cursorFrames)))
    guard capacity > 0 else { return 0 }
    var got: Int
    if fileChannels <= 2 {
      got = Int(sf_readf_float(file, buffer, sf_count_t(capacity)))
    } else {
      got = 0
      while got < capacity {
        let want = min(capacity - got, Self.scratchFrames)
        let read = scratch.withUnsafeMutableBufferPointer {
          Int(sf_readf_float(file, $0.baseAddress!, sf_count_t(want)))
        }
        guard read > 0 else { break }
        scratch.withUnsafeBufferPointer { input in
          let output = buffer + got * 2
          let order = ChannelMixing.waveToVorbisOrder[fileChannels]
          for index in 0..<read {
            ChannelMixing.mix(inputChannels: fileChannels, outputChannels: 2, output: output + index * 2) { channel in
              input[index * fileChannels + (order.map { $0[channel] } ?? channel)]
            }
          }
        }
        got += read
        if read < want { break }
      }
    }
    if got == 0 {
      // Short of the length libsndfile gave at open: the disk failed, or the file shrank.
      let failure =
        source.source.lastReadErrno.map { DecodeError(path: path, reason: .readFailed(errno: $0)) }
        ?? DecodeError(
          path: path,
          reason: .truncated("the audio ended at frame \(cursorFrames) of the \(lengthFrames) the header claims"))
      poisoned = failure
      throw failure
    }
    cursorFrames += Int64(got)
    return got
  }

  func seek(toFrame frame: Int64) throws(DecodeError) {
    if let poisoned { throw poisoned }
    guard frame >= 0 && frame <= lengthFrames else {
      throw DecodeError(path: path, reason: .seekOutOfRange(frame: frame, lengthFrames: lengthFrames))
    }
    guard sf_seek(file, sf_count_t(frame), SEEK_SET) == sf_count_t(frame) else {
      let failure =
        source.source.lastReadErrno.map { DecodeError(path: path, reason: .readFailed(errno: $0)) }
        ?? DecodeError(path: path, reason: .corrupt("libsndfile could not seek to frame \(frame)"))
      poisoned = failure
      throw failure
    }
    cursorFrames = frame
  }
}

/// The file libsndfile's virtual I/O reads, as its user data, with the bytes libsndfile must not
/// see as they are (`hidden`) replaced as they are read.
///
/// Why: libsndfile 1.2 loops for ever in `sf_open` on a LIST chunk whose sub-chunk claims more
/// bytes than the chunk holds (found here by `make fuzz FUZZ_TARGETS=wav`; upstream
/// libsndfile/libsndfile#1118, still open for 1.2.2). A game must not hang on a damaged asset or
/// on a player's odd file, so before libsndfile reads anything the top-level chunks are walked
/// here, and each LIST chunk whose sub-chunks do not fit it is shown to libsndfile as a `JUNK`
/// chunk, which it skips by its size. Only that chunk's tags are lost.
private final class WAVSource {
  let source: FileByteSource
  /// Byte offsets of chunk ids to read as "JUNK".
  private(set) var hidden: [Int64] = []

  init(_ source: FileByteSource) {
    self.source = source
    hidden = Self.damagedLists(source)
  }

  /// Reads as `FileByteSource.read` does, with the hidden chunk ids replaced.
  func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
    let start = source.seek(offset: 0, whence: SEEK_CUR)
    let got = source.read(into: buffer, count: count)
    guard got > 0, start >= 0 else { return got }
    for offset in hidden where offset + 4 > start && offset < start + Int64(got) {
      for (index, byte) in Array("JUNK".utf8).enumerated() {
        let at = offset + Int64(index) - start
        if at >= 0 && at < Int64(got) { buffer.storeBytes(of: byte, toByteOffset: Int(at), as: UInt8.self) }
      }
    }
    return got
  }

  /// The offsets of the LIST chunks among the top-level chunks of a RIFF, RIFX or RF64 file whose
  /// sub-chunks run past the chunk's end. At most `maximumChunks` chunks are looked at (a file
  /// of more is not one a sound editor wrote; libsndfile reads the rest as it will).
  static func damagedLists(_ source: FileByteSource) -> [Int64] {
    let head = source.bytes(at: 0, count: 12)
    guard head.count == 12, Array(head[8..<12]) == Array("WAVE".utf8) else { return [] }
    let bigEndian = head.starts(with: Array("RIFX".utf8))
    func size(_ bytes: ArraySlice<UInt8>) -> Int64 {
      let values = bigEndian ? Array(bytes) : bytes.reversed()
      return values.reduce(Int64(0)) { ($0 << 8) | Int64($1) }
    }
    var damaged: [Int64] = []
    var offset: Int64 = 12
    for _ in 0..<maximumChunks {
      let header = source.bytes(at: offset, count: 8)
      guard header.count == 8 else { break }
      let length = size(header[4..<8])
      let end = offset + 8 + length
      if Array(header[0..<4]) == Array("LIST".utf8) {
        // The list's type (4 bytes), then sub-chunks: id, size, bytes, a pad byte to an even size.
        let body = source.bytes(at: offset + 8, count: Int(min(length, 1 << 20)))
        var index = 4
        var fits = length <= source.sizeBytes - offset - 8 && length >= 4
        while fits && index + 8 <= body.count {
          let subLength = size(body[(index + 4)..<(index + 8)])
          guard subLength <= Int64(body.count - index - 8) else {
            fits = false
            break
          }
          index += 8 + Int(subLength) + Int(subLength & 1)
        }
        if !fits { damaged.append(offset) }
      }
      guard end + (length & 1) < source.sizeBytes else { break }
      offset = end + (length & 1)
    }
    return damaged
  }

  /// Top-level chunks looked at, at most.
  static let maximumChunks = 256
}

private func wavReader(_ user: UnsafeMutableRawPointer?) -> WAVSource {
  Unmanaged<WAVSource>.fromOpaque(user!).takeUnretainedValue()
}

private let wavLength: sf_vio_get_filelen = { user in sf_count_t(wavReader(user).source.sizeBytes) }

private let wavSeek: sf_vio_seek = { offset, whence, user in
  sf_count_t(wavReader(user).source.seek(offset: Int64(offset), whence: whence))
}

private let wavRead: sf_vio_read = { buffer, count, user in
  guard let buffer, count > 0 else { return 0 }
  // libsndfile reads until it has what it asked for or gets 0 (the end, or an error it then
  // reports as a short file; `lastReadErrno` tells the two apart).
  return sf_count_t(max(0, wavReader(user).read(into: buffer, count: Int(count))))
}

private let wavTell: sf_vio_tell = { user in sf_count_t(wavReader(user).source.seek(offset: 0, whence: SEEK_CUR)) }
