#if canImport(Glibc)
  import Glibc
#endif

/// A playing instance: its decode-ahead stream (one or more segments joined gaplessly), an OpenAL
/// source with its buffers, the transport (playing, paused, fades, seeks, scans), and the
/// crossfade envelope and hand-over that let a queue move on to a second voice.
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

  /// The voice's identity in the pool: its events name it, so a late one reaches no other owner.
  let handle: VoiceHandle
  /// Where the voice publishes its state; a released voice that fades out among the dying gets
  /// a detached one, so it no longer writes over its slot's next owner.
  var status: VoiceStatus
  private(set) var source: StreamingSource
  let stream: DecodeAheadStream
  var format: AudioFormat { stream.format }
  private var sampleRate: Int { stream.format.sampleRate }
  /// Offline engines wait (bounded) for the decode thread; the real-time streaming thread never does.
  private let decodeWaitSeconds: Double
  private var generation = 0
  /// The frame the next decoded block starts at (the position when nothing is queued), and the
  /// segment it belongs to.
  private var nextFrame: Int64
  private var nextToken: Int
  private var nextSegmentEnd: Int64 = 0

  /// What each queued buffer holds, oldest first (a fixed ring: no allocation).
  private struct Queued {
    var start: Int64 = 0
    var length = 0
    var token = 0
    var segmentStart: Int64 = 0
    var segmentEnd: Int64 = 0
    var finalPass = true
  }
  private var queued = [Queued](repeating: Queued(), count: Voice.bufferCount)
  private var queuedHead = 0
  private var queuedCount = 0
  /// The segment heard last (to notice a gapless join becoming audible).
  private(set) var audibleToken: Int

  /// The stream has played out (for now: an appended segment revives it while audio is queued).
  private var decoderEnded = false
  /// The last segment's failure, reported when the voice ends (or, if the stream goes on, as a
  /// `.segmentFailed` for `failedToken`).
  private(set) var failure: DecodeError?
  private var failedToken = 0

  /// Crossfades: the envelope multiplies the transport gain. `finishWhenSilent` makes a fade to 0
  /// end the voice (it is let go), reported as `.fadedOut`.
  private var envelope = GainEnvelope.unity
  private var finishWhenSilent = false
  private var reportedFadedOut = false
  /// A hand-over to another voice, armed by the queue: when the segment `token` is in its final
  /// pass and `seconds` (of output) from its end, the loop starts `follower` and fades this out.
  struct Handoff {
    var follower: VoiceHandle
    var token: Int
    var seconds: Double
    var curve: FadeCurve
  }
  var handoff: Handoff?

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

  /// Where a seek goes: a frame of one segment.
  struct Target: Equatable {
    var token: Int
    var frame: Int64
    var keepFollowing = true
  }

  enum PendingAction: Equatable {
    case pause
    case stop
    case seek(Target, thenPlay: Bool)
    /// Seek to wherever the fade-out ended, dropping what followed (see `resync`).
    case resync
  }
  private var pendingAction: PendingAction?

  // Gain: `volume` times the transport ramp times the crossfade envelope. The ramp is linear
  // over `transportFadeSeconds`; `zeroGainSince` is the clock when a gain of 0 reached OpenAL.
  var volume: Float = 1
  private var ramp = GainEnvelope.unity
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

  init(handle: VoiceHandle, status: VoiceStatus, source: StreamingSource, loaded: LoadedStream, waitForDecoding: Bool) {
    self.handle = handle
    self.status = status
    self.source = source
    self.stream = loaded.stream
    decodeWaitSeconds = waitForDecoding ? 10 : 0
    nextFrame = loaded.startFrame
    nextToken = loaded.stream.firstToken
    nextSegmentEnd = loaded.stream.firstSegmentEnd
    audibleToken = loaded.stream.firstToken
    // Starting mid-file fades in, like a resume: the first sample may be far from zero.
    mode = .ready(resumeFades: loaded.startFrame > 0)
    status.sampleRate.store(stream.format.sampleRate, ordering: .releasing)
    status.isLetGo.store(false, ordering: .releasing)
    deferredEvents.reserveCapacity(8)
    refill(events: &deferredEvents)
    audibleSegmentEnd = queuedCount > 0 ? queued[queuedHead].segmentEnd : nextSegmentEnd
    status.lengthFrames.store(audibleSegmentEnd, ordering: .releasing)
    status.token.store(audibleToken, ordering: .releasing)
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
        ramp = .unity
        source.setGain(currentGain(at: clock))
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
      if case .seek(let target, _) = pendingAction {
        pendingAction = .seek(target, thenPlay: true)
      } else if pendingAction == .resync {
        break
      } else {
        pendingAction = nil
        startRamp(from: ramp.gain(at: clock), to: 1, clock: clock)
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
      if case .seek(let target, _) = pendingAction { pendingAction = .seek(target, thenPlay: false) }
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

  /// Seeks within the segment being heard. `keepFollowing: false` also drops the segments decoded
  /// after it (the queue replaced them).
  func seek(toFrame frame: Int64, clock: Int64, keepFollowing: Bool = true) {
    let target = Target(token: audibleToken, frame: max(0, min(frame, audibleSegmentEnd)), keepFollowing: keepFollowing)
    switch mode {
    case .playing: fadeOut(then: .seek(target, thenPlay: true), clock: clock)
    case .fadingOut:
      let resume: Bool
      switch pendingAction {
      case .seek(_, let thenPlay): resume = thenPlay
      case .pause, .stop: resume = false
      case .resync, nil: resume = true
      }
      pendingAction = .seek(target, thenPlay: resume)
    case .ready(let resumeFades):
      if target.frame == positionFrames && keepFollowing && (queuedCount > 0 || decoderEnded) {
        // Already there (the loader opened the file at this very frame): no flush, no decoding
        // the same blocks twice.
        mode = .ready(resumeFades: resumeFades || target.frame > 0)
      } else {
        performSeek(to: target, resumeFades: resumeFades || target.frame > 0)
      }
    case .ended: performSeek(to: target, resumeFades: target.frame > 0)
    }
  }

  /// Drops what was decoded after the audible segment (the queue changed what follows it) and
  /// re-decodes from where the fade-out ends: a 10 ms dip instead of the wrong next item.
  func resync(clock: Int64) {
    switch mode {
    case .playing: fadeOut(then: .resync, clock: clock)
    case .fadingOut:
      if pendingAction == nil { pendingAction = .resync }
    case .ready, .ended:
      performSeek(to: Target(token: audibleToken, frame: positionFrames, keepFollowing: false), resumeFades: true)
    }
  }

  func setRate(_ newRate: Float) {
    rate = newRate
    source.setPitch(newRate)
  }

  func setVolume(_ newVolume: Float) { volume = max(0, min(1, newVolume)) }

  /// The high-frequency gain of the voice's low-pass filter (1: unfiltered). Kept here so that a
  /// new source after `move` gets it too.
  private(set) var lowPassGain: Float = 1

  /// Muffles the voice (see `StreamingSource.setLowPass`). OpenAL does not ramp it: it lands in
  /// the next mix. A failure is reported as a diagnostic by the next pump; the voice plays on.
  func setLowPass(_ gainHF: Float) {
    lowPassGain = gainHF.isFinite ? max(0, min(1, gainHF)) : 1
    applyLowPass()
  }

  private func applyLowPass() {
    do throws(OutputError) {
      try source.setLowPass(gainHF: lowPassGain)
    } catch {
      // Error path only: the diagnostic's text is the one allocation here.
      deferredEvents.append(.diagnostic(Diagnostic(.error, "cannot filter \(handle): \(error)", error: error)))
    }
  }

  func scan(direction: Int, clock: Int64) {
    scanDirection = direction
    scanStartedNanoseconds = clock
    lastScanJumpNanoseconds = clock
  }

  // MARK: - Crossfades

  /// Fades in from silence along `curve` (the incoming side of a crossfade) and starts playing.
  /// The envelope begins at `start` (the end of the coming mix, where the outgoing side's fade
  /// also begins): the first mix after play is not ramped by OpenAL, so it must be silent.
  /// A voice already heard (a hand-over that began a moment before a skip asked for the same
  /// crossfade) fades in from the level it has, not from silence.
  func fadeIn(seconds: Double, curve: FadeCurve, clock: Int64, start: Int64) {
    let level = isAudible ? envelope.gain(at: start) : 0
    envelope = GainEnvelope(
      from: level, to: 1, startNanoseconds: start,
      durationNanoseconds: Int64(max(seconds, Voice.transportFadeSeconds) * 1e9),
      curve: curve)
    finishWhenSilent = false
    if case .ready = mode { mode = .ready(resumeFades: false) }
    play(clock: clock)
  }

  /// Fades out from the level heard now along `curve`, starting at `start`; at silence the voice
  /// ends and reports `.fadedOut`, and its owner lets it go.
  func fadeOutAndFinish(seconds: Double, curve: FadeCurve, start: Int64) {
    handoff = nil
    let level = envelope.gain(at: start)
    envelope = GainEnvelope(
      from: level, to: 0, startNanoseconds: start,
      durationNanoseconds: Int64(max(seconds, Voice.transportFadeSeconds) * 1e9), curve: curve)
    finishWhenSilent = true
    status.isLetGo.store(true, ordering: .releasing)
  }

  /// Whether the armed hand-over should start now: the handed-over segment is heard in its final
  /// pass and no more than the crossfade's length from its end (or already over).
  ///
  /// The fades begin one `lookahead` after this pump (the incoming source's first mix must be
  /// silent), and pumps come one mix apart offline: so the hand-over fires two lookaheads early,
  /// and the outgoing fade reaches silence before the outgoing audio runs out.
  func handoffDue(lookaheadNanoseconds: Int64) -> Bool {
    guard let handoff, mode == .playing || mode == .ended else { return false }
    if mode == .ended || (queuedCount == 0 && decoderEnded) { return true }
    guard queuedCount > 0 else { return false }
    let head = queued[queuedHead]
    guard head.token == handoff.token, head.finalPass else {
      // Already past the handed-over segment (it ended into a gapless follower): hand over now.
      return head.token != handoff.token && tokenIsAfterHandoff(head.token)
    }
    let remainingOutputSeconds = Double(head.segmentEnd - positionFrames) / Double(sampleRate) / Double(rate)
    return remainingOutputSeconds <= handoffSeconds() + 2 * Double(lookaheadNanoseconds) / 1e9
  }

  /// The armed crossfade's length, at most half the outgoing item (a 3 s crossfade out of a
  /// 1 s item would otherwise begin before it is heard).
  func handoffSeconds() -> Double {
    guard let handoff else { return 0 }
    guard queuedCount > 0 else { return handoff.seconds }
    let head = queued[queuedHead]
    let itemSeconds = Double(head.segmentEnd - head.segmentStart) / Double(sampleRate) / Double(rate)
    return max(Voice.transportFadeSeconds, min(handoff.seconds, itemSeconds / 2))
  }

  private func tokenIsAfterHandoff(_ token: Int) -> Bool { handoff.map { token > $0.token } ?? false }

  /// A voice that is being let go: silent now, or fading to silence.
  var isLetGo: Bool { finishWhenSilent }

  /// Audio is queued (or the stream already ended): a crossfade into this voice can start.
  var hasAudio: Bool { queuedCount > 0 || decoderEnded }

  /// Playing or fading: stopping it now would be heard.
  var isAudible: Bool { mode == .playing || mode == .fadingOut }

  /// Asked to play and waiting for its first audio.
  var isStarting: Bool { awaitingData }

  /// The gain heard at `time`: volume, transport ramp and crossfade envelope together.
  func currentGain(at time: Int64) -> Float { volume * ramp.gain(at: time) * envelope.gain(at: time) }

  // MARK: - The pump

  /// One streaming step. `lookaheadNanoseconds` is how far ahead the next mix reaches: gains are
  /// set for the end of the coming mix so OpenAL's per-mix ramp lands on the curve.
  /// Events worth reporting are appended to `events` (which has capacity: no allocation).
  func pump(clock: Int64, lookaheadNanoseconds: Int64, settleNanoseconds: Int64, events: inout [EngineEvent]) {
    lastClock = clock
    if !deferredEvents.isEmpty {
      // Found outside a pump (a seek's refill): reported now, without allocating.
      events.append(contentsOf: deferredEvents)
      deferredEvents.removeAll(keepingCapacity: true)
    }
    let released = source.unqueueProcessed()
    for _ in 0..<released { dropQueuedHead() }
    if mode != .ended { refill(events: &events) }
    noticeSegmentChange(events: &events)
    let ahead = clock + lookaheadNanoseconds

    switch mode {
    case .playing:
      if awaitingData {
        guard queuedCount > 0 else { break }
        awaitingData = false
        source.play()
      }
      if holdGainThisPump {
        holdGainThisPump = false
        ramp.startNanoseconds = ahead
      } else {
        source.setGain(currentGain(at: ahead))
      }
      if source.state != .playing {
        if queuedCount > 0 {
          // Underrun: the source ran dry and stopped while we still had buffers to give it.
          source.play()
          status.underruns.add(1, ordering: .relaxed)
          events.append(.underrun(voice: handle))
        } else if decoderEnded {
          mode = .ended
          events.append(failure.map { .failed(voice: handle, $0) } ?? .ended(voice: handle))
        }
      }
      if finishWhenSilent && mode == .playing && envelope.isFinished(at: clock) && envelope.to == 0 {
        fadeOut(then: .pause, clock: clock)
      }
      if scanDirection != 0 { scanStep(clock: clock) }
    case .fadingOut:
      let gain = ramp.gain(at: ahead)
      source.setGain(currentGain(at: ahead))
      if gain <= 0 || currentGain(at: clock) <= 0 {
        if let since = zeroGainSince {
          if clock - since >= settleNanoseconds { runPendingAction(clock: clock, events: &events) }
        } else {
          zeroGainSince = clock
        }
      }
      if source.state != .playing && queuedCount == 0 && decoderEnded {
        runPendingAction(clock: clock, events: &events)
      }
    case .ready, .ended: break
    }
    if finishWhenSilent && !reportedFadedOut && mode != .playing && mode != .fadingOut {
      // Let go and silent (faded out, paused or never started): done.
      reportedFadedOut = true
      source.pause()
      mode = .ended
      events.append(.fadedOut(voice: handle))
    }
    publishPosition()
  }

  /// The frame being heard: the oldest queued buffer's start plus the source's offset into it.
  func publishPosition() {
    let position: Int64
    if queuedCount > 0 {
      let offset = Int64(source.sampleOffset)
      let head = queued[queuedHead]
      // (A pre-roll of silence has frames before the segment's start: they read as its start.)
      position = max(head.segmentStart, min(head.start + offset, head.segmentEnd))
    } else {
      position = decoderEnded ? audibleSegmentEnd : nextFrame
    }
    status.positionFrames.store(position, ordering: .releasing)
    // What is heard: a voice that is prepared but not started (a crossfade's follower, waiting)
    // is silent, so the stealing policy takes it first and timelines do not draw it.
    status.gainBits.store((isAudible ? currentGain(at: lastClock) : 0).bitPattern, ordering: .relaxed)
  }

  var positionFrames: Int64 { status.positionFrames.load(ordering: .relaxed) }

  /// Moves this voice to a new device (after a disconnect): a new source, refilled from where
  /// the old one was heard, fading back in if it was playing.
  func move(to newSource: StreamingSource, clock: Int64) {
    let position = positionFrames
    let wasPlaying =
      mode == .playing || (mode == .fadingOut && pendingAction != .pause && pendingAction != .stop)
    source = newSource
    queuedCount = 0
    queuedHead = 0
    reposition(to: Target(token: audibleToken, frame: position))
    mode = .ready(resumeFades: true)
    pendingAction = nil
    source.setPitch(rate)
    // A new source starts unfiltered; filter it before it is heard.
    if lowPassGain != 1 { applyLowPass() }
    if wasPlaying { play(clock: clock) }
  }

  // MARK: - Internals

  private var lastClock: Int64 = 0
  /// Events met outside a pump (a seek's or a stop's refill), handed out by the next pump. Its
  /// capacity is reserved when the voice is made, so the streaming thread never allocates for it.
  private var deferredEvents: [EngineEvent] = []
  private var audibleSegmentEnd: Int64 = 0

  /// A gapless join became audible: the head buffer belongs to a new segment.
  private func noticeSegmentChange(events: inout [EngineEvent]) {
    let token: Int
    let end: Int64
    if queuedCount > 0 {
      token = queued[queuedHead].token
      end = queued[queuedHead].segmentEnd
    } else if !decoderEnded {
      token = nextToken
      end = nextSegmentEnd
    } else {
      return
    }
    audibleSegmentEnd = end
    guard token != audibleToken, token >= 0 else { return }
    audibleToken = token
    status.lengthFrames.store(end, ordering: .releasing)
    status.token.store(token, ordering: .releasing)
    events.append(.segmentStarted(voice: handle, token: token))
  }

  private func fadeOut(then action: PendingAction, clock: Int64) {
    if awaitingData {
      // Nothing was heard yet: no fade needed, act at once.
      awaitingData = false
      pendingAction = action
      runPendingAction(clock: clock, events: &deferredEvents)
      return
    }
    pendingAction = action
    startRamp(from: ramp.gain(at: clock), to: 0, clock: clock)
    zeroGainSince = nil
    mode = .fadingOut
  }

  private func runPendingAction(clock: Int64, events: inout [EngineEvent]) {
    let action = pendingAction
    pendingAction = nil
    zeroGainSince = nil
    if finishWhenSilent && envelope.to == 0 && envelope.isFinished(at: clock) {
      // A crossfade's outgoing voice reached silence: it is done, whatever was pending (the
      // pump reports it).
      source.pause()
      mode = .ended
      return
    }
    switch action {
    case .pause, nil:
      source.pause()
      mode = .ready(resumeFades: true)
      // A pause completes a fade-in in progress: silent now, the voice resumes at full level
      // (through the transport fade) rather than finishing a crossfade whose partner is gone.
      if !finishWhenSilent { envelope = .unity }
    case .stop:
      performStop()
    case .seek(let target, let thenPlay):
      performSeek(to: target, resumeFades: true)
      if thenPlay { play(clock: clock) }
    case .resync:
      performSeek(to: Target(token: audibleToken, frame: positionFrames, keepFollowing: false), resumeFades: true)
      play(clock: clock)
    }
  }

  private func performStop() {
    scanDirection = 0
    reposition(to: Target(token: stream.firstToken, frame: 0))
    mode = .ready(resumeFades: false)
  }

  private func performSeek(to target: Target, resumeFades: Bool) {
    reposition(to: target)
    mode = .ready(resumeFades: resumeFades)
  }

  /// Throws away what is queued, moves the stream, and refills: used by stop, seek and recovery.
  private func reposition(to target: Target) {
    source.flush()
    queuedCount = 0
    queuedHead = 0
    decoderEnded = false
    failure = nil
    generation = stream.requestSeek(token: target.token, frame: target.frame, keepFollowing: target.keepFollowing)
    nextFrame = target.frame
    nextToken = target.token
    refill(events: &deferredEvents)
    publishPosition()
  }

  /// Queues decoded blocks while OpenAL has free buffers. Blocks from before the last seek are
  /// dropped. A segment that failed is reported when the stream goes on past it; if it was the
  /// last, the voice ends with its error.
  private func refill(events: inout [EngineEvent]) {
    while source.freeBufferCount > 0 {
      guard let block = stream.peek(waitSeconds: decodeWaitSeconds, generation: generation) else {
        if stream.isDrained(generation: generation) {
          decoderEnded = true
        } else if decodeWaitSeconds > 0 {
          // Offline only: the decode thread gave nothing for seconds. End rather than hang.
          failure = DecodeError(path: stream.path, reason: .unsupported("the decoder stopped answering"))
          decoderEnded = true
        }
        break
      }
      defer { stream.release() }
      guard block.generation == generation else { continue }
      decoderEnded = false
      if block.frames > 0 {
        if let failed = failure, failedToken != block.token {
          events.append(.segmentFailed(voice: handle, token: failedToken, failed))
          failure = nil
        }
        enqueue(block)
        nextFrame = block.startFrame + Int64(block.frames)
        nextToken = block.token
        nextSegmentEnd = block.segmentEnd
      }
      if let error = block.error {
        failure = error
        failedToken = block.token
      }
    }
  }

  private func enqueue(_ block: DecodeAheadStream.Block) {
    guard source.queue(stereo: block.samples, frameCount: block.frames, sampleRate: sampleRate) else { return }
    let index = (queuedHead + queuedCount) % Voice.bufferCount
    queued[index] = Queued(
      start: block.startFrame, length: block.frames, token: block.token, segmentStart: block.segmentStart,
      segmentEnd: block.segmentEnd,
      finalPass: block.finalPass)
    queuedCount += 1
  }

  private func dropQueuedHead() {
    guard queuedCount > 0 else { return }
    queuedHead = (queuedHead + 1) % Voice.bufferCount
    queuedCount -= 1
  }

  private func startRamp(from: Float, to: Float, clock: Int64) {
    ramp = GainEnvelope(
      from: from, to: to, startNanoseconds: clock, durationNanoseconds: Int64(Voice.transportFadeSeconds * 1e9),
      curve: .linear)
  }

  /// One jump of a scan: every quarter second, move by a distance that doubles each second the
  /// scan has run (2x, 4x, 8x, up to 16x speed), forward or backward.
  private func scanStep(clock: Int64) {
    let interval: Int64 = 250_000_000
    guard clock - lastScanJumpNanoseconds >= interval else { return }
    lastScanJumpNanoseconds = clock
    let elapsedSeconds = Double(clock - scanStartedNanoseconds) / 1e9
    let speed = min(16, Glibc.exp2(1 + elapsedSeconds))
    let rate = Double(sampleRate)
    let jumpFrames = Int64(speed * 0.25 * rate)
    let position = positionFrames
    let target = scanDirection > 0 ? position + jumpFrames : position - jumpFrames - Int64(0.25 * rate)
    if target >= audibleSegmentEnd {
      scanDirection = 0
      return
    }
    seek(toFrame: max(0, target), clock: clock)
  }
}
