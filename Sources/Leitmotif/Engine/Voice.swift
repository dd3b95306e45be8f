#if canImport(Glibc)
  import Glibc
#endif

/// A playing instance of one file: its decode-ahead stream, an OpenAL source with its buffers,
/// and the transport (playing, paused, fades, seeks, scans).
///
/// Streaming-thread only. Rules for everything in here (the loop's rules, see `StreamingLoop`):
/// no locks, no allocation once attached, no decoding or file reads (the stream's own thread does
/// those), and every gain change is stepped from the device clock because OpenAL 1.19 only ramps
/// within one mix.
final class Voice {
  /// Frames per OpenAL buffer. 4096 frames is 85 ms at 48 kHz: large enough that one decode call
  /// per buffer is cheap, small enough that a refill never takes long.
  static let framesPerBuffer = 4096
  /// Buffers per source: 4 x 85 ms keeps about a third of a second queued, which rides out a
  /// late pump on a busy machine while seeks and pauses stay immediate (they go through gain).
  static let bufferCount = 4
  /// Pause, stop and seek ramp the gain over at least this long (click-free; the issue asks >= 5 ms).
  static let transportFadeSeconds = 0.010

  let slot: Int
  let status: VoiceStatus
  private(set) var source: StreamingSource
  let stream: DecodeAheadStream
  var format: AudioFormat { stream.format }
  /// Offline engines wait (bounded) for the decode thread; the real-time streaming thread never does.
  private let decodeWaitSeconds: Double
  private var generation = 0
  /// The frame the next decoded block starts at (the position when nothing is queued).
  private var nextFrame: Int64

  // Start frame and length of each queued buffer, oldest first (a fixed ring: no allocation).
  private var queuedStart = [Int64](repeating: 0, count: Voice.bufferCount)
  private var queuedLength = [Int](repeating: 0, count: Voice.bufferCount)
  private var queuedHead = 0
  private var queuedCount = 0

  private var decoderEnded = false
  private(set) var failure: DecodeError?

  enum Mode: Equatable {
    /// Buffers queued, source not started (or stopped/paused at a position). `paused` means the
    /// position is somewhere in the middle and a resume should fade in.
    case ready(resumeFades: Bool)
    case playing
    /// Gain ramping to 0; then the pending action runs.
    case fadingOut
    case ended
  }
  private(set) var mode: Mode = .ready(resumeFades: false)

  enum PendingAction: Equatable {
    case pause
    case stop
    case seek(frame: Int64, thenPlay: Bool)
  }
  private var pendingAction: PendingAction?

  // Gain: `volume` times the transport ramp. The ramp goes from `rampFrom` to `rampTo` between
  // two device-clock times; `zeroGainSince` is the clock when a gain of 0 was handed to OpenAL.
  var volume: Float = 1
  private var rampFrom: Float = 1
  private var rampTo: Float = 1
  private var rampStartNanoseconds: Int64 = 0
  private var rampDurationNanoseconds: Int64 = 0
  private var zeroGainSince: Int64?
  private var holdGainThisPump = false
  /// Play was asked for while nothing was queued yet (right after a seek, the decode thread is
  /// still on its way): the source starts when the first buffer is in, and that is no underrun.
  private var awaitingData = false
  private(set) var rate: Float = 1

  // Scanning (beginSeekingForward/Backward): jumps that grow the longer the scan runs.
  private var scanDirection = 0
  private var scanStartedNanoseconds: Int64 = 0
  private var lastScanJumpNanoseconds: Int64 = 0

  init(slot: Int, status: VoiceStatus, source: StreamingSource, loaded: LoadedStream, waitForDecoding: Bool) {
    self.slot = slot
    self.status = status
    self.source = source
    self.stream = loaded.stream
    decodeWaitSeconds = waitForDecoding ? 10 : 0
    nextFrame = loaded.startFrame
    // Starting mid-file fades in, like a resume: the first sample may be far from zero.
    mode = .ready(resumeFades: loaded.startFrame > 0)
    status.lengthFrames.store(stream.lengthFrames, ordering: .releasing)
    status.sampleRate.store(stream.format.sampleRate, ordering: .releasing)
    refill()
    publishPosition()
  }

  deinit { stream.stop() }

  // MARK: - Transport (called by the loop for commands)

  func play(clock: Int64) {
    switch mode {
    case .ready(let resumeFades):
      if resumeFades {
        // Start silent and ramp up from the next pump: a source's first mix after play is not
        // ramped by OpenAL, so it must begin at gain 0.
        source.setGain(0)
        startRamp(from: 0, to: 1, clock: clock)
        holdGainThisPump = true
      } else {
        rampFrom = 1
        rampTo = 1
        rampDurationNanoseconds = 0
        source.setGain(volume)
      }
      zeroGainSince = nil
      source.setPitch(rate)
      if queuedCount > 0 {
        source.play()
      } else {
        awaitingData = true
        source.setGain(0)
        startRamp(from: 0, to: 1, clock: clock)
        holdGainThisPump = true
      }
      mode = .playing
    case .fadingOut:
      // Changed its mind mid-fade: fade back in from where the gain is, keep any pending seek.
      if case .seek(let frame, _) = pendingAction {
        pendingAction = .seek(frame: frame, thenPlay: true)
      } else {
        pendingAction = nil
        startRamp(from: rampGain(at: clock), to: 1, clock: clock)
        mode = .playing
      }
    case .ended:
      // Played to its end: like MediaPlayer, play again from the beginning.
      performStop()
      play(clock: clock)
    case .playing: break
    }
  }

