import CVorbisFile

#if canImport(Glibc)
  import Glibc
#endif

/// Ogg Vorbis through libvorbisfile. This is the only file that calls libvorbisfile.
///
/// Owns one heap-allocated `OggVorbis_File` (it points into itself, so it is never copied or moved)
/// and frees it with `ov_clear` in `deinit`. Reads go through `FileByteSource` by custom callbacks.
///
/// Chained files: every link may change its sample rate and channel count. The decoder's `format`
/// is the first link's rate with the largest channel count of any link (at most 2); links at
/// another rate are converted to it by linear interpolation, and their frame counts are scaled
/// (seeks inside such links are exact to the link's own frame, not the output's).
final class VorbisDecoder: AudioDecoder {
  let containerFormat = ContainerFormat.vorbis
  let format: AudioFormat
  let lengthFrames: Int64
  private(set) var cursorFrames: Int64 = 0
  let tags: AudioTags
  private(set) var warnings: [String] = []
  var path: String { source.path }

  private let source: FileByteSource
  private let file: UnsafeMutablePointer<OggVorbis_File>

  private struct Link {
    var sampleRate: Int
    var channelCount: Int
    var startInFile: Int64  // first frame of the link in libvorbisfile's (native-rate) numbering
    var nativeFrames: Int64
    var startInOutput: Int64  // first frame of the link in our output numbering
    var outputFrames: Int64
  }
  private let links: [Link]
  private var currentLink: Int32 = -1
  // Linear-interpolation state for links whose rate differs from `format.sampleRate`.
  private var resampleHistory: [Float] = [0, 0]
  private var hasResampleHistory = false
  private var resamplePhase: Double = 0
  private var pending: [Float] = []  // resampled output not yet handed out (interleaved)
  private var pendingStart = 0

  init(source: FileByteSource) throws(DecodeError) {
    self.source = source
    file = .allocate(capacity: 1)
    let callbacks = ov_callbacks(
      read_func: { buffer, size, count, datasource in
        let source = Unmanaged<FileByteSource>.fromOpaque(datasource!).takeUnretainedValue()
        errno = 0
        let bytes = source.read(into: buffer!, count: size * count)
        // vorbisfile treats 0 with errno set as a read error, 0 with errno 0 as the end.
        if bytes < 0 { return 0 }
        return bytes / max(size, 1)
      },
      seek_func: { datasource, offset, whence in
        let source = Unmanaged<FileByteSource>.fromOpaque(datasource!).takeUnretainedValue()
        return source.seek(offset: offset, whence: whence) < 0 ? -1 : 0
      },
      close_func: nil,  // FileByteSource closes its descriptor itself
      tell_func: { datasource in
        let source = Unmanaged<FileByteSource>.fromOpaque(datasource!).takeUnretainedValue()
        return Int(source.seek(offset: 0, whence: SEEK_CUR))
      })
    let opened = ov_open_callbacks(Unmanaged.passUnretained(source).toOpaque(), file, nil, 0, callbacks)
    guard opened == 0 else {
      // On failure ov_open_callbacks leaves nothing that ov_clear must free... except when it
      // fails after reading headers; ov_clear is safe on both (it zeroes the struct).
      ov_clear(file)
      file.deallocate()
      throw Self.error(opened, path: source.path, during: "opening")
    }

    var links: [Link] = []
    let linkCount = Int(ov_streams(file))
    var startInFile: Int64 = 0
    for index in 0..<linkCount {
      guard let info = ov_info(file, Int32(index)) else { continue }
      let frames = ov_pcm_total(file, Int32(index))
      links.append(
        Link(
          sampleRate: Int(info.pointee.rate), channelCount: Int(info.pointee.channels),
          startInFile: startInFile, nativeFrames: max(0, frames), startInOutput: 0, outputFrames: 0))
      startInFile += max(0, frames)
    }
    guard let first = links.first, first.sampleRate > 0, links.allSatisfy({ $0.channelCount > 0 && $0.sampleRate > 0 })
    else {
      ov_clear(file)
      file.deallocate()
      throw DecodeError(path: source.path, reason: .corrupt("a Vorbis stream with no valid rate or channel count"))
    }
    let outputRate = first.sampleRate
    var startInOutput: Int64 = 0
    for index in links.indices {
      links[index].startInOutput = startInOutput
      links[index].outputFrames =
        links[index].sampleRate == outputRate
        ? links[index].nativeFrames
        : Int64(Double(links[index].nativeFrames) * Double(outputRate) / Double(links[index].sampleRate))
      startInOutput += links[index].outputFrames
    }
    self.links = links
    // libvorbisfile 1.3.7 leaves a chained file positioned at the start of its second link after
    // ov_open_callbacks (ov_pcm_tell says 44100 for a first link of 44100 frames): a linear read
    // would skip the whole first link. Checked with a plain C program on Debian 12. Rewind.
    if ov_pcm_tell(file) != 0 {
      let rewound = ov_pcm_seek(file, 0)
      guard rewound == 0 else {
        ov_clear(file)
        file.deallocate()
        throw Self.error(rewound, path: source.path, during: "rewinding to the first link")
      }
    }
    format = AudioFormat(sampleRate: outputRate, channelCount: min(2, links.map(\.channelCount).max()!))
    lengthFrames = startInOutput

    var collector = TagCollector()
    if let comment = ov_comment(file, -1) {
      for index in 0..<Int(comment.pointee.comments) {
        guard let entry = comment.pointee.user_comments[index] else { continue }
        let length = Int(comment.pointee.comment_lengths[index])
        let text = String(decoding: UnsafeRawBufferPointer(start: entry, count: length), as: UTF8.self)
        guard let equals = text.firstIndex(of: "=") else { continue }
        collector.add(name: String(text[..<equals]), value: String(text[text.index(after: equals)...]))
      }
    }
    tags = collector.finished(lengthFrames: lengthFrames)
    if linkCount > 1 && links.contains(where: { $0.sampleRate != outputRate }) {
      warnings.append("chained stream changes sample rate; later links are resampled to \(outputRate) Hz")
    }
  }

