import Dispatch
import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The music director: takes the game's cues from the level-event bus and, by the rules of the
/// cue file, changes the music: states, crossfades on the beat grid, stingers, ducks, rate,
/// volume, the low-pass filter, seeks. It plays the player's own songs and the game's bundled
/// music through one `QueuePlayer` (plus a `Player` per stinger) on the engine.
///
/// ## Threads
/// - `post(_:_:)` (or `bus.post`) from any thread: it never blocks (see `LevelEventBus`).
/// - With `.ownThread` clocking the director runs on a thread of its own ("lm.director"): while
///   the game is posting (until half a second after the last event) it looks at the bus every
///   5 ms, so posts never make a system call; otherwise it sleeps until a post wakes it, a
///   scheduled change is due, or a ramp needs its next step (every 10 ms). With `.pumped`, the game calls `update()` (from its frame loop): events are
///   applied there, on the game's thread; no I/O happens in it.
/// - On an offline engine, `CueSimulation` drives the director by audio time: an event posted
///   for time T takes effect at exactly T, and runs repeat sample for sample.
/// - Cue-file reloads, source resolution (library queries) and tag reading happen on a watcher
///   thread ("lm.cuewatch"), never on the game's thread; the result is swapped in between two
///   updates.
/// - Observers run in order on the director's notification queue.
public final class Director: @unchecked Sendable {
  /// Who advances the director's clock in real time.
  public enum Clocking: Sendable {
    /// The director's own thread.
    case ownThread
    /// The game, by calling `update()`.
    case pumped
  }

  /// The engine the music plays on.
  public let engine: AudioEngine
  /// The music: the state's queue plays here. It is the director's working queue, not what is
  /// heard: while a change waits for its beat or bar it already holds the new state's music (its
  /// `nowPlayingItem` the new item, at 0 s), and after the music ran out it says MediaPlayer's
  /// end of queue. For what is heard, read `audibleState`, `nowPlaying` and `nowPlayingPosition`.
  public let player: QueuePlayer
  /// The level-event bus the game's cues arrive on (`post(_:_:)` posts to it).
  public let bus: LevelEventBus
  /// The player's music library, for `library` and `playlist` sources (nil: they fall back).
  public let library: MediaLibrary?
  /// The cue file being watched (nil when the director was made from a `CueSheet`).
  public let cueFilePath: String?
  /// Who advances the director: its own thread, or the game's `update()` calls (always pumped on
  /// an offline engine).
  public let clocking: Clocking

  private let core: Mutex<DirectorCore>
  private let picks = Mutex<MediaItemCollection?>(nil)
  /// The game's parameter sets until the next step (see `ParameterInbox`).
  private let parameterInbox = Mutex(ParameterInbox())
  /// Called with the parameter changes a step takes and the director time of that step (the
  /// time they take effect, on a frame of the mix clock): for `cues simulate --record`, whose
  /// recording then renders offline to what was heard. Set it before `start()`.
  nonisolated(unsafe) package var onParametersTaken:
    (@Sendable (_ changes: [(name: String, value: Double, ramp: Double)], _ time: Double) -> Void)?
  private let observers = Mutex<(next: UInt64, handlers: [UInt64: @Sendable (DirectorReport) -> Void])>((1, [:]))
  /// The `.whenHeard` observers and the reports waiting to be heard (a live engine's only).
  private let heardReports: HeardReports
  private let notifications = NotificationQueue(label: "leitmotif.director.notifications")
  private let running = RunFlag()
  private let started = Atomic<Bool>(false)
  /// Whether `start` was called.
  package var hasStarted: Bool { started.load(ordering: .acquiring) }

  /// The director time being heard now (OpenAL's playback position; offline, what is rendered).
  package var heardTime: Double { Double(engine.heardFrame - originFrame) / Double(engine.sampleRate) }
  private var thread: NativeThread?
  private var watcher: NativeThread?

  /// A director for the cue file at `path`, watched for changes while the director runs.
  /// - Parameters:
  ///   - engine: the engine the music plays on (one director per engine).
  ///   - path: the cue file (JSON5).
  ///   - library: the player's music library, for `library` and `playlist` sources (nil: those
  ///     sources fall back to bundled music).
  ///   - clocking: `.ownThread` (the `lm.director` thread) or `.pumped` (the game calls
  ///     `update()`); an offline engine is always pumped.
  ///   - busCapacity: how many events the bus holds before posts are dropped.
  ///   - watchesFile: reload the file when it changes (real-time engines only).
  /// - Throws: `CueFileError` with every problem of the file. Reads the file, the bundled music's
  ///   tags and the library: call it while the game loads, not in its frame loop.
  public convenience init(
    engine: AudioEngine, cueFile path: String, library: MediaLibrary? = nil, clocking: Clocking = .ownThread,
    busCapacity: Int = LevelEventBus.defaultCapacity, watchesFile: Bool = true
  ) throws(CueFileError) {
    try self.init(
      engine: engine, cueFile: path, library: library, clocking: clocking, busCapacity: busCapacity,
      watchesFile: watchesFile, packedPostBytes: 0)
  }

  /// The same, with a bus that also takes packed posts (`LevelEventBus`'s
  /// `post(packedSize:_:)`, which the C API's `lm_post` uses): `packedPostBytes` is what each
  /// bus slot keeps for one.
  public convenience init(
    engine: AudioEngine, cueFile path: String, library: MediaLibrary? = nil, clocking: Clocking = .ownThread,
    busCapacity: Int = LevelEventBus.defaultCapacity, watchesFile: Bool = true, packedPostBytes: Int
  ) throws(CueFileError) {
    let sheet = try CueSheet.load(path: path)
    self.init(
      engine: engine, sheet: sheet, library: library, clocking: clocking, busCapacity: busCapacity,
      watchedPath: watchesFile && !engine.isOffline ? path : nil, packedPostBytes: packedPostBytes)
  }

