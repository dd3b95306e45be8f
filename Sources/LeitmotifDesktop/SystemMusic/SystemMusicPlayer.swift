import Dispatch
import FoundationEssentials
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The player's own music apps, as MediaPlayer's `systemMusicPlayer` is the Music app: every
/// MPRIS player on the session bus (Rhythmbox, Spotify, VLC, a browser), what each plays, and
/// its controls. A Linux desktop can run several at once, so the commands take the app's bus
/// name; without one they go to `nowPlayingApp`, the one playing (else the one that played
/// last).
///
/// It runs on a thread of its own ("lm.system-music"), which alone talks to the bus: it lists
/// the players at start, follows them as they come and go (`NameOwnerChanged`) and as their
/// properties change (`PropertiesChanged`, `Seeked`), and sends the commands. The game's calls
/// only read a snapshot or queue a command and wake that thread; nothing on the game's or the
/// mixer's threads waits on D-Bus. A command's failure (an app that refuses or hangs) comes back
/// as `SystemMusicEvent.commandFailed`.
///
/// Leitmotif's own MPRIS players (`NowPlayingService`) in the same process are never listed:
/// the game's music is not the player's music app.
///
/// Without a session bus (a server, a CI machine) `init` throws `DesktopBusError.noSessionBus`;
/// a bus that goes away later ends the thread (`stoppedReason`), and the apps are gone.
///
/// Thread safety: every member, from any thread.
public final class SystemMusicPlayer: @unchecked Sendable {
  static let busNamePrefix = "org.mpris.MediaPlayer2."
  static let objectPath = "/org/mpris/MediaPlayer2"
  static let playerInterface = "org.mpris.MediaPlayer2.Player"
  static let rootInterface = "org.mpris.MediaPlayer2"
  static let propertiesInterface = "org.freedesktop.DBus.Properties"

  private let core: ClientCore
  /// The player's thread, so `shutdown` called on it (from an observer) does not wait for itself.
  private let thread: NativeThread

  /// Connects to the session bus (or `busAddress`) and starts following its music apps. The
  /// first list is read before `init` returns, so `apps` holds the running ones at once (those
  /// that answer within a second; a slow one appears as soon as it does).
  public init(busAddress: String? = nil) throws(DesktopBusError) {
    let connection = try BusConnection(address: busAddress)
    let core = ClientCore(connection: connection)
    self.core = core
    try core.begin()
    thread = NativeThread {
      nameCurrentThread("lm.system-music")
      core.run()
    }
    thread.start()
    // Give the apps listed a moment to answer GetAll, so a game that asks at once sees them.
    core.waitForFirstAnswers(seconds: 1)
  }

  deinit { shutdown() }

  /// Sends what is queued and ends the thread; waits for it (not when called on the thread
  /// itself, from an observer). Commands after it do nothing. The connection leaves the bus when
  /// the player is released.
  public func shutdown() {
    guard core.running.exchange(false, ordering: .acquiringAndReleasing) else { return }
    core.wakeUp.signal()
    // From an observer or a turn's work, on the thread itself: it ends once that returns.
    guard !thread.isCurrent else { return }
    core.finished.wait()
  }

  /// Why the player stopped by itself (the bus went away), else nil.
  public var stoppedReason: DesktopBusError? { core.shared.withLock { $0.stoppedReason } }

  /// The music apps on the bus now, by bus name.
  public var apps: [SystemMusicApp] { core.shared.withLock { $0.apps.values.sorted { $0.busName < $1.busName } } }

  /// The app MediaPlayer's `systemMusicPlayer` would stand for: the one playing (the one that
  /// started last, if several), else the one that played last, else the first listed.
  public var nowPlayingApp: SystemMusicApp? { core.shared.withLock { $0.nowPlayingApp } }

  /// What `nowPlayingApp` plays.
  public var nowPlayingItem: SystemNowPlayingInfo? { nowPlayingApp?.nowPlaying }

  /// `nowPlayingApp`'s state; `.stopped` when there is no app.
  public var playbackState: PlaybackState { nowPlayingApp?.playbackState ?? .stopped }

