import FoundationEssentials
import LeitmotifAnalysis
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

#if canImport(Glibc)
  import Glibc
#endif

extension CueSheet {
  /// Reads and checks the cue file at `path`. The file's format is described in <doc:CueFile>.
  ///
  /// Does I/O: reads the file, walks the assets folder and opens its audio files (through
  /// `catalog`, or a `BundledCatalog` it makes for the assets folder when a bundled source or
  /// stinger needs one). Call it off the game thread.
  ///
  /// - Parameters:
  ///   - path: the cue file. Relative `assets` and bundled file names resolve against its folder.
  ///   - catalog: the assets folder's catalogue, if the caller has one already (it must be of the
  ///     folder `assets` names); nil: one is made when needed.
  /// - Returns: the sheet, when the file has no error (warnings are allowed; `check` returns them).
  /// - Throws: `CueFileError` with every problem, errors and warnings, in file order. An
  ///   unreadable file is one problem at 1:1 naming the operating system's reason.
  /// - Thread safety: touches no shared state; call it from any thread.
  public static func load(path: String, catalog: BundledCatalog? = nil) throws(CueFileError) -> CueSheet {
    let text = try readText(path: path)
    return try parse(text, path: path, catalog: catalog)
  }

  /// Checks `text` as if it were the content of the cue file at `path` (bundled files resolve
  /// against its folder; the file itself is not read). Does I/O on the assets folder, as `load`.
  ///
  /// - Throws: `CueFileError` with every problem, errors and warnings, when there is an error.
  public static func parse(_ text: String, path: String, catalog: BundledCatalog? = nil) throws(CueFileError)
    -> CueSheet
  {
    let (sheet, problems) = check(text, path: path, catalog: catalog)
    guard let sheet else { throw CueFileError(problems: problems) }
    return sheet
  }

  /// Every problem in `text` (errors and warnings, in file order) without throwing, and the sheet
  /// when none of them is an error. What `leitmotif cues check` prints. Does I/O on the assets
  /// folder, as `load`.
  public static func check(_ text: String, path: String, catalog: BundledCatalog? = nil) -> (
    sheet: CueSheet?, problems: [CueProblem]
  ) {
    var decoder = CueSheetDecoder(file: path, catalog: catalog)
    var sheet = decoder.decode(text)
    sheet.catalog = decoder.checkedCatalog
    // Stable: problems at one place keep the order they were found in.
    let problems = decoder.problems.enumerated().sorted {
      ($0.element.location, $0.offset) < ($1.element.location, $1.offset)
    }.map(\.element)
    let hasError = problems.contains { $0.severity == .error }
    return (hasError ? nil : sheet, problems)
  }

  /// Reads the cue file at `path` and returns every problem in it, as `check(_:path:catalog:)`
  /// does for text; an unreadable file is one problem at 1:1. What `leitmotif cues check` prints.
  /// Does I/O (the file, the assets folder): not on a game thread.
  public static func check(path: String, catalog: BundledCatalog? = nil) -> (sheet: CueSheet?, problems: [CueProblem]) {
    do {
      var result = check(try readText(path: path), path: path, catalog: catalog)
      if let sheet = result.sheet, sheet.states.isEmpty {
        // Valid, but nothing would play: say so (an empty file is most often a save caught
        // half-way, or the wrong file).
        result.problems.insert(
          CueProblem(
            severity: .warning, file: path, location: JSON5.SourceLocation(line: 1, column: 1), keyPath: "states",
            message: "the file defines no states: no music plays (an empty file, or the wrong one?)"),
          at: 0)
      }
      return result
    } catch {
      return (nil, error.problems)
    }
  }

