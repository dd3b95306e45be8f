import Dispatch
import FoundationEssentials
import LeitmotifDecoding
import LeitmotifOutput

#if canImport(Glibc)
  import Glibc
#endif

/// The streaming thread's state: the mixer (every voice, on one sample clock), the music bus that
/// carries the mix to OpenAL, and the device it plays on.
///
/// The mix clock: frames mixed since the engine started. Every command takes effect on the first
/// frame of the next block mixed, every start, fade and hand-over happens on a frame of that
/// clock, and a voice's position is a frame of its file at a frame of the mix, so what a voice
/// does is the same live as offline, to the frame (only how far ahead of the ear the mix runs
/// differs: `MusicBus.targetQueuedFrames`).
///
/// The rules of the streaming thread, in one place:
/// - It may call: OpenAL (the bus source's calls), the decode-ahead rings (take a block, ask for
///   a seek: both lock-free), and `try` the command queue's lock.
/// - It must never: wait on a lock a game thread can hold (it only tries), call back into game
///   code (events go to the notification thread), open or read files (the loader opens them, each
///   voice's decode thread reads them), allocate once voices are attached (the bus, its ring,
///   every voice's scratch and resampler are made before; the command and event batches keep
///   their capacity), or free voices and devices (they go back to the notification thread).
/// - A real-time engine pumps it every few milliseconds from its own thread; an offline engine
///   pumps it once before every render call, on the rendering thread, so runs are deterministic.
// @unchecked Sendable: handed to the streaming thread at start and used only there (or, offline,
// under the engine's render lock), never by two threads at once.
package final class StreamingLoop: @unchecked Sendable {
  static let maximumVoices = 16

  private(set) var device: OutputDevice
  let statuses: [VoiceStatus]
  private var voices: [Voice?]
  private let commands: CommandQueue<EngineCommand>
  private let events: CommandQueue<EngineEvent>
  private var commandBatch: [EngineCommand] = []
  /// The mix clock: the frame the next block mixed starts at.
  private(set) var mixClock: Int64 = 0
  private var bus: MusicBus
  /// The most frames one render call mixes at once (a longer call is mixed in pieces).
  private static let maximumMixFrames = 4096
  // Commands for a slot whose stream is still loading wait here (per slot): play/pause intent,
  // a seek, rate, volume and low-pass are applied when it attaches.
  private var wantsPlaying = [Bool](repeating: false, count: maximumVoices)
  /// Whether each slot's voice was playing when it was last paused (see `EngineCommand.play`'s
  /// `resumingOnly`).
  private var playingWhenPaused = [Bool](repeating: false, count: maximumVoices)
  private var pendingSeek = [(seconds: Double, generation: Int)?](repeating: nil, count: maximumVoices)
  private var rates = [Float](repeating: 1, count: maximumVoices)
  private var tempos = [Float](repeating: 1, count: maximumVoices)
  private var volumes = [Float](repeating: 1, count: maximumVoices)
  /// High-frequency gains of each slot's shelf filter (1: unfiltered).
  private var lowPassGains = [Float](repeating: 1, count: maximumVoices)
  /// Each slot's layer settings (`Voice.maximumLayers` per slot), kept for a voice that attaches
  /// after they were set: the parameters' gain and low-pass, and the level the last `fadeLayer`
  /// aimed at.
  private var layerGains = [Float](repeating: 1, count: maximumVoices * Voice.maximumLayers)
  private var layerLowPasses = [Float](repeating: 1, count: maximumVoices * Voice.maximumLayers)
  private var layerLevels = [Float](repeating: 1, count: maximumVoices * Voice.maximumLayers)
  /// Beat lines per slot (two: the segment playing and a gapless follower; see
  /// `EngineCommand.setBeats`), and how many slots have any (0: the mix skips looking).
  private struct BeatLines {
    var token: Int
    var originSeconds: Double
    var secondsPerBeat: Double
    /// The last mix frame a beat was reported on (a line is reported once), and its index.
    var lastFrame: Int64 = -1
    var lastIndex = Int.min
    /// Markers: seconds of the file, sorted (none: `[]`).
    var markers: [Double] = []
    /// The last mix frame a marker was reported on.
    var lastMarkerFrame: Int64 = -1
    /// The frame of the last seam (see `Voice.seamHeard`) whose lines were caught up.
    var seamFrame: Int64 = -1

    /// The first beat at or after file frame `position` (of a file of `rate` Hz).
    func firstBeat(atOrAfter position: Double, rate: Double) -> Int {
      Int(((position / rate - originSeconds) / secondsPerBeat - 1e-9).rounded(.up))
    }

    /// The file frame beat `index` falls on.
    func fileFrame(ofBeat index: Int, rate: Double) -> Double {
      (originSeconds + Double(index) * secondsPerBeat) * rate
    }
  }
  private var beatLines = [BeatLines?](repeating: nil, count: maximumVoices * 2)
  private var beatLineCount = 0
  /// How far behind the block being mixed the ear is, in frames: what the bus holds unplayed
  /// (set by `refillBus` for each block; 0 when mixing renders at once), and the device's own
  /// latency, looked up now and then while beats are reported (it takes the backend's lock).
  private var heardDelayFrames = 0
  private var deviceLatencyFrames = 0
  private var latencyCheckedNanoseconds: UInt64 = 0
  /// Crossfades waiting for their incoming voice to have audio (per incoming slot).
  private var pendingCrossfades = [
    (from: [VoiceHandle], seconds: Double, curve: FadeCurve, trigger: StartTrigger?, holdSeconds: Double)?
  ](repeating: nil, count: maximumVoices)
  /// Hand-overs armed per slot, kept here too so that one armed before its voice attached (the
  /// loader is still opening the file) applies when it does.
  private var armed = [Voice.Handoff?](repeating: nil, count: maximumVoices)
  /// A loop release for a slot whose voice is still opening (applied when it attaches).
  private var loopReleases = [Int?](repeating: nil, count: maximumVoices)
  /// Starts waiting for another voice's position (`EngineCommand.playOnTrigger`), per slot.
  private var triggeredPlays = [StartTrigger?](repeating: nil, count: maximumVoices)
  /// The duck that starts with a start on a trigger (`EngineCommand.duckOnStart`), per slot.
  private var triggeredDucks = [(group: UInt32, shape: DuckShape)?](repeating: nil, count: maximumVoices)
  /// The ducks under way, and the group each slot's voice follows (kept for a voice that
  /// attaches later); the gains of one voice's block are made in `duckScratch`.
  private var ducks = DuckSet()
  private var duckGroups = [UInt32](repeating: 0, count: maximumVoices)
  private let duckScratch = UnsafeMutablePointer<Float>.allocate(capacity: maximumMixFrames)
  /// Layer moves on a grid line of music that cannot be reckoned from yet (a layer in on the bar
  /// while a change to the layered music waits for its own line), per slot and layer, and how
  /// many there are (0: the mix skips looking). Each starts from the music's line once it plays:
  /// taken at once, the line was reckoned from a voice not moving and the layer moved before
  /// the music was heard.
  private struct PendingLayerFade {
    var level: Float
    var seconds: Double
    var curve: FadeCurve
    var trigger: StartTrigger
  }
  private var pendingLayerFades = [PendingLayerFade?](repeating: nil, count: maximumVoices * Voice.maximumLayers)
  private var pendingLayerFadeCount = 0
  /// The generation that owns each slot (0: nobody); see `owns`.
  private var generations = [UInt32](repeating: 0, count: maximumVoices)
  /// Voices released while audible: they fade out here (10 ms) before they are reclaimed, so a
  /// release or a steal never cuts sound off. Their slots are already free for new voices.
  private var dying: [Voice] = []
  private var dyingEvents: [EngineEvent] = []
  /// What dying voices publish into: nobody reads it.
  private let detachedStatus = VoiceStatus()
  /// The master gain over the bus, glided per frame towards its target.
  private var masterGain: Float = 1
  private var masterGainTarget: Float = 1
  private var masterGainStep: Float = 0
  /// The bus's own shelf filter (`AudioEngine.masterLowPassGain`).
  private var busFilter: ShelfFilter
  /// Keeps the bus within full scale, last in the mix (see `PeakLimiter`).
  private var limiter: PeakLimiter
  private var pendingEvents: [EngineEvent] = []
  private var lastConnectionCheckNanoseconds: Int64 = 0
  private var deviceLost = false
  private var simulatedDisconnect = false
  /// While a claim or a call-off stamped for a later frame is applied: that frame, where what it
  /// does to music still heard takes effect.
  private var stampedFrame: Int64?
  private let reopenDevice: () -> OutputDevice?
  private let isOffline: Bool
  /// `OutputLatency.low`: less slack on the bus, and a pump twice a device period.
  let lowLatency: Bool
  /// Whether a posted command should wake the thread between pumps (`OutputLatency.low` on a
  /// device OpenAL plays; the clocked headless device mixes only when a period is due anyway).
  var wakesOnPost: Bool { lowLatency && !device.rendersOnDemand }
  /// Offline engines: waits for the loader when it has work outstanding (true if it waited).
  /// A start whose frame has come while its file is still opening (or a gapless join whose
  /// segment is) waits for it here, so that it lands on its frame whatever the loader's speed,
  /// and the render never opens a file itself. Set once, before the first render.
  var settleLoads: (() -> Bool)?
  // The clocked headless fallback: the loop mixes and renders what the wall clock says is due.
  private var headlessScratch: [Float] = []
  private var headlessStartNanoseconds: UInt64 = 0
  private var headlessFramesRendered: Int64 = 0

  /// Commands waiting for their mix frame (`EngineCommand.timed`), in frame order; its capacity
  /// is reserved, and a command that finds it full takes effect at once.
  private var timedCommands = TimedCommands(capacity: 512)
  private let published: MixClock
  /// While nothing plays, when mixing stopped (the clock keeps pace with the wall clock then).
  private var idleSinceNanoseconds: UInt64 = 0

  init(
    device: OutputDevice, statuses: [VoiceStatus], commands: CommandQueue<EngineCommand>,
    events: CommandQueue<EngineEvent>, clock: MixClock, reopenDevice: @escaping () -> OutputDevice?, isOffline: Bool,
    lowLatency: Bool = false
  ) throws(OutputError) {
    self.isOffline = isOffline
    self.lowLatency = lowLatency && !isOffline
    published = clock
    idleSinceNanoseconds = isOffline ? 0 : clock.idleSinceNanoseconds.load(ordering: .acquiring)
    self.device = device
    self.statuses = statuses
    self.commands = commands
    self.events = events
    self.reopenDevice = reopenDevice
    bus = try MusicBus(
      device: device, slackBlocks: self.lowLatency ? MusicBus.lowSlackBlocks : MusicBus.standardSlackBlocks)
    clock.queuedAheadFrames.store(bus.targetQueuedFrames, ordering: .relaxed)
    busFilter = ShelfFilter(sampleRate: device.sampleRate)
    limiter = PeakLimiter(sampleRate: device.sampleRate)
    voices = [Voice?](repeating: nil, count: Self.maximumVoices)
    commandBatch.reserveCapacity(64)
    pendingEvents.reserveCapacity(Self.pendingEventCapacity)
    dying.reserveCapacity(2 * Self.maximumVoices)
    dyingEvents.reserveCapacity(16)
    if device.rendersOnDemand && !isOffline {
      headlessScratch = [Float](repeating: 0, count: device.mixPeriodFrames * 2)
    }
  }

  deinit {
    timedCommands.deallocate()
    duckScratch.deallocate()
    ducks.deallocate()
  }

  /// One pass: take commands, keep the bus topped up with freshly mixed blocks (a device that
  /// renders on demand mixes in `render` instead), watch the device, hand events out.
  /// Returns whether anything is playing or fading (the thread then pumps again soon; if not,
  /// it sleeps until a command comes).
  @discardableResult
  func pump() -> Bool {
    device.makeCurrent()
    takeCommands()
    if !isOffline { watchConnection() }
    let busy = isBusy
    if !isOffline { keepClockPace(busy: busy) }
    if !deviceLost && !device.rendersOnDemand {
      if busy {
        if devicePaused { resumeDevice() }
        refillBus()
      } else {
        bus.idle()
        if !devicePaused { pauseDeviceWhenIdleLong() }
      }
    }
    if device.rendersOnDemand && !isOffline { renderHeadlessDue(busy: busy) }
    flushEvents()
    return busy
  }

  /// How long the engine stays idle before it pauses OpenAL's mixer (`OutputDevice.pauseMixing`).
  /// Not at once: a game that stops one piece and starts the next a moment later should not pay
  /// a backend restart between them (PulseAudio's is a round trip to the server).
  static let idleNanosecondsBeforeDevicePause: UInt64 = 2_000_000_000
  /// OpenAL's mixer is paused because nothing played for a while (see `pauseDeviceWhenIdleLong`).
  private var devicePaused = false

  /// An idle engine should cost no more than an idle OpenAL device; an idle OpenAL device still
  /// mixes a period of silence every period. So after a while with nothing to play (and nothing
  /// left queued on the bus) the mixer is paused; the first pump with something to play
  /// resumes it before it queues any audio.
  private func pauseDeviceWhenIdleLong() {
    guard idleSinceNanoseconds != 0,
      DispatchTime.now().uptimeNanoseconds &- idleSinceNanoseconds >= Self.idleNanosecondsBeforeDevicePause,
      bus.queuedFrames == 0 || bus.sourceStopped, device.canPauseMixing
    else { return }
    device.pauseMixing()
    devicePaused = true
    pendingEvents.append(.outputPaused(device.name, true))
  }

  private func resumeDevice() {
    device.resumeMixing()
    devicePaused = false
    pendingEvents.append(.outputPaused(device.name, false))
  }

  /// Live: while nothing plays the mix clock runs on with the wall clock (published as idle);
  /// when something plays again, it moves on by the time that passed.
  ///
  /// When what ends the spell is a change scheduled on a frame (a director's resume after its
  /// pause menu, or its next state), the bus is given the silence it would have played had the
  /// mix gone on through the spell, so that a frame of the mix reaches OpenAL on the device
  /// frame it would have: the frame OpenAL was to mix the first frame after the spell on when
  /// the spell began (the device frame it stood at, and what the bus held), moved on by the
  /// frames the clock moved on. The
  /// device clock and the bus's play position are both as of OpenAL's last mix, so the two agree
  /// to the frame. Without it, the first frame after the spell went into an empty bus and was
  /// heard a bus's length sooner, and everything after it too: after a pause menu the live music
  /// ran 42 to 63 ms ahead of the offline render of the same events, and of the times the
  /// director reported (a designer's trial). After OpenAL's mixer was paused (a long idle spell)
  /// the device frames stood still: the bus then gets back the length it had. A change asked for
  /// at once (a player's `play()`) gets no silence: it is heard as soon as OpenAL can play it.
  private func keepClockPace(busy: Bool) {
    if busy && idleSinceNanoseconds != 0 {
      let elapsed = DispatchTime.now().uptimeNanoseconds &- idleSinceNanoseconds
      mixClock += MixClock.frames(nanoseconds: elapsed, rate: device.sampleRate)
      idleSinceNanoseconds = 0
      published.mixedFrames.store(mixClock, ordering: .releasing)
      published.idleSinceNanoseconds.store(0, ordering: .releasing)
      if !device.rendersOnDemand && !deviceLost && timedCommands.count > 0 {
        bus.collectPlayed()
        let silence =
          devicePaused
          ? queuedWhenIdle - bus.queuedFrames
          : Int(idleDeviceFrame + MixClock.frames(nanoseconds: elapsed, rate: device.sampleRate) - deviceFrame)
            - bus.queuedFrames
        bus.queueSilence(frames: max(0, silence))
        // Playing at once: to a stopped source every queued buffer counts as processed, so the
        // refill's look at what was played would take the silence back unheard.
        bus.keepPlaying()
      }
    } else if !busy && idleSinceNanoseconds == 0 {
      idleSinceNanoseconds = DispatchTime.now().uptimeNanoseconds
      published.idleSinceNanoseconds.store(idleSinceNanoseconds, ordering: .releasing)
      if !device.rendersOnDemand && !deviceLost {
        bus.collectPlayed()
        queuedWhenIdle = bus.queuedFrames
        idleDeviceFrame = deviceFrame + Int64(queuedWhenIdle)
      }
    }
  }

  /// What the bus held when the mix last went idle, and the device frame OpenAL was to mix the
  /// next frame of the mix on then (see `keepClockPace`).
  private var queuedWhenIdle = 0
  private var idleDeviceFrame: Int64 = 0

  /// The frames OpenAL has mixed on the device, as of its last mix (its device clock, which
  /// counts whole seconds and the frames of the second: exact once rounded).
  private var deviceFrame: Int64 {
    (device.clockNanoseconds * Int64(device.sampleRate) + 500_000_000) / 1_000_000_000
  }

  private func takeCommands() {
    guard commands.takeAll(into: &commandBatch) else { return }
    // (Index loops here and below: a `for in` over an array runs generic code that allocates in a
    // debug build, and the real-time audit counts every allocation on this thread.)
    var index = 0
    while index < commandBatch.count {
      apply(commandBatch[index], clock: mixClock)
      index += 1
    }
    commandBatch.removeAll(keepingCapacity: true)
  }

  /// Mixes blocks until the bus holds its target, restarting the source after a real underrun.
  private func refillBus() {
    bus.collectPlayed()
    // Pump twice a period for a while when the bus starts from empty (a backend fills its own
    // buffer first: PulseAudio asks for several periods at once as a stream starts), and when less
    // than a device period is left since the last top-up: two of OpenAL's mixes came between two
    // pumps (this wake-up was late, or the backend mixed twice in a row), and the next mix after
    // that would have found the bus short.
    if bus.queuedFrames == 0 || (wasToppedUp && bus.queuedFrames < device.mixPeriodFrames) {
      pumpQuicklyUntil = pumpCount + Self.quickPumps
    }
    refreshDeviceLatency()
    published.heardFrames.store(
      mixClock - Int64(bus.queuedFrames) - Int64(deviceLatencyFrames), ordering: .relaxed)
    while bus.queuedFrames < bus.targetQueuedFrames, let block = bus.nextBlock(frames: MusicBus.blockFrames) {
      heardDelayFrames = bus.queuedFrames
      mix(into: block, frames: MusicBus.blockFrames)
      bus.commit(frames: MusicBus.blockFrames)
    }
    wasToppedUp = bus.queuedFrames >= bus.targetQueuedFrames
    if bus.stoppedEarly {
      // The device stopped the source with audio still queued (it is gone, or stalled).
      // Nothing is restarted until the connection check has had its say.
      return
    }
    if bus.keepPlaying() {
      pumpQuicklyUntil = pumpCount + Self.quickPumps
      if lowLatency && bus.widenSlackAfterUnderrun() {
        published.queuedAheadFrames.store(bus.targetQueuedFrames, ordering: .relaxed)
        pendingEvents.append(.queueWidened(frames: bus.targetQueuedFrames))
      }
      // The streaming thread was late and OpenAL played all it had: every voice heard was cut
      // short for a moment. Each counts it, and its owner is told.
      for slot in 0..<Self.maximumVoices {
        guard let voice = voices[slot], voice.isAudible else { continue }
        voice.status.underruns.add(1, ordering: .relaxed)
        pendingEvents.append(.underrun(voice: voice.handle))
      }
    }
  }

  /// Offline engines (and the headless device): mixes `frameCount` frames and has OpenAL render
  /// them into `output` at once.
  func render(into output: UnsafeMutablePointer<Float>, frameCount: Int) {
    device.makeCurrent()
    heardDelayFrames = 0
    var done = 0
    while done < frameCount {
      let frames = min(frameCount - done, Self.maximumMixFrames)
      guard let block = bus.nextBlock(frames: frames) else { break }
      mix(into: block, frames: frames)
      bus.renderNow(block, frames: frames, into: output + 2 * done)
      done += frames
    }
    if done < frameCount { (output + 2 * done).initialize(repeating: 0, count: 2 * (frameCount - done)) }
    published.heardFrames.store(mixClock, ordering: .relaxed)
    flushEvents()
  }

  /// Mixes the next `frames` frames into `output` (the mix clock moves on by `frames`), split
  /// where timed commands are due, so each takes effect on its frame.
  private func mix(into output: UnsafeMutablePointer<Float>, frames: Int) {
    var done = 0
    while done < frames {
      while let command = timedCommands.takeFirst(dueBy: mixClock) { apply(command, clock: mixClock) }
      var span = frames - done
      if let next = timedCommands.nextFrame { span = min(span, Int(next - mixClock)) }
      mixSpan(into: output + 2 * done, frames: span)
      done += span
    }
    published.mixedFrames.store(mixClock, ordering: .releasing)
  }

  /// Mixes the next `frames` frames of every voice into `output`: hand-overs and crossfades due
  /// in this block start on their exact frames first.
  private func mixSpan(into output: UnsafeMutablePointer<Float>, frames: Int) {
    output.initialize(repeating: 0, count: 2 * frames)
    let clock = mixClock
    if let settleLoads, startWaitsForFile(clock: clock, frames: frames) {
      // Wait for the loader if it is still at work, then take what it sent. Also when it was not
      // at work any more: it may have finished (and posted the attach) after this mix's pump took
      // the commands; the start then waited a whole mix for it (seen under load: a render's
      // first 1024 frames silent).
      _ = settleLoads()
      takeCommands()
    }
    startDueCrossfades(clock: clock, frames: frames)
    if pendingLayerFadeCount > 0 { startBegunLayerFades(clock: clock, frames: frames) }
    if beatLineCount > 0 { reportBeats(clock: clock, frames: frames) }
    for slot in 0..<Self.maximumVoices {
      guard let voice = voices[slot] else { continue }
      let first = pendingEvents.count
      mixVoice(voice, into: output, frames: frames, clock: clock, events: &pendingEvents)
      for index in first..<pendingEvents.count {
        switch pendingEvents[index] {
        case .ended, .failed: wantsPlaying[slot] = false
        default: break
        }
      }
    }
    mixDying(into: output, frames: frames, clock: clock)
    busFilter.process(output, frames: frames)
    if masterGain != 1 || masterGainTarget != 1 {
      for frame in 0..<frames {
        if masterGain != masterGainTarget {
          masterGain =
            abs(masterGainTarget - masterGain) <= abs(masterGainStep) ? masterGainTarget : masterGain + masterGainStep
        }
        output[2 * frame] *= masterGain
        output[2 * frame + 1] *= masterGain
      }
    }
    limiter.process(output, frames: frames)
    mixClock += Int64(frames)
    ducks.dropFinished(by: mixClock)
  }

  /// Reports every beat line and marker the voices with lines play in the block `clock ..< clock
  /// + frames`, each on its frame (found from the voice's own position, as a start on the beat
  /// is), with the time it is heard. No allocation: `pendingEvents` has room.
  private func reportBeats(clock: Int64, frames: Int) {
    var nowNanoseconds: UInt64 = 0
    for index in 0..<(2 * Self.maximumVoices) {
      // A voice fading out for good (the outgoing side of a crossfade) has no beats from its
      // fade on: the music the game hears then is the incoming one. Until then (the music held
      // under a pickup, to the downbeat) its beats are the music heard, and the incoming
      // piece's lead-in has none.
      guard var lines = beatLines[index], let voice = voices[index / 2],
        let position = voice.playingPosition(token: lines.token)
      else { continue }
      var heardUntil = Int64.max
      var inPickup = false
      if let fade = voice.letGoFadeStart {
        heardUntil = min(fade, downbeatOfOthers(group: voice.duckGroup, besides: index / 2, clock: clock))
        if heardUntil <= clock { continue }
      } else {
        inPickup = holdsAnother(group: voice.duckGroup, besides: index / 2, clock: clock)
      }
      let rate = Double(voice.fileSampleRate)
      // Lines at or past the end of the pass heard are not in it: the music goes on elsewhere
      // from there (the loop's start, the next segment), and a line on that frame is the next
      // music's, which the next block reports.
      let passEnd = voice.passEnd(token: lines.token) ?? .infinity
      if let seam = voice.seamHeard, seam.token == lines.token, seam.frame > lines.seamFrame,
        seam.frame >= previousBeatClock, seam.frame < clock
      {
        // The previous block went through a seam into this music: its lines from the seam to
        // the position now (the downbeat a loop or a repeat starts on) were not in reach then.
        lines.seamFrame = seam.frame
        catchUp(&lines, voice: voice, from: seam, to: position, rate: rate, clock: clock, now: &nowNanoseconds)
      }
      // Markers ahead of the position that fall in this block, each once, in order.
      // (An index loop: `enumerated()` with a `where` allocated here in a debug build.)
      var marker = 0
      while marker < lines.markers.count {
        let seconds = lines.markers[marker]
        marker += 1
        guard seconds * rate >= position - 1e-6 else { continue }
        guard seconds * rate < passEnd - 1e-6 else { break }
        guard let due = voice.mixFramesUntil(fileFrame: seconds * rate, token: lines.token, clock: clock),
          due < Int64(frames)
        else { break }
        let frame = clock + due
        guard frame < heardUntil else { break }
        guard frame > lines.lastMarkerFrame else { continue }
        lines.lastMarkerFrame = frame
        let audibleAt = audibleTime(due: due, now: &nowNanoseconds)
        if hasRoomForReports {
          pendingEvents.append(
            .marker(
              voice: voice.handle, token: lines.token, index: marker - 1, frame: frame, audibleAtNanoseconds: audibleAt)
          )
        }
      }
      guard lines.secondsPerBeat > 0 else {
        beatLines[index] = lines
        continue
      }
      // The first line at or after the position: stateless, so a loop back or a seek simply
      // finds the lines again from where the voice is.
      // From a hair behind it: a line the last block reckoned just past its end (its frame
      // rounded up) may be just behind the position now (rounded down), and was lost (a beat
      // every 10 s at tempo 0.8). Heard on this block's first frame; the one reported already
      // is not reported again.
      let behind = 2 * voice.framesPerMixFrame
      var beat = lines.firstBeat(atOrAfter: position - behind, rate: rate)
      let spacing = lines.secondsPerBeat * rate / voice.framesPerMixFrame
      while true {
        let line = lines.fileFrame(ofBeat: beat, rate: rate)
        guard line < passEnd - 1e-6,
          let due = voice.mixFramesUntil(fileFrame: line, token: lines.token, clock: clock), due < Int64(frames)
        else { break }
        let frame = clock + due
        guard frame < heardUntil else { break }
        // (A line before the piece's first downbeat, under music held to it, is its pickup's.)
        let repeated = beat == lines.lastIndex && Double(frame - lines.lastFrame) < spacing / 2
        if frame > lines.lastFrame && !repeated && !(inPickup && beat < 0) {
          lines.lastFrame = frame
          lines.lastIndex = beat
          let audibleAt = audibleTime(due: due, now: &nowNanoseconds)
          if hasRoomForReports {
            pendingEvents.append(
              .beat(voice: voice.handle, token: lines.token, index: beat, frame: frame, audibleAtNanoseconds: audibleAt)
            )
          }
        }
        beat += 1
      }
      beatLines[index] = lines
    }
    previousBeatClock = clock
  }

  /// Whether another voice of the same owner (`group`, a queue player's music) is let go with its
  /// fade still ahead: the music held under a pickup (or played on as a tail).
  private func holdsAnother(group: UInt32, besides slot: Int, clock: Int64) -> Bool {
    guard group != 0 else { return false }
    for other in 0..<Self.maximumVoices where other != slot {
      if let voice = voices[other], voice.duckGroup == group, voice.isAudible,
        let fade = voice.letGoFadeStart, fade > clock
      {
        return true
      }
    }
    return false
  }

  /// The first mix frame on which another voice of the same owner, not let go, reaches the
  /// first downbeat of its grid (the new piece's, after its pickup): from there its beats are the
  /// music heard. `.max` when none is playing towards one.
  private func downbeatOfOthers(group: UInt32, besides slot: Int, clock: Int64) -> Int64 {
    guard group != 0 else { return .max }
    var first = Int64.max
    for index in 0..<(2 * Self.maximumVoices) where index / 2 != slot {
      guard let lines = beatLines[index], lines.secondsPerBeat > 0, let voice = voices[index / 2],
        voice.duckGroup == group, !voice.isLetGo,
        let due = voice.mixFramesUntil(
          fileFrame: lines.fileFrame(ofBeat: 0, rate: Double(voice.fileSampleRate)), token: lines.token, clock: clock)
      else { continue }
      first = min(first, clock + due)
    }
    return first
  }

  /// The block the beats were last reported for began on this frame.
  private var previousBeatClock: Int64 = 0

  /// Reports the lines of `lines` from `seam` (a jump or join the last block went through) up to
  /// `position`, the file frame the music is at now, each on the frame it was heard.
  private func catchUp(
    _ lines: inout BeatLines, voice: Voice, from seam: (frame: Int64, token: Int, position: Double),
    to position: Double,
    rate: Double, clock: Int64, now: inout UInt64
  ) {
    let speed = voice.framesPerMixFrame
    func frame(of line: Double) -> Int64 { seam.frame + FrameMath.clamp(((line - seam.position) / speed).rounded(.up)) }
    var marker = 0
    while marker < lines.markers.count {
      let line = lines.markers[marker] * rate
      marker += 1
      guard line >= seam.position - 1e-6 else { continue }
      guard line < position - 1e-6 else { break }
      let at = min(frame(of: line), clock - 1)
      guard at > lines.lastMarkerFrame else { continue }
      lines.lastMarkerFrame = at
      if hasRoomForReports {
        pendingEvents.append(
          .marker(
            voice: voice.handle, token: lines.token, index: marker - 1, frame: at,
            audibleAtNanoseconds: audibleTime(due: at - clock, now: &now)))
      }
    }
    guard lines.secondsPerBeat > 0 else { return }
    var beat = lines.firstBeat(atOrAfter: seam.position, rate: rate)
    while true {
      let line = lines.fileFrame(ofBeat: beat, rate: rate)
      guard line < position - 1e-6 else { break }
      let at = min(frame(of: line), clock - 1)
      if at > lines.lastFrame {
        lines.lastFrame = at
        lines.lastIndex = beat
        if hasRoomForReports {
          pendingEvents.append(
            .beat(
              voice: voice.handle, token: lines.token, index: beat, frame: at,
              audibleAtNanoseconds: audibleTime(due: at - clock, now: &now)))
        }
      }
      beat += 1
    }
  }

  /// When a frame `due` frames into the block being mixed is heard (uptime nanoseconds): what
  /// the bus holds unplayed and the device's latency later. 0 offline (heard as rendered).
  /// `now` is read once per block, on first need.
  private func audibleTime(due: Int64, now: inout UInt64) -> UInt64 {
    guard !isOffline else { return 0 }
    if now == 0 { now = DispatchTime.now().uptimeNanoseconds }
    let delay = heardDelayFrames + deviceLatencyFrames + Int(due)
    return now &+ UInt64(max(0, delay)) * 1_000_000_000 / UInt64(bus.mixRate)
  }

  /// The device's latency, looked up at most every two seconds while beats are reported: OpenAL
  /// takes its backend's lock for it.
  private func refreshDeviceLatency() {
    guard beatLineCount > 0, !device.rendersOnDemand else { return }
    let now = DispatchTime.now().uptimeNanoseconds
    guard now &- latencyCheckedNanoseconds >= 2_000_000_000 else { return }
    latencyCheckedNanoseconds = now
    deviceLatencyFrames = Int(device.latencyNanoseconds * Int64(bus.mixRate) / 1_000_000_000)
  }

  /// Something is audible, starting, fading or waiting to start a crossfade.
  private var isBusy: Bool {
    if !dying.isEmpty || timedCommands.count > 0 { return true }
    for slot in 0..<Self.maximumVoices {
      if pendingCrossfades[slot] != nil || triggeredPlays[slot] != nil { return true }
      if let voice = voices[slot], voice.isAudible || voice.isStarting || voice.awaitsFadedOutReport { return true }
    }
    return false
  }

  /// Offline: whether something due to start in the block `clock ..< clock + frames` has no
  /// audio yet (its voice not attached, or not filled): a play, a crossfade (at once, or on a
  /// grid line in the block), a start on a trigger, the follower of a hand-over.
  private func startWaitsForFile(clock: Int64, frames: Int) -> Bool {
    let span = Int64(frames)
    for slot in 0..<Self.maximumVoices {
      let voice = voices[slot]
      if let voice, let handoff = voice.handoff, let due = voice.framesUntilHandoff(), due < span,
        owns(handoff.follower), voices[handoff.follower.slot]?.hasAudio != true
      {
        return true
      }
      if voice?.hasAudio == true { continue }
      if let crossfade = pendingCrossfades[slot] {
        guard var trigger = crossfade.trigger, owns(trigger.voice), let outgoing = voices[trigger.voice.slot] else {
          return true
        }
        if waitsToBegin(trigger.voice) || outgoing.isPausedAtPosition { continue }
        let due = trigger.framesUntilStart(music: outgoing, clock: clock, frames: frames)
        if let due, due < span { return true }
      } else if var trigger = triggeredPlays[slot] {
        guard owns(trigger.voice), let music = voices[trigger.voice.slot] else { return true }
        if waitsToBegin(trigger.voice) || music.isPausedAtPosition { continue }
        let due = trigger.framesUntilStart(music: music, clock: clock, frames: frames)
        if let due, due < span { return true }
      } else if wantsPlaying[slot] && voice == nil {
        return true
      }
    }
    return false
  }

  /// Layer `index` (slot and layer) of its slot's voice to `level` from mix frame `start`; kept
  /// for a voice that attaches later.
  private func moveLayer(_ index: Int, to level: Float, seconds: Double, curve: FadeCurve, start: Int64) {
    layerLevels[index] = level
    voices[index / Voice.maximumLayers]?.fadeLayer(
      index % Voice.maximumLayers, to: level, seconds: seconds, curve: curve, start: start)
  }

  private func dropPendingLayerFade(_ index: Int) {
    guard pendingLayerFades[index] != nil else { return }
    pendingLayerFades[index] = nil
    pendingLayerFadeCount -= 1
  }

  /// Layer moves whose music plays (see `pendingLayerFades`): each from its line, reckoned from
  /// where that music is now (or on its first frame, when it began in this block), so the same
  /// frame however the blocks are cut. A move whose music has not begun, or has no audio yet
  /// (its first block still decoding), waits; music that is gone (the change called off) takes
  /// its moves with it.
  private func startBegunLayerFades(clock: Int64, frames span: Int = 4096) {
    for index in pendingLayerFades.indices {
      guard let pending = pendingLayerFades[index] else { continue }
      let trigger = pending.trigger
      guard owns(trigger.voice) else {
        dropPendingLayerFade(index)
        continue
      }
      // Music paused at its place waits with its moves: the line is reckoned when it plays again,
      // from its first audio after the resume (live, the decode thread refills it a moment after).
      guard !waitsToBegin(trigger.voice), let music = voices[trigger.voice.slot], music.hasAudio,
        !music.isPausedAtPosition, !music.isStarting
      else { continue }
      func due(_ trigger: StartTrigger) -> Int64 {
        (music.mixFramesUntil(
          fileFrame: Double(music.fileFrames(seconds: trigger.fileSeconds)), token: trigger.token, clock: clock) ?? 0)
          + (trigger.afterSeconds > 0 ? music.mixFrames(fileSeconds: trigger.afterSeconds) : 0)
      }
      var line = trigger
      var frames = due(line)
      // Resampled or stretched, the stems are mixed into the music before the resampler and the
      // stretcher, which read ahead of what is heard: a move is set on its frame when its line
      // is near, reckoned afresh each block until then (a rate ramp moves the line), and one
      // asked nearer than they read ahead takes the grid's next line rather than come off it.
      let reach = music.readAheadFrames()
      let oneRead = Int64(Double(Voice.layeredReadFrames) / max(music.framesPerMixFrame, 1.0 / 256))
      if frames > reach + Int64(span) + oneRead + Self.layerMoveHorizonFrames { continue }
      if reach > 0, let every = line.everySeconds, every > 0 {
        var moved = 0
        while frames < reach && moved < 64 {
          line.moveOn(by: every, music: music)
          frames = due(line)
          moved += 1
        }
      }
      dropPendingLayerFade(index)
      moveLayer(index, to: pending.level, seconds: pending.seconds, curve: pending.curve, start: clock + frames)
    }
  }

  /// How near its frame a layer move is set (see `startBegunLayerFades`), beyond what the
  /// music's voice has read ahead, the block being mixed and what the voice reads at once
  /// (`Voice.layeredReadFrames` at its speed): short enough that a rate ramp moves the line by a
  /// small part of a millisecond from there.
  static let layerMoveHorizonFrames: Int64 = 2_048

  /// Whether `voice` waits to begin (a crossfade on its own grid line, a start on a trigger):
  /// it has reached no line yet, where `framesUntil` would say the moment is gone.
  private func waitsToBegin(_ voice: VoiceHandle) -> Bool {
    pendingCrossfades[voice.slot] != nil || triggeredPlays[voice.slot] != nil
  }

  /// Armed hand-overs whose moment falls in the block `clock ..< clock + frames`, and crossfades
  /// whose incoming voice is ready: each starts on its own frame, both sides on the same one.
  private func startDueCrossfades(clock: Int64, frames: Int) {
    for slot in 0..<Self.maximumVoices {
      guard let voice = voices[slot], let handoff = voice.handoff else { continue }
      if handoff.incomingSeconds == nil, owns(handoff.follower), let follower = voices[handoff.follower.slot] {
        voice.handoff?.incomingSeconds = follower.firstPassSeconds
      }
      guard let due = voice.framesUntilHandoff(), due < Int64(frames) else { continue }
      guard owns(handoff.follower) else {
        // The follower changed hands (stolen): nothing to hand over to.
        voice.handoff = nil
        armed[slot] = nil
        continue
      }
      guard let follower = voices[handoff.follower.slot], follower.hasAudio else {
        // Its frame came before the next item was ready (a slow disk, a starved decode thread):
        // the hand-over starts on the first block it is, late, unlike an offline render. Counted
        // with the late commands and said once, so a capture that differs says why.
        if !handoff.late {
          voice.handoff?.late = true
          published.lateCommands.add(1, ordering: .relaxed)
          pendingEvents.append(
            .diagnostic(
              Diagnostic(
                .notice,
                "the next item (\(voices[handoff.follower.slot].map { "\"\(FileSystemPath.displayed(FileSystemPath.lastComponent($0.stream.path)))\"" } ?? "not open yet")) was not ready for its hand-over \(due) frames into a block: it starts late"
              )))
        }
        continue
      }
      let seconds = voice.handoffSeconds()
      voice.handoff = nil
      armed[slot] = nil
      let start = clock + due
      follower.fadeIn(seconds: seconds, curve: handoff.curve, start: start)
      wantsPlaying[handoff.follower.slot] = true
      voice.fadeOutAndFinish(seconds: seconds, curve: handoff.curve, start: start)
      pendingEvents.append(.handedOff(from: voice.handle, to: handoff.follower, seconds: seconds, frame: start))
    }
    for slot in 0..<Self.maximumVoices {
      guard var trigger = triggeredPlays[slot] else { continue }
      let music = owns(trigger.voice) ? voices[trigger.voice.slot] : nil
      if let music, music.isFinishing, music.isAudible,
        let due = trigger.framesUntilStart(music: music, clock: clock, frames: frames)
      {
        // Fading out for good: where the line would fall, in case the music ends first.
        trigger.fallbackFrame = clock + due
        triggeredPlays[slot] = trigger
      }
      guard let music, music.isAudible || !music.isFinishing else {
        // The music it waited for is gone: start on the frame its line would have come, else now.
        let start = max(clock, trigger.fallbackFrame ?? clock)
        guard start < clock + Int64(frames) else { continue }
        triggeredPlays[slot] = nil
        wantsPlaying[slot] = true
        voices[slot]?.play(clock: start)
        startTriggeredDuck(slot, at: start)
        continue
      }
      // Music that waits to begin has not reached any line yet, and music paused does not get
      // there until it goes on: the start waits for it.
      if waitsToBegin(trigger.voice) || music.isPausedAtPosition { continue }
      let due = trigger.framesUntilStart(music: music, clock: clock, frames: frames)
      // (Kept: reaching a seam fixes a start in the loop's next pass to its frame.)
      triggeredPlays[slot] = trigger
      guard let due, due < Int64(frames) else { continue }
      guard let voice = voices[slot] else {
        if let every = trigger.everySeconds, every > 0 {
          // Not open yet when its line came: the next line.
          trigger.moveOn(by: every, music: music)
          triggeredPlays[slot] = trigger
        }
        continue
      }
      triggeredPlays[slot] = nil
      wantsPlaying[slot] = true
      voice.play(clock: clock + due)
      startTriggeredDuck(slot, at: clock + due)
    }
    for slot in 0..<Self.maximumVoices {
      guard var crossfade = pendingCrossfades[slot] else { continue }
      var start = clock
      if var trigger = crossfade.trigger, owns(trigger.voice), let outgoing = voices[trigger.voice.slot] {
        // Music that waits to begin (a bridge waiting for its own grid line) has reached no
        // line yet, where `framesUntil` would say the moment is gone: the crossfade waits for
        // it. It used to start at once, and the state's music behind a bridge, cued while a
        // tempo change kept the bridge waiting past the director's estimate, replaced it.
        if waitsToBegin(trigger.voice) { continue }
        // Music paused while the change waits for its line in it (a pause menu): it waits on.
        if outgoing.isPausedAtPosition { continue }
        // On the grid line of the outgoing music, found from its own position.
        let due = trigger.framesUntilStart(music: outgoing, clock: clock, frames: frames)
        // (Kept: reaching a seam fixes a start in the loop's next pass to its frame.)
        crossfade.trigger = trigger
        pendingCrossfades[slot] = crossfade
        guard let due, due < Int64(frames) else { continue }
        if voices[slot]?.hasAudio != true {
          // The line came before the incoming music was ready: the next line, then.
          if let every = trigger.everySeconds, every > 0 {
            crossfade.trigger?.moveOn(by: every, music: outgoing)
            pendingCrossfades[slot] = crossfade
            pendingEvents.append(
              .diagnostic(
                Diagnostic(
                  .notice,
                  "\(voices[slot].map { "\"\(FileSystemPath.displayed(FileSystemPath.lastComponent($0.stream.path)))\"" } ?? "the incoming music") was not ready for its grid line at \(trigger.fileSeconds) s of the playing music: it starts on the next one, at \(trigger.fileSeconds + every) s"
                )))
          }
          continue
        }
        start = clock + due
      }
      guard let incoming = voices[slot], incoming.hasAudio else { continue }
      pendingCrossfades[slot] = nil
      incoming.fadeIn(seconds: crossfade.seconds, curve: crossfade.curve, start: start)
      wantsPlaying[slot] = true
      // The outgoing music holds its level until the hold is over: the fade starts on that frame.
      let fadeStart = start + FrameMath.frames(seconds: crossfade.holdSeconds, rate: Double(bus.mixRate))
      var index = 0
      while index < crossfade.from.count {
        let outgoing = crossfade.from[index]
        index += 1
        guard outgoing.slot != slot && owns(outgoing) else { continue }
        // An incoming voice still waiting for its own line is given up: it was never heard.
        pendingCrossfades[outgoing.slot] = nil
        // One fading out already goes on fading: only what plays on is held.
        guard let voice = voices[outgoing.slot] else { continue }
        voice.fadeOutAndFinish(
          seconds: crossfade.seconds, curve: crossfade.curve, start: voice.isFinishing ? start : fadeStart)
      }
    }
  }

  /// The duck that goes with slot `slot`'s start on a trigger, if any, from `frame`.
  private func startTriggeredDuck(_ slot: Int, at frame: Int64) {
    guard let duck = triggeredDucks[slot] else { return }
    triggeredDucks[slot] = nil
    ducks.start(group: duck.group, at: frame, shape: duck.shape)
  }

  /// Mixes `voice`'s frames `clock ..< clock + frames` into `output`, with the gains of its
  /// group's ducks when one moves in the block.
  private func mixVoice(
    _ voice: Voice, into output: UnsafeMutablePointer<Float>, frames: Int, clock: Int64, events: inout [EngineEvent]
  ) {
    if !ducks.isEmpty && ducks.touches(group: voice.duckGroup, from: clock, count: frames) {
      ducks.fill(duckScratch, group: voice.duckGroup, from: clock, count: frames)
      voice.duckGains = UnsafePointer(duckScratch)
      voice.duckGainsStart = clock
    }
    voice.mix(into: output, frames: frames, clock: clock, events: &events)
    voice.duckGains = nil
  }

  /// Released voices fading out; reclaimed (off this thread) once silent.
  private func mixDying(into output: UnsafeMutablePointer<Float>, frames: Int, clock: Int64) {
    var index = 0
    while index < dying.count {
      let voice = dying[index]
      mixVoice(voice, into: output, frames: frames, clock: clock, events: &dyingEvents)
      var silent = false
      var event = 0
      while event < dyingEvents.count {
        if case .fadedOut = dyingEvents[event] { silent = true }
        event += 1
      }
      dyingEvents.removeAll(keepingCapacity: true)
      if silent || !voice.isAudible {
        pendingEvents.append(.reclaim(voice))
        dying.swapAt(index, dying.count - 1)
        dying.removeLast()
      } else {
        index += 1
      }
    }
  }

  /// Lets a voice go: audible ones fade out among the dying, silent ones are reclaimed at once.
  private func letGo(_ voice: Voice, clock: Int64) {
    voice.status = detachedStatus
    if voice.isAudible && dying.count < dying.capacity {
      voice.fadeOutAndFinish(seconds: Voice.transportFadeSeconds, curve: .linear, start: stampedFrame ?? clock)
      dying.append(voice)
    } else {
      pendingEvents.append(.reclaim(voice))
    }
  }

  /// Pumps that found something playing (counted by `sleepMicroseconds`).
  private var pumpCount = 0
  /// Until this pump, the streaming thread wakes twice a device period instead of once: the bus
  /// started from empty or came close to running dry (see `refillBus`).
  private var pumpQuicklyUntil = 0
  /// About two seconds of quick pumps at 1024 frames and 48 kHz, after a start or a close call.
  static let quickPumps = 200
  /// The last pump filled the bus to its target.
  private var wasToppedUp = false

  /// How long the streaming thread sleeps after a pump that found something playing: `interval`
  /// (a device period) for a device OpenAL plays, half of it for a while after the bus started
  /// from empty or came close to running dry (see `refillBus`), and always with `OutputLatency.low`
  /// (its slack rides out a wake-up only 10.7 ms late; a pump in between halves what a late one
  /// costs); for the clocked headless device,
  /// until its next period is due. It mixes only whole periods when the wall clock says they are
  /// due, so waking in between did nothing but cost a wake-up (three of every four pumps), and a
  /// command taken then took effect on the same mix frame as one taken at the next render.
  func sleepMicroseconds(interval: Int) -> Int {
    pumpCount += 1
    guard device.rendersOnDemand && !isOffline && headlessStartNanoseconds != 0 else {
      return lowLatency || pumpCount < pumpQuicklyUntil ? interval / 2 : interval
    }
    let rate = UInt64(device.sampleRate)
    let nextDue =
      headlessStartNanoseconds + UInt64(headlessFramesRendered + Int64(device.mixPeriodFrames)) * 1_000_000_000 / rate
    let now = DispatchTime.now().uptimeNanoseconds
    let periodMicroseconds = device.mixPeriodFrames * 1_000_000 / device.sampleRate
    // A fifth of a millisecond past the due time, so the wake-up does not come a hair early.
    let wait = nextDue > now ? Int((nextDue - now) / 1000) + 200 : 0
    return max(500, min(wait, periodMicroseconds))
  }

  /// Mixes and renders (and throws away) the frames the wall clock says a real device would have
  /// played. While nothing plays it renders nothing: the clock waits (it is rebased), so an idle
  /// headless engine costs no mixing.
  private func renderHeadlessDue(busy: Bool) {
    let period = device.mixPeriodFrames
    let now = DispatchTime.now().uptimeNanoseconds
    let renderedNanoseconds = UInt64(headlessFramesRendered) * 1_000_000_000 / UInt64(device.sampleRate)
    if headlessStartNanoseconds == 0 || !busy {
      headlessStartNanoseconds = now - min(now, renderedNanoseconds)
      if !busy { return }
    }
    let elapsed = now - headlessStartNanoseconds
    let due = Int64(elapsed / 1000) * Int64(device.sampleRate) / 1_000_000
    var mixes = 0
    while due - headlessFramesRendered >= Int64(period) && mixes < 4 {
      headlessScratch.withUnsafeMutableBufferPointer { render(into: $0.baseAddress!, frameCount: period) }
      headlessFramesRendered += Int64(period)
      mixes += 1
    }
    if due - headlessFramesRendered >= Int64(period) {
      // Far behind (the thread was descheduled): drop the backlog rather than race to catch up.
      headlessStartNanoseconds = now - UInt64(headlessFramesRendered) * 1_000_000_000 / UInt64(device.sampleRate)
    }
  }

  /// At shutdown, once no thread pumps the loop any more: ends every voice's decode thread
  /// (the voices themselves are freed with the loop).
  func stopAllStreams() {
    for voice in voices { voice?.stream.stop() }
    for voice in dying { voice.stream.stop() }
  }

  /// Room reserved for events the loop cannot do without: the event queue's lock is only tried,
  /// so under load events can wait here for a few pumps, and beats and markers (which may be
  /// dropped) must never take the last places an ended voice or a hand-over needs (an append past
  /// the capacity would allocate on this thread).
  private static let pendingEventCapacity = 256
  private var hasRoomForReports: Bool { pendingEvents.count + 64 <= pendingEvents.capacity }

  private func flushEvents() {
    guard !pendingEvents.isEmpty else { return }
    // The event queue's lock is only tried, never waited on; what does not go now goes next pump.
    if events.tryPost(contentsOf: pendingEvents) { pendingEvents.removeAll(keepingCapacity: true) }
  }

  /// Whether `voice` names the slot's current owner (see `VoiceHandle`): requests of earlier
  /// owners, and of a released slot, are dropped.
  private func owns(_ voice: VoiceHandle) -> Bool {
    voice.slot < Self.maximumVoices && generations[voice.slot] == voice.generation
  }

  /// The slot's voice is let go and its settings reset; `generation` owns it from now on (0:
  /// nobody). The status is reset before its generation is published.
  private func resetSlot(_ slot: Int, generation: UInt32, clock: Int64) {
    if let voice = voices[slot] { letGo(voice, clock: clock) }
    voices[slot] = nil
    generations[slot] = generation
    wantsPlaying[slot] = false
    playingWhenPaused[slot] = false
    pendingSeek[slot] = nil
    pendingCrossfades[slot] = nil
    triggeredPlays[slot] = nil
    triggeredDucks[slot] = nil
    duckGroups[slot] = 0
    armed[slot] = nil
    loopReleases[slot] = nil
    for layer in 0..<Voice.maximumLayers { dropPendingLayerFade(slot * Voice.maximumLayers + layer) }
    rates[slot] = 1
    tempos[slot] = 1
    volumes[slot] = 1
    lowPassGains[slot] = 1
    for index in (2 * slot)..<(2 * slot + 2) where beatLines[index] != nil {
      beatLines[index] = nil
      beatLineCount -= 1
    }
    for layer in 0..<Voice.maximumLayers {
      layerGains[slot * Voice.maximumLayers + layer] = 1
      layerLowPasses[slot * Voice.maximumLayers + layer] = 1
      layerLevels[slot * Voice.maximumLayers + layer] = 1
    }
    let status = statuses[slot]
    status.isPrepared.store(false, ordering: .releasing)
    status.seekGenerationDone.store(0, ordering: .releasing)
    status.sampleRate.store(0, ordering: .releasing)
    status.positionFrames.store(0, ordering: .releasing)
    status.storePlayingPosition(.nan, mixFrame: 0)
    status.lengthFrames.store(0, ordering: .releasing)
    status.token.store(0, ordering: .releasing)
    status.underruns.store(0, ordering: .relaxed)
    // Not let go and silent until its own voice attaches and says otherwise (a let-go flag left
    // by the previous owner would make the new owner's voice the first to be stolen).
    status.isLetGo.store(false, ordering: .releasing)
    status.gainBits.store(0, ordering: .relaxed)
    status.storeLayerLevels({ _ in 0 }, count: 0)
    if generation != 0 { status.generation.store(generation, ordering: .releasing) }
  }

  private func apply(_ command: EngineCommand, clock: Int64) {
    switch command {
    case .timed(let frame, let timed):
      switch timed {
      // Claims and call-offs at once: ownership moves in the order the pool made it. A release
      // waits for its frame like any other command (its voice plays on until then: a stop on
      // the director's step used to cut the music the lead early live, and by another amount
      // offline); if the slot is claimed again before it, that claim lets the voice go, and the
      // release then finds it owned by another generation and does nothing.
      case .claim, .callOff:
        // Taken at once, but what they do to music still heard (the slot's voice let go, a
        // pickup cut, the music held kept) waits for their frame: live the director posts them a
        // lead ahead, and a pickup called off was cut 40 ms before the offline render cut it.
        stampedFrame = frame > clock ? frame : nil
        apply(timed, clock: clock)
        stampedFrame = nil
      case .attach, .loadFailed, .timed, .simulateDeviceDisconnect, .stallForTesting:
        apply(timed, clock: clock)
      default:
        guard frame > clock, timedCommands.insert(timed, at: frame) else {
          if frame < clock { published.lateCommands.add(1, ordering: .relaxed) }
          apply(timed, clock: clock)
          return
        }
        // A seek seen before its frame: its voice has the decode thread start on the target
        // now, so that it is there when the seek is taken (see `Voice.prepareSeek`).
        if case .seek(let voice, let seconds, _) = timed, owns(voice) {
          voices[voice.slot]?.prepareSeek(toSeconds: seconds, atFrame: frame, clock: clock)
        }
      }
    case .claim(let voice):
      guard voice.slot < Self.maximumVoices else { return }
      resetSlot(voice.slot, generation: voice.generation, clock: clock)
    case .release(let voice):
      guard owns(voice) else { return }
      resetSlot(voice.slot, generation: 0, clock: clock)
    case .callOff(let incoming, let keep):
      guard owns(incoming) else { return }
      // Begun: no longer waiting for its line, and playing.
      // (Or paused mid-pickup, its fades held: it goes on from there on the resume.)
      let begun =
        pendingCrossfades[incoming.slot] == nil
        && (voices[incoming.slot]?.isAudible == true || voices[incoming.slot]?.holdsFades == true)
      resetSlot(incoming.slot, generation: 0, clock: clock)
      if begun && owns(keep) { voices[keep.slot]?.keepPlaying(clock: stampedFrame ?? clock) }
    case .attach(let voice, let stream):
      guard owns(voice) else {
        // Opened for an owner who has moved on (a new item, a steal, a release): never heard.
        stream.voice.stream.stop()
        pendingEvents.append(.reclaim(stream.voice))
        return
      }
      let slot = voice.slot
      if let old = voices[slot] { letGo(old, clock: clock) }
      let made = stream.voice
      made.install(status: statuses[slot])
      made.setRate(rates[slot])
      if tempos[slot] != 1 { made.setTempo(tempos[slot]) }
      made.setVolume(volumes[slot])
      made.duckGroup = duckGroups[slot]
      if lowPassGains[slot] != 1 { made.setLowPass(lowPassGains[slot]) }
      for layer in 0..<made.layerCount {
        let index = slot * Voice.maximumLayers + layer
        made.setLayer(layer, gain: layerGains[index], lowPass: layerLowPasses[index])
        made.fadeLayer(layer, to: layerLevels[index], seconds: 0, curve: .linear, start: clock)
      }
      made.handoff = armed[slot]
      voices[slot] = made
      if let seek = pendingSeek[slot] {
        made.seek(toSeconds: seek.seconds, clock: clock)
        made.publishPosition()  // before "done", as for a seek of a voice already made
        statuses[slot].seekGenerationDone.store(seek.generation, ordering: .releasing)
        pendingSeek[slot] = nil
      }
      if let through = loopReleases[slot] { made.releaseLoop(through: through) }
      statuses[slot].isPrepared.store(true, ordering: .releasing)
      pendingEvents.append(.prepared(voice: voice))
      if wantsPlaying[slot] && pendingCrossfades[slot] == nil { made.play(clock: clock) }
    case .loadFailed(let voice, let error):
      guard owns(voice) else { return }
      wantsPlaying[voice.slot] = false
      pendingEvents.append(.failed(voice: voice, error))
    case .play(let voice, let unlessWaiting, let resumingOnly):
      guard owns(voice) else { return }
      if unlessWaiting && waitsToBegin(voice) { return }
      if resumingOnly && !playingWhenPaused[voice.slot] { return }
      wantsPlaying[voice.slot] = true
      voices[voice.slot]?.play(clock: clock)
    case .playOnTrigger(let voice, let trigger):
      guard owns(voice) else { return }
      triggeredPlays[voice.slot] = trigger
      triggeredDucks[voice.slot] = nil
    case .duckOnStart(let voice, let group, let shape):
      guard owns(voice), triggeredPlays[voice.slot] != nil else { return }
      triggeredDucks[voice.slot] = (group, shape)
    case .duck(let group, let shape):
      ducks.start(group: group, at: clock, shape: shape)
    case .setDuckGroup(let voice, let group):
      guard owns(voice) else { return }
      duckGroups[voice.slot] = group
      voices[voice.slot]?.duckGroup = group
    case .pause(let voice, let holdingFades, let unlessWaiting):
      guard owns(voice) else { return }
      if unlessWaiting && waitsToBegin(voice) { return }
      playingWhenPaused[voice.slot] = wantsPlaying[voice.slot]
      triggeredPlays[voice.slot] = nil
      wantsPlaying[voice.slot] = false
      voices[voice.slot]?.pause(clock: clock, holdingFades: holdingFades)
    case .stop(let voice, let generation):
      guard owns(voice) else { return }
      wantsPlaying[voice.slot] = false
      pendingSeek[voice.slot] = nil
      voices[voice.slot]?.stop(clock: clock)
      statuses[voice.slot].seekGenerationDone.store(generation, ordering: .releasing)
    case .seek(let voice, let seconds, let generation):
      guard owns(voice) else { return }
      if let playing = voices[voice.slot] {
        // The decode thread starts on the target now, while the voice fades out: a seek from the
        // game or a media key used to wait, silent, for the target's first block after the fade.
        playing.prepareSeek(toSeconds: seconds, atFrame: clock, clock: clock)
        playing.seek(toSeconds: seconds, clock: clock)
        // The position first, then "done": a game thread that sees the seek done reads the
        // position, and until the block's end published it, it read the place before the seek
        // (a media key's "previous" right after a seek to 4 s then took the item before, under
        // a loaded machine's timing).
        playing.publishPosition()
        statuses[voice.slot].seekGenerationDone.store(generation, ordering: .releasing)
      } else {
        pendingSeek[voice.slot] = (seconds, generation)
      }
    case .setRate(let voice, let rate):
      guard owns(voice) else { return }
      rates[voice.slot] = rate
      voices[voice.slot]?.setRate(rate)
    case .setTempo(let voice, let tempo):
      guard owns(voice) else { return }
      tempos[voice.slot] = tempo
      voices[voice.slot]?.setTempo(tempo)
    case .adoptStretcher(let voice, let made):
      guard owns(voice), let playing = voices[voice.slot], playing.adopt(made.stretcher) else {
        // Not wanted (the voice went, or has one): freed off this thread.
        pendingEvents.append(.reclaim(made.stretcher))
        return
      }
      if tempos[voice.slot] != 1 { playing.setTempo(tempos[voice.slot]) }
    case .setVolume(let voice, let volume):
      guard owns(voice) else { return }
      volumes[voice.slot] = volume
      voices[voice.slot]?.setVolume(volume, clock: clock)
    case .setLowPass(let voice, let gainHF):
      guard owns(voice) else { return }
      lowPassGains[voice.slot] = gainHF
      voices[voice.slot]?.setLowPass(gainHF)
    case .setLayer(let voice, let layer, let gain, let lowPass):
      guard owns(voice), (0..<Voice.maximumLayers).contains(layer) else { return }
      layerGains[voice.slot * Voice.maximumLayers + layer] = gain
      layerLowPasses[voice.slot * Voice.maximumLayers + layer] = lowPass
      voices[voice.slot]?.setLayer(layer, gain: gain, lowPass: lowPass)
    case .fadeLayer(let voice, let layer, let level, let seconds, let curve, let trigger):
      guard owns(voice), (0..<Voice.maximumLayers).contains(layer) else { return }
      let index = voice.slot * Voice.maximumLayers + layer
      // The latest word wins: a move still waiting for its music is replaced.
      dropPendingLayerFade(index)
      guard let trigger, owns(trigger.voice) else {
        moveLayer(index, to: level, seconds: seconds, curve: curve, start: clock)
        return
      }
      // On the grid line: from the position of the music that sets the grid (the voice itself,
      // as a rule: its own beat), to the frame; now if that music plays, else once it does.
      pendingLayerFades[index] = PendingLayerFade(level: level, seconds: seconds, curve: curve, trigger: trigger)
      pendingLayerFadeCount += 1
      startBegunLayerFades(clock: clock)
    case .setBeats(let voice, let token, let origin, let spacing, let markers):
      guard owns(voice) else { return }
      let slot = voice.slot
      // The same segment's lines, else a free place, else the lines of a segment not playing.
      let first = 2 * slot
      let second = first + 1
      let index: Int
      if beatLines[first]?.token == token || beatLines[second]?.token == token {
        index = beatLines[first]?.token == token ? first : second
      } else if beatLines[first] == nil || beatLines[second] == nil {
        index = beatLines[first] == nil ? first : second
      } else {
        let playing = voices[slot].map { $0.playingPosition(token: beatLines[first]!.token) != nil } ?? false
        index = playing ? second : first
      }
      let had = beatLines[index] != nil
      // Beats at least 10 ms apart (6,000 BPM) from an origin within a year: a grid denser than
      // that put so many lines in a block that the mix never got through it (a BPM tag of 1e308).
      let hasBeats = spacing >= 0.01 && spacing.isFinite && origin.isFinite && abs(origin) < 3e7
      if hasBeats || !markers.isEmpty {
        // No beats but markers: lines that never fall due (secondsPerBeat 0).
        beatLines[index] = BeatLines(
          token: token, originSeconds: hasBeats ? origin : 0, secondsPerBeat: hasBeats ? spacing : 0, markers: markers)
        if !had { beatLineCount += 1 }
      } else if had && beatLines[index]?.token == token {
        beatLines[index] = nil
        beatLineCount -= 1
      }
    case .scan(let voice, let direction):
      guard owns(voice) else { return }
      voices[voice.slot]?.scan(direction: direction, clock: clock)
    case .arm(let voice, let handoff):
      guard owns(voice) else { return }
      armed[voice.slot] = handoff
      voices[voice.slot]?.handoff = handoff
    case .crossfade(let to, let from, let seconds, let curve, let trigger, let holdSeconds):
      guard owns(to) else { return }
      pendingCrossfades[to.slot] = (from, seconds, curve, trigger, max(0, holdSeconds))
      wantsPlaying[to.slot] = true
    case .fadeOutAndFinish(let voice, let seconds, let curve):
      guard owns(voice) else { return }
      wantsPlaying[voice.slot] = false
      pendingCrossfades[voice.slot] = nil
      voices[voice.slot]?.fadeOutAndFinish(seconds: seconds, curve: curve, start: clock)
    case .resync(let voice):
      guard owns(voice) else { return }
      voices[voice.slot]?.resync(clock: clock)
    case .releaseLoop(let voice, let through):
      guard owns(voice) else { return }
      loopReleases[voice.slot] = max(through, loopReleases[voice.slot] ?? through)
      voices[voice.slot]?.releaseLoop(through: through)
    case .setMasterGain(let gain, let frames):
      masterGainTarget = gain
      masterGainStep = (gain - masterGain) / Float(max(Voice.volumeGlideFrames, frames))
    case .setMasterLowPass(let gainHF):
      busFilter.set(gainHF: gainHF)
    case .simulateDeviceDisconnect:
      // As OpenAL 1.19 does when a device goes: every source stops at once, and the device says
      // it is gone only at the next connection check.
      bus.stopSource()
      simulatedDisconnect = true
    case .stallForTesting(let milliseconds):
      usleep(useconds_t(milliseconds * 1000))
    }
  }

  /// ALC_EXT_disconnect. In OpenAL 1.19 a lost device stops every source, and recovery means a
  /// new device, context and source. Checked five times a second; reopening is retried four
  /// times a second until it works, then the bus resumes on the first frame not heard (the
  /// voices never stopped: they only wait while the bus is full): the first frame OpenAL had
  /// not played, less the device's latency (what a sound server still held when it went).
  ///
  /// A source that stopped with audio still queued (the bus checks ALC_CONNECTED the moment it
  /// sees a stop, and the wall clock says whether the source could have played all it had) is a
  /// device gone or stalled: then the connection is checked at once, and if the device is still
  /// there after two seconds, the unheard audio goes back on a fresh source of the same device.
  private func watchConnection() {
    let now = Int64(DispatchTime.now().uptimeNanoseconds)
    let stoppedEarly = !deviceLost && !device.rendersOnDemand && bus.stoppedEarly
    let interval: Int64 = deviceLost ? 250_000_000 : (stoppedEarly ? 20_000_000 : 200_000_000)
    guard now - lastConnectionCheckNanoseconds >= interval else { return }
    lastConnectionCheckNanoseconds = now
    if !deviceLost {
      if simulatedDisconnect || !device.isConnected {
        simulatedDisconnect = false
        deviceLost = true
        stoppedSince = nil
        pendingEvents.append(.deviceLost(device.name))
        for slot in 0..<Self.maximumVoices {
          if let voice = voices[slot] { pendingEvents.append(.interrupted(voice: voice.handle, true)) }
        }
      } else if stoppedEarly {
        let since = stoppedSince ?? now
        stoppedSince = since
        // Two seconds, to be safe: the bus now asks ALC_CONNECTED the moment it sees a stop, and
        // OpenAL marks a device disconnected before it stops its sources, so a device that went
        // away is never taken for a stall. (The 0.4 s once lost here after a sound server was
        // killed came from restarting a source on the disconnected device, pump after pump.)
        // A device that really stalls is rare.
        if now - since >= 2_000_000_000 {
          // Still connected: the device had stalled. Put back what it did not play.
          stoppedSince = nil
          do throws(OutputError) {
            try bus.requeueUnheard(on: device)
          } catch {
            pendingEvents.append(
              .diagnostic(Diagnostic(.error, "cannot restart the music bus: \(error)", error: error)))
          }
        }
        return
      } else {
        stoppedSince = nil
        // What the device holds beyond what OpenAL has mixed: lost with it, so played again
        // after a loss. Looked at while all is well (a dying device reports anything), and
        // averaged: it rises and falls by up to a device period as the backend writes, and the
        // moment of a loss is anybody's.
        let latency = Double(device.latencyNanoseconds) * Double(bus.mixRate) / 1e9
        averageLatencyFrames = averageLatencyFrames.map { $0 + (latency - $0) / 8 } ?? latency
        return
      }
    }
    // OpenAL starts the new device's threads here: named as OpenAL's, at the normal priority,
    // not as this thread.
    var reopened: OutputDevice?
    ThreadPriority.whileNormal { ThreadName.whileNamed("alsoft-mixer") { reopened = reopenDevice() } }
    guard let newDevice = reopened else { return }
    let oldDevice = device
    newDevice.makeCurrent()
    let wanted = Int(averageLatencyFrames ?? 0)
    let rewound: Int
    do throws(OutputError) {
      rewound = try bus.requeueUnheard(on: newDevice, rewindFrames: wanted)
    } catch {
      pendingEvents.append(.diagnostic(Diagnostic(.error, "after the device came back: \(error)", error: error)))
      pendingEvents.append(.reclaim(newDevice))
      oldDevice.makeCurrent()
      return
    }
    device = newDevice
    devicePaused = false
    // The new device's period may differ: so may what the bus keeps ahead.
    published.queuedAheadFrames.store(bus.targetQueuedFrames, ordering: .relaxed)
    pendingEvents.append(.reclaim(oldDevice))
    deviceLost = false
    averageLatencyFrames = nil
    for slot in 0..<Self.maximumVoices {
      if let voice = voices[slot] { pendingEvents.append(.interrupted(voice: voice.handle, false)) }
    }
    pendingEvents.append(
      .deviceRestored(newDevice.kind, newDevice.name, replayedFrames: rewound, heldFrames: wanted))
  }

  private var stoppedSince: Int64?
  /// The device's latency in mix frames, averaged over the checks while it was connected and
  /// playing; nil before the first.
  private var averageLatencyFrames: Double?
}