  /// Hears every change (`SystemMusicEvent`), on the player's thread: return quickly and never
  /// wait there for the bus (commands from inside are fine: they are queued).
  /// - Returns: a token for `removeObserver`.
  @discardableResult
  public func addObserver(_ handler: @escaping @Sendable (SystemMusicEvent) -> Void) -> UInt64 {
    core.observers.withLock { observers in
      observers.next += 1
      observers.handlers[observers.next] = handler
      return observers.next
    }
  }

  public func removeObserver(_ token: UInt64) { _ = core.observers.withLock { $0.handlers.removeValue(forKey: token) } }

  // MARK: Commands (MPRIS Player methods; each returns at once)

  /// Resumes or starts `app`'s music (nil: `nowPlayingApp`). False when there is no such app.
  @discardableResult public func play(_ app: String? = nil) -> Bool { send("Play", to: app) }
  @discardableResult public func pause(_ app: String? = nil) -> Bool { send("Pause", to: app) }
  @discardableResult public func togglePlayPause(_ app: String? = nil) -> Bool { send("PlayPause", to: app) }
  @discardableResult public func stop(_ app: String? = nil) -> Bool { send("Stop", to: app) }
  @discardableResult public func skipToNextItem(_ app: String? = nil) -> Bool { send("Next", to: app) }
  @discardableResult public func skipToPreviousItem(_ app: String? = nil) -> Bool { send("Previous", to: app) }

  /// Moves `seconds` forward (negative: back) in what `app` plays (MPRIS `Seek`).
  @discardableResult
  public func seek(by seconds: Double, in app: String? = nil) -> Bool {
    guard seconds.isFinite else { return false }
    return send("Seek", [.int64(Int64(seconds * 1_000_000))], to: app)
  }

  /// Moves to `seconds` into what `app` plays (MPRIS `SetPosition`, with the item's track id).
  @discardableResult
  public func setCurrentPlaybackTime(_ seconds: Double, in app: String? = nil) -> Bool {
    guard seconds.isFinite, seconds >= 0 else { return false }
    return enqueue(.setPosition(seconds), to: app)
  }

  /// Hands `uri` (a `file://` URL, or another scheme the app lists) to `app` to play (MPRIS
  /// `OpenUri`).
  @discardableResult
  public func open(_ uri: String, in app: String? = nil) -> Bool { enqueue(.openURIs([uri]), to: app) }

  /// Hands the player's own songs (picked in the game: `MediaPicker`) to their music app, where
  /// it takes files (`SystemMusicApp.canOpenFiles`). One song is opened as it is; several go as
  /// an M3U playlist (written to `$XDG_RUNTIME_DIR`, else the temporary folder) when the app
  /// lists a playlist type, else one after the other (apps that queue what they open keep them
  /// all; others play the last). False when there is no such app or nothing to hand over.
  @discardableResult
  public func setQueue(with items: [MediaItem], in app: String? = nil) -> Bool {
    let uris = items.filter { $0.assetURL.isFileURL }.map(\.assetURL.absoluteString)
    guard !uris.isEmpty else { return false }
    return enqueue(.openURIs(uris), to: app)
  }

  private func send(_ member: String, _ arguments: [BusValue] = [], to app: String?) -> Bool {
    enqueue(.method(member, arguments), to: app)
  }

  private func enqueue(_ command: ClientCore.Command, to app: String?) -> Bool {
    guard core.running.load(ordering: .acquiring) else { return false }
    let target = core.shared.withLock { shared -> String? in
      if let app { return shared.apps[app] != nil ? app : nil }
      return shared.nowPlayingApp?.busName
    }
    guard let target else { return false }
    core.commands.withLock { $0.append((target, command)) }
    core.wakeUp.signal()
    return true
  }

  /// Runs `body` on the player's thread once per turn (at least every `pollInterval`), for a
  /// coordinator that watches the game's music beside the apps.
  package func everyTurn(_ body: @escaping @Sendable () -> Void) {
    core.turnHandlers.withLock { $0.append(body) }
    core.wakeUp.signal()
  }

  /// How often the thread turns when nothing arrives (what `everyTurn` work waits at most).
  static let pollInterval = 0.05
}

/// What the player's thread shares with the player, and the thread's own work.
private final class ClientCore: @unchecked Sendable {
  enum Command {
    case method(String, [BusValue])
    case setPosition(Double)
    case openURIs([String])
  }

