import Dispatch
import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import Synchronization

/// Plays one item: MediaPlayer's `MPMediaPlayback` contract on Leitmotif's engine.
///
/// Every method returns at once: requests go to the engine's streaming thread as commands, and
/// file opening happens on the engine's loader thread. (On an offline engine `prepareToPlay` opens
/// the file in the calling thread, and changes take effect at the next `render`.)
///
/// Transport changes are click-free: pause, stop and seeks ramp the gain over 10 ms first.
///
/// A player released while it plays lets its sound play out: `try Player(engine: engine, item:
/// hit).play()` is a one-shot sound, heard to its end though nothing holds the player (its voice
/// goes back to the pool when the item ends or fails). Keep a reference to pause, stop or change
/// it; a paused or stopped player that is released gives its voice back at once. (Before, a
/// playing player that went out of scope gave its voice back at once, and the sound was never
/// heard.)
///
/// Thread safety: safe to call from any thread; no async code needed.
/// Observers run on the player's own serial notification queue, in order, never on the streaming
/// thread; they may call back into the player.
public final class Player: MediaPlayback {
  /// The engine the player plays on.
  public let engine: AudioEngine
  private let state: Mutex<State>
  private let notifications = NotificationQueue(label: "leitmotif.player.notifications")

  private struct State {
    /// The player's voice. A new item renews it (a new generation of the same slot), so that
    /// nothing of the old item's still on its way (the file being opened) can play; a steal
    /// revokes it, and the next `prepareToPlay` or `play` claims a voice again.
    var lease: VoiceLease?
    var item: MediaItem?
    var playbackState: PlaybackState = .stopped
    var loadRequested = false
    var prepared = false
    var rate: Float = 1
    var volume: Float = 1
    var lowPassGain: Float = 1
    var stateBeforeSeeking: PlaybackState?
    /// Why the item stopped, when it failed (to open, or while playing).
    var failure: DecodeError?
    var seekGeneration = 0
    var requestedSeekSeconds: Double = 0
    var observers: [UInt64: @Sendable (PlayerEvent) -> Void] = [:]
    var nextObserverID: UInt64 = 1
    /// The engine's shutdown hook of this player.
    var shutdownHook: UInt64 = 0
  }

  /// The `events` streams handed out, ended when the engine shuts down.
  private let streams = EventStreams<PlayerEvent>()

  /// A player on `engine` for `item`.
  /// - Throws: `PlayerError.noFreeVoice` when the engine has no voice left.
  public init(engine: AudioEngine, item: MediaItem? = nil) throws(PlayerError) {
    self.engine = engine
    state = Mutex(State(item: item))
    let lease = state.withLock { state in Self.claim(engine: engine, for: self, &state) }
    guard lease != nil else { throw PlayerError.noFreeVoice(limit: engine.voiceLimit) }
    let hook = engine.addShutdownHook { [weak self] in self?.engineDidShutDown() }
    state.withLock { $0.shutdownHook = hook }
  }

  deinit {
    state.withLock { state in
      engine.removeShutdownHook(state.shutdownHook)
      switch state.playbackState {
      case .playing, .interrupted, .seekingForward, .seekingBackward:
        // Heard to its end: the pool takes the voice back when it ends (see the type's notes).
        state.lease?.playOut()
      case .paused, .stopped:
        break
      }
    }
  }

  /// The engine stopped: nothing more plays, so the player is stopped, and its streams end.
  private func engineDidShutDown() {
    state.withLock { state in
      state.stateBeforeSeeking = nil
      _ = setState(.stopped, in: &state)
    }
    let streams = self.streams
    notifications.async { streams.finish() }
  }

  /// Claims a voice from the pool for this player (stingers' priority, 0) and keeps its lease.
  @discardableResult
  private static func claim(engine: AudioEngine, for player: Player, _ state: inout State) -> VoiceLease? {
    let lease = engine.claimVoice(priority: 0) { [weak player] event in player?.handle(event) }
    state.lease = lease
    return lease
  }

  /// The player's voice, claimed again if it was stolen (nil when the pool has none to give).
  private func currentVoice(_ state: inout State) -> VoiceHandle? {
    if let lease = state.lease, lease.isCurrent { return lease.handle }
    guard Self.claim(engine: engine, for: self, &state) != nil else {
      engine.report(Diagnostic(.error, PlayerError.noFreeVoice(limit: engine.voiceLimit).description, error: nil))
      return nil
    }
    // A fresh voice: the player's settings and item start over on it.
    state.loadRequested = false
    state.prepared = false
    state.seekGeneration = 0
    postSettings(state)
    return state.lease?.handle
  }

