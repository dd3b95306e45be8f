import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

#if canImport(Glibc)
  import Glibc
#endif

/// The director's interpreter: the rules of the cue file applied to events, and the music
/// controls they move. It owns the music's state (which music state plays, ramps, ducks,
/// cooldowns, transitions waiting for the grid) and acts on the queue player and stinger players.
///
/// Not thread-safe: `Director` keeps it behind its lock and calls it from one thread at a time
/// (its own thread, the game's `update()`, or the offline renderer). Nothing here does I/O: the
/// sources were resolved beforehand (`MusicResolver`), and players only post commands.
final class DirectorCore {
  let engine: AudioEngine
  let player: QueuePlayer
  private(set) var sheet: CueSheet
  private(set) var catalog: BundledCatalog
  /// The loudness every item is levelled to (the sheet's target, else the bundled music's median).
  var loudnessTarget: Double? { sheet.loudness.target(catalog: catalog) }
  private(set) var resolved: [String: SourceResolution]
  /// The director's clock, in seconds (see `DirectorReport.time`).
  private(set) var now: Double = 0
  private(set) var currentState: String?
  private var statePriority = 0
  /// The state a `stop` ends: what `resume` starts again. The rules see no state from the stop on
  /// (nor its priority): a game that stops its boss music on the player's death and starts the
  /// level again must not find its level rules outranked, nor matched against, a state whose
  /// music it stopped. (They were: `level.start` after `player.died` in the default cue file was
  /// ignored, "state combat outranks the rule", and the music stayed silent.)
  private var stoppedState: String?
  private var generator: SeededGenerator
  private var lastFired: [String: Double] = [:]
  private var parameters: [String: Ramp] = [:]
  // The music's gain and rate are products of these (see `applyMix`).
  /// The state's volume over what is baked into the queue on the player (see `putOnPlayer`):
  /// 1, unless a reload changed the volume of the state that plays.
  private var stateVolume = Ramp(1)
  /// The state volume baked into the gains of the queue on the player, and of the one before it
  /// (a change called off takes that back).
  private var bakedVolume = 1.0
  private var bakedVolumeBeforeChange = 1.0
  /// The least volume baked into a queue: a quieter state is baked at this and the rest is
  /// `stateVolume`, which the mix gain can raise again by as much on a reload.
  static let leastBakedVolume = 1.0 / 16
  /// The most volume baked into a queue (+12 dB): against a state volume a reload lowered (see
  /// `putOnPlayer`); beyond it, `stateVolume` moves over the change as it used to.
  static let mostBakedVolume = 4.0
  /// The state's rate over what is baked into the queue's entries (see `putOnPlayer`): 1, unless
  /// a reload changed the rate of the state that plays.
  private var stateRate = Ramp(1)
  /// The state rate baked into the entries of the queue on the player, and of the one before it.
  private var bakedRate = 1.0
  private var bakedRateBeforeChange = 1.0
  private var volumeLevel = Ramp(1)
  private var rateLevel = Ramp(1)
  /// The `tempo` actions' level (speed without pitch); parameter curves multiply it.
  private var tempoLevel = Ramp(1)
  private var fade = Ramp(1)
  /// The speed the mix was given (its rate times its tempo, as posted) from each director time
  /// on, oldest first, kept for a second or so: see `position(_:onFrame:speed:)`.
  private var postedSpeeds: [(time: Double, speed: Double)] = []
  /// The game's held duck (`CueAction.holdDuck`): a gain, 1 when none is held.
  private var heldDuck = Ramp(1)
  private var scheduled: [Scheduled] = []
  private var scheduleCounter = 0
  /// Events taken from the bus, waiting for their audio time (offline) or the next update.
  private var waiting: [LevelEvent] = []
  private var stingers: [Player] = []
  private var stingerTurns: [String: Int] = [:]
  /// The stingers started at once at the director's time `now` (see `playStinger`).
  private var stingerStartedNow: [String: Double] = [:]
  /// Each source's playlist memory (see `PlaylistMemory`), by source name.
  private var playlists: [String: PlaylistMemory] = [:]
  private var origins: [String: (source: String, isUserMusic: Bool)] = [:]
  /// Where the player's songs of each state were when the state was left: their order (by file),
  /// the song that played, its place in that order (a shuffle's passes name a song once each)
  /// and its position (seconds of the file), for `MusicState.resumesPlayerMusic`.
  private var resumePoints: [String: (order: [String], path: String, seconds: Double, place: Int?)] = [:]
  private var lastNowPlaying: MediaItem?
  private var lastNowPlayingEntry: Int?
  /// Files that failed to play (replaced by text, cut off, unreadable) since the cue file was
  /// loaded: left out of every queue the director builds, so the cue file's fallbacks take over.
  private var failedPaths: Set<String> = []
  /// The queue's failure count the director has seen.
  private var failuresSeen = 0
  /// The state whose music played before the current one: the last resort when the current
  /// state has nothing left that plays.
  private var previousState: String?
  /// A state change waiting for its grid line: when it is heard, and the state and item heard
  /// until then (what `audibleState` and `Director.nowPlaying` say meanwhile).
  /// `lead`: the incoming music starts that long before `heardAt` (its pickup), at `entry` in its
  /// file; `heardLine`: where the music heard is in its file at `heardAt` (the line the change
  /// waits for; in its loop's next pass when the change comes after the seam).
  private var pendingLanding:
    (
      heardAt: Double, state: String?, item: MediaItem?, spec: TransitionSpec, lead: Double, entry: Double,
      heardLine: QueuePlayer.Landing?
    )?
  /// `playingOrder` before the last state change (restored when that change is taken back).
  private var playingOrderBeforeChange: (state: String, paths: [String])?
  /// Reports made since the director last collected them.
  var outbox: [DirectorReport] = []
  private var lastMix: (gain: Float, rate: Float, tempo: Float, lowPass: Float)?
  /// The music's low-pass as last set (1: open), for timelines.
  var musicLowPass: Float { lastMix?.lowPass ?? 1 }
  /// The music's tempo as last set (1: as written), for timelines.
  var musicTempo: Float { lastMix?.tempo ?? 1 }
  /// The state whose queue is on the player (its layers are the ones the player's items have):
  /// nil while the game's own queue plays.
  private var layeredState: String?
  /// The names of that queue's layers, in the player's order (kept as they were when the queue
  /// was set: a reloaded cue file's new layers come with the state's next entry).
  private var layerNames: [String] = []
  private var lastLayerMix: (gains: [Float], lowPasses: [Float])?
  /// The mix frame of director time 0 (set by `Director.start` in real time; 0 offline).
  var mixFrameOrigin: Int64 = 0

  /// Where the playing item will be at director time `now`, in seconds of its file: its
  /// published position is where the mix is, the director's clock runs ahead of that. Not before
  /// director time 0, where the start state's music begins: in a live director's first quarter
  /// second the mix has not reached it yet, and counting from there put a change on the bar
  /// posted then up to the output's latency early in its report (1.809 s for a bar heard at
  /// 2.000 s; trial 7). The music itself landed right: the mixer finds the line itself.
  private var playingPosition: Double {
    let exact = player.playingPosition
    return position(
      exact?.seconds ?? player.currentPlaybackTime, onFrame: exact?.mixFrame, speed: max(0.01, player.musicSpeed))
  }

  /// Where music that is at `seconds` of its file on mix frame `frame`, and moves `speed` of
  /// them a second, is at `now`. The voice's own position on a mix frame is exact, so the same
  /// live as offline, whichever block the mixer had reached; from the position and the mix
  /// clock read apart (`frame` nil: as last mixed), a resampled voice's was up to a frame apart
  /// between the two, and so was a duck on its beat.
  ///
  /// From a mix frame before `now` (live, the mix is behind the director; offline it is not), the
  /// music moved at the speeds posted since, not at today's: through a tempo or rate ramp, or
  /// right after a rate was set, the same beat came out 5 to 20 ms apart live and offline (a
  /// stinger's duck and report; the music itself starts where the mixer finds the line).
  private func position(_ seconds: Double, onFrame frame: Int64?, speed: Double) -> Double {
    guard let frame else {
      let mixedSeconds = Double(engine.mixClock.now - mixFrameOrigin) / Double(engine.sampleRate)
      return seconds + max(0, now - max(0, mixedSeconds)) * speed
    }
    let from = Double(frame - mixFrameOrigin) / Double(engine.sampleRate)
    return seconds + movedSeconds(from: from, speed: speed)
  }

  /// The mix's time from `start` to `now` weighted by the speed posted over it, relative to the
  /// last one posted (`speed` is the music's speed now; the posted speeds are the director's
  /// share of it, so their ratio scales it).
  private func movedSeconds(from start: Double, speed: Double) -> Double {
    guard start < now, let last = postedSpeeds.last, last.speed > 0 else { return (now - start) * speed }
    var moved = 0.0
    var end = now
    for entry in postedSpeeds.reversed() {
      let begin = max(start, entry.time)
      if begin < end { moved += (end - begin) * entry.speed }
      end = begin
      if begin <= start { break }
    }
    // Before the oldest entry kept: at its speed.
    if end > start { moved += (end - start) * (postedSpeeds.first?.speed ?? last.speed) }
    return moved * speed / last.speed
  }

  private struct Scheduled {
    var time: Double
    var order: Int
    var work: Work
    var cause: LevelEvent?
  }

  private enum Work {
    case changeState(name: String, spec: TransitionSpec, landsAt: Double)
    /// `prepared`: already playing, or about to start on its own frame (a stinger on the grid:
    /// `moment` names the grid, beat or bar, whose line the mixer starts it on).
    case stinger(
      name: String, item: MediaItem, volume: Float, duck: DuckAction?, prepared: Player?,
      moment: TransitionSpec.Moment? = nil)
    case pause, stop
    case seek(seconds: Double, fadeBackSeconds: Double)
    case playQueue(GameQueue)
  }

  init(
    engine: AudioEngine, player: QueuePlayer, sheet: CueSheet, catalog: BundledCatalog,
    resolved: [String: SourceResolution]
  ) {
    self.engine = engine
    self.player = player
    self.sheet = sheet
    self.catalog = catalog
    self.resolved = resolved
    generator = SeededGenerator(seed: sheet.seed)
    resetParameters()
    if sheet.usesTempo { player.prepareForTempo() }
  }

  // MARK: - Cue file and sources

  /// The volume and rate a reload gives the state that plays, glided to from the next step: the
  /// reload comes between steps (on the watcher thread), and a glide from the last step's time,
  /// up to half a second old when the director slept, had its first frames mixed already (a
  /// live reload counted as 11 late changes in a designer's trial).
  private var reloadGlide: (volume: Double, rate: Double)?

  /// A new cue file: new rules for the next cues; the music that plays keeps playing. Parameters
  /// keep their values where they still exist.
  func replace(sheet: CueSheet, catalog: BundledCatalog, resolved: [String: SourceResolution]) {
    self.sheet = sheet
    if sheet.usesTempo { player.prepareForTempo() }
    self.catalog = catalog
    self.resolved = resolved
    // A designer who fixes a file reloads: every file gets another chance.
    failedPaths.removeAll()
    resetParameters()
    isQuiet = false
    if let state = currentState, let spec = sheet.states[state] {
      statePriority = spec.priority
      reloadGlide = (Double(spec.volume), Double(spec.rate))
      player.repeatMode = spec.repeatMode
      player.transition = spec.itemTransition
    } else if let state = currentState {
      report(.problem("state \"\(state)\" is gone from the cue file: its music plays on until a rule changes state"))
      statePriority = 0
    }
    lastFired = lastFired.filter { name, _ in sheet.rules.contains { $0.name == name } }
    if let waiting = startWaits, currentState == nil, stoppedState == nil, player.playbackState != .playing {
      start(state: waiting)
    }
  }

  func replace(resolved: [String: SourceResolution]) { self.resolved = resolved }

  /// A reload renamed states (the same body under a new name, see `CueFileChanges.summary`):
  /// what the director holds of each goes by its new name, before the new file takes over. A
  /// change waiting for its bar to enter a renamed state used to enter the old name, gone from
  /// the file: the rules written for the new name never matched it, and the state played had no
  /// volume, rate or priority of its own until a rule moved on.
  func rename(states renames: [String: String]) {
    guard !renames.isEmpty else { return }
    func renamed(_ name: String?) -> String? { name.map { renames[$0] ?? $0 } }
    currentState = renamed(currentState)
    stoppedState = renamed(stoppedState)
    previousState = renamed(previousState)
    lastReportedState = renamed(lastReportedState)
    layeredState = renamed(layeredState)
    if case .some(.some(let name)) = startWaits { startWaits = .some(renamed(name)) }
    if var pending = pendingLanding {
      pending.state = renamed(pending.state)
      pendingLanding = pending
    }
    if let order = playingOrder { playingOrder = (renamed(order.state)!, order.paths) }
    if let order = playingOrderBeforeChange { playingOrderBeforeChange = (renamed(order.state)!, order.paths) }
    resumePoints = Dictionary(resumePoints.map { (renames[$0.key] ?? $0.key, $0.value) }) { first, _ in first }
    for index in scheduled.indices {
      if case .changeState(let name, let spec, let landsAt) = scheduled[index].work, let new = renames[name] {
        scheduled[index].work = .changeState(name: new, spec: spec, landsAt: landsAt)
      }
    }
  }

  /// After a reload: each parameter the new file still declares keeps its value, and a ramp
  /// under way goes on to its target (clamped to the new range) in the time it had left. A
  /// reload used to stop it where it was: a save during the game's 4 s glide of "health" left the
  /// music muffled half-way until the game set it again.
  private func resetParameters() {
    var kept: [String: Ramp] = [:]
    for spec in sheet.parameters {
      func clamped(_ value: Double) -> Double { min(spec.maximum, max(spec.minimum, value)) }
      guard let old = parameters[spec.name] else {
        kept[spec.name] = Ramp(spec.defaultValue)
        continue
      }
      let value = old.value(at: now)
      if clamped(value) == value && clamped(old.to) == old.to {
        kept[spec.name] = old
      } else {
        var ramp = Ramp(clamped(value))
        if old.isMoving(at: now) {
          ramp.move(to: clamped(old.to), over: old.start + old.duration - now, at: now, curve: old.curve)
        } else {
          ramp = Ramp(clamped(old.to))
        }
        kept[spec.name] = ramp
      }
    }
    parameters = kept
  }

  func parameterValue(_ name: String) -> Double? { parameters[name]?.value(at: now) }

  /// The game sets a parameter (clamped to its range); unknown names are reported.
  func setParameter(_ name: String, _ value: Double, rampSeconds: Double = 0) {
    guard let spec = sheet.parameter(named: name) else {
      report(
        .problem(
          "parameter \"\(name)\" is not in the cue file"
            + (sheet.parameters.isEmpty
              ? " (it declares no parameters)" : " (it has: \(sheet.parameters.map(\.name).joined(separator: ", ")))")
        ))
      return
    }
    guard value.isFinite else {
      report(.problem("parameter \"\(name)\": \(value) is not a number"))
      return
    }
    parameters[name, default: Ramp(spec.defaultValue)].move(
      to: min(spec.maximum, max(spec.minimum, value)), over: rampSeconds, at: now)
    isQuiet = false
  }

  // MARK: - Time

