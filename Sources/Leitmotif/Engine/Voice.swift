/// A playing instance of one decoded file: a decoder, an OpenAL source with its buffers, and the
/// transport (playing, paused, fades, seeks, scans).
///
/// Streaming-thread only. Rules for everything in here (the loop's rules, see `StreamingLoop`):
/// no locks, no allocation once attached (scratch buffers are sized up front), and every gain
/// change is stepped from the device clock because OpenAL 1.19 only ramps within one mix.
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
  let decoder: any AudioDecoder
  var format: AudioFormat { decoder.format }

  // Start frame and length of each queued buffer, oldest first (a fixed ring: no allocation).
  private var queuedStart = [Int64](repeating: 0, count: Voice.bufferCount)
  private var queuedLength = [Int](repeating: 0, count: Voice.bufferCount)
  private var queuedHead = 0
  private var queuedCount = 0

  private var decodeScratch: [Float]
  private var stereoScratch: [Float]
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
  private(set) var rate: Float = 1

  // Scanning (beginSeekingForward/Backward): jumps that grow the longer the scan runs.
  private var scanDirection = 0
  private var scanStartedNanoseconds: Int64 = 0
  private var lastScanJumpNanoseconds: Int64 = 0

  init(slot: Int, status: VoiceStatus, source: StreamingSource, stream: LoadedStream) {
    self.slot = slot
    self.status = status
    self.source = source
    self.decoder = stream.decoder
    decodeScratch = [Float](repeating: 0, count: Voice.framesPerBuffer * 2)
    stereoScratch = [Float](repeating: 0, count: Voice.framesPerBuffer * 2)
    status.lengthFrames.store(stream.decoder.lengthFrames, ordering: .releasing)
    status.sampleRate.store(stream.decoder.format.sampleRate, ordering: .releasing)
    var frame = stream.startFrame
    for block in stream.blocks {
      let frames = block.count / 2
      block.withUnsafeBufferPointer { enqueue($0.baseAddress!, frames: frames, startFrame: frame) }
      frame += Int64(frames)
    }
    if stream.blocks.count < Voice.bufferCount || stream.endedEarly != nil { decoderEnded = true }
    failure = stream.endedEarly
    publishPosition()
  }

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
      source.play()
      mode = .playing
    case .fadingOut:
      // Changed its mind mid-fade: fade back in from where the gain is, keep any pending seek.
      if case .seek(let frame, _) = pendingAction {
        pendingAction = .seek(frame: frame, thenPlay: true)
      } else {
        pendingAction = nil
        startRamp(from: currentRampGain(at: clock), to: 1, clock: clock)
        mode = .playing
      }
    case .playing, .ended: break
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
    let frame = seconds.isFinite ? Int64((seconds * Double(decoder.format.sampleRate)).rounded()) : 0
    seek(toFrame: frame, clock: clock)
  }

  func seek(toFrame frame: Int64, clock: Int64) {
    let target = max(0, min(frame, decoder.lengthFrames))
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
    case .ready(let resumeFades): performSeek(to: target, resumeFades: resumeFades || target > 0)
    case .ended: performSeek(to: target, resumeFades: false)
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
      if scanDirection != 0 { event = scanStep(clock: clock) ?? event }
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
      position = min(queuedStart[queuedHead] + offset, decoder.lengthFrames)
    } else {
      position = decoderEnded ? decoder.lengthFrames : decoder.cursorFrames
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
    pendingAction = action
    startRamp(from: currentRampGain(at: clock), to: 0, clock: clock)
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

  /// Throws away what is queued, moves the decoder, and refills: used by stop, seek and recovery.
  private func reposition(to frame: Int64) {
    source.flush()
    queuedCount = 0
    queuedHead = 0
    decoderEnded = false
    failure = nil
    do {
      try decoder.seek(toFrame: frame)
    } catch {
      failure = error
      decoderEnded = true
    }
    refill()
    publishPosition()
  }

  private func refill() {
    while !decoderEnded && source.freeBufferCount > 0 {
      let startFrame = decoder.cursorFrames
      let frames: Int
      do {
        frames = try decodeScratch.withUnsafeMutableBufferPointer { (pointer) throws(DecodeError) -> Int in
          try decoder.readFrames(into: pointer.baseAddress!, frameCapacity: Voice.framesPerBuffer)
        }
      } catch {
        // The item ends early here: what is queued plays out, then the failure is reported.
        failure = error
        decoderEnded = true
        break
      }
      if frames == 0 {
        decoderEnded = true
        let missing = decoder.lengthFrames - decoder.cursorFrames
        if missing > 0 {
          // Damage swallowed part of the stream (a hole, a lost sync, a truncated file): the
          // item ends early, and says so.
          failure = DecodeError(
            path: decoder.path,
            reason: .truncated("the stream ended at frame \(decoder.cursorFrames), \(missing) frames before its end"))
        }
        break
      }
      let channels = decoder.format.channelCount
      if channels == 2 {
        decodeScratch.withUnsafeBufferPointer { enqueue($0.baseAddress!, frames: frames, startFrame: startFrame) }
      } else {
        for frame in 0..<frames {
          stereoScratch[2 * frame] = decodeScratch[frame]
          stereoScratch[2 * frame + 1] = decodeScratch[frame]
        }
        stereoScratch.withUnsafeBufferPointer { enqueue($0.baseAddress!, frames: frames, startFrame: startFrame) }
      }
    }
  }

  private func enqueue(_ samples: UnsafePointer<Float>, frames: Int, startFrame: Int64) {
    guard frames > 0, source.queue(stereo: samples, frameCount: frames, sampleRate: decoder.format.sampleRate) else {
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

  private func currentRampGain(at clock: Int64) -> Float { rampGain(at: clock) }

  /// One jump of a scan: every quarter second, move by a distance that doubles each second the
  /// scan has run (2x, 4x, 8x, up to 16x speed), forward or backward.
  private func scanStep(clock: Int64) -> EngineEvent? {
    let interval: Int64 = 250_000_000
    guard clock - lastScanJumpNanoseconds >= interval else { return nil }
    lastScanJumpNanoseconds = clock
    let elapsedSeconds = Double(clock - scanStartedNanoseconds) / 1e9
    let speed = min(16, pow2(1 + elapsedSeconds))
    let jumpFrames = Int64(speed * 0.25 * Double(decoder.format.sampleRate))
    let position = positionFrames
    let target = scanDirection > 0 ? position + jumpFrames : position - jumpFrames - Int64(0.25 * Double(decoder.format.sampleRate))
    if target >= decoder.lengthFrames {
      scanDirection = 0
      return nil
    }
    seek(toFrame: max(0, target), clock: clock)
    return nil
  }

  private func pow2(_ exponent: Double) -> Double {
    var result = 1.0
    var remaining = exponent
    while remaining >= 1 {
      result *= 2
      remaining -= 1
    }
    return result * (1 + remaining)
  }
}
