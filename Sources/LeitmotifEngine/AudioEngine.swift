import Dispatch
import FoundationEssentials
import LeitmotifDecoding
import LeitmotifOutput
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Where the engine's sound goes.
public enum OutputChoice: Sendable, Equatable {
  /// The system's default device; headless (OpenAL Soft's null backend, real time) where there
  /// is no sound card.
  case defaultDevice
  /// A device by its OpenAL name (see `OutputDevice.playbackDeviceNames()`).
  case namedDevice(String)
  /// No sound, in real time, even where a sound card exists (servers, tests): a loopback device
  /// the streaming thread renders on the wall clock and discards.
  case headless
  /// Offline: nothing plays by itself; `render` mixes on demand through the loopback device,
  /// faster than real time and deterministically. `renderFrames` is the size of every mix.
  case offline(sampleRate: Int, renderFrames: Int)
}

/// How far ahead of OpenAL's mixer a real-time engine keeps the music bus: the trade between the
/// time an immediate action takes to be heard and the room the streaming thread has for a late
/// wake-up. (Like miniaudio's performance profiles or a buffer size in SDL.) Offline engines and
/// the headless output ignore it: they mix on demand.
public enum OutputLatency: Sendable, Equatable {
  /// A device period and 32 ms queued; the streaming thread wakes once a period. An immediate
  /// action (`play()` over other music, a stinger, a media key) is heard after about 47 ms
  /// (median on OpenAL's wave backend at 48 kHz and 1024-frame periods), and a wake-up up to
  /// about 30 ms late costs nothing.
  case standard
  /// A device period and 10.7 ms queued; the streaming thread wakes twice a period, and at once
  /// when a command is posted. An immediate action is heard after about 30 ms (medians of 26 to
  /// 31 ms here, same device), for twice the wake-ups and less room: should the streaming thread
  /// still come too late and the bus run dry (an underrun, reported as usual), the engine keeps
  /// 10.7 ms more queued from then on, up to `.standard`'s, and says so in a notice.
  case low
}

/// Leitmotif's audio engine: one output device, the streaming thread that feeds it, a loader
/// that opens files, and the notification thread that reports back.
///
/// Create one per game. Players are made on it (`Player(engine:)`).
///
/// Threads: a real-time engine runs three of its own: streaming (feeds OpenAL; never waits on
/// the game), loading (opens and pre-buffers files: all file opening happens there), and
/// notifications (runs the host's callbacks). An offline engine has none: loading happens
/// in the calling thread and `render` pumps, mixes and delivers callbacks, in that order.
///
/// Thread safety: every method may be called from any thread.
public final class AudioEngine: @unchecked Sendable {
  /// The device in use when the engine started (after a disconnect the engine opens a new one).
  public let initialDevice: OutputDevice
  /// Whether the engine renders on demand (`OutputChoice.offline`): no threads of its own; call
  /// `render(into:frameCount:)`.
  public let isOffline: Bool
  /// The mixing rate of the output.
  public var sampleRate: Int { initialDevice.sampleRate }

  package let commands = CommandQueue<EngineCommand>(prepare: { command in
    CommandTime.current.map { .timed(frame: $0, command) } ?? command
  })
  /// The mix clock, for scheduling on exact frames from other threads.
  package let mixClock: MixClock
  private let events = CommandQueue<EngineEvent>(reserving: 256)
  private let loop: StreamingLoop
  package let statuses: [VoiceStatus]
  /// Who owns which voice (slots, generations, priorities, listeners).
  package let pool: VoicePool
  /// Each voice's stream, for appending segments and releasing loops from game-side threads.
  private let streams = StreamRegistry()
  /// Files decoded whole into memory (`preload`): the loader plays them from there.
  let preloaded = PreloadCache()
  /// The engine's decode threads still running (shutdown waits for them).
  let decodeThreads = ThreadCensus()
  /// At most this many voices play at once (the pool's cap).
  public var voiceLimit: Int { pool.limit }
  private let diagnostics = Mutex<DiagnosticsHandler?>(nil)
  private let running = RunFlag()
  /// Set by the streaming thread once the kernel has lowered its nice value.
  private let streamingNice = NiceValue()
  /// Opens files for every engine, offline ones too: an offline render never opens or reads a
  /// file on its caller's thread (a game may render from its audio callback). What it needs
  /// before its frame comes, the render waits for (see `StreamingLoop.settleLoads`).
  let loader = LoaderThread()
  /// Offline engines: the loader's `settle`, for the loop and each voice (set once in init).
  private var offlineSettle: (@Sendable () -> Bool)?
  private var streamingThread: NativeThread?
  private var notificationThread: NativeThread?
  private let renderLock = Mutex<Void>(())
  private let startupNotice: String?
  /// Underruns across all voices since the engine started.
  public var underrunCount: Int { statuses.reduce(0) { $0 + $1.underruns.load(ordering: .relaxed) } }
  /// The latency asked for at creation.
  public let outputLatency: OutputLatency
  /// Frames of mixed audio the engine keeps queued ahead of OpenAL's mixer (a device period and
  /// the slack of `outputLatency`, more after an underrun with `.low`); 0 for an engine that
  /// renders on demand (offline, headless). What an immediate action waits behind, besides
  /// the device period it is mixed in.
  public var queuedAheadFrames: Int { mixClock.queuedAheadFrames.load(ordering: .relaxed) }
  /// The most one pump of the streaming thread mixes at once: two device periods and a block of
  /// the bus. A pump that finds two of OpenAL's mixes done since the last (the backend mixed
  /// twice in a row, or the pump woke late) tops up both at once; on the wave backend that
  /// happened every 20 to 30 s of a level, and after each pause menu. A change stamped for a
  /// frame nearer than this may find it mixed already.
  package var framesMixedPerPump: Int { 2 * initialDevice.mixPeriodFrames + MusicBus.blockFrames }