  /// A director for a cue sheet already loaded (not watched). Reads the bundled music's tags and
  /// queries the library: call it while the game loads.
  /// - Parameters:
  ///   - engine: the engine the music plays on.
  ///   - sheet: the cue sheet (from `CueSheet.load(path:)` or `parse(_:path:)`).
  ///   - library: the player's music library, for `library` and `playlist` sources (nil: those
  ///     sources fall back to bundled music).
  ///   - clocking: `.ownThread` or `.pumped`; an offline engine is always pumped.
  ///   - busCapacity: how many events the bus holds before posts are dropped.
  public convenience init(
    engine: AudioEngine, sheet: CueSheet, library: MediaLibrary? = nil, clocking: Clocking = .ownThread,
    busCapacity: Int = LevelEventBus.defaultCapacity
  ) {
    self.init(
      engine: engine, sheet: sheet, library: library, clocking: clocking, busCapacity: busCapacity, watchedPath: nil,
      packedPostBytes: 0)
  }

  private init(
    engine: AudioEngine, sheet: CueSheet, library: MediaLibrary?, clocking: Clocking, busCapacity: Int,
    watchedPath: String?, packedPostBytes: Int
  ) {
    self.engine = engine
    self.library = library
    heardReports = HeardReports(engine: engine)
    self.clocking = engine.isOffline ? .pumped : clocking
    cueFilePath = watchedPath ?? sheet.path
    bus = LevelEventBus(capacity: busCapacity, packedPostBytes: packedPostBytes)
    player = QueuePlayer(engine: engine, library: library)
    let catalog = sheet.catalog ?? BundledCatalog(directory: sheet.assetsDirectory)
    let resolver = MusicResolver(catalog: catalog, library: library, picks: nil)
    let resolved = resolver.resolveAll(sheet)
    core = Mutex(DirectorCore(engine: engine, player: player, sheet: sheet, catalog: catalog, resolved: resolved))
    updatePreloads(sheet: sheet, catalog: catalog, resolved: resolved)
    leadFrames = Self.defaultLeadFrames(for: engine)
    parameterInbox.withLock { $0.adopt(sheet) }
    // The player's consent is watched whatever the cue file is: a director made from a sheet
    // (or with `watchesFile: false`) kept opening the player's songs after they said no.
    if watchedPath != nil || (library != nil && !engine.isOffline) { startWatching(path: watchedPath) }
    shutdownHook.store(engine.addShutdownHook { [weak self] in self?.finishStreams() }, ordering: .releasing)
  }

  deinit {
    running.value.store(false, ordering: .releasing)
    bus.wakeConsumer()
    releasePreloads()
    engine.removeShutdownHook(shutdownHook.load(ordering: .acquiring))
  }

  /// Starts the music: enters the cue file's `start` state (or `state`), and, with `.ownThread`
  /// clocking, the director's thread. Idempotent.
  public func start(state: String? = nil) {
    // Director time 0 is the mix frame the start lands on, a quarter of a second ahead of what
    // is mixed now, time enough to open the first music (a cold start takes tens of
    // milliseconds): it starts on that frame, and the director's steps fall on frames counted
    // from there, as an offline render's do from 0.
    if !engine.isOffline && !started.load(ordering: .acquiring) {
      originFrame = engine.mixClock.now + Int64(engine.sampleRate / 4)
      core.withLock { core in core.mixFrameOrigin = originFrame }
    }
    start(at: 0, state: state)
  }

  /// The mix frame of director time 0 (0 offline; see `start(state:)`).
  nonisolated(unsafe) private var originFrame: Int64 = 0

  /// Starts at director time `time` (the offline renderer's audio time).
  func start(at time: Double, state: String?) {
    guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
    let frame = FrameMath.frames(seconds: time, rate: Double(engine.sampleRate))
    lastStepFrame = frame
    let reports = engine.performing(atMixFrame: originFrame + frame) {
      core.withLock { core -> [DirectorReport] in
        core.advance(to: time, newEvents: [], dropped: 0)
        core.start(state: state)
        core.advance(to: time, newEvents: [], dropped: 0)
        return takeOutbox(core)
      }
    }
    deliver(reports)
    // Offline: the first music is opened here, before the first mix, so a render called from
    // a game's audio callback does not wait for it.
    if engine.isOffline { engine.waitForLoader() }
    if clocking == .ownThread { startThread() }
  }

  /// Stops the director's threads (the music plays on; stop it with `player.stop()`).
  public func shutdown() {
    running.value.store(false, ordering: .releasing)
    bus.wakeConsumer()
    // Not from the director's own threads (a diagnostics or report path that ends up here): they
    // end when this returns.
    while let thread, !thread.isCurrent, !thread.isFinished { usleep(1000) }
    while let watcher, !watcher.isCurrent, !watcher.isFinished { usleep(1000) }
    releasePreloads()
    // Reports still waiting to be heard go now: the music they speak of will not be.
    notifications.waitUntilDelivered()
    finishStreams()
    notifications.waitUntilDelivered()
    engine.removeShutdownHook(shutdownHook.load(ordering: .acquiring))
  }

  // MARK: - Preloaded stingers

  /// A stinger this long or shorter is kept in memory (see `AudioEngine.preload`); a longer one
  /// streams, as the music does.
  public static let preloadedStingerSeconds = 20.0

