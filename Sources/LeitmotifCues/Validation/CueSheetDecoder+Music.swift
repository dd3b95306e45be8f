import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

// Parameters, sources and states: the cue file's nouns.
extension CueSheetDecoder {
  // MARK: Parameters

  mutating func decodeParameters(_ value: JSON5Value, _ path: String) {
    for member in namedMembers(value, path, what: "parameter") {
      parameterNames.append(member.key)
      let parameterPath = Self.path(path, member.key)
      guard
        let parameter = fields(
          member.value, parameterPath, anchor: member.keyLocation, allowed: ["default", "min", "max", "drives"])
      else { continue }
      var spec = ParameterSpec(name: member.key)
      let minimum = number(parameter, "min")
      let maximum = number(parameter, "max")
      spec.minimum = minimum ?? 0
      spec.maximum = maximum ?? 1
      // A parameter whose bounds are themselves wrong has no range to check its default against.
      var boundsValid = !(parameter.has("min") && minimum == nil) && !(parameter.has("max") && maximum == nil)
      if boundsValid && spec.minimum >= spec.maximum {
        let key = parameter.has("max") ? "max" : "min"
        error(
          parameter[key]!.location, parameter.path(key),
          "min \(Self.format(spec.minimum)) must be below max \(Self.format(spec.maximum))")
        boundsValid = false
      }
      spec.defaultValue = spec.minimum
      if let given = parameter["default"] {
        let range = boundsValid ? NumberRange(spec.minimum, spec.maximum) : .any
        if let value = number(given, parameter.path("default"), name: "default", range) { spec.defaultValue = value }
      }
      if let drives = parameter["drives"] { spec.drives = decodeDrives(drives, parameter.path("drives")) }
      sheet.parameters.append(spec)
    }
  }

  private mutating func decodeDrives(_ value: JSON5Value, _ path: String) -> [ParameterDrive] {
    guard let elements = value.arrayValue else {
      mismatch(value, path, expected: "a list of drives ({ target, curve, shape })")
      return []
    }
    var drives: [ParameterDrive] = []
    for (index, element) in elements.enumerated() {
      let drivePath = "\(path)[\(index)]"
      guard let drive = fields(element, drivePath, allowed: ["target", "curve", "shape", "layer"]) else { continue }
      let target = required(drive, "target", "volume, rate, tempo or lowpass").flatMap {
        word($0, drive.path("target"), ParameterDrive.Target.self)
      }
      var layer: String?
      if let given = drive["layer"], let name = string(given, drive.path("layer")) {
        // States are read after parameters: the name is checked once they are (`checkLayerReferences`).
        layerReferences.append((name, given.location, drive.path("layer")))
        layer = name
        if let target, target == .rate || target == .tempo {
          error(
            drive["target"]!.location, drive.path("target"),
            "a layer's drive takes volume or lowpass; \(target.rawValue) applies to the whole music (its layers stay in step)"
          )
        }
      }
      let shape = word(drive, "shape", ResponseCurve.Shape.self) ?? .linear
      guard let curve = required(drive, "curve", "points [[x, y], ...]") else { continue }
      let points = decodeCurve(curve, drive.path("curve"), target: target)
      if let target, let points {
        drives.append(ParameterDrive(target: target, curve: ResponseCurve(points: points, shape: shape), layer: layer))
      }
    }
    return drives
  }

  /// `[[x, y], ...]`: at least one point; y within the target's range (when the target is known).
  private mutating func decodeCurve(_ value: JSON5Value, _ path: String, target: ParameterDrive.Target?)
    -> [ResponseCurve.Point]?
  {
    guard let elements = value.arrayValue else {
      mismatch(value, path, expected: "a list of points [[x, y], ...]")
      return nil
    }
    if elements.isEmpty {
      error(value.location, path, "a curve needs at least one point [x, y]")
      return nil
    }
    let yRange: NumberRange
    switch target {
    case .rate: yRange = .rate
    case .tempo: yRange = .tempo
    case .volume, .lowpass: yRange = .unit
    case nil: yRange = .any
    }
    var points: [ResponseCurve.Point] = []
    var valid = true
    for (index, element) in elements.enumerated() {
      let pointPath = "\(path)[\(index)]"
      guard let pair = element.arrayValue, pair.count == 2 else {
        if let pair = element.arrayValue {
          error(element.location, pointPath, "a point is [x, y]: expected 2 numbers, found \(pair.count)")
        } else {
          mismatch(element, pointPath, expected: "a point [x, y]")
        }
        valid = false
        continue
      }
      let x = number(pair[0], "\(pointPath)[0]", name: "x")
      let y = number(pair[1], "\(pointPath)[1]", name: target?.rawValue ?? "y", yRange)
      if let x, let y { points.append(ResponseCurve.Point(x, y)) } else { valid = false }
    }
    return valid ? points : nil
  }

  // MARK: Sources

  static let sourceKinds = ["bundled", "library", "picks", "playlist"]
  static let sourceKeys =
    sourceKinds + ["order", "fallback", "gain", "replayGain", "cuePoints", "tempo", "avoidRepeat", "pickup", "cues"]