  func pause(clock: Int64) {
    switch mode {
    case .playing: fadeOut(then: .pause, clock: clock)
    case .fadingOut:
      if case .seek(let frame, _) = pendingAction { pendingAction = .seek(frame: frame, thenPlay: false) }
    case .ready, .ended: break
    }
  }

  func stop(clock: Int64) {
    scanDirection = 0
    switch mode {
    case .playing, .fadingOut: fadeOut(then: .stop, clock: clock)
    case .ready, .ended: performStop()
    }
  }

  /// Seconds are turned into the frame nearest to them: `Double(n) / rate` gives frame n exactly.
  func seek(toSeconds seconds: Double, clock: Int64) {
    let frame = seconds.isFinite ? Int64((seconds * Double(stream.format.sampleRate)).rounded()) : 0
    seek(toFrame: frame, clock: clock)
  }

  func seek(toFrame frame: Int64, clock: Int64) {
    let target = max(0, min(frame, stream.lengthFrames))
    switch mode {
    case .playing: fadeOut(then: .seek(frame: target, thenPlay: true), clock: clock)
    case .fadingOut:
      let resume: Bool
      switch pendingAction {
      case .seek(_, let thenPlay): resume = thenPlay
      case .pause, .stop: resume = false
      case nil: resume = true
      }
      pendingAction = .seek(frame: target, thenPlay: resume)
    case .ready(let resumeFades):
      if target == positionFrames && (queuedCount > 0 || decoderEnded) {
        // Already there (the loader opened the file at this very frame): no flush, no decoding
        // the same blocks twice.
        mode = .ready(resumeFades: resumeFades || target > 0)
      } else {
        performSeek(to: target, resumeFades: resumeFades || target > 0)
      }
    case .ended: performSeek(to: target, resumeFades: target > 0)
    }
  }

  func setRate(_ newRate: Float) {
    rate = newRate
    source.setPitch(newRate)
  }

  func setVolume(_ newVolume: Float) { volume = max(0, min(1, newVolume)) }

  func scan(direction: Int, clock: Int64) {
    scanDirection = direction
    scanStartedNanoseconds = clock
    lastScanJumpNanoseconds = clock
  }

  // MARK: - The pump

  /// One streaming step. `lookaheadNanoseconds` is how far ahead the next mix reaches: gains are
  /// set for the end of the coming mix so OpenAL's per-mix ramp lands on the curve.
  /// Returns an event worth reporting, if any.
  func pump(clock: Int64, lookaheadNanoseconds: Int64, settleNanoseconds: Int64) -> EngineEvent? {
    var event: EngineEvent?
    let released = source.unqueueProcessed()
    for _ in 0..<released { dropQueuedHead() }
    if mode != .ended { refill() }

    switch mode {
    case .playing:
      if awaitingData {
        guard queuedCount > 0 else { break }
        awaitingData = false
        source.play()
      }
      if holdGainThisPump {
        holdGainThisPump = false
        rampStartNanoseconds = clock + lookaheadNanoseconds
      } else {
        source.setGain(volume * rampGain(at: clock + lookaheadNanoseconds))
      }
      if source.state != .playing {
        if queuedCount > 0 {
          // Underrun: the source ran dry and stopped while we still had buffers to give it.
          source.play()
          status.underruns.add(1, ordering: .relaxed)
          event = .underrun(slot: slot)
        } else if decoderEnded {
          mode = .ended
          event = failure.map { .failed(slot: slot, $0) } ?? .ended(slot: slot)
        }
      }
      if scanDirection != 0 { scanStep(clock: clock) }
    case .fadingOut:
      let gain = rampGain(at: clock + lookaheadNanoseconds)
      source.setGain(volume * gain)
      if gain <= 0 {
        if let since = zeroGainSince {
          if clock - since >= settleNanoseconds { runPendingAction(clock: clock) }
        } else {
          zeroGainSince = clock
        }
      }
      if source.state != .playing && queuedCount == 0 && decoderEnded {
        runPendingAction(clock: clock)
      }
    case .ready, .ended: break
    }
    publishPosition()
    return event
  }

  /// The frame being heard: the oldest queued buffer's start plus the source's offset into it.
  func publishPosition() {
    let position: Int64
    if queuedCount > 0 {
      let offset = Int64(source.sampleOffset)
      position = min(queuedStart[queuedHead] + offset, stream.lengthFrames)
    } else {
      position = decoderEnded ? stream.lengthFrames : nextFrame
    }
    status.positionFrames.store(position, ordering: .releasing)
  }

  var positionFrames: Int64 { status.positionFrames.load(ordering: .relaxed) }