  /// `load`'s and `check(path:)`'s reading of the file: the whole file as UTF-8.
  /// - Throws: a `CueFileError` with one problem at 1:1 naming the OS error.
  static func readText(path: String) throws(CueFileError) -> String {
    func failure(_ reason: String, at location: JSON5.SourceLocation = .init(line: 1, column: 1)) -> CueFileError {
      CueFileError(problems: [
        CueProblem(
          severity: .error, file: path, location: location, keyPath: "", message: "cannot read the cue file: \(reason)")
      ])
    }
    var isDirectory = false
    let data: Data
    if let mounted = MountedFiles.kind(of: path) {
      // A cue file the game mounted (from its pak): read through the mount.
      guard mounted == .file else { throw failure(String(cString: strerror(EISDIR))) }
      do throws(DecodeError) {
        data = Data(try MountedFiles.contents(of: path))
      } catch  where error.reason == .emptyFile {
        // Empty is a valid cue file (no states), as it is on disk; the byte reader, made for
        // audio, refuses it.
        data = Data()
      } catch {
        throw failure(error.description)
      }
    } else {
      if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory {
        throw failure(String(cString: strerror(EISDIR)))
      }
      do {
        data = try Data(contentsOf: URL(fileURLWithPath: path))
      } catch {
        throw failure(FolderWalker.errorText(error))
      }
    }
    guard let text = String(data: data, encoding: .utf8) else {
      let (location, byte) = firstInvalidUTF8(in: data)
      throw failure(
        "the file is not UTF-8 text: byte 0x\(String(byte, radix: 16, uppercase: true)) here is not UTF-8 "
          + "(an editor saved it as Latin-1 or Windows-1252? Save it as UTF-8)",
        at: location)
    }
    return text
  }

  /// Where the first byte that breaks UTF-8 is (line and column, counting characters before it
  /// on its line), and that byte: what a designer needs to find the character their editor saved
  /// in another encoding.
  static func firstInvalidUTF8(in data: Data) -> (JSON5.SourceLocation, UInt8) {
    let bytes = [UInt8](data)
    var line = 1
    var column = 1
    var index = 0
    while index < bytes.count {
      let lead = bytes[index]
      let length: Int
      switch lead {
      case 0x00...0x7F: length = 1
      case 0xC2...0xDF: length = 2
      case 0xE0...0xEF: length = 3
      case 0xF0...0xF4: length = 4
      default: return (JSON5.SourceLocation(line: line, column: column), lead)
      }
      guard index + length <= bytes.count,
        String(decoding: bytes[index..<(index + length)], as: UTF8.self).utf8.elementsEqual(
          bytes[index..<(index + length)])
      else {
        // A lead byte whose continuation is missing or wrong: the lead is where it breaks.
        return (JSON5.SourceLocation(line: line, column: column), lead)
      }
      if lead == 0x0A {
        line += 1
        column = 1
      } else {
        column += 1
      }
      index += length
    }
    return (JSON5.SourceLocation(line: line, column: column), 0)
  }
}

/// Decodes a JSON5 tree into a `CueSheet`, collecting every problem instead of stopping at the
/// first: a designer fixing a file wants the whole list at once.
///
/// The walk goes in a fixed order (top-level scalars, parameters, sources, states, `start`, rules,
/// then cross-checks and warnings) so that every name a reference may point to is known before
/// the reference is checked, whatever order the file lists its sections in. `check` sorts the
/// problems into file order afterwards.
struct CueSheetDecoder {
  let file: String
  var problems: [CueProblem] = []
  var sheet: CueSheet
  /// The catalogue the caller gave, or the one made on first need.
  private var bundledCatalog: BundledCatalog?
  /// False when `assets` names no folder: bundled files are then not checked one by one (each
  /// would repeat the same complaint).
  var assetsUsable = true
  /// Where `assets` is written, and its folder as written (for the shipped-analyses warning).
  var assetsKey: (location: JSON5.SourceLocation, folder: String)?

  // What the sections declared, for references from later sections.
  /// Every source name in file order, with the location of its key (also sources with errors).
  var sourceDeclarations: [(name: String, location: JSON5.SourceLocation)] = []
  var stateDeclarations: [(name: String, location: JSON5.SourceLocation)] = []
  /// Every parameter name declared, also those with errors.
  var parameterNames: [String] = []
  /// The fallback each source names, with where it is named.
  var fallbacks: [String: (target: String, location: JSON5.SourceLocation)] = [:]
  /// Sources a state, a stinger or another source's fallback uses.
  var usedSources: Set<String> = []
  /// States the start or a rule enters.
  var enteredStates: Set<String> = []
  /// Layer names that drives and actions refer to, checked against the states' layers at the end.
  var layerReferences: [(name: String, location: JSON5.SourceLocation, path: String)] = []
  /// Every layer a state declares, valid or not: a reference to one that has an error of its own
  /// is not an error too (a layer of the player's songs was also "no state has a layer named").
  var declaredLayerNames: Set<String> = []
  /// Where each rule of `sheet.rules` has its `on` and its name (its `name`, else its `{`), for
  /// warnings about the rule.
  var rulePlaces: [(cues: JSON5.SourceLocation, cuesPath: String, name: JSON5.SourceLocation, namePath: String)] = []

