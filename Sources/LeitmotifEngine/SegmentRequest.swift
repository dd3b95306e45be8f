import FoundationEssentials
import LeitmotifDecoding
import LeitmotifOutput

/// What the loader needs to open one segment: the file, its trim points and its loop, asked for
/// by a player; the loader turns it into a `StreamSegment` (an open decoder and frame numbers).
package struct SegmentRequest: Sendable {
  var token: Int
  var path: String
  /// Trim points in seconds of the file (nil: the whole file).
  package var startSeconds: Double = 0
  package var endSeconds: Double?
  /// The loop: explicit points, or the file's LOOPSTART/LOOPLENGTH tags when `loopFromTags`.
  package var loopPoints: LoopPoints?
  var loopFromTags = true
  /// Jumps back from the loop's end; nil loops until released; 0 plays straight through.
  package var loopCount: Int? = 0
  /// Multiplies every decoded sample (1: unchanged).
  package var gain: Float = 1
  /// The files of the piece's other stems (layers), played sample-locked with `path` (see
  /// `StreamSegment.stems`). Each must have `path`'s sample rate.
  package var stemPaths: [String] = []

  package init(
    token: Int, path: String, startSeconds: Double = 0, endSeconds: Double? = nil, loopPoints: LoopPoints? = nil,
    loopFromTags: Bool = true, loopCount: Int? = 0, gain: Float = 1, stemPaths: [String] = []
  ) {
    self.stemPaths = stemPaths
    self.token = token
    self.path = path
    self.startSeconds = startSeconds
    self.endSeconds = endSeconds
    self.loopPoints = loopPoints
    self.loopFromTags = loopFromTags
    self.loopCount = loopCount
    self.gain = gain
  }

  /// Opens the file (its preloaded copy in `preloaded`, if it has a current one) and works out the
  /// frames. Runs on the loader (it does I/O). A preloaded file whose path now names another file
  /// streams from that file, and `stale` names it (the first time only).
  /// - Throws: `DecodeError`, with `.pointsOutsideFile` when trim or loop points do not fit.
  func open(preloaded: PreloadCache, stale: inout [String]) throws(DecodeError) -> StreamSegment {
    func openDecoder(_ path: String) throws(DecodeError) -> any AudioDecoder {
      var outdated = false
      if let decoder = preloaded.decoder(for: path, stale: &outdated) { return decoder }
      if outdated { stale.append(path) }
      return try AudioFile.openDecoder(path: path)
    }
    let decoder = try openDecoder(path)
    let rate = Double(decoder.format.sampleRate)
    let length = decoder.lengthFrames
    let start = FrameMath.frames(seconds: max(0, startSeconds), rate: rate)
    let end = endSeconds.map { FrameMath.frames(seconds: $0, rate: rate) } ?? length
    guard start <= length else {
      throw DecodeError(
        path: path,
        reason: .pointsOutsideFile("start time \(startSeconds) s is after the end (\(decoder.durationSeconds) s)"))
    }
    guard end <= length else {
      throw DecodeError(
        path: path,
        reason: .pointsOutsideFile("end time \(endSeconds ?? 0) s is after the end (\(decoder.durationSeconds) s)"))
    }
    guard start < end else {
      throw DecodeError(
        path: path, reason: .pointsOutsideFile("start time \(startSeconds) s is not before the end time"))
    }
    var loop: LoopRegion?
    if loopCount != 0 {
      if let points = loopPoints {
        loop = LoopRegion(start: points.startFrame, end: points.endFrame ?? length)
      } else if loopFromTags, let tagStart = decoder.tags.loopStartFrame {
        // A tagged loop too short to play (see LoopPoints.minimumFrames) is no loop.
        let tagEnd = decoder.tags.loopEndFrame ?? length
        if tagEnd - tagStart >= LoopPoints.minimumFrames { loop = LoopRegion(start: tagStart, end: tagEnd) }
      }
    }
    if let region = loop {
      guard region.start >= 0, region.end <= length, region.end - region.start >= LoopPoints.minimumFrames else {
        throw DecodeError(
          path: path,
          reason: .pointsOutsideFile(
            "loop \(region.start)..<\(region.end) (frames) must be at least \(LoopPoints.minimumFrames) frames long and inside the file's \(length) frames"
          ))
      }
    }
    if start > 0 { try decoder.seek(toFrame: start) } else { try decoder.prepareForDecoding() }
    var stems: [any AudioDecoder] = []
    for stemPath in stemPaths {
      let stem = try openDecoder(stemPath)
      guard stem.format.sampleRate == decoder.format.sampleRate else {
        throw DecodeError(
          path: stemPath,
          reason: .unsupported(
            "a layer must have its music's sample rate: it is \(stem.format.sampleRate) Hz, \(FileSystemPath.displayed(FileSystemPath.lastComponent(path))) is \(decoder.format.sampleRate) Hz"
          ))
      }
      if start > 0 && start < stem.lengthFrames { try stem.seek(toFrame: start) } else { try stem.prepareForDecoding() }
      stems.append(stem)
    }
    return StreamSegment(
      token: token, decoder: decoder, startFrame: start, endFrame: end, loop: loop, loopCount: loopCount, gain: gain,
      stems: stems)
  }
}