  /// Opens the output and starts the engine's threads.
  /// - Parameters:
  ///   - output: where the sound goes.
  ///   - voiceLimit: the voice pool's cap (1 to 16): players, crossfades and stingers share it.
  ///     A value outside is brought inside, with a warning to `diagnostics`.
  ///   - latency: how far ahead of OpenAL the music bus runs (see `OutputLatency`); real-time
  ///     devices only.
  ///   - diagnostics: receives notices, warnings and errors (the library never prints), on any
  ///     of the threads listed in the Threading article: make it thread-safe and quick.
  /// - Throws: `OutputError` when no output at all can be opened (a named device that does not
  ///   exist, or a loopback format OpenAL cannot render). The default device never throws for
  ///   lack of a sound card: it falls back to the headless null output and says so.
  public convenience init(
    output: OutputChoice = .defaultDevice, voiceLimit: Int = 16, latency: OutputLatency = .standard,
    diagnostics: DiagnosticsHandler? = nil
  ) throws(OutputError) {
    try self.init(
      output: output, voiceLimit: voiceLimit, latency: latency, diagnostics: diagnostics, streamingThreadHooks: nil)
  }

  /// Functions the streaming thread calls when it starts and before it ends (tests: the
  /// real-time audit that counts allocations, lock waits and file I/O on that thread).
  package struct ThreadHooks: Sendable {
    var enter: @convention(c) () -> Void
    var leave: @convention(c) () -> Void
  }
  private let streamingThreadHooks: ThreadHooks?

  init(
    output: OutputChoice, voiceLimit: Int, latency: OutputLatency = .standard, diagnostics: DiagnosticsHandler?,
    streamingThreadHooks: ThreadHooks?
  ) throws(OutputError) {
    self.streamingThreadHooks = streamingThreadHooks
    outputLatency = latency
    self.diagnostics.withLock { $0 = diagnostics }
    var notice: String?
    switch output {
    case .offline(let sampleRate, let renderFrames):
      initialDevice = try OutputDevice.openLoopback(sampleRate: sampleRate, renderFrames: renderFrames)
      isOffline = true
    case .headless:
      initialDevice = try OutputDevice.openClockedHeadless()
      isOffline = false
    case .namedDevice(let name):
      initialDevice = try OutputDevice.openPlayback(named: name)
      isOffline = false
    case .defaultDevice:
      do {
        initialDevice = try AudioEngine.openDefaultOutput()
        if initialDevice.kind == .headless {
          notice = "no sound device (\(OpenALRuntime.prepare().reason)): playing headless in real time"
        }
      } catch {
        initialDevice = try OutputDevice.openClockedHeadless()
        notice = "the default sound device could not be opened (\(error)): playing headless in real time"
      }
      isOffline = false
    }
    startupNotice = notice
    statuses = (0..<StreamingLoop.maximumVoices).map { _ in VoiceStatus() }
    pool = VoicePool(
      limit: max(1, min(voiceLimit, StreamingLoop.maximumVoices)), statuses: statuses, commands: commands,
      events: events)
    let isOffline = self.isOffline
    mixClock = MixClock(sampleRate: initialDevice.sampleRate)
    if !isOffline { mixClock.idleSinceNanoseconds.store(DispatchTime.now().uptimeNanoseconds, ordering: .releasing) }
    loop = try StreamingLoop(
      device: initialDevice, statuses: statuses, commands: commands, events: events, clock: mixClock,
      reopenDevice: { isOffline ? nil : try? AudioEngine.openDefaultOutput() }, isOffline: isOffline,
      lowLatency: latency == .low)
    if let notice { report(Diagnostic(.notice, notice)) }
    if voiceLimit != pool.limit {
      report(
        Diagnostic(
          .warning,
          "voiceLimit \(voiceLimit) is outside 1...\(StreamingLoop.maximumVoices): the engine plays at most \(pool.limit) voices"
        ))
    }
    if isOffline {
      let loader = self.loader
      // Offline, a start (or a gapless join) that finds its file still opening waits for the
      // loader, so the render is the same whatever the loader's speed.
      offlineSettle = { loader.settle() }
      loop.settleLoads = offlineSettle
    } else {
      startThreads()
      RunningEngines.add(self)
    }
  }

