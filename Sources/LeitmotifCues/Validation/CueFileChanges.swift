/// What a save changed in a cue file, in the file's own terms: one line per key added, removed
/// or given another value ("states.explore.volume: 0.8 → 0.6", "rules "ambush" added"), for the
/// `reloaded` report. A designer tuning a level while it plays saves often; the report used to
/// say only "reloaded", so a save that did not take (the wrong file, an editor's stale buffer)
/// looked the same as one that did.
///
/// Compared on the parsed values, not the text: comments, layout and the order of an object's
/// keys do not count. Lists whose entries all have a distinct `name` (rules) are matched by name,
/// so inserting a rule reports that rule, not a change to every one after it.
enum CueFileChanges {
  /// How many lines a report lists before it says how many more there are.
  static let shownLimit = 12

  /// The changes from `old` to `new` (empty: nothing but comments or layout changed).
  static func between(_ old: JSON5Value, _ new: JSON5Value) -> [String] { summary(old, new).lines }

  /// The changes from `old` to `new`, and the states it renamed: a state gone and one new whose
  /// bodies are the same (comments and layout aside) is one state under a new name, reported
  /// as such ("states "combat" renamed "battle""), not as one removed and one added. The director
  /// then keeps playing it, and a change waiting to enter it enters it, under its new name.
  static func summary(_ old: JSON5Value, _ new: JSON5Value) -> (lines: [String], renamedStates: [String: String]) {
    let renames = renamedStates(old, new)
    var lines = renames.sorted { $0.key < $1.key }.map { "states \"\($0.key)\" renamed \"\($0.value)\"" }
    compare(renaming(old, states: renames), new, path: "", into: &lines)
    return (lines, renames)
  }

  /// Old name to new name, for each state whose body appears under exactly one new name (and
  /// no other gone state has the same body).
  private static func renamedStates(_ old: JSON5Value, _ new: JSON5Value) -> [String: String] {
    guard let before = states(old), let after = states(new) else { return [:] }
    let gone = before.filter { after[$0.key] == nil }
    let added = after.filter { before[$0.key] == nil }
    var renames: [String: String] = [:]
    for (name, body) in gone {
      let matches = added.filter { same($0.value, body) }
      guard matches.count == 1, let match = matches.first,
        gone.filter({ same($0.value, match.value) }).count == 1
      else { continue }
      renames[name] = match.key
    }
    return renames
  }

  /// The top-level `states` object's bodies by name.
  private static func states(_ root: JSON5Value) -> [String: JSON5Value]? {
    guard case .object(let top) = root.kind, let member = firstMembers(top)["states"],
      case .object(let states) = member.value.kind
    else { return nil }
    return firstMembers(states).mapValues(\.value)
  }

  /// `root` with the states in `renames` under their new names (to compare the rest).
  private static func renaming(_ root: JSON5Value, states renames: [String: String]) -> JSON5Value {
    guard !renames.isEmpty, case .object(var top) = root.kind else { return root }
    for index in top.members.indices where top.members[index].key == "states" {
      guard case .object(var states) = top.members[index].value.kind else { continue }
      for state in states.members.indices {
        if let new = renames[states.members[state].key] { states.members[state].key = new }
      }
      top.members[index].value.kind = .object(states)
    }
    return JSON5Value(kind: .object(top), location: root.location)
  }

  /// `lines`, at most `shownLimit` of them, then "... and N more".
  static func shortened(_ lines: [String]) -> [String] {
    guard lines.count > shownLimit else { return lines }
    return Array(lines.prefix(shownLimit - 1)) + ["... and \(lines.count - shownLimit + 1) more changes"]
  }

