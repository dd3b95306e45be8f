import Dispatch
import FoundationEssentials
import LeitmotifCues
import LeitmotifDecoding
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Leitmotif as an MPRIS player on the desktop's session bus: the desktop's "now playing"
/// (GNOME's and KDE's media controls, `playerctl`) shows what the game plays, and the media keys
/// reach the game. MediaPlayer's `MPNowPlayingInfoCenter` and `MPRemoteCommandCenter` in one,
/// as MPRIS has them in one object (`org.mpris.MediaPlayer2` and `.Player` at
/// `/org/mpris/MediaPlayer2`).
///
/// Opt-in: a game makes one for its director (`init(director:)`) or a player
/// (`init(player:)`). It runs on a thread of its own, which alone talks to the bus: it reads the
/// player's state every `pollInterval` (the properties follow the music within that, plus the
/// bus's own delay) and announces what changed (`PropertiesChanged`, `Seeked`); the commands
/// that arrive are carried out there too, by the `RemoteCommandHandler`. Nothing on the game's
/// or the mixer's threads waits on D-Bus.
///
/// Without a session bus (a server, a CI machine) `init` throws `DesktopBusError.noSessionBus`:
/// the game says so once and plays on; nothing else in the engine depends on it. A bus that goes
/// away later ends the service's thread the same way (`stoppedReason`).
public final class NowPlayingService: @unchecked Sendable {
  public struct Configuration: Sendable {
    /// The name the desktop shows (MPRIS `Identity`): the game's name.
    public var identity: String
    /// The bus name's last part: `org.mpris.MediaPlayer2.<name>`; when another program holds it,
    /// `.instance<pid>` is added, as the specification says.
    public var busName: String
    /// The game's desktop file's name without `.desktop` (MPRIS `DesktopEntry`), for its icon.
    public var desktopEntry: String?
    /// The bus to use (nil: the session bus: `DBUS_SESSION_BUS_ADDRESS`, else
    /// `$XDG_RUNTIME_DIR/bus`).
    public var busAddress: String?
    /// How often the service reads the player's state.
    public var pollInterval: Double

    public init(
      identity: String = "Leitmotif", busName: String = "leitmotif", desktopEntry: String? = nil,
      busAddress: String? = nil, pollInterval: Double = 0.025
    ) {
      self.identity = identity
      self.busName = busName
      self.desktopEntry = desktopEntry
      self.busAddress = busAddress
      self.pollInterval = pollInterval
    }
  }

  public let configuration: Configuration
  /// The well-known name taken on the bus: `org.mpris.MediaPlayer2.leitmotif` (or with
  /// `.instance<pid>`).
  public let busName: String
  /// Why the service stopped by itself (the bus went away), else nil.
  public var stoppedReason: DesktopBusError? { core.shared.withLock { $0.stoppedReason } }
  /// The remote commands that arrived, in order, the last `ServiceCore.keptCommands` of them
  /// (for a game's log, and tests).
  public var commandsReceived: [RemoteCommand] { core.shared.withLock { $0.commands } }

  private let core: ServiceCore
  /// The service's thread: `shutdown` waits until it has let go of the player too.
  private let thread: NativeThread

  static let objectPath = "/org/mpris/MediaPlayer2"
  static let rootInterface = "org.mpris.MediaPlayer2"
  static let playerInterface = "org.mpris.MediaPlayer2.Player"
  static let propertiesInterface = "org.freedesktop.DBus.Properties"

  /// Publishes `director`'s music; the cue file's `mediaKeys` say what the keys do.
  public convenience init(director: Director, configuration: Configuration = Configuration())
    throws(DesktopBusError)
  {
    try self.init(player: director.player, handler: .director(director), configuration: configuration)
  }