  /// The voice of the player's lease, for commands: a revoked lease's commands are dropped by the
  /// engine, as they should be.
  private var voice: VoiceHandle? { state.withLock { $0.lease?.handle } }

  /// The slot of the player's voice (for timelines, which draw a lane per slot).
  package var slot: Int? { voice?.slot }

  /// The player's voice's status, if the voice is still the player's and the engine has taken it up.
  private var status: VoiceStatus? { voice.flatMap { engine.status(of: $0) } }

  /// Sends the player's rate, volume and filter to its voice (a claim starts them at 1).
  private func postSettings(_ state: State) {
    guard let voice = state.lease?.handle else { return }
    if state.rate != 1 { engine.commands.post(.setRate(voice: voice, state.rate)) }
    if state.volume != 1 { engine.commands.post(.setVolume(voice: voice, state.volume)) }
    if state.lowPassGain != 1 { engine.commands.post(.setLowPass(voice: voice, state.lowPassGain)) }
  }

  // MARK: - The item

  /// The item to play. Setting it stops what plays and forgets the old item's buffers.
  public var item: MediaItem? {
    get { state.withLock { $0.item } }
    set {
      state.withLock { state in
        state.item = newValue
        state.failure = nil
        state.loadRequested = false
        state.prepared = false
        state.requestedSeekSeconds = 0
        _ = setState(.stopped, in: &state)
        // A new generation of the voice: the old item's file, if it is still being opened, is
        // dropped when it arrives, and its settings reset. The player's settings outlive its
        // item (posted under the lock, as their setters do, so the last value set is the last
        // posted).
        if let lease = state.lease, let renewed = engine.pool.renew(lease) {
          state.lease = renewed
          state.seekGeneration = 0  // seek generations count per voice (a claim starts at 0)
          postSettings(state)
        }
      }
    }
  }

  // MARK: - MPMediaPlayback

  /// Opens the item and fills the output buffers so that `play()` starts at once. Returns
  /// immediately; `isPreparedToPlay` turns true (and `.prepared` is reported) when done.
  /// `item` (MediaPlayback's name for it, shared with `QueuePlayer`).
  public var nowPlayingItem: MediaItem? { item }

  public func prepareToPlay() {
    let request = state.withLock { state -> (String, Double, VoiceHandle)? in
      guard state.item != nil, let voice = currentVoice(&state), let item = state.item, !state.loadRequested
      else { return nil }
      state.loadRequested = true
      return (item.assetURL.path, state.requestedSeekSeconds, voice)
    }
    if let (path, start, voice) = request { engine.load(path: path, startSeconds: start, voice: voice) }
  }

  /// Whether the item is open and buffered.
  public var isPreparedToPlay: Bool { status?.isPrepared.load(ordering: .acquiring) ?? false }

  /// Starts or resumes playback (preparing first if needed).
  public func play() {
    // Nothing plays on a shut-down engine: the player used to say it was playing.
    guard !engine.isShutDown else { return }
    prepareToPlay()
    let voice = state.withLock { state -> VoiceHandle? in
      guard let voice = state.lease?.handle, state.lease?.isCurrent == true else { return nil }
      if state.stateBeforeSeeking != nil { endSeekingLocked(&state, restore: false) }
      _ = setState(.playing, in: &state)
      return voice
    }
    if let voice { engine.commands.post(.play(voice: voice)) }
  }

  /// Starts playing on the frame where `trigger`'s voice reaches its position (the director's
  /// stingers on the beat): opened now, started by the mixer on that frame.
  package func play(when trigger: StartTrigger, ducking duck: (group: UInt32, shape: DuckShape)? = nil) {
    prepareToPlay()
    let voice = state.withLock { state -> VoiceHandle? in
      guard let voice = state.lease?.handle, state.lease?.isCurrent == true else { return nil }
      _ = setState(.playing, in: &state)
      return voice
    }
    guard let voice else { return }
    engine.commands.post(.playOnTrigger(voice: voice, trigger))
    // The duck starts where the mixer starts the voice, on the same frame.
    if let duck { engine.commands.post(.duckOnStart(voice: voice, group: duck.group, duck.shape)) }
  }

  /// Pauses with a short fade; `play()` resumes from the same frame.
  public func pause() {
    state.withLock { state in
      if state.stateBeforeSeeking != nil { endSeekingLocked(&state, restore: false) }
      _ = setState(.paused, in: &state)
    }
    if let voice { engine.commands.post(.pause(voice: voice)) }
  }

