import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

#if canImport(Glibc)
  import Glibc
#endif

/// A tiny real library for the picker: five short Vorbis files with tags (each a different tone,
/// so each has its own persistent id), in a folder of a temporary directory, with the state and
/// cache directories beside it.
final class PickerLibrary: Sendable {
  let directory: TemporaryDirectory
  let applicationID = "picker-test"

  /// Title, artist, album, tone in Hz. Sorted by title ignoring a leading "The": Ballad, Dragon,
  /// The March, Overture, Zephyr.
  static let songs: [(title: String, artist: String, album: String, hertz: Double)] = [
    ("Overture", "Beyoncé", "Opening Night", 330),
    ("Dragon Flight", "Ash Lake", "Skies", 392),
    ("The March", "Brass Band", "Parade", 440),
    ("Ballad", "Quiet Ones", "Lullabies", 494),
    ("Zephyr", "Ash Lake", "Winds", 523),
  ]
  static var sortedTitles: [String] { ["Ballad", "Dragon Flight", "The March", "Overture", "Zephyr"] }

  init() throws {
    directory = try TemporaryDirectory(prefix: "leitmotif-picker")
    try FileManager.default.createDirectory(atPath: musicFolder, withIntermediateDirectories: true)
    for (index, song) in Self.songs.enumerated() {
      let format = PCMFormat.stereo44100
      let samples = ToneGenerator.sine(frequency: song.hertz, amplitude: 0.4, seconds: 0.3, format: format)
      try VorbisEncoder.encode(
        samples: samples, format: format,
        tags: [("TITLE", song.title), ("ARTIST", song.artist), ("ALBUM", song.album)], quality: 0.1,
        to: musicFolder + "/\(index + 1).ogg")
    }
  }

  var musicFolder: String { directory.file("Music") }

  /// The environment the `leitmotif` executable runs with: XDG paths inside the directory.
  var environment: [String: String] {
    [
      "HOME": directory.path, "XDG_STATE_HOME": directory.file("state"), "XDG_CACHE_HOME": directory.file("cache"),
      "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "LANG": "C.UTF-8",
    ]
  }

  /// A library over the music folder, with the same state and index the executable uses.
  func library(
    usageDescription: String? = "The picker test lists your music.", answer: Bool? = true,
    environment extra: [String: String] = [:]
  ) -> (MediaLibrary, CountingPrompt) {
    var configuration = MediaLibrary.Configuration(
      applicationID: applicationID, usageDescription: usageDescription,
      folders: [URL(fileURLWithPath: musicFolder)])
    configuration.environment = environment.merging(extra) { _, new in new }
    let prompt = CountingPrompt(answer: answer)
    return (MediaLibrary(configuration: configuration, prompt: prompt), prompt)
  }

  /// An authorized, scanned library.
  func scannedLibrary() throws -> MediaLibrary {
    let (library, _) = self.library()
    #expect(try library.requestAuthorization() == .authorized)
    let report = try library.scan()
    #expect(report.added == Self.songs.count, "\(report)")
    return library
  }
}

/// An `AuthorizationPrompt` with a fixed answer that counts how often it was asked.
final class CountingPrompt: AuthorizationPrompt, @unchecked Sendable {
  let answer: Bool?
  private let lock = NSLock()
  private var asked = 0
  init(answer: Bool?) { self.answer = answer }
  var count: Int { lock.withLock { asked } }
  func askForLibraryAccess(applicationName: String, usageDescription: String) -> Bool? {
    lock.withLock { asked += 1 }
    return answer
  }
}

/// Records what a picker told its delegate.
final class PickerEvents: MediaPickerDelegate {
  var picked: [MediaItemCollection] = []
  var cancelled = 0
  func mediaPicker(_ picker: MediaPicker, didPick collection: MediaItemCollection) { picked.append(collection) }
  func mediaPickerDidCancel(_ picker: MediaPicker) { cancelled += 1 }
}