  mutating func decodeSources(_ value: JSON5Value, _ path: String) {
    for member in namedMembers(value, path, what: "source") {
      sourceDeclarations.append((member.key, member.keyLocation))
      let sourcePath = Self.path(path, member.key)
      guard let source = fields(member.value, sourcePath, anchor: member.keyLocation, allowed: Self.sourceKeys) else {
        continue
      }
      let kinds = source.object.members.filter {
        Self.sourceKinds.contains($0.key) && source.members[$0.key]?.keyLocation == $0.keyLocation
      }
      if kinds.isEmpty {
        error(
          member.keyLocation, sourcePath,
          "a source needs one of \(Self.list(Self.sourceKinds.map { "\"\($0)\"" })) (where its music comes from)")
      }
      for extra in kinds.dropFirst() {
        error(
          extra.keyLocation, source.path(extra.key),
          "a source has one kind: found \"\(kinds[0].key)\" and \"\(extra.key)\"")
      }
      var kind: MusicSource.Kind?
      if let first = kinds.first {
        let kindPath = source.path(first.key)
        switch first.key {
        case "bundled": kind = bundledSelection(first.value, kindPath).map { .bundled($0) }
        case "library": kind = libraryQuery(first.value, kindPath).map { .library($0) }
        case "picks": kind = isTrue(first.value, kindPath, name: "picks") ? .picks : nil
        default: kind = string(first.value, kindPath).map { .playlist($0) }
        }
      }
      var music = MusicSource(name: member.key, kind: kind ?? .picks)
      if let order = word(source, "order", MusicSource.Order.self) { music.order = order }
      if let avoid = integer(source, "avoidRepeat", NumberRange(0, 1_000)) {
        music.avoidRepeat = Int(avoid)
        // Held back from all the items there are, a random draw has one choice: the same cycle
        // every time round (it acts as one less; said, as it was not).
        if case .bundled(let selection)? = kind, selection.files.count > 1, Int(avoid) >= selection.files.count,
          let location = source["avoidRepeat"]?.location
        {
          warning(
            location, source.path("avoidRepeat"),
            "avoidRepeat \(Int(avoid)) with \(selection.files.count) files: at most \(selection.files.count - 1) can be kept "
              + "from playing again, and then the draws make one fixed cycle; it acts as \(selection.files.count - 1)")
        }
      }
      if let fallback = source["fallback"], let target = string(fallback, source.path("fallback")) {
        fallbacks[member.key] = (target, fallback.location)
        music.fallback = target
      }
      if let gain = number(source, "gain", NumberRange(-60, 12)) { music.gainDecibels = gain }
      if let mode = word(source, "replayGain", MusicSource.ReplayGainMode.self) { music.replayGain = mode }
      if let cuePoints = source["cuePoints"] {
        music.cuePointsSeconds = decodeCuePoints(cuePoints, source.path("cuePoints"))
      }
      if let tempo = source["tempo"] { music.grid = beatGrid(tempo, source.path("tempo"), keys: &music.tempoKeys) }
      if let pickup = source["pickup"] { decodePickup(pickup, source.path("pickup"), into: &music) }
      if let cues = source["cues"] { music.namedCues = decodeNamedCues(cues, source.path("cues")) }
      if case .bundled(let selection)? = kind { checkCuePointsReached(music, selection, source) }
      // A source whose kind is wrong stays out of the sheet; its name is still declared, so the
      // states that use it are not reported again.
      if kind != nil { sheet.sources[member.key] = music }
    }
  }

  /// Cue points (`cuePoints`, and `cues` given in seconds) past the end of the source's shortest
  /// file are never reached there: a warning each (a designer's `cuePoints: [99]` on 6 s files,
  /// or an exit at 30 s of a 19.2 s piece, went unsaid, and the change at it came at the end).
  private mutating func checkCuePointsReached(_ music: MusicSource, _ selection: BundledSelection, _ source: Fields) {
    guard assetsUsable else { return }
    let files = catalog().items(matching: selection).compactMap { item in
      item.playbackDuration.map { (item, $0) }
    }
    guard let shortest = files.min(by: { $0.1 < $1.1 }) else { return }
    let name = shortest.0.assetURL.lastPathComponent
    func warn(_ seconds: Double, _ key: String, _ what: String) {
      guard seconds > shortest.1, let location = source[key]?.location else { return }
      warning(
        location, source.path(key),
        "\(what) at \(Self.seconds(seconds)) s is past the end of \"\(name)\" (\(Self.seconds(shortest.1)) s): it is never reached there"
      )
    }
    for point in music.cuePointsSeconds { warn(point, "cuePoints", "cue point") }
    for (cue, positions) in music.namedCues.sorted(by: { $0.key < $1.key }) {
      for case .seconds(let point) in positions { warn(point, "cues", "cue \"\(cue)\"") }
    }
  }

  /// `seconds` for a message: "19.2", "6".
  private static func seconds(_ value: Double) -> String {
    let rounded = (value * 100).rounded() / 100
    return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
  }

  /// `cues: { NAME: POSITION | [POSITION, ...] }`, a position being seconds or `{ bar: N }`.
  private mutating func decodeNamedCues(_ value: JSON5Value, _ path: String) -> [String: [CuePosition]] {
    guard let object = value.objectValue else {
      mismatch(
        value, path, expected: "an object of named cue points ({ exit: 32.5, phrase: [8, 16], drop: { bar: 17 } })")
      return [:]
    }
    var cues: [String: [CuePosition]] = [:]
    for member in object.members {
      let memberPath = Self.path(path, member.key)
      let name = member.key.lowercased()
      let values: [(JSON5Value, String)]
      if case .array(let list) = member.value.kind {
        values = list.enumerated().map { ($0.element, memberPath + "[\($0.offset)]") }
      } else {
        values = [(member.value, memberPath)]
      }
      for (value, valuePath) in values {
        if value.objectValue != nil {
          guard let position = fields(value, valuePath, allowed: ["bar"]),
            let bar = number(position, "bar", NumberRange(1, 100_000))
          else { continue }
          cues[name, default: []].append(.bar(bar))
        } else if let seconds = number(value, valuePath, name: member.key, .seconds) {
          cues[name, default: []].append(.seconds(seconds))
        }
      }
    }
    return cues
  }

  /// `pickup: SECONDS`, `{ beats: N }` or `{ bars: N }`.
  private mutating func decodePickup(_ value: JSON5Value, _ path: String, into music: inout MusicSource) {
    if value.objectValue == nil {
      music.pickup = number(value, path, name: "pickup", NumberRange(0, 60)).map { .seconds($0) }
      return
    }
    guard let pickup = fields(value, path, allowed: ["beats", "bars"]) else { return }
    let given = ["beats", "bars"].filter { pickup[$0] != nil }
    guard given.count == 1 else {
      error(value.location, path, "expected seconds, { beats: N } or { bars: N }: one of beats and bars")
      return
    }
    guard let count = number(pickup, given[0], NumberRange(0, 64)) else { return }
    music.pickup = given[0] == "bars" ? .bars(count) : .beats(count)
  }

  private mutating func decodeCuePoints(_ value: JSON5Value, _ path: String) -> [Double] {
    guard let elements = value.arrayValue else {
      mismatch(value, path, expected: "a list of seconds")
      return []
    }
    return elements.enumerated().compactMap { index, element in
      number(element, "\(path)[\(index)]", name: "cue point", .seconds)
    }
  }

  /// `"file.ogg"`, `["a.ogg", "b.ogg"]` or `{ mood, genre, title }`.
  private mutating func bundledSelection(_ value: JSON5Value, _ path: String) -> BundledSelection? {
    switch value.kind {
    case .string:
      guard let name = string(value, path) else { return nil }
      checkBundledFile(name, at: value.location, path)
      return BundledSelection(files: [name])
    case .array(let elements):
      if elements.isEmpty {
        error(value.location, path, "expected at least one file name, found an empty list")
        return nil
      }
      var files: [String] = []
      var weights: [String: Double] = [:]
      for (index, element) in elements.enumerated() {
        let elementPath = "\(path)[\(index)]"
        var nameValue = element
        var namePath = elementPath
        if element.objectValue != nil {
          // `{ file: "a.ogg", weight: 3 }`: a file and how often `order: "random"` draws it.
          guard let entry = fields(element, elementPath, allowed: ["file", "weight"]),
            let file = required(entry, "file", "a bundled file name")
          else { continue }
          nameValue = file
          namePath = entry.path("file")
          if let weight = number(entry, "weight", NumberRange(0, 1_000_000, lowerIncluded: false)),
            let name = file.stringValue
          {
            weights[name] = weight
          }
        }
        guard let name = string(nameValue, namePath) else { continue }
        checkBundledFile(name, at: nameValue.location, namePath)
        files.append(name)
      }
      guard files.count == elements.count else { return nil }
      var selection = BundledSelection(files: files)
      selection.weights = weights
      return selection
    case .object:
      guard let tags = fields(value, path, allowed: ["mood", "genre", "title"]) else { return nil }
      var selection = BundledSelection()
      selection.mood = string(tags, "mood")
      selection.genre = string(tags, "genre")
      selection.title = string(tags, "title")
      guard selection.mood != nil || selection.genre != nil || selection.title != nil else {
        if tags.members.isEmpty { error(value.location, path, "a tag selection needs mood, genre or title") }
        return nil
      }
      if assetsUsable && catalog().items(matching: selection).isEmpty {
        error(value.location, path, noMatchMessage(selection))
      }
      return selection
    default:
      mismatch(value, path, expected: "a file name, a list of file names or tags { mood, genre, title }")
      return nil
    }
  }

  /// `no bundled file has mood "calm" (moods in the assets folder: "Tense", "Victory")`.
  private mutating func noMatchMessage(_ selection: BundledSelection) -> String {
    let catalog = catalog()
    let given: [(name: String, value: String, tag: (MediaItem) -> String?)] = [
      selection.mood.map { ("mood", $0, { $0.mood }) }, selection.genre.map { ("genre", $0, { $0.genre }) },
      selection.title.map { ("title", $0, { $0.title }) },
    ].compactMap { $0 }
    var message =
      "no bundled file has " + Self.list(given.map { "\($0.name) \"\($0.value)\"" }, conjunction: "and")
      + " (in \(sheet.assetsDirectory.path))"
    // One tag: say which values there are, the likeliest fix being a misspelt one.
    if given.count == 1 {
      var values: [String] = []
      for item in catalog.items {
        if let value = given[0].tag(item), !values.contains(value) { values.append(value) }
      }
      if values.isEmpty {
        message += "; no bundled file has a \(given[0].name) tag"
      } else {
        message += Self.suggestion(for: given[0].value, among: values)
        if !message.hasSuffix("?") {
          let shown = values.prefix(8).map { "\"\($0)\"" }.joined(separator: ", ")
          message += "; the \(given[0].name) tags there: \(shown)\(values.count > 8 ? ", ..." : "")"
        }
      }
    }
    return message
  }

  /// Reports a bundled file that is not in the assets folder or does not decode.
  mutating func checkBundledFile(_ name: String, at location: JSON5.SourceLocation, _ path: String) {
    guard assetsUsable else { return }
    let catalog = catalog()
    if catalog.item(relativePath: name) != nil { return }
    if let failure = catalog.failure(relativePath: name) {
      error(location, path, "bundled file \"\(name)\" cannot be played: \(failure.reason)")
      return
    }
    let full = sheet.assetsDirectory.appendingPathComponent(name).path
    if MountedFiles.kind(of: full) == .file || FileManager.default.fileExists(atPath: full) {
      error(
        location, path,
        "bundled file \"\(name)\" is not an Ogg Vorbis, Opus, MP3, FLAC, WAV or AIFF file (.ogg, .oga, .opus, .mp3, .flac, .wav, .wave, .aif, .aiff or .aifc, not hidden, not a link)"
      )
      return
    }
    error(
      location, path,
      "no file \"\(name)\" in the assets folder \(sheet.assetsDirectory.path)"
        + Self.suggestion(for: name, among: catalog.relativePaths))
  }

  /// Short names a library query may use for a property (`bpm: [120, 160]`).
  static let libraryPropertyAliases: [String: MediaProperty] = ["bpm": .beatsPerMinute]

  /// `{ PROPERTY: value | [low, high] | { equals | contains | below | atMost | above | atLeast: value } }`;
  /// `[low, high]` is both bounds, included (`energy: [0.6, 1]`).
  private mutating func libraryQuery(_ value: JSON5Value, _ path: String) -> MediaQuery? {
    let properties = MediaProperty.allCases.map(\.rawValue) + Self.libraryPropertyAliases.keys.sorted()
    guard let query = fields(value, path, allowed: properties) else { return nil }
    var predicates: Set<MediaPropertyPredicate> = []
    var valid = true
    for member in query.object.members where query.members[member.key]?.keyLocation == member.keyLocation {
      let property = MediaProperty(rawValue: member.key) ?? Self.libraryPropertyAliases[member.key]!
      let memberPath = query.path(member.key)
      var comparisons: [(MediaPredicateComparison, JSON5Value, String)] = []
      if case .array(let bounds) = member.value.kind {
        guard bounds.count == 2 else {
          error(member.value.location, memberPath, "expected [low, high], found \(bounds.count) values")
          valid = false
          continue
        }
        comparisons.append((.greaterThanOrEqualTo, bounds[0], memberPath + "[0]"))
        comparisons.append((.lessThanOrEqualTo, bounds[1], memberPath + "[1]"))
      } else if let object = member.value.objectValue {
        let names = Self.libraryComparisons.map(\.word)
        guard let tests = fields(member.value, memberPath, allowed: names) else { continue }
        if object.members.isEmpty {
          error(member.value.location, memberPath, "expected one of \(Self.list(names)), found an empty object")
          valid = false
        }
        for (word, comparison) in Self.libraryComparisons {
          if let test = tests[word] { comparisons.append((comparison, test, tests.path(word))) }
        }
      } else {
        comparisons.append((.equalTo, member.value, memberPath))
      }
      for (comparison, given, givenPath) in comparisons {
        let predicate: MediaPropertyPredicate
        switch given.kind {
        case .string(let text):
          predicate = MediaPropertyPredicate(value: text, forProperty: property, comparisonType: comparison)
        case .number(let number):
          if property == .persistentID && abs(number) >= 9_007_199_254_740_992 {
            // JSON5 numbers are doubles: past 2^53 the digits written are not the number read.
            error(
              given.location, givenPath,
              "a persistent id this large is not exact as a JSON5 number (numbers are doubles, exact only up to "
                + "2^53): write its digits as a string, as `leitmotif query` prints them: \"5724575397412592994\"")
            valid = false
            continue
          }
          predicate = MediaPropertyPredicate(value: number, forProperty: property, comparisonType: comparison)
        case .bool(let flag):
          predicate = MediaPropertyPredicate(value: flag, forProperty: property, comparisonType: comparison)
        default:
          mismatch(given, givenPath, expected: "a string, a number or a boolean")
          valid = false
          continue
        }
        do {
          try predicate.validate()
          predicates.insert(predicate)
        } catch {
          if case .invalidPredicate(_, let reason) = error {
            self.error(given.location, givenPath, reason)
          } else {
            self.error(given.location, givenPath, "\(error)")
          }
          valid = false
        }
      }
    }
    return valid ? MediaQuery(filterPredicates: predicates) : nil
  }

  /// The cue file's words for `MediaPredicateComparison`.
  static let libraryComparisons: [(word: String, comparison: MediaPredicateComparison)] = [
    ("equals", .equalTo), ("contains", .contains), ("below", .lessThan), ("atMost", .lessThanOrEqualTo),
    ("above", .greaterThan), ("atLeast", .greaterThanOrEqualTo),
  ]

  /// Fallbacks name existing sources; each cycle is reported once, at the fallback of its member
  /// that comes first in the file.
  mutating func checkFallbacks() {
    let order = Dictionary(sourceDeclarations.enumerated().map { ($0.element.name, $0.offset) }) { first, _ in first }
    for (name, _) in sourceDeclarations {
      guard let (target, location) = fallbacks[name] else { continue }
      let path = "sources.\(name).fallback"
      if order[target] == nil {
        error(location, path, "no source named \"\(target)\"" + Self.suggestion(for: target, among: sourceNames))
      } else {
        usedSources.insert(target)
      }
    }
    var reported: Set<String> = []
    for (name, _) in sourceDeclarations {
      var chain: [String] = [name]
      var current = name
      while let next = fallbacks[current]?.target, order[next] != nil {
        if let start = chain.firstIndex(of: next) {
          let cycle = Array(chain[start...])
          let first = cycle.min { order[$0]! < order[$1]! }!
          if reported.insert(first).inserted {
            // Written from the first source round to it again: a → b → a.
            let rotated = Array(cycle[cycle.firstIndex(of: first)!...] + cycle[..<cycle.firstIndex(of: first)!])
            let message =
              rotated.count == 1
              ? "source \"\(first)\" falls back to itself"
              : "fallback cycle: " + (rotated + [first]).joined(separator: " → ")
            error(fallbacks[first]!.location, "sources.\(first).fallback", message)
          }
          break
        }
        chain.append(next)
        current = next
      }
    }
  }

  /// Whether `name` is a declared source; reports it when not, and counts it used when it is.
  mutating func sourceReference(_ name: String, at location: JSON5.SourceLocation, _ path: String) -> Bool {
    guard sourceNames.contains(name) else {
      error(location, path, "no source named \"\(name)\"" + Self.suggestion(for: name, among: sourceNames))
      return false
    }
    usedSources.insert(name)
    return true
  }

  /// Whether `name` is a declared state; reports it when not.
  mutating func stateReference(_ name: String, at location: JSON5.SourceLocation, _ path: String) -> Bool {
    guard stateNames.contains(name) else {
      // No near miss: the states there are, so the designer need not go and look.
      let hint =
        closestMatch(to: name, among: stateNames) == nil && !stateNames.isEmpty && stateNames.count <= 16
        ? " (the states: \(Self.list(stateNames.sorted().map { "\"\($0)\"" }, conjunction: "and")))" : ""
      error(location, path, "no state named \"\(name)\"" + Self.suggestion(for: name, among: stateNames) + hint)
      return false
    }
    return true
  }

  // MARK: Bridges

  /// `bridges: [{ from, to, music, seconds, curve }]`: `from` and `to` a state, a list of
  /// states or "*"; `music` a source of bundled music.
  mutating func decodeBridges(_ value: JSON5Value, _ path: String) {
    guard case .array(let list) = value.kind else {
      mismatch(value, path, expected: "a list of bridges ([{ from: \"explore\", to: \"combat\", music: \"SOURCE\" }])")
      return
    }
    for (index, element) in list.enumerated() {
      let elementPath = path + "[\(index)]"
      guard let bridge = fields(element, elementPath, allowed: ["from", "to", "music", "seconds", "curve"]) else {
        continue
      }
      var valid = true
      func states(_ key: String) -> [String] {
        guard let member = bridge[key] else {
          error(element.location, elementPath, "a bridge needs \"\(key)\": a state, a list of states or \"*\"")
          valid = false
          return []
        }
        let names: [(String, JSON5.SourceLocation, String)]
        if case .array(let items) = member.kind {
          names = items.enumerated().compactMap { offset, item in
            string(item, bridge.path(key) + "[\(offset)]").map { ($0, item.location, bridge.path(key) + "[\(offset)]") }
          }
        } else {
          names = string(member, bridge.path(key)).map { [($0, member.location, bridge.path(key))] } ?? []
        }
        if names.contains(where: { $0.0 == "*" }) { return [] }
        var result: [String] = []
        for (name, location, namePath) in names {
          if stateReference(name, at: location, namePath) { result.append(name) } else { valid = false }
        }
        return result
      }
      let from = states("from"), to = states("to")
      guard let musicValue = bridge["music"], let music = string(musicValue, bridge.path("music")) else {
        if bridge["music"] == nil {
          error(element.location, elementPath, "a bridge needs \"music\": a source of bundled music")
        }
        continue
      }
      if sourceReference(music, at: musicValue.location, bridge.path("music")) {
        if let source = sheet.sources[music], case .bundled = source.kind {
        } else if sheet.sources[music] != nil {
          error(
            musicValue.location, bridge.path("music"),
            "a bridge plays bundled music: \"\(music)\" is not a bundled source")
          valid = false
        }
      } else {
        valid = false
      }
      var made = MusicBridge(from: from, to: to, music: music)
      if let seconds = number(bridge, "seconds", .seconds) { made.seconds = seconds }
      if let curve = word(bridge, "curve", FadeCurve.self) { made.curve = curve }
      made.line = element.location.line
      if valid { sheet.bridges.append(made) }
    }
  }

  // MARK: States

  static let stateKeys = [
    "music", "repeat", "loop", "rate", "volume", "priority", "transition", "between", "tempo", "resume", "layers",
    "playlist",
  ]

  private enum MixWord: String, CaseIterable {
    case userFirst = "user-first"
    case bundledOnly = "bundled-only"
    case interleave
  }

  private enum LoopWord: String, CaseIterable {
    case off
    case untilReleased = "until-released"
  }

  mutating func decodeStates(_ value: JSON5Value, _ path: String) {
    let members = namedMembers(value, path, what: "state")
    // Declared first, all of them: nothing inside a state refers to another, but rules and
    // `start` refer to states, and those are read after this.
    stateDeclarations = members.map { ($0.key, $0.keyLocation) }
    for member in members {
      let statePath = Self.path(path, member.key)
      guard let fields = fields(member.value, statePath, anchor: member.keyLocation, allowed: Self.stateKeys) else {
        continue
      }
      var state = MusicState(name: member.key)
      if let music = required(fields, "music", "every state needs music: a source name or { user, bundled, mix }") {
        decodeMusic(music, fields.path("music"), into: &state)
      }
      if let mode = word(fields, "repeat", RepeatMode.self) { state.repeatMode = mode }
      if let playlist = word(fields, "playlist", MusicState.Playlist.self) { state.playlist = playlist }
      if let loop = fields["loop"] { state.loop = decodeLoop(loop, fields.path("loop")) ?? state.loop }
      if let rate = number(fields, "rate", .rate) { state.rate = Float(rate) }
      if let volume = number(fields, "volume", .unit) { state.volume = Float(volume) }
      if let priority = integer(fields, "priority") { state.priority = Int(priority) }
      if let resume = fields["resume"], let flag = bool(resume, fields.path("resume")) {
        state.resumesPlayerMusic = flag
      }
      if let transition = fields["transition"] {
        state.transition = transitionSpec(transition, fields.path("transition")) ?? state.transition
      }
      if let between = fields["between"] {
        state.itemTransition = itemTransition(between, fields.path("between")) ?? state.itemTransition
      }
      if let tempo = fields["tempo"] { state.grid = beatGrid(tempo, fields.path("tempo")) }
      if let layers = fields["layers"] { state.layers = decodeLayers(layers, fields.path("layers"), of: state) }
      sheet.states[member.key] = state
    }
  }

  /// `layers: { name: "source" | { music: "source", volume } }`: stems of the state's bundled music.
  private mutating func decodeLayers(_ value: JSON5Value, _ path: String, of state: MusicState) -> [MusicLayer] {
    let members = namedMembers(value, path, what: "layer")
    var layers: [MusicLayer] = []
    if !members.isEmpty, state.userSource != nil || state.bundledSource == nil {
      error(
        value.location, path,
        "layers are stems of the game's own music: the state's music must be a bundled source, not the player's songs")
    }
    if members.count > Voice.maximumLayers {
      error(value.location, path, "\(members.count) layers; a state has at most \(Voice.maximumLayers)")
    }
    for member in members {
      declaredLayerNames.insert(member.key)
      let layerPath = Self.path(path, member.key)
      var sourceValue: JSON5Value?
      var volume: Float = 1
      if member.value.stringValue != nil {
        sourceValue = member.value
      } else if let layer = fields(member.value, layerPath, anchor: member.keyLocation, allowed: ["music", "volume"]) {
        sourceValue = required(layer, "music", "a bundled source's name")
        if let level = number(layer, "volume", .unit) { volume = Float(level) }
      } else {
        continue
      }
      guard let sourceValue else { continue }
      let sourcePath = member.value.stringValue != nil ? layerPath : Self.path(layerPath, "music")
      guard let name = string(sourceValue, sourcePath), sourceReference(name, at: sourceValue.location, sourcePath)
      else { continue }
      guard case .bundled(let selection)? = sheet.sources[name]?.kind else {
        error(
          sourceValue.location, sourcePath,
          "\"\(name)\" is a source of the player's music; a layer plays a bundled source (the game's own stems)")
        continue
      }
      checkLayerRates(selection, against: state.bundledSource, at: sourceValue.location, sourcePath)
      layers.append(MusicLayer(name: member.key, source: name, volume: volume))
    }
    return layers
  }

  /// A layer's files pair with the music's by position: each pair must share a sample rate (the
  /// stems are decoded frame for frame together). Checked where both are plain file lists.
  private mutating func checkLayerRates(
    _ layer: BundledSelection, against music: String?, at location: JSON5.SourceLocation, _ path: String
  ) {
    guard assetsUsable, let music, case .bundled(let main)? = sheet.sources[music]?.kind, !main.files.isEmpty,
      !layer.files.isEmpty
    else { return }
    let catalog = catalog()
    for (index, file) in main.files.enumerated() {
      let stem = layer.files[index % layer.files.count]
      guard let mainRate = catalog.item(relativePath: file)?.sampleRate,
        let stemRate = catalog.item(relativePath: stem)?.sampleRate, mainRate != stemRate
      else { continue }
      error(
        location, path,
        "layer file \"\(stem)\" is \(stemRate) Hz but the music it plays with, \"\(file)\", is \(mainRate) Hz: stems must share a sample rate"
      )
      return
    }
  }

  /// Every layer named by a drive or an action must be a layer of some state.
  mutating func checkLayerReferences() {
    let names = Set(sheet.states.values.flatMap { $0.layers.map(\.name) })
    for reference in layerReferences
    where !names.contains(reference.name) && !declaredLayerNames.contains(reference.name) {
      error(
        reference.location, reference.path,
        "no state has a layer named \"\(reference.name)\"" + Self.suggestion(for: reference.name, among: names.sorted())
      )
    }
  }

  /// `"source"` or `{ user, bundled, mix, ratio }`.
  private mutating func decodeMusic(_ value: JSON5Value, _ path: String, into state: inout MusicState) {
    if value.stringValue != nil {
      guard let name = string(value, path), sourceReference(name, at: value.location, path) else { return }
      if case .bundled? = sheet.sources[name]?.kind {
        state.bundledSource = name
      } else {
        state.userSource = name
      }
      return
    }
    guard value.objectValue != nil else {
      mismatch(value, path, expected: "a source name or { user, bundled, mix }")
      return
    }
    guard let music = fields(value, path, allowed: ["user", "bundled", "mix", "ratio"]) else { return }
    if let user = music["user"], let name = string(user, music.path("user")),
      sourceReference(name, at: user.location, music.path("user"))
    {
      if case .bundled? = sheet.sources[name]?.kind {
        error(
          user.location, music.path("user"),
          "\"\(name)\" is a bundled source; expected a source of the player's music (library, picks or playlist)")
      } else {
        state.userSource = name
      }
    }
    if let bundled = music["bundled"], let name = string(bundled, music.path("bundled")),
      sourceReference(name, at: bundled.location, music.path("bundled"))
    {
      if let kind = sheet.sources[name]?.kind, kind.isUserMusic {
        error(
          bundled.location, music.path("bundled"),
          "\"\(name)\" is a source of the player's music; expected a bundled source (the game's own music)")
      } else {
        state.bundledSource = name
      }
    }
    if !music.has("user") && !music.has("bundled") {
      error(music.anchor, path, "music needs \"user\", \"bundled\" or both")
    }
    let mix = word(music, "mix", MixWord.self)
    let ratio = integer(music, "ratio", NumberRange(1, 1_000_000))
    switch mix {
    case .bundledOnly?:
      state.mix = .bundledOnly
      if !music.has("bundled") {
        error(music["mix"]!.location, music.path("mix"), "mix \"bundled-only\" needs \"bundled\"")
      }
    case .interleave?:
      let missing = ["user", "bundled", "ratio"].filter { !music.has($0) }
      if !missing.isEmpty {
        error(
          music["mix"]!.location, music.path("mix"),
          "mix \"interleave\" needs \(Self.list(missing.map { "\"\($0)\"" }, conjunction: "and"))")
      }
      state.mix = .interleave(userSongs: Int(ratio ?? 1))
    case .userFirst?, nil:
      state.mix = .userFirst
    }
    if let given = music["ratio"], mix != .interleave {
      error(
        given.location, music.path("ratio"),
        "ratio is only for mix \"interleave\" (that many user songs, then one bundled)")
    }
  }

  /// `"off"`, `"until-released"` or a whole number of repeats.
  private mutating func decodeLoop(_ value: JSON5Value, _ path: String) -> LoopRepeat? {
    switch value.kind {
    case .string:
      switch word(value, path, LoopWord.self) {
      case .off?: return .off
      case .untilReleased?: return .untilReleased
      case nil: return nil
      }
    case .number:
      return integer(value, path, name: "loop", NumberRange(0, 1_000_000_000)).map { .times(Int($0)) }
    default:
      mismatch(value, path, expected: "\"off\", \"until-released\" or a whole number")
      return nil
    }
  }

  /// `"gapless"` or `{ seconds, curve }` (default: 3 s, equal-power).
  private mutating func itemTransition(_ value: JSON5Value, _ path: String) -> Transition? {
    if let string = value.stringValue {
      guard string == "gapless" else {
        error(value.location, path, Self.unknownWord(string, ["gapless"]) + " (or { seconds, curve })")
        return nil
      }
      return .gapless
    }
    guard value.objectValue != nil else {
      mismatch(value, path, expected: "\"gapless\" or { seconds, curve }")
      return nil
    }
    guard let between = fields(value, path, allowed: ["seconds", "curve"]) else { return nil }
    let seconds = number(between, "seconds", .seconds) ?? Transition.defaultCrossfade.duration
    let curve = word(between, "curve", FadeCurve.self) ?? Transition.defaultCrossfade.curve
    return try? Transition(duration: seconds, curve: curve)
  }

  /// `{ seconds, curve, at, enter }`, each omitted key taken from `base`.
  mutating func transitionSpec(_ value: JSON5Value, _ path: String, base: TransitionSpec = TransitionSpec())
    -> TransitionSpec?
  {
    guard let transition = fields(value, path, allowed: Self.transitionKeys) else {
      return nil
    }
    var spec = base
    applyTransitionKeys(transition, to: &spec)
    return spec
  }

  /// `{ cue: "NAME" }` (a named cue point of `at` or `enter`): the name in lower case; nil for
  /// anything that is not an object (a problem reported for an object that is not that).
  private mutating func namedCue(_ value: JSON5Value, _ path: String) -> String? {
    guard value.objectValue != nil else { return nil }
    guard let cue = fields(value, path, allowed: ["cue"]), let member = cue["cue"] else {
      if value.objectValue?.members.isEmpty == true { error(value.location, path, "expected { cue: \"NAME\" }") }
      return nil
    }
    guard let name = string(member, cue.path("cue")), !name.isEmpty else { return nil }
    return name.lowercased()
  }

  /// The keys of a transition (and of a crossfade action, besides its target).
  static let transitionKeys = ["seconds", "curve", "at", "enter", "bars", "pickup", "tail"]

  /// Reads `seconds`, `curve`, `at`, `enter`, `bars`, `pickup` and `tail` where present (a
  /// transition, a crossfade action).
  mutating func applyTransitionKeys(_ fields: Fields, to spec: inout TransitionSpec) {
    if let seconds = number(fields, "seconds", .seconds) { spec.seconds = seconds }
    if let curve = word(fields, "curve", FadeCurve.self) { spec.curve = curve }
    // Whether `at` was given and is not understood: what goes with it is not judged against it
    // (a `bars` next to `at: "bars"` was said to go with "bar", "here at is end": the default).
    var atUnknown = false
    if let at = fields["at"] {
      if let cue = namedCue(at, fields.path("at")) {
        spec.exitCue = cue
        spec.moment = .now
      } else if at.stringValue == "exit" {
        // The outgoing piece's exit cue: `{ cue: "exit" }` for short.
        spec.exitCue = "exit"
        spec.moment = .now
      } else if at.stringValue == nil && at.objectValue == nil {
        atUnknown = true
        mismatch(
          at, fields.path("at"),
          expected: "a string (\"now\", \"beat\", \"bar\", \"end\" or \"exit\") or { cue: \"NAME\" }")
      } else if let string = at.stringValue, TransitionSpec.Moment(rawValue: string) == nil {
        // Every word `at` takes, and the cue form: the moments alone left "exit" and cues out.
        let words = TransitionSpec.Moment.allCases.map(\.rawValue) + ["exit"]
        atUnknown = true
        error(
          at.location, fields.path("at"),
          "\"\(string)\" is not one of \(Self.list(words)), or { cue: \"NAME\" }"
            + Self.suggestion(for: string, among: words))
      } else if let moment = word(fields, "at", TransitionSpec.Moment.self) {
        spec.moment = moment
        spec.exitCue = nil
      }
    }
    if let enter = fields["enter"] {
      if let cue = namedCue(enter, fields.path("enter")) {
        spec.entryCue = cue
        spec.entry = .start
      } else if let entry = word(fields, "enter", TransitionSpec.Entry.self) {
        spec.entry = entry
        spec.entryCue = nil
      }
    }
    if let bars = integer(fields, "bars", NumberRange(1, 64)) {
      spec.bars = Int(bars)
      if spec.moment != .bar, !atUnknown {
        error(
          fields["bars"]!.location, fields.path("bars"),
          "bars counts bar lines: it goes with at: \"bar\" (here at is \"\(spec.moment.rawValue)\")")
      }
    }
    if let tail = number(fields, "tail", NumberRange(0, 60)) { spec.tailSeconds = tail }
    if let member = fields["pickup"], let pickup = bool(member, fields.path("pickup")) {
      spec.pickup = pickup
      if pickup && spec.moment == .end {
        error(
          member.location, fields.path("pickup"),
          "a pickup lands the incoming downbeat on the moment: it goes with at: \"now\", \"beat\" or \"bar\", not \"end\""
        )
      } else if pickup && spec.entryCue != nil {
        error(
          member.location, fields.path("pickup"),
          "a pickup plays the incoming piece from its first frame: it does not go with enter: { cue: ... }")
      } else if pickup && spec.entry != .start {
        error(
          member.location, fields.path("pickup"),
          "a pickup plays the incoming piece from its first frame: it goes with enter: \"start\" (here enter is \"\(spec.entry.rawValue)\")"
        )
      }
    }
  }
}
