import LeitmotifDecoding

/// The decode thread's resampling of a stream whose file rate is not the mix rate: decoded
/// blocks (file rate) go in, mix-rate blocks come out, each still saying which segment, which
/// pass and which file frame (fractional now) it shows, so the mixer reads them as it reads
/// unresampled ones.
///
/// The resampler runs on across gapless joins and loop seams, as one signal (a join stays
/// seamless; the frames near it mix both sides within the filter's reach, as any resampler's
/// would). What each output frame shows is kept by markers: each records where in the
/// resampler's input a run of contiguous file frames of one segment and pass begins. Output
/// frame j shows input time j × input rate / output rate (soxr is time-aligned), so it belongs
/// to the last marker at or before that time, and a block never spans two markers: a block is
/// one segment, one pass, one run of frames, as `DecodeAheadStream.Block` promises.
///
/// The signal ends (and soxr gives out what it still holds) before the stream declares itself
/// drained, and after a failure; a seek starts a new signal.
///
/// Decode thread only (made on the loader, then handed over with its stream).
final class RateConversionStage {
  struct Marker {
    /// Where the run starts, in input frames since the signal began.
    var inputIndex: Int64
    var fileFrame: Int64
    var token: Int
    var segmentStart: Int64
    var segmentEnd: Int64
    var finalPass: Bool
    var pass: Int
    var loop: LoopRegion?
  }

  /// A block of output, valid until the next call on the stage.
  struct Output {
    var samples: UnsafePointer<Float>
    var frames: Int
    /// The file frame the first output frame shows (fractional).
    var position: Double
    var marker: Marker
  }

  let converter: FixedRateConverter
  /// One block of decoded input (stereo, file rate): the decode thread decodes into it.
  let input: UnsafeMutablePointer<Float>
  private let output: UnsafeMutablePointer<Float>
  private let outputCapacity: Int
  private var inputFrames = 0
  private var inputTaken = 0
  private var pendingOffset = 0
  private var pendingFrames = 0
  /// Output frames given out since the signal began (the index of the next pending frame).
  private var outputIndex: Int64 = 0
  /// Input frames staged since the signal began.
  private var inputIndex: Int64 = 0
  private var markers: [Marker] = []
  private var flushing = false
  /// Flushing, and soxr has given out all it held: what is pending is the signal's last.
  private var signalOut = false
  private var failure: (DecodeError, Marker)?

  /// The frames of a whole block of output.
  private let blockFrames: Int

  /// `input` holds `blockFrames` frames; `output` holds `outputCapacity` frames (both stereo), at
  /// least three blocks: what waits for the next input (less than a block) leaves room for at
  /// least two blocks of new output.
  init(
    converter: FixedRateConverter, blockFrames: Int, input: UnsafeMutablePointer<Float>,
    output: UnsafeMutablePointer<Float>, outputCapacity: Int
  ) {
    precondition(outputCapacity >= 3 * blockFrames)
    self.converter = converter
    self.blockFrames = blockFrames
    self.input = input
    self.output = output
    self.outputCapacity = outputCapacity
    markers.reserveCapacity(8)
  }

  /// Something is to come out (or to be made) before the stage takes new input. Output short of
  /// a whole block waits for the next input, so the ring's blocks stay full (a ring of short
  /// blocks would hold less time); only a marker's start or the signal's end cuts one short.
  var hasWork: Bool {
    pendingFrames >= blockFrames || inputTaken < inputFrames || flushing || boundaryPending != nil
  }

  /// Input went in since the signal began: it must be let out (`finish`) before the stream can
  /// say it has nothing more.
  var holdsSignal: Bool { inputIndex > 0 }

  /// A seek: forgets everything, the next input starts a new signal.
  func reset() {
    converter.clear()
    clearCounts()
    failure = nil
  }

  /// Takes the `frames` decoded into `input`, showing file frames from `fileFrame` of segment
  /// `token`, in pass `pass` (its final one or not, with the loop it jumps back from).
  func stage(
    frames: Int, fileFrame: Int64, token: Int, segmentStart: Int64, segmentEnd: Int64, finalPass: Bool,
    pass: Int = 0, loop: LoopRegion? = nil
  ) {
    guard frames > 0 else { return }
    let continues =
      markers.last.map {
        $0.token == token && $0.finalPass == finalPass && $0.pass == pass && $0.segmentEnd == segmentEnd
          && $0.segmentStart == segmentStart && $0.fileFrame + (inputIndex - $0.inputIndex) == fileFrame
      } ?? false
    if !continues {
      markers.append(
        Marker(
          inputIndex: inputIndex, fileFrame: fileFrame, token: token, segmentStart: segmentStart,
          segmentEnd: segmentEnd, finalPass: finalPass, pass: pass, loop: loop))
    }
    inputIndex += Int64(frames)
    inputFrames = frames
    inputTaken = 0
  }