@Suite("The media picker (MediaPicker) over a real library")
struct PickerModelTests {
  @Test("Presenting asks once when nobody has, then lists every song by title in index sections")
  func presentAsksAndLists() throws {
    let music = try PickerLibrary()
    let (library, prompt) = music.library()
    let picker = MediaPicker(library: library)
    #expect(library.authorizationStatus == .notDetermined)
    try picker.present()
    #expect(prompt.count == 1)
    #expect(library.authorizationStatus == .authorized)
    _ = try library.scan()
    try picker.reload()
    #expect(picker.state == .presented)
    #expect(picker.items.map(\.title) == PickerLibrary.sortedTitles)
    #expect(picker.libraryItemCount == 5)
    #expect(picker.sections.map(\.title) == ["B", "D", "M", "O", "Z"])
    #expect(picker.sections.map(\.range) == [0..<1, 1..<2, 2..<3, 3..<4, 4..<5])
    #expect(picker.items.allSatisfy { $0.persistentID != nil })

    // A second presentation does not ask again.
    try MediaPicker(library: library).present()
    #expect(prompt.count == 1)
  }

  @Test("Search text matches title, artist or album, ignoring case and diacritics; sections follow")
  func searchFilters() throws {
    let music = try PickerLibrary()
    let picker = MediaPicker(library: try music.scannedLibrary())
    try picker.present()

    try picker.setSearchText("beyonce")  // artist "Beyoncé"
    #expect(picker.items.map(\.title) == ["Overture"])
    try picker.setSearchText("ASH LAKE")  // artist, two songs, in title order
    #expect(picker.items.map(\.title) == ["Dragon Flight", "Zephyr"])
    #expect(picker.sections == [.init(title: "D", range: 0..<1), .init(title: "Z", range: 1..<2)])
    try picker.setSearchText("parade")  // album
    #expect(picker.items.map(\.title) == ["The March"])
    try picker.setSearchText("LIGHT")  // part of a title
    #expect(picker.items.map(\.title) == ["Dragon Flight"])
    try picker.setSearchText("nothing like this")
    #expect(picker.items.isEmpty && picker.sections.isEmpty)
    #expect(picker.libraryItemCount == 5)
    try picker.setSearchText("  ")
    #expect(picker.items.count == 5)
  }

  @Test("Single mode: choosing an item picks it at once and finishes the picker")
  func singlePick() throws {
    let music = try PickerLibrary()
    let picker = MediaPicker(library: try music.scannedLibrary())
    let events = PickerEvents()
    picker.delegate = events
    #expect(picker.allowsPickingMultipleItems == false)
    try picker.present()
    let zephyr = try #require(picker.items.last)
    picker.toggle(zephyr)
    #expect(events.picked == [MediaItemCollection(items: [zephyr])])
    #expect(picker.state == .picked)
    picker.toggle(picker.items[0])
    picker.cancel()
    #expect(events.picked.count == 1 && events.cancelled == 0, "a finished picker ignores further calls")
  }

  @Test("Multiple mode: toggling marks and unmarks; pick hands over the marks in the order made")
  func multiplePick() throws {
    let music = try PickerLibrary()
    let picker = MediaPicker(library: try music.scannedLibrary())
    let events = PickerEvents()
    picker.delegate = events
    picker.allowsPickingMultipleItems = true
    try picker.present()
    #expect(picker.pick() == false, "nothing is marked yet")
    let items = picker.items
    picker.toggle(items[3])
    picker.toggle(items[0])
    picker.toggle(items[1])
    picker.toggle(items[0])
    #expect(picker.selection == [items[3], items[1]])
    #expect(picker.isSelected(items[1]) && !picker.isSelected(items[0]))
    // The selection survives a search that hides a marked item.
    try picker.setSearchText("zephyr")
    #expect(picker.selection == [items[3], items[1]])
    #expect(events.picked.isEmpty)
    #expect(picker.pick())
    #expect(events.picked == [MediaItemCollection(items: [items[3], items[1]])])
  }

  @Test(
    "Consent withdrawn while the picker is open: a search is refused and shows nothing, a pick cancels, nothing reaches the game"
  )
  func consentWithdrawnWhileOpen() throws {
    let music = try PickerLibrary()
    let library = try music.scannedLibrary()
    let picker = MediaPicker(library: library)
    picker.allowsPickingMultipleItems = true
    let events = PickerEvents()
    picker.delegate = events
    try picker.present()
    picker.toggle(picker.items[0])
    picker.toggle(picker.items[1])
    var configuration = MediaLibrary.Configuration(
      applicationID: music.applicationID, usageDescription: "The picker test lists your music.",
      folders: [URL(fileURLWithPath: music.musicFolder)])
    configuration.environment = music.environment
    try LibraryAccessStore(configuration: configuration).remember(.denied, for: music.applicationID)
    #expect(library.authorizationStatus == .denied)
    #expect(throws: LibraryError.self) { try picker.setSearchText("ball") }
    #expect(picker.searchText == "", "the text goes with the items it found")
    #expect(picker.items.isEmpty && picker.selection.isEmpty, "nothing of the player's stays on show")
    #expect(!picker.pick())
    #expect(events.picked.isEmpty && events.cancelled == 1 && picker.state == .cancelled)
  }

