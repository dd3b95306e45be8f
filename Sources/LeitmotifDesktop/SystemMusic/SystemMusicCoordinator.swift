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
/// Each thing it does reaches the engine's diagnostics as a notice naming the app.
public final class SystemMusicCoordinator: @unchecked Sendable {
  private let director: Director
  private let systemMusic: SystemMusicPlayer
  private let state = Mutex(State())
  private let active = Atomic<Bool>(true)

  private struct State {
    var gameWasPlaying = false
    /// Apps this coordinator paused, to resume: true once the app was seen paused. One seen
    /// playing (or stopped, or gone) after that was taken over by the player, and is dropped:
    /// the game resumes only what is still paused by its own hand.
    var pausedByGame: [String: Bool] = [:]
    /// The duck it holds now (decibels < 0), if any.
    var heldDuck: Double?
  }

  /// Starts following `director`'s music and `systemMusic`'s apps.
  public init(director: Director, systemMusic: SystemMusicPlayer) {
    self.director = director
    self.systemMusic = systemMusic
    systemMusic.everyTurn { [weak self] in self?.turn() }
  }

  deinit { shutdown() }

  /// The game ends: the apps it paused are resumed and a held duck is let go. Later turns do
  /// nothing. (The commands go out on the player's thread; `SystemMusicPlayer.shutdown` after
  /// this sends them before it leaves the bus.)
  public func shutdown() {
    guard active.exchange(false, ordering: .acquiringAndReleasing) else { return }
    let (paused, duck) = state.withLock { state in
      defer {
        state.pausedByGame = [:]
        state.heldDuck = nil
      }
      return (Set(state.pausedByGame.keys), state.heldDuck)
    }
    resume(paused, because: "the game ended")
    if duck != nil { director.perform([.holdDuck(decibels: 0, seconds: 0)]) }
  }

  private func turn() {
    guard active.load(ordering: .acquiring) else { return }
    let policy = director.sheet.systemMusic
    let gameState = director.player.playbackState
    let gamePlaying = gameState == .playing
    let apps = systemMusic.apps
    var toPause: [SystemMusicApp] = []
    var toResume: Set<String> = []
    var duckChange: Double?? = nil
    state.withLock { state in
      defer { state.gameWasPlaying = gamePlaying }
      for (name, confirmed) in state.pausedByGame {
        let now = apps.first { $0.busName == name }?.playbackState
        if now == .paused {
          state.pausedByGame[name] = true
        } else if confirmed || now == nil {
          state.pausedByGame[name] = nil
        }
      }
      if case .pause = policy, gamePlaying, !state.gameWasPlaying {
        toPause = apps.filter { $0.playbackState == .playing && $0.canPause && $0.canControl }
        for app in toPause { state.pausedByGame[app.busName] = false }
      }
      if gameState == .stopped, !state.pausedByGame.isEmpty {
        toResume = Set(state.pausedByGame.keys)
        state.pausedByGame = [:]
      }
      var wanted: Double?
      if case .duck(let decibels, _) = policy, apps.contains(where: { $0.playbackState == .playing }) {
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
      if case .duck(_, let given) = policy { seconds = given } else { seconds = SystemMusicPolicy.defaultDuckSeconds }
      director.perform([.holdDuck(decibels: change ?? 0, seconds: seconds)])
      let playing = apps.filter { $0.playbackState == .playing }.map(\.identity).joined(separator: ", ")
      notice(
        change.map { "the game's music ducks \(format(-$0)) dB under \(playing) (systemMusic: duck)" }
          ?? "the game's music comes back up: no music app plays")
    }
  }

  private func resume(_ names: Set<String>, because reason: String) {
    for app in systemMusic.apps where names.contains(app.busName) && app.playbackState == .paused {
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
