import Dispatch
import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import Synchronization

/// MediaPlayer's application queue player on Leitmotif's engine, with what game music needs and
/// MediaPlayer lacks: crossfades, gapless joins, loop points and several voices at once.
///
/// ## The queue
/// A queue is a list of entries (an item plus optional trim points, loop and transition), played
/// in *play order*: the queue order, or a shuffled one. `nowPlayingItem` is the entry playing (or
/// that `play()` will start); `indexOfNowPlayingItem` is its place in play order.
///
/// ## Skipping
/// - `skipToNextItem()`: to the next item in play order. On the last item, with `repeatMode ==
///   .all` it goes to the first item; otherwise playback ends (stopped, at the first item).
///   (Repeat one does not hold a skip back: skipping always moves on.)
/// - `skipToPreviousItem()`: in the first 3 seconds of an item it goes to the previous one (from
///   the first item: to the last with repeat all, else it restarts the first); later it restarts
///   the current one.
/// - `skipToBeginning()`: back to the start of the current item.
/// While playing, a skip crossfades from whatever is audible (a crossfade in progress included)
/// to the new item with the new item's transition; a gapless transition becomes a 10 ms
/// crossfade, the shortest that is click-free. While paused or stopped a skip only moves.
///
/// ## Transitions
/// Each entry's `transition` (else the player's `transition`, an equal-power crossfade of 3 s by
/// default) says how it takes over from the item before it. Gapless joins decode the next file
/// into the same voice right after the last sample of the previous one (items of one sample
/// rate; an item of another rate joins with a 10 ms crossfade instead). A crossfade starts the
/// next item on a second voice on the frame where the outgoing one is the crossfade's length from
/// its end (in its final loop pass); the outgoing voice is released when silent.
///
/// ## Loops
/// An item with loop points (LOOPSTART/LOOPLENGTH tags, or `LoopPoints` in its entry) loops
/// sample-exactly `loopRepeat` times (default: until `releaseLoop()`), then plays its outro.
///
/// ## Voices
/// The player takes voices from its engine's pool: one while an item plays, one more for the
/// prepared next item of a crossfade, and one per item still fading out. When the pool is full
/// it steals by the engine's policy (see `AudioEngine.allocateSlot`).
///
/// ## Threads
/// Every method returns at once and may be called from any thread. Observers run in order on the
/// player's own notification queue, never on the streaming thread.
///
/// ## Lifetime
/// Keep a reference while it plays: a queue player that is released gives its voices back, and
/// its music fades out (unlike a one-shot `Player`, which plays to its end on its own).
public final class QueuePlayer: MediaPlayback {
  /// The engine the player plays on.
  public let engine: AudioEngine
  private let state: Mutex<State>
  private let notifications = NotificationQueue(label: "leitmotif.queue.notifications")
  /// The `events` streams handed out, ended when the engine shuts down.
  private let streams = EventStreams<QueuePlayerEvent>()
  /// The engine's shutdown hook of this player.
  private let shutdownHook = Atomic<UInt64>(0)
  /// Items that failed (to open, or while playing), in order, until `takeFailures()`: for the
  /// director, which polls on its own thread 200 times a second. The count makes a poll with
  /// nothing new one atomic load.
  private let failures = Mutex<[(item: MediaItem, error: DecodeError)]>([])
  private let failureCount = Atomic<Int>(0)
  /// How often the queue ran out: its last item played to its end, or a skip went past it.
  private let endCount = Atomic<Int>(0)
  /// How often a new queue that could not start gave the music back to the queue before it (see
  /// `takeBack`), until `takeQueuesTakenBack()`.
  private let takenBack = Atomic<Int>(0)
  /// Music voices outrank stingers (0): a crossfade may steal a stinger's voice, not the reverse.
  static let voicePriority = 1
  /// Within this many seconds of an item's start, skipping back goes to the previous item.
  public static let previousItemThreshold: TimeInterval = 3

  /// The player's voices, each held by a lease (see `VoiceLease`): dropping a lease gives its
  /// voice back, and a voice that was stolen in between is left to its new owner.
  private struct Voices {
    /// The voice of the now-playing item and the token of its segment.
    var current: VoiceLease?
    var currentToken = 0
    /// The next item, prepared: appended gaplessly to the current voice, or on a follower voice
    /// armed to take over with a crossfade.
    var scheduled: Scheduled?
    /// Voices fading out; released when they report silence.
    var outgoing: [VoiceLease] = []
  }

  /// What `State.takeBack` keeps of the queue before a `setQueue`.
  private struct TakeBack {
    var queue: QueueModel
    var voice: VoiceHandle
    var token: Int
    var scheduled: Scheduled?
    var layerLevels: [Float]
    var layerGains: [Float]
    var layerLowPasses: [Float]
    var earlierQueueVoices: Set<VoiceHandle>
  }

  private enum Scheduled: Equatable {
    case gapless(token: Int, entry: Int)
    case follower(VoiceLease, token: Int, entry: Int, Transition)

    var entry: Int {
      switch self {
      case .gapless(_, let entry), .follower(_, _, let entry, _): return entry
      }
    }
  }

  /// The scheduler's state: the queue itself (a value, see `QueueModel`), and the voices,
  /// segments, playback state and settings that carry it out on the engine.
  private struct State {
    var queue = QueueModel()
    /// Files of this queue that failed (damaged, cut off, gone): passed over when the queue comes
    /// round to them again, until a new queue is set. A file damaged after the library scan was
    /// opened again on every pass of a repeating queue, and said to play each time, 27 ms
    /// before it failed again (a player's trial).
    var failedPaths: Set<String> = []
    var nextToken = 1
    /// Segment token -> entry id, for the segments made lately (see `newToken`).
    var tokens: [Int: Int] = [:]
    var voices = Voices()
    var playbackState: PlaybackState = .stopped
    var stateBeforeSeeking: PlaybackState?
    var rate: Float = 1
    /// Each voice's own rate under `rate`: the `rate` of the entry it was started for (see
    /// `QueueDescriptor.Entry.rate`); voices not in it play at 1.
    var voiceRates: [VoiceHandle: Float] = [:]
    /// Speed without pitch (the voices' time-stretchers), 0.5...2.
    var tempo: Float = 1
    /// A tempo other than 1 was set once: every voice from then on is made with a stretcher
    /// (before, none is: a stretcher costs a millisecond of the loader's time per voice).
    var stretches = false
    var volume: Float = 1
    /// A gain under `volume` that the music director steps (ducks, fades, parameter curves)
    /// without a `volumeChanged` notification for every step.
    var mixGain: Float = 1
    /// The transition of the next skip, when the director asks for one (see `skip(_:transition:)`).
    var pendingFade: Transition?
    /// High-frequency gain of every voice's low-pass filter (1: unfiltered).
    var lowPassGain: Float = 1
    /// The queue's layers (see `QueueDescriptor.Entry.layers`): the level each was last set to
    /// (from the queue's first entry's `volume`s when the queue is set), and the director's
    /// parameter-driven gain and low-pass on top. Every voice of the queue gets them.
    var layerLevels: [Float] = []
    var layerGains: [Float] = []
    var layerLowPasses: [Float] = []
    /// Voices of an earlier queue (fading out): their layers are another piece's, so layer
    /// settings never reach them.
    var earlierQueueVoices: Set<VoiceHandle> = []
    /// The item and grid of each segment given beat lines (by token, the latest
    /// `rememberedTokens`): a beat of the queue before a `setQueue` still names its item.
    var beatSegments: [Int: (item: MediaItem, grid: QueueDescriptor.BeatGrid)] = [:]
    /// The markers given to each segment (by token, as `beatSegments`): names and seconds, in
    /// the order the mixer numbers them.
    var markerSegments: [Int: (item: MediaItem, markers: [(name: String, seconds: Double)])] = [:]
    /// Seeks asked of the current voice (compared with its status's `seekGenerationDone`).
    var seekGeneration = 0
    var lastSeekSeconds: Double = 0
    /// The mix frame the last seek was stamped for (a seek posted on a timed thread, the
    /// director's), with the voice it moved; nil for a seek at once.
    var lastSeekFrame: (frame: Int64, voice: VoiceHandle)?
    /// A voice started on a stamped mix frame (the director's), at once, not on a grid line:
    /// the frame and where in its file it starts, until it says where it is (`playingPosition`).
    var stampedStart: (frame: Int64, voice: VoiceHandle, seconds: Double)?
    /// A position asked for before any voice exists: the next start opens the item there.
    var requestedSeekSeconds: Double?
    /// The next change of item follows a failure (for the notification's reason).
    var followsFailure = false
    /// The queue a `setQueue` replaced while it played, kept until another change of queue or
    /// item: while its music still plays unfaded (the new queue waits for its grid line, or is
    /// opening), it can come back, as if the new queue had never come: when every item of the new
    /// queue fails first, or the director calls the change off (`takeBackQueue`).
    var takeBack: TakeBack?
    /// Paused with music let go or held behind the current voice (a crossfade, a new queue's
    /// pickup over the music held to the downbeat, or a new queue still waiting for its grid
    /// line): those voices, paused with their fades held like the current one's (`play()`
    /// resumes them all, and what was under way goes on where it was).
    var pausedFading: [VoiceHandle] = []
    /// The entry the queue last moved on to by itself, the mix frame it was heard from, and
    /// which now-playing change that was (`nowPlayingChanges` then).
    var advancedAt: (entry: Int, frame: Int64, change: Int)?
    /// How many times the now-playing item has changed (each `emitNowPlaying`).
    var nowPlayingChanges = 0
    /// Failures in a row, to stop when every item in the queue fails.
    var consecutiveFailures = 0
    var observers: [UInt64: @Sendable (QueuePlayerEvent) -> Void] = [:]
    var nextObserverID: UInt64 = 1
  }

  /// A queue player on `engine`, with an empty queue.
  /// - Parameters:
  ///   - engine: the engine whose voices it plays on.
  ///   - library: where play and skip counts of the player's own songs go: an item from
  ///     the library (with a `persistentID`) that plays to its end counts a play, one skipped
  ///     forward counts a skip. Recorded off the caller's thread.
  public init(engine: AudioEngine, library: MediaLibrary? = nil) {
    self.engine = engine
    self.library = library
    duckGroup = engine.makeDuckGroup()
    state = Mutex(State())
    shutdownHook.store(engine.addShutdownHook { [weak self] in self?.engineDidShutDown() }, ordering: .releasing)
  }

  // The voices' leases go with the state, and each gives its voice back.
  deinit { engine.removeShutdownHook(shutdownHook.load(ordering: .acquiring)) }

  /// The engine stopped: nothing more plays, so the player is stopped (where it was), and its
  /// streams end.
  private func engineDidShutDown() {
    state.withLock { state in setState(.stopped, &state) }
    let streams = self.streams
    notifications.async { streams.finish() }
  }

  /// The engine's group for this player's voices: a duck (`duck(_:)`, or one that starts with a
  /// stinger, `Player.play(when:ducking:)`) lowers every voice the player plays while it lasts,
  /// fading ones and those it takes meanwhile too, frame by frame in the mixer.
  package let duckGroup: UInt32

  /// Ducks the player's music from now (the command's frame: the director's step, inside
  /// `AudioEngine.performing(atMixFrame:)`).
  package func duck(_ shape: DuckShape) { engine.commands.post(.duck(group: duckGroup, shape)) }

  /// Where play and skip counts go (see `init`).
  public let library: MediaLibrary?
  private let counting = DispatchQueue(label: "leitmotif.queue.counts")

  /// Counts a play or a skip of a library item in the library, on a queue of its own (SQLite
  /// I/O); failures (no access any more, say) go to the diagnostics.
  private func count(_ item: MediaItem?, played: Bool) {
    guard let library, let item, item.persistentID != nil else { return }
    let engine = self.engine
    counting.async {
      do throws(LibraryError) {
        if played { try library.recordPlay(of: item) } else { try library.recordSkip(of: item) }
      } catch {
        engine.report(Diagnostic(.warning, "could not count a \(played ? "play" : "skip"): \(error)"))
      }
    }
  }

  // MARK: - The queue

