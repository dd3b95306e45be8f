import Dispatch
import FoundationEssentials
import LeitmotifPlayers

/// A music app on the player's desktop, seen through MPRIS (`org.mpris.MediaPlayer2.*` on the
/// session bus): Rhythmbox, Spotify, VLC, a browser tab. What `SystemMusicPlayer` knows of it,
/// as of the last change it announced.
public struct SystemMusicApp: Sendable, Equatable {
  /// Its MPRIS bus name, which commands address: `org.mpris.MediaPlayer2.vlc`.
  public var busName: String
  /// The name it shows (MPRIS `Identity`): "VLC media player"; the bus name's last part when it
  /// gives none.
  public var identity: String
  /// Its desktop file's name without `.desktop` (MPRIS `DesktopEntry`), if it says.
  public var desktopEntry: String?
  /// Playing, paused or stopped (MPRIS `PlaybackStatus`).
  public var playbackState: PlaybackState
  /// What it plays (MPRIS `Metadata`); nil when it plays nothing.
  public var nowPlaying: SystemNowPlayingInfo?
  /// Its playback rate (MPRIS `Rate`; 1 when it does not say).
  public var rate: Double
  /// Its volume, 0...1 (MPRIS `Volume`), if it says.
  public var volume: Double?
  public var canPlay: Bool
  public var canPause: Bool
  public var canGoNext: Bool
  public var canGoPrevious: Bool
  public var canSeek: Bool
  /// False: the app shows what it plays but takes no commands (MPRIS `CanControl`).
  public var canControl: Bool
  /// The URI schemes `OpenUri` takes ("file", "http"); empty: it opens nothing.
  public var supportedURISchemes: [String]
  /// The MIME types it plays ("audio/mpeg", "audio/x-mpegurl").
  public var supportedMimeTypes: [String]

  /// The position it last announced or was asked for, and when (seconds of the monotonic clock).
  var positionSeconds: Double = 0
  var positionTakenAt: Double = 0
  /// How many `PlaybackStatus` values arrived so far (a changed one or not), so a coordinator can
  /// tell the answer to its own command from a state reported before the command went out.
  package var playbackStateReports: UInt64 = 0

  /// Seconds into the item now: the last position read, moved on by the time since at `rate`
  /// while playing (MPRIS sends no signal as a song plays on; `Seeked` says when it jumps).
  public var currentPlaybackTime: Double {
    guard playbackState == .playing else { return positionSeconds }
    let elapsed = max(0, SystemMusicApp.now() - positionTakenAt)
    var position = positionSeconds + elapsed * rate
    if let length = nowPlaying?.playbackDuration, length > 0 { position = min(position, length) }
    return position
  }

  /// Whether `OpenUri` takes local files.
  public var canOpenFiles: Bool { canControl && supportedURISchemes.contains("file") }

  init(busName: String) {
    self.busName = busName
    identity = String(busName.dropFirst(SystemMusicPlayer.busNamePrefix.count))
    playbackState = .stopped
    rate = 1
    canPlay = false
    canPause = false
    canGoNext = false
    canGoPrevious = false
    canSeek = false
    canControl = false
    supportedURISchemes = []
    supportedMimeTypes = []
  }