  /// Publishes `player` (a `QueuePlayer`, or a one-item `Player`); `handler` says what the
  /// commands do (default: what a music player does).
  public init(
    player: any MediaPlayback, handler: RemoteCommandHandler? = nil, configuration: Configuration = Configuration()
  ) throws(DesktopBusError) {
    self.configuration = configuration
    let core = ServiceCore(player: player, handler: handler ?? .playback(player), configuration: configuration)
    self.core = core
    // Connect and take the name here, so a missing bus is the caller's error at once; the
    // connection then belongs to the service's thread alone.
    let connection = try BusConnection(address: configuration.busAddress)
    // Known as this process's own before the name is taken, so a `SystemMusicPlayer` never
    // lists it, even for a moment; forgotten again if the service does not come up.
    let identity = connection.uniqueName.map { connection.identity(of: $0) }
    if let identity { ownPlayerConnections.withLock { _ = $0.insert(identity) } }
    let object = MPRISObject(core: core, connection: connection)
    do {
      busName = try Self.takeName(Self.rootInterface + "." + Self.sanitized(configuration.busName), on: connection)
      try connection.addObject(path: Self.objectPath) { [unowned object] message in object.handle(message) }
    } catch {
      if let identity { ownPlayerConnections.withLock { _ = $0.remove(identity) } }
      throw error
    }
    // The thread holds the core, the object and the connection, not the service: dropping the
    // service ends it.
    thread = NativeThread {
      nameCurrentThread("lm.mpris")
      ServiceCore.run(core, connection, object)
    }
    thread.start()
  }

  deinit { shutdown() }

  /// Leaves the bus (the desktop stops showing the game) and ends the thread; waits for it.
  /// The thread holds the player (and through it the engine) until it ends: when this returns,
  /// it has let go, so a program that exits next frees nothing of the engine's on that thread
  /// while the process tears down.
  public func shutdown() {
    guard core.running.exchange(false, ordering: .acquiringAndReleasing) else { return }
    // From a command handler, on the thread itself: it ends once the handler returns.
    guard !thread.isCurrent else { return }
    core.finished.wait()
    // Letting go can free the engine, whose own shutdown waits for its threads (2 s at most).
    let deadline = DispatchTime.now() + .seconds(5)
    while !thread.isFinished, DispatchTime.now() < deadline { usleep(1000) }
  }

  /// Takes `base`, or `base.instance<pid>` when another program holds it (as the specification
  /// says); the name taken.
  private static func takeName(_ base: String, on connection: BusConnection) throws(DesktopBusError) -> String {
    do {
      try connection.requestName(base)
      return base
    } catch let error where error.code == .nameTaken {
      let instance = base + ".instance\(getpid())"
      try connection.requestName(instance)
      return instance
    }
  }

  /// A bus name element: letters, digits and underscores, not starting with a digit.
  static func sanitized(_ name: String) -> String {
    var result = String(
      name.unicodeScalars.map { scalar -> Character in
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "_"
          ? Character(scalar) : "_"
      })
    if result.isEmpty || result.first!.isNumber { result = "_" + result }
    return result
  }
}

/// What the service's thread shares with the service: the player and handler it serves, and
/// whether it should go on.
private final class ServiceCore: @unchecked Sendable {
  let player: any MediaPlayback
  /// The queue's own controls (index, repeat, shuffle), when the player is a queue.
  private var queue: QueuePlayer? { player as? QueuePlayer }
  let handler: RemoteCommandHandler
  let configuration: NowPlayingService.Configuration
  let running = Atomic<Bool>(true)
  let finished = DispatchSemaphore(value: 0)
  let shared = Mutex(Shared())

  struct Shared {
    var stoppedReason: DesktopBusError?
    var commands: [RemoteCommand] = []
  }

  init(player: any MediaPlayback, handler: RemoteCommandHandler, configuration: NowPlayingService.Configuration) {
    self.player = player
    self.handler = handler
    self.configuration = configuration
  }