  /// Replaces the queue with `items`; the first (or, shuffled, a random one) becomes now playing.
  /// While playing, the new queue starts at once with a crossfade.
  /// - Throws: `QueueError` for bad trim points; the queue is then unchanged.
  public func setQueue(with items: [MediaItem]) throws(QueueError) {
    try setQueue(with: QueueDescriptor(items: items))
  }

  /// Replaces the queue with a collection's items (see `setQueue(with:)` for an array).
  /// - Throws: `QueueError` for bad trim points; the queue is then unchanged.
  public func setQueue(with collection: MediaItemCollection) throws(QueueError) {
    try setQueue(with: QueueDescriptor(itemCollection: collection))
  }

  /// Replaces the queue with the descriptor's entries, each with its trim points, transition and
  /// loops; it starts with `startItem` (nil: the first). While playing, the new queue starts at once
  /// with a crossfade.
  /// - Throws: `QueueError` for bad trim points, loop points or gains; the queue is then unchanged.
  public func setQueue(with descriptor: QueueDescriptor) throws(QueueError) {
    try setQueue(with: descriptor, startingAt: nil, transition: nil)
  }

  /// Replaces the queue; while playing, moves to it with `transition` (nil: the first entry's or
  /// the player's), whatever the entries say; the item to start with opens at `startSeconds` of
  /// its file (nil: its start). Not playing, the queue waits there for `play()`.
  /// - Throws: `QueueError` for bad trim points; the queue is then unchanged.
  public func setQueue(
    with descriptor: QueueDescriptor, startingAt startSeconds: TimeInterval?, transition: Transition?
  ) throws(QueueError) {
    try setQueue(with: descriptor, startingAt: startSeconds, transition: transition, landing: nil)
  }

  /// How a new queue plays: its repeat mode, how items with loop points loop, and the transition
  /// between its items (see `setQueue(... modes:)`).
  package struct Modes {
    package var repeatMode: RepeatMode
    package var loopRepeat: LoopRepeat
    package var transition: Transition
    /// Whether the new queue is shuffled (`.off`: in its order; the director's states order
    /// their music themselves), and with which seed (nil: the player's generator goes on).
    package var shuffleMode: ShuffleMode
    package var shuffleSeed: UInt64?
    package init(
      repeatMode: RepeatMode, loopRepeat: LoopRepeat, transition: Transition, shuffleMode: ShuffleMode = .off,
      shuffleSeed: UInt64? = nil
    ) {
      self.repeatMode = repeatMode
      self.loopRepeat = loopRepeat
      self.transition = transition
      self.shuffleMode = shuffleMode
      self.shuffleSeed = shuffleSeed
    }
  }

  /// Where a new queue takes over from the music that plays: on a grid line of the playing item.
  package struct Landing {
    /// The position in the playing item's file where the new music starts, in seconds; for a
    /// line in the next pass of its loop, the loop's end (see `afterSeconds`).
    package var fileSeconds: Double
    /// The grid's spacing (a beat or a bar) in seconds of that file, for when the new music is
    /// not ready in time: it then lands on the next line (nil: as soon as it is ready).
    package var everySeconds: Double?
    /// For a line in the loop's next pass, heard after the music jumps back from the loop's end
    /// (`fileSeconds`) to its start: how far into that pass (0 otherwise).
    package var afterSeconds: Double = 0
    /// Where the music is in its file on the line: `fileSeconds`, or for a line in the next
    /// pass the loop's start plus `afterSeconds`.
    package var heardFileSeconds: Double
    /// The new music takes the place of what the playing item hands over to at its end (a change
    /// `at: "end"`): the item's own transition into its next item or its repeat is called off.
    /// It started first when longer than the change's crossfade (a fight's 3 s `between` into
    /// its repeat, a second copy heard a second before the change's 2 s crossfade).
    package var replacesHandOver = false
    /// The position is in the item's last pass (see `StartTrigger.inFinalPass`).
    package var inFinalPass = false

    package init(fileSeconds: Double, everySeconds: Double?) {
      self.fileSeconds = fileSeconds
      self.everySeconds = everySeconds
      heardFileSeconds = fileSeconds
    }

    /// The line `seconds` into the playing item's file as if its loop went on past its end
    /// (`loop`: the loop the music plays, nil when it plays on through its end): past the
    /// loop's end it is the next pass's line, that far after the seam.
    package init(unwrappedSeconds seconds: Double, everySeconds: Double?, loop: (start: Double, end: Double)?) {
      self.init(fileSeconds: seconds, everySeconds: everySeconds)
      if let loop, loop.end > loop.start, seconds > loop.end + 1e-9 {
        fileSeconds = loop.end
        afterSeconds = seconds - loop.end
        heardFileSeconds = loop.start + afterSeconds
      }
    }

    /// `fileSeconds` as if the loop went on past its end (see `init(unwrappedSeconds:...)`).
    package var unwrappedSeconds: Double { fileSeconds + afterSeconds }

    /// A start on this line of the music of `voice`, segment `token`.
    func trigger(voice: VoiceHandle, token: Int) -> StartTrigger {
      StartTrigger(
        voice: voice, token: token, fileSeconds: fileSeconds, everySeconds: everySeconds, afterSeconds: afterSeconds,
        inFinalPass: inFinalPass)
    }
  }

  /// A start on `landing` of the playing item (its voice, its segment): nil when nothing plays.
  package func startTrigger(at landing: Landing) -> StartTrigger? {
    state.withLock { state in
      state.voices.current.map { landing.trigger(voice: $0.handle, token: state.voices.currentToken) }
    }
  }

  /// The music still heard while a new queue waits for its grid line (`setQueue(…landing:)`):
  /// its item, where it is in its file (as last mixed), the speed it moves at, and a start on a
  /// line of its file. Nil when no new queue waits, or the music before it already fades.
  package struct HeardBeforeQueue {
    package var item: MediaItem
    /// Where it is in its file on mix frame `positionMixFrame` (exact), or as last mixed (nil).
    package var positionSeconds: Double
    package var positionMixFrame: Int64?
    package var speed: Double
    package var voice: VoiceHandle
    package var token: Int

    package func startTrigger(at landing: Landing) -> StartTrigger {
      landing.trigger(voice: voice, token: token)
    }
  }

  /// See `HeardBeforeQueue`.
  package var heardBeforeQueue: HeardBeforeQueue? {
    state.withLock { state in
      guard let back = state.takeBack, back.voice != state.voices.current?.handle,
        let item = back.queue.nowID.flatMap({ back.queue.entries[$0]?.item }),
        let status = engine.status(of: back.voice)
      else { return nil }
      // Held unfaded through a pickup: still the music heard. A stinger on the bar during a
      // pickup took the pickup's bars, not the music heard at full level (a designer's trial: on
      // 3.2 s, not the bar at 2.4 s).
      guard isUnfaded(status) else { return nil }
      let rate = status.sampleRate.load(ordering: .acquiring)
      guard rate > 0 else { return nil }
      let exact = status.playingPosition
      return HeardBeforeQueue(
        item: item,
        positionSeconds: (exact?.fileFrame ?? Double(status.positionFrames.load(ordering: .acquiring))) / Double(rate),
        positionMixFrame: exact?.mixFrame, speed: Double(voiceRate(back.voice, state)) * Double(state.tempo),
        voice: back.voice, token: back.token)
    }
  }

  /// Where the now-playing item is in its file, in seconds, on mix frame `mixFrame`, exactly
  /// (fractional when resampled): with `musicSpeed`, where it is on any later frame, the same
  /// whichever mix block it was read after. Nil while it does not move on with the clock (not
  /// playing, a seek or pause under way, not started yet).
  ///
  /// A seek stamped for a mix frame (the director's) that the mix has not got through yet (on
  /// its way, or fading out) gives where it leads: the target, on the frame its 10 ms fade-out
  /// ends. A live director runs ahead of the mix, an offline one does not, so without it a beat
  /// taken right after a seek came from the last position mixed live and from the target
  /// offline: a stinger's duck and report 11 ms apart between the two (a random level's trial).
  /// Seconds the playing voice's resampler and stretcher hold, read ahead of what is heard (0
  /// read frame for frame): the director puts a layer move on a line at least this far off,
  /// which the mixer can still reach.
  package var readAheadSeconds: Double {
    state.withLock { state in
      guard let voice = state.voices.current, let status = engine.status(of: voice.handle) else { return 0 }
      return Double(status.readAheadFrames.load(ordering: .relaxed)) / Double(engine.sampleRate)
    }
  }

  package var playingPosition: (seconds: Double, mixFrame: Int64)? {
    state.withLock { state in
      guard state.requestedSeekSeconds == nil, let voice = state.voices.current else { return nil }
      let status = engine.status(of: voice.handle)
      let rate = status?.sampleRate.load(ordering: .acquiring) ?? 0
      let done = (status?.seekGenerationDone.load(ordering: .acquiring) ?? 0) >= state.seekGeneration
      let exact = done ? status?.playingPosition : nil
      if let start = state.stampedStart, start.voice == voice.handle, state.playbackState == .playing,
        state.seekGeneration == 0
      {
        // Music that starts on a frame the mix has not reached: it is there then, at its start
        // (a stinger on its beat, cued with music started from silence, was reckoned as if the
        // music had played since the mix clock, up to a director's lead early, and live and
        // offline apart).
        let waiting =
          exact.map { $0.mixFrame < start.frame } ?? (engine.mixClock.now < start.frame + Int64(engine.sampleRate / 4))
        if waiting { return (start.seconds, start.frame) }
        state.stampedStart = nil
      }
      if let seek = state.lastSeekFrame, seek.voice == voice.handle, state.playbackState == .playing {
        let landed = seek.frame + Voice.transportFadeFrames(rate: engine.sampleRate)
        // Until the voice says where it is after the seek (a quarter second at most: a target
        // decoded late moves from there, and a voice that stops moving later is not the seek's).
        let waiting =
          exact.map { $0.mixFrame < landed } ?? (engine.mixClock.now < landed + Int64(engine.sampleRate / 4))
        if waiting { return (state.lastSeekSeconds, landed) }
        state.lastSeekFrame = nil
      }
      guard status != nil, rate > 0, let exact else { return nil }
      return (exact.fileFrame / Double(rate), exact.mixFrame)
    }
  }

  /// The mix frame the now-playing item's seek lands on, while `playingPosition` gives where
  /// that seek leads (a seek stamped for a frame the mix has not got through); else nil.
  package var seekLandingFrame: Int64? {
    guard let position = playingPosition, let seek = state.withLock({ $0.lastSeekFrame }) else { return nil }
    let landed = seek.frame + Voice.transportFadeFrames(rate: engine.sampleRate)
    return position.mixFrame == landed ? landed : nil
  }