  deinit { shutdown() }

  /// The mix frame being heard now, as of the streaming thread's last look at OpenAL: frames
  /// mixed less what the music bus and the device still hold (offline: the frames rendered).
  package var heardFrame: Int64 { mixClock.heardFrames.load(ordering: .relaxed) }

  /// Runs beat callbacks when their beat is heard (see `whenAudible`).
  private let audible = AudibleDispatcher()

  /// Runs `work` on Leitmotif's own thread at `uptimeNanoseconds` (the uptime clock,
  /// `DispatchTime.now().uptimeNanoseconds`): when what the mixer reported is heard. 0 (an
  /// offline engine's stamp): at once, in order. Nothing runs after `shutdown()`.
  package func whenAudible(at uptimeNanoseconds: UInt64, _ work: @escaping @Sendable () -> Void) {
    audible.schedule(at: uptimeNanoseconds, work)
  }

  /// Stops every thread of the engine: streaming, notifications, the loader and each voice's
  /// decode thread; returns when they have ended (at most about two seconds: a decode thread
  /// stuck in a file read is not waited for longer). Called automatically when the engine is
  /// released; call it to stop sooner (the CLI does on Ctrl-C). Idempotent. Players of the engine
  /// go silent; nothing more plays on it. A program that exits without it is safe too: process
  /// exit shuts down every engine still running before OpenAL Soft tears itself down.
  public func shutdown() {
    guard running.value.exchange(false, ordering: .acquiringAndReleasing) else { return }
    RunningEngines.remove(self)
    events.wakeUp()
    commands.wakeUp()
    let deadline = DispatchTime.now() + .seconds(2)
    while let thread = streamingThread, !thread.isFinished, DispatchTime.now() < deadline { usleep(1000) }
    // The loader: what is queued there sees the engine stopped and opens nothing more.
    // Not from the loader itself (a diagnostics handler runs there): it ends when this returns.
    if !loader.isCurrent { loader.drain() }
    loader.stop()
    while !loader.isCurrent, !loader.isFinished, DispatchTime.now() < deadline { usleep(1000) }
    // The voices' decode threads (the streaming thread has ended, or the engine is offline and
    // renders no more: nobody else touches the loop now).
    if streamingThread?.isFinished ?? true { renderLock.withLock { _ in loop.stopAllStreams() } }
    for stream in streams.takeAll() { stream.stop() }
    // A wait of its own: the loader's drain above may have taken the first deadline's time (a
    // voice pre-buffering on a loaded machine), and a stopped decode thread ends in microseconds.
    let decodeDeadline = DispatchTime.now() + .seconds(2)
    while decodeThreads.count > 0, DispatchTime.now() < decodeDeadline { usleep(1000) }
    audible.stop(waitingUpTo: 1)
    preloaded.removeAll()
    // Not when the notification thread itself shuts down (a handler that calls `exit`, which
    // runs `RunningEngines`' handler on the calling thread): it cannot finish while it waits.
    while let thread = notificationThread, !thread.isCurrent, !thread.isFinished, DispatchTime.now() < deadline {
      usleep(1000)
    }
    // Last, the owners: a player says it stopped, event streams end.
    for hook in shutdownHooks.close() { hook() }
  }

  /// What owners (players, directors) do when the engine shuts down.
  private let shutdownHooks = ClosingRegistry<@Sendable () -> Void>()

  /// Calls `hook` once, on the thread that shuts the engine down, when `shutdown()` has stopped
  /// everything (at once, on this thread, if it already has). Returns a token for
  /// `removeShutdownHook(_:)`: an owner that goes first removes its hook, or the engine would
  /// keep one for every player ever made.
  package func addShutdownHook(_ hook: @escaping @Sendable () -> Void) -> UInt64 {
    guard let token = shutdownHooks.add(hook) else {
      hook()
      return 0
    }
    return token
  }

  /// Forgets the hook of `token` (0 and unknown tokens: nothing).
  package func removeShutdownHook(_ token: UInt64) { shutdownHooks.remove(token) }

  /// Whether `shutdown()` has run (or started): nothing plays on the engine any more, and its
  /// players' `play()` does nothing.
  public var isShutDown: Bool { !running.value.load(ordering: .acquiring) }

