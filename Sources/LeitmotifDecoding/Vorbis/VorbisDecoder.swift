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
///
/// Damaged files: libvorbisfile's seekable mode trusts the file's structure (it bisects for link
/// boundaries and reads the length from the last page). A file cut off mid-page or damaged in the
/// middle confuses it: it reports a length of 0, or one that stops at the damage, and cannot seek.
/// Such a file is opened again in libvorbisfile's streaming (non-seekable) mode, which reads
/// linearly through holes: its length is counted by decoding it once, and a seek reopens and
/// decodes up to the target. Everything that is there plays; at the end, reading reports what was
/// wrong (`.truncated` or `.corrupt`), so the item ends with an error notification.
///
/// After a hard error the handle is never touched again: every later read or seek throws the same
/// error. libvorbis 1.3.7 leaves a half-initialised decoder behind when a damaged setup header
/// makes `vorbis_synthesis_init` fail (ov_read_float says OV_EBADLINK); calling it again then
/// decodes with codebooks it has zeroed and dies of SIGFPE in res2_inverse (xiph/vorbis#124; the
/// repro is Tests/LeitmotifTests/Fixtures/vorbis-setup-sigfpe.ogg). A damaged asset must not take
/// the game down.
final class VorbisDecoder: AudioDecoder {
  let containerFormat = ContainerFormat.vorbis
  private(set) var format: AudioFormat
  private(set) var lengthFrames: Int64
  private(set) var cursorFrames: Int64 = 0
  private(set) var tags = AudioTags()
  private(set) var artwork: Artwork?
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
  private var links: [Link]
  /// The file does not end with a complete end-of-stream page: it was cut off. Everything that is
  /// there plays, then reading reports `.truncated`.
  private(set) var isTruncated = false
  /// Opened in libvorbisfile's streaming mode because the seekable open could not make sense of
  /// the file (see the type's documentation).
  private(set) var isLinear = false
  /// Holes met since the last seek; reported when the end is reached.
  private var holes = 0
  private var reportedDamage = false
  private var countingOnly = false
  /// Set by the first hard error; see the type's documentation.
  private var poisoned: DecodeError?
  private var currentLink: Int32 = -1
  // Linear-interpolation state for links whose rate differs from `format.sampleRate`.
  private var resampleHistory: [Float] = [0, 0]
  private var hasResampleHistory = false
  private var resamplePhase: Double = 0
  private var pending: [Float] = []  // resampled output not yet handed out (interleaved)
  private var pendingStart = 0

