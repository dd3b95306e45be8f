import Foundation
import Synchronization

@testable import LeitmotifDesktop

/// A small MPRIS player of the tests' own: the player's music app, as Rhythmbox or VLC would be
/// on a desktop. It plays nothing; it keeps a play state, a list of tracks and a position, and
/// answers MPRIS's methods and properties on its own connection and thread, announcing each
/// change with `PropertiesChanged` as the specification asks. It records every method called,
/// so a test sees what reached it. `playerctl` can drive it as a person would.
final class TestMusicApp: @unchecked Sendable {
  struct Track {
    var id: String
    var title: String
    var artist: String
    var album: String
    var seconds: Double
  }

  struct State {
    var status = "Stopped"
    var track = 0
    var position = 0.0
    var volume = 1.0
    var calls: [String] = []
    var opened: [String] = []
  }

  let busName: String
  let tracks: [Track]
  let state = Mutex(State())
  /// The app's connection: its thread's alone while it runs; closed by `stop` (the app leaves
  /// the bus, as a player that quits does).
  private var connection: BusConnection!
  private let running = Atomic<Bool>(true)
  private let finished = DispatchSemaphore(value: 0)
  private let canOpenFiles: Bool
  private let requests = Mutex<[String]>([])
  /// Seconds between a change and its `PropertiesChanged`, as a slow app takes; 0: at once.
  private let announceDelay: Double
  /// Answers Play, Pause, Stop and PlayPause with an error and stays as it is.
  let refusesTransport: Bool
  /// While set, every change's signal waits (`holdAnnouncements`), to go out with the next ones.
  private let holding = Atomic<Bool>(false)
  /// Signals waiting for their time (the app's thread only), in order.
  private var announcements: [(due: Double, values: [(String, BusValue)])] = []

  init(
    bus: TestSessionBus, name: String = "testapp", identity: String = "Test Music", canOpenFiles: Bool = true,
    announceDelay: Double = 0, refusesTransport: Bool = false
  ) throws {
    self.refusesTransport = refusesTransport
    busName = "org.mpris.MediaPlayer2." + name
    self.canOpenFiles = canOpenFiles
    self.announceDelay = announceDelay
    tracks = [
      Track(id: "/test/track/1", title: "Morning Song", artist: "The Testers", album: "Fixtures", seconds: 200),
      Track(id: "/test/track/2", title: "Evening Song", artist: "The Testers", album: "Fixtures", seconds: 180),
    ]
    connection = try BusConnection(address: bus.address)
    let identity = identity
    try connection.addObject(path: "/org/mpris/MediaPlayer2") { [unowned self] message in
      handle(message, identity: identity)
    }
    try connection.requestName(busName)
    // The connection is this thread's alone (sd-bus is not thread-safe): a status set from the
    // test waits in `requests` for it.
    Thread { [self] in
      while running.load(ordering: .acquiring) {
        for status in requests.withLock({ requests in
          defer { requests = [] }; return requests
        }) {
          applyStatus(status)
        }
        let now = Self.now()
        while !holding.load(ordering: .acquiring), let first = announcements.first, first.due <= now {
          announcements.removeFirst()
          announce(first.values)
        }
        try? connection.process(waitingAtMost: 0.005)
      }
      connection = nil
      finished.signal()
    }.start()
  }

  func stop() {
    guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
    finished.wait()
  }

  deinit { stop() }

  var status: String { state.withLock { $0.status } }
  var calls: [String] { state.withLock { $0.calls } }
  var opened: [String] { state.withLock { $0.opened } }

  // MARK: MPRIS

  private func metadata(_ state: State) -> [(String, BusValue)] {
    let track = tracks[state.track]
    return [
      ("mpris:trackid", .objectPath(track.id)), ("xesam:title", .string(track.title)),
      ("xesam:artist", .stringArray([track.artist])), ("xesam:album", .string(track.album)),
      ("mpris:length", .int64(Int64(track.seconds * 1_000_000))), ("mpris:artUrl", .string("file:///covers/1.png")),
      ("xesam:audioBPM", .int32(100)),
    ]
  }

  private func properties(_ interface: String, identity: String) -> [(String, BusValue)] {
    state.withLock { state in
      if interface == "org.mpris.MediaPlayer2" {
        return [
          ("Identity", .string(identity)), ("CanQuit", .boolean(false)), ("CanRaise", .boolean(false)),
          ("HasTrackList", .boolean(false)), ("DesktopEntry", .string("test-music")),
          ("SupportedUriSchemes", .stringArray(canOpenFiles ? ["file"] : [])),
          ("SupportedMimeTypes", .stringArray(canOpenFiles ? ["audio/ogg", "audio/x-mpegurl"] : [])),
        ]
      }
      return [
        ("PlaybackStatus", .string(state.status)), ("LoopStatus", .string("None")), ("Rate", .double(1)),
        ("Shuffle", .boolean(false)), ("Metadata", .dictionary(metadata(state))), ("Volume", .double(state.volume)),
        ("Position", .int64(Int64(state.position * 1_000_000))), ("MinimumRate", .double(1)),
        ("MaximumRate", .double(1)), ("CanGoNext", .boolean(true)), ("CanGoPrevious", .boolean(true)),
        ("CanPlay", .boolean(true)), ("CanPause", .boolean(true)), ("CanSeek", .boolean(true)),
        ("CanControl", .boolean(true)),
      ]
    }
  }