  /// The nice value the streaming thread (the one that mixes and keeps OpenAL fed) runs at: -15
  /// where the system grants it, so a loaded machine cannot hold it off until the output runs
  /// dry (see the Threading article). The kernel grants it to a process with CAP_SYS_NICE, or
  /// down to what RLIMIT_NICE allows (limits.conf's `nice`); elsewhere 0, a normal thread.
  /// 0 for an offline engine (it has no streaming thread) and until the thread has started.
  public var streamingThreadNice: Int { streamingNice.value.load(ordering: .acquiring) }

  /// The master gain over everything the engine plays (music, stingers, one-shot players), 0 to
  /// 1. Setting it glides there over a few milliseconds; `setMasterGain(_:rampSeconds:)` fades.
  public var masterGain: Float {
    get { masterGainValue.withLock { $0 } }
    set { setMasterGain(newValue, rampSeconds: 0) }
  }

  /// Moves the master gain to `gain` (0 to 1; NaN means 1) in a straight line over
  /// `rampSeconds` of mixed audio, from wherever it is then (a fade under way is taken over).
  /// `masterGain` reads the target at once.
  public func setMasterGain(_ gain: Float, rampSeconds: Double) {
    let gain = gain.isFinite ? max(0, min(1, gain)) : 1
    let frames = rampSeconds.isFinite && rampSeconds > 0 ? Int(min(rampSeconds, 3600) * Double(sampleRate)) : 0
    masterGainValue.withLock { $0 = gain }
    commands.post(.setMasterGain(gain, frames: frames))
  }
  private let masterGainValue = Mutex<Float>(1)

  /// Muffles everything the engine plays ("under water", a pause menu): the high-frequency gain
  /// of the music bus's shelf filter, 0 to 1, like a player's `lowPassGain` but over the whole
  /// mix. 1, the default, leaves the output exactly unfiltered. NaN and infinities mean 1.
  public var masterLowPassGain: Float {
    get { masterLowPassValue.withLock { $0 } }
    set {
      let gain = newValue.isFinite ? max(0, min(1, newValue)) : 1
      masterLowPassValue.withLock { value in
        value = gain
        commands.post(.setMasterLowPass(gain))
      }
    }
  }
  private let masterLowPassValue = Mutex<Float>(1)

  /// Scheduled changes (the director's, on exact mix frames) that reached the streaming thread
  /// after their frame was mixed, and so took effect late, and a queue's hand-overs to a next
  /// item that was not ready on its frame: 0 on a machine that keeps up.
  public var lateCommandCount: Int { mixClock.lateCommands.load(ordering: .relaxed) }

  /// Runs `body` with every command it makes the engine's players send (play, crossfade, gain,
  /// seek, ...) taking effect on mix frame `frame` exactly, if that frame is not mixed yet when
  /// they arrive (else at once). The director does its steps this way, so what it does lands on
  /// the same frames live as offline. Thread safety: any thread; applies to this thread only.
  package func performing<Result>(atMixFrame frame: Int64, _ body: () throws -> Result) rethrows -> Result {
    try CommandTime.with(frame, body)
  }

  /// Sets or replaces the diagnostics handler.
  public func setDiagnosticsHandler(_ handler: DiagnosticsHandler?) { diagnostics.withLock { $0 = handler } }

  private static func openDefaultOutput() throws(OutputError) -> OutputDevice {
    try OutputDevice.openPlayback(named: nil)
  }