  /// Ends the signal: what soxr holds comes out with the next steps. With `failure`, the stream
  /// reports it (for segment `token`) once that is out.
  func finish(failure newFailure: DecodeError? = nil, token: Int = 0, segmentStart: Int64 = 0, segmentEnd: Int64 = 0) {
    flushing = true
    if let newFailure {
      failure = (
        newFailure,
        Marker(
          inputIndex: inputIndex, fileFrame: segmentEnd, token: token, segmentStart: segmentStart,
          segmentEnd: segmentEnd, finalPass: true, pass: 0, loop: nil)
      )
    }
  }

  /// Where the next marker's run begins within the pending output (in frames from its first
  /// pending frame), if it does.
  private var boundaryPending: Int? {
    guard pendingFrames > 0 else { return nil }
    while markers.count > 1 && firstOutput(of: markers[1]) <= outputIndex { markers.removeFirst() }
    guard markers.count > 1 else { return nil }
    let distance = firstOutput(of: markers[1]) - outputIndex
    return distance < Int64(pendingFrames) ? Int(distance) : nil
  }

  /// The next block of output: a whole block, or the rest of a marker's run, or, as the signal
  /// ends, what is left; nil when none is ready (then `advance`).
  func nextOutput() -> Output? {
    guard pendingFrames > 0, !markers.isEmpty else { return nil }
    let boundary = boundaryPending
    guard boundary != nil || pendingFrames >= blockFrames || signalOut else {
      return nil
    }
    let index = outputIndex
    let marker = markers[0]
    let frames = min(pendingFrames, blockFrames, boundary ?? Int.max)
    let rateIn = Int64(converter.inputRate)
    let rateOut = Int64(converter.outputRate)
    // Input time of output frame `index`, less the marker's start, over the output rate: exact
    // in integers, then one division.
    let position =
      Double(marker.fileFrame) + Double(index * rateIn - marker.inputIndex * rateOut) / Double(rateOut)
    let samples = UnsafePointer(output + 2 * pendingOffset)
    pendingOffset += frames
    pendingFrames -= frames
    outputIndex += Int64(frames)
    return Output(samples: samples, frames: frames, position: position, marker: marker)
  }

  /// Runs the resampler once, with no block ready (what is pending, less than a block, moves to
  /// the front and the new output follows it): on the staged input, or, when the signal ends, on
  /// nothing (soxr gives out what it holds). When an ending is complete, the stage is ready for
  /// a new signal, and a failure that ended it comes back to be reported.
  func advance() -> (DecodeError, Marker)? {
    if pendingOffset > 0 {
      // What waits for more goes to the front, and the new output follows it.
      if pendingFrames > 0 {
        // The two may overlap: a move, as memmove makes it.
        UnsafeMutableRawPointer(output).copyMemory(
          from: output + 2 * pendingOffset, byteCount: 2 * pendingFrames * MemoryLayout<Float>.stride)
      }
      pendingOffset = 0
    }
    let room = output + 2 * pendingFrames
    let capacity = outputCapacity - pendingFrames
    if inputTaken < inputFrames {
      let (taken, made) = converter.process(
        input: input + 2 * inputTaken, frames: inputFrames - inputTaken, into: room, capacity: capacity)
      // soxr failed (it took nothing and made nothing, with room): drop the input rather than
      // spin on it.
      inputTaken = taken == 0 && made == 0 ? inputFrames : inputTaken + taken
      pendingFrames += made
      return nil
    }
    guard flushing else { return nil }
    if !signalOut {
      let (_, made) = converter.process(input: nil, frames: 0, into: room, capacity: capacity)
      pendingFrames += made
      signalOut = made == 0
    }
    guard signalOut && pendingFrames == 0 else { return nil }
    // Everything is out: a fresh signal next.
    converter.clear()
    clearCounts()
    let ended = failure
    failure = nil
    return ended
  }

  private func clearCounts() {
    inputFrames = 0
    inputTaken = 0
    pendingOffset = 0
    pendingFrames = 0
    outputIndex = 0
    inputIndex = 0
    markers.removeAll(keepingCapacity: true)
    flushing = false
    signalOut = false
  }

  /// The first output frame that shows the marker's run: ceil(input index × out / in).
  private func firstOutput(of marker: Marker) -> Int64 {
    let rateIn = Int64(converter.inputRate)
    return (marker.inputIndex * Int64(converter.outputRate) + rateIn - 1) / rateIn
  }
}
