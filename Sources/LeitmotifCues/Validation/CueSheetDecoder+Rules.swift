import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

// Rules, their conditions and actions, and the warnings about the whole file.
extension CueSheetDecoder {
  // MARK: Rules

  static let ruleKeys = ["name", "on", "when", "priority", "cooldown", "do"]

  mutating func decodeRules(_ value: JSON5Value, _ path: String) {
    guard let elements = value.arrayValue else {
      mismatch(value, path, expected: "a list of rules")
      return
    }
    for (index, element) in elements.enumerated() {
      let rulePath = "\(path)[\(index)]"
      guard let rule = fields(element, rulePath, allowed: Self.ruleKeys) else { continue }
      let name = string(rule, "name") ?? "rule \(index + 1)"
      var cues: [String] = []
      if let on = required(rule, "on", "the cues it answers: a name, \"prefix.*\" or \"*\"") {
        for (cue, location, cuePath) in strings(on, rule.path("on")) ?? [] {
          // A star anywhere else would read as a pattern the director does not have.
          if cue != "*" && cue.dropLast(cue.hasSuffix(".*") ? 2 : 0).contains("*") {
            error(location, cuePath, "\"\(cue)\": a wildcard is \"*\" (every cue) or a final \".*\" (\"combat.*\")")
          }
          cues.append(cue)
        }
      }
      var actions: [CueAction] = []
      let conditions = rule["when"].flatMap { ruleConditions($0, rule.path("when")) } ?? RuleConditions()
      let priority = integer(rule, "priority").map { Int($0) } ?? 0
      let cooldown = number(rule, "cooldown", .seconds) ?? 0
      if let list = required(rule, "do", "what the rule does: an action or a list of actions") {
        actions = decodeActions(list, rule.path("do"))
      }
      var cueRule = CueRule(name: name, cues: cues, actions: actions)
      cueRule.conditions = conditions
      cueRule.priority = priority
      cueRule.cooldownSeconds = cooldown
      cueRule.line = element.location.line
      sheet.rules.append(cueRule)
      rulePlaces.append(
        (
          rule["on"]?.location ?? rule.anchor, rule.has("on") ? rule.path("on") : rulePath,
          rule["name"]?.location ?? rule.anchor, rule.has("name") ? rule.path("name") : rulePath
        ))
    }
  }

  private mutating func ruleConditions(_ value: JSON5Value, _ path: String) -> RuleConditions? {
    guard let when = fields(value, path, allowed: ["state", "notState", "payload", "parameters"]) else { return nil }
    var conditions = RuleConditions()
    if let state = when["state"] {
      conditions.states = (strings(state, when.path("state")) ?? []).compactMap { name, location, path in
        stateReference(name, at: location, path) ? name : nil
      }
    }
    if let notState = when["notState"] {
      conditions.notStates = (strings(notState, when.path("notState")) ?? []).compactMap { name, location, path in
        stateReference(name, at: location, path) ? name : nil
      }
    }
    if let payload = when["payload"] {
      for member in namedMembers(payload, when.path("payload"), what: "payload key") {
        if let test = valueTest(member.value, Self.path(when.path("payload"), member.key), numbersOnly: false) {
          conditions.payload.append((member.key, test))
        }
      }
    }
    if let parameters = when["parameters"] {
      for member in namedMembers(parameters, when.path("parameters"), what: "parameter") {
        let memberPath = Self.path(when.path("parameters"), member.key)
        guard parameterNames.contains(member.key) else {
          error(
            member.keyLocation, memberPath,
            "no parameter named \"\(member.key)\"" + Self.suggestion(for: member.key, among: parameterNames))
          continue
        }
        if let test = valueTest(member.value, memberPath, numbersOnly: true) {
          conditions.parameters.append((member.key, test))
        }
      }
    }
    return conditions
  }

  static let valueTestKeys = ["equals", "not", "in", "above", "below", "atLeast", "atMost", "exists"]