  /// The files this director holds preloaded on its engine (one hold each).
  private let preloads = Mutex<[String]>([])

  /// Every file a stinger of `sheet` can play (a bundled file, or the items of its source) that
  /// lasts at most `preloadedStingerSeconds`, each once, in the order of the rules.
  static func stingerFiles(
    _ sheet: CueSheet, catalog: BundledCatalog, resolved: [String: SourceResolution]
  ) -> [String] {
    var files: [String] = []
    var seen: Set<String> = []
    for rule in sheet.rules {
      for case .stinger(let stinger) in rule.actions {
        let items =
          stinger.isSource
          ? resolved[stinger.sound]?.items ?? [] : [catalog.item(relativePath: stinger.sound)].compactMap { $0 }
        for item in items where (item.playbackDuration ?? .infinity) <= preloadedStingerSeconds {
          if seen.insert(item.assetURL.path).inserted { files.append(item.assetURL.path) }
        }
      }
    }
    return files
  }

  /// Preloads the stingers of `sheet` and lets go of those it no longer has. Each file is
  /// preloaded again (a file that changed is decoded afresh, one that did not costs a stat) before
  /// the old holds go, so a stinger kept across a reload never leaves memory. One that cannot be
  /// preloaded (damaged, or over the engine's budget) is a warning: it streams.
  private func updatePreloads(sheet: CueSheet, catalog: BundledCatalog, resolved: [String: SourceResolution]) {
    var held: [String] = []
    for path in Self.stingerFiles(sheet, catalog: catalog, resolved: resolved) {
      do {
        try engine.preload(path)
        held.append(path)
      } catch {
        engine.report(Diagnostic(.warning, "stinger: \(error); it streams from the file instead"))
      }
    }
    let old = preloads.withLock { preloads in
      defer { preloads = held }
      return preloads
    }
    for path in old { engine.unload(path) }
  }

  /// What the watcher has seen of changed stinger files: each change waits until it has settled,
  /// and one that did not decode is not tried again until the file changes once more.
  struct StingerChanges {
    var settling: [String: FileIdentity] = [:]
    var failed: [String: FileIdentity] = [:]
  }

  /// Decodes afresh the preloaded stingers whose files changed (a sound designer's new take saved
  /// over the old one while the game runs), once a change looks the same twice in a row (an
  /// editor writes in steps), so the next shot plays the new take from memory. The watcher's
  /// thread, every half second: a stat per stinger.
  func refreshChangedStingers(_ changes: inout StingerChanges) {
    var settling: [String: FileIdentity] = [:]
    for path in preloads.withLock({ $0 }) {
      guard let now = engine.preloadedFileChange(path), changes.failed[path] != now else { continue }
      guard changes.settling[path] == now else {
        settling[path] = now
        continue
      }
      do {
        // Decoded again into the entry (its holds kept), then this extra hold let go.
        let bytes = try engine.preload(path)
        engine.unload(path)
        changes.failed[path] = nil
        // Said, so that a sound designer saving a take sees that the game has it (it was silent).
        engine.report(
          Diagnostic(
            .notice,
            "stinger \"\(FileSystemPath.displayed(path))\": the file changed; the next shot plays the new take"
              + " (decoded again: \(bytes / 1024) KiB)"))
      } catch {
        changes.failed[path] = now
        engine.report(Diagnostic(.warning, "stinger: \(error); it streams from the file instead"))
      }
    }
    changes.settling = settling
  }

  private func releasePreloads() {
    let old = preloads.withLock { preloads in
      defer { preloads = [] }
      return preloads
    }
    for path in old { engine.unload(path) }
  }

  // MARK: - The game's side

  /// Posts a cue with its payload. Never blocks; false when the bus was full and the event was
  /// dropped (counted, and reported as `.dropped`), or when the director or its engine is shut
  /// down (nothing would take it).
  /// Thread safety: any thread.
  @discardableResult
  public func post(_ cue: String, _ payload: CuePayload = [:]) -> Bool {
    guard running.value.load(ordering: .acquiring), !engine.isShutDown else { return false }
    return bus.post(cue, payload)
  }

  /// Sets a game parameter (clamped to the range the cue file gives it), optionally over
  /// `rampSeconds`. Applied at the director's next update; never blocks for long (a short lock
  /// that only the director's update also takes).
  /// Thread safety: any thread.
  public func setParameter(_ name: String, _ value: Double, rampSeconds: Double = 0) {
    parameterInbox.withLock { $0.set(name, value: value, ramp: rampSeconds) }
    bus.wakeConsumer()
  }

  /// Does what a rule could do, without a cue: the game's own commands ("stop the music with a
  /// 3 s fade", "play the spotted stinger on the beat", "go to combat now", "skip this song").
  /// Applied at the director's next step, in order, reported as fired by the rule `(game)`;
  /// each action's own checks apply (an unknown state or source is reported, not thrown).
  /// Never blocks for long (a short lock that only the director's step also takes).
  /// Thread safety: any thread.
  public func perform(_ actions: [CueAction]) {
    guard !actions.isEmpty else { return }
    pendingCommands.withLock { $0.append(actions) }
    bus.wakeConsumer()
  }

  /// The game's commands (`perform`), taken by the director's next step.
  private let pendingCommands = Mutex<[[CueAction]]>([])

  /// Whether commands wait for the next step (for tests that must know one was given).
  package var hasPendingCommands: Bool { pendingCommands.withLock { !$0.isEmpty } }