  /// Stops with a short fade; the next `play()` starts from the beginning.
  public func stop() {
    let generation = state.withLock { state -> Int in
      state.stateBeforeSeeking = nil
      state.requestedSeekSeconds = 0
      state.seekGeneration += 1
      _ = setState(.stopped, in: &state)
      return state.seekGeneration
    }
    if let voice { engine.commands.post(.stop(voice: voice, generation: generation)) }
  }

  /// The position in the item, in seconds. Setting it seeks sample-accurately (to the frame
  /// nearest the time), clamped to the item; while playing the seek fades out and back in.
  public var currentPlaybackTime: TimeInterval {
    get {
      let (generation, requested) = state.withLock { ($0.seekGeneration, $0.requestedSeekSeconds) }
      guard let status else { return requested }
      let rate = status.sampleRate.load(ordering: .acquiring)
      if rate == 0 || status.seekGenerationDone.load(ordering: .acquiring) < generation { return requested }
      return Double(status.positionFrames.load(ordering: .acquiring)) / Double(rate)
    }
    set {
      var seconds = newValue.isFinite ? max(0, newValue) : 0
      if let duration = playbackDuration { seconds = min(seconds, duration) }
      let generation = state.withLock { state -> Int in
        state.seekGeneration += 1
        state.requestedSeekSeconds = seconds
        return state.seekGeneration
      }
      if let voice { engine.commands.post(.seek(voice: voice, seconds: seconds, generation: generation)) }
    }
  }

  /// The item's length in seconds, once it is prepared.
  public var playbackDuration: TimeInterval? {
    guard let status else { return nil }
    let rate = status.sampleRate.load(ordering: .acquiring)
    guard rate > 0, isPreparedToPlay else { return nil }
    return Double(status.lengthFrames.load(ordering: .acquiring)) / Double(rate)
  }

  /// The playback speed: 0 when not playing. Setting 0 pauses; a value in [1/256, 4] plays at that
  /// speed (starting playback if needed, as MediaPlayer does); any other value is refused and
  /// reported to the engine's diagnostics (use `setCurrentPlaybackRate` to get the error).
  public var currentPlaybackRate: Float {
    get { state.withLock { $0.playbackState == .playing ? $0.rate : 0 } }
    set { setRateReportingErrors(newValue) }
  }

  /// Sets the playback speed: 0 pauses, [1/256, 4] plays at that speed (pitch follows: the mixer
  /// resamples).
  /// - Throws: `PlayerError.rateOutOfRange` for NaN, negatives and values above 4.
  public func setCurrentPlaybackRate(_ rate: Float) throws(PlayerError) {
    try PlayerError.check(rate: rate)
    if rate == 0 {
      pause()
      return
    }
    state.withLock { $0.rate = rate }
    if let voice { engine.commands.post(.setRate(voice: voice, rate)) }
    if playbackState != .playing { play() }
  }

  /// The player's gain, 0 to 1.
  public var volume: Float {
    get { state.withLock { $0.volume } }
    set {
      let volume = newValue.isFinite ? max(0, min(1, newValue)) : 1
      state.withLock { state in
        state.volume = volume
        if let voice = state.lease?.handle { engine.commands.post(.setVolume(voice: voice, volume)) }
      }
    }
  }

  /// Muffles the music ("under water", a pause menu): the high-frequency gain of the shelf filter
  /// on the player's voice (a biquad high shelf at 5 kHz, the filter OpenAL Soft calls its EFX
  /// low-pass, run in Leitmotif's own mix). 0 to 1: what lies above about 5 kHz is scaled by it
  /// (0 acts as -60 dB) and the bass is left as it is; 1, the default, removes the filter, so the
  /// output is exactly unfiltered. Values outside 0...1 are clamped; NaN and infinities mean 1.
  /// It stays set when `item` changes.
  ///
  /// Returns at once: it lands on the first frame the mixer mixes after the engine's streaming
  /// thread takes it (offline: at the next `render`). Safe to set from any thread.
  public var lowPassGain: Float {
    get { state.withLock { $0.lowPassGain } }
    set {
      let gain = newValue.isFinite ? max(0, min(1, newValue)) : 1
      state.withLock { state in
        state.lowPassGain = gain
        if let voice = state.lease?.handle { engine.commands.post(.setLowPass(voice: voice, gain)) }
      }
    }
  }

  /// Scans forward: jumps that grow the longer it runs (2x speed at first, up to 16x).
  public func beginSeekingForward() { beginSeeking(direction: 1) }

  /// Scans backward, the same way.
  public func beginSeekingBackward() { beginSeeking(direction: -1) }

