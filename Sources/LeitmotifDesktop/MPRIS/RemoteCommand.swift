import FoundationEssentials
import LeitmotifCues
import LeitmotifLibrary
import LeitmotifPlayers

/// A command from outside the game: a media key, the desktop's "now playing" controls,
/// `playerctl`. MediaPlayer's remote commands (`MPRemoteCommandCenter`'s play, pause,
/// togglePlayPause, stop, nextTrack, previousTrack, changePlaybackPosition), as MPRIS sends them.
public enum RemoteCommand: Sendable, Hashable {
  case play, pause, togglePlayPause, stop, nextTrack, previousTrack
  /// MPRIS `Seek`: by this many seconds from where the music is (negative: back).
  case seek(by: Double)
  /// MPRIS `SetPosition`: to this many seconds into the item playing.
  case changePlaybackPosition(to: Double)

  /// The cue file's name for the key (`mediaKeys`), for the six keys.
  public var mediaKey: MediaKey? {
    switch self {
    case .play: return .play
    case .pause: return .pause
    case .togglePlayPause: return .playPause
    case .stop: return .stop
    case .nextTrack: return .next
    case .previousTrack: return .previous
    case .seek, .changePlaybackPosition: return nil
    }
  }
}

/// Who decides what a remote command does, and whether the desktop shows it as possible. Called
/// on the MPRIS service's own thread (never the game's or the mixer's); each call returns at once
/// (the players' calls only post to the engine).
public struct RemoteCommandHandler: Sendable {
  /// Carries `command` out; false when it did nothing (the caller is told so).
  public var perform: @Sendable (RemoteCommand) -> Bool
  /// Whether `command` would do something now (MPRIS's CanGoNext, CanPlay, ...).
  public var isEnabled: @Sendable (RemoteCommand) -> Bool
  /// Whether the desktop may set the queue's repeat and shuffle (MPRIS `LoopStatus`,
  /// `Shuffle`): a music player's yes; a director's no (the score is the game's: "repeat none"
  /// from a panel applet ended a state's music in silence after its piece).
  public var setsRepeatAndShuffle: Bool
  /// What is heard, when it is not the player's now-playing item (a director's queue holds the
  /// next state's music while the change waits for its bar): the item (nil: nothing) and the
  /// position in it. Nil: the player's own.
  public var heard: (@Sendable () -> (item: MediaItem?, position: TimeInterval))?

  public init(
    perform: @escaping @Sendable (RemoteCommand) -> Bool, isEnabled: @escaping @Sendable (RemoteCommand) -> Bool,
    setsRepeatAndShuffle: Bool = true, heard: (@Sendable () -> (item: MediaItem?, position: TimeInterval))? = nil
  ) {
    self.perform = perform
    self.isEnabled = isEnabled
    self.setsRepeatAndShuffle = setsRepeatAndShuffle
    self.heard = heard
  }

  /// A music player's own behaviour, for a game that plays a `QueuePlayer` as a player would:
  /// the keys do what they say, Next and Previous move through the queue.
  public static func queue(_ player: QueuePlayer) -> RemoteCommandHandler {
    RemoteCommandHandler(
      perform: { command in
        switch command {
        case .nextTrack: return (try? player.skipToNextItem()) != nil
        case .previousTrack: return (try? player.skipToPreviousItem()) != nil
        default: return transport(command, player)
        }
      },
      isEnabled: { command in
        switch command {
        case .nextTrack, .previousTrack, .seek, .changePlaybackPosition: return player.nowPlayingItem != nil
        default: return !player.queue.isEmpty
        }
      })
  }

  /// What a music player does, for any player: a `QueuePlayer` as `queue(_:)`; a one-item
  /// `Player` plays, pauses, stops and seeks, and has no next or previous.
  public static func playback(_ player: any MediaPlayback) -> RemoteCommandHandler {
    if let queue = player as? QueuePlayer { return .queue(queue) }
    return RemoteCommandHandler(
      perform: { command in transport(command, player) },
      isEnabled: { command in
        switch command {
        case .nextTrack, .previousTrack: return false
        default: return player.nowPlayingItem != nil
        }
      })
  }

