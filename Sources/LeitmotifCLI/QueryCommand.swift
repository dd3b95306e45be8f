import Foundation
import Leitmotif

/// `leitmotif query [--group G] [--where 'artist=Name']... [--json] [--library DIR]... [--app ID]`:
/// runs a media query and prints its items (or its collections, when grouped).
///
/// `--where` takes PROPERTY OP VALUE: `=` is equalTo, `~` is contains (both ignore case and
/// accents), and `<`, `<=`, `>`, `>=` compare numbers. Exit status: 0 done, 2 a usage error (a bad
/// `--where` among them), 3 no access to the library (the state is named on stderr), 1 the index
/// could not be read.
enum QueryCommand {
  static let usage = """
    usage: leitmotif query [--group GROUP] [--where CONDITION]... [--json] [--library DIR]... [--app ID]
      --group GROUP        songs (default), albums, artists, albumArtists, genres, composers,
                           compilations or playlists; anything but songs prints collections
      --where CONDITION    PROPERTY=VALUE (equal), PROPERTY~VALUE (contains; on text both ignore
                           case and accents; path compares exactly), PROPERTY<N, <=, >, >=
                           (numbers); several combine with AND.
                           PROPERTY: \(MediaProperty.allCases.map(\.rawValue).joined(separator: ", "))
                           or bpm, duration, year, plays, skips, rating, album, title, artist,
                           genre, composer, mood, track, disc, compilation, id, path
      --json               one JSON object per line per item (or collection)
      --library DIR        a library folder (repeatable; default: XDG_MUSIC_DIR, else ~/Music)
      --app ID             whose consent applies (default: leitmotif)
    """

  /// Groups by their command-line name.
  static let groups: [String: MediaQuery] = [
    "songs": .songs(), "albums": .albums(), "artists": .artists(), "albumArtists": .albumArtists(),
    "genres": .genres(), "composers": .composers(), "compilations": .compilations(), "playlists": .playlists(),
  ]

  static let aliases: [String: MediaProperty] = [
    "bpm": .beatsPerMinute, "duration": .playbackDuration, "year": .year, "plays": .playCount,
    "skips": .skipCount, "rating": .rating, "album": .albumTitle, "title": .title, "artist": .artist,
    "genre": .genre, "composer": .composer, "track": .albumTrackNumber, "disc": .discNumber,
    "compilation": .isCompilation, "id": .persistentID, "path": .assetURL, "loudness": .loudness,
    "energy": .energy, "mood": .mood,
  ]

  struct Options {
    var group = "songs"
    var predicates: [MediaPropertyPredicate] = []
    var json = false
    var folders: [URL] = []
    var applicationID = "leitmotif"
  }

  static func run(_ arguments: [String]) -> Int32 {
    let options = parse(arguments)
    let own = options.applicationID == "leitmotif"
    var configuration = MediaLibrary.Configuration(
      applicationID: options.applicationID, usageDescription: own ? ScanCommand.usageDescription : nil,
      folders: options.folders.isEmpty ? nil : options.folders)
    configuration.applicationName = options.applicationID
    // As `scan` and `pick` do: the tool asks for its own id on a terminal when nobody has
    // answered yet; another app's consent is that app's to ask for.
    let library = MediaLibrary(
      configuration: configuration, prompt: own ? TerminalPrompt() : nil, diagnostics: printDiagnostic)
    if own && library.authorizationStatus == .notDetermined { _ = try? library.requestAuthorization() }
    var query = groups[options.group]!
    for predicate in options.predicates { query.addFilterPredicate(predicate) }
    do {
      if options.group == "songs" {
        let items = try library.items(matching: query)
        if options.json {
          for item in items { say(json(item)) }
        } else {
          printTable(items)
        }
      } else {
        let collections = try library.collections(matching: query)
        if options.json {
          for collection in collections { say(json(collection, group: options.group)) }
        } else {
          printTable(collections, group: options.group)
        }
      }
      noteEmptyIndex(library, options: options)
      return 0
    } catch {
      switch error {
      case .accessDenied: fail("\(error)", status: 3)
      case .invalidPredicate: fail("--where: \(error)")
      default: fail("\(error)", status: 1)
      }
    }
  }