  init(file: String, catalog: BundledCatalog?) {
    self.file = file
    bundledCatalog = catalog
    let folder = URL(fileURLWithPath: file).standardizedFileURL.deletingLastPathComponent()
    sheet = CueSheet(assetsDirectory: folder)
    sheet.path = file
  }

  var sourceNames: [String] { sourceDeclarations.map(\.name) }
  var stateNames: [String] { stateDeclarations.map(\.name) }

  /// The catalogue the check used (given or made), if it needed one.
  var checkedCatalog: BundledCatalog? { bundledCatalog }

  /// The assets folder's catalogue, made (by walking the folder) on first use.
  mutating func catalog() -> BundledCatalog {
    if let bundledCatalog { return bundledCatalog }
    // Tags only: names and tags are what the checks need; the pieces the sheet plays are
    // analysed once it is decoded (`analyzePiecesPlayed`).
    let made = BundledCatalog(directory: sheet.assetsDirectory, analyzing: false)
    bundledCatalog = made
    madeCatalog = true
    return made
  }

  /// Whether `bundledCatalog` was made here (tags only), not given.
  private var madeCatalog = false

  /// The catalogue made here gets the analyses of the pieces the sheet plays (its bundled
  /// sources' files and the files its stingers name), and of no other file of the folder: a
  /// game's first launch analysed every file there, 17 s for six unused 4-minute pieces (trial 7).
  private mutating func analyzePiecesPlayed() {
    guard madeCatalog, let catalog = bundledCatalog else { return }
    var played: Set<String> = []
    for source in sheet.sources.values {
      if case .bundled(let selection) = source.kind { played.formUnion(catalog.relativePaths(matching: selection)) }
    }
    for rule in sheet.rules {
      for case .stinger(let stinger) in rule.actions where !stinger.isSource {
        played.insert(BundledCatalog.normalized(stinger.sound))
      }
    }
    bundledCatalog = catalog.analyzed(relativePaths: played)
  }

  // MARK: The top level

  static let topLevelKeys = [
    "version", "assets", "start", "seed", "tempo", "loudness", "parameters", "sources", "states", "rules",
    "bridges", "mediaKeys", "systemMusic",
  ]

  mutating func decode(_ text: String) -> CueSheet {
    let root: JSON5Value
    do {
      root = try JSON5.parse(text)
    } catch {
      // A file of nothing but whitespace and comments is a valid, empty cue file. JSON5 wants a
      // value; the same text with an empty object after it parses exactly when there was nothing
      // else (anything incomplete stays incomplete, anything complete gets a second value).
      if let empty = try? JSON5.parse(text + "\n{}"), empty.objectValue?.members.isEmpty == true {
        return sheet
      }
      problems.append(
        CueProblem(severity: .error, file: file, location: error.location, keyPath: "", message: error.message))
      return sheet
    }
    sheet.fileTree = root
    guard let top = fields(root, "", allowed: Self.topLevelKeys, readsMisspeltKeys: true) else { return sheet }

    if let version = top["version"], let number = self.number(version, top.path("version"), name: "version") {
      if number != 1 {
        error(version.location, top.path("version"), "version \(Self.format(number)) is not supported (only 1)")
      }
    }
    if let assets = top["assets"], let folder = string(assets, top.path("assets")) {
      decodeAssets(folder, at: assets.location)
      assetsKey = (assets.location, folder)
    }
    // Up to 2^53: a JSON5 number is a Double, which holds whole numbers exactly only that far.
    if let seed = top["seed"],
      let value = integer(seed, top.path("seed"), name: "seed", NumberRange(0, 9_007_199_254_740_992))
    {
      sheet.seed = UInt64(value)
    }
    if let tempo = top["tempo"], let grid = beatGrid(tempo, top.path("tempo")) { sheet.grid = grid }
    if let loudness = top["loudness"] { decodeLoudness(loudness, top.path("loudness")) }
    if let parameters = top["parameters"] { decodeParameters(parameters, top.path("parameters")) }
    if let sources = top["sources"] { decodeSources(sources, top.path("sources")) }
    checkFallbacks()
    if let states = top["states"] { decodeStates(states, top.path("states")) }
    if let start = top["start"], let name = string(start, top.path("start")) {
      if stateReference(name, at: start.location, top.path("start")) {
        sheet.startState = name
        enteredStates.insert(name)
      }
    }
    if let rules = top["rules"] { decodeRules(rules, top.path("rules")) }
    if let bridges = top["bridges"] { decodeBridges(bridges, top.path("bridges")) }
    if let keys = top["mediaKeys"] { decodeMediaKeys(keys, top.path("mediaKeys")) }
    if let policy = top["systemMusic"] { decodeSystemMusic(policy, top.path("systemMusic")) }
    checkLayerReferences()
    addWarnings()
    analyzePiecesPlayed()
    warnOfUnshippedAnalyses()
    return sheet
  }