  /// Moves this voice to a new device (after a disconnect): a new source, refilled from where
  /// the old one was heard, fading back in if it was playing.
  func move(to newSource: StreamingSource, clock: Int64) {
    let position = positionFrames
    let wasPlaying = mode == .playing || (mode == .fadingOut && pendingAction != .pause && pendingAction != .stop)
    source = newSource
    queuedCount = 0
    queuedHead = 0
    reposition(to: position)
    mode = .ready(resumeFades: true)
    pendingAction = nil
    source.setPitch(rate)
    if wasPlaying { play(clock: clock) }
  }

  // MARK: - Internals

  private func fadeOut(then action: PendingAction, clock: Int64) {
    if awaitingData {
      // Nothing was heard yet: no fade needed, act at once.
      awaitingData = false
      pendingAction = action
      runPendingAction(clock: clock)
      return
    }
    pendingAction = action
    startRamp(from: rampGain(at: clock), to: 0, clock: clock)
    zeroGainSince = nil
    mode = .fadingOut
  }

  private func runPendingAction(clock: Int64) {
    let action = pendingAction
    pendingAction = nil
    zeroGainSince = nil
    switch action {
    case .pause, nil:
      source.pause()
      mode = .ready(resumeFades: true)
    case .stop:
      performStop()
    case .seek(let frame, let thenPlay):
      performSeek(to: frame, resumeFades: true)
      if thenPlay { play(clock: clock) }
    }
  }

  private func performStop() {
    scanDirection = 0
    reposition(to: 0)
    mode = .ready(resumeFades: false)
  }

  private func performSeek(to frame: Int64, resumeFades: Bool) {
    reposition(to: frame)
    mode = .ready(resumeFades: resumeFades)
  }

  /// Throws away what is queued, moves the stream, and refills: used by stop, seek and recovery.
  private func reposition(to frame: Int64) {
    source.flush()
    queuedCount = 0
    queuedHead = 0
    decoderEnded = false
    failure = nil
    generation = stream.requestSeek(toFrame: frame)
    nextFrame = frame
    refill()
    publishPosition()
  }

  /// Queues decoded blocks while OpenAL has free buffers. Blocks from before the last seek are
  /// dropped; the end-of-stream block records how the item ended.
  private func refill() {
    while !decoderEnded && source.freeBufferCount > 0 {
      guard let block = stream.peek(waitSeconds: decodeWaitSeconds) else {
        if decodeWaitSeconds > 0 {
          // Offline only: the decode thread gave nothing for seconds. End rather than hang.
          failure = DecodeError(path: stream.path, reason: .unsupported("the decoder stopped answering"))
          decoderEnded = true
        }
        break
      }
      defer { stream.release() }
      guard block.generation == generation else { continue }
      if block.frames > 0 {
        enqueue(block.samples, frames: block.frames, startFrame: block.startFrame)
        nextFrame = block.startFrame + Int64(block.frames)
      }
      if block.isEnd {
        decoderEnded = true
        failure = block.error
      }
    }
  }

  private func enqueue(_ samples: UnsafePointer<Float>, frames: Int, startFrame: Int64) {
    guard frames > 0, source.queue(stereo: samples, frameCount: frames, sampleRate: stream.format.sampleRate) else {
      return
    }
    let index = (queuedHead + queuedCount) % Voice.bufferCount
    queuedStart[index] = startFrame
    queuedLength[index] = frames
    queuedCount += 1
  }

  private func dropQueuedHead() {
    guard queuedCount > 0 else { return }
    queuedHead = (queuedHead + 1) % Voice.bufferCount
    queuedCount -= 1
  }

  private func startRamp(from: Float, to: Float, clock: Int64) {
    rampFrom = from
    rampTo = to
    rampStartNanoseconds = clock
    rampDurationNanoseconds = Int64(Voice.transportFadeSeconds * 1e9)
  }

  private func rampGain(at time: Int64) -> Float {
    guard rampDurationNanoseconds > 0 else { return rampTo }
    let progress = Float(max(0, min(1, Double(time - rampStartNanoseconds) / Double(rampDurationNanoseconds))))
    return rampFrom + (rampTo - rampFrom) * progress
  }

  /// One jump of a scan: every quarter second, move by a distance that doubles each second the
  /// scan has run (2x, 4x, 8x, up to 16x speed), forward or backward.
  private func scanStep(clock: Int64) {
    let interval: Int64 = 250_000_000
    guard clock - lastScanJumpNanoseconds >= interval else { return }
    lastScanJumpNanoseconds = clock
    let elapsedSeconds = Double(clock - scanStartedNanoseconds) / 1e9
    let speed = min(16, Glibc.exp2(1 + elapsedSeconds))
    let rate = Double(stream.format.sampleRate)
    let jumpFrames = Int64(speed * 0.25 * rate)
    let position = positionFrames
    let target = scanDirection > 0 ? position + jumpFrames : position - jumpFrames - Int64(0.25 * rate)
    if target >= stream.lengthFrames {
      scanDirection = 0
      return
    }
    seek(toFrame: max(0, target), clock: clock)
  }
}