  static func run(_ core: ServiceCore, _ connection: BusConnection, _ object: MPRISObject) {
    defer {
      if let name = connection.uniqueName {
        let identity = connection.identity(of: name)
        ownPlayerConnections.withLock { _ = $0.remove(identity) }
      }
    }
    while core.running.load(ordering: .acquiring) {
      object.publishChanges()
      do {
        try connection.process(waitingAtMost: core.configuration.pollInterval)
      } catch {
        core.shared.withLock { $0.stoppedReason = error }
        // Stopped by itself: a later `shutdown` finds it stopped and does not wait.
        if core.running.exchange(false, ordering: .acquiringAndReleasing) { return }
        break
      }
    }
    core.finished.signal()
  }

  /// How many commands `commandsReceived` keeps: a long game's key presses must not grow it.
  static let keptCommands = 64

  func perform(_ command: RemoteCommand) -> Bool {
    shared.withLock { shared in
      if shared.commands.count == Self.keptCommands { shared.commands.removeFirst() }
      shared.commands.append(command)
    }
    return handler.perform(command)
  }

  func snapshot() -> PlayerSnapshot {
    let heard = handler.heard?()
    return PlayerSnapshot(
      item: heard.map(\.item) ?? player.nowPlayingItem, index: queue?.indexOfNowPlayingItem ?? 0,
      state: player.playbackState, position: heard?.position ?? player.currentPlaybackTime,
      rate: player.currentPlaybackRate, volume: player.volume,
      repeatMode: queue?.repeatMode ?? .none, shuffleMode: queue?.shuffleMode ?? .off,
      can: Dictionary(
        uniqueKeysWithValues: [RemoteCommand.play, .pause, .nextTrack, .previousTrack, .changePlaybackPosition(to: 0)]
          .map { ($0, handler.isEnabled($0)) }))
  }

  func setVolume(_ volume: Double) { player.volume = Float(min(1, max(0, volume))) }
  /// Why `LoopStatus` or `Shuffle` (`what`: "repeat", "shuffle") cannot be set.
  func queueSettingsRefusal(_ what: String) -> String {
    handler.setsRepeatAndShuffle
      ? "one item plays: there is no queue to \(what)" : "the game's score is the game's to \(what), not the desktop's"
  }

  /// False for a one-item player (no queue to repeat or shuffle), and for a handler that keeps
  /// them (a director's score).
  func setRepeat(_ mode: RepeatMode) -> Bool {
    guard handler.setsRepeatAndShuffle else { return false }
    queue?.repeatMode = mode
    return queue != nil
  }
  func setShuffle(_ on: Bool) -> Bool {
    guard handler.setsRepeatAndShuffle else { return false }
    queue?.shuffleMode = on ? .songs : .off
    return queue != nil
  }
}

/// What the service reads off the player at each poll.
struct PlayerSnapshot {
  var item: MediaItem?
  var index: Int?
  var state: PlaybackState
  var position: Double
  var rate: Float
  var volume: Float
  var repeatMode: RepeatMode
  var shuffleMode: ShuffleMode
  var can: [RemoteCommand: Bool]
}

/// The MPRIS object: its properties from the snapshots, its methods to the service. Runs on the
/// service's thread only (Sendable only to be handed to it).
private final class MPRISObject: @unchecked Sendable {
  let service: ServiceCore
  let connection: BusConnection
  /// The properties last announced, by interface.
  private var published: [String: [(String, BusValue)]] = [:]
  /// The item's track number: a new object path each time the item changes (or plays again).
  private var trackNumber = 0
  private var lastItem: MediaItem?
  private var lastIndex: Int?
  /// Where the music was at the last poll and when, to tell a seek from playing on.
  private var lastPosition: (seconds: Double, at: Double, rate: Double)?
  /// Cover URLs by file, and by folder (nil: none).
  private var artCache: [String: String?] = [:]
  private var folderArtCache: [String: String?] = [:]

  init(core: ServiceCore, connection: BusConnection) {
    self.service = core
    self.connection = connection
  }

  // MARK: Properties