/// Commands waiting for their mix frame, in frame order (commands for the same frame in the order
/// they came), in a fixed block of memory: inserting, taking and looking call no generic code.
private struct TimedCommands {
  private struct Entry {
    var frame: Int64
    var command: EngineCommand
  }
  private let entries: UnsafeMutablePointer<Entry>
  let capacity: Int
  private(set) var count = 0

  init(capacity: Int) {
    self.capacity = capacity
    entries = .allocate(capacity: capacity)
  }

  func deallocate() {
    entries.deinitialize(count: count)
    entries.deallocate()
  }

  var nextFrame: Int64? { count > 0 ? entries[0].frame : nil }

  /// Inserts after every entry due at or before `frame`; false when full.
  mutating func insert(_ command: EngineCommand, at frame: Int64) -> Bool {
    guard count < capacity else { return false }
    var index = count
    while index > 0 && entries[index - 1].frame > frame { index -= 1 }
    if index < count { (entries + index + 1).moveInitialize(from: entries + index, count: count - index) }
    (entries + index).initialize(to: Entry(frame: frame, command: command))
    count += 1
    return true
  }

  /// The first command due at or before `frame`, removed.
  mutating func takeFirst(dueBy frame: Int64) -> EngineCommand? {
    guard count > 0, entries[0].frame <= frame else { return nil }
    let entry = entries.move()
    count -= 1
    if count > 0 { entries.moveInitialize(from: entries + 1, count: count) }
    return entry.command
  }
}