  /// `setQueue(with:startingAt:transition:)`, but while playing the new music is opened at once
  /// and starts when the playing item reaches `landing` (the director's beat and bar
  /// transitions): the mixer finds that frame from the playing voice's own position.
  /// `holdOutgoingSeconds`: the music playing now keeps its level that long after the new music
  /// starts, then fades (a pickup heard over it, a tail played past the grid line).
  /// `modes`: the new queue's repeat mode, loop repeat and transition between its items, set
  /// with it. Set apart before it (the properties), each change reschedules what plays now: the
  /// outgoing item lost the repeat or the next item it had lined up, so a crossfade landing on
  /// its end faded out silence (a cut on the bar line).
  package func setQueue(
    with descriptor: QueueDescriptor, startingAt startSeconds: TimeInterval?, transition: Transition?,
    landing: Landing?, holdOutgoingSeconds: Double = 0,
    modes: Modes? = nil
  ) throws(QueueError) {
    try descriptor.validate()
    try state.withLock { (state) throws(QueueError) -> Void in
      state.takeBack =
        state.playbackState == .playing
        ? state.voices.current.map {
          TakeBack(
            queue: state.queue, voice: $0.handle, token: state.voices.currentToken, scheduled: state.voices.scheduled,
            layerLevels: state.layerLevels, layerGains: state.layerGains, layerLowPasses: state.layerLowPasses,
            earlierQueueVoices: state.earlierQueueVoices)
        } : nil
      // The shuffle first: `replace` draws the new play order with it.
      if let modes { state.queue.prepareShuffle(modes.shuffleMode, seed: modes.shuffleSeed) }
      state.queue.replace(with: descriptor)
      state.failedPaths.removeAll()
      if let modes {
        state.queue.repeatMode = modes.repeatMode
        state.queue.loopRepeat = modes.loopRepeat
        state.queue.transition = modes.transition
      }
      let layers = descriptor.entries.first?.layers ?? []
      state.layerLevels = layers.map(\.volume)
      state.layerGains = layers.map { _ in 1 }
      state.layerLowPasses = layers.map { _ in 1 }
      state.earlierQueueVoices = Set(allVoices(state))
      state.requestedSeekSeconds = nil
      state.consecutiveFailures = 0
      // A start before the entry's trim starts at the trim, as a seek does (see `currentPlaybackTime`).
      let startFloor = state.queue.nowStartSeconds
      emitLocked(.queueChanged(count: state.queue.playOrder.count), &state)
      emitNowPlaying(reason: .queueChange, &state)
      if state.playbackState == .playing, let now = state.queue.nowID {
        state.requestedSeekSeconds = startSeconds.map { max(startFloor, $0) }
        let trigger = landing.flatMap { landing in
          state.voices.current.map { landing.trigger(voice: $0.handle, token: state.voices.currentToken) }
        }
        crossfade(
          to: now, fade: transition, trigger: trigger, hold: holdOutgoingSeconds,
          keepingHandOver: !(landing?.replacesHandOver ?? false), &state)
      } else {
        releaseAllVoices(&state)
        state.requestedSeekSeconds = startSeconds.map { max(startFloor, $0) }
        // An empty queue has nothing to play: the player stops (as MediaPlayer's does). It used
        // to say it was playing, or paused, with nothing in it.
        if state.queue.nowID == nil { setState(.stopped, &state) }
        // Paused (a pause menu while the game changes its music): the new music is opened now,
        // as `prepareToPlay` does, so that `play()` starts it on its frame. It was opened by the
        // resume, and a live resume found it still loading for a lead's time (a 96 kHz FLAC,
        // stretched: 134 frames late, in 2 of 7 runs of a 60 s level), where the offline render waits.
        if state.playbackState == .paused, let now = state.queue.nowID {
          start(now, playing: false, fadeFrom: [], &state)
        }
      }
    }
  }

  /// Puts items right after the now-playing item; they stay next even when shuffled.
  public func prepend(_ items: [MediaItem]) throws(QueueError) { try prepend(QueueDescriptor(items: items)) }

  /// Puts a descriptor's entries right after the now-playing item; they stay next even when shuffled.
  /// - Throws: `QueueError.emptyQueue` for no entries, or bad trim points; the queue is then unchanged.
  public func prepend(_ descriptor: QueueDescriptor) throws(QueueError) {
    try descriptor.validate()
    guard !descriptor.entries.isEmpty else { throw QueueError.emptyQueue(operation: "prepend") }
    state.withLock { state in
      _ = state.queue.insertNext(descriptor)
      emitLocked(.queueChanged(count: state.queue.playOrder.count), &state)
      reschedule(&state)
    }
  }

  /// Adds items at the end of the queue.
  public func append(_ items: [MediaItem]) throws(QueueError) { try append(QueueDescriptor(items: items)) }

  /// Adds a descriptor's entries at the end of the queue.
  /// - Throws: `QueueError.emptyQueue` for no entries, or bad trim points; the queue is then unchanged.
  public func append(_ descriptor: QueueDescriptor) throws(QueueError) {
    try descriptor.validate()
    guard !descriptor.entries.isEmpty else { throw QueueError.emptyQueue(operation: "append") }
    state.withLock { state in
      if state.queue.append(descriptor) { emitNowPlaying(reason: .queueChange, &state) }
      emitLocked(.queueChanged(count: state.queue.playOrder.count), &state)
      reschedule(&state)
    }
  }

  /// Changes the queue in one step: inserts and removals in `body` apply together, observers see
  /// one `queueChanged`, and if `body` throws nothing changes.
  /// - Throws: `QueueError.transactionRejected` naming the step that failed.
  public func perform<Failure: Error>(queueTransaction body: (inout QueueTransaction) throws(Failure) -> Void)
    throws(QueueError)
  {
    try state.withLock { (state) throws(QueueError) -> Void in
      var counter = state.queue.nextEntryID
      let snapshot = state.queue.playOrder.compactMap { id in state.queue.entries[id].map { (id: id, entry: $0) } }
      let allocator = IDCounter(start: counter)
      var transaction = QueueTransaction(
        entries: snapshot, nowPlayingID: state.queue.nowID, nextID: { allocator.next() })
      do throws(Failure) {
        try body(&transaction)
      } catch {
        throw QueueError.transactionRejected(reason: (error as? QueueError)?.description ?? "\(error)")
      }
      counter = allocator.value
      state.queue.nextEntryID = counter
      var entries: [Int: QueueDescriptor.Entry] = [:]
      for (id, entry) in transaction.entries { entries[id] = entry }
      let oldOrder = state.queue.playOrder
      state.queue.entries = entries
      state.queue.playOrder = transaction.entries.map(\.id)
      state.queue.queueOrder = state.queue.playOrder
      state.queue.pinned.removeAll { entries[$0] == nil }
      emitLocked(.queueChanged(count: state.queue.playOrder.count), &state)
      if let now = state.queue.nowID, entries[now] == nil {
        // The playing item was removed: the one that followed it (still in the queue) plays.
        let oldIndex = oldOrder.firstIndex(of: now) ?? 0
        let following = oldOrder[oldIndex...].first { entries[$0] != nil }
        state.queue.nowID = following ?? state.queue.playOrder.first
        emitNowPlaying(reason: .queueChange, &state)
        if state.playbackState == .playing, let next = state.queue.nowID, following != nil {
          crossfade(to: next, &state)
        } else {
          releaseAllVoices(&state)
          if following == nil { setState(.stopped, &state) }
        }
      } else {
        reschedule(&state)
      }
    }
  }

  /// The queue's items in play order.
  public var queue: [MediaItem] {
    state.withLock { state in state.queue.playOrder.compactMap { state.queue.entries[$0]?.item } }
  }

  /// The item playing, or that `play()` starts. Setting it to an item in the queue jumps there
  /// (the first occurrence); setting an item not in the queue is refused and reported to the
  /// engine's diagnostics (see `setNowPlayingItem` for the error).
  public var nowPlayingItem: MediaItem? {
    get { state.withLock { state in state.queue.nowID.flatMap { state.queue.entries[$0]?.item } } }
    set {
      guard let item = newValue else { return }
      do throws(QueueError) { try setNowPlayingItem(item) } catch {
        engine.report(Diagnostic(.error, error.description, error: error))
      }
    }
  }

  /// Jumps to `item`: the first in play order that is `item` (`==`), else the first of the same
  /// file (so `MediaItem(path:)` names a queued item that was loaded with its title; with an item
  /// queued twice, `skip(toIndex:)` reaches a later one). - Throws: `QueueError.itemNotInQueue`.
  public func setNowPlayingItem(_ item: MediaItem) throws(QueueError) {
    try state.withLock { (state) throws(QueueError) -> Void in
      guard let index = item.firstMatch(in: state.queue.playOrder, item: { state.queue.entries[$0]?.item }) else {
        throw QueueError.itemNotInQueue(item.errorName)
      }
      let id = state.queue.playOrder[index]
      let forward = (state.queue.playOrder.firstIndex(of: id) ?? 0) >= (indexOfNow(state) ?? 0)
      jump(to: id, reason: forward ? .skipForward : .skipBack, &state)
    }
  }

  /// Where the now-playing item is in play order; nil when the queue is empty.
  public var indexOfNowPlayingItem: Int? { state.withLock { indexOfNow($0) } }

  /// Jumps to the item at `index` in play order. - Throws: `QueueError.indexOutOfRange`.
  public func skip(toIndex index: Int) throws(QueueError) {
    try state.withLock { (state) throws(QueueError) -> Void in
      guard state.queue.playOrder.indices.contains(index) else {
        throw QueueError.indexOutOfRange(index: index, count: state.queue.playOrder.count)
      }
      let forward = index >= (indexOfNow(state) ?? 0)
      jump(to: state.queue.playOrder[index], reason: forward ? .skipForward : .skipBack, &state)
    }
  }

  // MARK: - Skipping

  /// See the rules in the type's documentation. - Throws: `QueueError.emptyQueue`.
  public func skipToNextItem() throws(QueueError) {
    try state.withLock { (state) throws(QueueError) -> Void in
      guard let now = state.queue.nowID else { throw QueueError.emptyQueue(operation: "skipToNextItem") }
      if let next = successor(of: now, state, honoringRepeatOne: false) {
        jump(to: next, reason: .skipForward, &state)
      } else {
        endOfQueue(&state, reason: .skipForward)
      }
    }
  }

  /// See the rules in the type's documentation. - Throws: `QueueError.emptyQueue`.
  public func skipToPreviousItem() throws(QueueError) {
    _ = try skipBack()
  }

  /// What `skipToPreviousItem` did when it did not go to the item before: started the item
  /// again, because it had played past `previousItemThreshold`, or because no item comes
  /// before it (the first of a queue that does not repeat).
  package enum PreviousOutcome: Equatable {
    case wentBack
    case restarted(secondsIn: Double)
    case restartedFirst
  }

  private func skipBack() throws(QueueError) -> PreviousOutcome {
    let position = currentPlaybackTime
    return try state.withLock { (state) throws(QueueError) -> PreviousOutcome in
      guard let now = state.queue.nowID else { throw QueueError.emptyQueue(operation: "skipToPreviousItem") }
      let start = state.queue.entries[now]?.startTime ?? 0
      let early = position - start < Self.previousItemThreshold
      if early, let previous = predecessor(of: now, state) {
        jump(to: previous, reason: .skipBack, &state)
        return .wentBack
      }
      restartCurrent(&state)
      return early ? .restartedFirst : .restarted(secondsIn: position - start)
    }
  }

  /// Back to the start of the current item. - Throws: `QueueError.emptyQueue`.
  public func skipToBeginning() throws(QueueError) {
    try state.withLock { (state) throws(QueueError) -> Void in
      guard state.queue.nowID != nil else { throw QueueError.emptyQueue(operation: "skipToBeginning") }
      restartCurrent(&state)
    }
  }

  // MARK: - Modes

  /// What happens at the end of an item and of the queue: play on (`.none`), repeat the item
  /// (`.one`) or the queue (`.all`). Safe to set while playing.
  public var repeatMode: RepeatMode {
    get { state.withLock { $0.queue.repeatMode } }
    set {
      state.withLock { state in
        state.queue.repeatMode = newValue
        reschedule(&state)
      }
    }
  }

  /// Turning shuffle on keeps the now-playing item playing and items put next (`prepend`) next;
  /// the rest is shuffled with the player's generator (see `shuffleSeed`). With `repeatMode`
  /// `.all`, each new lap is shuffled afresh, and never begins with the song (or album) that
  /// ended the lap before: the order changes (`queue` shows it, announced as a queue change) when
  /// the lap's first song begins; "previous" from it goes back to the song that ended the lap
  /// before, as heard. Two songs keep their order.
  public var shuffleMode: ShuffleMode {
    get { state.withLock { $0.queue.shuffleMode } }
    set {
      state.withLock { state in
        guard state.queue.setShuffleMode(newValue) else { return }
        reorder(&state)
      }
    }
  }

  /// Seeds the shuffle generator: the same seed and queue give the same order. Setting it
  /// reshuffles when shuffle is on.
  public var shuffleSeed: UInt64 {
    get { state.withLock { $0.queue.shuffleSeed } }
    set {
      state.withLock { state in
        if state.queue.setShuffleSeed(newValue) { reorder(&state) }
      }
    }
  }

  /// The transition used where an entry names none. Default: equal-power crossfade of 3 s.
  public var transition: Transition {
    get { state.withLock { $0.queue.transition } }
    set {
      state.withLock { state in
        state.queue.transition = newValue
        reschedule(&state, force: true)
      }
    }
  }

  /// How often items with loop points loop where their entry does not say. Default: until
  /// released. Applies to items started from now on.
  public var loopRepeat: LoopRepeat {
    get { state.withLock { $0.queue.loopRepeat } }
    set { state.withLock { $0.queue.loopRepeat = newValue } }
  }