  private func properties(_ snapshot: PlayerSnapshot) -> [String: [(String, BusValue)]] {
    let status: String
    switch snapshot.state {
    case .playing, .seekingForward, .seekingBackward: status = "Playing"
    case .paused, .interrupted: status = "Paused"
    case .stopped: status = "Stopped"
    }
    let loop: String
    switch snapshot.repeatMode {
    case .none: loop = "None"
    case .one: loop = "Track"
    case .all: loop = "Playlist"
    }
    var root: [(String, BusValue)] = [
      ("CanQuit", .boolean(false)), ("CanRaise", .boolean(false)), ("HasTrackList", .boolean(false)),
      ("Identity", .string(service.configuration.identity)),
      ("SupportedUriSchemes", .stringArray([])), ("SupportedMimeTypes", .stringArray([])),
    ]
    if let entry = service.configuration.desktopEntry { root.append(("DesktopEntry", .string(entry))) }
    let player: [(String, BusValue)] = [
      ("PlaybackStatus", .string(status)),
      ("LoopStatus", .string(loop)),
      ("Rate", .double(snapshot.state == .playing ? Double(snapshot.rate) : 1)),
      ("Shuffle", .boolean(snapshot.shuffleMode != .off)),
      ("Metadata", .dictionary(metadata(snapshot))),
      ("Volume", .double(Double(snapshot.volume))),
      ("MinimumRate", .double(0.5)), ("MaximumRate", .double(2)),
      ("CanGoNext", .boolean(snapshot.can[.nextTrack] ?? false)),
      ("CanGoPrevious", .boolean(snapshot.can[.previousTrack] ?? false)),
      ("CanPlay", .boolean(snapshot.can[.play] ?? false)),
      ("CanPause", .boolean(snapshot.can[.pause] ?? false)),
      ("CanSeek", .boolean(snapshot.can[.changePlaybackPosition(to: 0)] ?? false)),
      ("CanControl", .boolean(true)),
    ]
    return [NowPlayingService.rootInterface: root, NowPlayingService.playerInterface: player]
  }

  private var trackID: String { "/org/leitmotif/track/\(trackNumber)" }

  private func metadata(_ snapshot: PlayerSnapshot) -> [(String, BusValue)] {
    guard let item = snapshot.item else {
      return [("mpris:trackid", .objectPath("/org/mpris/MediaPlayer2/TrackList/NoTrack"))]
    }
    var entries: [(String, BusValue)] = [("mpris:trackid", .objectPath(trackID))]
    if let duration = item.playbackDuration, duration.isFinite, duration > 0 {
      entries.append(("mpris:length", .int64(Int64(duration * 1_000_000))))
    }
    entries.append(("xesam:title", .string(item.displayName)))
    if let artist = item.artist { entries.append(("xesam:artist", .stringArray([artist]))) }
    if let album = item.albumTitle { entries.append(("xesam:album", .string(album))) }
    if let albumArtist = item.albumArtist { entries.append(("xesam:albumArtist", .stringArray([albumArtist]))) }
    if let genre = item.genre { entries.append(("xesam:genre", .stringArray([genre]))) }
    if let composer = item.composer { entries.append(("xesam:composer", .stringArray([composer]))) }
    if let track = item.albumTrackNumber { entries.append(("xesam:trackNumber", .int32(Int32(clamping: track)))) }
    if let disc = item.discNumber { entries.append(("xesam:discNumber", .int32(Int32(clamping: disc)))) }
    if let bpm = item.beatsPerMinute ?? item.detectedBeatsPerMinute, bpm.isFinite, bpm > 0 {
      entries.append(("xesam:audioBPM", .int32(Int32(bpm.rounded()))))
    }
    if item.assetURL.isFileURL { entries.append(("xesam:url", .string(item.assetURL.absoluteString))) }
    if let art = artURL(for: item) { entries.append(("mpris:artUrl", .string(art))) }
    return entries
  }

  /// The item's cover as a file URL: the picture the file carries (written once to
  /// `$XDG_RUNTIME_DIR/leitmotif/art/`, else the temporary folder, named by its content), else
  /// an image beside the file (cover, folder, front or album, .jpg or .png, as music players
  /// look for it); nil when there is neither. Looked up once per file (and folder), on the
  /// service's thread.
  private func artURL(for item: MediaItem) -> String? {
    guard item.assetURL.isFileURL else { return nil }
    let path = item.assetURL.path
    if let cached = artCache[path] { return cached }
    let url = embeddedArtURL(path) ?? folderArtURL(item.assetURL.deletingLastPathComponent())
    artCache[path] = url
    return url
  }