  private static func compare(_ old: JSON5Value, _ new: JSON5Value, path: String, into lines: inout [String]) {
    switch (old.kind, new.kind) {
    case (.object(let before), .object(let after)):
      let beforeMembers = firstMembers(before)
      let afterMembers = firstMembers(after)
      for member in after.members where afterMembers[member.key]?.keyLocation == member.keyLocation {
        let memberPath = join(path, member.key)
        if let previous = beforeMembers[member.key] {
          compare(previous.value, member.value, path: memberPath, into: &lines)
        } else {
          lines.append("\(memberPath) added: \(compact(member.value))")
        }
      }
      for member in before.members
      where afterMembers[member.key] == nil && beforeMembers[member.key]?.keyLocation == member.keyLocation {
        lines.append("\(join(path, member.key)) removed")
      }
    case (.array(let before), .array(let after)):
      if let beforeNames = names(before), let afterNames = names(after) {
        compareNamed(before, beforeNames, after, afterNames, path: path, into: &lines)
      } else if before.count == after.count {
        for (index, (previous, value)) in zip(before, after).enumerated() {
          compare(previous, value, path: "\(path)[\(index)]", into: &lines)
        }
      } else if !same(old, new) {
        lines.append("\(path): \(compact(old)) → \(compact(new))")
      }
    default:
      if !same(old, new) { lines.append("\(path.isEmpty ? "the file" : path): \(compact(old)) → \(compact(new))") }
    }
  }

  /// Entries matched by their `name`: added, removed, changed, and a new order of those kept
  /// (the order of rules breaks ties between rules of the same priority).
  private static func compareNamed(
    _ before: [JSON5Value], _ beforeNames: [String], _ after: [JSON5Value], _ afterNames: [String], path: String,
    into lines: inout [String]
  ) {
    let beforeIndex = Dictionary(uniqueKeysWithValues: beforeNames.enumerated().map { ($1, $0) })
    let afterSet = Set(afterNames)
    for (value, name) in zip(after, afterNames) {
      let entryPath = "\(path) \"\(name)\""
      if let index = beforeIndex[name] {
        compare(before[index], value, path: entryPath, into: &lines)
      } else {
        lines.append("\(entryPath) added")
      }
    }
    for name in beforeNames where !afterSet.contains(name) { lines.append("\(path) \"\(name)\" removed") }
    let keptBefore = beforeNames.filter { afterSet.contains($0) }
    let keptAfter = afterNames.filter { beforeIndex[$0] != nil }
    if keptBefore != keptAfter { lines.append("\(path): order changed") }
  }

  /// Each entry's `name`, when every entry is an object with a distinct string `name`.
  private static func names(_ values: [JSON5Value]) -> [String]? {
    guard !values.isEmpty else { return nil }
    var names: [String] = []
    for value in values {
      guard case .object(let object) = value.kind,
        let member = object.members.first(where: { $0.key == "name" }),
        case .string(let name) = member.value.kind
      else { return nil }
      names.append(name)
    }
    return Set(names).count == names.count ? names : nil
  }

  /// The first member of each key (a duplicate is an error the check reports; it is not read).
  private static func firstMembers(_ object: JSON5Object) -> [String: JSON5Object.Member] {
    var members: [String: JSON5Object.Member] = [:]
    for member in object.members where members[member.key] == nil { members[member.key] = member }
    return members
  }

  private static func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : path + "." + key }

  /// Whether two values are the same, locations aside.
  static func same(_ a: JSON5Value, _ b: JSON5Value) -> Bool {
    switch (a.kind, b.kind) {
    case (.null, .null): return true
    case (.bool(let x), .bool(let y)): return x == y
    // NaN is the same as NaN here: a file that says NaN twice did not change.
    case (.number(let x), .number(let y)): return x == y || (x.isNaN && y.isNaN)
    case (.string(let x), .string(let y)): return x == y
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
    case (.object(let x), .object(let y)):
      let xMembers = firstMembers(x)
      let yMembers = firstMembers(y)
      return xMembers.count == yMembers.count
        && xMembers.allSatisfy { key, member in yMembers[key].map { same(member.value, $0.value) } ?? false }
    default: return false
    }
  }

  /// The value as JSON5 on one line, cut to about 60 characters.
  static func compact(_ value: JSON5Value) -> String {
    let text = render(value)
    guard text.count > 60 else { return text }
    return String(text.prefix(57)) + "..."
  }

  private static func render(_ value: JSON5Value) -> String {
    switch value.kind {
    case .null: return "null"
    case .bool(let flag): return flag ? "true" : "false"
    case .number(let number): return CueSheetDecoder.format(number)
    case .string(let text): return "\"\(text)\""
    case .array(let values): return "[" + values.map(render).joined(separator: ", ") + "]"
    case .object(let object):
      guard !object.members.isEmpty else { return "{}" }
      return "{ " + object.members.map { "\($0.key): \(render($0.value))" }.joined(separator: ", ") + " }"
    }
  }
}
