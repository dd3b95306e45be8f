// The C API's desktop calls (leitmotif.h, "The desktop: media keys, now playing, and the
// player's own music apps"): the C side of `DesktopMusic`, `NowPlayingService` and
// `SystemMusicPlayer`. Conventions as in CAPI.swift: arguments checked, the engine found, the
// Swift API called, a thrown error turned into its code once, here.

import CLeitmotifHeader
import FoundationEssentials
import Leitmotif
import Synchronization

/// One engine's desktop parts, made by the calls and ended with the engine.
final class DesktopSession: @unchecked Sendable {
  private struct Parts {
    var nowPlaying: DesktopMusic?
    var systemMusic: DesktopMusic?
  }
  /// What exists now: read by the quick calls (apps, commands) under a short lock.
  private let parts = Mutex(Parts())
  /// Making and ending parts takes turns (two threads starting at once make one player); held
  /// across the bus's connect and a thread's end, so never taken by the quick calls.
  private let changing = Mutex(())

  func publish(_ director: Director, _ configuration: NowPlayingService.Configuration) throws(CAPIError) {
    try changing.withLock { _ throws(CAPIError) in try publishNow(director, configuration) }
  }

  private func publishNow(_ director: Director, _ configuration: NowPlayingService.Configuration) throws(CAPIError) {
    unpublishNow()
    let made: DesktopMusic
    do {
      made = try DesktopMusic(director: director, publish: configuration, followSystemMusic: false)
    } catch {
      throw unavailable(error)
    }
    parts.withLock { $0.nowPlaying = made }
  }

  func unpublish() { changing.withLock { _ in unpublishNow() } }

  private func unpublishNow() {
    let old = parts.withLock { parts in
      defer { parts.nowPlaying = nil }
      return parts.nowPlaying
    }
    old?.shutdown()
  }

  func startSystemMusic(_ director: Director, _ callbacks: Callbacks) throws(CAPIError) {
    try changing.withLock { _ throws(CAPIError) in try startSystemMusicNow(director, callbacks) }
  }

  private func startSystemMusicNow(_ director: Director, _ callbacks: Callbacks) throws(CAPIError) {
    guard parts.withLock({ $0.systemMusic == nil }) else { return }
    let made: DesktopMusic
    do {
      made = try DesktopMusic(director: director, publish: nil, followSystemMusic: true)
    } catch {
      throw unavailable(error)
    }
    made.systemMusic?.addObserver { event in callbacks.deliver(event) }
    parts.withLock { $0.systemMusic = made }
  }

  func stopSystemMusic() { changing.withLock { _ in stopSystemMusicNow() } }

  private func stopSystemMusicNow() {
    let old = parts.withLock { parts in
      defer { parts.systemMusic = nil }
      return parts.systemMusic
    }
    old?.shutdown()
  }

  func systemMusic() throws(CAPIError) -> SystemMusicPlayer {
    guard let player = parts.withLock({ $0.systemMusic?.systemMusic }) else {
      throw .wrongMode("the player's music apps are not followed: call lm_system_music_start first")
    }
    return player
  }

  func shutdown() {
    changing.withLock { _ in
      stopSystemMusicNow()
      unpublishNow()
    }
  }

  private func unavailable(_ error: DesktopBusError) -> CAPIError {
    CAPIError(error.code == .noSessionBus ? LM_ERROR_UNAVAILABLE : LM_ERROR_INVALID_ARGUMENT, "\(error)")
  }
}

/// Fills the caller's struct with what is known of `app` (its struct_size already checked).
func fill(_ out: UnsafeMutablePointer<lm_system_music_app>, with app: SystemMusicApp?, busName: String? = nil) {
  let size = MemoryLayout<lm_system_music_app>.size
  UnsafeMutableRawPointer(out).initializeMemory(as: UInt8.self, repeating: 0, count: size)
  out.pointee.struct_size = size
  var cut = false
  cut = CString.copy(app?.busName ?? busName, into: &out.pointee.bus_name) || cut
  cut = CString.copy(app?.identity, into: &out.pointee.identity) || cut
  let item = app?.nowPlaying
  out.pointee.has_item = item == nil ? 0 : 1
  cut = CString.copy(item?.title, into: &out.pointee.title) || cut
  cut = CString.copy(item.map { $0.artists.joined(separator: ", ") }, into: &out.pointee.artist) || cut
  cut = CString.copy(item?.album, into: &out.pointee.album) || cut
  cut = CString.copy(item?.artworkURL, into: &out.pointee.art_url) || cut
  cut = CString.copy(item?.url, into: &out.pointee.url) || cut
  out.pointee.truncated = cut ? 1 : 0
  switch app?.playbackState ?? .stopped {
  case .playing: out.pointee.playback_state = LM_PLAYBACK_PLAYING
  case .paused: out.pointee.playback_state = LM_PLAYBACK_PAUSED
  default: out.pointee.playback_state = LM_PLAYBACK_STOPPED
  }
  out.pointee.position_seconds = app?.currentPlaybackTime ?? -1
  out.pointee.duration_seconds = item?.playbackDuration ?? -1
  out.pointee.volume = app?.volume ?? -1
  out.pointee.can_control = app?.canControl == true ? 1 : 0
  out.pointee.can_play = app?.canPlay == true ? 1 : 0
  out.pointee.can_pause = app?.canPause == true ? 1 : 0
  out.pointee.can_go_next = app?.canGoNext == true ? 1 : 0
  out.pointee.can_go_previous = app?.canGoPrevious == true ? 1 : 0
  out.pointee.can_seek = app?.canSeek == true ? 1 : 0
  out.pointee.can_open_files = app?.canOpenFiles == true ? 1 : 0
}