  init(source: FileByteSource, keepingArtwork: Bool = false) throws(DecodeError) {
    self.source = source
    file = .allocate(capacity: 1)
    let opened = Self.open(file, source: source, seekable: true)
    guard opened == 0 else {
      file.deallocate()
      throw Self.error(opened, source: source, during: "opening")
    }
    var links: [Link] = []
    let linkCount = Int(ov_streams(file))
    var startInFile: Int64 = 0
    var failure: DecodeError? = nil
    // A granule position near 2^63 (damage, or a hostile file) makes a link's length absurd and
    // the sum of the links overflow. Such a length is not believed: the file is counted linearly
    // below, like any file whose structure libvorbisfile cannot make sense of.
    var believableLength = true
    for index in 0..<linkCount {
      guard let info = ov_info(file, Int32(index)) else { continue }
      let rate = Int(info.pointee.rate)
      let what = linkCount > 1 ? "link \(index + 1) of \(linkCount)" : "the stream"
      do throws(DecodeError) {
        try AudioFile.checkRate(rate, path: source.path, what: what)
        if let first = links.first {
          try Self.checkLinkRate(rate, firstRate: first.sampleRate, what: what, path: source.path)
        }
      } catch {
        failure = error
        break
      }
      let frames = ov_pcm_total(file, Int32(index))
      let (sum, overflow) = startInFile.addingReportingOverflow(max(0, frames))
      if overflow || frames > AudioFormat.maximumLengthFrames || sum > AudioFormat.maximumLengthFrames {
        believableLength = false
      }
      links.append(
        Link(
          sampleRate: rate, channelCount: Int(info.pointee.channels),
          startInFile: startInFile, nativeFrames: believableLength ? max(0, frames) : 0, startInOutput: 0,
          outputFrames: 0))
      startInFile = believableLength ? sum : startInFile
    }
    if let failure {
      ov_clear(file)
      file.deallocate()
      throw failure
    }
    guard let first = links.first, links.allSatisfy({ $0.channelCount > 0 })
    else {
      ov_clear(file)
      file.deallocate()
      throw DecodeError(path: source.path, reason: .corrupt("a Vorbis stream with no valid rate or channel count"))
    }
    let outputRate = first.sampleRate
    var startInOutput: Int64 = 0
    for index in links.indices {
      links[index].startInOutput = startInOutput
      // Both factors are bounded (frames by maximumLengthFrames, the rate ratio by 768), so the
      // product fits a Double exactly enough and an Int64 surely.
      links[index].outputFrames =
        links[index].sampleRate == outputRate
        ? links[index].nativeFrames
        : Int64(Double(links[index].nativeFrames) * Double(outputRate) / Double(links[index].sampleRate))
      startInOutput += links[index].outputFrames
    }
    self.links = links
    format = AudioFormat(sampleRate: outputRate, channelCount: min(2, links.map(\.channelCount).max()!))
    lengthFrames = startInOutput
    var collector = TagCollector()
    collector.keepsArtwork = keepingArtwork
    if let comment = ov_comment(file, -1) {
      for index in 0..<Int(comment.pointee.comments) {
        guard let entry = comment.pointee.user_comments[index] else { continue }
        let length = Int(comment.pointee.comment_lengths[index])
        collector.add(comment: UnsafeRawBufferPointer(start: entry, count: length))
      }
    }
    isTruncated = !Self.endsWithEndOfStreamPage(source)
    // libvorbisfile 1.3.7 leaves a chained file positioned at the start of its second link after
    // ov_open_callbacks (ov_pcm_tell says 44100 for a first link of 44100 frames): a linear read
    // would skip the whole first link. Checked with a plain C program on Debian 12. Rewind.
    var rewound: Int32 = 0
    if ov_pcm_tell(file) != 0 { rewound = ov_pcm_seek(file, 0) }
    // From here on every stored property is set, so a throw runs `deinit`, which frees `file`.
    if rewound == OV_EBADLINK || rewound == OV_EFAULT {
      // libvorbis could not set up its decoder: the handle is not to be used again (see above).
      throw Self.error(rewound, source: source, during: "rewinding to the first link")
    }
    if isTruncated || rewound != 0 || lengthFrames <= 0 || !believableLength
      || lengthFrames > AudioFormat.maximumLengthFrames
    {
      try reopenLinear(countingFrames: true)
      guard lengthFrames > 0 else {
        throw DecodeError(
          path: source.path,
          reason: isTruncated
            ? .truncated("no complete audio packet before the file ends") : .corrupt("no decodable audio"))
      }
    }
    tags = collector.finished(lengthFrames: lengthFrames)
    artwork = collector.artwork
    if linkCount > 1 && links.contains(where: { $0.sampleRate != outputRate }) {
      warnings.append("chained stream changes sample rate; later links are resampled to \(outputRate) Hz")
    }
  }

  deinit {
    ov_clear(file)
    file.deallocate()
  }