  /// An empty answer from an index that holds no songs at all most likely means nobody scanned
  /// yet: say what to run (on standard error, so the output stays the table or the JSON lines).
  /// The command given is the one that fills this index: with the same `--app` and `--library`
  /// as the query (a bare `leitmotif scan` indexes the default folder for the tool's own id).
  static func noteEmptyIndex(_ library: MediaLibrary, options: Options) {
    guard (try? library.items(matching: .songs()).isEmpty) == true else { return }
    let folders = library.folders.map { FileSystemPath.displayed($0.path) }.joined(separator: ", ")
    var command = ["leitmotif", "scan"]
    if options.applicationID != "leitmotif" { command += ["--app", options.applicationID] }
    for folder in options.folders { command += ["--library", folder.path] }
    FileHandle.standardError.write(
      Data(
        "leitmotif: the library index holds no songs from \(folders): run `\(command.map(shellWord).joined(separator: " "))` first\n"
          .utf8))
  }

  /// `word` as a POSIX shell reads it back: bare when it holds only characters no shell
  /// treats specially, else in single quotes (a quote inside written as '\'').
  static func shellWord(_ word: String) -> String {
    let plain = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=+,:@%")
    if !word.isEmpty && word.allSatisfy(plain.contains) { return word }
    return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
  }

  static func parse(_ arguments: [String]) -> Options {
    var options = Options()
    var rest = arguments[...]
    func value(_ name: String) -> String {
      guard let value = rest.popFirst() else { fail("\(name) needs a value\n\(usage)") }
      return value
    }
    while let argument = rest.popFirst() {
      switch argument {
      case "--group":
        let group = value(argument)
        guard groups[group] != nil else {
          fail("--group: expected \(groups.keys.sorted().joined(separator: ", ")), got \"\(group)\"")
        }
        options.group = group
      case "--where": options.predicates.append(predicate(value(argument)))
      case "--json": options.json = true
      case "--library": options.folders.append(URL(fileURLWithPath: value(argument)))
      case "--app": options.applicationID = AccessCommand.applicationID(value(argument), for: "query --app")
      case "--help", "-h":
        say(usage)
        exit(0)
      default: fail("query: unknown argument \"\(argument)\"\n\(usage)")
      }
    }
    return options
  }

  /// `artist=Name`, `title~word`, `bpm>=120`: the first operator character splits property from
  /// value, so values may contain any of them.
  static func predicate(_ text: String) -> MediaPropertyPredicate {
    guard let at = text.firstIndex(where: { "=~<>".contains($0) }) else {
      fail("--where \"\(text)\": expected PROPERTY=VALUE, PROPERTY~VALUE or PROPERTY<, <=, >, >= NUMBER")
    }
    let name = text[..<at].trimmingCharacters(in: .whitespaces)
    var valueStart = text.index(after: at)
    let comparison: MediaPredicateComparison
    let orEqual = valueStart < text.endIndex && text[valueStart] == "="
    switch text[at] {
    case "=": comparison = .equalTo
    case "~": comparison = .contains
    case "<": comparison = orEqual ? .lessThanOrEqualTo : .lessThan
    default: comparison = orEqual ? .greaterThanOrEqualTo : .greaterThan
    }
    if orEqual && (text[at] == "<" || text[at] == ">") { valueStart = text.index(after: valueStart) }
    var value = String(text[valueStart...]).trimmingCharacters(in: .whitespaces)
    let property =
      aliases[name.lowercased()]
      ?? MediaProperty.allCases.first { $0.rawValue.lowercased() == name.lowercased() }
    guard let property else {
      fail(
        "--where \"\(text)\": unknown property \"\(name)\"; expected one of \(MediaProperty.allCases.map(\.rawValue).joined(separator: ", ")) or an alias (\(aliases.keys.sorted().joined(separator: ", ")))"
      )
    }
    // A path may be given as the `file://` URL the JSON prints (`assetURL`).
    if property == .assetURL { value = localPath(value) }
    let predicate = MediaPropertyPredicate(value: value, forProperty: property, comparisonType: comparison)
    do { try predicate.validate() } catch { fail("--where \"\(text)\": \(error)") }
    return predicate
  }

  // MARK: - Output