@_cdecl("lm_desktop_publish")
public func lmDesktopPublish(
  _ handle: OpaquePointer?, _ identity: UnsafePointer<CChar>?, _ desktopEntry: UnsafePointer<CChar>?
) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    var configuration = NowPlayingService.Configuration()
    if let identity = try CString.optional(identity, "identity") {
      guard !identity.isEmpty else { throw .invalidArgument("identity is empty (NULL: \"Leitmotif\")") }
      configuration.identity = identity
      configuration.busName = identity
    }
    configuration.desktopEntry = try CString.optional(desktopEntry, "desktop_entry")
    try session.desktop.publish(session.director, configuration)
  }
}

@_cdecl("lm_desktop_unpublish")
public func lmDesktopUnpublish(_ handle: OpaquePointer?) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    try notInCallback(handle, "lm_desktop_unpublish")
    session.desktop.unpublish()
  }
}

@_cdecl("lm_system_music_start")
public func lmSystemMusicStart(_ handle: OpaquePointer?) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    try session.desktop.startSystemMusic(session.director, session.callbacks)
  }
}

@_cdecl("lm_system_music_stop")
public func lmSystemMusicStop(_ handle: OpaquePointer?) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    try notInCallback(handle, "lm_system_music_stop")
    session.desktop.stopSystemMusic()
  }
}

@_cdecl("lm_system_music_apps")
public func lmSystemMusicApps(
  _ handle: OpaquePointer?, _ apps: UnsafeMutablePointer<lm_system_music_app>?, _ capacity: Int,
  _ outCount: UnsafeMutablePointer<Int>?
) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    guard try cSize(capacity, "capacity") == 0 || apps != nil else {
      throw .invalidArgument("apps is NULL with capacity \(capacity)")
    }
    let stride = try apps.map { first throws(CAPIError) in try arrayStride(of: first, "lm_system_music_app") } ?? 0
    let list = try session.desktop.systemMusic().apps
    if let apps {
      let base = UnsafeMutableRawPointer(apps)
      for index in 0..<min(capacity, list.count) {
        fill((base + index * stride).assumingMemoryBound(to: lm_system_music_app.self), with: list[index])
      }
    }
    outCount?.pointee = list.count
  }
}

@_cdecl("lm_system_music_command")
public func lmSystemMusicCommand(
  _ handle: OpaquePointer?, _ busName: UnsafePointer<CChar>?, _ command: lm_remote_command, _ seconds: Double
) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    let name = try CString.optional(busName, "bus_name")
    let player = try session.desktop.systemMusic()
    let sent: Bool
    switch command {
    case LM_COMMAND_PLAY: sent = player.play(name)
    case LM_COMMAND_PAUSE: sent = player.pause(name)
    case LM_COMMAND_TOGGLE_PLAY_PAUSE: sent = player.togglePlayPause(name)
    case LM_COMMAND_STOP: sent = player.stop(name)
    case LM_COMMAND_NEXT: sent = player.skipToNextItem(name)
    case LM_COMMAND_PREVIOUS: sent = player.skipToPreviousItem(name)
    case LM_COMMAND_SEEK_BY:
      guard seconds.isFinite else { throw .invalidArgument("seconds \(seconds): expected a finite number") }
      sent = player.seek(by: seconds, in: name)
    case LM_COMMAND_SET_POSITION:
      guard seconds.isFinite, seconds >= 0 else { throw .invalidArgument("seconds \(seconds): expected 0 or more") }
      sent = player.setCurrentPlaybackTime(seconds, in: name)
    default: throw .invalidArgument("command \(command.rawValue): not an lm_remote_command value")
    }
    guard sent else { throw .invalidArgument(noApp(name)) }
  }
}

@_cdecl("lm_system_music_open")
public func lmSystemMusicOpen(
  _ handle: OpaquePointer?, _ busName: UnsafePointer<CChar>?, _ uri: UnsafePointer<CChar>?
) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    let name = try CString.optional(busName, "bus_name")
    let uri = try CString.nonEmpty(uri, "uri")
    guard try session.desktop.systemMusic().open(uri, in: name) else { throw .invalidArgument(noApp(name)) }
  }
}

@_cdecl("lm_set_system_music_callback")
public func lmSetSystemMusicCallback(
  _ handle: OpaquePointer?, _ callback: lm_system_music_fn?, _ userData: UnsafeMutableRawPointer?
) -> lm_error {
  withEngine(handle) { $0.callbacks.setSystemMusic(callback, userData) }
}

private func noApp(_ name: String?) -> String {
  name.map { "no music app \"\($0)\" on the bus" } ?? "no music app on the bus"
}
