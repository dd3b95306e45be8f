import CFLAC

#if canImport(Glibc)
  import Glibc
#endif

/// FLAC through libFLAC's stream decoder. This is the only file that calls libFLAC's decoder.
///
/// Owns one `FLAC__StreamDecoder` and frees it with `FLAC__stream_decoder_delete` in `deinit`.
/// Reads go through `FileByteSource` by libFLAC's stream callbacks, which get a `FLACCallbacks`
/// (the state the callbacks fill) as their client data.
///
/// libFLAC hands out whole frames (4096 samples per channel, typically) of integers at the file's
/// bit depth; they become floats (full scale ±1) and wait in `FLACCallbacks.pending` until read.
/// Seeks are sample-exact (`FLAC__stream_decoder_seek_absolute`). Files with more than two
/// channels are folded to stereo (`ChannelMixing`, after putting FLAC's channel order into
/// Vorbis's).
///
/// The length is STREAMINFO's total sample count. A file that does not say (0: allowed by the
/// format, written by some streaming encoders) is counted by decoding it once when it opens. A
/// file cut short still plays what is there; reading then ends with `.truncated`.
final class FLACDecoder: AudioDecoder {
  let containerFormat = ContainerFormat.flac
  let format: AudioFormat
  private(set) var lengthFrames: Int64
  private(set) var cursorFrames: Int64 = 0
  private(set) var tags = AudioTags()
  private(set) var artwork: Artwork?
  private(set) var warnings: [String] = []
  var path: String { source.path }

  private let source: FileByteSource
  private let decoder: UnsafeMutablePointer<FLAC__StreamDecoder>
  private let callbacks: FLACCallbacks
  /// Set by the first hard error: every later read or seek throws it.
  private var poisoned: DecodeError?
  private var ended = false

  init(source: FileByteSource, keepingArtwork: Bool = false) throws(DecodeError) {
    self.source = source
    guard let decoder = FLAC__stream_decoder_new() else {
      throw DecodeError(path: source.path, reason: .unsupported("libFLAC could not create a decoder"))
    }
    let callbacks = FLACCallbacks(source: source)
    FLAC__stream_decoder_set_metadata_respond(decoder, FLAC__METADATA_TYPE_VORBIS_COMMENT)
    if keepingArtwork {
      callbacks.tags.keepsArtwork = true
      FLAC__stream_decoder_set_metadata_respond(decoder, FLAC__METADATA_TYPE_PICTURE)
    }
    let status = FLAC__stream_decoder_init_stream(
      decoder, flacRead, flacSeek, flacTell, flacLength, flacEOF, flacWrite, flacMetadata, flacError,
      Unmanaged.passUnretained(callbacks).toOpaque())
    guard status == FLAC__STREAM_DECODER_INIT_STATUS_OK else {
      FLAC__stream_decoder_delete(decoder)
      throw DecodeError(
        path: source.path, reason: .unsupported("libFLAC could not start decoding (status \(status.rawValue))"))
    }
    guard FLAC__stream_decoder_process_until_end_of_metadata(decoder) != 0, let info = callbacks.streamInfo else {
      let failure = callbacks.failure(during: "reading the stream header")
      FLAC__stream_decoder_delete(decoder)
      throw failure
    }
    do throws(DecodeError) {
      try AudioFile.checkRate(info.sampleRate, path: source.path)
      guard (1...8).contains(info.channels), (4...32).contains(info.bitsPerSample) else {
        throw DecodeError(
          path: source.path,
          reason: .corrupt("STREAMINFO says \(info.channels) channels of \(info.bitsPerSample) bits"))
      }
      guard info.totalSamples <= UInt64(AudioFormat.maximumLengthFrames) else {
        throw DecodeError(
          path: source.path,
          reason: .corrupt("STREAMINFO claims \(info.totalSamples) frames, more than a file can hold"))
      }
    } catch {
      FLAC__stream_decoder_delete(decoder)
      throw error
    }
    self.decoder = decoder
    self.callbacks = callbacks
    format = AudioFormat(sampleRate: info.sampleRate, channelCount: info.channels == 1 ? 1 : 2)
    callbacks.outputChannels = format.channelCount
    lengthFrames = Int64(info.totalSamples)
    if lengthFrames == 0 {
      // The header does not say how long the stream is: count it (from here on `deinit` frees
      // the decoder if this throws).
      lengthFrames = try countFrames()
      guard lengthFrames > 0 else {
        throw DecodeError(path: source.path, reason: .corrupt("no decodable FLAC frames"))
      }
      warnings.append("the FLAC header does not give the length: counted by decoding the file once")
    }
    tags = callbacks.tags.finished(lengthFrames: lengthFrames)
    artwork = callbacks.tags.artwork
  }