  /// A plain value (equals) or `{ equals, not, in, above, below, atLeast, atMost, exists }`.
  /// Parameters are numbers: their tests take numbers only (`numbersOnly`).
  private mutating func valueTest(_ value: JSON5Value, _ path: String, numbersOnly: Bool) -> ValueTest? {
    if value.objectValue == nil {
      switch value.kind {
      case .number, .string, .bool:
        return cueValue(value, path, name: "value", numbersOnly: numbersOnly).map { ValueTest([.equals($0)]) }
      default:
        mismatch(
          value, path,
          expected: numbersOnly
            ? "a number or a test { above, below, ... }" : "a value or a test { equals, in, above, ... }")
        return nil
      }
    }
    guard let test = fields(value, path, allowed: Self.valueTestKeys) else { return nil }
    if test.object.members.isEmpty {
      error(value.location, path, "a test needs one of \(Self.list(Self.valueTestKeys))")
      return nil
    }
    var comparisons: [ValueTest.Comparison] = []
    var valid = true
    for member in test.object.members where test.members[member.key]?.keyLocation == member.keyLocation {
      let memberPath = test.path(member.key)
      let comparison: ValueTest.Comparison?
      switch member.key {
      case "equals":
        comparison = cueValue(member.value, memberPath, name: "equals", numbersOnly: numbersOnly).map { .equals($0) }
      case "not":
        comparison = cueValue(member.value, memberPath, name: "not", numbersOnly: numbersOnly).map { .not($0) }
      case "in":
        if let elements = member.value.arrayValue, !elements.isEmpty {
          let values = elements.enumerated().compactMap { index, element in
            cueValue(element, "\(memberPath)[\(index)]", name: "value", numbersOnly: numbersOnly)
          }
          comparison = values.count == elements.count ? .oneOf(values) : nil
        } else {
          if member.value.arrayValue != nil {
            error(member.value.location, memberPath, "expected at least one value, found an empty list")
          } else {
            mismatch(member.value, memberPath, expected: "a list of values")
          }
          comparison = nil
        }
      case "above": comparison = number(member.value, memberPath, name: "above").map { .above($0) }
      case "below": comparison = number(member.value, memberPath, name: "below").map { .below($0) }
      case "atLeast": comparison = number(member.value, memberPath, name: "atLeast").map { .atLeast($0) }
      case "atMost": comparison = number(member.value, memberPath, name: "atMost").map { .atMost($0) }
      default: comparison = bool(member.value, memberPath).map { .exists($0) }
      }
      if let comparison { comparisons.append(comparison) } else { valid = false }
    }
    return valid ? ValueTest(comparisons) : nil
  }

  private mutating func cueValue(_ value: JSON5Value, _ path: String, name: String, numbersOnly: Bool) -> CueValue? {
    switch value.kind {
    case .number: return number(value, path, name: name).map { .number($0) }
    case .string(let string) where !numbersOnly: return .string(string)
    case .bool(let flag) where !numbersOnly: return .bool(flag)
    default:
      mismatch(
        value, path, expected: numbersOnly ? "a number (parameters are numbers)" : "a number, a string or a boolean")
      return nil
    }
  }

  // MARK: Actions

  static let verbs = [
    "state", "crossfade", "stinger", "duck", "rate", "tempo", "volume", "seek", "pause", "resume", "stop", "skip",
    "set",
    "releaseLoop", "layer",
  ]

  /// The keys each verb's action takes, the verb first.
  static let actionKeys: [String: [String]] = [
    "state": ["state"],
    "crossfade": ["crossfade"] + CueSheetDecoder.transitionKeys,
    "stinger": ["stinger", "at", "volume", "duck"],
    "duck": ["duck", "attack", "hold", "release"],
    "rate": ["rate", "ramp"],
    "tempo": ["tempo", "ramp"],
    "volume": ["volume", "ramp"],
    "seek": ["seek", "fade"],
    "pause": ["pause", "fade"],
    "resume": ["resume", "fade"],
    "stop": ["stop", "fade"],
    "skip": ["skip", "seconds", "curve"],
    "set": ["set", "value", "ramp"],
    "releaseLoop": ["releaseLoop"],
    "layer": ["layer", "volume", "seconds", "curve", "at"],
  ]