  deinit {
    ov_clear(file)
    file.deallocate()
  }

  func readFrames(into buffer: UnsafeMutablePointer<Float>, frameCapacity: Int) throws(DecodeError) -> Int {
    let outChannels = format.channelCount
    var written = 0
    while written < frameCapacity {
      // First hand out resampled frames left from the previous call.
      if pendingStart < pending.count {
        let frames = min(frameCapacity - written, (pending.count - pendingStart) / outChannels)
        for index in 0..<(frames * outChannels) {
          buffer[written * outChannels + index] = pending[pendingStart + index]
        }
        pendingStart += frames * outChannels
        written += frames
        continue
      }
      var planar: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>? = nil
      var link: Int32 = 0
      let request = Int32(min(frameCapacity - written, 4096))
      let got = Int(ov_read_float(file, &planar, request, &link))
      if got == 0 { break }
      if got == Int(OV_HOLE) {
        // A gap in the data (a lost page): vorbisfile resynchronises; the music goes on.
        if warnings.count < 16 { warnings.append("a hole in the stream near frame \(cursorFrames + Int64(written))") }
        continue
      }
      if got < 0 {
        cursorFrames += Int64(written)
        throw Self.error(Int32(got), path: path, during: "decoding")
      }
      guard let planar, Int(link) < links.count else { continue }
      if link != currentLink {
        currentLink = link
        hasResampleHistory = false
        resamplePhase = 0
      }
      let info = links[Int(link)]
      if info.sampleRate == format.sampleRate {
        for frame in 0..<got {
          ChannelMixing.mix(
            inputChannels: info.channelCount, outputChannels: outChannels,
            output: buffer + (written + frame) * outChannels
          ) { planar[$0]![frame] }
        }
        written += got
      } else {
        resample(planar: planar, frames: got, link: info)
      }
    }
    cursorFrames += Int64(written)
    return written
  }

  /// Linear interpolation from the link's rate to the output rate into `pending`.
  private func resample(planar: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>, frames: Int, link: Link) {
    let outChannels = format.channelCount
    let step = Double(link.sampleRate) / Double(format.sampleRate)
    pending.removeAll(keepingCapacity: true)
    pendingStart = 0
    var previous: [Float] = [0, 0]
    var next: [Float] = [0, 0]
    func load(_ index: Int, into frame: inout [Float]) {
      if index < 0 {
        frame = resampleHistory
        return
      }
      frame.withUnsafeMutableBufferPointer { out in
        ChannelMixing.mix(inputChannels: link.channelCount, outputChannels: outChannels, output: out.baseAddress!) {
          planar[$0]![index]
        }
      }
    }
    var position = hasResampleHistory ? resamplePhase : max(0, resamplePhase)
    while true {
      let index = Int(position.rounded(.down))
      if index + 1 > frames - 1 { break }
      load(index, into: &previous)
      load(index + 1, into: &next)
      let fraction = Float(position - Double(index))
      for channel in 0..<outChannels {
        pending.append(previous[channel] + (next[channel] - previous[channel]) * fraction)
      }
      position += step
    }
    load(frames - 1, into: &resampleHistory)
    hasResampleHistory = true
    resamplePhase = position - Double(frames)
  }

  func seek(toFrame frame: Int64) throws(DecodeError) {
    guard frame >= 0 && frame <= lengthFrames else {
      throw DecodeError(path: path, reason: .seekOutOfRange(frame: frame, lengthFrames: lengthFrames))
    }
    pending.removeAll(keepingCapacity: true)
    pendingStart = 0
    hasResampleHistory = false
    resamplePhase = 0
    var target = frame
    if let link = links.last(where: { $0.startInOutput <= frame && $0.outputFrames > 0 }),
      link.sampleRate != format.sampleRate
    {
      let local = Double(frame - link.startInOutput) * Double(link.sampleRate) / Double(format.sampleRate)
      target = link.startInFile + Int64(local.rounded(.down))
      resamplePhase = local - local.rounded(.down)
    } else if let link = links.last(where: { $0.startInOutput <= frame }) {
      target = link.startInFile + (frame - link.startInOutput)
    }
    let result = ov_pcm_seek(file, target)
    guard result == 0 else { throw Self.error(result, path: path, during: "seeking to frame \(frame)") }
    currentLink = -1
    cursorFrames = frame
  }

  /// The single place libvorbisfile's codes become `DecodeError`s.
  private static func error(_ code: Int32, path: String, during action: String) -> DecodeError {
    let reason: DecodeError.Reason
    switch code {
    case OV_EREAD: reason = .readFailed(errno: errno)
    case OV_ENOTVORBIS: reason = .unrecognizedFormat(detected: "an Ogg stream without Vorbis audio")
    case OV_EBADHEADER: reason = .corrupt("invalid Vorbis header while \(action)")
    case OV_EVERSION: reason = .unsupported("Vorbis version mismatch")
    case OV_EBADLINK: reason = .corrupt("invalid stream section (bad link) while \(action)")
    case OV_ENOSEEK: reason = .unsupported("the stream is not seekable")
    case OV_EFAULT: reason = .corrupt("internal decoder fault while \(action)")
    case OV_EINVAL: reason = .corrupt("invalid request or data while \(action)")
    default: reason = .corrupt("libvorbisfile error while \(action)")
    }
    return DecodeError(path: path, reason: reason, code: code)
  }
}