  /// Ends the loop of the playing item: it plays on from where it is, through its outro. The
  /// loop ends at the end of the pass playing, unless that end is within
  /// 8,192 frames (of the stream, 0.17 s at 48 kHz): then it plays once more. The same live and
  /// offline (the mixer decides, on the frame the release takes effect).
  public func releaseLoop() {
    state.withLock { state in
      guard let voice = state.voices.current else { return }
      engine.releaseLoop(voice: voice.handle, through: state.voices.currentToken)
    }
  }

  // MARK: - MPMediaPlayback

  /// Opens the now-playing item (and the next) so that `play()` starts at once.
  public func prepareToPlay() {
    state.withLock { state in
      guard state.voices.current == nil, let now = state.queue.nowID else { return }
      start(now, playing: false, fadeFrom: [], &state)
    }
  }

  /// Whether the now-playing item is open and buffered.
  public var isPreparedToPlay: Bool {
    state.withLock { state in
      state.voices.current.flatMap { engine.status(of: $0.handle) }?.isPrepared.load(ordering: .acquiring) ?? false
    }
  }

  /// Starts or resumes playback. An empty queue stays stopped.
  public func play() {
    // Nothing plays on a shut-down engine: the player used to say it was playing.
    guard !engine.isShutDown else { return }
    state.withLock { state in
      if state.stateBeforeSeeking != nil { state.stateBeforeSeeking = nil }
      if state.queue.nowID == nil { state.queue.nowID = state.queue.playOrder.first }
      guard let now = state.queue.nowID else { return }
      if let voice = state.voices.current {
        // A new queue still waiting for its line waits on (the mixer tells, on this frame), and
        // the music heard, paused with it, goes on.
        engine.commands.post(.play(voice: voice.handle, unlessWaiting: !state.pausedFading.isEmpty))
        // (Only what was playing: a voice lined up to take over from the music heard, its next
        // item or its repeat, was started here, and a second copy of the music played along
        // after every resume of a pause menu while a change waited for its bar: +6 dB, double
        // hits, in a designer's trial.)
        for fading in state.pausedFading where state.voices.outgoing.contains(where: { $0.handle == fading }) {
          engine.commands.post(.play(voice: fading, resumingOnly: true))
        }
        state.pausedFading = []
      } else {
        start(now, playing: true, fadeFrom: [], &state)
      }
      setState(.playing, &state)
    }
  }

  /// Pauses with a short fade; `play()` resumes from the same frame. A crossfade in progress (or
  /// a new queue's pickup, its lead-in heard over the music held to the downbeat) pauses on both
  /// sides, their fades held, and `play()` resumes them together where they were. A new queue
  /// still waiting for its grid line (the director's changes on the beat or bar) waits on: the
  /// music heard pauses, `play()` resumes it, and the new queue starts on its line.
  public func pause() {
    state.withLock { state in
      state.stateBeforeSeeking = nil
      if state.playbackState == .playing, let current = state.voices.current, !state.voices.outgoing.isEmpty {
        // A crossfade under way, a new queue's pickup (its lead-in over the music held to the
        // downbeat), or a new queue still waiting for its grid line in the music heard: every
        // voice heard pauses with its fades held, and they go on together on the resume; a new
        // queue that waits goes on waiting (the music heard, paused, holds its line back). The
        // mixer tells which on the pause's own frame: a live director, a lead ahead of the mix,
        // saw a pickup begun on a frame before its pause as not begun yet, and the live run
        // paused the music held while its lead-in played on (offline paused both). Before: the
        // outgoing music was let go, and the new music went on alone after the resume (a pause
        // menu in the bar before a fight left the fight's pickup without the music under it).
        engine.commands.post(.pause(voice: current.handle, holdingFades: true, unlessWaiting: true))
        for voice in state.voices.outgoing { engine.commands.post(.pause(voice: voice.handle, holdingFades: true)) }
        state.pausedFading = state.voices.outgoing.map(\.handle)
      } else {
        if let voice = state.voices.current { engine.commands.post(.pause(voice: voice.handle)) }
        releaseOutgoing(&state)
      }
      setState(.paused, &state)
    }
  }

  /// The queue before the last `setQueue`, while its music is still heard unfaded (the new queue
  /// waits for its grid line, or is opening): its voice one of ours, not let go, or let go with
  /// its fade not begun (held through the new music's pickup, or paused with its fade held). Nil
  /// when none waits, or the new music has begun. What `takeBack` restores.
  private func waitingBack(_ state: State) -> TakeBack? {
    guard let back = state.takeBack, back.voice != state.voices.current?.handle,
      state.voices.outgoing.contains(where: { $0.handle == back.voice }),
      let status = engine.status(of: back.voice)
    else { return nil }
    // (Held through a pickup, a take-back keeps it: the mixer cuts the pickup.)
    return isUnfaded(status) ? back : nil
  }

  /// Whether a voice is still heard unfaded: not let go, or let go but holding its level until
  /// the new music's downbeat (a pickup has begun), its fade not begun yet.
  private func isUnfaded(_ status: VoiceStatus) -> Bool {
    guard status.isLetGo.load(ordering: .acquiring) else { return true }
    return status.fadeStartFrame.load(ordering: .acquiring) > CommandTime.current ?? engine.mixClock.now
  }

  /// Stops with a short fade and lets every voice go; the next `play()` starts the now-playing
  /// item from its beginning.
  public func stop() {
    state.withLock { state in
      state.stateBeforeSeeking = nil
      state.requestedSeekSeconds = nil
      releaseAllVoices(&state)
      setState(.stopped, &state)
    }
  }

  /// The current playback state.
  public var playbackState: PlaybackState { state.withLock { $0.playbackState } }

  /// The position in the now-playing item's file, in seconds. Setting it seeks sample-accurately;
  /// the music before it is left alone: a crossfade in progress completes, and music waiting for
  /// a new queue's grid line plays on to it (the seek moves where the new music starts). A seek
  /// used to let that music go at once: silence until the line, and, released at once on the
  /// streaming thread rather than on the seek's frame, a live mix that was not the offline one.
  /// A time at or past the item's end ends the item:
  /// the queue goes on as when it plays to its end (the next item, reported with `naturalEnd`,
  /// comes in with its transition as a skip does: the music heard crossfades into it from where
  /// it is, over the transition's length, a gapless one as 10 ms; the same item again under
  /// repeat one; after the last item, the end).
  /// A time before the entry's `startTime` (its trim) seeks to that start: the part trimmed
  /// away is not played, as the item never plays it otherwise (a library song the director
  /// plays from where its sound begins, sent back to 0, played its seconds of silence again, and
  /// a change on its beat waited in them for the music's first beat).
  public var currentPlaybackTime: TimeInterval {
    get {
      state.withLock { state in
        if let requested = state.requestedSeekSeconds { return requested }
        guard let voice = state.voices.current else {
          return state.queue.nowStartSeconds
        }
        guard let status = engine.status(of: voice.handle) else {
          // The engine has not taken the voice up yet: where it will start.
          return state.seekGeneration > 0
            ? state.lastSeekSeconds : state.queue.nowStartSeconds
        }
        let rate = status.sampleRate.load(ordering: .acquiring)
        if status.seekGenerationDone.load(ordering: .acquiring) < state.seekGeneration {
          return state.lastSeekSeconds  // the seek is on its way to the streaming thread
        }
        if rate == 0 { return state.queue.nowStartSeconds }
        return Double(status.positionFrames.load(ordering: .acquiring)) / Double(rate)
      }
    }
    set {
      let asked = newValue.isFinite ? max(0, newValue) : 0
      state.withLock { state in
        let seconds = max(asked, state.queue.nowStartSeconds)
        guard let voice = state.voices.current else {
          state.requestedSeekSeconds = seconds
          return
        }
        // At or past the item's end: the item has ended, and the queue goes on as at its end
        // (the next item; the same one again under repeat one). Left to the engine, the voice
        // ran into the next item's frames, joined gaplessly, before the player had prepared them
        // anew for the seek, and the player went on reporting the item before (then played the
        // next one twice). The last item's end is the queue's: the seek below takes it there.
        if let end = nowPlayingEndSeconds(voice, state), seconds >= end, let now = state.queue.nowID,
          let next = successor(of: now, state, honoringRepeatOne: true)
        {
          jump(to: next, reason: .naturalEnd, &state)
          return
        }
        state.seekGeneration += 1
        state.lastSeekSeconds = seconds
        state.lastSeekFrame = CommandTime.current.map { ($0, voice.handle) }
        engine.commands.post(.seek(voice: voice.handle, seconds: seconds, generation: state.seekGeneration))
        // A seek can bring back loop passes or move past the hand-over point: prepare anew.
        reschedule(&state, force: true)
      }
    }
  }

  /// Where the now-playing item ends, in seconds of its file: its voice's length once the file is
  /// open, else its entry's end time or the item's duration; nil when not known yet.
  private func nowPlayingEndSeconds(_ voice: VoiceLease, _ state: State) -> Double? {
    if let status = engine.status(of: voice.handle) {
      let rate = status.sampleRate.load(ordering: .acquiring)
      let length = status.lengthFrames.load(ordering: .acquiring)
      if rate > 0, length > 0 { return Double(length) / Double(rate) }
    }
    guard let entry = state.queue.nowID.flatMap({ state.queue.entries[$0] }) else { return nil }
    return entry.endTime ?? entry.item.playbackDuration
  }

  /// The speed: 0 when not playing. Setting 0 pauses; [1/256, 4] plays at that speed; anything else
  /// is refused and reported (use `setCurrentPlaybackRate` for the error).
  public var currentPlaybackRate: Float {
    get { state.withLock { $0.playbackState == .playing ? $0.rate : 0 } }
    set { setRateReportingErrors(newValue) }
  }

  /// - Throws: `PlayerError.rateOutOfRange` for NaN, negatives and values above 4.
  public func setCurrentPlaybackRate(_ rate: Float) throws(PlayerError) {
    try PlayerError.check(rate: rate)
    if rate == 0 {
      pause()
      return
    }
    let playing = state.withLock { state -> Bool in
      state.rate = rate
      for voice in allVoices(state) { engine.commands.post(.setRate(voice: voice, voiceRate(voice, state))) }
      return state.playbackState == .playing
    }
    if !playing { play() }
  }

  /// The tempo: speed without pitch ("hurry up" music), 0.5 to 2, 1 as written; it multiplies
  /// with `currentPlaybackRate`, which stays tape speed (speed and pitch together). Every voice of
  /// the player goes through SoundTouch's time-stretcher from its first tempo other than 1, and
  /// positions, beats and bar lines follow the stretched time. Takes effect at the next frame
  /// the mixer mixes; does not start playback. Values outside 0.5...2 are refused and reported
  /// (use `setTempo(_:)` for the error).
  public var tempo: Float {
    get { state.withLock { $0.tempo } }
    set {
      do throws(PlayerError) { try setTempo(newValue) } catch {
        engine.report(Diagnostic(.error, error.description, error: error))
      }
    }
  }

  /// - Throws: `PlayerError.tempoOutOfRange` for NaN and values outside 0.5...2.
  public func setTempo(_ tempo: Float) throws(PlayerError) {
    guard tempo.isFinite, TimeStretcher.tempoRange.contains(tempo) else { throw PlayerError.tempoOutOfRange(tempo) }
    setMixTempo(tempo)
  }

  /// The speed the current voice moves at through its file (the one `currentPlaybackTime`
  /// reads): the rate times its entry's rate, times the tempo (0 when not playing).
  package var musicSpeed: Double {
    state.withLock { state in
      guard state.playbackState == .playing else { return 0 }
      let rate = state.voices.current.map { voiceRate($0.handle, state) } ?? state.rate
      return Double(rate) * Double(state.tempo)
    }
  }

  /// Voices made from now on get time-stretchers (the director's, for a cue file that can change
  /// the tempo): a tempo then lands on the frame it is applied at, without waiting for the
  /// loader to make a stretcher for the voice playing. Those playing now get theirs made.
  package func prepareForTempo() {
    state.withLock { state in
      guard !state.stretches else { return }
      state.stretches = true
      for voice in allVoices(state) { engine.provideStretcher(for: voice) }
    }
  }