  /// Takes the MPRIS properties in `values` (an `a{sv}` from `GetAll` or `PropertiesChanged`).
  mutating func apply(_ values: [(String, BusValue)]) {
    for (key, wrapped) in values {
      let value: BusValue = if case .variant(let inner) = wrapped { inner } else { wrapped }
      switch key {
      case "Identity": if let text = value.stringValue, !text.isEmpty { identity = text }
      case "DesktopEntry": desktopEntry = value.stringValue
      case "SupportedUriSchemes": supportedURISchemes = value.stringArrayValue ?? []
      case "SupportedMimeTypes": supportedMimeTypes = value.stringArrayValue ?? []
      case "PlaybackStatus":
        let state: PlaybackState
        switch value.stringValue {
        case "Playing": state = .playing
        case "Paused": state = .paused
        default: state = .stopped
        }
        playbackStateReports &+= 1
        if state != playbackState {
          // Keep the position where it was heard: playing on from here, or frozen.
          setPosition(currentPlaybackTime)
          playbackState = state
        }
      case "Metadata":
        let info = value.dictionaryValue.map(SystemNowPlayingInfo.init)
        if info?.trackID != nowPlaying?.trackID || info?.url != nowPlaying?.url { setPosition(0) }
        nowPlaying = info.flatMap { $0.isEmpty ? nil : $0 }
      case "Rate":
        if let number = value.doubleValue, number.isFinite, number > 0 {
          setPosition(currentPlaybackTime)
          rate = number
        }
      case "Volume": volume = value.doubleValue.map { max(0, min(1, $0)) }
      case "Position": if let micro = value.int64Value { setPosition(Double(micro) / 1_000_000) }
      case "CanPlay": canPlay = value.boolValue ?? false
      case "CanPause": canPause = value.boolValue ?? false
      case "CanGoNext": canGoNext = value.boolValue ?? false
      case "CanGoPrevious": canGoPrevious = value.boolValue ?? false
      case "CanSeek": canSeek = value.boolValue ?? false
      case "CanControl": canControl = value.boolValue ?? false
      default: break
      }
    }
  }

  mutating func setPosition(_ seconds: Double) {
    positionSeconds = max(0, seconds)
    positionTakenAt = Self.now()
  }

  static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
}

/// What a music app plays, from its MPRIS `Metadata` (xesam and mpris keys). Every field is as
/// the app gave it; apps leave out what they do not know.
public struct SystemNowPlayingInfo: Sendable, Equatable {
  /// `mpris:trackid`: the item's id in that app (`SetPosition` names it).
  public var trackID: String?
  public var title: String?
  public var artists: [String]
  public var album: String?
  public var albumArtists: [String]
  public var genres: [String]
  public var albumTrackNumber: Int?
  /// Seconds (`mpris:length`, in microseconds on the bus).
  public var playbackDuration: Double?
  /// `mpris:artUrl`: the cover (a file:// or http URL).
  public var artworkURL: String?
  /// `xesam:url`: the song's own location.
  public var url: String?
  /// `xesam:audioBPM`.
  public var beatsPerMinute: Int?

  init(_ entries: [(String, BusValue)]) {
    trackID = entries[bus: "mpris:trackid"]?.stringValue
    title = entries[bus: "xesam:title"]?.stringValue
    artists = entries[bus: "xesam:artist"]?.stringArrayValue ?? []
    album = entries[bus: "xesam:album"]?.stringValue
    albumArtists = entries[bus: "xesam:albumArtist"]?.stringArrayValue ?? []
    genres = entries[bus: "xesam:genre"]?.stringArrayValue ?? []
    albumTrackNumber = entries[bus: "xesam:trackNumber"]?.int64Value.map { Int(clamping: $0) }
    playbackDuration = entries[bus: "mpris:length"]?.int64Value.flatMap { $0 > 0 ? Double($0) / 1_000_000 : nil }
    artworkURL = entries[bus: "mpris:artUrl"]?.stringValue
    url = entries[bus: "xesam:url"]?.stringValue
    beatsPerMinute = entries[bus: "xesam:audioBPM"]?.int64Value.flatMap { $0 > 0 ? Int(clamping: $0) : nil }
  }

  /// The app said nothing about a track (MPRIS's "NoTrack" id, or no keys at all).
  var isEmpty: Bool {
    (trackID == nil || trackID == "/org/mpris/MediaPlayer2/TrackList/NoTrack") && title == nil && url == nil
  }
}

/// What `SystemMusicPlayer` tells its observers.
public enum SystemMusicEvent: Sendable, Equatable {
  /// A music app came onto the bus (or was there when the player started).
  case appeared(SystemMusicApp)
  /// An app's state, item, volume or abilities changed; a seek too.
  case changed(SystemMusicApp)
  /// An app left the bus (quit or crashed).
  case disappeared(busName: String, identity: String)
  /// A command could not be carried out: no such app, it refused (the D-Bus error says why),
  /// or it did not answer in time.
  case commandFailed(busName: String?, DesktopBusError)
}