  deinit { FLAC__stream_decoder_delete(decoder) }

  func readFrames(into buffer: UnsafeMutablePointer<Float>, frameCapacity: Int) throws(DecodeError) -> Int {
    if let poisoned { throw poisoned }
    let channels = format.channelCount
    var written = 0
    // Never past the length the header gave (a stream that runs on beyond it is cut there).
    let capacity = Int(min(Int64(frameCapacity), max(0, lengthFrames - cursorFrames)))
    while written < capacity {
      let available = callbacks.pendingFrames
      if available > 0 {
        let frames = min(capacity - written, available)
        callbacks.take(frames: frames, into: buffer + written * channels)
        written += frames
        cursorFrames += Int64(frames)
        continue
      }
      if ended { break }
      guard FLAC__stream_decoder_process_single(decoder) != 0 else {
        let failure = callbacks.failure(during: "decoding")
        poisoned = failure
        if written > 0 { return written }
        throw failure
      }
      if FLAC__stream_decoder_get_state(decoder) == FLAC__STREAM_DECODER_END_OF_STREAM && callbacks.pendingFrames == 0 {
        ended = true
      }
    }
    if written == 0 && capacity > 0 && ended && cursorFrames < lengthFrames {
      let failure = DecodeError(
        path: source.path,
        reason: .truncated("the stream ended at frame \(cursorFrames) of the \(lengthFrames) its header claims"))
      poisoned = failure
      throw failure
    }
    return written
  }

  func seek(toFrame frame: Int64) throws(DecodeError) {
    if let poisoned { throw poisoned }
    guard frame >= 0 && frame <= lengthFrames else {
      throw DecodeError(path: source.path, reason: .seekOutOfRange(frame: frame, lengthFrames: lengthFrames))
    }
    callbacks.dropPending()
    ended = false
    if frame == lengthFrames {
      // libFLAC cannot seek to the end itself: there is simply nothing more to read.
      ended = true
      cursorFrames = frame
      return
    }
    guard FLAC__stream_decoder_seek_absolute(decoder, UInt64(frame)) != 0 else {
      // Where the decoder is now is not known: like any hard error, the handle is not used again.
      let failure = callbacks.failure(during: "seeking to frame \(frame)")
      poisoned = failure
      throw failure
    }
    cursorFrames = frame
  }

  /// Decodes the whole stream once to count its frames, then goes back to the start.
  private func countFrames() throws(DecodeError) -> Int64 {
    var total: Int64 = 0
    callbacks.countingOnly = true
    defer { callbacks.countingOnly = false }
    while FLAC__stream_decoder_get_state(decoder) != FLAC__STREAM_DECODER_END_OF_STREAM {
      guard FLAC__stream_decoder_process_single(decoder) != 0 else { break }
      total += Int64(callbacks.countedFrames)
      callbacks.countedFrames = 0
      guard total <= AudioFormat.maximumLengthFrames else {
        throw DecodeError(path: source.path, reason: .corrupt("the stream runs past \(total) frames"))
      }
    }
    guard FLAC__stream_decoder_reset(decoder) != 0, FLAC__stream_decoder_process_until_end_of_metadata(decoder) != 0
    else { throw callbacks.failure(during: "rewinding after counting") }
    return total
  }
}