  /// The director's tempo (clamped to 0.5...2): like `setMixRate`, without a notification.
  package func setMixTempo(_ tempo: Float) {
    guard tempo.isFinite else { return }
    let clamped = min(max(tempo, TimeStretcher.tempoRange.lowerBound), TimeStretcher.tempoRange.upperBound)
    state.withLock { state in
      guard state.tempo != clamped else { return }
      state.tempo = clamped
      for voice in allVoices(state) { engine.commands.post(.setTempo(voice: voice, clamped)) }
      if !state.stretches && clamped != 1 {
        // The voices playing now were made without stretchers: the loader makes theirs.
        state.stretches = true
        for voice in allVoices(state) { engine.provideStretcher(for: voice) }
      }
    }
  }

  /// The player's gain, 0 to 1 (the engine's `masterGain` sits above every player).
  public var volume: Float {
    get { state.withLock { $0.volume } }
    set {
      let volume = newValue.isFinite ? max(0, min(1, newValue)) : 1
      state.withLock { state in
        guard state.volume != volume else { return }
        state.volume = volume
        postGain(state)
        emitLocked(.volumeChanged(volume), &state)
      }
    }
  }

  /// Muffles the music ("under water", a pause menu): the high-frequency gain of the shelf filter
  /// (see `Player.lowPassGain`) on every voice this player owns, now and later (a crossfade's
  /// incoming voice too). 0 to 1: what lies above about 5 kHz is scaled by it (0 acts as -60 dB)
  /// and the bass is left as it is; 1, the default, removes the filter, so the output is exactly
  /// unfiltered. Values outside 0...1 are clamped; NaN and infinities mean 1.
  ///
  /// Returns at once: it lands on the first frame the mixer mixes after the engine's streaming
  /// thread takes it (offline: at the next `render`). Safe to set from any thread.
  public var lowPassGain: Float {
    get { state.withLock { $0.lowPassGain } }
    set {
      let gain = newValue.isFinite ? max(0, min(1, newValue)) : 1
      state.withLock { state in
        guard state.lowPassGain != gain else { return }
        state.lowPassGain = gain
        for voice in allVoices(state) { engine.commands.post(.setLowPass(voice: voice, gain)) }
      }
    }
  }

  /// How many layers the queue's items have (its first entry's, when the queue was set).
  public var layerCount: Int { state.withLock { $0.layerLevels.count } }

  /// The level of layer `index` of the queue's items (see `QueueDescriptor.Entry.layers`), 0 to 1:
  /// the last one set, or the first entry's layer `volume`.
  public func volume(ofLayer index: Int) -> Float? {
    state.withLock { state in state.layerLevels.indices.contains(index) ? state.layerLevels[index] : nil }
  }

  /// Moves layer `index` of the queue's items to `volume` (0 to 1) along `curve` over `seconds`,
  /// from the next frame mixed, on every voice of the queue (the next items start at that level).
  /// The stems stay sample-locked with their item whatever their levels do.
  /// - Throws: `QueueError.invalidLayers` for a layer the queue's items do not have, a volume
  ///   outside 0...1, or a negative or NaN time.
  public func setVolume(
    _ volume: Float, ofLayer index: Int, over seconds: TimeInterval = 0, curve: FadeCurve = .linear
  ) throws(QueueError) {
    try fadeLayer(index, to: volume, seconds: seconds, curve: curve, landing: nil)
  }

  /// `setVolume(_:ofLayer:over:curve:)`, starting when the playing item reaches `landing` (a
  /// layer in on the next bar), found by the mixer from the playing voice's own position.
  package func fadeLayer(
    _ index: Int, to volume: Float, seconds: TimeInterval, curve: FadeCurve, landing: Landing?
  ) throws(QueueError) {
    guard volume.isFinite, volume >= 0, volume <= 1 else {
      throw QueueError.invalidLayers("layer \(index): volume \(volume) is outside [0, 1]")
    }
    guard seconds.isFinite, seconds >= 0 else { throw QueueError.invalidCrossfade(seconds) }
    try state.withLock { (state) throws(QueueError) -> Void in
      guard state.layerLevels.indices.contains(index) else {
        throw QueueError.invalidLayers(
          "layer \(index): the queue's items have \(state.layerLevels.count) layer\(state.layerLevels.count == 1 ? "" : "s")"
        )
      }
      state.layerLevels[index] = volume
      let trigger = landing.flatMap { landing in
        state.voices.current.map { landing.trigger(voice: $0.handle, token: state.voices.currentToken) }
      }
      for voice in queueVoices(state) {
        engine.commands.post(
          .fadeLayer(voice: voice, layer: index, level: volume, seconds: seconds, curve: curve, trigger: trigger))
      }
    }
  }

  /// The director's parameter-driven gain and low-pass of each layer (index order; missing ones
  /// are 1), on every voice of the queue. No event.
  package func setLayerMix(gains: [Float], lowPasses: [Float]) {
    state.withLock { state in
      for index in state.layerLevels.indices {
        let gain = index < gains.count ? gains[index] : 1
        let lowPass = index < lowPasses.count ? lowPasses[index] : 1
        guard state.layerGains[index] != gain || state.layerLowPasses[index] != lowPass else { continue }
        state.layerGains[index] = gain
        state.layerLowPasses[index] = lowPass
        for voice in queueVoices(state) {
          engine.commands.post(.setLayer(voice: voice, layer: index, gain: gain, lowPass: lowPass))
        }
      }
    }
  }

  /// The director's gain under `volume` (see `State.mixGain`): posted to every voice, no event.
  package func setMixGain(_ gain: Float) {
    let gain = gain.isFinite ? max(0, min(Voice.maximumVolume, gain)) : 1
    state.withLock { state in
      guard state.mixGain != gain else { return }
      state.mixGain = gain
      postGain(state)
    }
  }

  /// What each of this player's voices plays, as far as the player knows: the now-playing item's
  /// voice and the prepared follower's (voices fading out are not listed). For timelines.
  package var voiceItems: [Int: MediaItem] {
    state.withLock { state in
      var items: [Int: MediaItem] = [:]
      if let voice = state.voices.current, let now = state.queue.nowID, let entry = state.queue.entries[now] {
        items[voice.slot] = entry.item
      }
      if case .follower(let voice, _, let entry, _)? = state.voices.scheduled, let next = state.queue.entries[entry] {
        items[voice.slot] = next.item
      }
      return items
    }
  }

  /// The slot of the voice playing the now-playing item (nil when nothing plays). For timelines.
  package var currentVoiceSlot: Int? { state.withLock { $0.voices.current?.slot } }

  /// Which queue entry is now playing (a number that changes whenever the now-playing item
  /// does, even to another copy of the same file): a cheap way to notice a change without
  /// comparing items (their equality compares standardized file URLs).
  package var nowPlayingEntryID: Int? { state.withLock { $0.queue.nowID } }

  /// Where the now-playing entry starts in its file (its trim), in seconds: the earliest a seek
  /// goes (see `currentPlaybackTime`).
  package var nowPlayingStartSeconds: Double {
    state.withLock { $0.queue.nowStartSeconds }
  }

  /// The mix frame the now-playing item was first heard on, when the queue moved on to it by
  /// itself (a gapless join, a crossfade's start); nil when it came otherwise (a skip, a new
  /// queue: whoever asked knows when).
  package var nowPlayingSinceFrame: Int64? {
    state.withLock { state in
      // (Only for the change that advance made: the same entry come again otherwise, a skip back
      // to it and then its predecessor ending, took the frame it was first advanced to on, and
      // its report the time of that, seconds before.)
      state.advancedAt.flatMap {
        $0.entry == state.queue.nowID && $0.change == state.nowPlayingChanges ? $0.frame : nil
      }
    }
  }
  /// How many segment tokens the player remembers (bounded: see `rememberedTokens`).
  package var rememberedTokenCount: Int { state.withLock { $0.tokens.count } }

  /// How many items have failed so far (see `takeFailures()`).
  package var failuresSoFar: Int { failureCount.load(ordering: .acquiring) }

  /// How often the queue has run out so far (its last item played to its end, or a skip went
  /// past it, with no repeat): the player stopped, back at its first item.
  package var endsSoFar: Int { endCount.load(ordering: .acquiring) }

  /// Where the music heard before the last `setQueue` is, in seconds of its file, while it still
  /// plays unfaded (a crossfade waiting for its grid line): nil when there is none.
  package var positionBeforeQueue: TimeInterval? {
    state.withLock { state in
      for voice in state.voices.outgoing {
        guard let status = engine.status(of: voice.handle), !status.isLetGo.load(ordering: .acquiring) else { continue }
        let rate = status.sampleRate.load(ordering: .acquiring)
        guard rate > 0 else { continue }
        return Double(status.positionFrames.load(ordering: .acquiring)) / Double(rate)
      }
      return nil
    }
  }

  /// How many times since the last call a new queue could not start and the music before it
  /// went on instead (see `State.takeBack`).
  package func takeQueuesTakenBack() -> Int { takenBack.exchange(0, ordering: .acquiringAndReleasing) }

  /// The items that failed since the last call, oldest first.
  package func takeFailures() -> [(item: MediaItem, error: DecodeError)] {
    failures.withLock { list in
      defer { list.removeAll() }
      return list
    }
  }

  private func recordFailure(_ item: MediaItem, _ error: DecodeError) {
    // Kept for whoever polls; a player nobody polls keeps only the latest few.
    failures.withLock { list in
      if list.count >= 64 { list.removeFirst() }
      list.append((item, error))
    }
    failureCount.add(1, ordering: .releasing)
  }

  /// A skip with its own crossfade (nil: the usual one), for the director's `skip` action.
  /// Skips as the director's `skip` action says; for `.previous`, what it did (nil otherwise).
  @discardableResult
  package func skip(_ direction: SkipDirection, transition: Transition?) throws(QueueError) -> PreviousOutcome? {
    state.withLock { $0.pendingFade = transition }
    defer { state.withLock { $0.pendingFade = nil } }
    switch direction {
    case .next: try skipToNextItem()
    case .previous: return try skipBack()
    case .beginning: try skipToBeginning()
    }
    return nil
  }

  /// Sends every voice its gain: the player's volume times the director's mix gain.
  private func postGain(_ state: State) {
    for voice in allVoices(state) { engine.commands.post(.setVolume(voice: voice, state.volume * state.mixGain)) }
  }

  /// The director's rate: changes the speed of every voice without starting playback (unlike
  /// `setCurrentPlaybackRate`) and without a notification.
  package func setMixRate(_ rate: Float) {
    // A product of parameter curves may fall outside the range: the nearest end plays.
    guard rate.isFinite, rate > 0 else { return }
    let rate = min(max(rate, Voice.rateRange.lowerBound), Voice.rateRange.upperBound)
    state.withLock { state in
      guard state.rate != rate else { return }
      state.rate = rate
      for voice in allVoices(state) { engine.commands.post(.setRate(voice: voice, voiceRate(voice, state))) }
    }
  }

  /// What `voice` plays at: the player's rate times the rate of the entry the voice was started
  /// for, within what a voice can play.
  private func voiceRate(_ voice: VoiceHandle, _ state: State) -> Float {
    min(max(state.rate * (state.voiceRates[voice] ?? 1), Voice.rateRange.lowerBound), Voice.rateRange.upperBound)
  }

  /// Scans forward through the current item (2x, growing to 16x).
  public func beginSeekingForward() { beginSeeking(direction: 1) }
  /// Scans backward, the same way.
  public func beginSeekingBackward() { beginSeeking(direction: -1) }

  /// Ends a scan and restores the state from before it.
  public func endSeeking() {
    state.withLock { state in
      guard let before = state.stateBeforeSeeking, let voice = state.voices.current?.handle else { return }
      state.stateBeforeSeeking = nil
      engine.commands.post(.scan(voice: voice, direction: 0))
      if before != .playing { engine.commands.post(.pause(voice: voice)) }
      setState(before == .stopped ? .paused : before, &state)
      reschedule(&state, force: true)
    }
  }

  private func beginSeeking(direction: Int) {
    state.withLock { state in
      guard let now = state.queue.nowID else { return }
      if state.voices.current == nil { start(now, playing: true, fadeFrom: [], &state) }
      guard let voice = state.voices.current?.handle else { return }
      if state.stateBeforeSeeking == nil { state.stateBeforeSeeking = state.playbackState }
      releaseOutgoing(&state)
      engine.commands.post(.play(voice: voice))
      engine.commands.post(.scan(voice: voice, direction: direction))
      setState(direction > 0 ? .seekingForward : .seekingBackward, &state)
    }
  }