  static func json(_ item: MediaItem) -> String {
    var fields: [(String, String)] = []
    func add(_ name: String, _ value: String?) { if let value { fields.append((name, jsonString(value))) } }
    func add(_ name: String, number value: (some Numeric)?) { if let value { fields.append((name, "\(value)")) } }
    func add(_ name: String, date: Date?) {
      if let date { fields.append((name, jsonString(ISO8601DateFormatter().string(from: date)))) }
    }
    add("persistentID", number: item.persistentID)
    // The same as a string: a JSON number above 2^53 loses its last digits in most readers (jq,
    // JavaScript), and the id then names no song.
    add("persistentIDString", item.persistentID.map { "\($0)" })
    add("title", item.title)
    add("artist", item.artist)
    add("albumTitle", item.albumTitle)
    add("albumArtist", item.albumArtist)
    add("genre", item.genre)
    add("composer", item.composer)
    add("mood", item.mood)
    add("playbackDuration", number: item.playbackDuration)
    add("albumTrackNumber", number: item.albumTrackNumber)
    add("discNumber", number: item.discNumber)
    add("beatsPerMinute", number: item.beatsPerMinute)
    if item.isBeatsPerMinuteDetected { fields.append(("isBeatsPerMinuteDetected", "true")) }
    add("year", number: item.year)
    add("playCount", number: item.playCount)
    add("skipCount", number: item.skipCount)
    add("rating", number: item.rating)
    fields.append(("isCompilation", item.isCompilation ? "true" : "false"))
    add("lastPlayedDate", date: item.lastPlayedDate)
    add("dateAdded", date: item.dateAdded)
    add("assetURL", FileSystemPath.fileURLString(item.assetURL.path))
    fields += analysisFields(item.analysis, unknownAsNull: false)
    return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
  }

  static func json(_ collection: MediaItemCollection, group: String) -> String {
    var fields: [(String, String)] = [("group", jsonString(group))]
    fields.append(("name", collection.name.map(jsonString) ?? "null"))
    if let id = collection.persistentID {
      fields.append(("persistentID", "\(id)"))
      fields.append(("persistentIDString", "\"\(id)\""))
    }
    fields.append(("count", "\(collection.count)"))
    fields.append(("representativeItem", collection.representativeItem.map(json) ?? "null"))
    let ids = collection.items.compactMap(\.persistentID).map { "\($0)" }.joined(separator: ",")
    fields.append(("items", "[\(ids)]"))
    return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
  }

  static func printTable(_ items: [MediaItem]) {
    let rows = items.map { item in
      [
        item.displayName, item.artist ?? "", item.albumTitle ?? "",
        item.playbackDuration.map(minutes) ?? "", item.beatsPerMinute.map(Self.tempo) ?? "",
        item.persistentID.map { "\($0)" } ?? "",
      ]
    }
    printColumns(["TITLE", "ARTIST", "ALBUM", "TIME", "BPM", "ID"], rows, rightAligned: [3, 4, 5])
    say(items.count == 1 ? "1 item" : "\(items.count) items")
  }

  static func printTable(_ collections: [MediaItemCollection], group: String) {
    let rows = collections.map { collection in
      [
        collection.name ?? "(unknown)", "\(collection.count)", collection.representativeItem?.artist ?? "",
        collection.representativeItem?.title ?? "",
      ]
    }
    printColumns(["NAME", "ITEMS", "ARTIST", "FIRST ITEM"], rows, rightAligned: [1])
    say(collections.count == 1 ? "1 collection (\(group))" : "\(collections.count) collections (\(group))")
  }

  /// A tempo as `--where` compares it, to the hundredth: "120" for a detected 119.998, "119.97"
  /// for one a `bpm>=120` leaves out.
  static func tempo(_ beatsPerMinute: Double) -> String {
    let hundredths = (beatsPerMinute * 100).rounded()
    return hundredths.truncatingRemainder(dividingBy: 100) == 0
      ? String(format: "%.0f", hundredths / 100) : String(format: "%.2f", hundredths / 100)
  }

  static func minutes(_ seconds: Double) -> String {
    let whole = Int(seconds.rounded())
    return String(format: "%d:%02d", whole / 60, whole % 60)
  }

  /// Aligned columns, each at most 40 terminal columns wide (longer cells are cut with "…").
  /// Widths are terminal columns, as the picker counts them: a wide character (CJK, emoji, a
  /// fullwidth letter) takes two, a combining mark none; counted as characters, they pushed the
  /// rest of their row out of line.
  static func printColumns(_ header: [String], _ rows: [[String]], rightAligned: Set<Int>) {
    let cut = rows.map {
      $0.map(TerminalText.safe).map { TextWidth.columns($0) > 40 ? TextWidth.fit($0, to: 40) : $0 }
    }
    let widths = header.indices.map { column in ([header] + cut).map { TextWidth.columns($0[column]) }.max() ?? 0 }
    for row in [header] + cut {
      let cells = row.indices.map { column in
        let padding = String(repeating: " ", count: max(0, widths[column] - TextWidth.columns(row[column])))
        return rightAligned.contains(column) ? padding + row[column] : row[column] + padding
      }
      say(cells.joined(separator: "  ").replacing(/\s+$/, with: ""))
    }
  }
}