  /// A folder that ships its analyses (`leitmotif cues analyze`) but not for every piece: the
  /// pieces added or changed since, which a player's first launch then decodes. Said once, at
  /// `assets` (at the top when the folder is the default one).
  private mutating func warnOfUnshippedAnalyses() {
    guard let catalog = bundledCatalog, !catalog.piecesWithoutShippedAnalysis.isEmpty else { return }
    let pieces = catalog.piecesWithoutShippedAnalysis
    let shown = pieces.prefix(3).map { "\"\($0)\"" }.joined(separator: ", ") + (pieces.count > 3 ? ", ..." : "")
    let folder = assetsKey?.folder ?? "."
    warning(
      assetsKey?.location ?? JSON5.SourceLocation(line: 1, column: 1), "assets",
      "\(pieces.count) of the \(catalog.items.count) bundled pieces \(pieces.count == 1 ? "has" : "have") no current analysis in "
        + "\(folder)/\(AnalysisCache.shippedFolder) (\(shown)), so a player's first launch decodes \(pieces.count == 1 ? "it" : "them"): "
        + "run `leitmotif cues analyze \(sheet.assetsDirectory.path)`")
  }

  private mutating func decodeAssets(_ folder: String, at location: JSON5.SourceLocation) {
    let base = URL(fileURLWithPath: file).standardizedFileURL.deletingLastPathComponent()
    let url =
      folder.hasPrefix("/")
      ? URL(fileURLWithPath: folder).standardizedFileURL
      : base.appendingPathComponent(folder).standardizedFileURL
    var isDirectory = false
    if let mounted = MountedFiles.kind(of: url.path) {
      // A folder the game mounted (its pak): listed from the mount, not the disk.
      if mounted == .file {
        error(location, "assets", "\"\(folder)\" is a mounted file, not a folder (\(url.path))")
        assetsUsable = false
      }
    } else if !FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) {
      error(location, "assets", "no folder \"\(folder)\" (looked for \(url.path))")
      assetsUsable = false
    } else if !isDirectory {
      error(location, "assets", "\"\(folder)\" is a file, not a folder (\(url.path))")
      assetsUsable = false
    }
    sheet.assetsDirectory = url
  }

  /// `loudness: { target: LUFS, truePeak: dBTP }` or `loudness: "off"` (or `false`).
  mutating func decodeLoudness(_ value: JSON5Value, _ path: String) {
    switch value.kind {
    case .string("off"), .bool(false):
      sheet.loudness.isEnabled = false
      return
    case .bool(true):
      return
    case .object:
      break
    default:
      mismatch(value, path, expected: "an object { target, truePeak } or \"off\"")
      return
    }
    guard let levelling = fields(value, path, allowed: ["target", "truePeak"]) else { return }
    if let target = number(levelling, "target", NumberRange(-70, 0)) { sheet.loudness.targetLUFS = target }
    if let peak = number(levelling, "truePeak", NumberRange(-20, 0)) { sheet.loudness.truePeakCeiling = peak }
  }

  /// `{ bpm, meter, offset }`: top level, a source's or a state's `tempo`.
  mutating func beatGrid(_ value: JSON5Value, _ path: String) -> BeatGrid? {
    var keys: Set<String> = []
    return beatGrid(value, path, keys: &keys)
  }

  /// The same, with the keys it gives in `keys`.
  mutating func beatGrid(_ value: JSON5Value, _ path: String, keys: inout Set<String>) -> BeatGrid? {
    guard let tempo = fields(value, path, allowed: ["bpm", "meter", "offset"]) else { return nil }
    keys = Set(["bpm", "meter", "offset"].filter { tempo.has($0) })
    var grid = BeatGrid()
    if let bpm = number(tempo, "bpm", NumberRange(0, 400, lowerIncluded: false)) { grid.beatsPerMinute = bpm }
    if let meter = integer(tempo, "meter", NumberRange(1, 32)) { grid.beatsPerBar = Int(meter) }
    if let offset = number(tempo, "offset", .seconds) { grid.offsetSeconds = offset }
    return grid
  }

  // MARK: Reporting

  mutating func error(_ location: JSON5.SourceLocation, _ path: String, _ message: String) {
    problems.append(CueProblem(severity: .error, file: file, location: location, keyPath: path, message: message))
  }

  mutating func warning(_ location: JSON5.SourceLocation, _ path: String, _ message: String) {
    problems.append(CueProblem(severity: .warning, file: file, location: location, keyPath: path, message: message))
  }

  /// `; did you mean "x"?` when one of `candidates` is close to `word`, else "".
  static func suggestion(for word: String, among candidates: [String]) -> String {
    closestMatch(to: word, among: candidates).map { "; did you mean \"\($0)\"?" } ?? ""
  }

  /// "a, b or c".
  static func list(_ words: [String], conjunction: String = "or") -> String {
    guard words.count > 1 else { return words.first ?? "" }
    return words.dropLast().joined(separator: ", ") + " \(conjunction) " + words.last!
  }

  /// A number as a designer wrote it: integers without ".0", JSON5's spelling of the specials.
  static func format(_ number: Double) -> String {
    if number.isNaN { return "NaN" }
    if number.isInfinite { return number > 0 ? "Infinity" : "-Infinity" }
    if number == number.rounded(), abs(number) < 1e15 { return String(Int64(number)) }
    return String(number)
  }

  // MARK: Objects

  /// An object's members by key, after its unknown and duplicate keys were reported.
  struct Fields {
    var object: JSON5Object
    var path: String
    /// Where a missing key is reported: the key that holds the object, or its `{`.
    var anchor: JSON5.SourceLocation
    /// The first member of each key (later duplicates are reported and ignored).
    var members: [String: JSON5Object.Member]

    subscript(key: String) -> JSON5Value? { members[key]?.value }

    /// The key as the file spells it (a misspelt key read as `key` keeps its own spelling).
    func path(_ key: String) -> String { CueSheetDecoder.path(path, members[key]?.key ?? key) }

    func keyLocation(_ key: String) -> JSON5.SourceLocation { members[key]?.keyLocation ?? anchor }

    func has(_ key: String) -> Bool { members[key] != nil }
  }

  static func path(_ parent: String, _ key: String) -> String { parent.isEmpty ? key : parent + "." + key }

  /// The object in `value`, its unknown keys (with a suggestion among `allowed`) and duplicate
  /// keys reported; nil (and a type error) when `value` is not an object.
  ///
  /// `readsMisspeltKeys`: an unknown key whose closest match is an allowed key the object lacks
  /// is still an error, and its value is read as that key's, so that the rest of the file is
  /// checked against it. The top level uses it: a misspelt `stats:` used to bury its one helpful
  /// error among 22 others, one for every rule that names a state.
  mutating func fields(
    _ value: JSON5Value, _ path: String, anchor: JSON5.SourceLocation? = nil, allowed: [String],
    unknownKeyHint: ((String) -> String)? = nil, readsMisspeltKeys: Bool = false
  ) -> Fields? {
    guard let object = objectValue(value, path) else { return nil }
    var members: [String: JSON5Object.Member] = [:]
    var misspelt: [(member: JSON5Object.Member, intended: String?)] = []
    for member in object.members {
      let memberPath = Self.path(path, member.key)
      if let first = members[member.key] {
        error(member.keyLocation, memberPath, "duplicate key \"\(member.key)\" (first at \(first.keyLocation))")
        continue
      }
      guard allowed.contains(member.key) else {
        let intended = unknownKeyHint == nil ? closestMatch(to: member.key, among: allowed) : nil
        misspelt.append((member, intended))
        continue
      }
      members[member.key] = member
    }
    // After the known keys, so that a key also spelt right elsewhere in the object stays itself.
    for (member, intended) in misspelt {
      var hint = unknownKeyHint?(member.key) ?? Self.unknownKeyHint(member.key, allowed: allowed)
      if readsMisspeltKeys, let intended, members[intended] == nil {
        members[intended] = member
        hint += " (read as \"\(intended)\" to check the rest of the file)"
      }
      error(member.keyLocation, Self.path(path, member.key), "unknown key \"\(member.key)\"\(hint)")
    }
    return Fields(object: object, path: path, anchor: anchor ?? value.location, members: members)
  }

  static func unknownKeyHint(_ key: String, allowed: [String]) -> String {
    if let match = closestMatch(to: key, among: allowed) { return "; did you mean \"\(match)\"?" }
    return allowed.isEmpty ? "" : " (expected \(list(allowed)))"
  }

  /// A map of names (parameters, sources, states): each non-empty name once, in file order.
  mutating func namedMembers(_ value: JSON5Value, _ path: String, what: String) -> [JSON5Object.Member] {
    guard let object = objectValue(value, path) else { return [] }
    var seen: [String: JSON5.SourceLocation] = [:]
    var result: [JSON5Object.Member] = []
    for member in object.members {
      let memberPath = Self.path(path, member.key)
      if let first = seen[member.key] {
        error(member.keyLocation, memberPath, "duplicate \(what) \"\(member.key)\" (first at \(first))")
        continue
      }
      seen[member.key] = member.keyLocation
      if member.key.isEmpty {
        error(member.keyLocation, memberPath, "a \(what) needs a name")
        continue
      }
      result.append(member)
    }
    return result
  }

  /// A key the object must have, reported at its anchor when missing.
  mutating func required(_ fields: Fields, _ key: String, _ why: String) -> JSON5Value? {
    if let value = fields[key] { return value }
    error(fields.anchor, fields.path, "missing \"\(key)\" (\(why))")
    return nil
  }

  // MARK: Values

  mutating func mismatch(_ value: JSON5Value, _ path: String, expected: String) {
    error(value.location, path, "expected \(expected), found \(value.typeDescription)")
  }

  mutating func objectValue(_ value: JSON5Value, _ path: String) -> JSON5Object? {
    guard let object = value.objectValue else {
      mismatch(value, path, expected: "an object")
      return nil
    }
    return object
  }

  mutating func string(_ value: JSON5Value, _ path: String, nonEmpty: Bool = true) -> String? {
    guard let string = value.stringValue else {
      mismatch(value, path, expected: "a string")
      return nil
    }
    if nonEmpty && string.isEmpty {
      error(value.location, path, "expected a non-empty string")
      return nil
    }
    return string
  }

  mutating func string(_ fields: Fields, _ key: String) -> String? {
    fields[key].flatMap { string($0, fields.path(key)) }
  }

  /// A string or a list of strings (`on`, `when.state`), each non-empty.
  mutating func strings(_ value: JSON5Value, _ path: String) -> [(String, JSON5.SourceLocation, String)]? {
    if let single = value.stringValue {
      guard !single.isEmpty else {
        error(value.location, path, "expected a non-empty string")
        return nil
      }
      return [(single, value.location, path)]
    }
    guard let elements = value.arrayValue else {
      mismatch(value, path, expected: "a string or a list of strings")
      return nil
    }
    if elements.isEmpty {
      error(value.location, path, "expected at least one string, found an empty list")
      return nil
    }
    var result: [(String, JSON5.SourceLocation, String)] = []
    for (index, element) in elements.enumerated() {
      let elementPath = "\(path)[\(index)]"
      if let string = string(element, elementPath) { result.append((string, element.location, elementPath)) }
    }
    return result
  }

  /// A value that must be `true` (`picks`, `pause`, `releaseLoop`, ...).
  mutating func isTrue(_ value: JSON5Value, _ path: String, name: String) -> Bool {
    guard let flag = value.boolValue else {
      mismatch(value, path, expected: "true")
      return false
    }
    if !flag { error(value.location, path, "\(name) takes true (leave the key out instead of false)") }
    return flag
  }

  mutating func bool(_ value: JSON5Value, _ path: String) -> Bool? {
    guard let flag = value.boolValue else {
      mismatch(value, path, expected: "true or false")
      return nil
    }
    return flag
  }

  /// A number in `range` (NaN and the infinities are outside every range).
  mutating func number(_ value: JSON5Value, _ path: String, name: String, _ range: NumberRange = .any) -> Double? {
    guard let number = value.numberValue else {
      mismatch(value, path, expected: "a number")
      return nil
    }
    guard range.contains(number) else {
      error(value.location, path, "\(name) \(Self.format(number)) is outside \(range)")
      return nil
    }
    return number
  }

  mutating func number(_ fields: Fields, _ key: String, _ range: NumberRange = .any) -> Double? {
    fields[key].flatMap { number($0, fields.path(key), name: key, range) }
  }

  /// A whole number in `range`.
  mutating func integer(_ value: JSON5Value, _ path: String, name: String, _ range: NumberRange = .anyInteger)
    -> Double?
  {
    guard let number = value.numberValue else {
      mismatch(value, path, expected: "a whole number")
      return nil
    }
    if number.isFinite && number != number.rounded() {
      error(value.location, path, "expected a whole number, found \(Self.format(number))")
      return nil
    }
    // Whole (or not finite, which no range holds): the range check is `number`'s.
    return self.number(value, path, name: name, range)
  }

  mutating func integer(_ fields: Fields, _ key: String, _ range: NumberRange = .anyInteger) -> Double? {
    fields[key].flatMap { integer($0, fields.path(key), name: key, range) }
  }

  /// One of a kebab-case enum's words; an unknown word gets "did you mean".
  mutating func word<Word: RawRepresentable & CaseIterable>(
    _ value: JSON5Value, _ path: String, _ type: Word.Type, excluding excluded: [Word] = []
  ) -> Word? where Word.RawValue == String, Word: Equatable {
    let words = Word.allCases.filter { !excluded.contains($0) }.map(\.rawValue)
    guard let string = value.stringValue else {
      mismatch(value, path, expected: "a string (\(Self.list(words.map { "\"\($0)\"" })))")
      return nil
    }
    guard let word = Word(rawValue: string), !excluded.contains(word) else {
      error(value.location, path, Self.unknownWord(string, words))
      return nil
    }
    return word
  }

  mutating func word<Word: RawRepresentable & CaseIterable>(
    _ fields: Fields, _ key: String, _ type: Word.Type, excluding excluded: [Word] = []
  ) -> Word? where Word.RawValue == String, Word: Equatable {
    fields[key].flatMap { word($0, fields.path(key), type, excluding: excluded) }
  }

  /// `"equalPower" is not one of linear, equal-power, s-curve or exponential; did you mean "equal-power"?`
  static func unknownWord(_ string: String, _ words: [String]) -> String {
    "\"\(string)\" is not one of \(list(words))" + suggestion(for: string, among: words)
  }
}