  /// Underruns on this player's voices.
  public var underrunCount: Int {
    state.withLock { state in
      allVoices(state).reduce(0) { $0 + (engine.status(of: $1)?.underruns.load(ordering: .relaxed) ?? 0) }
    }
  }

  /// Voices this player holds now (playing, prepared next, fading out).
  public var voiceCount: Int { state.withLock { allVoices($0).count } }

  // MARK: - Notifications

  /// Calls `handler` for every event, in order, on the player's notification queue.
  @discardableResult
  public func addObserver(_ handler: @escaping @Sendable (QueuePlayerEvent) -> Void) -> UInt64 {
    state.withLock { state in
      let id = state.nextObserverID
      state.nextObserverID += 1
      state.observers[id] = handler
      return id
    }
  }

  /// Stops calling the observer registered under `token`.
  public func removeObserver(_ token: UInt64) { _ = state.withLock { $0.observers.removeValue(forKey: token) } }

  /// The events from now on as an async sequence. It ends when the engine shuts down (so a
  /// `for await` over it returns), or when the stream is dropped.
  public var events: AsyncStream<QueuePlayerEvent> {
    streams.make(subscribe: { addObserver($0) }, unsubscribe: { [weak self] in self?.removeObserver($0) })
  }

  /// Blocks until every event reported so far has reached the observers (for tests and tools).
  /// From inside an observer it returns at once (the events before have been delivered).
  public func waitForNotifications() { notifications.waitUntilDelivered() }

  // MARK: - Internals (all called with the state locked)

  private func indexOfNow(_ state: State) -> Int? { state.queue.indexOfNow }

  /// Every voice the player holds: fading out, current, prepared next.
  private func allVoices(_ state: State) -> [VoiceHandle] {
    var voices = state.voices.outgoing.map(\.handle)
    if let current = state.voices.current { voices.append(current.handle) }
    if case .follower(let follower, _, _, _)? = state.voices.scheduled { voices.append(follower.handle) }
    return voices
  }

  /// The shuffle changed: a new play order, announced, and the right next item prepared.
  private func reorder(_ state: inout State) {
    emitLocked(.queueChanged(count: state.queue.playOrder.count), &state)
    reschedule(&state)
  }

  private func successor(of id: Int, _ state: State, honoringRepeatOne: Bool) -> Int? {
    var next = state.queue.successor(of: id, honoringRepeatOne: honoringRepeatOne)
    // Past the entries whose files failed (see `State.failedPaths`), at most once round.
    var passed = 0
    while let candidate = next, let path = state.queue.entries[candidate]?.item.assetURL.path,
      state.failedPaths.contains(path)
    {
      passed += 1
      guard passed <= state.queue.playOrder.count else { return nil }
      next = state.queue.successor(of: candidate, honoringRepeatOne: false)
    }
    return next
  }

  private func predecessor(of id: Int, _ state: State) -> Int? { state.queue.predecessor(of: id) }

  private func request(for id: Int, token: Int, _ state: State) -> SegmentRequest {
    state.queue.segmentRequest(for: id, token: token) ?? SegmentRequest(token: token, path: "")
  }

  /// How the music changes into entry `id` after the current voice's: the entry's or the queue's
  /// transition; a gapless join to an entry of another rate than the current voice's is the
  /// shortest click-free crossfade instead (one voice plays one rate).
  private func transition(into id: Int, _ state: State) -> Transition {
    let transition = state.queue.transition(into: id)
    guard transition.isGapless, let current = state.voices.current?.handle,
      (state.queue.entries[id]?.rate ?? 1) != (state.voiceRates[current] ?? 1)
    else { return transition }
    return Transition(validDuration: Voice.transportFadeSeconds, curve: .equalPower)
  }

  /// Gives the mixer the beat lines of entry `id`'s segment `token` on `voice`, so that it
  /// reports each beat on its frame (see `addBeatObserver`).
  /// With them go its markers: the entry's named cue points (`Entry.cuePoints`, else the item's
  /// own), each reported as it plays (see `addMarkerObserver`).
  private func postBeats(of id: Int, token: Int, voice: VoiceHandle, _ state: inout State) {
    guard let entry = state.queue.entries[id] else { return }
    let duration = entry.item.playbackDuration ?? .infinity
    var markers: [(name: String, seconds: Double)] = []
    for (name, points) in entry.cuePoints ?? entry.item.cuePoints {
      for seconds in points where seconds >= 0 && seconds < duration { markers.append((name, seconds)) }
    }
    markers.sort { $0.seconds != $1.seconds ? $0.seconds < $1.seconds : $0.name < $1.name }
    let grid = entry.beatGrid ?? entry.item.tagBeatGrid
    guard grid != nil || !markers.isEmpty else { return }
    if let grid { state.beatSegments[token] = (entry.item, grid) }
    state.beatSegments[token - Self.rememberedTokens] = nil
    if !markers.isEmpty { state.markerSegments[token] = (entry.item, markers) }
    state.markerSegments[token - Self.rememberedTokens] = nil
    engine.commands.post(
      .setBeats(
        voice: voice, token: token, originSeconds: grid?.offsetSeconds ?? 0, secondsPerBeat: grid?.secondsPerBeat ?? 0,
        markers: markers.map { $0.seconds }))
  }

  // MARK: - Beats

  private let beatObservers = Mutex<[UInt64: @Sendable (MusicBeat) -> Void]>([:])
  private let nextBeatObserver = Atomic<UInt64>(1)

  /// Calls `handler` with every beat of the music this player plays, when it is heard: on
  /// Leitmotif's own thread, within about a device period of the beat reaching the speakers (on
  /// an offline engine, as the mix renders past it, in order). Each beat names its item, bar and
  /// beat, and carries the mix frame it is on. The grid is the entry's `beatGrid`, else the
  /// item's BPM tag (or detected tempo and first beat), else the item has no beats. The handler
  /// must not block for long. Returns a token for `removeBeatObserver(_:)`.
  @discardableResult
  public func addBeatObserver(_ handler: @escaping @Sendable (MusicBeat) -> Void) -> UInt64 {
    let token = nextBeatObserver.add(1, ordering: .relaxed).oldValue
    beatObservers.withLock { $0[token] = handler }
    return token
  }

  public func removeBeatObserver(_ token: UInt64) { _ = beatObservers.withLock { $0.removeValue(forKey: token) } }

  private let markerObservers = Mutex<[UInt64: @Sendable (MusicMarker) -> Void]>([:])

  /// Calls `handler` with every marker of the music this player plays (an entry's named cue
  /// points: `QueueDescriptor.Entry.cuePoints`, else the item's `CUE_<NAME>` tags), when it is
  /// heard, as beats are (see `addBeatObserver`). Returns a token for `removeMarkerObserver(_:)`.
  @discardableResult
  public func addMarkerObserver(_ handler: @escaping @Sendable (MusicMarker) -> Void) -> UInt64 {
    let token = nextBeatObserver.add(1, ordering: .relaxed).oldValue
    markerObservers.withLock { $0[token] = handler }
    return token
  }

  public func removeMarkerObserver(_ token: UInt64) { _ = markerObservers.withLock { $0.removeValue(forKey: token) } }

  /// A marker the mixer reported (notification thread): passed on when it is heard.
  private func deliverMarker(token: Int, index: Int, frame: Int64, audibleAt: UInt64, _ state: State) {
    guard markerObservers.withLock({ !$0.isEmpty }), let (item, markers) = state.markerSegments[token],
      markers.indices.contains(index)
    else { return }
    let marker = MusicMarker(
      item: item, name: markers[index].name, fileSeconds: markers[index].seconds, mixFrame: frame,
      seconds: Double(frame) / Double(engine.sampleRate))
    deliver(frame: frame, at: audibleAt, checks: 0) { [weak self] in
      for handler in self?.markerObservers.withLock({ Array($0.values) }) ?? [] { handler(marker) }
    }
  }

  /// A beat the mixer reported (notification thread): passed on when it is heard.
  private func deliverBeat(token: Int, index: Int, frame: Int64, audibleAt: UInt64, _ state: State) {
    guard beatObservers.withLock({ !$0.isEmpty }), let (item, grid) = state.beatSegments[token] else { return }
    let meter = max(1, grid.beatsPerBar)
    // Bars count from 1 at the first downbeat, as musicians count them (a pickup is bar 0).
    let barIndex = index >= 0 ? index / meter : -((-index - 1) / meter) - 1
    let beat = MusicBeat(
      item: item, bar: barIndex + 1, beat: index - barIndex * meter + 1, beatsPerBar: meter, mixFrame: frame,
      seconds: Double(frame) / Double(engine.sampleRate))
    deliver(frame: frame, at: audibleAt, checks: 0) { [weak self] in
      for handler in self?.beatObservers.withLock({ Array($0.values) }) ?? [] { handler(beat) }
    }
  }

  /// Hands `beat` to the observers at `uptime`, and then only once OpenAL's playback has reached
  /// its frame: the time stamped at mixing assumes the device plays on at once, which it does not
  /// when it has just started (the first beat of the music would come tens of milliseconds early).
  private func deliver(frame: Int64, at uptime: UInt64, checks: Int, _ body: @escaping @Sendable () -> Void) {
    engine.whenAudible(at: uptime) { [weak self] in
      guard let self else { return }
      let behind = frame - engine.heardFrame
      if uptime != 0 && behind > Int64(Self.beatSlackFrames) && checks < 8 {
        let wait = UInt64(behind) * 1_000_000_000 / UInt64(engine.sampleRate)
        deliver(frame: frame, at: DispatchTime.now().uptimeNanoseconds + wait, checks: checks + 1, body)
        return
      }
      body()
    }
  }

  /// How far OpenAL's known playback position may lag a beat's frame when it is delivered: the
  /// position moves in steps of a bus block or a device period.
  static let beatSlackFrames = 256

  /// How many of the latest segment tokens keep their entry id: a failure reported for a segment
  /// names its token, and a segment can fail only while its stream holds it (the voice playing,
  /// its follower, and the few finished segments a stream keeps for seeking back). Tokens only
  /// grow, so the oldest one goes as each new one comes: a queue that repeats for hours makes a
  /// token per pass of each item, and the map kept them all (found by the soak: the heap grew
  /// about 40 KB a minute).
  static let rememberedTokens = 256

  private func newToken(for id: Int, _ state: inout State) -> Int {
    let token = state.nextToken
    state.nextToken += 1
    state.tokens[token] = id
    state.tokens[token - Self.rememberedTokens] = nil
    return token
  }

  /// A voice for the player. `forFollower`: for the next item, prepared ahead of need; it takes
  /// only a free or fading voice (never another owner's), and finding none is no error: the
  /// player tries again when one of its fading voices goes, and at worst cuts to the next item.
  private func takeVoice(_ state: inout State, for entry: Int, forFollower: Bool = false) -> VoiceLease? {
    guard
      let lease = engine.claimVoice(
        priority: Self.voicePriority, stealsHeld: !forFollower, listener: { [weak self] in self?.handle($0) })
    else {
      if !forFollower {
        reportLater(
          Diagnostic(.error, PlayerError.noFreeVoice(limit: engine.voiceLimit).description, error: nil))
      }
      return nil
    }
    let voice = lease.handle
    // Only the voices still held keep a rate of their own (a slot's handle comes back with a
    // new generation, so an old one is never asked for again).
    let held = Set(allVoices(state))
    state.voiceRates = state.voiceRates.filter { held.contains($0.key) }
    state.voiceRates[voice] = state.queue.entries[entry]?.rate ?? 1
    engine.commands.post(.setRate(voice: voice, voiceRate(voice, state)))
    if state.tempo != 1 { engine.commands.post(.setTempo(voice: voice, state.tempo)) }
    engine.commands.post(.setVolume(voice: voice, state.volume * state.mixGain))
    engine.commands.post(.setDuckGroup(voice: voice, duckGroup))
    engine.commands.post(.setLowPass(voice: voice, state.lowPassGain))
    for layer in state.layerLevels.indices {
      engine.commands.post(
        .setLayer(voice: voice, layer: layer, gain: state.layerGains[layer], lowPass: state.layerLowPasses[layer]))
      engine.commands.post(
        .fadeLayer(
          voice: voice, layer: layer, level: state.layerLevels[layer], seconds: 0, curve: .linear, trigger: nil))
    }
    return lease
  }