  /// Takes events (in bus order), then runs everything due at `time`: events whose time has come,
  /// transitions that land, ramps. `time` never goes back.
  func advance(to time: Double, newEvents: [LevelEvent], dropped: UInt64) {
    now = max(now, time)
    if let glide = reloadGlide {
      reloadGlide = nil
      stateVolume.move(to: glide.volume / bakedVolume, over: 0.25, at: now)
      stateRate.move(to: glide.rate / bakedRate, over: 0.25, at: now)
    }
    // The common case on the real-time thread, 200 times a second while music plays: nothing
    // new, nothing due, nothing moving. Only a new item in the queue can need a report.
    if isQuiet && newEvents.isEmpty && dropped == 0 && waiting.isEmpty
      && (scheduled.first.map { $0.time > now + 0.5 / Double(engine.sampleRate) } ?? true)
    {
      if pendingBridge != nil { continueBridge() }
      noticeNowPlaying()
      if player.failuresSoFar != failuresSeen { noticeFailures() }
      if player.endsSoFar != endsSeen { noticeEnd() }
      return
    }
    isQuiet = false
    if dropped > 0 { report(.dropped(count: dropped)) }
    // Offline events carry their audio time; the order is time, then posting order. Real-time
    // events have none and come in order, so the sort is skipped when nothing is out of place.
    func key(_ event: LevelEvent) -> (Double, UInt64) { (event.audioTime ?? -.infinity, event.sequence) }
    var sorted = true
    for event in newEvents {
      if let last = waiting.last, key(event) < key(last) { sorted = false }
      waiting.append(event)
    }
    if !sorted { waiting.sort { key($0) < key($1) } }
    let tolerance = 0.5 / Double(engine.sampleRate)
    var taken = 0  // events handled, removed from the front in one go (not one by one)
    while true {
      let nextEvent =
        taken < waiting.count && (waiting[taken].audioTime ?? -.infinity) <= now + tolerance ? waiting[taken] : nil
      let nextWork = scheduled.first.flatMap { $0.time <= now + tolerance ? $0 : nil }
      if let event = nextEvent, nextWork == nil || (event.audioTime ?? -.infinity) <= nextWork!.time {
        taken += 1
        if let time = event.audioTime, time < now {
          // An event with its own time (offline, or a recorded run) happens then, on its frame,
          // even when the step that takes it comes a little later.
          let stepTime = now
          now = time
          engine.performing(
            atMixFrame: mixFrameOrigin + FrameMath.frames(seconds: time, rate: Double(engine.sampleRate))
          ) {
            handle(event)
          }
          now = stepTime
        } else {
          handle(event)
        }
      } else if let work = nextWork {
        scheduled.removeFirst()
        // Scheduled work happens at its own time, on its own mix frame, even when this step
        // comes a little later (a real-time step lands on the director's grid of frames).
        let stepTime = now
        now = min(stepTime, work.time)
        engine.performing(
          atMixFrame: mixFrameOrigin + FrameMath.frames(seconds: work.time, rate: Double(engine.sampleRate))
        ) {
          run(work)
        }
        now = stepTime
      } else {
        break
      }
    }
    waiting.removeFirst(taken)
    stingers.removeAll { stinger in
      guard stinger.playbackState == .stopped else { return false }
      if let failure = stinger.failure {
        // Reported as played when it was started; say that it was not heard.
        report(.problem("stinger \(stinger.item?.reportName ?? "?") could not be played: \(failure)"))
      }
      return true
    }
    if pendingBridge != nil { continueBridge() }
    noticeNowPlaying()
    if player.failuresSoFar != failuresSeen { noticeFailures() }
    if player.endsSoFar != endsSeen { noticeEnd() }
    applyMix()
    isQuiet = !isMoving && stingers.isEmpty && pendingBridge == nil
  }

  /// Nothing moves and nothing plays on its own: the next update has nothing to step unless
  /// something comes in (see `advance`). Anything that changes the mix from outside clears it.
  private var isQuiet = false

  /// The next time something is due (an event's audio time, a scheduled change, a held
  /// report), if any.
  var nextDeadline: Double? {
    let times = [waiting.first?.audioTime, scheduled.first?.time, heldReports.map(\.time).min()].compactMap { $0 }
    return times.min()
  }

  /// Whether ramps are moving (the real-time thread then updates every few ms). Ducks are the
  /// mixer's (see `duckShape`): they need no steps.
  var isMoving: Bool {
    fade.isMoving(at: now) || volumeLevel.isMoving(at: now) || rateLevel.isMoving(at: now)
      || tempoLevel.isMoving(at: now)
      || stateVolume.isMoving(at: now) || stateRate.isMoving(at: now) || heldDuck.isMoving(at: now)
      || parameters.values.contains { $0.isMoving(at: now) }
  }

  // MARK: - Starting

  /// Enters the cue file's `start` state (or `state`), if any.
  func start(state: String?) {
    isQuiet = false
    guard let name = state ?? sheet.startState, let spec = sheet.states[name] else {
      // A game launched while the designer's editor had the file half-saved (empty), say: the
      // first reload that has the state starts it. It used to stay silent, and say nothing.
      startWaits = .some(state)
      report(
        .problem(
          sheet.states.isEmpty
            ? "the cue file defines no states: nothing plays; the first reload that has them starts the level"
            : "the start state \"\(state ?? sheet.startState ?? "")\" is not in the cue file: nothing plays; the first reload that has it starts the level"
        ))
      return
    }
    startWaits = nil
    changeState(to: name, spec: spec.transition, cause: nil)
  }

  /// The state asked for at the start (nil inside: the cue file's `start`) when the cue file did
  /// not have it: a reload that has it starts it, if nothing else has started music since.
  private var startWaits: String??

  // MARK: - Events and rules

  private func handle(_ event: LevelEvent) {
    let candidates = sheet.rules.enumerated()
      .filter { $0.element.answers(event.cue) }
      .sorted { ($0.element.priority, -$0.offset) > ($1.element.priority, -$1.offset) }
      .map(\.element)
    guard !candidates.isEmpty else {
      // A game's typo ("combat.strat") should not look like a cue the file just ignores: name
      // the rule's cue it is closest to. The director's thread, not the mixer's, does this.
      let named = sheet.rules.flatMap(\.cues).filter { $0 != "*" && !$0.hasSuffix(".*") }
      let hint = closestMatch(to: event.cue, among: named).map { "; did you mean \"\($0)\"?" } ?? ""
      report(.ignored(reason: "no rule answers cue \"\(event.cue)\"\(hint)"), cause: event)
      return
    }
    var reasons: [String] = []
    for rule in candidates {
      if let reason = whyNot(rule, event) {
        reasons.append("rule \"\(rule.name)\": \(reason)")
        continue
      }
      lastFired[rule.name] = now
      fire(rule.name, rule.actions, cause: event)
      return
    }
    report(.ignored(reason: reasons.joined(separator: "; ")), cause: event)
  }

  /// The game's own commands (`Director.perform`): the actions, as if the rule "(game)" fired;
  /// at `time` when given (offline: the frame after the last render, where an lm_post made
  /// between the same two renders lands too), else now.
  func perform(commands actions: [CueAction], at time: Double? = nil) {
    isQuiet = false
    guard let time, time < now else {
      performNow(actions)
      return
    }
    let stepTime = now
    now = time
    engine.performing(atMixFrame: mixFrameOrigin + FrameMath.frames(seconds: time, rate: Double(engine.sampleRate))) {
      performNow(actions)
    }
    now = stepTime
  }

  private func performNow(_ actions: [CueAction]) { fire("(game)", actions, cause: nil) }

  /// Where the report of the rule firing now goes in the outbox (see `fire`).
  private var fireMark: Int?

  /// Performs a rule's `actions`; its report goes before the reports they make (what it
  /// scheduled, the stinger, the state change), though its text needs their results first. An
  /// action that takes back a change still unheard removes that change's report, which may be
  /// earlier in the outbox (a cue of the same step): the place moves with it (it stayed, and the
  /// insert past the end killed the game when two cues came in one frame).
  private func fire(_ rule: String, _ actions: [CueAction], cause: LevelEvent?) {
    fireMark = outbox.count
    gridNotesSaid = []
    // The rule's changes of speed first: its other actions all happen now too, and a change on
    // the bar or at the item's end is reckoned with the speed the music will move at. Listed
    // after a crossfade, "tempo 1" announced the bar (and handed a bridge's music on) at the
    // speed before it. The report keeps the rule's order.
    var results = [String?](repeating: nil, count: actions.count)
    for (index, action) in actions.enumerated() where changesSpeed(action) {
      results[index] = perform(action, cause: cause)
    }
    for (index, action) in actions.enumerated() where results[index] == nil {
      results[index] = perform(action, cause: cause)
    }
    let done = results.map { $0 ?? "" }
    let mark = min(fireMark ?? outbox.count, outbox.count)
    fireMark = nil
    outbox.insert(DirectorReport(time: now, event: cause, kind: .fired(rule: rule, actions: done)), at: mark)
  }

  /// Whether `action` moves the music's speed: a rate or tempo, or a parameter that drives one.
  private func changesSpeed(_ action: CueAction) -> Bool {
    switch action {
    case .rate, .tempo: return true
    case .setParameter(let name, _, _):
      return sheet.parameters.first { $0.name == name }?.drives.contains {
        $0.layer == nil && ($0.target == .rate || $0.target == .tempo)
      } ?? false
    default: return false
    }
  }