  /// An action, or a list of at least one.
  private mutating func decodeActions(_ value: JSON5Value, _ path: String) -> [CueAction] {
    switch value.kind {
    case .object: return action(value, path).map { [$0] } ?? []
    case .array(let elements):
      if elements.isEmpty { error(value.location, path, "a rule needs at least one action") }
      return elements.enumerated().compactMap { index, element in action(element, "\(path)[\(index)]") }
    default:
      mismatch(value, path, expected: "an action { verb: ... } or a list of actions")
      return []
    }
  }

  private mutating func action(_ value: JSON5Value, _ path: String) -> CueAction? {
    guard let object = objectValue(value, path) else { return nil }
    var verbs: [JSON5Object.Member] = []
    for member in object.members
    where Self.verbs.contains(member.key) && !verbs.contains(where: { $0.key == member.key }) {
      verbs.append(member)
    }
    // A stinger's `volume` and `duck` are its options, not actions of their own.
    if verbs.contains(where: { $0.key == "stinger" }) { verbs.removeAll { $0.key == "volume" || $0.key == "duck" } }
    // A layer's `volume` is where it goes.
    if verbs.contains(where: { $0.key == "layer" }) { verbs.removeAll { $0.key == "volume" } }

    guard verbs.count == 1 else {
      if verbs.isEmpty {
        let optionKeys = Set(Self.actionKeys.values.joined()).subtracting(Self.verbs).sorted()
        var suggestedVerb = false
        let fields = fields(value, path, allowed: optionKeys) { key in
          if let verb = closestMatch(to: key, among: Self.verbs) {
            suggestedVerb = true
            return "; did you mean \"\(verb)\"?"
          }
          return " (an action's verb is one of \(Self.list(Self.verbs)))"
        }
        if !suggestedVerb {
          let found = fields?.object.keys ?? []
          error(
            value.location, path,
            "an action needs a verb: one of \(Self.list(Self.verbs))"
              + (found.isEmpty
                ? "; found none" : "; found only \(Self.list(found.map { "\"\($0)\"" }, conjunction: "and"))"))
        }
      } else {
        let allowed = verbs.flatMap { Self.actionKeys[$0.key]! }
        _ = fields(value, path, allowed: allowed)
        error(
          verbs[1].keyLocation, path,
          "an action has one verb; found \(Self.list(verbs.map { "\"\($0.key)\"" }, conjunction: "and"))"
            + " (give each its own action in a list under \"do\")")
      }
      return nil
    }
    let verb = verbs[0].key
    // `{ state: "combat", seconds: 1 }`: a state change takes the state's own transition; the
    // verb that takes one is `crossfade`.
    let transitionHint: ((String) -> String)? =
      verb == "state"
      ? { key in
        CueSheetDecoder.transitionKeys.contains(key)
          ? "; \"state\" takes the state's own transition: to give one here, write { crossfade: ..., \(key): ... }"
          : CueSheetDecoder.unknownKeyHint(key, allowed: ["state"])
      } : nil
    guard let action = fields(value, path, allowed: Self.actionKeys[verb]!, unknownKeyHint: transitionHint),
      let given = action[verb]
    else {
      return nil
    }
    let verbPath = action.path(verb)
    switch verb {
    case "state":
      guard let name = string(given, verbPath), stateReference(name, at: given.location, verbPath) else { return nil }
      enteredStates.insert(name)
      return .changeState(name, transition: nil)
    case "crossfade":
      guard let name = string(given, verbPath) else { return nil }
      let known = stateReference(name, at: given.location, verbPath)
      if known { enteredStates.insert(name) }
      // Keys the action leaves out come from the target state's own transition.
      var spec = sheet.states[name]?.transition ?? TransitionSpec()
      applyTransitionKeys(action, to: &spec)
      return known ? .changeState(name, transition: spec) : nil
    case "stinger":
      return stinger(action, given, verbPath).map { .stinger($0) }
    case "duck":
      return duck(given, verbPath, options: action).map { .duck($0) }
    case "rate":
      guard let rate = number(given, verbPath, name: "rate", .rate) else { return nil }
      return .rate(Float(rate), rampSeconds: number(action, "ramp", .seconds) ?? 0)
    case "tempo":
      guard let tempo = number(given, verbPath, name: "tempo", .tempo) else { return nil }
      return .tempo(Float(tempo), rampSeconds: number(action, "ramp", .seconds) ?? 0)
    case "volume":
      guard let volume = number(given, verbPath, name: "volume", .unit) else { return nil }
      return .volume(Float(volume), rampSeconds: number(action, "ramp", .seconds) ?? 0)
    case "seek":
      let fade = number(action, "fade", .seconds) ?? 0.01
      switch given.kind {
      case .number:
        return number(given, verbPath, name: "seek", .seconds).map { .seek(.seconds($0), fadeSeconds: fade) }
      case .string(let word):
        switch word {
        case "start": return .seek(.start, fadeSeconds: fade)
        case "loop-start": return .seek(.loopStart, fadeSeconds: fade)
        default:
          error(given.location, verbPath, Self.unknownWord(word, ["start", "loop-start"]) + " (or seconds)")
          return nil
        }
      default:
        mismatch(given, verbPath, expected: "seconds, \"start\" or \"loop-start\"")
        return nil
      }
    case "pause", "resume", "stop":
      let fade = number(action, "fade", .seconds) ?? (verb == "stop" ? 1 : 0.01)
      guard isTrue(given, verbPath, name: verb) else { return nil }
      return verb == "pause"
        ? .pause(fadeSeconds: fade) : verb == "resume" ? .resume(fadeSeconds: fade) : .stop(fadeSeconds: fade)
    case "skip":
      let direction = word(given, verbPath, SkipDirection.self)
      var transition: TransitionSpec?
      if action.has("seconds") || action.has("curve") {
        var spec = TransitionSpec()
        applyTransitionKeys(action, to: &spec)
        transition = spec
      }
      return direction.map { .skip($0, transition: transition) }
    case "set":
      return setParameter(action, given, verbPath)
    case "layer":
      let moment = word(action, "at", TransitionSpec.Moment.self, excluding: [.end])
      let seconds = number(action, "seconds", .seconds)
      let curve = word(action, "curve", FadeCurve.self)
      guard let name = string(given, verbPath) else { return nil }
      layerReferences.append((name, given.location, verbPath))
      guard
        let volume = required(action, "volume", "the level to go to, in [0, 1]").flatMap({
          number($0, action.path("volume"), name: "volume", .unit)
        })
      else { return nil }
      return .layer(
        LayerAction(
          layer: name, volume: Float(volume), seconds: seconds ?? 0, curve: curve ?? .equalPower, moment: moment ?? .now
        ))
    default:  // releaseLoop
      return isTrue(given, verbPath, name: verb) ? .releaseLoop : nil
    }
  }

  /// `{ stinger: "name", at, volume, duck }`: a source by that name, else a bundled file.
  private mutating func stinger(_ action: Fields, _ given: JSON5Value, _ path: String) -> StingerAction? {
    let moment = word(action, "at", TransitionSpec.Moment.self, excluding: [.end])
    let volume = number(action, "volume", .unit)
    var ducking: DuckAction?
    if let given = action["duck"] { ducking = duck(given, action.path("duck"), options: nil) }
    guard let name = string(given, path) else { return nil }
    var isSource = false
    if sourceNames.contains(name) {
      isSource = true
      usedSources.insert(name)
    } else if assetsUsable {
      let catalog = catalog()
      if catalog.item(relativePath: name) == nil {
        if let failure = catalog.failure(relativePath: name) {
          error(given.location, path, "bundled file \"\(name)\" cannot be played: \(failure.reason)")
        } else {
          error(
            given.location, path,
            "no source and no bundled file named \"\(name)\" (in \(sheet.assetsDirectory.path))"
              + Self.suggestion(for: name, among: sourceNames + catalog.relativePaths))
        }
        return nil
      }
    }
    var stinger = StingerAction(sound: name, isSource: isSource)
    if let moment { stinger.moment = moment }
    if let volume { stinger.volume = Float(volume) }
    stinger.duck = ducking
    return stinger
  }

  /// The `duck` action (`options` holds attack, hold and release), or a stinger's `duck`: decibels
  /// or `{ db, attack, hold, release }`.
  private mutating func duck(_ value: JSON5Value, _ path: String, options: Fields?) -> DuckAction? {
    let range = NumberRange(-60, 0)
    var timing = options
    var decibels: Double?
    if let options {
      decibels = number(value, path, name: "duck", range)
      timing = options
    } else if value.objectValue != nil {
      guard let object = fields(value, path, allowed: ["db", "attack", "hold", "release"]) else { return nil }
      timing = object
      if let db = required(object, "db", "how far down, in decibels") {
        decibels = number(db, object.path("db"), name: "db", range)
      }
    } else if value.numberValue != nil {
      decibels = number(value, path, name: "duck", range)
    } else {
      mismatch(value, path, expected: "decibels or { db, attack, hold, release }")
      return nil
    }
    var duck = DuckAction(decibels: decibels ?? 0)
    if let timing {
      if let attack = number(timing, "attack", .seconds) { duck.attackSeconds = attack }
      if let hold = number(timing, "hold", .seconds) { duck.holdSeconds = hold }
      if let release = number(timing, "release", .seconds) { duck.releaseSeconds = release }
    }
    return decibels == nil ? nil : duck
  }

  /// `{ set: "param", value, ramp }`: the value within the parameter's range.
  private mutating func setParameter(_ action: Fields, _ given: JSON5Value, _ path: String) -> CueAction? {
    let ramp = number(action, "ramp", .seconds) ?? 0
    let name = string(given, path)
    var known = false
    if let name {
      known = parameterNames.contains(name)
      if !known {
        error(
          given.location, path, "no parameter named \"\(name)\"" + Self.suggestion(for: name, among: parameterNames))
      }
    }
    guard let value = required(action, "value", "the parameter's new value") else { return nil }
    let range = name.flatMap { sheet.parameter(named: $0) }.map { NumberRange($0.minimum, $0.maximum) } ?? .any
    guard let number = number(value, action.path("value"), name: "value", range), let name, known else { return nil }
    return .setParameter(name, value: number, rampSeconds: ramp)
  }

  // MARK: Warnings

  /// What works but was probably not meant: unused sources, unreachable states, shadowed rules.
  mutating func addWarnings() {
    for (name, location) in sourceDeclarations where !usedSources.contains(name) {
      warning(location, "sources.\(name)", "source \"\(name)\" is not used by any state or stinger")
    }
    for (name, location) in stateDeclarations where !enteredStates.contains(name) {
      warning(
        location, "states.\(name)", "state \"\(name)\" is never entered: it is not \"start\" and no rule changes to it")
    }
    // The director keeps cooldowns and reports by rule name: two rules of one name share them.
    var ruleLines: [String: Int?] = [:]
    for (index, rule) in sheet.rules.enumerated() {
      if let line = ruleLines[rule.name] {
        let (_, _, location, path) = rulePlaces[index]
        warning(
          location, path,
          "another rule is named \"\(rule.name)\"" + (line.map { " (line \($0))" } ?? "")
            + ": they share one cooldown and read alike in reports")
      } else {
        ruleLines[rule.name] = rule.line
      }
    }
    for (later, rule) in sheet.rules.enumerated() {
      let shadow = sheet.rules[..<later].first { earlier in
        earlier.conditions.isEmpty && earlier.cooldownSeconds == 0 && earlier.priority >= rule.priority
          && !rule.cues.isEmpty && rule.cues.allSatisfy { Self.pattern($0, isCoveredBy: earlier.cues) }
      }
      if let shadow {
        let (location, path, _, _) = rulePlaces[later]
        warning(
          location, path,
          "rule \"\(rule.name)\" never fires: rule \"\(shadow.name)\"" + (shadow.line.map { " (line \($0))" } ?? "")
            + " answers the same cues first, with no conditions and at least its priority")
      }
    }
  }

  /// Whether every cue `pattern` answers is answered by one of `patterns`.
  static func pattern(_ pattern: String, isCoveredBy patterns: [String]) -> Bool {
    patterns.contains { other in
      if other == "*" || other == pattern { return true }
      guard other.hasSuffix(".*"), pattern != "*" else { return false }
      return pattern.hasPrefix(other.dropLast())
    }
  }
}