  private func startThreads() {
    // The threads hold the loop and queues, not the engine, so releasing the engine stops them.
    let loop = self.loop
    let running = self.running
    let commands = self.commands
    // While something plays, pump once per device period (21.3 ms at 1024 frames and 48 kHz):
    // the mixer tops the music bus up in blocks of 256 frames to a device period and six blocks,
    // so a wake-up late by up to a period (the worst phase against OpenAL's mixes; up to two in
    // the best) still finds a period queued (see `MusicBus`). As the bus starts from empty, and
    // after a close call (a pump that finds less than a period left), it pumps twice a period
    // for a while (`StreamingLoop.sleepMicroseconds`). Every wake-up costs (tens of
    // microseconds on a virtual machine): measured with one voice on OpenAL's null device, in
    // one run against SFML's 0.0122, 0.0127 CPU s per audio s at two pumps a period and 0.0085
    // at one. Commands wait for the next pump; scheduled ones are stamped ahead of their frame
    // (the director's lead), so only immediate ones feel it (and the bus runs less far ahead on
    // average: a play() heard after 43 ms, median, against 51 at two pumps a period). With
    // nothing playing, sleep until a command comes (or 100 ms pass, for the device watch): an
    // idle engine costs next to nothing (after two idle seconds OpenAL's own mixer is paused
    // too, see `StreamingLoop`). The clocked headless device sleeps until its next period is due
    // instead.
    let periodMicroseconds = initialDevice.mixPeriodFrames * 1_000_000 / max(1, initialDevice.sampleRate)
    let interval = max(4_000, min(24_000, periodMicroseconds))
    let hooks = streamingThreadHooks
    let streamingNice = self.streamingNice
    let streaming = NativeThread {
      // Before the audit's hooks: the system calls are part of starting, not of streaming. And
      // before the name, so a thread seen by its name has had its priority settled.
      let nice = ThreadPriority.raiseCurrent(toNice: ThreadPriority.streamingNice)
      streamingNice.value.store(Int(nice), ordering: .releasing)
      nameCurrentThread("lm.streaming")
      hooks?.enter()
      while running.value.load(ordering: .acquiring) {
        if loop.pump() {
          let sleep = loop.sleepMicroseconds(interval: interval)
          if loop.wakesOnPost {
            commands.waitForPost(timeout: .microseconds(sleep))
          } else {
            usleep(useconds_t(sleep))
          }
        } else {
          commands.waitForPost(timeout: .milliseconds(100))
        }
      }
      hooks?.leave()
    }
    streamingThread = streaming
    let events = self.events
    let notifications = NativeThread { [weak self] in
      nameCurrentThread("lm.notify")
      var batch: [EngineEvent] = []
      batch.reserveCapacity(256)
      while running.value.load(ordering: .acquiring) {
        events.waitForPost(timeout: .seconds(1))
        events.takeAllWaiting(into: &batch)
        guard let engine = self else { return }
        for event in batch { engine.deliver(event) }
        batch.removeAll(keepingCapacity: true)
      }
    }
    notificationThread = notifications
    streaming.start()
    notifications.start()
  }

  // MARK: - Offline rendering

  /// Offline engines: pumps the streaming loop, mixes `frameCount` stereo Float32 frames into
  /// `buffer`, then delivers the events of this step on the calling thread.
  /// Keep `frameCount` equal to the `renderFrames` the engine was made with for exact timing.
  /// After `shutdown()` it writes silence.
  public func render(into buffer: UnsafeMutablePointer<Float>, frameCount: Int) {
    precondition(isOffline, "render(into:frameCount:) is for offline engines")
    guard !isShutDown else {
      buffer.initialize(repeating: 0, count: 2 * max(0, frameCount))
      return
    }
    renderLock.withLock { _ in
      loop.pump()
      loop.render(into: buffer, frameCount: frameCount)
    }
    deliverPendingEvents()
  }

  private func deliverPendingEvents() {
    var batch: [EngineEvent] = []
    events.takeAllWaiting(into: &batch)
    for event in batch { deliver(event) }
  }

  // MARK: - Voices (used by players)

  /// Takes a voice for a new owner (see `VoicePool.claim` for the stealing policy); `listener`
  /// gets the events of this voice (of this claim only) on the notification thread.
  package func claimVoice(
    priority: Int = 0, stealsHeld: Bool = true, listener: @escaping @Sendable (EngineEvent) -> Void
  ) -> VoiceLease? {
    pool.claim(priority: priority, stealsHeld: stealsHeld, listener: listener)
  }

  /// A new group of voices to duck together (a queue player's: see `EngineCommand.duck`).
  package func makeDuckGroup() -> UInt32 {
    let group = duckGroups.wrappingAdd(1, ordering: .relaxed).newValue
    return group == 0 ? duckGroups.wrappingAdd(1, ordering: .relaxed).newValue : group
  }
  private let duckGroups = Atomic<UInt32>(0)

  /// The status of `voice` once the streaming thread has taken up its claim, else nil.
  package func status(of voice: VoiceHandle) -> VoiceStatus? { pool.status(of: voice) }

  /// Offline engines: returns once the loader has opened what was asked of it so far (the first
  /// music, after a start), so that the next render need not wait for it. Real-time engines:
  /// returns at once.
  public func waitForLoader() {
    guard isOffline else { return }
    _ = loader.settle()
  }

  /// Opens `path` (on the loader thread), seeks to
  /// `startSeconds`, decodes the first buffers, and hands the stream to the streaming thread.
  package func load(path: String, startSeconds: Double, voice: VoiceHandle) {
    load(SegmentRequest(token: 0, path: path), startSeconds: startSeconds, voice: voice)
  }