  private func changed(_ values: [(String, BusValue)]) {
    guard announceDelay > 0 || holding.load(ordering: .acquiring) else { return announce(values) }
    announcements.append((Self.now() + announceDelay, values))
  }

  private static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

  private func announce(_ values: [(String, BusValue)]) {
    guard
      let signal = connection.signal(
        path: "/org/mpris/MediaPlayer2", interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")
    else { return }
    signal.append(.string("org.mpris.MediaPlayer2.Player"), .dictionary(values), .stringArray([]))
    connection.send(signal)
  }

  private func seeked() {
    guard
      let signal = connection.signal(
        path: "/org/mpris/MediaPlayer2", interface: "org.mpris.MediaPlayer2.Player", member: "Seeked")
    else { return }
    signal.append(.int64(Int64(state.withLock { $0.position } * 1_000_000)))
    connection.send(signal)
  }

  private func handle(_ message: BusMessage, identity: String) {
    let member = message.member ?? ""
    let arguments = message.arguments()
    var reply: [BusValue] = []
    switch (message.interface ?? "", member) {
    case ("org.freedesktop.DBus.Properties", "GetAll"):
      reply = [.dictionary(properties(arguments.first?.stringValue ?? "", identity: identity))]
    case ("org.freedesktop.DBus.Properties", "Get"):
      guard arguments.count == 2, let name = arguments[1].stringValue,
        let value = properties(arguments[0].stringValue ?? "", identity: identity)[bus: name]
      else {
        return connection.replyError(to: message, name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no")
      }
      reply = [.variant(value)]
    case ("org.freedesktop.DBus.Properties", "Set"):
      if arguments.count == 3, arguments[1].stringValue == "Volume", let volume = arguments[2].doubleValue {
        state.withLock { $0.volume = volume }
        changed([("Volume", .double(volume))])
      }
    case ("org.mpris.MediaPlayer2.Player", _):
      state.withLock { $0.calls.append(member) }
      if refusesTransport && ["Play", "Pause", "Stop", "PlayPause"].contains(member) {
        return connection.replyError(to: message, name: "org.example.Refused", message: "not now")
      }
      switch member {
      case "Play": applyStatus("Playing")
      case "Pause": applyStatus("Paused")
      case "Stop": applyStatus("Stopped")
      case "PlayPause": applyStatus(status == "Playing" ? "Paused" : "Playing")
      case "Next", "Previous":
        let values = state.withLock { state -> [(String, BusValue)] in
          state.track = (state.track + (member == "Next" ? 1 : tracks.count - 1)) % tracks.count
          state.position = 0
          return [("Metadata", .dictionary(metadata(state)))]
        }
        changed(values)
      case "Seek":
        let offset = Double(arguments.first?.int64Value ?? 0) / 1_000_000
        state.withLock { $0.position = max(0, $0.position + offset) }
        seeked()
      case "SetPosition":
        if arguments.count == 2, let position = arguments[1].int64Value {
          state.withLock { $0.position = Double(position) / 1_000_000 }
          seeked()
        }
      case "OpenUri":
        guard canOpenFiles else {
          return connection.replyError(
            to: message, name: "org.freedesktop.DBus.Error.NotSupported", message: "this player opens nothing")
        }
        state.withLock { $0.opened.append(arguments.first?.stringValue ?? "") }
        applyStatus("Playing")
      default:
        return connection.replyError(to: message, name: "org.freedesktop.DBus.Error.UnknownMethod", message: member)
      }
    default:
      return connection.replyError(to: message, name: "org.freedesktop.DBus.Error.UnknownMethod", message: member)
    }
    guard let answer = connection.methodReturn(to: message) else { return }
    for value in reply { answer.append(value) }
    connection.send(answer)
  }

  /// Keeps the app's `PropertiesChanged` signals back until `releaseAnnouncements`, which sends
  /// them all at once, back to back (a listener then reads them in one go).
  func holdAnnouncements() { holding.store(true, ordering: .releasing) }
  func releaseAnnouncements() { holding.store(false, ordering: .releasing) }

  /// Changes the play state as a person at the app would (on the app's thread, within 5 ms).
  func setStatus(_ status: String) { requests.withLock { $0.append(status) } }

  private func applyStatus(_ status: String) {
    let changed = state.withLock { state -> Bool in
      defer { state.status = status }
      return state.status != status
    }
    if changed { self.changed([("PlaybackStatus", .string(status))]) }
  }
}