extension RuleConditions {
  /// No condition at all: the rule fires on every cue it answers.
  var isEmpty: Bool { states == nil && notStates.isEmpty && payload.isEmpty && parameters.isEmpty }
}

// MARK: Media keys

extension CueSheetDecoder {
  /// `mediaKeys: { next: "skip", previous: "ignore", playPause: { cue: "menu.pause" } }`: each key
  /// of `MediaKey`, a word (`skip` for next and previous, `pause` for the other four, `ignore`
  /// for any) or `{ cue }`.
  mutating func decodeMediaKeys(_ value: JSON5Value, _ path: String) {
    guard let keys = fields(value, path, allowed: MediaKey.allCases.map(\.rawValue)) else { return }
    for key in MediaKey.allCases {
      guard let given = keys[key.rawValue] else { continue }
      let keyPath = keys.path(key.rawValue)
      let word: MediaKeyAction = [.next, .previous].contains(key) ? .skip : .pause
      let wordText = word == .skip ? "skip" : "pause"
      let expected = "\"\(wordText)\", \"ignore\" or { cue: \"NAME\" }"
      switch given.kind {
      case .string(let text):
        switch text {
        case wordText: sheet.mediaKeys[key] = word
        case "ignore": sheet.mediaKeys[key] = .ignore
        case "skip", "pause":
          error(
            given.location, keyPath,
            "\"\(text)\" is not for \(key.rawValue): \(key.rawValue) takes \(expected)")
        default:
          error(given.location, keyPath, Self.unknownWord(text, [wordText, "ignore"]) + " (or { cue: \"NAME\" })")
        }
      case .object:
        guard let action = fields(given, keyPath, allowed: ["cue"]),
          let cueValue = required(action, "cue", "the cue the key posts"),
          let cue = string(cueValue, action.path("cue"))
        else { continue }
        sheet.mediaKeys[key] = .cue(cue)
        if !sheet.rules.contains(where: { Self.pattern(cue, isCoveredBy: $0.cues) }) {
          warning(cueValue.location, action.path("cue"), "no rule listens to cue \"\(cue)\": the key does nothing")
        }
      default:
        mismatch(given, keyPath, expected: expected)
      }
    }
  }
}