  /// Opens the segment `request` for `voice`, starting at `startSeconds` of the file (nil: at the
  /// segment's own start), pre-buffers it, makes its `Voice` (here, so the streaming thread
  /// allocates nothing) and attaches it. Later `append`s for the voice run after.
  /// `timeStretching`: the voice gets a time-stretcher, so `.setTempo` works on it (about 250 KB
  /// and a millisecond or more of the loader's time each, so only where a tempo is wanted; see
  /// also `provideStretcher`).
  package func load(
    _ request: SegmentRequest, startSeconds: Double?, voice: VoiceHandle, timeStretching: Bool = false
  ) {
    let open = segmentOpener()
    let commands = self.commands
    let streams = self.streams
    let census = decodeThreads
    let running = self.running
    let mixRate = sampleRate
    let isOffline = self.isOffline
    let pool = self.pool
    let settleLoads = offlineSettle
    runOnLoader {
      // Nothing is opened for an engine that stopped, or for an owner who has moved on.
      guard running.value.load(ordering: .acquiring), pool.owns(voice) else { return }
      let command: EngineCommand
      do throws(DecodeError) {
        let segment = try open(request)
        var start = segment.startFrame
        if let startSeconds {
          let rate = Double(segment.decoder.format.sampleRate)
          start = max(0, min(FrameMath.frames(seconds: startSeconds, rate: rate), segment.endFrame))
          if start != segment.decoder.cursorFrames { try segment.decoder.seek(toFrame: start) }
        }
        let stream = DecodeAheadStream(first: segment, startFrame: start, mixRate: mixRate, census: census)
        streams.set(stream, for: voice)
        // Pre-buffer: wait (here, on the loader thread) until the ring holds what the OpenAL
        // buffers will take, so that attaching never waits. Not offline: there the voice waits
        // for its first block itself (woken by the decode thread, no polling), and the render
        // that needs it waits no longer than that.
        let deadline = Date().addingTimeInterval(5)
        while !isOffline && stream.availableBlocks < Self.preBufferBlocks && !stream.initialGenerationEnded
          && !stream.waitsAtSeam && Date() < deadline
        {
          usleep(500)
        }
        let made = Voice(
          handle: voice, stream: stream, startFrame: start, mixRate: mixRate, waitForDecoding: isOffline,
          timeStretching: timeStretching, settleLoads: settleLoads)
        command = .attach(voice: voice, LoadedStream(voice: made))
      } catch {
        streams.remove(voice)
        command = .loadFailed(voice: voice, error)
      }
      commands.post(command)
    }
  }

  /// Makes a time-stretcher for `voice` on the loader (SoundTouch allocates as it warms up,
  /// about a millisecond) and hands it to the voice: for a voice loaded without `timeStretching`
  /// whose owner now wants a tempo. The loader runs in order, so a voice whose load was asked
  /// for before this has its stream (and is attached) by the time the stretcher arrives; the
  /// tempo set for it applies then, a few milliseconds after it was asked for (offline: at the
  /// next render, as this waits for the loader).
  package func provideStretcher(for voice: VoiceHandle) {
    let commands = self.commands
    let streams = self.streams
    let running = self.running
    let pool = self.pool
    runOnLoader {
      guard running.value.load(ordering: .acquiring), pool.owns(voice), let stream = streams.stream(for: voice),
        let made = TimeStretcher(sampleRate: stream.blockRate)
      else { return }
      commands.post(.adoptStretcher(voice: voice, MadeStretcher(stretcher: made)))
    }
    // Offline, the stretcher lands on the next render, whatever the loader's pace: the same
    // output every run.
    if isOffline { _ = loader.settle() }
  }

  /// Blocks decoded before a stream is handed to the streaming thread (about a third of a second):
  /// a voice starts at once, and rides out a slow first read.
  static let preBufferBlocks = 4

  /// Opens `request` and queues it on the slot's stream, to follow what is there gaplessly.
  /// Failures (and a sample rate the stream cannot take) come back as `.appendFailed`.
  package func append(_ request: SegmentRequest, voice: VoiceHandle) {
    let open = segmentOpener()
    let events = self.events
    let streams = self.streams
    runOnLoader {
      guard let stream = streams.stream(for: voice) else { return }
      do throws(DecodeError) {
        let segment = try open(request)
        let rate = segment.decoder.format.sampleRate
        guard rate == stream.format.sampleRate else {
          let error = DecodeError(
            path: request.path,
            reason: .unsupported(
              "its sample rate \(rate) Hz differs from \(stream.format.sampleRate) Hz of the item before"))
          events.post(.appendFailed(voice: voice, token: request.token, error, rateMismatch: true))
          return
        }
        stream.append(segment)
      } catch {
        events.post(.appendFailed(voice: voice, token: request.token, error, rateMismatch: false))
      }
    }
  }