  private func embeddedArtURL(_ path: String) -> String? {
    guard let artwork = (try? AudioFile.artwork(path: path)) ?? nil else { return nil }
    // Named by a hash of the bytes: the same cover (an album's) is written once.
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in artwork.data { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    let folder = Self.artFolder
    let file = folder + "/" + String(hash, radix: 16) + "." + artwork.fileExtension
    if !FileManager.default.fileExists(atPath: file) {
      _ = try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
      guard (try? Data(artwork.data).write(to: URL(fileURLWithPath: file), options: .atomic)) != nil else { return nil }
    }
    return URL(fileURLWithPath: file).absoluteString
  }

  /// Where covers taken out of files go: the user's runtime folder (private, emptied at logout).
  static var artFolder: String {
    let environment = ProcessInfo.processInfo.environment
    let base = environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? environment["TMPDIR"] ?? "/tmp"
    return base + "/leitmotif/art"
  }

  private func folderArtURL(_ folder: URL) -> String? {
    if let cached = folderArtCache[folder.path] { return cached }
    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
    let wanted = ["cover", "folder", "front", "album"]
    let found = names.sorted().first { name in
      let parts = name.lowercased().split(separator: ".", omittingEmptySubsequences: false)
      guard parts.count == 2 else { return false }
      return wanted.contains(String(parts[0])) && ["jpg", "jpeg", "png"].contains(String(parts[1]))
    }
    let url = found.map { folder.appendingPathComponent($0).absoluteString }
    folderArtCache[folder.path] = url
    return url
  }

  /// Reads the player, and announces what changed since the last time.
  func publishChanges() {
    let snapshot = service.snapshot()
    let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    let itemChanged = snapshot.item?.assetURL != lastItem?.assetURL || snapshot.index != lastIndex
    if itemChanged { trackNumber += 1 }
    // A seek: the position is not where playing on from the last poll would have put it.
    if !itemChanged, let last = lastPosition {
      let expected = last.seconds + (now - last.at) * last.rate
      if abs(snapshot.position - expected) > 0.5 { announceSeeked(snapshot.position) }
    }
    lastItem = snapshot.item
    lastIndex = snapshot.index
    lastPosition = (snapshot.position, now, snapshot.state == .playing ? Double(snapshot.rate) : 0)

    for (interface, values) in properties(snapshot) {
      let before = published[interface] ?? []
      let changed = values.filter { key, value in before[bus: key] != value }
      published[interface] = values
      guard !before.isEmpty, !changed.isEmpty,
        let signal = connection.signal(
          path: NowPlayingService.objectPath, interface: NowPlayingService.propertiesInterface,
          member: "PropertiesChanged")
      else { continue }
      signal.append(.string(interface), .dictionary(changed), .stringArray([]))
      connection.send(signal)
    }
  }

  private func announceSeeked(_ seconds: Double) {
    guard
      let signal = connection.signal(
        path: NowPlayingService.objectPath, interface: NowPlayingService.playerInterface, member: "Seeked")
    else { return }
    signal.append(.int64(Int64(max(0, seconds) * 1_000_000)))
    connection.send(signal)
  }

  // MARK: Methods

  func handle(_ message: BusMessage) {
    let interface = message.interface ?? ""
    let member = message.member ?? ""
    let arguments = message.arguments()
    switch (interface, member) {
    case ("org.freedesktop.DBus.Introspectable", "Introspect"):
      reply(message, .string(Self.introspection))
    case (NowPlayingService.propertiesInterface, "Get"):
      guard arguments.count == 2, let name = arguments[0].stringValue, let key = arguments[1].stringValue,
        let value = property(name, key)
      else {
        return fail(message, "org.freedesktop.DBus.Error.UnknownProperty", "no such property")
      }
      reply(message, .variant(value))
    case (NowPlayingService.propertiesInterface, "GetAll"):
      guard let name = arguments.first?.stringValue else {
        return fail(message, "org.freedesktop.DBus.Error.InvalidArgs", "GetAll takes an interface name")
      }
      var values = currentProperties()[name] ?? []
      if name == NowPlayingService.playerInterface { values.append(("Position", positionValue())) }
      reply(message, .dictionary(values))
    case (NowPlayingService.propertiesInterface, "Set"):
      guard arguments.count == 3, let property = arguments[1].stringValue else {
        return fail(message, "org.freedesktop.DBus.Error.InvalidArgs", "Set takes an interface, a name and a value")
      }
      set(property, arguments[2], message)
    case (NowPlayingService.rootInterface, "Raise"), (NowPlayingService.rootInterface, "Quit"):
      reply(message)  // CanRaise and CanQuit are false: the specification asks for no effect
    case (NowPlayingService.playerInterface, _):
      playerMethod(member, arguments, message)
    default:
      fail(message, "org.freedesktop.DBus.Error.UnknownMethod", "no method \(interface).\(member)")
    }
    // What the command changed is announced at once, not at the next poll.
    publishChanges()
  }

  private func playerMethod(_ member: String, _ arguments: [BusValue], _ message: BusMessage) {
    let command: RemoteCommand
    switch member {
    case "Play": command = .play
    case "Pause": command = .pause
    case "PlayPause": command = .togglePlayPause
    case "Stop": command = .stop
    case "Next": command = .nextTrack
    case "Previous": command = .previousTrack
    case "Seek":
      guard let offset = arguments.first?.int64Value else {
        return fail(message, "org.freedesktop.DBus.Error.InvalidArgs", "Seek takes an offset in microseconds (x)")
      }
      command = .seek(by: Double(offset) / 1_000_000)
    case "SetPosition":
      guard arguments.count == 2, let track = arguments[0].stringValue, let position = arguments[1].int64Value
      else {
        return fail(
          message, "org.freedesktop.DBus.Error.InvalidArgs", "SetPosition takes a track id (o) and microseconds (x)")
      }
      // The specification: a stale track id or a negative position is ignored.
      guard track == trackID, position >= 0 else { return reply(message) }
      command = .changePlaybackPosition(to: Double(position) / 1_000_000)
    case "OpenUri":
      return fail(message, "org.freedesktop.DBus.Error.NotSupported", "the game plays its own music")
    default:
      return fail(message, "org.freedesktop.DBus.Error.UnknownMethod", "no method \(member) on the player")
    }
    let before = service.snapshot().position
    let done = service.perform(command)
    // MPRIS: Seek and SetPosition announce where the music went.
    if done, case .seek(let seconds) = command { announceSeeked(max(0, before + seconds)) }
    if done, case .changePlaybackPosition(let seconds) = command { announceSeeked(seconds) }
    if done { lastPosition = nil }
    reply(message)
  }

  private func currentProperties() -> [String: [(String, BusValue)]] { properties(service.snapshot()) }

  private func positionValue() -> BusValue { .int64(Int64(max(0, service.snapshot().position) * 1_000_000)) }

  private func property(_ interface: String, _ name: String) -> BusValue? {
    if interface == NowPlayingService.playerInterface && name == "Position" { return positionValue() }
    return currentProperties()[interface]?[bus: name]
  }

  private func set(_ name: String, _ value: BusValue, _ message: BusMessage) {
    switch name {
    case "Volume":
      guard let volume = value.doubleValue, volume.isFinite else {
        return fail(message, "org.freedesktop.DBus.Error.InvalidArgs", "Volume takes a number (d)")
      }
      service.setVolume(volume)
    case "LoopStatus":
      let mode: RepeatMode
      switch value.stringValue {
      case "None": mode = .none
      case "Track": mode = .one
      case "Playlist": mode = .all
      default:
        return fail(message, "org.freedesktop.DBus.Error.InvalidArgs", "LoopStatus is None, Track or Playlist")
      }
      guard service.setRepeat(mode) else {
        return fail(message, "org.freedesktop.DBus.Error.NotSupported", service.queueSettingsRefusal("repeat"))
      }
    case "Shuffle":
      guard let on = value.boolValue else {
        return fail(message, "org.freedesktop.DBus.Error.InvalidArgs", "Shuffle takes true or false (b)")
      }
      guard service.setShuffle(on) else {
        return fail(message, "org.freedesktop.DBus.Error.NotSupported", service.queueSettingsRefusal("shuffle"))
      }
    case "Rate":
      // The game's music keeps its speed (rate is the score's to change); the specification
      // lets a player ignore a rate within its range.
      break
    default:
      return fail(message, "org.freedesktop.DBus.Error.PropertyReadOnly", "\(name) cannot be set")
    }
    reply(message)
  }

  private func reply(_ call: BusMessage, _ values: BusValue...) {
    guard let reply = connection.methodReturn(to: call) else { return }
    for value in values { reply.append(value) }
    connection.send(reply)
  }

  private func fail(_ call: BusMessage, _ name: String, _ text: String) {
    connection.replyError(to: call, name: name, message: text)
  }

  /// For clients that introspect before they call (GDBus proxies, d-feet).
  static let introspection = """
    <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
     "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
    <node>
      <interface name="org.freedesktop.DBus.Introspectable">
        <method name="Introspect"><arg name="xml" type="s" direction="out"/></method>
      </interface>
      <interface name="org.freedesktop.DBus.Properties">
        <method name="Get"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="out"/></method>
        <method name="GetAll"><arg type="s" direction="in"/><arg type="a{sv}" direction="out"/></method>
        <method name="Set"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="in"/></method>
        <signal name="PropertiesChanged"><arg type="s"/><arg type="a{sv}"/><arg type="as"/></signal>
      </interface>
      <interface name="org.mpris.MediaPlayer2">
        <method name="Raise"/><method name="Quit"/>
        <property name="CanQuit" type="b" access="read"/>
        <property name="CanRaise" type="b" access="read"/>
        <property name="HasTrackList" type="b" access="read"/>
        <property name="Identity" type="s" access="read"/>
        <property name="DesktopEntry" type="s" access="read"/>
        <property name="SupportedUriSchemes" type="as" access="read"/>
        <property name="SupportedMimeTypes" type="as" access="read"/>
      </interface>
      <interface name="org.mpris.MediaPlayer2.Player">
        <method name="Next"/><method name="Previous"/><method name="Pause"/><method name="PlayPause"/>
        <method name="Stop"/><method name="Play"/>
        <method name="Seek"><arg name="Offset" type="x" direction="in"/></method>
        <method name="SetPosition"><arg name="TrackId" type="o" direction="in"/><arg name="Position" type="x" direction="in"/></method>
        <method name="OpenUri"><arg name="Uri" type="s" direction="in"/></method>
        <signal name="Seeked"><arg name="Position" type="x"/></signal>
        <property name="PlaybackStatus" type="s" access="read"/>
        <property name="LoopStatus" type="s" access="readwrite"/>
        <property name="Rate" type="d" access="readwrite"/>
        <property name="Shuffle" type="b" access="readwrite"/>
        <property name="Metadata" type="a{sv}" access="read"/>
        <property name="Volume" type="d" access="readwrite"/>
        <property name="Position" type="x" access="read"/>
        <property name="MinimumRate" type="d" access="read"/>
        <property name="MaximumRate" type="d" access="read"/>
        <property name="CanGoNext" type="b" access="read"/>
        <property name="CanGoPrevious" type="b" access="read"/>
        <property name="CanPlay" type="b" access="read"/>
        <property name="CanPause" type="b" access="read"/>
        <property name="CanSeek" type="b" access="read"/>
        <property name="CanControl" type="b" access="read"/>
      </interface>
    </node>
    """
}