/// An interval of allowed numbers, printed the way the reference writes it: `(0, 4]`, `[0, ∞)`.
struct NumberRange: CustomStringConvertible {
  var lower: Double
  var upper: Double
  var lowerIncluded: Bool
  var upperIncluded: Bool

  init(_ lower: Double, _ upper: Double, lowerIncluded: Bool = true, upperIncluded: Bool = true) {
    self.lower = lower
    self.upper = upper
    self.lowerIncluded = lowerIncluded
    self.upperIncluded = upperIncluded
  }

  static let any = NumberRange(-.infinity, .infinity, lowerIncluded: false, upperIncluded: false)
  /// Whole numbers an `Int` holds on every platform we build for, exactly in a `Double`.
  static let anyInteger = NumberRange(-9_007_199_254_740_992, 9_007_199_254_740_992)
  /// Seconds: from 0 to one day (`FrameMath.maximumSeconds`). A fade, seek, offset or cooldown
  /// longer than a day is a typing mistake (1e308 for 1.308), and the checker says so rather than
  /// hand the engine a time it can only saturate.
  static let seconds = NumberRange(0, FrameMath.maximumSeconds)
  static let unit = NumberRange(0, 1)
  /// Playback rates, as the player allows them (`Voice.rateRange`: 1/256 to 4).
  static let rate = NumberRange(Double(Voice.rateRange.lowerBound), Double(Voice.rateRange.upperBound))
  /// A tempo (speed without pitch): SoundTouch's range.
  static let tempo = NumberRange(0.5, 2)

  /// False for NaN and the infinities, always.
  func contains(_ value: Double) -> Bool {
    guard value.isFinite else { return false }
    let aboveLower = lowerIncluded ? value >= lower : value > lower
    let belowUpper = upperIncluded ? value <= upper : value < upper
    return aboveLower && belowUpper
  }

  var description: String {
    let left = lower.isInfinite ? "(-∞" : (lowerIncluded ? "[" : "(") + CueSheetDecoder.format(lower)
    let right = upper.isInfinite ? "∞)" : CueSheetDecoder.format(upper) + (upperIncluded ? "]" : ")")
    return "\(left), \(right)"
  }
}