  /// Replaces what follows segment `token` on the slot's stream with `request` (or nothing).
  /// When the stream had already decoded into the old follower, the voice re-seeks (10 ms dip).
  package func replaceUpcoming(voice: VoiceHandle, after token: Int, with request: SegmentRequest?) {
    let open = segmentOpener()
    let events = self.events
    let streams = self.streams
    let commands = self.commands
    runOnLoader {
      guard let stream = streams.stream(for: voice) else { return }
      var segments: [StreamSegment] = []
      if let request {
        do throws(DecodeError) {
          let segment = try open(request)
          if segment.decoder.format.sampleRate == stream.format.sampleRate {
            segments.append(segment)
          } else {
            let error = DecodeError(path: request.path, reason: .unsupported("another sample rate"))
            events.post(.appendFailed(voice: voice, token: request.token, error, rateMismatch: true))
          }
        } catch {
          events.post(.appendFailed(voice: voice, token: request.token, error, rateMismatch: false))
        }
      }
      if !stream.replaceUpcoming(after: token, with: segments) { commands.post(.resync(voice: voice)) }
    }
  }

  /// Ends the loops of the slot's segments up to `token`: they play on to their ends. Applied on
  /// a mix frame like any command; a seam the mixer is within 0.17 s of (at the stream's rate)
  /// is committed, and the loop ends after it (see `Voice.releaseLoop`).
  package func releaseLoop(voice: VoiceHandle, through token: Int) {
    commands.post(.releaseLoop(voice: voice, through: token))
  }

  /// Loader work runs in order on the loader thread, for offline engines too (their renders
  /// wait where they need its result, which keeps them deterministic).
  private func runOnLoader(_ work: @escaping @Sendable () -> Void) {
    loader.async(work)
  }

  /// Opens a segment on the loader: from its preloaded copy when it has a current one, else from
  /// the file. Says what there is to say through the diagnostics handler: the decoder's warnings
  /// (cut off, damaged, a tag skipped: the item plays what is there, and the game learns why it
  /// may end early), and a preloaded file found changed on disk (it streams instead). An offline
  /// engine reads a file its stream will resample through a `PipelinedDecoder`.
  private func segmentOpener() -> @Sendable (SegmentRequest) throws(DecodeError) -> StreamSegment {
    let preloaded = self.preloaded
    let pipelinesResampled = isOffline
    let mixRate = sampleRate
    return { [weak self] request throws(DecodeError) in
      var stale: [String] = []
      defer {
        for path in stale {
          self?.report(
            Diagnostic(
              .notice,
              "\(FileSystemPath.displayed(path)): changed since it was preloaded: it streams from the file until it is preloaded again"
            ))
        }
      }
      let segment = try request.open(preloaded: preloaded, stale: &stale)
      for warning in segment.decoder.warnings {
        self?.report(Diagnostic(.warning, "\(segment.decoder.path): \(warning)"))
      }
      // (A stream with stems is resampled by its voice, after they are mixed; a preloaded file
      // costs nothing to decode.)
      if pipelinesResampled && segment.stems.isEmpty && segment.decoder.format.sampleRate != mixRate
        && !(segment.decoder is MemoryDecoder)
      {
        return segment.reading(through: PipelinedDecoder(segment.decoder))
      }
      return segment
    }
  }

  // MARK: - Events

  package func report(_ diagnostic: Diagnostic) {
    let handler = diagnostics.withLock { $0 }
    handler?(diagnostic)
  }

  private func deliver(_ event: EngineEvent) {
    switch event {
    case .reclaim: return  // dropping the reference here frees it, off the streaming thread
    case .diagnostic(let diagnostic): report(diagnostic)
    case .outputPaused(let name, let paused):
      report(
        Diagnostic(
          .notice,
          paused
            ? "nothing played for \(StreamingLoop.idleNanosecondsBeforeDevicePause / 1_000_000_000) s: "
              + "OpenAL's mixer on \"\(name)\" is paused until something plays"
            : "OpenAL's mixer on \"\(name)\" runs again"))
    case .queueWidened(let frames):
      report(
        Diagnostic(
          .notice,
          "the music ran dry (the streaming thread woke too late): low latency keeps "
            + "\(frames) frames (\((frames * 1000 + sampleRate / 2) / sampleRate) ms) queued from now on"))
    case .deviceLost(let name):
      report(Diagnostic(.warning, "audio device \"\(name)\" disconnected; reopening the default device"))
    case .deviceRestored(let kind, let name, let replayed, let held):
      // How much is played again says whether the place was kept: the lost device's buffer
      // (what it held and nobody heard) goes again; more than the bus keeps is lost.
      let rate = Double(sampleRate)
      func ms(_ frames: Int) -> String { "\(Int((Double(frames) * 1000 / rate).rounded())) ms" }
      let replay =
        held == 0
        ? ""
        : replayed >= held
          ? "; the \(replayed) frames (\(ms(replayed))) the lost device still held play again"
          : "; of the \(held) frames (\(ms(held))) the lost device still held, only the last \(replayed) play again"
      report(
        Diagnostic(.notice, "audio resumed on \"\(name)\"" + (kind == .headless ? " (headless)" : "") + replay))
    case .underrun(let voice):
      report(Diagnostic(.warning, "stream underrun on \(voice): restarted"))
      notify(event)
    case .stolen(_, let listener):
      listener(event)
    case .prepared, .ended, .failed, .interrupted, .segmentStarted, .segmentFailed, .fadedOut, .handedOff,
      .appendFailed, .beat, .marker:
      notify(event)
    }
  }

