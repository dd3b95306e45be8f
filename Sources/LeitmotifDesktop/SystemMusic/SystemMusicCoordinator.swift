import FoundationEssentials
import LeitmotifCues
import LeitmotifEngine
import LeitmotifPlayers
import Synchronization

/// Carries out the cue file's `systemMusic` between the game's music and the player's own music
/// apps: leave them, pause them when the game's music starts (and resume them when it stops or
/// the game ends), or hold the game's music down while one plays.
///
/// It works on the `SystemMusicPlayer`'s thread, once a turn (every 50 ms at most): it reads the
/// director's player state and the cue file in force (so a reload counts at once) and sends
/// commands from there; the game's and the mixer's threads never wait on it.
///
/// - `pause`: when the game's music starts (stopped or paused, then playing), every app that
///   plays and can pause is paused. An app the player starts again while the game's music plays
///   is left alone: that is their choice, and the game forgets it paused it. When the game's
///   music stops (`stopped`, not a pause menu's `paused`), or at `shutdown`, the apps the game
///   paused and that stayed paused since are resumed.
/// - `duck`: while any app plays, the game's music is held down by the policy's decibels
///   (`Director.perform([.holdDuck])`), and let up when none plays or the policy changes.
///
/// An app answers a command when it announces its new state, some milliseconds later (a busy one
/// later still). Until that answer, or for 2 s at most, the coordinator counts the app in the
/// state it was told to take, so the game's music stopping and starting again in between still
/// pauses the app, and the late answer is not taken for the player's own choice. And it follows
/// every state an app reports, as it arrives, not only what a turn finds: the game's pause
/// answered and the player's own play a moment later can come together, and the play counts.
///
/// Each thing it does reaches the engine's diagnostics as a notice naming the app.
public final class SystemMusicCoordinator: @unchecked Sendable {
  private let director: Director
  private let systemMusic: SystemMusicPlayer
  private let state = Mutex(State())
  private let active = Atomic<Bool>(true)
  /// Its `SystemMusicPlayer` observer (every report, in order), removed at `shutdown`.
  private var observer: UInt64 = 0

  private struct State {
    var gameWasPlaying = false
    /// Apps this coordinator paused, to resume: true once the app was seen paused. One seen
    /// playing (or stopped, or gone) after that was taken over by the player, and is dropped:
    /// the game resumes only what is still paused by its own hand.
    var pausedByGame: [String: Bool] = [:]
    /// The duck it holds now (decibels < 0), if any.
    var heldDuck: Double?
    /// The state each app was last told to take, until it reports that state. An app answers a
    /// command a few milliseconds later; until then its last report is older than the command,
    /// and reading it would undo the game's own work (a Play just sent still reads "paused", so
    /// the game's music starting again would not pause it, and its "playing" a moment later
    /// would look like the player's own choice).
    var expected: [String: Expectation] = [:]

    struct Expectation {
      var state: PlaybackState
      /// The app's `playbackStateReports` when the command went out: only a later report answers it.
      var reportsBefore: UInt64
      /// An app that never answers (it ignored the command) is read as it reports after this.
      var until: Double
    }

    /// How long an unanswered command stands in for the app's own report.
    static let answerSeconds = 2.0

    /// `app`'s state as the coordinator counts it: what it was told, until it answers.
    mutating func state(of app: SystemMusicApp, at now: Double) -> PlaybackState {
      guard let expectation = expected[app.busName] else { return app.playbackState }
      let answered = app.playbackStateReports > expectation.reportsBefore && app.playbackState == expectation.state
      if answered || now >= expectation.until {
        expected[app.busName] = nil
        return app.playbackState
      }
      return expectation.state
    }

    mutating func expect(_ state: PlaybackState, of app: SystemMusicApp, at now: Double) {
      expected[app.busName] = Expectation(
        state: state, reportsBefore: app.playbackStateReports, until: now + Self.answerSeconds)
    }

    /// Follows an app the game paused: confirmed once it reports itself paused; seen anything
    /// else after that (or gone), the player took it over and the game lets it be. `seen` is the
    /// state as counted (the command's, while it waits for an answer), `reported` the app's own
    /// last report: only a report confirms. The command's state confirmed it before, so an app
    /// that answered after the 2 s (a busy browser) read as taken over by the player the moment
    /// the wait ran out, and was never resumed (a desktop trial).
    mutating func settle(_ name: String, seen: PlaybackState?, reported: PlaybackState?) {
      guard let confirmed = pausedByGame[name] else { return }
      if reported == .paused && seen == .paused {
        pausedByGame[name] = true
      } else if seen == nil || (confirmed && seen != .paused) {
        pausedByGame[name] = nil
      }
    }

    /// One report of `app`'s, as it arrives: a turn sees only the last of several that came
    /// together (the game's pause answered and the player's own play at once), so each is
    /// followed here too.
    mutating func observe(_ app: SystemMusicApp, at now: Double) {
      guard pausedByGame[app.busName] != nil || expected[app.busName] != nil else { return }
      let seen = state(of: app, at: now)
      settle(app.busName, seen: seen, reported: app.playbackState)
    }

    /// The apps the game paused and that are paused still, to resume; forgets them all.
    mutating func takeResumable(_ apps: [SystemMusicApp], at now: Double) -> [SystemMusicApp] {
      let names = pausedByGame
      pausedByGame = [:]
      var resumable: [SystemMusicApp] = []
      for app in apps where names[app.busName] != nil && state(of: app, at: now) == .paused {
        expect(.playing, of: app, at: now)
        resumable.append(app)
      }
      return resumable
    }
  }