// MARK: The player's own music app

extension CueSheetDecoder {
  /// `systemMusic: "leave" | "pause" | "duck" | { duck: -12, seconds: 1 }`.
  mutating func decodeSystemMusic(_ value: JSON5Value, _ path: String) {
    let expected = "\"leave\", \"pause\", \"duck\" or { duck: DECIBELS, seconds: S }"
    switch value.kind {
    case .string(let text):
      switch text {
      case "leave": sheet.systemMusic = .leave
      case "pause": sheet.systemMusic = .pause
      case "duck": sheet.systemMusic = SystemMusicPolicy.defaultDuck
      default:
        error(value.location, path, Self.unknownWord(text, ["leave", "pause", "duck"]) + " (or { duck: DECIBELS })")
      }
    case .object:
      guard let fields = fields(value, path, allowed: ["duck", "seconds"]),
        let duckValue = required(fields, "duck", "how far down the game's music goes, in dB, below 0")
      else { return }
      guard case .duck(_, let defaultSeconds) = SystemMusicPolicy.defaultDuck else { return }
      let decibels = number(duckValue, fields.path("duck"), name: "duck", NumberRange(-96, 0, upperIncluded: false))
      let seconds = fields.has("seconds") ? number(fields, "seconds", NumberRange(0, 60)) : defaultSeconds
      guard let decibels, let seconds else { return }
      sheet.systemMusic = .duck(decibels: decibels, seconds: seconds)
    default:
      mismatch(value, path, expected: expected)
    }
  }
}