/// What libFLAC's callbacks read and fill, for one decoder: the file, the stream header and tags,
/// decoded frames not yet read, and the last error libFLAC reported.
private final class FLACCallbacks {
  struct StreamInfo {
    var sampleRate: Int
    var channels: Int
    var bitsPerSample: Int
    var totalSamples: UInt64
  }

  let source: FileByteSource
  var streamInfo: StreamInfo?
  var tags = TagCollector()
  var outputChannels = 2
  /// Decoded, interleaved at `outputChannels`, from `pendingStart`.
  private var pending: [Float] = []
  private var pendingStart = 0
  var countingOnly = false
  var countedFrames = 0
  var lastError: FLAC__StreamDecoderErrorStatus?

  init(source: FileByteSource) { self.source = source }

  var pendingFrames: Int { (pending.count - pendingStart) / outputChannels }

  func take(frames: Int, into output: UnsafeMutablePointer<Float>) {
    let count = frames * outputChannels
    pending.withUnsafeBufferPointer { output.update(from: $0.baseAddress! + pendingStart, count: count) }
    pendingStart += count
    if pendingStart == pending.count {
      pending.removeAll(keepingCapacity: true)
      pendingStart = 0
    }
  }

  func dropPending() {
    pending.removeAll(keepingCapacity: true)
    pendingStart = 0
  }

  func write(_ frame: UnsafePointer<FLAC__Frame>, _ buffer: UnsafePointer<UnsafePointer<FLAC__int32>?>) -> Bool {
    let header = frame.pointee.header
    let frames = Int(header.blocksize)
    let channels = Int(header.channels)
    guard frames > 0, channels > 0, (4...32).contains(Int(header.bits_per_sample)) else { return true }
    if countingOnly {
      countedFrames += frames
      return true
    }
    let scale = 1 / Float(Int64(1) << (Int(header.bits_per_sample) - 1))
    // FLAC's channel order is WAVE's.
    let order = ChannelMixing.waveToVorbisOrder[channels]
    let start = pending.count
    pending.append(contentsOf: repeatElement(0, count: frames * outputChannels))
    pending.withUnsafeMutableBufferPointer { storage in
      let output = storage.baseAddress! + start
      for index in 0..<frames {
        ChannelMixing.mix(
          inputChannels: channels, outputChannels: outputChannels, output: output + index * outputChannels
        ) { channel in
          let source = order.map { $0[channel] } ?? channel
          guard let samples = buffer[source] else { return 0 }
          return Float(samples[index]) * scale
        }
      }
    }
    return true
  }

  func metadata(_ block: UnsafePointer<FLAC__StreamMetadata>) {
    switch block.pointee.type {
    case FLAC__METADATA_TYPE_STREAMINFO:
      let info = block.pointee.data.stream_info
      streamInfo = StreamInfo(
        sampleRate: Int(info.sample_rate), channels: Int(info.channels), bitsPerSample: Int(info.bits_per_sample),
        totalSamples: info.total_samples)
    case FLAC__METADATA_TYPE_VORBIS_COMMENT:
      let comments = block.pointee.data.vorbis_comment
      guard let entries = comments.comments else { return }
      for index in 0..<Int(comments.num_comments) {
        let entry = entries[index]
        guard let bytes = entry.entry else { continue }
        tags.add(comment: UnsafeRawBufferPointer(start: bytes, count: Int(entry.length)))
      }
    case FLAC__METADATA_TYPE_PICTURE:
      let picture = block.pointee.data.picture
      guard let data = picture.data, picture.data_length > 0 else { return }
      tags.add(
        artwork: Artwork(
          mimeType: picture.mime_type.map { String(cString: $0) } ?? "image/jpeg",
          data: Array(UnsafeBufferPointer(start: data, count: Int(picture.data_length))),
          pictureType: Int(picture.type.rawValue)))
    default: break
    }
  }