  @Test("Cancel tells the delegate didCancel")
  func cancel() throws {
    let music = try PickerLibrary()
    let picker = MediaPicker(library: try music.scannedLibrary())
    let events = PickerEvents()
    picker.delegate = events
    try picker.present()
    picker.cancel()
    #expect(events.cancelled == 1 && events.picked.isEmpty)
    #expect(picker.state == .cancelled)
  }

  @Test("Without a usage description presenting is an error; nobody is asked, nothing is read")
  func missingUsageDescription() throws {
    let music = try PickerLibrary()
    let (library, prompt) = music.library(usageDescription: nil)
    let picker = MediaPicker(library: library)
    let events = PickerEvents()
    picker.delegate = events
    #expect {
      try picker.present()
    } throws: { error in
      guard case LibraryError.missingUsageDescription(let app) = error else { return false }
      return app == music.applicationID && "\(error)".contains("usageDescription")
    }
    #expect(prompt.count == 0)
    #expect(picker.state == .idle && picker.items.isEmpty)
    #expect(events.cancelled == 0 && events.picked.isEmpty)
    #expect(!FileManager.default.fileExists(atPath: music.directory.file("cache")), "the index was not opened")
  }

  @Test("Denied, restricted or nobody to ask: an access error naming the state, and no delegate call")
  func noAccess() throws {
    let cases: [(Bool?, [String: String], AuthorizationStatus)] = [
      (false, [:], .denied), (nil, [:], .notDetermined),
      (true, ["LEITMOTIF_LIBRARY_ACCESS": "restricted"], .restricted),
    ]
    for (answer, environment, expected) in cases {
      let music = try PickerLibrary()  // answers are remembered: a fresh state per case
      let (library, prompt) = music.library(answer: answer, environment: environment)
      let picker = MediaPicker(library: library)
      let events = PickerEvents()
      picker.delegate = events
      #expect("\(expected)") {
        try picker.present()
      } throws: { error in
        guard case LibraryError.accessDenied(let status, _) = error else { return false }
        return status == expected && "\(error)".contains(expected.rawValue)
      }
      #expect(picker.state == .idle)
      #expect(events.cancelled == 0 && events.picked.isEmpty)
      if expected == .restricted { #expect(prompt.count == 0, "a restricted player is not asked") }
      #expect(!FileManager.default.fileExists(atPath: music.directory.file("cache")), "the index was not opened")
    }
  }
}

/// Drives `leitmotif pick` in a detached tmux session of its own (its own server socket), the way
/// a player would in a terminal: keys in with send-keys, the screen out with capture-pane.
final class TmuxPick {
  static let tmux: String? = ["/usr/bin/tmux", "/usr/local/bin/tmux", "/bin/tmux"].first {
    FileManager.default.isExecutableFile(atPath: $0)
  }

  let music: PickerLibrary
  let socket: String
  let output: String
  let errors: String
  let status: String

  /// Starts `leitmotif pick ARGUMENTS --library MUSIC --app ID` in an 80x24 pane. Its stdout,
  /// stderr and exit status go to files (the screen is drawn on the pane's terminal).
  init(_ arguments: [String], music: PickerLibrary, folder: String? = nil, columns: Int = 80, rows: Int = 24) throws {
    self.music = music
    socket = music.directory.file("tmux.sock")
    output = music.directory.file("pick.out")
    errors = music.directory.file("pick.err")
    status = music.directory.file("pick.status")
    let executable = try #require(LeitmotifCommand.executable).path
    let command =
      ([executable, "pick"] + arguments + ["--library", folder ?? music.musicFolder, "--app", music.applicationID])
      .map(Self.quote).joined(separator: " ")
    // The terminal's modes before and after, to prove the picker puts them back.
    let modes = music.directory.file("stty")
    let shell =
      "stty -a >\(Self.quote(modes + ".before")); \(command) >\(Self.quote(output)) 2>\(Self.quote(errors)); "
      + "code=$?; stty -a >\(Self.quote(modes + ".after")); echo $code >\(Self.quote(status))"
    try run(["-f", "/dev/null", "new-session", "-d", "-s", "pick", "-x", "\(columns)", "-y", "\(rows)", shell])
  }