  /// The voices playing the current queue (the ones its layer settings reach).
  private func queueVoices(_ state: State) -> [VoiceHandle] {
    allVoices(state).filter { !state.earlierQueueVoices.contains($0) }
  }

  /// Starts entry `id` on a new voice: playing (fading in over the outgoing `fadeFrom` voices
  /// when given) or only prepared. Then prepares what follows it.
  private func start(
    _ id: Int, playing: Bool, fadeFrom: [VoiceLease], fade: Transition? = nil, trigger: StartTrigger? = nil,
    hold: Double = 0, _ state: inout State
  ) {
    guard let lease = takeVoice(&state, for: id) else {
      setState(.stopped, &state)
      return
    }
    let voice = lease.handle
    let token = newToken(for: id, &state)
    state.voices.current = lease
    state.voices.currentToken = token
    state.seekGeneration = 0  // seek generations count per voice (the slot's status starts at 0)
    let seek = state.requestedSeekSeconds
    state.requestedSeekSeconds = nil
    engine.load(
      request(for: id, token: token, state), startSeconds: seek, voice: voice, timeStretching: state.stretches)
    postBeats(of: id, token: token, voice: voice, &state)
    state.stampedStart =
      playing && trigger == nil
      ? CommandTime.current.map { ($0, voice, seek ?? state.queue.entries[id]?.startTime ?? 0) } : nil
    if playing {
      if let fade, !fadeFrom.isEmpty {
        let seconds = fade.isGapless ? Voice.transportFadeSeconds : fade.duration
        engine.commands.post(
          .crossfade(
            to: voice, from: fadeFrom.map(\.handle), seconds: seconds, curve: fade.curve, trigger: trigger,
            holdSeconds: hold))
      } else {
        engine.commands.post(.play(voice: voice))
      }
    }
    schedule(&state)
  }

  /// Prepares the item after the now-playing one: appended gaplessly, or on a follower voice
  /// armed to take over with a crossfade.
  private func schedule(_ state: inout State, after failedID: Int? = nil) {
    guard state.voices.scheduled == nil, let current = state.voices.current, let now = state.queue.nowID else { return }
    let base = failedID ?? now
    guard let next = successor(of: base, state, honoringRepeatOne: failedID == nil) else { return }
    let transition = transition(into: next, state)
    let token = newToken(for: next, &state)
    if transition.isGapless {
      engine.append(request(for: next, token: token, state), voice: current.handle)
      postBeats(of: next, token: token, voice: current.handle, &state)
      state.voices.scheduled = .gapless(token: token, entry: next)
    } else {
      armFollower(next, token: token, transition: transition, &state)
    }
  }

  private func armFollower(_ id: Int, token: Int, transition: Transition, _ state: inout State) {
    guard let current = state.voices.current, let follower = takeVoice(&state, for: id, forFollower: true) else {
      return
    }
    engine.load(
      request(for: id, token: token, state), startSeconds: nil, voice: follower.handle,
      timeStretching: state.stretches)
    postBeats(of: id, token: token, voice: follower.handle, &state)
    let seconds = max(transition.duration, Voice.transportFadeSeconds)
    engine.commands.post(
      .arm(
        voice: current.handle,
        Voice.Handoff(
          follower: follower.handle, token: state.voices.currentToken, seconds: seconds, curve: transition.curve)))
    state.voices.scheduled = .follower(follower, token: token, entry: id, transition)
  }

  /// The order, repeat mode or transition changed: if the prepared next item is no longer the
  /// right one, prepare the right one instead.
  private func reschedule(_ state: inout State, force: Bool = false) {
    guard let current = state.voices.current, let now = state.queue.nowID else { return }
    let wanted = successor(of: now, state, honoringRepeatOne: true)
    let scheduled = state.voices.scheduled
    if !force, scheduled?.entry == wanted, scheduled != nil || wanted == nil {
      if let wanted, case .gapless = scheduled, !transition(into: wanted, state).isGapless {
        // Same item, but it should now crossfade: fall through.
      } else {
        return
      }
    }
    switch scheduled {
    case .follower(let follower, _, _, _)?:
      engine.commands.post(.arm(voice: current.handle, nil))
      follower.release()
      state.voices.scheduled = nil
      schedule(&state)
    case .gapless(_, let entry)?:
      if let wanted, wanted == entry, transition(into: wanted, state).isGapless {
        // Already appended to the voice, and still what follows: kept. A seek (or a restart, or
        // the end of a scan) near the item's end let the voice join it before a replacement
        // with a new token arrived; the player then ignored the join, went on reporting the item
        // before, and played this one a second time at its end.
        return
      }
      state.voices.scheduled = nil
      if let wanted, transition(into: wanted, state).isGapless {
        let token = newToken(for: wanted, &state)
        engine.replaceUpcoming(
          voice: current.handle, after: state.voices.currentToken, with: request(for: wanted, token: token, state))
        postBeats(of: wanted, token: token, voice: current.handle, &state)
        state.voices.scheduled = .gapless(token: token, entry: wanted)
      } else {
        engine.replaceUpcoming(voice: current.handle, after: state.voices.currentToken, with: nil)
        schedule(&state)
      }
    case nil:
      schedule(&state)
    }
  }

  /// Plays `id` now: crossfading from what is audible when playing, else only moving there.
  private func jump(to id: Int, reason: NowPlayingChangeReason, _ state: inout State) {
    // A skip leaves the queue the game set: a failure from here on is the new queue's own.
    state.takeBack = nil
    let previous = state.queue.nowID.flatMap { state.queue.entries[$0]?.item }
    if reason == .skipForward && state.playbackState != .stopped { count(previous, played: false) }
    markPlaying(id, &state)
    state.requestedSeekSeconds = nil
    emitNowPlaying(reason: reason, &state)
    if state.playbackState == .playing || state.playbackState == .seekingForward
      || state.playbackState == .seekingBackward
    {
      state.stateBeforeSeeking = nil
      crossfade(to: id, from: previous, &state)
      setState(.playing, &state)
    } else {
      let wasPrepared = state.voices.current != nil
      releaseAllVoices(&state)
      if wasPrepared { start(id, playing: false, fadeFrom: [], &state) }
    }
  }

  /// Starts `id` on a new voice, crossfading from every voice of this player that can be heard.
  /// `keepingHandOver`: with a `trigger`, whether the music playing keeps its hand-over to its
  /// next item (see below), or ends where it ends (see `Landing.replacesHandOver`).
  private func crossfade(
    to id: Int, from previous: MediaItem? = nil, fade override: Transition? = nil, trigger: StartTrigger? = nil,
    hold: Double = 0, keepingHandOver: Bool = true, _ state: inout State
  ) {
    let fade = override ?? state.pendingFade ?? transition(into: id, state)
    state.pendingFade = nil
    // As heard: from music that plays, a gapless entry is reached with the shortest crossfade
    // that does not click (a skip cannot join two files seamlessly mid-item).
    let audible = state.voices.current != nil || !state.voices.outgoing.isEmpty
    let heard =
      fade.isGapless && audible ? Transition(validDuration: Voice.transportFadeSeconds, curve: fade.curve) : fade
    emitLocked(.transitionStarted(from: previous, to: state.queue.entries[id]!.item, heard), &state)
    if case .follower(let follower, let token, id, _)? = state.voices.scheduled, state.requestedSeekSeconds == nil,
      trigger == nil, hold == 0
    {
      // The item is already open and buffered on the follower voice (a skip to the next item):
      // crossfade into that voice instead of opening the file again.
      state.voices.scheduled = nil
      if let current = state.voices.current {
        engine.commands.post(.arm(voice: current.handle, nil))
        state.voices.outgoing.append(current)
      }
      state.voices.current = follower
      state.voices.currentToken = token
      state.seekGeneration = 0
      let seconds = fade.isGapless ? Voice.transportFadeSeconds : fade.duration
      engine.commands.post(
        .crossfade(
          to: follower.handle, from: state.voices.outgoing.map(\.handle), seconds: seconds, curve: fade.curve,
          trigger: nil))
      schedule(&state)
      return
    }
    // A crossfade that lands on a later line leaves the outgoing music as it was until then: if
    // its item ends first, its next item (or its repeat) takes over as it would have, and fades
    // out in its turn; the item alone ended on the line, and the crossfade faded out silence.
    let from = takeAudibleVoices(&state, keepingHandOver: trigger != nil && keepingHandOver)
    start(id, playing: true, fadeFrom: from, fade: fade, trigger: trigger, hold: hold, &state)
  }

  /// Moves the current voice (and those already fading) to the outgoing list; the prepared
  /// follower is let go, or with `keepingHandOver` stays armed and goes out with them (the
  /// engine lets it go unheard when the crossfade comes before its hand-over). Returns the
  /// voices to fade out. (A gapless successor is in the current voice's own stream: it stays.)
  private func takeAudibleVoices(_ state: inout State, keepingHandOver: Bool = false) -> [VoiceLease] {
    var kept: VoiceLease?
    if case .follower(let follower, _, _, _)? = state.voices.scheduled {
      if keepingHandOver { kept = follower } else { follower.release() }
    }
    state.voices.scheduled = nil
    if let current = state.voices.current {
      if kept == nil { engine.commands.post(.arm(voice: current.handle, nil)) }
      state.voices.outgoing.append(current)
    }
    if let kept { state.voices.outgoing.append(kept) }
    state.voices.current = nil
    return state.voices.outgoing
  }

  private func releaseOutgoing(_ state: inout State) {
    for voice in state.voices.outgoing { voice.release() }
    state.voices.outgoing = []
    state.pausedFading = []
  }

  private func releaseAllVoices(_ state: inout State) {
    releaseOutgoing(&state)
    if case .follower(let follower, _, _, _)? = state.voices.scheduled { follower.release() }
    state.voices.scheduled = nil
    state.voices.current?.release()
    state.voices.current = nil
  }

  private func restartCurrent(_ state: inout State) {
    guard let now = state.queue.nowID else { return }
    let start = state.queue.entries[now]?.startTime ?? 0
    if let voice = state.voices.current {
      releaseOutgoing(&state)
      state.seekGeneration += 1
      state.lastSeekSeconds = start
      state.lastSeekFrame = nil
      engine.commands.post(.seek(voice: voice.handle, seconds: start, generation: state.seekGeneration))
      reschedule(&state, force: true)
    } else {
      state.requestedSeekSeconds = nil
    }
  }

  /// The queue ran out: stopped, back at its first item.
  private func endOfQueue(_ state: inout State, reason: NowPlayingChangeReason) {
    if reason == .naturalEnd || reason == .skipForward { endCount.add(1, ordering: .releasing) }
    if reason == .naturalEnd {
      count(state.queue.nowID.flatMap { state.queue.entries[$0]?.item }, played: true)
    } else if reason == .skipForward {
      count(state.queue.nowID.flatMap { state.queue.entries[$0]?.item }, played: false)
    }
    let playing = state.voices.current
    state.voices.current = nil
    if case .follower(let follower, _, _, _)? = state.voices.scheduled { follower.release() }
    state.voices.scheduled = nil
    if let playing {
      // Let it fade (a skip) or finish (it already ended) before its voice goes.
      engine.commands.post(
        .fadeOutAndFinish(voice: playing.handle, seconds: Voice.transportFadeSeconds, curve: .linear))
      state.voices.outgoing.append(playing)
    }
    state.queue.nowID = state.queue.playOrder.first
    state.queue.pinned = []
    emitNowPlaying(reason: reason, &state)
    setState(.stopped, &state)
  }

  // MARK: - Engine events