  /// The error to throw after libFLAC said no: the disk's, or the stream's.
  func failure(during action: String) -> DecodeError {
    if let code = source.lastReadErrno { return DecodeError(path: source.path, reason: .readFailed(errno: code)) }
    switch lastError {
    case FLAC__STREAM_DECODER_ERROR_STATUS_LOST_SYNC?:
      return DecodeError(path: source.path, reason: .corrupt("lost sync while \(action)"))
    case FLAC__STREAM_DECODER_ERROR_STATUS_BAD_HEADER?:
      return DecodeError(path: source.path, reason: .corrupt("a bad frame header while \(action)"))
    case FLAC__STREAM_DECODER_ERROR_STATUS_FRAME_CRC_MISMATCH?:
      return DecodeError(path: source.path, reason: .corrupt("a frame's checksum is wrong while \(action)"))
    default:
      return DecodeError(path: source.path, reason: .corrupt("libFLAC failed while \(action)"))
    }
  }
}

private func state(_ client: UnsafeMutableRawPointer?) -> FLACCallbacks {
  Unmanaged<FLACCallbacks>.fromOpaque(client!).takeUnretainedValue()
}

private let flacRead: FLAC__StreamDecoderReadCallback = { _, buffer, bytes, client in
  guard let buffer, let bytes else { return FLAC__STREAM_DECODER_READ_STATUS_ABORT }
  let got = state(client).source.read(into: buffer, count: bytes.pointee)
  if got < 0 {
    bytes.pointee = 0
    return FLAC__STREAM_DECODER_READ_STATUS_ABORT
  }
  bytes.pointee = got
  return got == 0 ? FLAC__STREAM_DECODER_READ_STATUS_END_OF_STREAM : FLAC__STREAM_DECODER_READ_STATUS_CONTINUE
}

private let flacSeek: FLAC__StreamDecoderSeekCallback = { _, offset, client in
  guard offset <= UInt64(Int64.max) else { return FLAC__STREAM_DECODER_SEEK_STATUS_ERROR }
  return state(client).source.seek(offset: Int64(offset), whence: SEEK_SET) < 0
    ? FLAC__STREAM_DECODER_SEEK_STATUS_ERROR : FLAC__STREAM_DECODER_SEEK_STATUS_OK
}

private let flacTell: FLAC__StreamDecoderTellCallback = { _, offset, client in
  let position = state(client).source.seek(offset: 0, whence: SEEK_CUR)
  guard position >= 0 else { return FLAC__STREAM_DECODER_TELL_STATUS_ERROR }
  offset?.pointee = UInt64(position)
  return FLAC__STREAM_DECODER_TELL_STATUS_OK
}

private let flacLength: FLAC__StreamDecoderLengthCallback = { _, length, client in
  length?.pointee = UInt64(state(client).source.sizeBytes)
  return FLAC__STREAM_DECODER_LENGTH_STATUS_OK
}

private let flacEOF: FLAC__StreamDecoderEofCallback = { _, client in
  let source = state(client).source
  return source.seek(offset: 0, whence: SEEK_CUR) >= source.sizeBytes ? 1 : 0
}

private let flacWrite: FLAC__StreamDecoderWriteCallback = { _, frame, buffer, client in
  guard let frame, let buffer else { return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT }
  return state(client).write(frame, buffer)
    ? FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE : FLAC__STREAM_DECODER_WRITE_STATUS_ABORT
}

private let flacMetadata: FLAC__StreamDecoderMetadataCallback = { _, block, client in
  guard let block else { return }
  state(client).metadata(block)
}

private let flacError: FLAC__StreamDecoderErrorCallback = { _, status, client in
  state(client).lastError = status
}