  func readFrames(into buffer: UnsafeMutablePointer<Float>, frameCapacity: Int) throws(DecodeError) -> Int {
    if let poisoned { throw poisoned }
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
      // A link at a lower rate than the output becomes more frames than it reads: ask for only
      // as many as the caller has room for, so `pending` stays about one request long.
      var wanted = min(frameCapacity - written, 4096)
      if currentLink >= 0, let info = linkInfo(currentLink), info.sampleRate < format.sampleRate {
        wanted = min(wanted, Int(Double(wanted) * Double(info.sampleRate) / Double(format.sampleRate)) + 2)
      }
      let request = Int32(wanted)
      let got = Int(ov_read_float(file, &planar, request, &link))
      if got == 0 {
        // vorbisfile takes a failed read in the middle of the stream for its end: the read
        // error the source kept says otherwise (a dying disk, a pak reader that failed).
        if written == 0, let code = source.lastReadErrno, !countingOnly {
          let error = DecodeError(path: path, reason: .readFailed(errno: code))
          poisoned = error
          throw error
        }
        // A resampled last link can come out a frame or two short of the length its rate gives
        // (the interpolation stops at its last input frame): those frames are the last one held.
        if padResampledShortfall(upTo: lengthFrames, written: written) { continue }
        // The end. What was wrong on the way is reported now, once, after every frame is out.
        if written == 0 && !reportedDamage && !countingOnly && (isTruncated || holes > 0) {
          reportedDamage = true
          if isTruncated {
            throw DecodeError(
              path: path, reason: .truncated("the file ends inside an Ogg page, after frame \(cursorFrames)"))
          }
          throw DecodeError(path: path, reason: .corrupt("\(holes) damaged stretch(es): audio was lost there"))
        }
        break
      }
      if got == Int(OV_HOLE) {
        // A gap in the data (a lost page): vorbisfile resynchronises; the music goes on.
        holes += 1
        if warnings.count < 16 { warnings.append("a hole in the stream near frame \(cursorFrames + Int64(written))") }
        continue
      }
      if got < 0 {
        cursorFrames += Int64(written)
        let error = Self.error(Int32(got), source: source, during: "decoding")
        poisoned = error
        throw error
      }
      guard let planar, let info = linkInfo(link) else { continue }
      if isLinear && link != currentLink {
        // Streaming mode meets each link's header only now (the seekable open checked them all).
        do throws(DecodeError) {
          try AudioFile.checkRate(info.sampleRate, path: path, what: "a later link")
          try Self.checkLinkRate(info.sampleRate, firstRate: format.sampleRate, what: "a later link", path: path)
        } catch {
          cursorFrames += Int64(written)
          poisoned = error
          throw error
        }
      }
      if link != currentLink {
        // The link before, if resampled, may have ended a frame or two short: held up to where
        // this one starts, ahead of this one's frames (both go out through `pending`).
        let padded =
          currentLink >= 0 && !isLinear && Int(link) < links.count
          && padResampledShortfall(upTo: links[Int(link)].startInOutput, written: written)
        currentLink = link
        hasResampleHistory = false
        resamplePhase = 0
        if padded {
          if info.sampleRate == format.sampleRate {
            let start = pending.count
            pending.append(contentsOf: repeatElement(0, count: got * outChannels))
            pending.withUnsafeMutableBufferPointer { out in
              for frame in 0..<got {
                ChannelMixing.mix(
                  inputChannels: info.channelCount, outputChannels: outChannels,
                  output: out.baseAddress! + start + frame * outChannels
                ) { planar[$0]![frame] }
              }
            }
          } else {
            resample(
              planar: planar, frames: got, link: info,
              position: cursorFrames + Int64(written) + Int64((pending.count - pendingStart) / outChannels))
          }
          continue
        }
      }
      if info.sampleRate == format.sampleRate && info.channelCount == 2 && outChannels == 2 {
        // The common case, kept tight: interleave the two planar channels directly.
        let left = planar[0]!
        let right = planar[1]!
        let output = buffer + written * 2
        for frame in 0..<got {
          output[2 * frame] = left[frame]
          output[2 * frame + 1] = right[frame]
        }
        written += got
      } else if info.sampleRate == format.sampleRate {
        for frame in 0..<got {
          ChannelMixing.mix(
            inputChannels: info.channelCount, outputChannels: outChannels,
            output: buffer + (written + frame) * outChannels
          ) { planar[$0]![frame] }
        }
        written += got
      } else {
        resample(planar: planar, frames: got, link: info, position: cursorFrames + Int64(written))
      }
    }
    cursorFrames += Int64(written)
    return written
  }

  /// When the output so far (`cursorFrames + written`, and what waits in `pending`) is a few
  /// frames short of `target` after a resampled link, queues those frames in `pending` (the last
  /// frame held) and says so. More than a few missing is not rounding (damage): left alone.
  private func padResampledShortfall(upTo target: Int64, written: Int) -> Bool {
    guard hasResampleHistory, currentLink >= 0, let info = linkInfo(currentLink), info.sampleRate != format.sampleRate
    else { return false }
    let outChannels = format.channelCount
    let position = cursorFrames + Int64(written) + Int64((pending.count - pendingStart) / outChannels)
    let shortfall = target - position
    let slack = Int64((Double(format.sampleRate) / Double(info.sampleRate)).rounded(.up)) + 2
    guard shortfall > 0, shortfall <= slack else { return false }
    if pendingStart >= pending.count {
      pending.removeAll(keepingCapacity: true)
      pendingStart = 0
    }
    for _ in 0..<shortfall { pending.append(contentsOf: resampleHistory[0..<outChannels]) }
    return true
  }

  /// Linear interpolation from the link's rate to the output rate, appended to `pending`; never
  /// past the link's end in the output (`position` is where its first frame goes).
  private func resample(
    planar: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>, frames: Int, link: Link, position output: Int64
  ) {
    let outChannels = format.channelCount
    let step = Double(link.sampleRate) / Double(format.sampleRate)
    if pendingStart >= pending.count {
      pending.removeAll(keepingCapacity: true)
      pendingStart = 0
    }
    let before = pending.count
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
    // The link's length in the output is its own length at the output's rate, rounded down:
    // what the interpolation makes beyond it is dropped, so the next link starts on its frame.
    if !isLinear, currentLink >= 0, Int(currentLink) < links.count {
      let current = links[Int(currentLink)]
      let room = Int(max(0, current.startInOutput + current.outputFrames - output))
      let made = (pending.count - before) / outChannels
      if made > room { pending.removeLast((made - room) * outChannels) }
    }
  }

  /// libvorbisfile builds its decoder (codebooks, synthesis state: about a hundred allocations)
  /// at the first read or seek after `ov_open_callbacks`; a seek to where the stream already is
  /// builds it here and moves nothing (the seek is sample-exact).
  func prepareForDecoding() throws(DecodeError) {
    guard !isLinear, poisoned == nil, file.pointee.ready_state < INITSET else { return }
    try seek(toFrame: cursorFrames)
  }

  func seek(toFrame frame: Int64) throws(DecodeError) {
    guard frame >= 0 && frame <= lengthFrames else {
      throw DecodeError(path: path, reason: .seekOutOfRange(frame: frame, lengthFrames: lengthFrames))
    }
    if let poisoned { throw poisoned }
    if isLinear {
      try seekLinear(toFrame: frame)
      return
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
    guard result == 0 else {
      let error = Self.error(result, source: source, during: "seeking to frame \(frame)")
      if result != OV_EINVAL { poisoned = error }
      throw error
    }
    currentLink = -1
    cursorFrames = frame
    reportedDamage = false
    holes = 0
  }

  /// How much slower than the first a later link may be: its frames are interpolated up to the
  /// first link's rate, so a link 700 times slower would turn one packet into megabytes.
  static let maximumLinkRateRatio = 16

  /// Throws when a later link's `rate` is more than `maximumLinkRateRatio` times below `firstRate`.
  private static func checkLinkRate(_ rate: Int, firstRate: Int, what: String, path: String) throws(DecodeError) {
    guard rate * maximumLinkRateRatio < firstRate else { return }
    throw DecodeError(
      path: path,
      reason: .unsupported(
        "\(what) is at \(rate) Hz, more than \(maximumLinkRateRatio) times slower than the stream's \(firstRate) Hz"))
  }

  /// Opens `file` on `source` from its first byte; `seekable: false` gives libvorbisfile no seek
  /// callback, so it reads the stream linearly and never bisects.
  private static func open(
    _ file: UnsafeMutablePointer<OggVorbis_File>, source: FileByteSource, seekable: Bool
  ) -> Int32 {
    _ = source.seek(offset: 0, whence: SEEK_SET)
    let callbacks = ov_callbacks(
      read_func: { buffer, size, count, datasource in
        let source = Unmanaged<FileByteSource>.fromOpaque(datasource!).takeUnretainedValue()
        errno = 0
        let bytes = source.read(into: buffer!, count: size * count)
        // vorbisfile treats 0 with errno set as a read error, 0 with errno 0 as the end.
        if bytes < 0 { return 0 }
        return bytes / max(size, 1)
      },
      seek_func: seekable
        ? { datasource, offset, whence in
          let source = Unmanaged<FileByteSource>.fromOpaque(datasource!).takeUnretainedValue()
          return source.seek(offset: offset, whence: whence) < 0 ? -1 : 0
        } : nil,
      close_func: nil,  // FileByteSource closes its descriptor itself
      tell_func: seekable
        ? { datasource in
          let source = Unmanaged<FileByteSource>.fromOpaque(datasource!).takeUnretainedValue()
          return Int(source.seek(offset: 0, whence: SEEK_CUR))
        } : nil)
    let result = ov_open_callbacks(Unmanaged.passUnretained(source).toOpaque(), file, nil, 0, callbacks)
    // On failure ov_open_callbacks may have read headers; ov_clear is safe either way.
    if result != 0 { ov_clear(file) }
    return result
  }

  /// Reopens in streaming mode at frame 0. With `countingFrames`, first decodes the whole file
  /// once to learn its length (the streaming mode cannot know it otherwise).
  private func reopenLinear(countingFrames: Bool) throws(DecodeError) {
    ov_clear(file)
    let opened = Self.open(file, source: source, seekable: false)
    guard opened == 0 else { throw Self.error(opened, source: source, during: "reopening the damaged file") }
    isLinear = true
    poisoned = nil
    resetReadState()
    cursorFrames = 0
    guard countingFrames else { return }
    if let info = ov_info(file, -1) {
      try AudioFile.checkRate(Int(info.pointee.rate), path: source.path)
      links = [
        Link(
          sampleRate: Int(info.pointee.rate), channelCount: Int(info.pointee.channels), startInFile: 0,
          nativeFrames: 0, startInOutput: 0, outputFrames: 0)
      ]
      format = AudioFormat(sampleRate: Int(info.pointee.rate), channelCount: min(2, Int(info.pointee.channels)))
    }
    countingOnly = true
    defer { countingOnly = false }
    var scratch = [Float](repeating: 0, count: 4096 * 2)
    var total: Int64 = 0
    while true {
      let frames: Int
      do {
        frames = try scratch.withUnsafeMutableBufferPointer { (pointer) throws(DecodeError) -> Int in
          try readFrames(into: pointer.baseAddress!, frameCapacity: 4096)
        }
      } catch {
        break  // a hard error: the length is what came before it
      }
      if frames == 0 { break }
      total += Int64(frames)
    }
    lengthFrames = total
    warnings.append(
      isTruncated
        ? "the file is cut off (it does not end with a complete end-of-stream page): only \(total) frames "
          + "(\((Double(total) / Double(max(1, format.sampleRate)) * 1000).rounded() / 1000) s) are there, less than "
          + "it was made with; it ends early"
        : "the file is damaged: read linearly, \(total) frames")
    ov_clear(file)
    let reopened = Self.open(file, source: source, seekable: false)
    guard reopened == 0 else { throw Self.error(reopened, source: source, during: "reopening the damaged file") }
    resetReadState()
    cursorFrames = 0
  }

  /// Seeking in streaming mode: from the start, decoding up to the target.
  private func seekLinear(toFrame frame: Int64) throws(DecodeError) {
    try reopenLinear(countingFrames: false)
    var scratch = [Float](repeating: 0, count: 4096 * 2)
    while cursorFrames < frame {
      let want = Int(min(4096, frame - cursorFrames))
      let got = try scratch.withUnsafeMutableBufferPointer { (pointer) throws(DecodeError) -> Int in
        try readFrames(into: pointer.baseAddress!, frameCapacity: want)
      }
      if got == 0 { break }
    }
    reportedDamage = false
    holes = 0
  }

  private func resetReadState() {
    pending.removeAll(keepingCapacity: true)
    pendingStart = 0
    hasResampleHistory = false
    resamplePhase = 0
    currentLink = -1
    holes = 0
    reportedDamage = false
  }

  /// Rate and channels of `link`: from the table built at open, or, in streaming mode (which
  /// has no table), from the link being read now.
  private func linkInfo(_ link: Int32) -> Link? {
    if !isLinear { return Int(link) < links.count ? links[Int(link)] : nil }
    guard let info = ov_info(file, -1) else { return nil }
    return Link(
      sampleRate: Int(info.pointee.rate), channelCount: Int(info.pointee.channels), startInFile: 0, nativeFrames: 0,
      startInOutput: 0, outputFrames: 0)
  }

  /// Whether `page` (one whole Ogg page) carries the checksum of its bytes: libogg's own
  /// `ogg_page_checksum_set`, run on a copy.
  private static func hasValidChecksum(_ page: ArraySlice<UInt8>) -> Bool {
    var copy = Array(page)
    let stored = Array(copy[22..<26])
    let headerLength = 27 + Int(copy[26])
    return copy.withUnsafeMutableBufferPointer { bytes in
      var ogg = ogg_page(
        header: bytes.baseAddress, header_len: headerLength, body: bytes.baseAddress! + headerLength,
        body_len: bytes.count - headerLength)
      ogg_page_checksum_set(&ogg)
      return Array(bytes[22..<26]) == stored
    }
  }

  /// Whether the first Ogg page starts with a Vorbis identification header ("\u{1}vorbis").
  private static func beginsWithVorbisIdentification(_ source: FileByteSource) -> Bool {
    let head = source.bytes(at: 0, count: Int(min(source.sizeBytes, 300)))
    guard head.count > 27, head.starts(with: Array("OggS".utf8)) else { return false }
    let bodyStart = 27 + Int(head[26])
    return head.count >= bodyStart + 7 && head[bodyStart..<(bodyStart + 7)].elementsEqual(Array("\u{1}vorbis".utf8))
  }

  /// Whether the stream ends with a complete end-of-stream page. An encoder always writes one; a
  /// file cut off in transfer or on a full disk does not. The last whole page with a valid
  /// checksum counts: bytes after it that are not the start of another page (a tag some tool
  /// appended, padding) are not the stream's and do not make it cut off; they are ignored, as
  /// libvorbisfile ignores them.
  private static func endsWithEndOfStreamPage(_ source: FileByteSource) -> Bool {
    let tailLength = Int(min(source.sizeBytes, 65_536 + 282))
    let tailStart = source.sizeBytes - Int64(tailLength)
    let tail = source.bytes(at: tailStart, count: tailLength)
    var index = tail.count - 27
    var laterCapture = false
    while index >= 0 {
      defer { index -= 1 }
      guard tail[index] == 0x4F, tail[index + 1] == 0x67, tail[index + 2] == 0x67, tail[index + 3] == 0x53 else {
        continue
      }
      let segments = Int(tail[index + 26])
      let bodyStart = index + 27 + segments
      guard bodyStart <= tail.count else {
        laterCapture = true
        continue
      }
      let pageEnd = bodyStart + tail[(index + 27)..<bodyStart].reduce(0) { $0 + Int($1) }
      guard pageEnd <= tail.count, Self.hasValidChecksum(tail[index..<pageEnd]) else {
        // A page cut off by the file's end (or "OggS" inside other bytes).
        laterCapture = true
        continue
      }
      // The last whole page: complete if it ends the stream and no page was begun after it.
      return (tail[index + 5] & 0x04) != 0 && !laterCapture
    }
    return false
  }

  /// The single place libvorbisfile's codes become `DecodeError`s.
  private static func error(_ code: Int32, source: FileByteSource, during action: String) -> DecodeError {
    let path = source.path
    let reason: DecodeError.Reason
    // libvorbisfile says "not Vorbis" also when a Vorbis file's three headers are cut off or
    // damaged: its first packet, the identification header, tells the two apart.
    let identifies = code == OV_ENOTVORBIS && Self.beginsWithVorbisIdentification(source)
    switch code {
    case OV_EREAD: reason = .readFailed(errno: source.lastReadErrno ?? errno)
    case OV_ENOTVORBIS where identifies:
      reason = .truncated(
        "an Ogg Vorbis file whose headers are cut off or damaged (the file is \(source.sizeBytes) bytes): "
          + "no audio can be read")
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