  /// An event of one of the player's voices. Each names its voice by handle: a voice the player
  /// no longer holds (stolen, released) is not confused with the voice that has its slot now.
  private func handle(_ event: EngineEvent) {
    guard let voice = event.voice else { return }
    state.withLock { state in
      let isCurrent = voice == state.voices.current?.handle
      switch event {
      case .prepared:
        // (The queue before stays takeable-back until its music starts to fade: see `takeBack`.)
        break
      case .beat(_, let token, let index, let frame, let audibleAt):
        deliverBeat(token: token, index: index, frame: frame, audibleAt: audibleAt, state)
      case .marker(_, let token, let index, let frame, let audibleAt):
        deliverMarker(token: token, index: index, frame: frame, audibleAt: audibleAt, state)
      case .segmentStarted(_, let token, let frame):
        guard isCurrent, case .gapless(token, let entry)? = state.voices.scheduled else { return }
        let from = state.queue.nowID.flatMap { state.queue.entries[$0]?.item }
        state.voices.scheduled = nil
        state.voices.currentToken = token
        advance(to: entry, atFrame: frame, &state)
        emitLocked(.transitionStarted(from: from, to: state.queue.entries[entry]!.item, .gapless), &state)
        schedule(&state)
      case .handedOff(_, let to, let seconds, let frame):
        guard isCurrent, let current = state.voices.current,
          case .follower(let follower, let token, let entry, let used)? = state.voices.scheduled,
          follower.handle == to
        else {
          return
        }
        let from = state.queue.nowID.flatMap { state.queue.entries[$0]?.item }
        state.voices.outgoing.append(current)
        state.voices.current = follower
        state.voices.currentToken = token
        state.seekGeneration = 0
        state.voices.scheduled = nil
        advance(to: entry, atFrame: frame, &state)
        // What was heard: a crossfade longer than half the outgoing or the incoming item is cut to that.
        let heard = seconds < used.duration ? Transition(validDuration: seconds, curve: used.curve) : used
        emitLocked(.transitionStarted(from: from, to: state.queue.entries[entry]!.item, heard), &state)
        schedule(&state)
      case .fadedOut:
        if let index = state.voices.outgoing.firstIndex(where: { $0.handle == voice }) {
          state.voices.outgoing.remove(at: index).release()
          // A voice is free again: prepare the next item if no voice was left for it before.
          schedule(&state)
        }
      case .ended:
        guard isCurrent else { return }
        switch state.voices.scheduled {
        case .follower?:
          return  // the armed hand-over starts as soon as the follower has audio
        case .gapless(_, let entry)?:
          // The next file was not appended in time (a very short item): start it fresh.
          state.voices.scheduled = nil
          let outgoing = takeAudibleVoices(&state)
          advance(to: entry, &state)
          start(entry, playing: true, fadeFrom: outgoing, fade: .gapless, &state)
        case nil:
          if let now = state.queue.nowID, let next = successor(of: now, state, honoringRepeatOne: true) {
            // The next item could not be prepared in time (no voice was free for it): start it
            // now, after the item that ended, rather than end the queue.
            let outgoing = takeAudibleVoices(&state)
            advance(to: next, &state)
            start(next, playing: true, fadeFrom: outgoing, fade: .gapless, &state)
          } else {
            endOfQueue(&state, reason: .naturalEnd)
          }
        }
      case .failed(_, let error):
        failed(voice: voice, error: error, token: nil, &state)
      case .segmentFailed(_, let token, let error):
        failed(voice: voice, error: error, token: token, &state)
      case .appendFailed(_, let token, let error, let rateMismatch):
        guard isCurrent, case .gapless(token, let entry)? = state.voices.scheduled else { return }
        state.voices.scheduled = nil
        if rateMismatch {
          // One source plays one rate: join with the shortest click-free crossfade instead.
          armFollower(
            entry, token: token, transition: Transition(validDuration: Voice.transportFadeSeconds, curve: .equalPower),
            &state)
        } else if let item = state.queue.entries[entry]?.item {
          emitLocked(.itemFailed(item, error), &state)
          reportLater(Diagnostic(.error, error.description, error: error))
          recordFailure(item, error)
          state.failedPaths.insert(item.assetURL.path)  // it could not be opened: nothing of it plays
          // Every item failed in a row (a one-item loop whose file was deleted): nothing more
          // is lined up, and what plays ends, the queue with it, as when the playing item
          // fails. Lining up the next item regardless retried the same file as fast as it
          // failed, for as long as the voice played: thousands of reports a second.
          state.consecutiveFailures += 1
          if state.consecutiveFailures < max(1, state.queue.playOrder.count) { schedule(&state, after: entry) }
        }
      case .underrun:
        emitLocked(.underrun, &state)
      case .interrupted(_, let interrupted):
        guard isCurrent else { return }
        if interrupted && state.playbackState == .playing {
          setState(.interrupted, &state)
        } else if !interrupted && state.playbackState == .interrupted {
          setState(.playing, &state)
        }
      case .stolen:
        // The lease is revoked: the voice is another owner's now (possibly this player's own new
        // voice on the same slot, under a new generation). Only forget it.
        state.voices.outgoing.removeAll { $0.handle == voice }
        if case .follower(let follower, _, _, _)? = state.voices.scheduled, follower.handle == voice {
          state.voices.scheduled = nil
          if let current = state.voices.current { engine.commands.post(.arm(voice: current.handle, nil)) }
          schedule(&state)
        } else if isCurrent {
          state.voices.current = nil
          reportLater(Diagnostic(.warning, "the queue player's voice was stolen by a higher-priority sound"))
          releaseAllVoices(&state)
          setState(.stopped, &state)
        }
      default:
        break
      }
    }
  }

  /// An item failed: say so, and move on past it (or stop when every item failed).
  private func failed(voice: VoiceHandle, error: DecodeError, token: Int?, _ state: inout State) {
    let isCurrent = voice == state.voices.current?.handle
    var failedFollower: VoiceLease?
    if case .follower(let follower, _, _, _)? = state.voices.scheduled, follower.handle == voice {
      failedFollower = follower
    }
    let failedEntry: Int?
    if let token {
      failedEntry = state.tokens[token]
    } else if failedFollower != nil, let entry = state.voices.scheduled?.entry {
      failedEntry = entry
    } else if isCurrent {
      failedEntry = state.queue.nowID
    } else {
      return  // an outgoing voice failing as it fades: nothing more to do
    }
    guard let id = failedEntry, let item = state.queue.entries[id]?.item else { return }
    emitLocked(.itemFailed(item, error), &state)
    reportLater(Diagnostic(.error, error.description, error: error))
    recordFailure(item, error)
    // A file that could not be opened (its voice never had audio) is passed over from now on; one
    // damaged or cut short part-way still plays up to the damage on each pass.
    if token == nil, engine.status(of: voice)?.isPrepared.load(ordering: .acquiring) == false {
      state.failedPaths.insert(item.assetURL.path)
    }
    state.consecutiveFailures += 1
    let giveUp = state.consecutiveFailures >= max(1, state.queue.playOrder.count)
    if let failedFollower {
      // The prepared next item failed to open: prepare the one after it.
      state.voices.scheduled = nil
      failedFollower.release()
      if let current = state.voices.current { engine.commands.post(.arm(voice: current.handle, nil)) }
      if !giveUp { schedule(&state, after: id) }
      return
    }
    if token != nil {
      // Failed in the middle of a gapless stream, which goes on with the next segment.
      state.followsFailure = true
      return
    }
    guard isCurrent else { return }
    if giveUp, takeBack(&state, reason: .failure) { return }
    // The playing item failed (or could not open): on to the one after it.
    let next = successor(of: id, state, honoringRepeatOne: false)
    let wasPlaying = state.playbackState == .playing
    if case .follower? = state.voices.scheduled, state.voices.scheduled?.entry == next,
      engine.status(of: voice)?.isPrepared.load(ordering: .acquiring) == true
    {
      // The failed voice had played (it ended early), so its armed hand-over to the prepared
      // follower fires on its own.
      state.followsFailure = true
      return
    }
    releaseAllVoices(&state)
    guard let next, !giveUp else {
      endOfQueue(&state, reason: .failure)
      return
    }
    markPlaying(next, &state)
    emitNowPlaying(reason: .failure, &state)
    start(next, playing: wasPlaying, fadeFrom: [], &state)
  }

  /// The new queue could not start and the music before it still plays, unfaded (its crossfade
  /// waits for music that will never come): that queue comes back, its voice current again, its
  /// next item lined up again. True when it did.
  private func takeBack(_ state: inout State, reason: NowPlayingChangeReason) -> Bool {
    guard let back = waitingBack(state),
      let index = state.voices.outgoing.firstIndex(where: { $0.handle == back.voice })
    else { return false }
    state.takeBack = nil
    state.pausedFading = []
    let voice = state.voices.outgoing.remove(at: index)
    // Not faded yet when looked at; a crossfade that begins before this reaches the mixer (a
    // late director thread) is undone there.
    state.voices.current?.callOff(keeping: voice.handle)
    state.voices.current = voice
    state.voices.currentToken = back.token
    state.queue = back.queue
    state.layerLevels = back.layerLevels
    state.layerGains = back.layerGains
    state.layerLowPasses = back.layerLowPasses
    state.earlierQueueVoices = back.earlierQueueVoices
    state.requestedSeekSeconds = nil
    state.consecutiveFailures = 0
    // A follower that stayed armed (a crossfade on a later line keeps it) is lined up again;
    // otherwise the next item is prepared afresh.
    if case .follower(let follower, _, _, _)? = back.scheduled,
      let kept = state.voices.outgoing.firstIndex(where: { $0.handle == follower.handle })
    {
      state.voices.outgoing.remove(at: kept)
      state.voices.scheduled = back.scheduled
    } else if case .gapless? = back.scheduled {
      state.voices.scheduled = back.scheduled
    } else {
      state.voices.scheduled = nil
      schedule(&state)
    }
    emitLocked(.queueChanged(count: state.queue.playOrder.count), &state)
    emitNowPlaying(reason: reason, &state)
    if reason == .failure { takenBack.add(1, ordering: .releasing) }
    return true
  }

  /// Calls off the last `setQueue` while its music waits to be heard (a crossfade waiting for its
  /// grid line): the queue before it, still playing unfaded, is the player's again, as if the
  /// new one had never come. False (nothing changes) once the new music has begun.
  package func takeBackQueue() -> Bool {
    state.withLock { state in takeBack(&state, reason: .queueChange) }
  }

  /// Entry `id` plays now; a new shuffled lap it begins is announced as a queue change.
  private func markPlaying(_ id: Int, _ state: inout State) {
    if state.queue.markPlaying(id) { emitLocked(.queueChanged(count: state.queue.playOrder.count), &state) }
  }

  /// The now-playing item moved on by itself (a join or a hand-over), heard from mix frame
  /// `frame` on.
  private func advance(to id: Int, atFrame frame: Int64? = nil, _ state: inout State) {
    if !state.followsFailure { count(state.queue.nowID.flatMap { state.queue.entries[$0]?.item }, played: true) }
    markPlaying(id, &state)
    let reason: NowPlayingChangeReason = state.followsFailure ? .failure : .naturalEnd
    state.followsFailure = false
    state.consecutiveFailures = 0
    emitNowPlaying(reason: reason, &state)
    state.advancedAt = frame.map { (id, $0, state.nowPlayingChanges) }
  }

  // MARK: - Emitting

  /// Hands a diagnostic to the engine's handler from the notification queue, never under the
  /// player's lock (a handler may call back into the player).
  private func reportLater(_ diagnostic: Diagnostic) {
    let engine = self.engine
    notifications.async { engine.report(diagnostic) }
  }

  private func setState(_ new: PlaybackState, _ state: inout State) {
    guard state.playbackState != new else { return }
    state.playbackState = new
    emitLocked(.playbackStateChanged(new), &state)
  }

  private func emitNowPlaying(reason: NowPlayingChangeReason, _ state: inout State) {
    state.nowPlayingChanges &+= 1
    let item = state.queue.nowID.flatMap { state.queue.entries[$0]?.item }
    emitLocked(.nowPlayingItemChanged(item, index: indexOfNow(state), reason: reason), &state)
  }

  /// Queues the event for the observers, under the lock: the order of notifications is the
  /// order of changes.
  private func emitLocked(_ event: QueuePlayerEvent, _ state: inout State) {
    let observers = Array(state.observers.values)
    guard !observers.isEmpty else { return }
    notifications.async { for observer in observers { observer(event) } }
  }
}

/// Hands out entry ids inside a transaction (the closure may not capture `inout` state).
private final class IDCounter: @unchecked Sendable {
  private(set) var value: Int
  init(start: Int) { value = start }
  func next() -> Int {
    defer { value += 1 }
    return value
  }
}