  struct Shared {
    var apps: [String: SystemMusicApp] = [:]
    /// Bus names in the order they last started playing, most recent last.
    var playOrder: [String] = []
    var stoppedReason: DesktopBusError?

    var nowPlayingApp: SystemMusicApp? {
      if let playing = playOrder.last(where: { apps[$0]?.playbackState == .playing }) { return apps[playing] }
      if let last = playOrder.last(where: { apps[$0] != nil }) { return apps[last] }
      return apps.values.min { $0.busName < $1.busName }
    }
  }

  struct Observers {
    var next: UInt64 = 0
    var handlers: [UInt64: @Sendable (SystemMusicEvent) -> Void] = [:]
  }

  let connection: BusConnection
  let running = Atomic<Bool>(true)
  let finished = DispatchSemaphore(value: 0)
  let wakeUp = WakeUpSignal()
  let shared = Mutex(Shared())
  let observers = Mutex(Observers())
  let commands = Mutex<[(String, Command)]>([])
  let turnHandlers = Mutex<[@Sendable () -> Void]>([])
  /// GetAll answers still awaited from the first list (for `waitForFirstAnswers`).
  let firstAnswersPending = Atomic<Int>(0)

  // The thread's own (touched only on it, after `begin`).
  /// Unique connection name (":1.42") to the MPRIS names it owns: signals come from the
  /// unique name.
  private var owners: [String: Set<String>] = [:]
  private var ownerOf: [String: String] = [:]
  private let ownProcess = getpid()

  init(connection: BusConnection) { self.connection = connection }

  /// On the caller's thread, before the player's thread starts: the matches, then the players
  /// already there.
  func begin() throws(DesktopBusError) {
    try connection.addMatch(
      "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',"
        + "arg0namespace='org.mpris.MediaPlayer2'"
    ) { [unowned self] message in nameOwnerChanged(message) }
    try connection.addMatch(
      "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',"
        + "path='\(SystemMusicPlayer.objectPath)'"
    ) { [unowned self] message in propertiesChanged(message) }
    try connection.addMatch(
      "type='signal',interface='\(SystemMusicPlayer.playerInterface)',member='Seeked',path='\(SystemMusicPlayer.objectPath)'"
    ) { [unowned self] message in seeked(message) }
    let names = try connection.callBus("ListNames").first?.stringArrayValue ?? []
    for name in names where name.hasPrefix(SystemMusicPlayer.busNamePrefix) {
      guard let owner = try? connection.callBus("GetNameOwner", .string(name)).first?.stringValue else { continue }
      adopt(name, owner: owner, first: true)
    }
  }

  func waitForFirstAnswers(seconds: Double) {
    let deadline = SystemMusicApp.now() + seconds
    while firstAnswersPending.load(ordering: .acquiring) > 0 && SystemMusicApp.now() < deadline { usleep(2000) }
  }

  func run() {
    while running.load(ordering: .acquiring) {
      runCommands()
      for handler in turnHandlers.withLock({ $0 }) { handler() }
      runCommands()
      do {
        try connection.process(waitingAtMost: SystemMusicPlayer.pollInterval, wakeUp: wakeUp)
      } catch {
        shared.withLock { $0.stoppedReason = error }
        let gone = shared.withLock { shared in
          defer {
            shared.apps = [:]
            shared.playOrder = []
          }
          return Array(shared.apps.values)
        }
        for app in gone { notify(.disappeared(busName: app.busName, identity: app.identity)) }
        if running.exchange(false, ordering: .acquiringAndReleasing) { return }
        break
      }
    }
    // Whatever a last turn queued (a coordinator resuming the apps it paused) goes out before
    // the connection closes; `BusConnection`'s deinit flushes it.
    runCommands()
    for handler in turnHandlers.withLock({ $0 }) { handler() }
    runCommands()
    try? connection.process(waitingAtMost: 0)
    finished.signal()
  }

  private func notify(_ event: SystemMusicEvent) {
    for handler in observers.withLock({ Array($0.handlers.values) }) { handler(event) }
  }

  // MARK: Following the apps