  /// A parameter's current value (nil for a name the cue file does not have). A value set
  /// without a ramp counts at once, before the director's next step applies it: a game that
  /// sets a parameter and reads it back sees what it set (clamped to the cue file's range).
  public func parameter(_ name: String) -> Double? {
    let pending = parameterInbox.withLock { $0.unrampedValue(of: name) }
    return core.withLock { core in
      guard let current = core.parameterValue(name) else { return nil }
      return pending ?? current
    }
  }

  /// Sets the parameter whose name is the UTF-8 bytes `name` without allocating (the C API's
  /// `lm_set_parameter`, which may be called from a game's audio callback): the value waits in
  /// a fixed slot for the next step. Takes a short lock that only the step also takes, for a
  /// moment; never waits for a step that decides or opens anything.
  /// - Returns: false when the cue file has no such parameter (nothing is set).
  /// Thread safety: any thread.
  public func setParameter(utf8 name: UnsafeRawBufferPointer, _ value: Double, rampSeconds: Double) -> Bool {
    let found = parameterInbox.withLock { inbox -> Bool in
      guard let index = inbox.index(of: name) else { return false }
      inbox.set(index, value: value, ramp: rampSeconds)
      return true
    }
    if found { bus.wakeConsumer() }
    return found
  }

  /// Plays `items` (a playlist the player chose in the game's menu, a query's songs) in place
  /// of the current state's music, taking over as `transition` says (crossfade, curve, on the
  /// beat or bar), repeating as `repeatMode` says, shuffled as `shuffleMode` says (see
  /// `GameQueue.shuffleMode`; to turn shuffle on or off for the queue playing, set it again).
  /// The state the rules see stays; the next state change brings that state's music, and an
  /// empty `items` hands the music back to the state now (with `transition`). Reported as fired
  /// by `(game)`, then now playing from the source `(game)`. Applied at the director's next
  /// step; never blocks for long.
  /// Thread safety: any thread.
  public func setQueue(
    _ items: [MediaItem], transition: TransitionSpec, repeatMode: RepeatMode = .all, shuffleMode: ShuffleMode = .off
  ) {
    perform([
      .playQueue(GameQueue(items: items, transition: transition, repeatMode: repeatMode, shuffleMode: shuffleMode))
    ])
  }

  /// The player's picks from the media picker: the music of `picks` sources, from the next time
  /// a state that plays one starts (what plays now goes on; `setQueue` plays them at once).
  /// nil (or an empty collection) clears them: those sources' fallbacks take over. Resolved on
  /// the calling thread (no I/O: the items are in memory).
  public func setPicks(_ collection: MediaItemCollection?) {
    picks.withLock { $0 = collection }
    core.withLock { core in
      // Only the picks sources change; resolving them reads nothing (the items are in memory).
      let resolver = MusicResolver(catalog: core.catalog, library: library, picks: collection)
      var resolved = core.resolved
      for (name, source) in core.sheet.sources {
        if case .picks = source.kind { resolved[name] = resolver.resolve(source) }
      }
      core.replace(resolved: resolved)
    }
  }

  /// The music state the rules see (set when a rule changes it, even while the music waits for
  /// the beat grid); nil before the music starts and from a `stop` on (`resume` brings the state
  /// back).
  public var currentState: String? { core.withLock { $0.currentState } }

  /// The state whose music is heard now.
  public var audibleState: String? { core.withLock { $0.audibleState } }

  /// What is heard: the item, its source, and whether it is one of the player's own songs. While
  /// a state change waits for its beat or bar, the music heard until then (the player's queue is
  /// the new state's already). Nil when nothing is: before the start, after the music ran out
  /// (`musicEnded`) or was stopped (the player's queue then says MediaPlayer's end of queue,
  /// stopped at its first item, but that is not heard).
  public var nowPlaying: (item: MediaItem, source: String?, isUserMusic: Bool)? {
    let (heard, audible) = core.withLock { ($0.itemHeardBeforeLanding, $0.audibleState) }
    if heard == nil && audible == nil && player.playbackState == .stopped { return nil }
    guard let item = heard ?? player.nowPlayingItem else { return nil }
    let origin = core.withLock { $0.origin(of: item) }
    return (item, origin?.source, origin?.isUserMusic ?? false)
  }

  /// Whether a state change waits for its beat, bar or moment: the player's queue is then the
  /// music not heard yet, and a skip in it would let that music go (see the `skip` action).
  public var changeWaits: Bool { core.withLock { $0.itemHeardBeforeLanding != nil } }

  /// Where `nowPlaying` is, in seconds of its file: while a state change waits for its beat or
  /// bar, the position of the music heard until then.
  public var nowPlayingPosition: TimeInterval {
    if core.withLock({ $0.itemHeardBeforeLanding }) != nil, let position = player.positionBeforeQueue {
      return position
    }
    return player.currentPlaybackTime
  }

  /// Why source `name` gives nothing now (no access, an empty query, no picks), nil while it has
  /// items: what the director resolved it to last (at load, a reload, a scan or a change of the
  /// player's consent).
  package func unavailableReason(ofSource name: String) -> String? {
    core.withLock { $0.resolved[name]?.unavailableReason }
  }

  /// The name of the source `item` came from (nil if the director did not queue it).
  public func nowPlayingOrigin(_ item: MediaItem) -> String? { core.withLock { $0.origin(of: item)?.source } }

  /// What each of the director's voices plays now (slot → item; stingers flagged).
  var voiceItems: [Int: (item: MediaItem, isStinger: Bool)] { core.withLock { $0.voiceItems } }

  /// The layers of the state heard now (its `layers`, by name) and the engine slot of the voice
  /// that plays them (nil when the state has none). For timelines.
  var layerSnapshot: (names: [String], slot: Int?) { core.withLock { $0.layerSnapshot } }