  /// Ends a scan and restores the state from before it (playing, paused or stopped) at the
  /// scanned position.
  public func endSeeking() {
    let restore = state.withLock { state -> PlaybackState? in
      guard let before = state.stateBeforeSeeking else { return nil }
      endSeekingLocked(&state, restore: true)
      return before
    }
    guard let voice else { return }
    engine.commands.post(.scan(voice: voice, direction: 0))
    switch restore {
    case .paused?, .stopped?: engine.commands.post(.pause(voice: voice))
    default: break
    }
  }

  private func beginSeeking(direction: Int) {
    prepareToPlay()
    state.withLock { state in
      if state.stateBeforeSeeking == nil { state.stateBeforeSeeking = state.playbackState }
      _ = setState(direction > 0 ? .seekingForward : .seekingBackward, in: &state)
    }
    guard let voice else { return }
    engine.commands.post(.play(voice: voice))
    engine.commands.post(.scan(voice: voice, direction: direction))
  }

  private func endSeekingLocked(_ state: inout State, restore: Bool) {
    let before = state.stateBeforeSeeking ?? .paused
    state.stateBeforeSeeking = nil
    if restore { _ = setState(before == .stopped ? .paused : before, in: &state) }
  }

  /// The current playback state.
  public var playbackState: PlaybackState { state.withLock { $0.playbackState } }

  /// Underruns on this player's voice since it was made.
  /// Why the item failed, if it did (for the director, which reports a stinger that could not
  /// play).
  package var failure: DecodeError? { state.withLock { $0.failure } }

  public var underrunCount: Int { status?.underruns.load(ordering: .relaxed) ?? 0 }

  // MARK: - Notifications

  /// Calls `handler` for every event, in order, on the player's notification queue.
  /// Returns a token for `removeObserver`.
  @discardableResult
  public func addObserver(_ handler: @escaping @Sendable (PlayerEvent) -> Void) -> UInt64 {
    state.withLock { state in
      let id = state.nextObserverID
      state.nextObserverID += 1
      state.observers[id] = handler
      return id
    }
  }

  /// Blocks until every event reported so far has reached the observers (for tests and tools).
  /// From inside an observer it returns at once (the events before have been delivered).
  public func waitForNotifications() { notifications.waitUntilDelivered() }

  /// Stops calling the observer registered under `token`.
  public func removeObserver(_ token: UInt64) { _ = state.withLock { $0.observers.removeValue(forKey: token) } }

  /// The events from now on as an async sequence. It ends when the engine shuts down (so a
  /// `for await` over it returns), or when the stream is dropped.
  public var events: AsyncStream<PlayerEvent> {
    streams.make(subscribe: { addObserver($0) }, unsubscribe: { [weak self] in self?.removeObserver($0) })
  }

  /// Sets the state and, if it changed, queues the notification (under the lock, so the order of
  /// notifications is the order of changes).
  private func setState(_ new: PlaybackState, in state: inout State) -> Bool {
    guard state.playbackState != new else { return false }
    state.playbackState = new
    emit(.playbackStateChanged(new), observers: Array(state.observers.values))
    return true
  }

  private func emit(_ event: PlayerEvent, observers: [@Sendable (PlayerEvent) -> Void]) {
    guard !observers.isEmpty else { return }
    notifications.async { for observer in observers { observer(event) } }
  }

  private func handle(_ event: EngineEvent) {
    state.withLock { state in
      // Only events of the player's current voice (a renewed voice's old generation is stale).
      guard let voice = event.voice, voice == state.lease?.handle else { return }
      let observers = Array(state.observers.values)
      switch event {
      case .prepared:
        state.prepared = true
        emit(.prepared, observers: observers)
      case .ended:
        emit(.itemEnded, observers: observers)
        state.stateBeforeSeeking = nil
        _ = setState(.stopped, in: &state)
      case .failed(_, let error):
        state.failure = error
        emit(.itemFailed(error), observers: observers)
        state.stateBeforeSeeking = nil
        state.loadRequested = state.prepared
        _ = setState(.stopped, in: &state)
      case .underrun:
        emit(.underrun, observers: observers)
      case .interrupted(_, let interrupted):
        if interrupted && state.playbackState == .playing {
          _ = setState(.interrupted, in: &state)
        } else if !interrupted && state.playbackState == .interrupted {
          _ = setState(.playing, in: &state)
        }
      case .stolen:
        // The pool gave the voice to a more important sound: this player is silent and stopped
        // (a later play claims a voice again and starts the item over).
        emit(.voiceStolen, observers: observers)
        state.stateBeforeSeeking = nil
        state.loadRequested = false
        state.prepared = false
        state.requestedSeekSeconds = 0
        _ = setState(.stopped, in: &state)
      default: break
      }
    }
    if case .failed(_, let error) = event {
      engine.report(Diagnostic(.error, error.description, error: error))
    }
  }
}