  /// The MPRIS names of proxies that mirror another player (playerctl's `playerctld daemon`,
  /// common on tiling-window-manager desktops): not music apps. Counted as one, the real app was
  /// paused and resumed twice, and a resume through the proxy went to whichever player it
  /// followed by then (a desktop trial).
  static let proxyNames: Set<String> = ["org.mpris.MediaPlayer2.playerctld"]

  /// A new MPRIS name: read its properties (without waiting), unless it is this process's own
  /// `NowPlayingService` or a proxy (`proxyNames`).
  private func adopt(_ name: String, owner: String, first: Bool = false) {
    guard !Self.proxyNames.contains(name) else { return }
    let identity = connection.identity(of: owner)
    guard !ownPlayerConnections.withLock({ $0.contains(identity) }) else { return }
    owners[owner, default: []].insert(name)
    ownerOf[name] = owner
    if first { firstAnswersPending.add(1, ordering: .relaxed) }
    var pending = 2
    var app = SystemMusicApp(busName: name)
    for interface in [SystemMusicPlayer.rootInterface, SystemMusicPlayer.playerInterface] {
      guard let call = getAll(name, interface) else { continue }
      connection.callAsync(call, timeout: 2) { [unowned self] result in
        if case .success(let reply) = result, let values = reply.arguments().first?.dictionaryValue {
          app.apply(values)
        }
        pending -= 1
        guard pending == 0 else { return }
        if first { firstAnswersPending.subtract(1, ordering: .releasing) }
        // Gone again before it answered: nothing to show.
        guard ownerOf[name] == owner else { return }
        shared.withLock { shared in
          shared.apps[name] = app
          if app.playbackState == .playing { shared.playOrder.append(name) }
        }
        notify(.appeared(app))
      }
    }
  }

  private func getAll(_ name: String, _ interface: String) -> BusMessage? {
    guard
      let call = connection.methodCall(
        destination: name, path: SystemMusicPlayer.objectPath, interface: SystemMusicPlayer.propertiesInterface,
        member: "GetAll")
    else { return nil }
    call.append(.string(interface))
    return call
  }

  private func nameOwnerChanged(_ message: BusMessage) {
    let arguments = message.arguments()
    guard arguments.count == 3, let name = arguments[0].stringValue, name.hasPrefix(SystemMusicPlayer.busNamePrefix),
      let newOwner = arguments[2].stringValue
    else { return }
    if let old = ownerOf.removeValue(forKey: name) {
      owners[old]?.remove(name)
      if owners[old]?.isEmpty == true { owners[old] = nil }
      let removed = shared.withLock { shared -> SystemMusicApp? in
        shared.playOrder.removeAll { $0 == name }
        return shared.apps.removeValue(forKey: name)
      }
      if let removed { notify(.disappeared(busName: name, identity: removed.identity)) }
    }
    if !newOwner.isEmpty { adopt(name, owner: newOwner) }
  }

  private func propertiesChanged(_ message: BusMessage) {
    let arguments = message.arguments()
    guard let sender = message.sender, let names = owners[sender], arguments.count >= 2,
      let interface = arguments[0].stringValue,
      interface == SystemMusicPlayer.playerInterface || interface == SystemMusicPlayer.rootInterface,
      let changed = arguments[1].dictionaryValue
    else { return }
    let invalidated = arguments.count > 2 ? arguments[2].stringArrayValue ?? [] : []
    for name in names {
      update(name) { $0.apply(changed) }
      // A property sent without its value: ask for them all again.
      if !invalidated.isEmpty, let call = getAll(name, interface) {
        connection.callAsync(call) { [unowned self] result in
          guard case .success(let reply) = result, let values = reply.arguments().first?.dictionaryValue else { return }
          update(name) { $0.apply(values) }
        }
      }
      // A new state or item: where it is now (MPRIS sends no position as it plays on).
      if changed[bus: "PlaybackStatus"] != nil || changed[bus: "Metadata"] != nil { refreshPosition(name) }
    }
  }

  private func seeked(_ message: BusMessage) {
    guard let sender = message.sender, let names = owners[sender],
      let micro = message.arguments().first?.int64Value
    else { return }
    for name in names { update(name) { $0.setPosition(Double(micro) / 1_000_000) } }
  }

