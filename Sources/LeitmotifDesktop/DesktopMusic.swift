import LeitmotifCues
import LeitmotifEngine

/// A game's music on the player's desktop, in one object: it shows on the desktop's media
/// controls with the media keys doing what the cue file's `mediaKeys` say (`NowPlayingService`),
/// and it follows the player's own music apps and carries out the cue file's `systemMusic`
/// (`SystemMusicPlayer` and `SystemMusicCoordinator`). What the demo, `leitmotif play` and the
/// C API's `lm_desktop_publish` / `lm_system_music_start` use.
///
/// Each part is optional and each needs the session bus: without one `init` throws
/// `DesktopBusError.noSessionBus`, once, and the game plays on without it.
public final class DesktopMusic: @unchecked Sendable {
  /// The game's MPRIS player (nil when not published).
  public let nowPlaying: NowPlayingService?
  /// The player's music apps (nil when not followed).
  public let systemMusic: SystemMusicPlayer?
  private let coordinator: SystemMusicCoordinator?

  /// - Parameters:
  ///   - director: the game's music.
  ///   - publish: how the game shows on the desktop; nil: it does not.
  ///   - followSystemMusic: follow the player's music apps and carry out the cue file's
  ///     `systemMusic` (a file that says `leave` makes this a list of the apps and nothing more).
  ///   - busAddress: the bus (nil: the session bus).
  public init(
    director: Director, publish: NowPlayingService.Configuration? = NowPlayingService.Configuration(),
    followSystemMusic: Bool = true, busAddress: String? = nil
  ) throws(DesktopBusError) {
    if var configuration = publish {
      if configuration.busAddress == nil { configuration.busAddress = busAddress }
      nowPlaying = try NowPlayingService(director: director, configuration: configuration)
    } else {
      nowPlaying = nil
    }
    if followSystemMusic {
      do {
        let system = try SystemMusicPlayer(busAddress: busAddress)
        systemMusic = system
        coordinator = SystemMusicCoordinator(director: director, systemMusic: system)
      } catch {
        nowPlaying?.shutdown()
        throw error
      }
    } else {
      systemMusic = nil
      coordinator = nil
    }
  }

  deinit { shutdown() }

  /// Leaves the desktop: the apps the game paused are resumed, then the game's player leaves
  /// the bus. Waits for both threads.
  public func shutdown() {
    coordinator?.shutdown()
    systemMusic?.shutdown()
    nowPlaying?.shutdown()
  }

  /// One line for a program's output: what the desktop now shows, or why not.
  public static func describe(_ result: Result<DesktopMusic, DesktopBusError>) -> String {
    switch result {
    case .success(let desktop):
      var parts: [String] = []
      if let service = desktop.nowPlaying { parts.append("on the desktop's media controls as \(service.busName)") }
      if let system = desktop.systemMusic {
        let apps = system.apps.map(\.identity)
        parts.append(apps.isEmpty ? "no music app running" : "music apps: " + apps.joined(separator: ", "))
      }
      return parts.joined(separator: "; ")
    case .failure(let error):
      return "not on the desktop's media controls (\(error))"
    }
  }
}