  /// The cue sheet in force (the last good one).
  public var sheet: CueSheet { core.withLock { $0.sheet } }

  /// Every parameter's value now, by name (ramps where they are at the director's clock).
  public var parameterValues: [String: Double] {
    core.withLock { core in
      Dictionary(
        uniqueKeysWithValues: core.sheet.parameters.compactMap { spec in
          core.parameterValue(spec.name).map { (spec.name, $0) }
        })
    }
  }

  /// The high-frequency gain of the music's low-pass filter the director last set (1: open).
  public var musicLowPass: Float { core.withLock { $0.musicLowPass } }

  /// The music's tempo the director last set (speed without pitch; 1: as written).
  public var musicTempo: Float { core.withLock { $0.musicTempo } }

  /// Pumped clocking: applies the events posted since the last call and moves ramps along. Call
  /// it once per frame from the game loop (with `.ownThread` clocking it does nothing). No I/O; it takes the director's lock for as long as
  /// the events take (microseconds each).
  public func update() {
    // With its own thread the director is already stepping; a second consumer of the bus is
    // not allowed (see `LevelEventBus`), so this does nothing then.
    guard clocking == .pumped else { return }
    if !started.load(ordering: .acquiring) { start() }
    stepOnGrid()
  }

  /// The director's clock in real time: the mix clock, `leadFrames` ahead of what is being
  /// mixed, so that what a step does reaches the streaming thread before its frame is mixed.
  private var clockSeconds: Double { Double(clockFrame) / Double(engine.sampleRate) }

  /// The director's clock now, in seconds from director time 0 (the frame its start state's
  /// music begins on, a quarter of a second after `start()`): a cue posted now takes effect at
  /// about this time (within a step). `cues simulate --live` posts its script by it, so a script
  /// is applied live at the times it says, as offline.
  package var clockTime: Double { clockSeconds }
  private var clockFrame: Int64 { engine.mixClock.now + leadFrames - originFrame }

  /// How far ahead of the mix a step lands, in seconds (by default the most one pump of the
  /// streaming thread mixes, two device periods and a block of 256 frames, at least 21 ms:
  /// 48 ms for OpenAL's 1024-frame period at 48 kHz; offline, 1024 frames at 48 kHz). With one
  /// period and a block (26.7 ms), a pump that topped up two of OpenAL's mixes at once left the
  /// steps stamped in its second one late: on the wave backend, 6 in a 24 s level and 18 in a
  /// 60 s one with pause menus, each step of a fade a block late against the offline render.
  /// What a step does is stamped with its frame and waits in the engine for it, so it lands on
  /// that exact frame, the one an offline render of the same events uses, as long as the
  /// director's thread wakes within this lead (`AudioEngine.lateCommandCount` counts the
  /// changes that came late and took effect on the next frame mixed instead). A longer lead
  /// keeps that promise on a busier machine; an immediate change is heard that much later.
  /// Beat and bar transitions land exactly whatever the lead (the mixer finds their frames).
  /// Set it before `start()`; 0 to 1 s.
  public var schedulingLead: TimeInterval {
    get { Double(leadFrames) / Double(engine.sampleRate) }
    set {
      let seconds = newValue.isFinite ? max(0, min(1, newValue)) : Self.defaultLeadSeconds
      leadFrames = FrameMath.frames(seconds: seconds, rate: Double(engine.sampleRate))
    }
  }
  static let defaultLeadSeconds = 1024.0 / 48_000

  /// The default lead. Real time: at least what one pump of the streaming thread mixes at once
  /// (`AudioEngine.framesMixedPerPump`: two device periods and a block). A step stamped less far ahead than
  /// that, which read the clock just before a pump and posted just after it, was already behind
  /// the mix: on OpenAL's null device here (1,116-frame periods) a 1024-frame lead left the start
  /// state's ramp steps and a crossfade's setup 72 frames late, every one of them. Offline the
  /// render asks for its frames itself: 1024 frames at 48 kHz, as before.
  static func defaultLeadFrames(for engine: AudioEngine) -> Int64 {
    let base = Int64((defaultLeadSeconds * Double(engine.sampleRate)).rounded())
    guard !engine.isOffline else { return base }
    return max(base, Int64(engine.framesMixedPerPump))
  }

  /// How long a watched cue file may be missing before the reload that refuses it (see
  /// `startWatching`): a `git checkout` or an editor's save through a rename takes far less.
  static let missingGraceSeconds = 2.0
  /// `schedulingLead` in mix frames.
  nonisolated(unsafe) private(set) var leadFrames: Int64 = 1024
  /// Real-time steps fall on multiples of this many mix frames (what `CueSimulation` renders at
  /// a time), every one of them while something moves, so the same steps happen live as offline.
  static let gridFrames: Int64 = 256
  /// The last grid frame stepped (only the stepping thread touches it, under `stepping`).
  nonisolated(unsafe) private var lastStepFrame: Int64 = 0