  private func refreshPosition(_ name: String) {
    guard
      let call = connection.methodCall(
        destination: name, path: SystemMusicPlayer.objectPath, interface: SystemMusicPlayer.propertiesInterface,
        member: "Get")
    else { return }
    call.append(.string(SystemMusicPlayer.playerInterface), .string("Position"))
    connection.callAsync(call) { [unowned self] result in
      guard case .success(let reply) = result, let micro = reply.arguments().first?.int64Value else { return }
      update(name, announce: false) { $0.setPosition(Double(micro) / 1_000_000) }
    }
  }

  private func update(_ name: String, announce: Bool = true, _ change: (inout SystemMusicApp) -> Void) {
    let updated = shared.withLock { shared -> SystemMusicApp? in
      guard var app = shared.apps[name] else { return nil }
      let wasPlaying = app.playbackState == .playing
      change(&app)
      shared.apps[name] = app
      if app.playbackState == .playing && !wasPlaying {
        shared.playOrder.removeAll { $0 == name }
        shared.playOrder.append(name)
      }
      return app
    }
    if announce, let updated { notify(.changed(updated)) }
  }

  // MARK: Commands

  private func runCommands() {
    let queued = commands.withLock { queued in
      defer { queued.removeAll(keepingCapacity: true) }
      return queued
    }
    for (name, command) in queued { run(command, on: name) }
  }

  private func run(_ command: Command, on name: String) {
    guard let app = shared.withLock({ $0.apps[name] }) else {
      return notify(
        .commandFailed(busName: name, DesktopBusError(.callFailed, operation: "\(command)", detail: "\(name) is gone")))
    }
    switch command {
    case .method(let member, let arguments):
      call(member, arguments, on: name)
    case .setPosition(let seconds):
      guard let track = app.nowPlaying?.trackID else {
        return notify(
          .commandFailed(
            busName: name,
            DesktopBusError(
              .callFailed, operation: "Player.SetPosition on \(name)", detail: "it names no track (mpris:trackid)")))
      }
      call("SetPosition", [.objectPath(track), .int64(Int64(seconds * 1_000_000))], on: name)
    case .openURIs(let uris):
      if uris.count > 1, let playlist = writePlaylist(uris, for: app) {
        call("OpenUri", [.string(playlist)], on: name)
      } else {
        for uri in uris { call("OpenUri", [.string(uri)], on: name) }
      }
    }
  }

  private func call(_ member: String, _ arguments: [BusValue], on name: String) {
    guard
      let message = connection.methodCall(
        destination: name, path: SystemMusicPlayer.objectPath, interface: SystemMusicPlayer.playerInterface,
        member: member)
    else { return }
    for argument in arguments { message.append(argument) }
    let sent = connection.callAsync(message, timeout: 2) { [unowned self] result in
      if case .failure(let error) = result { notify(.commandFailed(busName: name, error)) }
    }
    if !sent {
      notify(
        .commandFailed(
          busName: name, DesktopBusError(.callFailed, operation: "Player.\(member) on \(name)", detail: "not sent")))
    }
  }

  /// Several songs for an app that opens playlists: one M3U file (paths as file URLs, one per
  /// line) in `$XDG_RUNTIME_DIR/leitmotif` (private to the user), else the temporary folder.
  /// Nil when the app lists no playlist type or the file cannot be written.
  private func writePlaylist(_ uris: [String], for app: SystemMusicApp) -> String? {
    let playlistTypes = ["audio/x-mpegurl", "audio/mpegurl", "application/x-mpegurl", "application/vnd.apple.mpegurl"]
    guard app.supportedMimeTypes.contains(where: playlistTypes.contains) else { return nil }
    let environment = ProcessInfo.processInfo.environment
    let base = environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? environment["TMPDIR"] ?? "/tmp"
    let folder = base + "/leitmotif"
    mkdir(folder, 0o700)
    let path = folder + "/picked-\(ownProcess).m3u"
    let text = "#EXTM3U\n" + uris.map { $0 + "\n" }.joined()
    guard (try? Data(text.utf8).write(to: URL(fileURLWithPath: path))) != nil else { return nil }
    return URL(fileURLWithPath: path).absoluteString
  }
}
