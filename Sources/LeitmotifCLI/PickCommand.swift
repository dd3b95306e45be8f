import Foundation
import Leitmotif

#if canImport(Glibc)
  import Glibc
#endif

/// `leitmotif pick`: a full-screen terminal picker over `MediaPicker`.
///
/// The screen is drawn on /dev/tty, so standard output carries only the picked items (one line
/// each: persistent id, a tab, the title; or one JSON object per line with `--json`) and can be
/// piped. Exit status: 0 picked, 1 cancelled (nothing printed), 2 a usage error or no terminal,
/// 3 no access to the library (the state is named on stderr).
enum PickCommand {
  static let usage = """
    usage: leitmotif pick [--multiple] [--prompt TEXT] [--json] [--library DIR]... [--app ID]
      --multiple      mark several songs with Space, then Enter picks them (in the order marked)
      --prompt TEXT   the line shown at the top
      --json          one JSON object per picked song (persistentID, title, artist, albumTitle,
                      playbackDuration, assetURL) instead of "ID<tab>TITLE" lines
      --library DIR   a library folder (repeatable; default XDG_MUSIC_DIR, else ~/Music)
      --app ID        whose consent this is (default: leitmotif; only its own id is asked for
                      on the terminal, another id must be allowed with `leitmotif access allow`)
    keys: type to search (title, artist, album), ↑ ↓ PgUp PgDn Home End move, Space marks
    (with --multiple), Enter picks (with nothing marked: the highlighted song), Esc or Ctrl-C
    cancels. exit status: 0 picked, 1 cancelled, 2 usage error or no terminal, 3 no access
    """

  /// The sentence the player reads when `leitmotif` asks for library access.
  static let usageDescription = "leitmotif lists your music so you can pick songs from it."

  struct Options {
    var multiple = false
    var prompt: String?
    var json = false
    var folders: [String] = []
    var applicationID = "leitmotif"

    init(_ arguments: [String]) {
      var iterator = arguments.makeIterator()
      func value(_ name: String) -> String {
        guard let value = iterator.next() else { fail("pick: \(name) needs a value\n\(PickCommand.usage)") }
        return value
      }
      while let argument = iterator.next() {
        switch argument {
        case "--multiple": multiple = true
        case "--json": json = true
        case "--prompt": prompt = value("--prompt")
        case "--library": folders.append(value("--library"))
        case "--app":
          applicationID = AccessCommand.applicationID(value("--app"), for: "pick --app")
        case "--help", "-h":
          print(PickCommand.usage)
          exit(0)
        default: fail("pick: unknown argument \"\(argument)\"\n\(PickCommand.usage)")
        }
      }
    }
  }

  /// Diagnostics (a warning from the scan, say) would scribble over the full screen: while it is
  /// up they are kept, and printed once the terminal is back.
  final class HeldDiagnostics: @unchecked Sendable {
    private let lock = NSLock()
    private var holding = false
    private var held: [Diagnostic] = []

    func handle(_ diagnostic: Diagnostic) {
      let print = lock.withLock {
        if holding { held.append(diagnostic) }
        return !holding
      }
      if print { printDiagnostic(diagnostic) }
    }

    func hold() { lock.withLock { holding = true } }

    func release() {
      let pending = lock.withLock {
        holding = false
        defer { held = [] }
        return held
      }
      pending.forEach(printDiagnostic)
    }
  }

  static let heldDiagnostics = HeldDiagnostics()

  /// Records what the picker told its delegate.
  final class Outcome: MediaPickerDelegate {
    var picked: MediaItemCollection?
    var cancelled = false
    func mediaPicker(_ picker: MediaPicker, didPick collection: MediaItemCollection) { picked = collection }
    func mediaPickerDidCancel(_ picker: MediaPicker) { cancelled = true }
  }

  static func run(_ arguments: [String]) -> Int32 {
    let options = Options(arguments)
    var configuration = MediaLibrary.Configuration(applicationID: options.applicationID)
    configuration.usageDescription = usageDescription
    if !options.folders.isEmpty {
      let current = FileManager.default.currentDirectoryPath
      configuration.folders = options.folders.map {
        URL(fileURLWithPath: $0, relativeTo: URL(fileURLWithPath: current + "/")).standardizedFileURL
      }
    }
    let library = MediaLibrary(
      configuration: configuration, prompt: makePrompt(applicationID: options.applicationID),
      diagnostics: heldDiagnostics.handle)

    let picker = MediaPicker(library: library)
    picker.allowsPickingMultipleItems = options.multiple
    picker.prompt = options.prompt
    let outcome = Outcome()
    picker.delegate = outcome

    // Consent first, on the plain terminal (the prompt asks there), before the screen is taken.
    do {
      try picker.present()
    } catch {
      return report(error)
    }

    let terminal: TerminalScreen
    do {
      terminal = try TerminalScreen()
    } catch {
      fail("pick: \(error)")
    }
    var screen = PickScreen()
    var size = terminal.size
    heldDiagnostics.hold()

    func draw(clear: Bool = false) {
      screen.clamp(itemCount: picker.items.count, screenRows: size.rows)
      terminal.send((clear ? "\u{1b}[2J" : "") + screen.frame(picker: picker, columns: size.columns, rows: size.rows))
    }

    do {
      if picker.libraryItemCount == 0 {
        let folders = library.folders.map(\.path).joined(separator: ", ")
        screen.notice = "The index is empty: scanning the library (\(folders))…"
        draw()
        let report = try scanLibrary(library)
        screen.notice = nil
        try picker.reload()
        // A folder that could not be read (missing, not a folder, no permission) is named: the
        // screen said only that the library was empty.
        let folderPaths = Set(library.folders.map(\.path))
        let unread = report.failed.filter { folderPaths.contains($0.path) }
        if picker.libraryItemCount == 0 && !unread.isEmpty {
          screen.notice = "No songs: " + unread.map(\.description).joined(separator: "; ")
        }
      }
      draw(clear: true)
      loop: while true {
        switch terminal.nextEvent() {
        case .resized:
          size = terminal.size
          draw(clear: true)
          continue loop
        case .keys(let keys):
          for key in keys {
            try handle(key, picker: picker, screen: &screen, rows: size.rows)
            // Before the next key of the same read: it acts on the highlighted item.
            screen.clamp(itemCount: picker.items.count, screenRows: size.rows)
            if picker.state != .presented { break loop }
          }
        }
        draw()
      }
    } catch {
      terminal.restore()
      heldDiagnostics.release()
      return report(error)
    }
    terminal.restore()
    heldDiagnostics.release()

    guard let picked = outcome.picked else { return 1 }
    for item in picked.items { say(options.json ? json(item) : line(item)) }
    return 0
  }