  /// Starts following `director`'s music and `systemMusic`'s apps.
  public init(director: Director, systemMusic: SystemMusicPlayer) {
    self.director = director
    self.systemMusic = systemMusic
    systemMusic.everyTurn { [weak self] in self?.turn() }
    observer = systemMusic.addObserver { [weak self] event in
      guard let self, active.load(ordering: .acquiring) else { return }
      switch event {
      case .changed(let app):
        let now = SystemMusicApp.now()
        state.withLock { $0.observe(app, at: now) }
      case .commandFailed(let busName?, let error):
        refused(busName, error)
      default:
        break
      }
    }
  }

  deinit { shutdown() }

  /// The game ends: the apps it paused are resumed and a held duck is let go. Later turns do
  /// nothing. (The commands go out on the player's thread; `SystemMusicPlayer.shutdown` after
  /// this sends them before it leaves the bus.)
  public func shutdown() {
    guard active.exchange(false, ordering: .acquiringAndReleasing) else { return }
    systemMusic.removeObserver(observer)
    let apps = systemMusic.apps
    let now = SystemMusicApp.now()
    let (resumable, duck) = state.withLock { state in
      defer { state.heldDuck = nil }
      return (state.takeResumable(apps, at: now), state.heldDuck)
    }
    resume(resumable, because: "the game ended")
    if duck != nil { director.perform([.holdDuck(decibels: 0, seconds: 0)]) }
  }

  private func turn() {
    guard active.load(ordering: .acquiring) else { return }
    let policy = director.sheet.systemMusic
    let gameState = director.player.playbackState
    let gamePlaying = gameState == .playing
    let apps = systemMusic.apps
    let now = SystemMusicApp.now()
    var toPause: [SystemMusicApp] = []
    var toResume: [SystemMusicApp] = []
    var duckChange: Double?? = nil
    var playing: [SystemMusicApp] = []
    // The game's music not heard yet: a duck goes in at once, not over its seconds (the start
    // state's first half second played at full level over the player's app).
    var duckAtOnce = false
    state.withLock { state in
      duckAtOnce = !state.gameWasPlaying
      defer { state.gameWasPlaying = gamePlaying }
      state.expected = state.expected.filter { name, _ in apps.contains { $0.busName == name } }
      var current: [String: PlaybackState] = [:]
      for app in apps { current[app.busName] = state.state(of: app, at: now) }
      playing = apps.filter { current[$0.busName] == .playing }
      for name in state.pausedByGame.keys {
        state.settle(name, seen: current[name], reported: apps.first { $0.busName == name }?.playbackState)
      }
      if case .pause = policy, gamePlaying, !state.gameWasPlaying {
        toPause = playing.filter { $0.canPause && $0.canControl }
        for app in toPause {
          state.pausedByGame[app.busName] = false
          state.expect(.paused, of: app, at: now)
        }
      }
      if gameState == .stopped, !state.pausedByGame.isEmpty {
        toResume = state.takeResumable(apps, at: now)
      }
      var wanted: Double?
      if case .duck(let decibels, _) = policy, !playing.isEmpty {
        wanted = decibels
      }
      if wanted != state.heldDuck {
        duckChange = .some(wanted)
        state.heldDuck = wanted
      }
    }
    for app in toPause {
      systemMusic.pause(app.busName)
      notice("paused \(app.identity) (\(app.busName)): the game's music started (systemMusic: pause)")
    }
    resume(toResume, because: "the game's music stopped")
    if let change = duckChange {
      let seconds: Double
      if case .duck(_, let given) = policy {
        seconds = duckAtOnce ? 0 : given
      } else {
        seconds = SystemMusicPolicy.defaultDuckSeconds
      }
      director.perform([.holdDuck(decibels: change ?? 0, seconds: seconds)])
      let names = playing.map(\.identity).joined(separator: ", ")
      notice(
        change.map { "the game's music ducks \(format(-$0)) dB under \(names) (systemMusic: duck)" }
          ?? "the game's music comes back up: no music app plays")
    }
  }

  /// An app refused the game's pause or resume (or did not answer): it is not the game's to
  /// resume any more, and the log says so. It used to read "paused" with no word of the refusal
  /// while the app played on under the game's music (a desktop trial).
  private func refused(_ busName: String, _ error: DesktopBusError) {
    let what = state.withLock { state -> String? in
      defer { state.expected[busName] = nil }
      if state.pausedByGame[busName] == false {
        state.pausedByGame[busName] = nil
        return "pause"
      }
      return state.expected[busName]?.state == .playing ? "resume" : nil
    }
    guard let what else { return }
    let identity = systemMusic.apps.first { $0.busName == busName }?.identity ?? busName
    director.engine.report(
      Diagnostic(.warning, "\(identity) (\(busName)) did not \(what) for the game: \(error) (systemMusic: pause)"))
  }

  private func resume(_ apps: [SystemMusicApp], because reason: String) {
    for app in apps {
      systemMusic.play(app.busName)
      notice("resumed \(app.identity) (\(app.busName)): \(reason)")
    }
  }

  private func notice(_ message: String) { director.engine.report(Diagnostic(.notice, message)) }

  private func format(_ value: Double) -> String {
    value == value.rounded() ? String(Int(value)) : String(value)
  }
}

extension SystemMusicPolicy {
  /// The default duck's seconds, for letting a duck go after the policy changed.
  static var defaultDuckSeconds: Double {
    if case .duck(_, let seconds) = defaultDuck { return seconds }
    return 1
  }
}