  /// A real-time step: at every grid frame since the last step while ramps move (each on its
  /// frame), else at the latest one; each step's commands stamped with its frame.
  @discardableResult
  func stepOnGrid(upTo frame: Int64? = nil) -> Bool {
    stepping.withLock { _ in
      // (A second step on the same grid frame takes what was posted since, at that frame.)
      let target = max(lastStepFrame, (frame ?? clockFrame) / Self.gridFrames * Self.gridFrames)
      var frame = lastStepFrame + Self.gridFrames
      var tookInput = false
      while frame < target {
        // Steps on the way matter while something moves, and from the first grid frame at or
        // past a scheduled time on: a stinger on the beat starts its duck there, and the duck's
        // first level must come on that step, not on whichever frame this thread woke at (live,
        // up to a device period late; offline, every grid frame is stepped).
        let (deadline, moving) = timing()
        if !moving {
          guard let deadline else { break }
          let due = FrameMath.frames(seconds: deadline, rate: Double(engine.sampleRate), rounding: .up)
          let step = (due + Self.gridFrames - 1) / Self.gridFrames * Self.gridFrames
          guard step < target else { break }
          frame = max(frame, step)
        }
        let at = frame
        tookInput =
          engine.performing(atMixFrame: originFrame + at) {
            stepLocked(to: Double(at) / Double(engine.sampleRate), takingInput: false)
          }
          || tookInput
        frame += Self.gridFrames
      }
      lastStepFrame = target
      return engine.performing(atMixFrame: originFrame + target) {
        stepLocked(to: Double(target) / Double(engine.sampleRate))
      }
        || tookInput
    }
  }

  // MARK: - Observing

  /// Calls `handler` with every report, in order: `.whenDecided` (the default) on the director's
  /// notification queue as soon as the director makes it, which in real time is ahead of the
  /// music it speaks of (see `ReportTiming`); `.whenHeard` on Leitmotif's audible thread when
  /// the report's `time` is heard, as beat callbacks are. Returns a token for `removeObserver(_:)`.
  @discardableResult
  public func addObserver(
    timing: ReportTiming = .whenDecided, _ handler: @escaping @Sendable (DirectorReport) -> Void
  ) -> UInt64 {
    observers.withLock { state in
      let token = state.next
      state.next += 1
      // Offline the director steps on the frames it renders: decided is heard.
      if timing == .whenHeard && !engine.isOffline {
        heardReports.add(token, handler)
      } else {
        state.handlers[token] = handler
      }
      return token
    }
  }

  /// Stops calling the observer registered under `token`.
  public func removeObserver(_ token: UInt64) {
    if heardReports.remove(token) { return }
    _ = observers.withLock { $0.handlers.removeValue(forKey: token) }
  }

  /// Calls `handler` with every beat of the music, when it is heard (within about a device
  /// period; offline, as the render passes it), on Leitmotif's own thread: so a game can flash
  /// its lights on the beat. Each beat carries its item, bar and beat, the mix frame it sounds on
  /// and its time on the director's clock (`seconds`, as reports' times). The grid is the one the
  /// director uses for `at: "beat"` (the item's tag or detected tempo, else the cue file's
  /// `tempo`). Stingers have no beats. Returns a token for `removeBeatObserver(_:)`.
  @discardableResult
  public func addBeatObserver(_ handler: @escaping @Sendable (MusicBeat) -> Void) -> UInt64 {
    let rate = Double(engine.sampleRate)
    return player.addBeatObserver { [weak self] beat in
      var stamped = beat
      stamped.seconds = Double(beat.mixFrame - (self?.originFrame ?? 0)) / rate
      handler(stamped)
    }
  }

  /// Stops calling the beat observer registered under `token`.
  public func removeBeatObserver(_ token: UInt64) { player.removeBeatObserver(token) }

  /// Calls `handler` with every marker of the music, when it is heard, as beats are (see
  /// `addBeatObserver`): each named cue point of the playing item (its source's `cues`, else its
  /// file's `CUE_<NAME>` tags), with its name, where it is in the file, its mix frame and its
  /// time on the director's clock. Stingers have none. Returns a token for
  /// `removeMarkerObserver(_:)`.
  @discardableResult
  public func addMarkerObserver(_ handler: @escaping @Sendable (MusicMarker) -> Void) -> UInt64 {
    let rate = Double(engine.sampleRate)
    return player.addMarkerObserver { [weak self] marker in
      var stamped = marker
      stamped.seconds = Double(marker.mixFrame - (self?.originFrame ?? 0)) / rate
      handler(stamped)
    }
  }

  /// Stops calling the marker observer registered under `token`.
  public func removeMarkerObserver(_ token: UInt64) { player.removeMarkerObserver(token) }

  /// The reports as an async sequence (from now on, as they are decided). It ends when the
  /// director or its engine shuts down (so a `for await` over it returns), or when dropped.
  public var reports: AsyncStream<DirectorReport> {
    streams.make(subscribe: { addObserver($0) }, unsubscribe: { [weak self] in self?.removeObserver($0) })
  }

  /// The `reports` streams handed out.
  private let streams = EventStreams<DirectorReport>()
  /// The engine's shutdown hook of this director.
  private let shutdownHook = Atomic<UInt64>(0)

  /// Ends the report streams after the reports before (director or engine shut down); the
  /// reports still waiting to be heard go first, on the notification queue (never on the
  /// thread that shuts down, which may be the game's).
  private func finishStreams() {
    let (rest, handlers) = heardReports.takeRest()
    let streams = self.streams
    notifications.async {
      for report in rest {
        for handler in handlers { handler(report) }
      }
      streams.finish()
    }
  }

  /// Waits until every report made so far has reached the observers: `.whenHeard` ones too,
  /// which can take the time the output holds (a few tenths of a second; at most a second more
  /// when the device stalls). From inside an observer it returns at once (the reports before
  /// have been delivered).
  public func waitForReports() {
    notifications.waitUntilDelivered()
    guard !heardReports.isDeliveringOnThisThread else { return }
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64((HeardReports.latestSeconds + 2) * 1e9)
    while !heardReports.isEmpty && DispatchTime.now().uptimeNanoseconds < deadline { usleep(2000) }
  }