  /// Why `rule` cannot fire for `event` now (nil: it can).
  private func whyNot(_ rule: CueRule, _ event: LevelEvent) -> String? {
    let conditions = rule.conditions
    if let states = conditions.states, !states.contains(currentState ?? "") {
      return
        "the state is \(currentState.map { "\"\($0)\"" } ?? "none"), not \(states.map { "\"\($0)\"" }.joined(separator: " or "))"
    }
    if let state = currentState, conditions.notStates.contains(state) {
      // (It read "not in state ...", which says the opposite of why.)
      return "the state is \"\(state)\", which its notState leaves out"
    }
    for (key, test) in conditions.payload where !test.passes(event.payload[key]) {
      return "payload \(key) = \(event.payload[key].map { "\($0)" } ?? "absent") fails its test"
    }
    for (name, test) in conditions.parameters {
      let value = parameterValue(name)
      if !test.passes(value.map { .number($0) }) {
        return "parameter \(name) = \(value.map { Self.format($0) } ?? "unknown") fails its test"
      }
    }
    if rule.priority < statePriority, let state = currentState {
      return "state \"\(state)\" (priority \(statePriority)) outranks the rule (priority \(rule.priority))"
    }
    if rule.cooldownSeconds > 0, let last = lastFired[rule.name], now - last < rule.cooldownSeconds {
      return "cooling down (fired \(Self.format(now - last)) s ago; cooldown \(Self.format(rule.cooldownSeconds)) s)"
    }
    return nil
  }

  // MARK: - Actions

  /// Carries out one action; returns what it did, for the report.
  private func perform(_ action: CueAction, cause: LevelEvent?) -> String {
    switch action {
    case .changeState(let name, let override):
      guard let state = sheet.states[name] else { return "no state \"\(name)\"" }
      calledOff = nil
      let done = changeState(to: name, spec: override ?? state.transition, cause: cause)
      defer { calledOff = nil }
      return calledOff.map { done + "; " + $0 } ?? done
    case .stinger(let stinger):
      return playStinger(stinger, cause: cause)
    case .holdDuck(let decibels, let seconds):
      heldDuck.move(to: DuckShape.gain(decibels: decibels), over: seconds, at: now)
      return decibels < 0
        ? "hold the music down \(Self.format(-decibels)) dB over \(Self.format(seconds)) s"
        : "let the held duck go over \(Self.format(seconds)) s"
    case .duck(let duck):
      player.duck(duckShape(duck))
      return Self.describe(duck)
    case .rate(let value, let ramp):
      rateLevel.move(to: Double(value), over: ramp, at: now)
      return "rate \(Self.format(Double(value)))" + (ramp > 0 ? " over \(Self.format(ramp)) s" : "")
    case .tempo(let value, let ramp):
      tempoLevel.move(to: Double(value), over: ramp, at: now)
      return "tempo \(Self.format(Double(value)))" + (ramp > 0 ? " over \(Self.format(ramp)) s" : "")
    case .volume(let value, let ramp):
      volumeLevel.move(to: Double(value), over: ramp, at: now)
      return "volume \(Self.format(Double(value)))" + (ramp > 0 ? " over \(Self.format(ramp)) s" : "")
    case .seek(let target, let fadeSeconds):
      return seek(target, fadeSeconds: fadeSeconds, cause: cause)
    case .pause(let fadeSeconds):
      guard player.playbackState == .playing else { return "pause: nothing is playing" }
      fade.move(to: 0, over: fadeSeconds, at: now)
      schedule(.pause, at: now + fadeSeconds, cause: cause)
      return "pause (fade \(Self.format(fadeSeconds)) s)"
    case .resume(let fadeSeconds):
      let stopping = scheduled.contains { if case .stop = $0.work { return true } else { return false } }
      cancelScheduled {
        if case .pause = $0 { return true } else if case .stop = $0 { return true } else { return false }
      }
      // A stop called off while its music still fades (or waits, paused): the state is the
      // rules' again, with its priority.
      if player.playbackState != .stopped, currentState == nil, let state = stoppedState {
        currentState = state
        statePriority = sheet.states[state]?.priority ?? 0
        stoppedState = nil
      }
      if player.playbackState == .paused {
        player.play()
        deferWaitingMusic()
        if fade.value(at: now) < 1 || fadeSeconds > 0 {
          fade.set(0)
          fade.move(to: 1, over: fadeSeconds, at: now)
        }
        return "resume (fade \(Self.format(fadeSeconds)) s)"
      }
      if player.playbackState == .stopped, let state = currentState ?? stoppedState, let spec = sheet.states[state] {
        var entry = spec.transition
        entry.seconds = fadeSeconds
        entry.moment = .now
        currentState = nil
        return "resume: " + changeState(to: state, spec: entry, cause: cause)
      }
      fade.move(to: 1, over: fadeSeconds, at: now)
      // A stop that still faded the music out is called off: the music comes back up.
      return stopping
        ? "resume: the stop is called off (fade \(Self.format(fadeSeconds)) s)" : "resume: already playing"
    case .stop(let fadeSeconds):
      cancelScheduled {
        switch $0 {
        case .changeState, .playQueue: return true
        default: return false
        }
      }
      fade.move(to: 0, over: fadeSeconds, at: now)
      schedule(.stop, at: now + fadeSeconds, cause: cause)
      // A change waiting for its line is called off: the music heard is the player's again, and
      // the stop fades it out. A line past the stop's end was never heard; one within the fade
      // began the new state's music under it, for a moment, and reported the state changed
      // after the stop had left every state (a level stopped while it waited for the bar).
      var unheard: String?
      if let pending = pendingLanding, isWaiting(pending.heardAt), let asked = currentState {
        if pending.state != asked {
          unheard = "; the change to \"\(asked)\" waiting for \(Self.format(pending.heardAt)) s is called off"
          if player.takeBackQueue() { takeBackChange(to: asked, reason: nil) }
        } else if bridgeHandOverAt == pending.heardAt, player.takeBackQueue() {
          // The bridge is heard; the state's music after it does not come.
          takeBackHandOver(in: asked)
        }
        dropWaitingChange()
      }
      if let state = currentState { stoppedState = state }
      currentState = nil
      statePriority = 0
      return "stop (fade \(Self.format(fadeSeconds)) s)" + (unheard ?? "")
    case .skip(let direction, let spec):
      // While a change waits for its line, the player's queue is the music not heard yet: a
      // skip moved in it, let the waiting music go and left the director reckoning with music
      // that no longer came (the fight cued next restarted the fight music from its start).
      if let pending = pendingLanding, isWaiting(pending.heardAt) {
        let waiting = currentState.map { "the change to \"\($0)\"" } ?? "a change"
        return "skip \(direction.rawValue): \(waiting) waits for \(Self.format(pending.heardAt)) s; nothing is skipped"
      }
      let transition = spec.map { Transition(validDuration: $0.seconds, curve: $0.curve) }
      do {
        let only = player.queue.count == 1 && direction != .beginning ? player.nowPlayingItem : nil
        let playing = player.nowPlayingItem
        let outcome = try player.skip(direction, transition: transition)
        // Said, so a designer hears why the same music starts again (a `playlist: "step"`
        // state plays one item each entry; a media player's back button goes to the item
        // before only near an item's start).
        if let only {
          return "skip \(direction.rawValue); \"\(only.displayName)\" is the only item of the queue: it starts again"
        }
        let name = playing.map { "\"\($0.displayName)\"" } ?? "the item"
        switch outcome {
        case .restarted(let secondsIn)?:
          return "skip previous; \(name) starts again: it had played \(Self.format((secondsIn * 10).rounded() / 10)) s,"
            + " and previous goes to the item before only within an item's first"
            + " \(Self.format(QueuePlayer.previousItemThreshold)) s"
        case .restartedFirst?:
          return "skip previous; \(name) starts again: no item comes before it"
        case .wentBack?, nil:
          return "skip \(direction.rawValue)"
        }
      } catch {
        return "skip \(direction.rawValue): \(error)"
      }
    case .setParameter(let name, let value, let ramp):
      setParameter(name, value, rampSeconds: ramp)
      return "set \(name) = \(Self.format(value))" + (ramp > 0 ? " over \(Self.format(ramp)) s" : "")
    case .releaseLoop:
      notePassesLeft()
      player.releaseLoop()
      loopReleasedEntry = player.nowPlayingEntryID
      // While a change waits for its line, the player's item is the music that change brings:
      // said, so a designer who meant the music heard (which loops on to the line) sees whose
      // loop it was (a state's `loop: 2` then plays straight through).
      if let pending = pendingLanding, isWaiting(pending.heardAt), let state = currentState,
        let item = player.nowPlayingItem
      {
        return "release the loop of \"\(item.displayName)\", the music the change to \"\(state)\" brings at "
          + "\(Self.format(pending.heardAt)) s (the music heard until then loops on)"
      }
      return "release the loop"
    case .playQueue(let queue):
      return playQueue(queue, cause: cause)
    case .layer(let layer):
      return moveLayer(layer)
    }
  }

  /// Moves a layer of the music that plays: now, or from the next beat or bar of it (the mixer
  /// finds that frame from the playing voice's own position).
  private func moveLayer(_ action: LayerAction) -> String {
    let what =
      "layer \"\(action.layer)\" to \(Self.format(Double(action.volume)))"
      + (action.seconds > 0 ? " over \(Self.format(action.seconds)) s" : "")
    guard let name = layeredState else { return what + ": the music that plays has no layers" }
    guard let index = layerNames.firstIndex(of: action.layer) else {
      return what + ": state \"\(name)\" has no layer \"\(action.layer)\""
        + (layerNames.isEmpty ? "" : " (it has \(layerNames.map { "\"\($0)\"" }.joined(separator: ", ")))")
    }
    // While a change to the layered music waits for its line, the layers are that music's,
    // not yet heard: the move lands on its grid, from where it is heard (a layer taken from the
    // standing music's grid moved at once, before the music began).
    let line =
      incomingGridLine(action.moment).map { incoming in
        (at: incoming.at, landing: QueuePlayer.Landing(fileSeconds: incoming.line, everySeconds: incoming.unit))
      } ?? nextGridLine(action.moment, reach: layerReach)
    let paused = line == nil ? pausedGridLine(action.moment) : nil
    do {
      try player.fadeLayer(
        index, to: action.volume, seconds: action.seconds, curve: action.curve, landing: line?.landing ?? paused)
    } catch {
      return what + ": \(error)"
    }
    if paused != nil { return what + " on the \(action.moment.rawValue) after the resume" }
    guard let line else { return what }
    return what + " on the \(action.moment.rawValue) (\(Self.format(line.at)) s)"
  }

  /// How far off a layer move's line must be: resampled or stretched, the stems are mixed in
  /// before the resampler and the stretcher, so a line nearer than what they hold cannot be
  /// reached, and the mixer takes the next one (see `StreamingLoop.startBegunLayerFades`). With
  /// room to spare (what they hold moves a little from block to block), so the report names the
  /// line the mixer lands on.
  private var layerReach: Double {
    let held = player.readAheadSeconds
    return held > 0 ? 1.5 * held + 0.005 : 0
  }

  /// The next beat or bar line of the playing item from where it is paused: a layer moved on the
  /// bar during a pause menu comes on the music's bar after the resume (the mixer waits for the
  /// music to play again, then finds the line from its position). It used to move at once.
  private func pausedGridLine(_ moment: TransitionSpec.Moment) -> QueuePlayer.Landing? {
    guard moment == .beat || moment == .bar, player.playbackState == .paused, let playing = player.nowPlayingItem
    else { return nil }
    let position = player.currentPlaybackTime
    let loop = player.loopRepeat != .off ? loopRegion(of: playing) : nil
    let (line, unit) = lineAcrossLoop(of: playing, after: position, moment, loop: loop)
    return QueuePlayer.Landing(unwrappedSeconds: line, everySeconds: unit, loop: loop)
  }

  /// While a change waits for its line (see `pendingLanding`): the first beat or bar line of the
  /// incoming music at or after the position it is heard from (past its pickup), the director
  /// time that line is heard at, and the grid's spacing. Nil: no change waits, or another moment.
  private func incomingGridLine(_ moment: TransitionSpec.Moment) -> (at: Double, line: Double, unit: Double)? {
    guard moment == .beat || moment == .bar, let pending = pendingLanding, isWaiting(pending.heardAt),
      let incoming = player.nowPlayingItem
    else { return nil }
    let speed = max(0.01, player.musicSpeed)
    let heardPosition = pending.entry + pending.lead * speed
    let after = gridLine(of: incoming, after: heardPosition, moment)
    return (pending.heardAt + (after.line - heardPosition) / speed, after.line, after.unit)
  }

  /// The next beat or bar line of the playing item (for `moment` `.beat` or `.bar`; with `bars`,
  /// only every that many bars, counted from the item's first bar: the end of a phrase): the
  /// director time it is heard at, and where it is in the item's file. Nil: now (another
  /// moment, or nothing plays). Transitions, stingers and layer moves all land on it.
  ///
  /// `lead`: seconds before the line that something must start (an incoming pickup): the first
  /// line at least that far ahead, with the landing that far before it (`at` stays the line's).
  private func nextGridLine(_ moment: TransitionSpec.Moment, bars: Int = 1, lead: Double = 0, reach: Double = 0)
    -> (at: Double, landing: QueuePlayer.Landing)?
  {
    guard moment == .beat || moment == .bar, player.playbackState == .playing, let playing = player.nowPlayingItem
    else { return nil }
    let rate = max(0.01, player.musicSpeed)
    var position = playingPosition
    let loop = player.loopRepeat != .off ? loopRegion(of: playing) : nil
    if let loop, position >= loop.end, loop.end > loop.start {
      // Reckoned on from a frame before the seam (live, the mix runs behind): the music has
      // jumped back by now.
      position -= loop.end - loop.start
    }
    // The lead in the playing file's seconds (it moves `rate` of them a second).
    let leadInFile = max(0, lead) * rate
    // `reach`: seconds from now that the line must be at least (the line itself is the landing).
    let reachInFile = max(0, reach) * rate
    func lineAfter(_ position: Double) -> (line: Double, unit: Double) {
      lineAcrossLoop(of: playing, after: position + leadInFile + reachInFile, moment, bars: bars, loop: loop)
    }
    var (line, unit) = lineAfter(position)
    if let seek = scheduledSeek, now + timeToPlay(line - position) > seek.time {
      // The music jumps before it gets there (a dip's seek, after its fade down): the line is
      // the first one heard after the jump, on the target's side of it. A stinger on the beat
      // cued during a dip used to be put on a line the music never reached; the jump took it
      // past, and the mixer started it at once, wherever its block began (live and offline apart).
      position = seek.seconds - (seek.time + Voice.transportFadeSeconds - now) * rate
      (line, unit) = lineAfter(max(position, seek.seconds))
    }
    return (
      now + timeToPlay(line - position),
      QueuePlayer.Landing(unwrappedSeconds: line - leadInFile, everySeconds: unit, loop: loop)
    )
  }

  /// The first beat or bar line (see `gridLine`) of `item` at or after `position` seconds of its
  /// file, as if its loop (`loop`, nil: it plays on through its end) went on past its end. A
  /// looping item never plays its loop end, nor what lies past it: before the seam, a line there
  /// is the seam (the next pass starts on the loop start), or the change would wait for ever;
  /// from the seam on (a pickup's lead reaching past it), the line is the next pass's, given as
  /// the loop's end plus its distance from the loop's start (`QueuePlayer.Landing` turns that
  /// into a start after the seam). A change into a piece with a pickup, cued in the last bars
  /// before a loop's end, was put on a position past the loop's end, which the music never
  /// reached: it never happened.
  private func lineAcrossLoop(
    of item: MediaItem, after position: Double, _ moment: TransitionSpec.Moment, bars: Int = 1,
    loop: (start: Double, end: Double)?
  ) -> (line: Double, unit: Double) {
    let (line, unit) = gridLine(of: item, after: position, moment, bars: bars)
    guard let loop, loop.end > loop.start else { return (line, unit) }
    guard position >= loop.end else { return (line > loop.end - 1e-6 ? loop.end : line, unit) }
    let next = gridLine(of: item, after: loop.start + (position - loop.end), moment, bars: bars)
    return (loop.end + min(next.line, loop.end) - loop.start, next.unit)
  }

  /// Where the playing item's loop starts and ends, in seconds of its file, while it loops (see
  /// `loopEnd(of:)`).
  private func loopRegion(of item: MediaItem) -> (start: Double, end: Double)? {
    guard let end = loopEnd(of: item), let rate = item.sampleRate, let start = item.loopStartFrame else { return nil }
    return (Double(start) / Double(rate), end)
  }

  /// The next seek the director has scheduled (a dip's jump, after its fade down), if it is
  /// still to come: its time and its target.
  private var scheduledSeek: (time: Double, seconds: Double)? {
    for item in scheduled where item.time > now {
      if case .seek(let seconds, _) = item.work { return (item.time, seconds) }
    }
    return nil
  }

  /// The mix frame a seek on its way lands on (its fade-out ends there, the target is heard from
  /// there): the director's scheduled one, else the player's (see `QueuePlayer.playingPosition`).
  private var seekLandingFrame: Int64? {
    if let seek = scheduledSeek {
      return mixFrameOrigin + FrameMath.frames(seconds: seek.time, rate: Double(engine.sampleRate))
        + Voice.transportFadeFrames(rate: engine.sampleRate)
    }
    return player.seekLandingFrame
  }

  /// The first beat or bar line (every `bars` bars) of `item`'s grid at or after `position`
  /// seconds of its file, and the grid's spacing.
  private func gridLine(of item: MediaItem, after position: Double, _ moment: TransitionSpec.Moment, bars: Int = 1)
    -> (line: Double, unit: Double)
  {
    let grid = self.grid(for: item)
    let unit = moment == .beat ? grid.secondsPerBeat : grid.secondsPerBar * Double(max(1, bars))
    let index = ((position - grid.offsetSeconds) / unit - 1e-9).rounded(.up)
    return (grid.offsetSeconds + max(0, index) * unit, unit)
  }

  /// The next beat or bar of the music heard (for a stinger on the grid), and a start on it that
  /// the mixer finds from a voice's own position. While a change waits for its line, the player's
  /// now-playing item is the incoming music, not begun: until the change is heard the grid is
  /// the outgoing music's (from the voice still playing it), from then on the incoming's, from
  /// where it is when heard. A stinger on the beat in that time used to take its line from the
  /// waiting music's standing position: it was reported on a line that never came, its duck
  /// fell there, and the mixer, asked to start it on music that was not playing, started it at
  /// once (a designer's trial: a hit on the bar heard 2.5 s early, off the beat).
  private func gridLineHeard(_ moment: TransitionSpec.Moment) -> (at: Double, start: StartTrigger?)? {
    guard moment == .beat || moment == .bar, let pending = pendingLanding, isWaiting(pending.heardAt),
      let heard = player.heardBeforeQueue
    else {
      return nextGridLine(moment).map { ($0.at, player.startTrigger(at: $0.landing)) }
    }
    let tolerance = 0.5 / Double(engine.sampleRate)
    let speed = max(0.01, heard.speed)
    let position = self.position(heard.positionSeconds, onFrame: heard.positionMixFrame, speed: speed)
    // The change waits past the seam of the music heard: its lines there are the next pass's.
    let loop = pending.heardLine.flatMap { line in
      line.afterSeconds > 0 ? (start: line.heardFileSeconds - line.afterSeconds, end: line.fileSeconds) : nil
    }
    let before = lineAcrossLoop(of: heard.item, after: position, moment, loop: loop)
    let at = now + (before.line - position) / speed
    if at < pending.heardAt - tolerance {
      return (
        at,
        heard.startTrigger(
          at: QueuePlayer.Landing(unwrappedSeconds: before.line, everySeconds: before.unit, loop: loop))
      )
    }
    // The incoming music's grid, from where it is when the change is heard (past its pickup).
    guard let after = incomingGridLine(moment) else { return nil }
    if after.at <= pending.heardAt + tolerance, let heardLine = pending.heardLine {
      // On the change's own line: where the music heard reaches it, the frame the change is heard.
      return (pending.heardAt, heard.startTrigger(at: heardLine))
    }
    // Later: on the incoming voice, which the mixer waits for to begin.
    return (
      after.at, player.startTrigger(at: QueuePlayer.Landing(fileSeconds: after.line, everySeconds: after.unit))
    )
  }

  /// The pickup of `item` played from `source`: the time from its first frame to its first
  /// downbeat. The source's `pickup` when it gives one, else where the item's bars begin (its
  /// grid's offset: the source's `tempo.offset`, or the first beat the analysis found).
  func pickupSeconds(of item: MediaItem, source: String?) -> Double {
    let music = source.flatMap { sheet.sources[$0] }
    let grid = grid(for: item, source: music)
    return music?.pickup?.seconds(on: grid) ?? max(0, grid.offsetSeconds)
  }

  /// The source name the game's own queue (`CueAction.playQueue`) is reported under.
  static let gameQueueSource = "(game)"

  /// Plays the game's queue in place of the state's music, on the grid as `queue.transition`
  /// says. The state stays what it was (the rules see no change); a later state change, or the
  /// resume of a stopped queue, brings the state's own music back.
  private func playQueue(_ queue: GameQueue, cause: LevelEvent?) -> String {
    let spec = queue.transition
    if !queue.items.isEmpty, let stopAt = stopEndsAt {
      return afterTheStop(.playQueue(queue), at: stopAt, cause: cause) {
        "queue \(queue.items.count) song\(queue.items.count == 1 ? "" : "s")"
      }
    }
    // The latest word wins: a state change or stop waiting for the grid is dropped.
    cancelScheduled {
      switch $0 {
      case .changeState, .stop, .playQueue: return true
      default: return false
      }
    }
    guard !queue.items.isEmpty else {
      // An empty queue hands the music back to the state.
      guard let state = currentState, sheet.states[state] != nil else { return "queue: no items, and no state" }
      let playsGameQueue = player.nowPlayingItem.map { origins[$0.assetURL.path]?.source == Self.gameQueueSource }
      guard playsGameQueue == true || player.playbackState != .playing else {
        return "queue: no items; the state's music plays already"
      }
      currentState = nil
      return "queue: back to the state's music: " + changeState(to: state, spec: spec, cause: cause)
    }
    let playing = player.playbackState == .playing && player.nowPlayingItem != nil
    let count = queue.items.count
    let description =
      "queue \(count) song\(count == 1 ? "" : "s")\(Self.shuffleText(queue.shuffleMode)) (\(spec.seconds > 0 ? "crossfade \(Self.format(spec.seconds)) s" : "cut"))"
    let (landsAt, landing) = landingTime(spec, playing: playing)
    if landsAt > now + 0.5 / Double(engine.sampleRate) {
      report(.scheduled(what: description + " on the \(Self.momentText(spec))", at: landsAt), cause: cause)
      if let landing {
        applyQueue(queue, cause: cause, landing: (landing, landsAt))
      } else {
        schedule(.playQueue(queue), at: landsAt, cause: cause)
      }
      return description + " at \(Self.momentText(spec)) (\(Self.format(landsAt)) s)"
    }
    applyQueue(queue, cause: cause)
    return description
  }

  /// How a report says the game's queue is shuffled.
  private static func shuffleText(_ mode: ShuffleMode) -> String {
    switch mode {
    case .off: return ""
    case .songs: return ", shuffled"
    case .albums: return ", shuffled by album"
    }
  }

  /// Puts the game's queue on the player: levelled to the score's loudness as the player's
  /// songs are, with the current state's loop and item transition.
  /// `seek`: asked for while the queue waited (for a stop's end): where its first song starts.
  private func applyQueue(
    _ queue: GameQueue, cause: LevelEvent?, landing: (QueuePlayer.Landing, at: Double)? = nil, seek: SeekTarget? = nil
  ) {
    pendingBridge = nil
    let spec = queue.transition
    let state = currentState.flatMap { sheet.states[$0] }
    let source = MusicSource(name: Self.gameQueueSource, kind: .picks)
    let entries = queue.items.map { item in
      var entry = QueueDescriptor.Entry(item: item, loopRepeat: state?.loop)
      entry.gainDecibels = StateMusic.gain(
        for: item, source: source, levelling: sheet.loudness, target: loudnessTarget)
      StateMusic.trimSilence(&entry)
      return entry
    }
    for item in queue.items { origins[item.assetURL.path] = (Self.gameQueueSource, true) }
    let gridded = withBeatGrids(entries)
    let wasPlaying = player.playbackState == .playing && player.nowPlayingItem != nil
    // A state's own queue is what a later visit resumes; the game's is not remembered.
    playingOrder = nil
    do {
      try putOnPlayer(
        QueueDescriptor(entries: gridded), startingAt: seek.map { Self.seconds(of: $0, in: queue.items[0]) },
        spec: spec,
        landing: landing?.0, wasPlaying: wasPlaying,
        volume: Double(state?.volume ?? 1), rate: Double(state?.rate ?? 1),
        modes: QueuePlayer.Modes(
          repeatMode: queue.repeatMode, loopRepeat: state?.loop ?? player.loopRepeat,
          transition: state?.itemTransition ?? player.transition, shuffleMode: queue.shuffleMode,
          shuffleSeed: queue.shuffleMode == .off ? nil : generator.next()))
    } catch {
      report(.problem("the game's queue was refused: \(error)"), cause: cause)
      return
    }
    layeredState = nil
    layerNames = []
    // (Shuffled, the player drew the first.)
    let first = player.nowPlayingItem ?? queue.items[0]
    lastNowPlaying = first
    lastNowPlayingEntry = player.nowPlayingEntryID
    report(.nowPlaying(item: first, source: Self.gameQueueSource, isUserMusic: true), cause: cause, at: landing?.at)
  }

  /// Moves to state `name` with `spec`: at once, or scheduled on the grid or at the item's end.
  @discardableResult
  private func changeState(to name: String, spec: TransitionSpec, cause: LevelEvent?) -> String {
    let playing = player.playbackState == .playing && player.nowPlayingItem != nil
    // The state asked for before this change (`currentState` is this one's from below).
    let askedBefore = currentState
    // Paused with the state asked for heard: nothing changes (its music used to be put on the
    // player again, and the resume started it from its start, not where it was paused).
    // (`pendingLanding` outlives its line: a change heard before the pause waits for nothing.)
    let waiting = pendingLanding.flatMap { isWaiting($0.heardAt) ? $0 : nil }
    if name == currentState, player.playbackState == .paused, waiting == nil, !hasScheduledStateChange {
      return "stay in \"\(name)\" (paused: it goes on when the music resumes)"
    }
    // Paused while the change to it waits for its line (its pickup begun or not): it waits on,
    // and comes on its line after the resume. It was made again, at once: reported twice, and
    // its music started from its start on the resume.
    if name == currentState, player.playbackState == .paused, let pending = waiting, pending.state != name {
      return "stay in \"\(name)\" (paused: the change to it waits for its line, after the resume)"
    }
    if name == currentState && playing && !hasScheduledStateChange {
      // Asked for again while its change waits for its line: it is not heard yet.
      if let pending = pendingLanding, isWaiting(pending.heardAt), pending.state != name {
        return "stay in \"\(name)\": the change to it waits for \(Self.format(pending.heardAt)) s"
      }
      return "stay in \"\(name)\" (already playing)"
    }
    if let stopAt = stopEndsAt, let state = sheet.states[name] {
      currentState = name
      statePriority = state.priority
      var fromSilence = spec
      fromSilence.moment = .now
      return afterTheStop(.changeState(name: name, spec: fromSilence, landsAt: stopAt), at: stopAt, cause: cause) {
        "\(spec.seconds > 0 ? "fade in" : "cut to") \"\(name)\""
      }
    }
    calledOff =
      scheduled.lazy.compactMap { waiting -> String? in
        guard case .changeState(let waitingName, _, _) = waiting.work, waitingName != name else { return nil }
        return "the change to \"\(waitingName)\" waiting for \(Self.format(waiting.time)) s is called off"
      }.first
    cancelScheduled {
      switch $0 {
      case .changeState, .stop, .playQueue: return true
      default: return false
      }
    }
    pendingBridge = nil
    // The same while paused: the music heard goes on where it was paused when the music resumes.
    // It was put on the player again, and the resume started it from its start.
    if player.playbackState == .paused, let pending = waiting, pending.state == name, let asked = currentState,
      asked != name, player.takeBackQueue()
    {
      takeBackChange(to: asked, reason: nil)
      return
        "stay in \"\(name)\" (paused: it goes on when the music resumes); the change to \"\(asked)\" waiting for its line is called off"
    }
    // Back to the state heard while a change to another waits for its beat or bar (spotted, then
    // lost at once): the change is called off and the music plays on, on its beat. It used to
    // start the state heard again from its start, off the grid, under the old copy.
    if playing, let pending = pendingLanding, isWaiting(pending.heardAt), pending.state == name,
      let asked = currentState,
      asked != name, player.takeBackQueue()
    {
      takeBackChange(to: asked, reason: nil)
      return "stay in \"\(name)\": the change to \"\(asked)\" was not heard yet, and is called off"
    }
    // Another state while a change waits for its beat or bar: that change is called off, never
    // heard and so never reported (its report waited for its time and said it was, on the line),
    // and this one goes from the state heard: its music back on the player first, so that this
    // change's beat or bar is on the grid of the music heard. The grid used to come from the
    // waiting music, not begun: a change on the beat 0.5 s after one on the bar cut in at once,
    // off the grid, and was reported on a line of the music that never played (trial 7).
    if playing, let pending = pendingLanding, isWaiting(pending.heardAt), let asked = currentState, asked != name {
      calledOff = "the change to \"\(asked)\" waiting for \(Self.format(pending.heardAt)) s is called off"
      // (Not a bridge's hand-over to its state's music: the state heard is already the one
      // asked for, and what waits is the rest of its music, after the bridge piece.)
      if pending.state != asked, player.takeBackQueue() {
        takeBackChange(to: asked, reason: nil)
      } else if pending.state == asked, bridgeHandOverAt == pending.heardAt, player.takeBackQueue() {
        takeBackHandOver(in: asked)
      } else {
        lastReportedState = forgetChange(to: asked)
      }
    }
    // A bridge between the state heard and this one: it plays first, on the grid.
    if playing, let bridge = sheet.bridge(from: lastReportedState, to: name),
      let item = resolved[bridge.music]?.items.first
    {
      currentState = name
      statePriority = sheet.states[name]?.priority ?? 0
      return playBridge(bridge, item: item, into: name, spec: spec, cause: cause)
    }
    currentState = name
    statePriority = sheet.states[name]?.priority ?? 0
    // A pickup: the incoming piece starts that long before the line, so that its first downbeat
    // lands on it; the music is drawn now, to know its first item's pickup.
    var built: StateMusic?
    var lead = 0.0
    if spec.pickup, playing, spec.entry == .start, let state = sheet.states[name] {
      let music = build(state)
      built = music
      if let first = music.entries.first {
        // The pickup is seconds of its file; it plays at the music's speed now (the rate and
        // tempo set, the drives) times the state's own rate. It was taken as seconds heard: at
        // rate 0.8 a two-bar pickup's downbeat came 0.8 s after the line (a designer's trial).
        // (The state's rate as `putOnPlayer` bakes it: against what a reload moved the rate by.)
        let carried = max(1e-6, stateRate.value(at: now))
        let baked = Self.clampedRate(Self.clampedRate(Double(state.rate)) / carried)
        let speed = max(0.01, mixSpeed(at: now) * Double(first.rate ?? 1) * baked)
        lead = pickupSeconds(of: first.item, source: music.origins[first.item.assetURL.path]?.source) / speed
      }
    }
    let (landsAt, landing) = landingTime(spec, playing: playing, lead: lead)
    let note = landingNote.map { "; \($0)" } ?? ""
    if landingNote != nil { lead = 0 }
    let description =
      "\(spec.seconds > 0 ? "crossfade" : "cut") to \"\(name)\""
      + (spec.seconds > 0 ? " (\(Self.format(spec.seconds)) s \(spec.curve.rawValue))" : "")
    if landsAt > now + 0.5 / Double(engine.sampleRate) {
      // Said of the playing item's grid, before the incoming item is queued behind it.
      let gridNote =
        spec.moment == .beat || spec.moment == .bar
        ? player.nowPlayingItem.flatMap { gridNoteOnce(for: $0) }.map { "; \($0)" } ?? "" : ""
      report(.scheduled(what: description + " on the \(Self.momentText(spec))", at: landsAt), cause: cause)
      if let landing {
        // The new music is opened now and starts when the playing item reaches the line: the
        // mixer finds that frame from the playing voice's own position, so the landing is exact
        // live too, whenever this thread runs.
        applyStateChange(name, spec: spec, cause: cause, landing: (landing, landsAt), built: built, lead: lead)
      } else {
        schedule(.changeState(name: name, spec: spec, landsAt: landsAt), at: landsAt, cause: cause)
      }
      return description
        + " at \(Self.momentText(spec)) (\(Self.format(landsAt)) s)"
        + (lead > 0 ? ", its pickup from \(Self.format(landsAt - lead)) s" : "") + note + gridNote
    }
    let paused = player.playbackState == .paused
    if paused, let pending = pendingLanding, isWaiting(pending.heardAt), let asked = askedBefore, asked != pending.state
    {
      // The change that waited for its line when the music was paused is replaced: its held
      // reports go (they came out after the resume, "calm -> fight" for music never heard).
      calledOff = "the change to \"\(asked)\" waiting for its line is called off"
      lastReportedState = pending.state
      dropWaitingChange()
    }
    applyStateChange(name, spec: spec, cause: cause, built: built, lead: lead)
    if paused { return description + " (paused: it plays when the music resumes)" }
    return description + note + (lead > 0 ? " (its pickup first: the downbeat at \(Self.format(now + lead)) s)" : "")
  }

  /// What the last `changeState` called off that the designer was told would come (a change
  /// waiting for its line, its report held until then), for its action's report.
  private var calledOff: String?

  /// A seek asked for while new music waits for a stop's fade to end (`afterTheStop`): where
  /// that music starts. It moved the music fading out (a designer's "restart level" rule,
  /// `[{ state: "hall" }, { seek: "start" }]`, cued during a death's fade: the dying boss music
  /// jumped back to its start, and the hall came in from its start anyway).
  /// (With the time the stop ends: only the music that comes then takes it.)
  private var seekAfterTheStop: (target: SeekTarget, at: Double)?

  /// When the music's `stop` ends, while it fades out for it (nil when no stop waits).
  private var stopEndsAt: Double? {
    scheduled.first { if case .stop = $0.work { return true } else { return false } }?.time
  }

  /// New music asked for while the music fades out for a `stop`: the stop ends as it was asked
  /// to, and `work` starts the new music from the silence after it (a beat or bar of music that
  /// is ending means nothing). It used to cancel the stop but not its fade: the new music
  /// played on under a fade that went on to silence, and stayed silent.
  private func afterTheStop(_ work: Work, at stopAt: Double, cause: LevelEvent?, what: () -> String) -> String {
    // What this one replaces is said, as a change called off before its bar is.
    var asked: String?
    if case .changeState(let name, _, _) = work { asked = name }
    let replaced = scheduled.lazy.compactMap { waiting -> String? in
      switch waiting.work {
      case .changeState(let name, _, _) where name != asked:
        return "the change to \"\(name)\" after the stop is called off"
      case .playQueue: return "the game's queue after the stop is called off"
      default: return nil
      }
    }.first
    cancelScheduled {
      switch $0 {
      case .changeState, .playQueue: return true
      default: return false
      }
    }
    pendingBridge = nil
    stoppedState = nil
    seekAfterTheStop = nil
    schedule(work, at: stopAt, cause: cause)
    let description = what() + " after the stop (\(Self.format(stopAt)) s)"
    report(.scheduled(what: description, at: stopAt), cause: cause)
    return description + (replaced.map { "; \($0)" } ?? "")
  }

  /// A bridge playing (or about to): the state it leads into, the transition from its end, and
  /// when the bridge is heard (the state's music is put behind it from then on).
  private var pendingBridge:
    (state: String, spec: TransitionSpec, heardAt: Double, cause: LevelEvent?, seek: SeekTarget?)?

  /// Plays `bridge` (its `item`) into state `name`: on the moment `spec` gives, as a queue of
  /// its own that neither repeats nor loops; the state's music is queued behind it once it is
  /// heard, to start on its end (`continueBridge`).
  private func playBridge(
    _ bridge: MusicBridge, item: MediaItem, into name: String, spec given: TransitionSpec, cause: LevelEvent?
  ) -> String {
    // The crossfade into a bridge is at most half the bridge (as into any item whose end is
    // near): a 3 s crossfade into a 2 s bridge still faded in when the bridge ended, and both
    // pieces stopped there, mid-fade.
    var spec = given
    if let duration = item.playbackDuration, duration > 0, spec.seconds > duration / 2 {
      spec.seconds = duration / 2
    }
    let (landsAt, landing) = landingTime(spec, playing: true)
    let note = landingNote.map { "; \($0)" } ?? ""
    let source = sheet.sources[bridge.music] ?? MusicSource(name: bridge.music, kind: .picks)
    var entry = QueueDescriptor.Entry(item: item, loopRepeat: .off)
    entry.gainDecibels = StateMusic.gain(for: item, source: source, levelling: sheet.loudness, target: loudnessTarget)
    origins[item.assetURL.path] = (bridge.music, false)
    let description =
      "bridge \"\(item.displayName)\" to \"\(name)\""
      + (spec.seconds > 0 ? " (crossfade \(Self.format(spec.seconds)) s \(spec.curve.rawValue))" : "")
    // Waiting for its moment, the bridge is a change like any other: until it is heard the music
    // before it plays on, and a change to another state meanwhile calls it off and goes from the
    // music heard (see `changeState`). It used to take the bridge's piece, not begun, for the
    // music playing: a change `at: "end"` into a third state found it "ending" and cut in at
    // once, over the music heard (a designer's trial).
    let heard = player.nowPlayingItem
    let waits = landsAt > now + 0.5 / Double(engine.sampleRate)
    playingOrderBeforeChange = playingOrder
    do {
      try putOnPlayer(
        QueueDescriptor(entries: withBeatGrids([entry])), startingAt: nil, spec: spec,
        landing: landsAt > now + 0.5 / Double(engine.sampleRate) ? landing : nil, wasPlaying: true,
        hold: spec.tailSeconds, volume: Double(sheet.states[name]?.volume ?? 1),
        rate: Double(sheet.states[name]?.rate ?? 1), rampAt: landsAt,
        modes: QueuePlayer.Modes(repeatMode: .none, loopRepeat: .off, transition: player.transition))
    } catch {
      report(.problem("bridge to \"\(name)\": the bridge was refused: \(error)"), cause: cause)
      return description + ": refused"
    }
    if landsAt > now + 0.5 / Double(engine.sampleRate) {
      report(.scheduled(what: description + " on the \(Self.momentText(spec))", at: landsAt), cause: cause)
    }
    let heardLine = landing.map {
      var line = $0
      line.everySeconds = nil
      return line
    }
    pendingLanding = waits ? (landsAt, lastReportedState, heard, spec, 0, 0, heardLine) : nil
    layeredState = nil
    layerNames = []
    playingOrder = nil
    lastNowPlaying = item
    lastNowPlayingEntry = player.nowPlayingEntryID
    report(
      .stateChanged(from: lastReportedState, to: name, item: item, source: bridge.music, isUserMusic: false),
      cause: cause, at: landsAt)
    if lastReportedState != name { previousState = lastReportedState }
    lastReportedState = name
    var exit = TransitionSpec(seconds: bridge.seconds, curve: bridge.curve, moment: .end)
    exit.entry = spec.entry == .samePosition ? .start : spec.entry
    exit.entryCue = spec.entryCue
    pendingBridge = (name, exit, landsAt, cause, nil)
    isQuiet = false
    return description
      + (landsAt > now + 0.5 / Double(engine.sampleRate)
        ? " at \(Self.momentText(spec)) (\(Self.format(landsAt)) s)" : "") + note
  }

  /// Once the bridge is heard: the state's music goes behind it, to start as it ends.
  private func continueBridge() {
    guard let bridge = pendingBridge, now >= bridge.heardAt, player.playbackState == .playing else { return }
    pendingBridge = nil
    guard currentState == bridge.state else { return }
    let (estimate, landing) = landingTime(bridge.spec, playing: true)
    // Heard from its first frame at `heardAt`: its end is known exactly (the estimate from the
    // position reported lags by what the bus holds).
    var endsAt = estimate
    if let duration = player.nowPlayingItem?.playbackDuration {
      let rate = max(0.01, player.musicSpeed)
      endsAt = max(now, bridge.heardAt + duration / rate - bridge.spec.seconds)
    }
    // The state's music as it is entered: the player's songs where they were left (a bridge
    // into a state used to start them over from a new first song, and the one they left off
    // came again only by chance).
    applyStateChange(
      bridge.state, spec: bridge.spec, cause: bridge.cause, landing: landing.map { ($0, endsAt) }, isRebuild: true,
      resumes: true)
    bridgeHandOverAt = pendingLanding?.heardAt
    // A seek asked for while the bridge waited: where the state's music starts (it now waits
    // for the bridge's end, so the player moves its start).
    if let target = bridge.seek, let item = player.nowPlayingItem {
      player.currentPlaybackTime = Self.seconds(of: target, in: item)
    }
  }

  /// The music stopped: a change that still waited for its line in it never comes, and its held
  /// reports go with it. They came out after the stop, naming a state the game had left (a fight
  /// cued on the bar, then a death that stopped the music: "town -> battle" reported after the
  /// level had started again in town).
  private func dropWaitingChange() {
    dropReports {
      switch $0.kind {
      case .stateChanged, .nowPlaying: return isAhead($0)
      default: return false
      }
    }
    pendingLanding = nil
    pendingBridge = nil
    bridgeHandOverAt = nil
  }

  /// When the music was paused (a `pause` action), while it is.
  private var pausedAt: Double?

  /// Whether a change heard at `heardAt` is still to come: later than now, or, while the music is
  /// paused, later than the pause (its time, reckoned before the pause, moves on with the music
  /// on the resume, see `deferWaitingMusic`). A stop while paused past that time took the
  /// change for heard: the resume started the state that never played.
  private func isWaiting(_ heardAt: Double) -> Bool {
    now < heardAt || (pausedAt.map { heardAt > $0 } ?? false)
  }

  /// The music goes on after a pause: what waited for a line of it (a change on its bar, a
  /// bridge and its hand-over, their reports) comes that much later, as the music does. The
  /// player keeps the music heard and the change waiting on its line through the pause; its
  /// reports came at the times reckoned before it (a bridge said heard while nothing played).
  private func deferWaitingMusic() {
    guard let since = pausedAt else { return }
    pausedAt = nil
    let paused = now - since
    guard paused > 0 else { return }
    if var pending = pendingLanding, pending.heardAt > since {
      if bridgeHandOverAt == pending.heardAt { bridgeHandOverAt = pending.heardAt + paused }
      pending.heardAt += paused
      pendingLanding = pending
    }
    if var bridge = pendingBridge, bridge.heardAt > since {
      bridge.heardAt += paused
      pendingBridge = bridge
    }
    for index in heldReports.indices where heldReports[index].time > since {
      heldReports[index].time += paused
    }
    // A stinger on a line of the music: the mixer holds its start until the music gets there.
    for index in scheduled.indices where scheduled[index].time > since {
      guard case .stinger = scheduled[index].work else { continue }
      scheduled[index].time += paused
    }
    // And those held through the pause (see `holdStingersOnTheMusic`) come back, as late.
    for var held in stingersHeldThroughPause {
      held.time += paused
      scheduled.append(held)
    }
    stingersHeldThroughPause.removeAll()
    scheduled.sort { ($0.time, $0.order) < ($1.time, $1.order) }
  }

  /// When the music pauses: a stinger waiting for a line of it (the mixer starts it where the
  /// music gets there) waits through the pause, however long, and is reported when it plays.
  /// It used to be reported at its line's time as first reckoned, under the pause menu, and
  /// played after the resume. Held out of the schedule (`stingersHeldThroughPause`) until
  /// `deferWaitingMusic` puts it back, moved on by the pause's length.
  private func holdStingersOnTheMusic() {
    let holds = { (item: Scheduled) -> Bool in
      guard item.time > self.now, case .stinger(_, _, _, _, let prepared, _?) = item.work else { return false }
      return prepared != nil
    }
    stingersHeldThroughPause += scheduled.filter(holds)
    scheduled.removeAll(where: holds)
  }

  /// Stingers on a line of the music, held while it is paused (see `holdStingersOnTheMusic`),
  /// with the times reckoned before the pause.
  private var stingersHeldThroughPause: [Scheduled] = []

  /// When the hand-over from the bridge heard to its state's music is heard, while it waits
  /// (see `takeBackHandOver`).
  private var bridgeHandOverAt: Double?

  private var hasScheduledStateChange: Bool {
    scheduled.contains { if case .changeState = $0.work { return true } else { return false } }
  }

  /// When incoming music should be heard: now (plus the pre-roll when something plays), on the
  /// next beat or bar of the playing item that can still be reached, or so that the crossfade
  /// ends with the item.
  /// Also where, in the playing item's file, the incoming music should start (nil: now).
  ///
  /// With an exit cue: on the playing item's next cue point of that name (less the lead); with
  /// none ahead, as `at: "end"`, and `landingNote` says so (the lead is then not applied).
  private func landingTime(_ spec: TransitionSpec, playing: Bool, lead: Double = 0) -> (Double, QueuePlayer.Landing?) {
    landingNote = nil
    guard playing, let item = player.nowPlayingItem else { return (now, nil) }
    // The mixer starts incoming music on the first frame it mixes after the change.
    let earliest = now
    let rate = max(0.01, player.musicSpeed)
    let position = playingPosition
    if let cue = spec.exitCue {
      let leadInFile = max(0, lead) * rate
      let loop = player.loopRepeat != .off ? loopRegion(of: item) : nil
      if let point = cuePointAhead(cuePoints(named: cue, of: item), after: position, lead: leadInFile, loop: loop) {
        return (
          now + timeToPlay(point.unwrapped - point.from),
          QueuePlayer.Landing(unwrappedSeconds: point.unwrapped - leadInFile, everySeconds: nil, loop: loop)
        )
      }
      var atEnd = spec
      atEnd.exitCue = nil
      atEnd.moment = .end
      let landing = landingTime(atEnd, playing: playing)
      landingNote = "no cue \"\(cue)\" ahead in \"\(item.displayName)\": at its end"
      return landing
    }
    switch spec.moment {
    case .now:
      return (earliest, nil)
    case .beat, .bar:
      guard let line = nextGridLine(spec.moment, bars: spec.bars, lead: lead) else { return (earliest, nil) }
      if endsBefore(line.landing, item: item) {
        // Nothing plays after this item (a bridge, the last of a queue that does not repeat)
        // and it ends before the line: the change comes at its end instead, as `at: "end"`.
        // It waited on a line the music never reached, in silence, and started wherever the
        // mixer noticed the music was gone (live and offline apart).
        var atEnd = spec
        atEnd.moment = .end
        let landing = landingTime(atEnd, playing: playing)
        landingNote = "\"\(item.displayName)\" ends before its next \(spec.moment.rawValue): at its end"
        return landing
      }
      return (line.at, line.landing)
    case .end:
      var end = item.playbackDuration ?? position
      if let loopEnd = loopEnd(of: item), position < loopEnd, player.loopRepeat != .off { end = loopEnd }
      let crossfade = spec.seconds
      // A released loop may have passes left (see `passesLeftAfterRelease`): its outro, where
      // the change lands, comes after them.
      let stillLooping = releasedLoopStillToPlay
      let endsAt = now + timeToPlay(end - position + stillLooping)
      let landsAt = max(earliest, endsAt - crossfade)
      // The crossfade's length in the file, at the speed the music has then.
      let fileSeconds = end - crossfade * musicSpeed(at: max(now, landsAt))
      if fileSeconds <= position && stillLooping == 0 && crossfade > 0 && spec.exitCue == nil {
        // Said, not done silently: the change was asked for at the end and happens now.
        landingNote =
          "\"\(item.displayName)\" ends in \(Self.format(max(0, (end - position) / rate))) s, less than the crossfade: "
          + "it begins now"
      }
      var landing = QueuePlayer.Landing(fileSeconds: fileSeconds, everySeconds: nil)
      landing.replacesHandOver = true
      // The end of an item whose loop was released is in its last pass: not the next pass's line.
      landing.inFinalPass =
        loopReleasedEntry != nil && player.nowPlayingEntryID == loopReleasedEntry && item.loopStartFrame != nil
      return (landsAt, fileSeconds > position || stillLooping > 0 ? landing : nil)
    }
  }

  /// Whether the playing `item` ends before `landing` with nothing after it: it is the last of a
  /// queue that does not repeat, and neither loops nor goes on past its end.
  private func endsBefore(_ landing: QueuePlayer.Landing, item: MediaItem) -> Bool {
    guard let duration = item.playbackDuration, duration > 0, landing.afterSeconds == 0,
      player.repeatMode == .none, loopRegion(of: item) == nil
    else { return false }
    guard let index = player.indexOfNowPlayingItem, index == player.queue.count - 1 else { return false }
    return landing.fileSeconds >= duration - 1e-6
  }

  /// The first of `points` (seconds of the playing item's file) at least `lead` ahead of
  /// `position`, as if the item's loop (`loop`) went on past its end (see `lineAcrossLoop`): a
  /// looping item never plays what lies past its loop end, so a point there is not ahead; after
  /// this pass's last point, the next pass's first. A change on an exit cue cued after the loop's
  /// last one waited for a point in the outro, which never came. `from`: `position`, reckoned on
  /// from a frame before the seam and past it, brought back into the loop.
  private func cuePointAhead(
    _ points: [Double], after position: Double, lead: Double, loop: (start: Double, end: Double)?
  )
    -> (unwrapped: Double, from: Double)?
  {
    guard let loop, loop.end > loop.start else {
      return points.first { $0 - lead > position + 1e-6 }.map { ($0, position) }
    }
    let from = position >= loop.end ? position - (loop.end - loop.start) : position
    if let point = points.first(where: { $0 - lead > from + 1e-6 && $0 <= loop.end + 1e-9 }) { return (point, from) }
    let next = points.first {
      $0 >= loop.start - 1e-9 && $0 < loop.end && loop.end + $0 - loop.start - lead > from + 1e-6
    }
    return next.map { (loop.end + $0 - loop.start, from) }
  }

  /// Set by `landingTime` when an exit cue was not found ahead: what it did instead.
  private var landingNote: String?

  /// What a transition waits for, in words: "bar", "beat", "item's end", "cue \"exit\"".
  private static func momentText(_ spec: TransitionSpec) -> String {
    if let cue = spec.exitCue { return "cue \"\(cue)\"" }
    return spec.moment == .end ? "item's end" : spec.moment.rawValue
  }

  /// The seconds of `item`'s cue points named `name`, in order: its source's `cues` (bars on the
  /// item's grid), else its file's `CUE_<NAME>` tags.
  func cuePoints(named name: String, of item: MediaItem) -> [Double] {
    let source = origins[item.assetURL.path].flatMap { sheet.sources[$0.source] }
    if let given = source?.namedCues[name] {
      let grid = self.grid(for: item)
      return given.map { position -> Double in
        switch position {
        case .seconds(let seconds): return seconds
        case .bar(let bar): return grid.offsetSeconds + (bar - 1) * grid.secondsPerBar
        }
      }.sorted()
    }
    return item.cuePoints[name] ?? []
  }

  /// The queue entry whose loop `releaseLoop` ended: it plays on through its outro, so its end is
  /// the item's end, not its loop's.
  private var loopReleasedEntry: Int?

  /// A release that came too near its loop's seam: the voice had decoded past it, so the loop
  /// plays `passes` more times (`DecodeAheadStream.passesCommitted`, the rule the voice follows)
  /// before the outro. `seamAt`: when the pass playing at the release ends. A change `at: "end"` counts
  /// them: it was reported, and came, a whole pass early (in the loop's last pass, the outro
  /// never heard).
  private var passesLeftAfterRelease: (entry: Int?, seamAt: Double, passes: Int, loopSeconds: Double)?

  /// Notes, before the loop of the playing item is released, whether the voice will play it
  /// again first, as the voice reckons it: in frames of its ring's blocks, at the mix rate when
  /// the decode thread resamples the file, at the file's own for a layered piece (its stems are
  /// mixed, then resampled, by the voice).
  private func notePassesLeft() {
    passesLeftAfterRelease = nil
    guard let item = player.nowPlayingItem, let loop = loopRegion(of: item), let fileRate = item.sampleRate
    else { return }
    let position = playingPosition
    let length = loop.end - loop.start
    guard position < loop.end, length > 0 else { return }
    let blockRate = Double(layerNames.isEmpty ? engine.sampleRate : fileRate)
    let passes = DecodeAheadStream.passesCommitted(
      framesToSeam: (loop.end - position) * blockRate, loopFrames: length * blockRate)
    guard passes > 0 else { return }
    passesLeftAfterRelease = (player.nowPlayingEntryID, now + timeToPlay(loop.end - position), passes, length)
  }

  /// Seconds of the file the released loop still plays before its outro (see
  /// `passesLeftAfterRelease`): 0 when none are left.
  private var releasedLoopStillToPlay: Double {
    guard let left = passesLeftAfterRelease, left.entry == player.nowPlayingEntryID, left.entry == loopReleasedEntry
    else { return 0 }
    if now < left.seamAt { return Double(left.passes) * left.loopSeconds }
    // Past the first seam: the passes after it, for a loop shorter than the reach.
    let done = Int(((now - left.seamAt) / max(0.001, timeToPlay(left.loopSeconds))).rounded(.down)) + 1
    return Double(max(0, left.passes - done)) * left.loopSeconds
  }

  /// Where the playing item's loop ends, in seconds of its file: nil when it does not loop (no
  /// loop points, loops off, or released).
  private func loopEnd(of item: MediaItem) -> Double? {
    guard player.loopRepeat != .off, player.nowPlayingEntryID != loopReleasedEntry || loopReleasedEntry == nil
    else { return nil }
    guard let rate = item.sampleRate, item.loopStartFrame != nil else { return nil }
    return item.loopEndFrame.map { Double($0) / Double(rate) } ?? item.playbackDuration
  }

  /// The beat grid of `item`: its BPM tag (and meter tag), else its source's `tempo` when that
  /// names a `bpm` (the designer's word over the analysis's guess: a 174 BPM piece in 7 detected
  /// at 87 BPM had its bars twice as long, a designer's trial), else the tempo and first beat
  /// the analysis detected, else its source's, its state's or the file's `tempo`: a song with no
  /// tempo known follows that time grid (and `gridFallback(for:)` says so).
  ///
  /// A detected grid starts its bars on the first detected beat (the analysis finds beats, not
  /// downbeats; most music starts on one); a source's `tempo.offset` overrides that phase. A
  /// source's `pickup` places the bar lines where it ends (within a bar: a pickup of whole bars
  /// keeps them), unless its `tempo.offset` says where the bars begin: a piece with a one-beat
  /// pickup had its bars, and the changes out of it `at: "bar"`, a beat early (the same trial).
  func grid(for item: MediaItem) -> BeatGrid {
    grid(for: item, source: origins[item.assetURL.path].flatMap { sheet.sources[$0.source] })
  }

  /// `grid(for:)` of `item` as `source` plays it.
  private func grid(for item: MediaItem, source: MusicSource?) -> BeatGrid {
    let state = currentState.flatMap { sheet.states[$0] }
    var grid = source?.grid ?? state?.grid ?? sheet.grid
    let sourceNamesTempo = source?.tempoKeys.contains("bpm") == true
    if let bpm = item.beatsPerMinute, AudioTags.plausibleBeatsPerMinute.contains(bpm),
      !(item.isBeatsPerMinuteDetected && sourceNamesTempo)
    {
      grid.beatsPerMinute = bpm
      grid.offsetSeconds = source?.grid?.offsetSeconds ?? 0
      if let meter = item.beatsPerBar, meter > 0 { grid.beatsPerBar = meter }
      if item.isBeatsPerMinuteDetected, source?.grid?.offsetSeconds == nil, let first = item.firstBeatSeconds {
        grid.offsetSeconds = max(0, first).truncatingRemainder(dividingBy: grid.secondsPerBar)
      } else if source?.grid?.offsetSeconds == nil, source?.kind.isUserMusic == true,
        let first = item.firstBeatSeconds, let detected = item.detectedBeatsPerMinute,
        Self.tempiAgree(bpm, detected)
      {
        // A player's song with a BPM tag (DJ software, stores write them) rarely starts its first
        // beat at 0: where the analysis heard it, when the analysis agrees with the tag, places
        // the tag's grid. Anchored at 0, a song starting its beats at 0.25 s had its changes
        // `at: "beat"` land on the off-beat. (The game's own music keeps 0, or its source's
        // `offset`: its designer placed it.)
        grid.offsetSeconds = max(0, first).truncatingRemainder(dividingBy: grid.secondsPerBar)
      }
    }
    if let pickup = source?.pickup, source?.tempoKeys.contains("offset") != true {
      // Within a bar: a pickup of whole bars (an intro) keeps the bars, and their numbers.
      let phase = max(0, pickup.seconds(on: grid)).truncatingRemainder(dividingBy: grid.secondsPerBar)
      // (A whole number of bars, give or take a rounding: no shift at all.)
      grid.offsetSeconds = min(phase, grid.secondsPerBar - phase) < 1e-6 ? 0 : phase
    }
    return grid
  }

  /// Whether a detected tempo's beats are beats of a tagged one: the same tempo, or half of it
  /// (the analysis settled on every other beat), within 2 %. Not twice it: every other detected
  /// beat would be an off-beat of the tag's, the first one among them.
  static func tempiAgree(_ tagged: Double, _ detected: Double) -> Bool {
    guard tagged > 0, detected > 0 else { return false }
    return [1.0, 2.0].contains { abs(detected * $0 / tagged - 1) <= 0.02 }
  }

  /// `entries` with the beat grid each item follows here (`grid(for:)`, with the state about to
  /// play them current), for the beats the player reports.
  private func withBeatGrids(_ entries: [QueueDescriptor.Entry]) -> [QueueDescriptor.Entry] {
    entries.map { entry in
      var gridded = entry
      let grid = self.grid(for: entry.item)
      gridded.beatGrid = QueueDescriptor.BeatGrid(
        beatsPerMinute: grid.beatsPerMinute, beatsPerBar: grid.beatsPerBar, offsetSeconds: grid.offsetSeconds)
      // The markers: every named cue point as the director finds it (the source's, else the tags').
      let names = Set(entry.item.cuePoints.keys).union(
        origins[entry.item.assetURL.path].flatMap { sheet.sources[$0.source]?.namedCues.keys }.map(Set.init) ?? [])
      gridded.cuePoints = Dictionary(uniqueKeysWithValues: names.map { ($0, cuePoints(named: $0, of: entry.item)) })
      return gridded
    }
  }

  /// `gridFallback(for:)`, said once in a rule's report: a stinger on the beat and a change on
  /// the bar of the same song said it twice in one line.
  private func gridNoteOnce(for item: MediaItem) -> String? {
    guard let note = gridFallback(for: item) else { return nil }
    guard fireMark != nil else { return note }
    return gridNotesSaid.insert(note).inserted ? note : nil
  }

  /// The grid notes said in the rule firing now (see `gridNoteOnce(for:)`).
  private var gridNotesSaid: Set<String> = []

  /// Why `item`'s beats and bars follow the cue file's `tempo` rather than its own, or that its
  /// BPM tag, which they follow, disagrees with the tempo the analysis heard; nil when they
  /// follow its own tempo and nothing disagrees.
  func gridFallback(for item: MediaItem) -> String? {
    if let tagged = item.beatsPerMinute, tagged > 0, !item.isBeatsPerMinuteDetected,
      let heard = item.detectedBeatsPerMinute, heard > 0, !Self.tempiAgree(tagged, heard),
      origins[item.assetURL.path].flatMap({ sheet.sources[$0.source]?.tempoKeys.contains("bpm") }) != true
    {
      // A wrong tag decides the grid silently otherwise: a song tagged 85 BPM and played at 120
      // had its changes `at: "beat"` land where it has no beat (a player's trial).
      return
        "\"\(item.displayName)\" is tagged \(Self.format(tagged)) BPM but \(Self.format(heard.rounded())) BPM is heard: "
        + "its grid follows the tag (correct the tag, or give its source a `tempo`)"
    }
    guard (item.beatsPerMinute ?? 0) <= 0 else { return nil }
    let grid = self.grid(for: item)
    // Named where `grid(for:)` takes it from: the source's `tempo`, else the state's, else the
    // file's (a source's 90 BPM in 3 was called "the cue file's tempo" in a trial).
    let origin = origins[item.assetURL.path]?.source
    let whose =
      if let origin, sheet.sources[origin]?.grid != nil {
        "source \"\(origin)\"'s tempo"
      } else if let state = currentState, sheet.states[state]?.grid != nil {
        "state \"\(state)\"'s tempo"
      } else {
        "the cue file's tempo"
      }
    return "\"\(item.displayName)\" has no BPM tag and no detected tempo: "
      + "its grid is \(whose) (\(Self.format(grid.beatsPerMinute)) BPM, \(grid.beatsPerBar) a bar)"
  }

  /// `landing`: the new music starts on that line of the playing item, heard at `at` (the
  /// director's clock), rather than now.
  /// `isRebuild`: the same state's music again, after its files failed: reported as now playing.
  /// `built`: the state's music when the caller has built it already.
  private func applyStateChange(
    _ name: String, spec: TransitionSpec, cause: LevelEvent?,
    landing: (QueuePlayer.Landing, at: Double)? = nil, isRebuild: Bool = false, built: StateMusic? = nil,
    lead: Double = 0, resumes: Bool = false, seek: SeekTarget? = nil
  ) {
    guard let state = sheet.states[name] else { return }
    let music =
      built
      ?? build(state)
    for fallback in music.fallbacks { report(fallback, cause: cause) }
    guard !music.entries.isEmpty else {
      // What plays is the state heard's music: that is the state again, as when a change cannot
      // start (`takeBackChange`). The rules saw the state with no music, and a change back to
      // the state heard started its music again from the top (trial 7).
      if let heard = lastReportedState, heard != name, player.playbackState == .playing,
        let music = sheet.states[heard], currentState == name
      {
        currentState = heard
        statePriority = music.priority
        report(
          .problem(
            "state \"\(name)\" has no music to play: the music of \"\(heard)\" goes on, and the state is \"\(heard)\" again"
          ),
          cause: cause)
        return
      }
      report(.problem("state \"\(name)\" has no music to play: what played goes on"), cause: cause)
      return
    }
    origins.merge(music.origins) { _, new in new }
    let from = player.nowPlayingItem
    let wasPlaying = player.playbackState == .playing && from != nil
    // Leaving a state that plays the player's songs: remember where they are. Left during one
    // of its bundled tracks (interleaved music), the player's next song is where it resumes: it
    // started over from their first song.
    if let playing = playingOrder, playing.state != name, wasPlaying, let from {
      let path = from.assetURL.path
      // Its place in the queue (the director's queues play in their own order): a song is in a
      // shuffle's queue once each pass.
      let place = player.indexOfNowPlayingItem.flatMap {
        playing.paths.indices.contains($0) && playing.paths[$0] == path ? $0 : nil
      }
      if origins[path]?.isUserMusic == true {
        resumePoints[playing.state] = (
          playing.paths, path, landing?.0.heardFileSeconds ?? playingPosition, place
        )
      } else if let index = place ?? playing.paths.firstIndex(of: path),
        let next = (Array(playing.paths.indices[(index + 1)...]) + Array(playing.paths.indices[..<index])).first(
          where: { origins[playing.paths[$0]]?.isUserMusic == true })
      {
        resumePoints[playing.state] = (playing.paths, playing.paths[next], 0, next)
      }
    }
    var entries = music.entries
    var resumeSeconds: Double?
    if state.resumesPlayerMusic, spec.entry == .start, !isRebuild || resumes, let point = resumePoints[name],
      music.origins[point.path]?.isUserMusic == true
    {
      (entries, resumeSeconds) = Self.resumed(
        entries, at: (point.order, point.path, point.seconds), place: point.place, repeating: state.repeatMode == .all)
      (entries, resumeSeconds) = Self.pastFinishedSong(entries, at: resumeSeconds, between: state.itemTransition)
    }
    resumePoints[name] = nil
    playingOrderBeforeChange = playingOrder
    playingOrder = (name, entries.map { $0.item.assetURL.path })
    let first = entries[0]
    var entrySeconds =
      resumeSeconds
      ?? entryPosition(spec.entry, for: first.item, outgoing: wasPlaying ? from : nil, at: landing?.0.heardFileSeconds)
    if let seek {
      // A seek asked for while this music waited (for a stop's end): it starts there.
      entrySeconds = Self.seconds(of: seek, in: first.item)
    } else if resumeSeconds == nil, let cue = spec.entryCue {
      let duration = first.item.playbackDuration ?? .infinity
      if let point = cuePoints(named: cue, of: first.item).first(where: { $0 < duration }) {
        entrySeconds = point
      } else {
        report(
          .problem("state \"\(name)\": \"\(first.item.displayName)\" has no cue \"\(cue)\": it enters at its start"),
          cause: cause)
      }
    }
    let heardAt = landing?.at ?? now
    // (The player still plays the music heard: its speed turns the pickup into its file's seconds.)
    let heardLoop = from.flatMap { player.loopRepeat != .off ? loopRegion(of: $0) : nil }
    let heardLine = landing.map {
      QueuePlayer.Landing(
        unwrappedSeconds: $0.0.unwrappedSeconds + lead * max(0.01, player.musicSpeed), everySeconds: nil,
        loop: heardLoop)
    }
    pendingLanding =
      wasPlaying && heardAt > now
      ? (heardAt, lastReportedState, from, spec, lead, entrySeconds ?? 0, heardLine) : nil
    entries = withBeatGrids(entries)
    do {
      // What plays now holds its level through the pickup and the tail, then fades; it keeps
      // what it had lined up (its repeat, its next item) to fade that out too.
      try putOnPlayer(
        QueueDescriptor(entries: entries), startingAt: entrySeconds, spec: spec, landing: landing?.0,
        wasPlaying: wasPlaying, hold: resumeSeconds == nil ? lead + spec.tailSeconds : spec.tailSeconds,
        volume: Double(state.volume), rate: Double(state.rate), rampAt: heardAt,
        modes: QueuePlayer.Modes(
          repeatMode: state.repeatMode, loopRepeat: state.loop, transition: state.itemTransition))
    } catch {
      report(.problem("state \"\(name)\": the queue was refused: \(error)"), cause: cause)
      return
    }
    // The new queue's layers start at their `volume`s; their parameter curves go with them
    // now, before any of it is heard.
    layeredState = name
    layerNames = state.layers.map(\.name)
    lastLayerMix = nil
    applyLayerMix()
    let origin = music.origins[first.item.assetURL.path]
    lastNowPlaying = first.item
    lastNowPlayingEntry = player.nowPlayingEntryID
    // Stamped with the time the new music is heard: the first frame mixed after the change.
    if isRebuild && lastReportedState == name {
      report(
        .nowPlaying(item: first.item, source: origin?.source, isUserMusic: origin?.isUserMusic ?? false), cause: cause,
        at: heardAt)
    } else {
      report(
        .stateChanged(
          from: lastReportedState, to: name, item: first.item, source: origin?.source,
          isUserMusic: origin?.isUserMusic ?? false), cause: cause, at: heardAt)
    }
    if lastReportedState != name { previousState = lastReportedState }
    lastReportedState = name
  }

  /// Puts `descriptor` on the player with `spec`: crossfading from what plays (on `landing`,
  /// when the grid gave one), or, from silence, fading the first music in along the
  /// transition's own curve.
  ///
  /// `volume`, the state's, is baked into the gain of every entry, so it goes with the new
  /// music's voices and leaves the outgoing music at its own: a crossfade from a state at 0.5
  /// to one at 1 swelled the outgoing music by up to 4.7 dB on its way out when the state volume
  /// was one level over both (a designer's trial). `rate` is baked into every entry's rate the
  /// same way: the outgoing music kept changing speed (and pitch) to the incoming state's as
  /// soon as the change was decided, a bar before it was heard. `rampAt`: when the change is
  /// heard.
  private func putOnPlayer(
    _ descriptor: QueueDescriptor, startingAt seconds: Double?, spec: TransitionSpec, landing: QueuePlayer.Landing?,
    wasPlaying: Bool, hold: Double = 0, volume: Double, rate: Double, rampAt: Double? = nil,
    modes: QueuePlayer.Modes
  ) throws {
    // What a reload moved the music playing by (`stateVolume` and `stateRate` other than 1):
    // the music playing keeps it through the change, and the new music is baked against it, so
    // each plays at its own state's level and speed. The new music took the reload's level
    // through its pickup, and the music fading out swelled back to its old level (a designer's
    // trial: a hall's volume saved at 0.5 while it played, then a change to a fight).
    let carriedVolume = wasPlaying ? max(1e-6, stateVolume.value(at: rampAt ?? now)) : 1
    let baked = max(Self.leastBakedVolume, min(carriedVolume < 1 ? Self.mostBakedVolume : 1, volume / carriedVolume))
    let target = Self.clampedRate(rate)
    let rate = Self.clampedRate(target / (wasPlaying ? max(1e-6, stateRate.value(at: rampAt ?? now)) : 1))
    var descriptor = descriptor
    if baked != 1 {
      let decibels = 20 * log10(baked)
      for index in descriptor.entries.indices {
        // (An entry's gain is at most +24 dB.)
        descriptor.entries[index].gainDecibels = min(24, (descriptor.entries[index].gainDecibels ?? 0) + decibels)
      }
    }
    if rate != 1 {
      for index in descriptor.entries.indices {
        descriptor.entries[index].rate = Float(Double(descriptor.entries[index].rate ?? 1) * rate)
      }
    }
    if wasPlaying {
      try player.setQueue(
        with: descriptor, startingAt: seconds, transition: Transition(validDuration: spec.seconds, curve: spec.curve),
        landing: landing, holdOutgoingSeconds: hold, modes: modes)
    } else {
      try player.setQueue(with: descriptor, startingAt: seconds, transition: nil, landing: nil, modes: modes)
      fade.set(spec.seconds > 0 ? 0 : 1)
      fade.move(to: 1, over: spec.seconds, at: now, curve: spec.curve)
      // Paused (the game's pause menu, a `pause` action): the new music waits for the resume,
      // as a queue set on a paused player does. It used to start at once, under the menu.
      if player.playbackState != .paused { player.play() }
    }
    bakedVolumeBeforeChange = bakedVolume
    bakedVolume = baked
    bakedRateBeforeChange = bakedRate
    bakedRate = rate
    // (The ramps count from the mix update at the end of this step, whatever the order here.)
    if wasPlaying {
      stateVolume.move(to: volume / baked, over: spec.seconds, at: rampAt ?? now)
      stateRate.move(to: target / rate, over: spec.seconds, at: rampAt ?? now)
    } else {
      stateVolume.set(volume / baked)
      stateRate.set(1)
    }
  }

  /// `rate` within what a voice can play.
  static func clampedRate(_ rate: Double) -> Double {
    min(Double(Voice.rateRange.upperBound), max(Double(Voice.rateRange.lowerBound), rate))
  }

  /// The state whose queue plays, and its entries' files in order: its resume point when it is left.
  private var playingOrder: (state: String, paths: [String])?

  /// `entries` put back in the remembered order (files new since go at the end, gone ones are
  /// left out), starting at the remembered song (the ones before it follow when the queue
  /// repeats), and the position to start that song at.
  /// `place`: the song's place in the remembered order, when it is known (a song is there
  /// more than once: once each pass of a shuffle); else its first.
  static func resumed(
    _ entries: [QueueDescriptor.Entry], at point: (order: [String], path: String, seconds: Double), place: Int? = nil,
    repeating: Bool
  ) -> ([QueueDescriptor.Entry], Double?) {
    // A path's places in the remembered order, taken by its entries in turn: a bundled piece
    // that comes round in an interleaved rotation (two of the player's songs, then the game's)
    // is in the queue several times. Ranked by its first place alone, every copy went before
    // the song resumed and was cut off with the songs played already: the songs after it came
    // one after another, without the game's music between them.
    var places: [String: ArraySlice<Int>] = [:]
    for (index, path) in point.order.enumerated() { places[path, default: []].append(index) }
    var ranks: [Int] = []
    for (offset, entry) in entries.enumerated() {
      let path = entry.item.assetURL.path
      ranks.append(places[path]?.popFirst() ?? point.order.count + offset)
    }
    let ranked = zip(ranks, entries).sorted { $0.0 < $1.0 }
    let ordered = ranked.map(\.1)
    guard
      let start = ranked.firstIndex(where: { $0.0 == place && $0.1.item.assetURL.path == point.path })
        ?? ordered.firstIndex(where: { $0.item.assetURL.path == point.path })
    else { return (entries, nil) }
    let rotated = Array(ordered[start...]) + (repeating ? Array(ordered[..<start]) : [])
    return (rotated, point.seconds)
  }

  /// Less than this much of a resumed song before its crossfade into the next one: the next
  /// one plays instead, from its start.
  static let leastResumed = 1.0

  /// `entries` resumed `seconds` into the first: when that song was left as it was about to
  /// fade into the next one (or during that fade), the next one from its start instead. It came
  /// back only to fade out at once, and its hand-over, due on its first frame, came wherever the
  /// next song was ready (live a few milliseconds after offline).
  static func pastFinishedSong(
    _ entries: [QueueDescriptor.Entry], at seconds: Double?, between transition: Transition
  ) -> ([QueueDescriptor.Entry], Double?) {
    guard let seconds, entries.count > 1, let first = entries.first,
      let end = first.endTime ?? first.item.playbackDuration
    else { return (entries, seconds) }
    let start = first.startTime ?? 0
    // (A crossfade between items is at most half of either item.)
    let fade = min(transition.duration, max(0, end - start) / 2)
    guard seconds > end - fade - leastResumed else { return (entries, seconds) }
    return (Array(entries.dropFirst()), nil)
  }

  /// `state`'s music as it plays now: its sources as resolved, without the files that failed,
  /// levelled, in its playlists' order.
  private func build(_ state: MusicState) -> StateMusic {
    StateMusic.build(
      state, sheet: sheet, resolved: resolved, failed: failedPaths, loudnessTarget: loudnessTarget,
      generator: &generator, playlists: &playlists)
  }

  /// The player withdrew their consent (the sources are resolved again without their library):
  /// their songs stop now, with a one-second crossfade, to the state's music without them (its
  /// fallbacks), or fade out when the state has nothing else; none of their files is opened again,
  /// nor resumed later. The music that played on its queue (the next of their songs lined up, the
  /// one playing looping or starting again) kept reading their files long after they said no.
  func userMusicWithdrawn(reason: String) {
    resumePoints = resumePoints.filter { origins[$0.value.path]?.isUserMusic != true }
    let isUserMusic = { (path: String) in self.origins[path]?.isUserMusic == true }
    let playsUserMusic =
      (lastNowPlaying.map { isUserMusic($0.assetURL.path) } ?? false)
      || (playingOrder?.paths.contains(where: isUserMusic) ?? false)
    guard playsUserMusic, player.playbackState != .stopped, player.nowPlayingItem != nil else { return }
    cancelScheduled {
      switch $0 {
      case .playQueue: return true
      default: return false
      }
    }
    let spec = TransitionSpec(seconds: 1, curve: .equalPower, moment: .now, entry: .start)
    if let name = currentState, let state = sheet.states[name] {
      let music = build(state)
      if !music.entries.isEmpty {
        report(.problem("the player's songs stop (\(reason)): \"\(name)\" plays its music without them"))
        isQuiet = false
        applyStateChange(name, spec: spec, cause: nil, isRebuild: true, built: music)
        return
      }
    }
    report(.problem("the player's songs stop (\(reason)), and nothing else is to play: the music fades out"))
    fade.move(to: 0, over: spec.seconds, at: now)
    schedule(.stop, at: now + spec.seconds, cause: nil)
    isQuiet = false
  }

  /// The queue's ends the director has seen (see `noticeEnd`).
  private var endsSeen = 0

  /// The queue ran out (a state or a game's queue that does not repeat): said once, so that a
  /// game learns its music is over without polling (a trial's game heard nothing from the
  /// director for the 5 s of silence that followed). The state stays the current one (the
  /// rules still see it; a resume plays its music again); nothing is heard of it now.
  private func noticeEnd() {
    endsSeen = player.endsSoFar
    guard player.playbackState == .stopped, !hasScheduledStateChange else { return }
    report(.musicEnded(state: currentState, item: lastNowPlaying))
    lastReportedState = nil
    lastNowPlaying = nil
    lastNowPlayingEntry = nil
  }

  /// Items of the queue failed (a file replaced by text after the cue file was checked, a file
  /// cut off or gone): each is a problem report, and the file is left out from now on. When the
  /// queue had nothing else and stopped, the music goes on: the state's music is built again
  /// without the failed files (so the cue file's `fallback` sources take over), or, when nothing
  /// of it plays, the music of the state before it.
  private func noticeFailures() {
    failuresSeen = player.failuresSoFar
    let failures = player.takeFailures()
    let takenBack = player.takeQueuesTakenBack() > 0
    guard !failures.isEmpty || takenBack else { return }
    for (item, error) in failures {
      // Once per file: a file cut short or damaged still plays up to the damage, and a queue
      // that repeats it fails there again each pass (the same report every 5.4 s; trial 7).
      guard failedPaths.insert(item.assetURL.path).inserted else { continue }
      let origin = origins[item.assetURL.path].map { " of source \"\($0.source)\"" } ?? ""
      report(
        .problem(
          "\(currentState.map { "state \"\($0)\": " } ?? "")\(item.reportName)\(origin) cannot be played, and is "
            + "left out until the cue file is reloaded: \(error)"))
    }
    func build(_ name: String) -> StateMusic? { sheet.states[name].map { self.build($0) } }
    if takenBack, let state = currentState {
      // The new state's music could not start, and the player went back to the music that still
      // played, uninterrupted: with nothing else of the state to play, so does the director.
      if let music = build(state), !music.entries.isEmpty {
        // Its fallbacks, or the files of it that did not fail: on the change's own line when it
        // is still ahead (they used to cut in at once, off the bar the change was reported for),
        // else now.
        let waiting = pendingLanding.flatMap { $0.heardAt > now ? $0.spec : nil }
        lastReportedState = forgetChange(to: state)
        if let spec = waiting, player.playbackState == .playing {
          let (landsAt, landing) = landingTime(spec, playing: true)
          applyStateChange(state, spec: spec, cause: nil, landing: landing.map { ($0, landsAt) }, built: music)
          return
        }
        let spec = TransitionSpec(seconds: 0.25, curve: .equalPower, moment: .now, entry: .start)
        applyStateChange(state, spec: spec, cause: nil, built: music)
      } else {
        takeBackChange(to: state, reason: "none of its music opens")
      }
      return
    }
    guard player.playbackState == .stopped, let state = currentState, !hasScheduledStateChange else { return }
    // A short fade in: the failure already left a gap.
    let spec = TransitionSpec(seconds: 0.25, curve: .equalPower, moment: .now, entry: .start)
    isQuiet = false
    if let music = build(state), !music.entries.isEmpty {
      applyStateChange(state, spec: spec, cause: nil, isRebuild: true, built: music)
    } else if let previous = previousState, previous != state, let music = build(previous), !music.entries.isEmpty {
      report(.problem("state \"\(state)\" has nothing left that plays: the music of \"\(previous)\" goes on"))
      let current = currentState
      applyStateChange(previous, spec: spec, cause: nil, built: music)
      // The game's state is still the one it asked for; only the music is borrowed.
      currentState = current
    } else {
      report(.problem("state \"\(state)\" has nothing left that plays, and no music before it: silence"))
    }
  }

  /// Forgets the change to `state` that was not heard (its held report, its landing) and
  /// returns the state heard instead.
  private func forgetChange(to state: String) -> String? {
    dropHeldChange(to: state)
    defer { pendingLanding = nil }
    return pendingLanding?.state ?? previousState
  }

  /// Drops the `stateChanged` report of a change to `state` that waits for its time: it will
  /// not be heard.
  private func dropHeldChange(to state: String) {
    dropReports {
      if case .stateChanged(_, let to, _, _, _) = $0.kind, to == state, isAhead($0) { return true }
      return false
    }
  }

  /// A report still to come: stamped later than now, or, while paused, waiting for a line of the
  /// music (see `takeDueReports`; its time, reckoned before the pause, can be past: a change
  /// called off while paused past it came out after the resume).
  private func isAhead(_ report: DirectorReport) -> Bool {
    report.time > now || (pausedAt.map { report.time > $0 && report.decidedAt < report.time } ?? false)
  }

  /// Drops the reports held or waiting in the outbox that `matches`: they will not be heard. The
  /// place a rule's report goes to (`fireMark`) moves with the reports removed before it.
  private func dropReports(where matches: (DirectorReport) -> Bool) {
    heldReports.removeAll(where: matches)
    if let mark = fireMark { fireMark = mark - outbox.prefix(mark).filter(matches).count }
    outbox.removeAll(where: matches)
  }

  /// Undoes the change to `state`, whose music did not start while the music before it played
  /// on (the player took its queue back): the state, its volume, rate and layers are the ones
  /// heard again, and the rules see that state. `reason`: why it could not start (a problem
  /// report); nil when it was called off.
  private func takeBackChange(to state: String, reason: String?) {
    guard let heard = forgetChange(to: state), let music = sheet.states[heard] else {
      if let reason { report(.problem("state \"\(state)\" cannot start: \(reason); what played goes on")) }
      return
    }
    currentState = heard
    statePriority = music.priority
    lastReportedState = heard
    // The item heard all along is the one playing again: no "now playing" for it (one was
    // reported, the item unchanged, each time a change was called off).
    if let item = player.nowPlayingItem {
      lastNowPlaying = item
      lastNowPlayingEntry = player.nowPlayingEntryID
    }
    playingOrder = playingOrderBeforeChange
    bakedVolume = bakedVolumeBeforeChange
    stateVolume.set(Double(music.volume) / bakedVolume)
    bakedRate = bakedRateBeforeChange
    stateRate.set(Double(music.rate) / bakedRate)
    layeredState = heard
    layerNames = music.layers.map(\.name)
    lastLayerMix = nil
    applyLayerMix()
    guard let reason else { return }
    report(
      .problem(
        "state \"\(state)\" cannot start: \(reason); the music of \"\(heard)\" goes on, and the "
          + "state is \"\(heard)\" again"))
  }

  /// Undoes a bridge's hand-over to the music of `state`, its state, still waiting for the
  /// bridge's end (the player took its queue back): the bridge is the music heard, on the
  /// player again, so a change to another state goes from it, on its grid, and what the bridge
  /// led to never comes. That change used to be reckoned on the state's music, not begun: it cut
  /// in at once, off the grid (or, once the mixer waited for that music, it came after it).
  private func takeBackHandOver(in state: String) {
    // Its "now playing" waits for its time with the other held reports: it will not be heard.
    dropReports {
      if case .nowPlaying = $0.kind, $0.time > now { return true }
      return false
    }
    lastReportedState = forgetChange(to: state)
    if let item = player.nowPlayingItem {
      lastNowPlaying = item
      lastNowPlayingEntry = player.nowPlayingEntryID
    }
    playingOrder = playingOrderBeforeChange
    bakedVolume = bakedVolumeBeforeChange
    bakedRate = bakedRateBeforeChange
    if let music = sheet.states[state] {
      stateVolume.set(Double(music.volume) / bakedVolume)
      stateRate.set(Double(music.rate) / bakedRate)
    }
    // A bridge has no layers.
    layeredState = nil
    layerNames = []
    lastLayerMix = nil
  }

  /// The state whose music the last `stateChanged` report announced.
  private var lastReportedState: String?

  /// Where incoming music starts, in seconds of its file (nil: its start).
  /// `at`: the outgoing item's position when the incoming one is heard (nil: now).
  private func entryPosition(
    _ entry: TransitionSpec.Entry, for item: MediaItem, outgoing: MediaItem?, at: Double? = nil
  ) -> Double? {
    switch entry {
    case .start:
      return nil
    case .loopStart:
      guard let frame = item.loopStartFrame, let rate = item.sampleRate, rate > 0 else { return nil }
      return Double(frame) / Double(rate)
    case .samePosition:
      guard outgoing != nil else { return nil }
      // Where the outgoing item is when the incoming one is heard: on the same mix frame.
      var position = at ?? playingPosition
      if let duration = item.playbackDuration, duration > 0 {
        position = position.truncatingRemainder(dividingBy: duration)
      }
      return position
    case .cuePoint:
      let source = origins[item.assetURL.path].flatMap { sheet.sources[$0.source] }
      let duration = item.playbackDuration ?? .infinity
      let points = (source?.cuePointsSeconds ?? []).filter { $0 < duration }
      if !points.isEmpty { return points.randomElement(using: &generator) }
      let grid = self.grid(for: item)
      let bars = Int(((duration.isFinite ? duration : grid.secondsPerBar) - grid.offsetSeconds) / grid.secondsPerBar)
      guard bars > 1 else { return nil }
      return grid.offsetSeconds + Double(Int.random(in: 0..<bars, using: &generator)) * grid.secondsPerBar
    }
  }

  /// "duck -6 dB (attack 0.1 s, hold 1 s, release 0.5 s)".
  private static func describe(_ duck: DuckAction) -> String {
    "duck \(format(duck.decibels)) dB (attack \(format(duck.attackSeconds)) s, hold \(format(duck.holdSeconds)) s, release \(format(duck.releaseSeconds)) s)"
  }

  /// What a stinger's report adds to its name: its volume when not 1 and its duck, the two
  /// things a designer tunes on it (a report that left them out could not tell a save that took
  /// from one that did not).
  private static func mixNote(_ stinger: StingerAction) -> String {
    var parts: [String] = []
    if stinger.volume != 1 { parts.append("volume \(format(Double(stinger.volume)))") }
    if let duck = stinger.duck { parts.append(describe(duck)) }
    return parts.isEmpty ? "" : ", " + parts.joined(separator: ", ")
  }

  private func playStinger(_ stinger: StingerAction, cause: LevelEvent?) -> String {
    let line = gridLineHeard(stinger.moment)
    let at = line?.at ?? now
    // The same stinger twice on one frame (two cues in one update, or a second cue while the
    // first one's stinger waits for the same beat) plays once: the copy would only double its
    // level, 6 dB over what the designer set, into the limiter.
    let halfFrame = 0.5 / Double(engine.sampleRate)
    let waiting = scheduled.contains {
      guard case .stinger(let name, _, _, _, _, _) = $0.work else { return false }
      return name == stinger.sound && abs($0.time - at) < halfFrame
    }
    if waiting || (at <= now + halfFrame && stingerStartedNow[stinger.sound] == now) {
      return
        "stinger \"\(stinger.sound)\" (\(Self.format(at)) s): the same stinger starts on that frame already, and plays once"
    }
    let item: MediaItem
    if stinger.isSource {
      guard let items = resolved[stinger.sound]?.items, !items.isEmpty else {
        return
          "stinger \"\(stinger.sound)\": the source gives nothing (\(resolved[stinger.sound]?.unavailableReason ?? "unknown"))"
      }
      let turn = stingerTurns[stinger.sound, default: 0]
      stingerTurns[stinger.sound] = turn + 1
      item = items[turn % items.count]
    } else {
      guard let file = catalog.item(relativePath: stinger.sound) else {
        return "stinger \"\(stinger.sound)\": no such bundled file"
      }
      item = file
    }
    if at > now + halfFrame {
      // Opened now, and started by the mixer on the frame where the music reaches the line (its
      // duck and its report wait for that time here).
      var prepared: Player?
      if let start = line?.start {
        do {
          let early = try Player(engine: engine, item: item)
          early.volume = stinger.volume
          // Its duck starts where the mixer starts it, on the same frame live and offline.
          let ducking = stinger.duck.map { (group: player.duckGroup, shape: duckShape($0)) }
          if let landing = seekLandingFrame {
            // A seek lands before the line: the mixer looks for the line from the frame after it,
            // where the music moves on from the target. Before it, music sought back to before
            // the line was past it already, and the stinger started at once.
            engine.performing(atMixFrame: landing + 1) { early.play(when: start, ducking: ducking) }
          } else {
            early.play(when: start, ducking: ducking)
          }
          prepared = early
        } catch {
          return "stinger \"\(stinger.sound)\": \(error)"
        }
      }
      let work = Work.stinger(
        name: stinger.sound, item: item, volume: stinger.volume, duck: stinger.duck, prepared: prepared,
        moment: line?.start == nil ? nil : stinger.moment)
      schedule(work, at: at, cause: cause)
      let fallback = player.nowPlayingItem.flatMap { gridNoteOnce(for: $0) }.map { "; \($0)" } ?? ""
      return
        "stinger \"\(stinger.sound)\" on the \(stinger.moment.rawValue) (\(Self.format(at)) s)\(Self.mixNote(stinger))\(fallback)"
    }
    let work = Work.stinger(name: stinger.sound, item: item, volume: stinger.volume, duck: stinger.duck, prepared: nil)
    if stingerStartedNow.values.contains(where: { $0 != now }) { stingerStartedNow.removeAll() }
    stingerStartedNow[stinger.sound] = now
    run(Scheduled(time: now, order: 0, work: work, cause: cause))
    return "stinger \"\(stinger.sound)\"\(Self.mixNote(stinger))"
  }

  private func seek(_ target: SeekTarget, fadeSeconds: Double, cause: LevelEvent?) -> String {
    if stopEndsAt != nil,
      scheduled.contains(where: {
        switch $0.work {
        case .changeState, .playQueue: return true
        default: return false
        }
      })
    {
      seekAfterTheStop = stopEndsAt.map { (target, $0) }
      return "seek to \(Self.describe(target)): where the music after the stop starts"
    }
    guard let item = player.nowPlayingItem else { return "seek: nothing is playing" }
    if var bridge = pendingBridge, let state = currentState, bridge.state == state {
      // While a change waits for its line, a seek moves where the new music starts (see
      // `retimeGridStingers`), and with a bridge that music is the state's, after the bridge:
      // the bridge plays whole. It moved the bridge's piece, not begun: a seek to 5 s in a
      // 3.5 s fanfare left nothing of it, and the state's music cut in on the bar instead.
      bridge.seek = target
      pendingBridge = bridge
      return "seek to \(Self.describe(target)): where \"\(state)\"'s music starts, after the bridge"
    }
    // Not before the entry's start: a player's song starts where its sound begins (the player
    // would take a seek before that there anyway).
    let seconds = max(Self.seconds(of: target, in: item), player.nowPlayingStartSeconds)
    if fadeSeconds <= Voice.transportFadeSeconds {
      player.currentPlaybackTime = seconds
      retimeGridStingers(afterJumpTo: seconds)
    } else {
      // Down, jump, back up: the dip is the fade, split either side of the jump.
      fade.move(to: 0, over: fadeSeconds / 2, at: now)
      schedule(.seek(seconds: seconds, fadeBackSeconds: fadeSeconds / 2), at: now + fadeSeconds / 2, cause: cause)
    }
    return "seek to \(Self.format(seconds)) s"
  }

  /// Where `target` is in `item`, in seconds of its file.
  private static func seconds(of target: SeekTarget, in item: MediaItem) -> Double {
    switch target {
    case .seconds(let value): return value
    case .start: return 0
    case .loopStart:
      return item.loopStartFrame.flatMap { frame in item.sampleRate.map { Double(frame) / Double($0) } } ?? 0
    }
  }

  private static func describe(_ target: SeekTarget) -> String {
    switch target {
    case .seconds(let value): return "\(format(value)) s"
    case .start: return "its start"
    case .loopStart: return "its loop start"
    }
  }

  // MARK: - Scheduled work

  /// The music was just moved to `seconds` of its file: a stinger waiting for a line of it that
  /// is now heard after the jump starts on the first line after the jump (the mixer moves its
  /// start there, see `StartTrigger.repositionsSeen`), so its duck and its report move there
  /// too. They stayed on the line before the jump, which never came (or came round again much
  /// later).
  private func retimeGridStingers(afterJumpTo seconds: Double) {
    // While a change waits for its line, a seek moves where the new music starts, not the music
    // heard (see `QueuePlayer`): what waits on the music heard stays where it was.
    if let pending = pendingLanding, isWaiting(pending.heardAt) { return }
    guard let playing = player.nowPlayingItem else { return }
    let landsAt = now + Voice.transportFadeSeconds
    let rate = max(0.01, player.musicSpeed)
    var moved = false
    for index in scheduled.indices where scheduled[index].time > landsAt {
      guard case .stinger(_, _, _, _, _, let moment?) = scheduled[index].work else { continue }
      let line = gridLine(of: playing, after: seconds, moment).line
      scheduled[index].time = landsAt + (line - seconds) / rate
      moved = true
    }
    if moved { scheduled.sort { ($0.time, $0.order) < ($1.time, $1.order) } }
  }

  private func schedule(_ work: Work, at time: Double, cause: LevelEvent?) {
    scheduleCounter += 1
    scheduled.append(Scheduled(time: time, order: scheduleCounter, work: work, cause: cause))
    scheduled.sort { ($0.time, $0.order) < ($1.time, $1.order) }
  }

  private func cancelScheduled(where matches: (Work) -> Bool) {
    scheduled.removeAll { matches($0.work) }
  }

  private func run(_ item: Scheduled) {
    switch item.work {
    case .changeState(let name, let spec, _):
      let seek = seekAfterTheStop.flatMap { abs($0.at - item.time) < 1e-6 ? $0.target : nil }
      seekAfterTheStop = nil
      applyStateChange(name, spec: spec, cause: item.cause, seek: seek)
    case .stinger(let name, let file, let volume, let duck, let prepared, _):
      do {
        let stinger = try prepared ?? Player(engine: engine, item: file)
        if prepared == nil {
          stinger.volume = volume
          stinger.play()
        }
        stingers.append(stinger)
        // A stinger the mixer started on its line took its duck with it (`play(when:ducking:)`).
        if let duck, prepared == nil { player.duck(duckShape(duck)) }
        report(.stinger(name: name, item: file), cause: item.cause)
      } catch {
        report(.problem("stinger \"\(name)\": \(error)"), cause: item.cause)
      }
    case .pause:
      player.pause()
      pausedAt = now
      holdStingersOnTheMusic()
    case .stop:
      player.stop()
      pausedAt = nil
      // Stingers held for a line of the music stopped: it will not get there.
      stingersHeldThroughPause.removeAll()
      dropWaitingChange()
      lastReportedState = nil
    case .seek(let seconds, let fadeBack):
      player.currentPlaybackTime = seconds
      retimeGridStingers(afterJumpTo: seconds)
      fade.move(to: 1, over: fadeBack, at: now)
    case .playQueue(let queue):
      let seek = seekAfterTheStop.flatMap { abs($0.at - item.time) < 1e-6 ? $0.target : nil }
      seekAfterTheStop = nil
      applyQueue(queue, cause: item.cause, seek: seek)
    }
  }

  // MARK: - The mix

  /// The mix's speed (its rate times its tempo, as `applyMix` posts them) at director time
  /// `time`, as the ramps and parameter curves set now will make it.
  private func mixSpeed(at time: Double) -> Double {
    let drives = parameterDrives(at: time)
    let rate = stateRate.value(at: time) * rateLevel.value(at: time) * drives.rate
    let tempo = tempoLevel.value(at: time) * drives.tempo
    let lowest = Double(Voice.rateRange.lowerBound)
    let highest = Double(Voice.rateRange.upperBound)
    return max(lowest, min(highest, rate)) * max(0.5, min(2, tempo))
  }

  /// What the game parameters' curves multiply the whole music's volume, rate, tempo and
  /// low-pass by at director time `time` (drives of a layer are `applyLayerMix`'s).
  private func parameterDrives(at time: Double) -> (volume: Double, rate: Double, tempo: Double, lowPass: Double) {
    var levels = (volume: 1.0, rate: 1.0, tempo: 1.0, lowPass: 1.0)
    for spec in sheet.parameters {
      guard let value = parameters[spec.name]?.value(at: time) else { continue }
      for drive in spec.drives where drive.layer == nil {
        let level = drive.curve.value(at: value)
        switch drive.target {
        case .volume: levels.volume *= max(0, min(1, level))
        case .rate: levels.rate *= level
        case .tempo: levels.tempo *= level
        case .lowpass: levels.lowPass *= max(0, min(1, level))
        }
      }
    }
    return levels
  }

  /// When the last ramp that moves the music's speed ends (at or before `now`: none moves).
  private var speedSettlesAt: Double {
    var ends = [stateRate, rateLevel, tempoLevel].map { $0.start + $0.duration }
    for spec in sheet.parameters
    where spec.drives.contains(where: { $0.layer == nil && ($0.target == .rate || $0.target == .tempo) }) {
      if let ramp = parameters[spec.name] { ends.append(ramp.start + ramp.duration) }
    }
    return ends.max() ?? now
  }

  /// Director seconds from now until the playing music has moved `distance` seconds through its
  /// file, at the speeds its ramps will give it: a tempo or rate ramp under way, or one the rule
  /// firing now has just set (see `fire`). Grid lines and item ends were reckoned at the speed
  /// last posted, so a bar cued with "tempo 1" after an enraged 1.15 was announced 0.12 s early,
  /// and a bridge's music, handed on at that estimate, cut in before the bridge was heard.
  private func timeToPlay(_ distance: Double) -> Double {
    let baked = bakedSpeed
    func speed(_ time: Double) -> Double { max(0.01, baked * mixSpeed(at: time)) }
    guard distance > 0 else { return distance / speed(now) }
    // At most a minute of ramps is stepped through, in at most 256 steps (the director may run
    // on the game's thread); the rest goes at the speed reached. A speed moves in straight lines
    // (or products of two), which the midpoint of each step follows closely.
    let settles = min(speedSettlesAt, now + 60)
    let step = max(0.005, (settles - now) / 256)
    var time = now
    var left = distance
    while time < settles {
      let moved = speed(time + step / 2) * step
      if moved >= left { return time - now + left / speed(time + step / 2) }
      left -= moved
      time += step
    }
    return time - now + left / speed(time)
  }

  /// The music's speed at director time `time`, as `timeToPlay` reckons it.
  private func musicSpeed(at time: Double) -> Double { max(0.01, bakedSpeed * mixSpeed(at: time)) }

  /// The part of the playing music's speed the mix does not set (a state's rate baked into its
  /// entries): the player's speed over the mix's, as last posted.
  private var bakedSpeed: Double {
    let posted = lastMix.map { Double($0.rate) * Double($0.tempo) } ?? 1
    return max(0.01, player.musicSpeed) / max(1e-6, posted)
  }

  /// A duck as the mixer plays it: on the music (the player's voices), frame by frame, from the
  /// frame it starts on. The director once stepped its own envelope every few milliseconds; a
  /// duck with a stinger on the beat then started where the director reckoned the beat, which
  /// during a tempo or rate ramp was up to a millisecond from where the mixer started the hit,
  /// and came out differently live and offline.
  private func duckShape(_ duck: DuckAction) -> DuckShape {
    DuckShape(
      decibels: duck.decibels, attackSeconds: duck.attackSeconds, holdSeconds: duck.holdSeconds,
      releaseSeconds: duck.releaseSeconds, sampleRate: engine.sampleRate)
  }

  /// Steps the music's gain, rate and low-pass filter to where the ramps, the held duck and parameter
  /// curves put them now. Posted only when they change.
  private func applyMix() {
    let drives = parameterDrives(at: now)
    var gain = stateVolume.value(at: now) * volumeLevel.value(at: now) * fade.value(at: now)
    gain *= heldDuck.value(at: now) * drives.volume
    let rate = stateRate.value(at: now) * rateLevel.value(at: now) * drives.rate
    let tempo = tempoLevel.value(at: now) * drives.tempo
    let lowPass = drives.lowPass
    applyLayerMix()
    let mix = (
      // Above 1 only when a reload raised the volume of the state that plays over what its
      // queue has baked in (see `putOnPlayer`).
      gain: Float(max(0, min(1 / Self.leastBakedVolume, gain))),
      rate: Float(max(Double(Voice.rateRange.lowerBound), min(Double(Voice.rateRange.upperBound), rate))),
      tempo: Float(max(0.5, min(2, tempo))),
      lowPass: Float(lowPass)
    )
    if let last = lastMix, last == mix { return }
    if lastMix?.rate != mix.rate || lastMix?.tempo != mix.tempo {
      postedSpeeds.append((now, Double(mix.rate) * Double(mix.tempo)))
      if postedSpeeds.count > 1, let cut = postedSpeeds.lastIndex(where: { $0.time < now - 1 }), cut > 0 {
        postedSpeeds.removeFirst(cut)
      }
    }
    if lastMix?.gain != mix.gain { player.setMixGain(mix.gain) }
    if lastMix?.rate != mix.rate { player.setMixRate(mix.rate) }
    if lastMix?.tempo != mix.tempo { player.setMixTempo(mix.tempo) }
    if lastMix?.lowPass != mix.lowPass { player.lowPassGain = mix.lowPass }
    lastMix = mix
  }

  /// Steps each layer of the playing state's music to where the parameters' curves put it (drives
  /// with a `layer`: their values multiply, per layer). Posted only when something changed.
  private func applyLayerMix() {
    guard !layerNames.isEmpty else { return }
    var gains = [Float](repeating: 1, count: layerNames.count)
    var lowPasses = [Float](repeating: 1, count: layerNames.count)
    for spec in sheet.parameters {
      guard let value = parameters[spec.name]?.value(at: now) else { continue }
      for drive in spec.drives {
        guard let layer = drive.layer, let index = layerNames.firstIndex(of: layer) else { continue }
        let level = Float(max(0, min(1, drive.curve.value(at: value))))
        switch drive.target {
        case .volume: gains[index] *= level
        case .lowpass: lowPasses[index] *= level
        case .rate, .tempo: break  // refused by the cue file's check: the layers of a piece share its speed
        }
      }
    }
    if let last = lastLayerMix, last.gains == gains, last.lowPasses == lowPasses { return }
    player.setLayerMix(gains: gains, lowPasses: lowPasses)
    lastLayerMix = (gains, lowPasses)
  }

  /// Reports a new now-playing item. Runs on every update (200 times a second on the director's
  /// thread while music plays), so it compares the queue's entry number, not items.
  private func noticeNowPlaying() {
    let entry = player.nowPlayingEntryID
    guard entry != lastNowPlayingEntry else { return }
    guard player.playbackState == .playing, let item = player.nowPlayingItem else { return }
    lastNowPlayingEntry = entry
    guard item != lastNowPlaying else { return }
    lastNowPlaying = item
    let origin = origins[item.assetURL.path]
    // At the time it was first heard (the queue moved on by itself a step or a notification
    // before the director looked: reported that much late, 25 ms in a trial's timeline).
    let heardAt = player.nowPlayingSinceFrame.map {
      min(now, Double($0 - mixFrameOrigin) / Double(engine.sampleRate))
    }
    report(.nowPlaying(item: item, source: origin?.source, isUserMusic: origin?.isUserMusic ?? false), at: heardAt)
  }

  /// What each voice of the director plays (music and stingers), for the timeline's lanes.
  /// The layers of the state heard now, and the slot of the voice that plays them.
  var layerSnapshot: (names: [String], slot: Int?) { (layerNames, layerNames.isEmpty ? nil : player.currentVoiceSlot) }

  var voiceItems: [Int: (item: MediaItem, isStinger: Bool)] {
    var items = player.voiceItems.mapValues { (item: $0, isStinger: false) }
    for stinger in stingers {
      if let item = stinger.item, let slot = stinger.slot { items[slot] = (item, true) }
    }
    return items
  }

  // MARK: - Reports

  func report(_ kind: DirectorReport.Kind, cause: LevelEvent? = nil, at time: Double? = nil) {
    outbox.append(DirectorReport(time: time ?? now, decidedAt: now, event: cause, kind: kind))
  }

  /// Reports stamped later than `now` (a state change waiting for its bar), held until then.
  private var heldReports: [DirectorReport] = []

  /// The reports due by `now`, in the order of the audio times they carry (ties in the order
  /// made). A report stamped in the future waits until the director reaches its time, so the
  /// game hears of a change when it sounds, and one cue's reports (the rule, its stinger on the
  /// beat, the state change on the bar) arrive in time order across steps.
  func takeDueReports() -> [DirectorReport] {
    guard !outbox.isEmpty || !heldReports.isEmpty else { return [] }
    // A hair of slack: a change stamped at this step's own frame counts as due now.
    let horizon = now + 1e-9
    var due: [(order: Int, report: DirectorReport)] = []
    var held: [DirectorReport] = []
    for (order, report) in (heldReports + outbox).enumerated() {
      // Paused: what waits for a line of the music waits on with it (see `deferWaitingMusic`).
      let waitsOnMusic = pausedAt.map { report.time > $0 && report.decidedAt < report.time } ?? false
      if report.time <= horizon && !waitsOnMusic { due.append((order, report)) } else { held.append(report) }
    }
    heldReports = held
    outbox.removeAll(keepingCapacity: true)
    return due.sorted { ($0.report.time, $0.order) < ($1.report.time, $1.order) }.map(\.report)
  }

  /// Where each item came from (the timeline and the demo say "user song" or "bundled").
  func origin(of item: MediaItem) -> (source: String, isUserMusic: Bool)? { origins[item.assetURL.path] }

  /// The music state whose music plays (it can lag `currentState` while a transition waits for
  /// the grid).
  var audibleState: String? {
    if let pending = pendingLanding, isWaiting(pending.heardAt) { return pending.state }
    return lastReportedState
  }

  /// The item heard now while a state change waits for its grid line (the outgoing music; the
  /// player's queue is the new one already). Nil when none waits: the player's now-playing item
  /// is the one heard.
  var itemHeardBeforeLanding: MediaItem? {
    guard let pending = pendingLanding, isWaiting(pending.heardAt) else { return nil }
    return pending.item
  }

  /// A number for a report: whole numbers without a point, others to three decimals at most
  /// ("0.9", "1.25"). Cheap: it runs for every action of every event (no `String(format:)`, no
  /// regular expression: those cost most of an event's time in the benchmark).
  static func format(_ value: Double) -> String {
    guard value.isFinite else { return "\(value)" }
    let rounded = (value * 1000).rounded() / 1000
    if rounded == rounded.rounded() && abs(rounded) < 1e15 { return String(Int64(rounded)) }
    return "\(rounded)"
  }
}