  deinit { _ = try? run(["kill-server"]) }

  static func quote(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

  /// Runs a tmux client command and returns what it printed.
  ///
  /// Through `ChildProcess` (posix_spawn with the signal mask and handlers reset), not `Process`:
  /// a test's worker thread blocks most signals, so the tmux server (and the picker under it)
  /// would never see SIGCHLD, SIGTERM or SIGWINCH. Output goes through a file: the server the
  /// first command forks would hold a pipe open.
  @discardableResult
  func run(_ arguments: [String]) throws -> String {
    let tmux = try #require(Self.tmux)
    let outputPath = music.directory.file("tmux-\(UUID().uuidString).out")
    defer { unlink(outputPath) }
    let client = try ChildProcess(tmux, ["-S", socket] + arguments, environment: music.environment, output: outputPath)
    client.finish()
    return (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
  }

  /// The pane's lines as shown (no colours).
  func screen() throws -> [String] {
    let text = try run(["capture-pane", "-p", "-t", "pick"])
    var lines = text.components(separatedBy: "\n")
    if lines.last == "" { lines.removeLast() }
    return lines
  }

  /// Waits (up to 10 s) for the screen to show `text`, and returns it.
  @discardableResult
  func waitFor(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
    let deadline = Date().addingTimeInterval(10)
    var lines: [String] = []
    while Date() < deadline {
      lines = try screen()
      if lines.joined(separator: "\n").contains(text) { return lines }
      usleep(50_000)
    }
    Issue.record(
      "the screen never showed \"\(text)\":\n\(lines.joined(separator: "\n"))", sourceLocation: sourceLocation)
    return lines
  }

  func keys(_ keys: String...) throws { try run(["send-keys", "-t", "pick"] + keys) }
  func type(_ text: String) throws { try run(["send-keys", "-t", "pick", "-l", text]) }

  /// Whether the pane shows the alternate screen (the picker's) rather than the normal one.
  func alternateScreen() throws -> Bool {
    try run(["display-message", "-p", "-t", "pick", "#{alternate_on}"]).hasPrefix("1")
  }

  /// The picker's process id: the child of the pane's shell.
  func pickerProcess() throws -> pid_t {
    let shell = try run(["display-message", "-p", "-t", "pick", "#{pane_pid}"])
      .trimmingCharacters(in: .whitespacesAndNewlines)
    let children = try String(contentsOfFile: "/proc/\(shell)/task/\(shell)/children", encoding: .utf8)
    return try #require(children.split(separator: " ").first.flatMap { pid_t($0) })
  }

  /// The terminal modes (`stty -a`) before the picker started and after it ended.
  func terminalModes() -> (before: String?, after: String?) {
    let modes = music.directory.file("stty")
    return (
      try? String(contentsOfFile: modes + ".before", encoding: .utf8),
      try? String(contentsOfFile: modes + ".after", encoding: .utf8)
    )
  }

  /// Waits (up to 10 s) for the command to end: its exit status, stdout and stderr.
  func finish() throws -> (status: Int32?, output: String, errors: String) {
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline, (try? String(contentsOfFile: status, encoding: .utf8)) == nil { usleep(50_000) }
    usleep(50_000)
    let code = (try? String(contentsOfFile: status, encoding: .utf8)).flatMap {
      Int32($0.trimmingCharacters(in: .whitespacesAndNewlines))
    }
    return (
      code, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "",
      (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
    )
  }
}

/// Every line of a screen fits `columns` (counted in characters: the fixtures are not wide).
func expectFits(_ lines: [String], columns: Int, rows: Int, sourceLocation: SourceLocation = #_sourceLocation) {
  #expect(lines.count <= rows, "\(lines.count) lines", sourceLocation: sourceLocation)
  for line in lines {
    #expect(line.count <= columns, "wider than \(columns): \(line)", sourceLocation: sourceLocation)
  }
}

@Suite(
  "leitmotif pick in a terminal (driven in tmux)",
  .enabled(if: TmuxPick.tmux != nil, "tmux is not installed: apt-get install tmux to run the terminal picker tests"),
  .enabled(if: LeitmotifCommand.executable != nil, "the leitmotif executable is not next to the test bundle"))
struct PickerTerminalTests {
  @Test("Typing filters, arrows move, Enter picks and prints the id and title; every line fits 80x24")
  func typeMoveAndPick() throws {
    let music = try PickerLibrary()
    let library = try music.scannedLibrary()
    let pick = try TmuxPick(["--prompt", "Choose the explore music"], music: music)
    let first = try pick.waitFor("5 of 5 songs")
    expectFits(first, columns: 80, rows: 24)
    #expect(first.count == 24)
    #expect(first[0].contains("Choose the explore music"))
    #expect(first[3].contains("> Ballad"), "the cursor starts on the first song")
    #expect(first.contains { $0.contains(" Z ") && $0.contains("Zephyr — Ash Lake · Winds") })

    try pick.type("ash")
    let filtered = try pick.waitFor("2 of 5 songs")
    #expect(filtered[1].contains("Search: ash"))
    #expect(filtered.contains { $0.contains("Dragon Flight") } && !filtered.contains { $0.contains("Ballad") })

    try pick.keys("C-u")
    let cleared = try pick.waitFor("5 of 5 songs")
    #expect(cleared[4].contains("> Dragon Flight"), "clearing the search keeps the highlighted song")
    try pick.keys("Down", "Down", "Up")
    try pick.waitFor("> The March")
    try pick.keys("Enter")
    let result = try pick.finish()
    #expect(result.status == 0, "\(result.errors)")
    let march = try #require(try library.items(matching: .songs()).first { $0.title == "The March" })
    #expect(result.output == "\(try #require(march.persistentID))\tThe March\n")
  }

  @Test("A library folder that does not exist is named, with why, not called an empty library")
  func missingFolder() throws {
    let music = try PickerLibrary()
    _ = try music.scannedLibrary()
    let missing = music.directory.file("no-such-folder")
    let pick = try TmuxPick([], music: music, folder: missing)
    // Wrapped to the 80 columns: the temporary folder's path is long.
    let lines = try pick.waitFor("No songs:")
    let shown = lines.joined().filter { $0 != " " }
    let expected = "No songs: \(missing): library folder: No such file or directory".filter { $0 != " " }
    #expect(shown.contains(expected), "\(lines.joined(separator: "\n"))")
    #expect(!lines.contains { $0.contains("The library is empty") })
    try pick.keys("Escape")
    #expect(try pick.finish().status == 1)
  }

  @Test("Esc cancels: exit status 1, nothing printed")
  func escapeCancels() throws {
    let music = try PickerLibrary()
    _ = try music.scannedLibrary()
    let pick = try TmuxPick([], music: music)
    try pick.waitFor("5 of 5 songs")
    #expect(try pick.alternateScreen())
    try pick.keys("Down", "Escape")
    let result = try pick.finish()
    #expect(result.status == 1)
    #expect(result.output.isEmpty && result.errors.isEmpty, "\(result)")
    let modes = pick.terminalModes()
    #expect(modes.before != nil && modes.before == modes.after, "the terminal's modes are restored")
  }

  @Test("SIGTERM puts the terminal back (modes, normal screen) and ends with the signal")
  func terminationRestores() throws {
    let music = try PickerLibrary()
    _ = try music.scannedLibrary()
    let pick = try TmuxPick(["--multiple"], music: music)
    try pick.waitFor("5 of 5 songs")
    #expect(try pick.alternateScreen())
    #expect(kill(try pick.pickerProcess(), SIGTERM) == 0)
    let result = try pick.finish()
    #expect(result.status == 128 + SIGTERM)
    #expect(result.output.isEmpty)
    let modes = pick.terminalModes()
    #expect(modes.before != nil && modes.before == modes.after, "the terminal's modes are restored")
  }

  @Test("--multiple --json: Space marks, PageDown and PageUp move, Enter prints one JSON object per marked song")
  func multipleJSON() throws {
    let music = try PickerLibrary()
    let library = try music.scannedLibrary()
    let pick = try TmuxPick(["--multiple", "--json"], music: music)
    try pick.waitFor("0 selected")
    try pick.keys("NPage")  // to the last song (the page is longer than the list)
    try pick.waitFor("> [ ] Zephyr")
    try pick.keys("Space", "PPage", "Space")  // PageUp: back to the first song
    let marked = try pick.waitFor("2 selected")
    #expect(marked.contains { $0.contains("> [x] Ballad") } && marked.contains { $0.contains("[x] Zephyr") })
    try pick.keys("Enter")
    let result = try pick.finish()
    #expect(result.status == 0, "\(result.errors)")
    let objects = try result.output.split(separator: "\n").map {
      try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
    }
    #expect(objects.map { $0["title"] as? String } == ["Zephyr", "Ballad"], "in the order marked")
    let ids = try library.items(matching: .songs()).reduce(into: [String: UInt64]()) { $0[$1.title!] = $1.persistentID }
    #expect(objects.map { ($0["persistentID"] as? NSNumber)?.uint64Value } == [ids["Zephyr"], ids["Ballad"]])
    #expect(objects.first?["artist"] as? String == "Ash Lake")
  }

  @Test("A resized terminal is redrawn to its new size")
  func resizeRedraws() throws {
    let music = try PickerLibrary()
    _ = try music.scannedLibrary()
    let pick = try TmuxPick([], music: music)
    try pick.waitFor("5 of 5 songs")
    try pick.run(["resize-window", "-t", "pick", "-x", "50", "-y", "12"])
    let deadline = Date().addingTimeInterval(10)
    var lines = try pick.screen()
    let rule50 = String(repeating: "─", count: 50)
    // Wait for the whole frame: tmux may show a redraw half done.
    while Date() < deadline,
      !(lines.count == 12 && lines[2] == rule50 && lines[9] == rule50 && lines[10].contains("5 of 5 songs"))
    {
      usleep(50_000)
      lines = try pick.screen()
    }
    #expect(lines.count == 12)
    #expect(lines[2] == String(repeating: "─", count: 50), "the rule spans the new width")
    #expect(lines[9] == String(repeating: "─", count: 50))
    #expect(lines[10].contains("5 of 5 songs"), "the status line moved up:\n\(lines.joined(separator: "\n"))")
    expectFits(lines, columns: 50, rows: 12)
    try pick.run(["resize-window", "-t", "pick", "-x", "80", "-y", "24"])
    let back = try pick.waitFor("Esc cancel")
    expectFits(back, columns: 80, rows: 24)
    try pick.keys("Escape")
    #expect(try pick.finish().status == 1)
  }

  @Test("An empty index is scanned first, and the songs appear")
  func scansAnEmptyIndex() throws {
    let music = try PickerLibrary()
    let (library, _) = music.library()
    #expect(try library.requestAuthorization() == .authorized)
    let pick = try TmuxPick([], music: music)
    try pick.waitFor("5 of 5 songs")
    try pick.keys("Escape")
    #expect(try pick.finish().status == 1)
  }
}

@Suite(
  "leitmotif pick without access",
  .enabled(if: LeitmotifCommand.executable != nil, "the leitmotif executable is not next to the test bundle"))
struct PickerAccessTests {
  func runPick(_ music: PickerLibrary, environment extra: [String: String] = [:]) throws -> (Int32, String, String) {
    let run = try LeitmotifCommand.run(
      ["pick", "--library", music.musicFolder, "--app", music.applicationID],
      environment: music.environment.merging(extra) { _, new in new }, input: FileHandle.nullDevice)
    return (run.status, run.output, run.errors)
  }

  @Test("Denied or restricted: an access error naming the state on stderr, exit status 3")
  func deniedAndRestricted() throws {
    let music = try PickerLibrary()
    let (restrictedStatus, restrictedOutput, restrictedErrors) = try runPick(
      music, environment: ["LEITMOTIF_LIBRARY_ACCESS": "restricted"])
    #expect(restrictedStatus == 3)
    #expect(restrictedOutput.isEmpty)
    #expect(restrictedErrors.contains("restricted"), "\(restrictedErrors)")

    let (library, _) = music.library(answer: false)
    #expect(try library.requestAuthorization() == .denied)
    let (deniedStatus, deniedOutput, deniedErrors) = try runPick(music)
    #expect(deniedStatus == 3)
    #expect(deniedOutput.isEmpty)
    #expect(deniedErrors.contains("denied"), "\(deniedErrors)")
  }
}