  private func deliver(_ reports: [DirectorReport]) {
    guard !reports.isEmpty else { return }
    if heardReports.hasHandlers { heardReports.enqueue(reports, originFrame: originFrame) }
    let handlers = observers.withLock { Array($0.handlers.sorted { $0.key < $1.key }.map(\.value)) }
    guard !handlers.isEmpty else { return }
    notifications.async {
      for report in reports {
        for handler in handlers { handler(report) }
      }
    }
  }

  // MARK: - Stepping

  /// One update at director time `time`: events from the bus, parameters, due work, the mix.
  /// Returns whether anything came in (events, drops or parameters).
  @discardableResult
  func step(to time: Double) -> Bool {
    // One step at a time: the bus has exactly one consumer (a game calling `update()` from two
    // threads waits here instead of breaking that rule).
    stepping.withLock { _ in stepLocked(to: time) }
  }

  private let stepping = Mutex<Void>(())

  /// `takingInput: false` is a catch-up step of a thread that woke late: it moves ramps and
  /// scheduled work through the grid frames it missed, and leaves what the game posted to the
  /// step at the present frame (a parameter set after the clock passed 0.5 s was once recorded
  /// at 0.464 s, taken by a catch-up step for a frame before it was set).
  private func stepLocked(to time: Double, takingInput: Bool = true) -> Bool {
    guard takingInput else {
      let reports = core.withLock { core -> [DirectorReport] in
        core.advance(to: time, newEvents: [], dropped: 0)
        return takeOutbox(core)
      }
      deliver(reports)
      return false
    }
    var events: [LevelEvent] = []
    _ = bus.drain(into: &events)
    // Offline, nothing is mixed until the next render: an event posted without a time of its
    // own (the C API's lm_post between two lm_render calls), and a command, take effect on the
    // next frame.
    let offlineNext = engine.isOffline ? Double(engine.mixClock.now) / Double(engine.sampleRate) : nil
    if let next = offlineNext {
      for index in events.indices where events[index].audioTime == nil { events[index].audioTime = next }
    }
    let dropped = bus.takeNewDrops()
    let parameters = parameterInbox.withLock { $0.take() }
    if !parameters.isEmpty, let onParametersTaken { onParametersTaken(parameters, time) }
    let commands = pendingCommands.withLock { pending -> [[CueAction]] in
      defer { pending.removeAll(keepingCapacity: true) }
      return pending
    }
    let withdrawn = consentWithdrawn.withLock { status in
      defer { status = nil }
      return status
    }
    let reports = core.withLock { core -> [DirectorReport] in
      core.advance(to: time, newEvents: [], dropped: 0)
      if let withdrawn { core.userMusicWithdrawn(reason: "access to their music library is \(withdrawn)") }
      for parameter in parameters { core.setParameter(parameter.name, parameter.value, rampSeconds: parameter.ramp) }
      for actions in commands { core.perform(commands: actions, at: offlineNext) }
      core.advance(to: time, newEvents: events, dropped: dropped)
      return takeOutbox(core)
    }
    deliver(reports)
    return !events.isEmpty || dropped > 0 || !parameters.isEmpty || !commands.isEmpty
  }

  /// When the next scheduled thing is due, and whether ramps need steady updates.
  func timing() -> (deadline: Double?, moving: Bool) { core.withLock { ($0.nextDeadline, $0.isMoving) } }

  private func takeOutbox(_ core: DirectorCore) -> [DirectorReport] { core.takeDueReports() }

  private func startThread() {
    let running = self.running
    let thread = NativeThread { [weak self] in
      nameCurrentThread("lm.director")
      // The thread holds the director only while it steps, so releasing the director ends it.
      var lastInput = -Double.infinity
      while running.value.load(ordering: .acquiring), let (bus, wait, now, tookInput) = Director.tick(self) {
        if tookInput { lastInput = now }
        if now - lastInput < Director.pollWindowSeconds {
          // While the game is posting, the thread looks at the bus every few milliseconds and
          // posts wake nothing: a post then never makes a system call, nor lets the woken thread
          // take the game thread's core (the benchmark's slowest posts were all such wake-ups).
          // A cue waits at most `pollSeconds` more, against the mix periods the audio takes.
          usleep(useconds_t(min(wait, Director.pollSeconds) * 1_000_000))
        } else {
          // Quiet for a while: sleep until a post wakes the thread (only the first post after a
          // quiet spell pays for the wake-up), a scheduled change is due, or a ramp needs a step.
          bus.waitForPost(timeout: .microseconds(Int64(wait * 1_000_000)))
        }
      }
    }
    self.thread = thread
    thread.start()
  }

  /// One pass of the director's thread: a step, then how long it may sleep (10 ms while ramps
  /// move, else until the next deadline, at most 100 ms).
  private static func tick(_ director: Director?) -> (LevelEventBus, Double, Double, Bool)? {
    guard let director else { return nil }
    let now = director.clockSeconds
    let tookInput = director.stepOnGrid()
    let (deadline, moving) = director.timing()
    var wait = moving ? 0.01 : 0.1
    if let deadline { wait = min(wait, max(0.0005, deadline - director.clockSeconds)) }
    return (director.bus, wait, now, tookInput)
  }

  /// How often the real-time thread looks at the bus while the game is posting.
  static let pollSeconds = 0.005
  /// How long after the last event the thread keeps polling before it sleeps until woken.
  static let pollWindowSeconds = 0.5

  // MARK: - Live reload