  /// Hands a voice's event to its owner, if the voice it names still belongs to that owner.
  private func notify(_ event: EngineEvent) {
    guard let voice = event.voice, let listener = pool.listener(for: voice) else { return }
    listener(event)
  }

  /// For tests: behaves as if OpenAL reported the device disconnected (ALC_EXT_disconnect), so
  /// the recovery path (new device, sources refilled at their positions) runs on a machine whose
  /// device cannot really be unplugged.
  func simulateDeviceDisconnect() { commands.post(.simulateDeviceDisconnect) }

  /// For tests: while `held`, the mixer takes no command posted, as if they all came late.
  func holdCommandsForTesting(_ held: Bool) { commands.heldForTesting.store(held, ordering: .relaxed) }

  /// For tests: stalls the streaming thread, so that the underrun path runs for real.
  func stallStreamingThread(milliseconds: Int) { commands.post(.stallForTesting(milliseconds: milliseconds)) }
}

/// The real-time engines not shut down yet, so that process exit can stop them first.
///
/// A game that returns from `main` (or calls `exit`) without `shutdown()` leaves the streaming
/// thread calling OpenAL while OpenAL Soft's library destructor (`alc_deinit`, run by the dynamic
/// linker at exit) destroys the locks those calls take: reviewers saw OpenAL Soft 1.19 abort
/// with `ALc.c:800: LockLists: Assertion 'ret == althrd_success' failed` on lm.streaming, once in
/// 14 runs. `exit` runs `atexit` handlers in the reverse order of their registration, and the
/// dynamic linker's, which runs the libraries' destructors, was registered before `main`: so a
/// handler installed with the first engine runs before OpenAL's, and shuts every engine down.
private enum RunningEngines {
  private struct Entry: @unchecked Sendable {
    weak var engine: AudioEngine?
  }
  private static let engines = Mutex<[ObjectIdentifier: Entry]>([:])
  private static let installHandler: Void = {
    atexit { RunningEngines.shutDownAll() }
  }()

  static func add(_ engine: AudioEngine) {
    _ = installHandler
    engines.withLock { $0[ObjectIdentifier(engine)] = Entry(engine: engine) }
  }

  static func remove(_ engine: AudioEngine) {
    _ = engines.withLock { $0.removeValue(forKey: ObjectIdentifier(engine)) }
  }

  /// Called at process exit, on the thread that called `exit` (whatever it is).
  private static func shutDownAll() {
    let running = engines.withLock { entries in entries.values.compactMap(\.engine) }
    for engine in running { engine.shutdown() }
  }
}

/// Each voice's stream, shared with the loader's closures; a stream is found only under the
/// handle it was opened for.
package final class StreamRegistry: Sendable {
  private let map = Mutex<[Int: (voice: VoiceHandle, stream: DecodeAheadStream)]>([:])

  func set(_ stream: DecodeAheadStream, for voice: VoiceHandle) {
    map.withLock { $0[voice.slot] = (voice, stream) }
  }

  func stream(for voice: VoiceHandle) -> DecodeAheadStream? {
    map.withLock { map in map[voice.slot].flatMap { $0.voice == voice ? $0.stream : nil } }
  }

  func remove(_ voice: VoiceHandle) {
    map.withLock { map in if map[voice.slot]?.voice == voice { map[voice.slot] = nil } }
  }

  /// Empties the registry (at shutdown), returning what it held.
  func takeAll() -> [DecodeAheadStream] {
    map.withLock { map in
      defer { map.removeAll() }
      return map.values.map(\.stream)
    }
  }
}

/// Counts running threads of one kind (the engine's decode threads), so that shutdown can wait
/// for the last one to end.
package final class ThreadCensus: Sendable {
  private let running = Atomic<Int>(0)
  var count: Int { running.load(ordering: .acquiring) }
  func enter() { running.add(1, ordering: .relaxed) }
  func leave() { running.subtract(1, ordering: .releasing) }
}

/// The streaming thread's nice value, shared by reference like `RunFlag`.
private final class NiceValue: Sendable {
  let value = Atomic<Int>(0)
}

/// The engine's threads run while this is true; shared by reference so the threads need not hold
/// the engine itself.
package final class RunFlag: Sendable {
  package let value = Atomic<Bool>(true)

  package init() {}
}