  /// Play, pause, stop and seek on any player, as their names say; false for next and previous
  /// (a queue's) and for a seek with nothing playing.
  private static func transport(_ command: RemoteCommand, _ player: any MediaPlayback) -> Bool {
    switch command {
    case .play: player.play()
    case .pause: player.pause()
    case .togglePlayPause: player.playbackState == .playing ? player.pause() : player.play()
    case .stop: player.stop()
    case .nextTrack, .previousTrack: return false
    case .seek(let seconds):
      guard player.nowPlayingItem != nil else { return false }
      player.currentPlaybackTime = max(0, player.currentPlaybackTime + seconds)
    case .changePlaybackPosition(let seconds):
      guard player.nowPlayingItem != nil else { return false }
      player.currentPlaybackTime = max(0, seconds)
    }
    return true
  }

  /// The cue file's `mediaKeys` (read at each press, so a reload counts at once): `skip` moves
  /// through the player's own songs only, `pause` pauses and resumes the game's music, a cue is
  /// posted on the level-event bus. Seeking is the game's too: only in the player's own songs.
  ///
  /// Pause and resume go through the director (its `pause` and `resume` actions), as a rule's
  /// do: the keys used to pause and play the director's queue player behind its back, and Play
  /// after a rule's `stop` or `pause` said "Playing" over silence for the rest of the level
  /// (a desktop trial). Music the game stopped stays stopped: the keys resume a pause, they do
  /// not start a score the game ended.
  public static func director(_ director: Director) -> RemoteCommandHandler {
    let player = director.player
    @Sendable func action(_ command: RemoteCommand) -> MediaKeyAction? {
      command.mediaKey.map { director.sheet.mediaKeys[$0] ?? MediaKeyAction.defaults[$0] ?? .ignore }
    }
    @Sendable func playsUserMusic() -> Bool { director.nowPlaying?.isUserMusic ?? false }
    return RemoteCommandHandler(
      perform: { command in
        switch command {
        case .seek, .changePlaybackPosition:
          return playsUserMusic() && transport(command, player)
        default:
          switch action(command) {
          case .cue(let name): return director.post(name)
          case .skip:
            // Not while a change waits for its line: the player's queue is then the music not
            // heard yet (the `skip` action says the same).
            guard playsUserMusic(), !director.changeWaits else { return false }
            if command == .nextTrack { return (try? player.skipToNextItem()) != nil }
            return (try? player.skipToPreviousItem()) != nil
          case .pause:
            // Play and play-pause as they say; stop, next and previous set to `pause` pause.
            let paused = player.playbackState == .paused
            let resumes = command == .play || (command == .togglePlayPause && paused)
            if resumes {
              guard paused, director.currentState != nil else { return false }
              director.perform([.resume(fadeSeconds: 0)])
            } else {
              guard player.playbackState == .playing else { return false }
              director.perform([.pause(fadeSeconds: 0)])
            }
            return true
          case .ignore, nil: return false
          }
        }
      },
      isEnabled: { command in
        switch command {
        case .seek, .changePlaybackPosition: return playsUserMusic()
        default:
          switch action(command) {
          case .cue: return true
          case .pause:
            // While the game's music has a state (not after a stop): a press pauses or resumes it.
            // (CanPlay false while it plays made playerctl refuse play-pause, and metadata.)
            return director.currentState != nil
          case .skip: return playsUserMusic() && !director.changeWaits
          case .ignore, nil: return false
          }
        }
      },
      setsRepeatAndShuffle: false,
      // What is heard: a change waiting for its bar (or called off before it) is not shown
      // playing at 0:00 while the music before it plays on (a desktop trial).
      heard: { (director.nowPlaying?.item, director.nowPlayingPosition) })
  }
}