  /// One key: typing edits the search, the rest move, mark, pick or cancel.
  static func handle(_ key: TerminalKey, picker: MediaPicker, screen: inout PickScreen, rows: Int) throws(LibraryError)
  {
    let page = screen.listRows(screenRows: rows)
    let current = picker.items.indices.contains(screen.cursor) ? picker.items[screen.cursor] : nil
    switch key {
    case .up: screen.cursor -= 1
    case .down: screen.cursor += 1
    case .pageUp:
      screen.cursor -= page
      screen.top -= page
    case .pageDown:
      screen.cursor += page
      screen.top += page
    case .home: screen.cursor = 0
    case .end: screen.cursor = picker.items.count - 1
    case .escape, .interrupt: picker.cancel()
    case .enter:
      guard let current else { return }
      if picker.allowsPickingMultipleItems {
        if picker.selection.isEmpty { picker.toggle(current) }
        picker.pick()
      } else {
        picker.toggle(current)
      }
    case .space where picker.allowsPickingMultipleItems:
      if let current { picker.toggle(current) }
    case .space: try search(picker.searchText + " ", picker: picker, screen: &screen)
    case .text(let text): try search(picker.searchText + text, picker: picker, screen: &screen)
    case .backspace:
      if !picker.searchText.isEmpty {
        try search(String(picker.searchText.dropLast()), picker: picker, screen: &screen)
      }
    case .clearLine: try search("", picker: picker, screen: &screen)
    case .tab, .left, .right, .other: break
    }
  }

  /// A new filter keeps the highlighted song highlighted when it still matches, else goes to the top.
  static func search(_ text: String, picker: MediaPicker, screen: inout PickScreen) throws(LibraryError) {
    let highlighted = picker.items.indices.contains(screen.cursor) ? picker.items[screen.cursor] : nil
    try picker.setSearchText(text)
    screen.cursor = highlighted.flatMap { picker.items.firstIndex(of: $0) } ?? 0
    if screen.cursor == 0 { screen.top = 0 }
  }

  /// Prints a library error: access errors name the state and exit 3.
  static func report(_ error: Error) -> Int32 {
    if let error = error as? LibraryError {
      switch error {
      case .accessDenied:
        FileHandle.standardError.write(Data("leitmotif: pick: \(error)\n".utf8))
        return 3
      case .missingUsageDescription:
        FileHandle.standardError.write(Data("leitmotif: pick: \(error)\n".utf8))
        return 2
      default: break
      }
    }
    FileHandle.standardError.write(Data("leitmotif: pick: \(error)\n".utf8))
    return 1
  }

  static func line(_ item: MediaItem) -> String {
    // The title as a terminal shows it safely: a tab or newline in a tag broke the one-line
    // ID<tab>TITLE format, and an escape sequence in one cleared the screen.
    "\(item.persistentID ?? 0)\t\(TerminalText.safe(item.displayName))"
  }

  struct PickedItem: Encodable {
    var persistentID: UInt64?
    var title: String?
    var artist: String?
    var albumTitle: String?
    var playbackDuration: Double?
    var assetURL: String
  }

  static func json(_ item: MediaItem) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    let picked = PickedItem(
      persistentID: item.persistentID, title: item.title, artist: item.artist, albumTitle: item.albumTitle,
      playbackDuration: item.playbackDuration, assetURL: FileSystemPath.fileURLString(item.assetURL.path))
    return (try? encoder.encode(picked)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
  }

  /// Asks on the terminal for the tool's own id only (as `leitmotif scan` does): the question
  /// carries this tool's usage description, which is not another application's to give.
  static func makePrompt(applicationID: String) -> AuthorizationPrompt? {
    applicationID == "leitmotif" ? TerminalPrompt() : nil
  }

  static func scanLibrary(_ library: MediaLibrary) throws(LibraryError) -> ScanReport { try library.scan() }
}