  /// Reads the cue file again now. A valid file takes over (music keeps playing; its rules apply
  /// to the next cues); an invalid one is reported and the last good file stays in force.
  /// Does I/O (the file, bundled tags, library queries): not on the game's frame thread.
  /// - Returns: the problems of the file (errors, if it was refused; else its warnings).
  @discardableResult
  public func reload() -> [CueProblem] {
    guard let path = cueFilePath else { return [] }
    var checked = CueSheet.check(path: path)
    // A file with no states would stop the music and drop every rule: an editor's in-place
    // save (truncate, then write) caught half-way looks like that. Refused while the last good
    // file has states; a later save that has them again reloads as usual.
    if let sheet = checked.sheet, sheet.states.isEmpty, !(core.withLock { $0.sheet.states.isEmpty }) {
      checked.sheet = nil
      checked.problems.insert(
        CueProblem(
          severity: .error, file: path, location: JSON5.SourceLocation(line: 1, column: 1), keyPath: "states",
          message:
            "the file defines no states (empty, or caught while being saved?): refused, the last good file stays in force"
        ),
        at: 0)
    }
    guard let sheet = checked.sheet else {
      let failure = CueFileError(problems: checked.problems)
      let reports = core.withLock { core -> [DirectorReport] in
        core.report(.reloadFailed(failure))
        return takeOutbox(core)
      }
      deliver(reports)
      return checked.problems
    }
    // The slow part (tags, library queries) happens before the lock: updates go on meanwhile.
    let catalog = sheet.catalog ?? BundledCatalog(directory: sheet.assetsDirectory)
    let resolver = MusicResolver(catalog: catalog, library: library, picks: picks.withLock { $0 })
    let resolved = resolver.resolveAll(sheet)
    updatePreloads(sheet: sheet, catalog: catalog, resolved: resolved)
    parameterInbox.withLock { $0.adopt(sheet) }
    // What the save changed, reckoned outside the lock too (the director's steps go on).
    let changes =
      if let before = core.withLock({ $0.sheet.fileTree }), let after = sheet.fileTree {
        CueFileChanges.summary(before, after)
      } else {
        (lines: [String](), renamedStates: [String: String]())
      }
    let reports = core.withLock { core -> [DirectorReport] in
      core.rename(states: changes.renamedStates)
      core.replace(sheet: sheet, catalog: catalog, resolved: resolved)
      core.report(.reloaded(path: path, warnings: checked.problems, changes: changes.lines))
      return takeOutbox(core)
    }
    deliver(reports)
    // The next step takes the new state volume and rate (see `DirectorCore.reloadGlide`): now,
    // not after an idle director's sleep.
    bus.wakeConsumer()
    return checked.problems
  }

  /// Re-reads the sources (library queries, playlists) without reloading the cue file: after a
  /// library scan or a change of the player's consent. Does I/O.
  public func refreshSources() {
    let (sheet, catalog) = core.withLock { ($0.sheet, $0.catalog) }
    let resolver = MusicResolver(catalog: catalog, library: library, picks: picks.withLock { $0 })
    let resolved = resolver.resolveAll(sheet)
    updatePreloads(sheet: sheet, catalog: catalog, resolved: resolved)
    core.withLock { $0.replace(resolved: resolved) }
    // Without consent, what plays of the player's songs stops too, at the next step (on the
    // director's clock, as any change).
    if let status = library?.authorizationStatus, status != .authorized {
      consentWithdrawn.withLock { $0 = status }
      bus.wakeConsumer()
    }
  }

  /// The consent status that ended access to the player's songs, until a step stops them.
  private let consentWithdrawn = Mutex<AuthorizationStatus?>(nil)

  /// Polls the file's identity (modification time, size, inode) every 100 ms, when there is a
  /// file to watch: editors that save by writing in place and those that replace the file are
  /// both seen, and a reload lands within a second. The library's consent is polled every half
  /// second, file or not (a change re-resolves the sources: a player who says no is not read
  /// from again).
  ///
  /// A change is read once the file has settled: the same identity on two polls in a row (an
  /// editor that writes in several steps, `git checkout` that removes the file and writes it
  /// again). A missing file is waited for `missingGraceSeconds` before the reload that refuses
  /// it, so a checkout or an editor's rename dance reloads once, without a refusal first.
  private func startWatching(path: String?) {
    let running = self.running
    let watcher = NativeThread { [weak self] in
      nameCurrentThread("lm.cuewatch")
      var identity = path.map { FileIdentity(path: $0) }
      var consent = self?.library?.authorizationStatus
      var ticks = 0
      var candidate: FileIdentity? = nil
      var stablePolls = 0
      var stingerChanges = StingerChanges()
      while running.value.load(ordering: .acquiring) {
        usleep(100_000)
        guard let director = self else { return }
        if let path {
          director.pollCueFile(path, identity: &identity, candidate: &candidate, stablePolls: &stablePolls)
        }
        ticks += 1
        if ticks % 5 == 0, path != nil { director.refreshChangedStingers(&stingerChanges) }
        if ticks % 5 == 0, let library = director.library {
          let status = library.authorizationStatus
          if status != consent {
            consent = status
            director.refreshSources()
          }
        }
      }
    }
    self.watcher = watcher
    watcher.start()
  }

  /// One poll of the cue file: a reload once a change has settled (see `startWatching`).
  private func pollCueFile(
    _ path: String, identity: inout FileIdentity?, candidate: inout FileIdentity?, stablePolls: inout Int
  ) {
    let missingPolls = Int(Director.missingGraceSeconds * 10)
    let current = FileIdentity(path: path)
    if current != identity {
      if current == candidate {
        stablePolls += 1
      } else {
        candidate = current
        stablePolls = 0
      }
      if stablePolls >= (current.exists ? 1 : missingPolls) {
        identity = current
        candidate = nil
        reload()
      }
    } else {
      candidate = nil
    }
  }
}
