import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

/// A scripted run of a level: timed events for `leitmotif cues simulate`, the tests and the
/// demo. A JSON5 list; each entry is a cue or a parameter change at a time in seconds:
///
/// ```json5
/// [
///   { at: 0, cue: "level.start" },
///   { at: 12.5, cue: "enemy.spotted", payload: { threat: 2 } },
///   { at: 20, set: "intensity", value: 0.8, ramp: 2 },
/// ]
/// ```
public struct CueScript: Sendable {
  /// One timed event of the script.
  public struct Step: Sendable {
    /// What the step does.
    public enum Kind: Sendable {
      /// Posts a cue with its payload (`{ at, cue, payload }`).
      case cue(String, CuePayload)
      /// Sets a game parameter over a ramp (`{ at, set, value, ramp }`).
      case parameter(String, value: Double, rampSeconds: Double)
    }
    /// When, in seconds from the start.
    public var time: Double
    /// What it does.
    public var kind: Kind
    /// Where the step is in the script (for messages).
    public var line: Int

    /// A step at `time` seconds doing `kind`, from `line` of the script (0: not from a file).
    public init(time: Double, kind: Kind, line: Int = 0) {
      self.time = time
      self.kind = kind
      self.line = line
    }
  }

  /// In time order (steps at the same time keep the script's order).
  public var steps: [Step]

  /// A script of `steps`, put in time order (steps at the same time keep their order).
  public init(steps: [Step]) {
    self.steps = steps.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(
      \.element)
  }

  /// When the last step happens.
  public var lastTime: Double { steps.last?.time ?? 0 }

  /// The script's parameter changes checked against `sheet` (the script read from `path`): a
  /// parameter the cue file does not have is an error (it was said set, then reported), a value
  /// outside its range a warning (the director holds it at the end of the range).
  public func problems(against sheet: CueSheet, path: String) -> [CueProblem] {
    var problems: [CueProblem] = []
    let names = sheet.parameters.map(\.name)
    for step in steps {
      guard case .parameter(let name, let value, _) = step.kind else { continue }
      let location = JSON5.SourceLocation(line: max(1, step.line), column: 1)
      guard let spec = sheet.parameters.first(where: { $0.name == name }) else {
        let hint = closestMatch(to: name, among: names).map { "; did you mean \"\($0)\"?" } ?? ""
        let known =
          names.isEmpty ? " (the cue file has none)" : hint.isEmpty ? " (it has \(names.joined(separator: ", ")))" : ""
        problems.append(
          CueProblem(
            severity: .error, file: path, location: location, keyPath: "set",
            message: "no parameter named \"\(name)\" in the cue file\(hint)\(known)"))
        continue
      }
      guard value < spec.minimum || value > spec.maximum else { continue }
      let held = min(spec.maximum, max(spec.minimum, value))
      func text(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : String(number)
      }
      problems.append(
        CueProblem(
          severity: .warning, file: path, location: location, keyPath: "value",
          message:
            "set \"\(name)\" to \(text(value)): its range is \(text(spec.minimum)) to \(text(spec.maximum)) (min, max); it is held at \(text(held))"
        ))
    }
    return problems
  }

  /// Reads a script file.
  /// - Throws: `CueFileError` with every problem, each with its line and column.
  public static func load(path: String) throws(CueFileError) -> CueScript {
    let text: String
    do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
      throw CueFileError(problems: [
        CueProblem(
          severity: .error, file: path, location: JSON5.SourceLocation(line: 1, column: 1), keyPath: "",
          message: "cannot read the file: \(FolderWalker.errorText(error))")
      ])
    }
    return try parse(text, path: path)
  }

  /// Reads a script from `text` (`path` names it in messages).
  public static func parse(_ text: String, path: String) throws(CueFileError) -> CueScript {
    var problems: [CueProblem] = []
    func problem(_ location: JSON5.SourceLocation, _ keyPath: String, _ message: String) {
      problems.append(CueProblem(severity: .error, file: path, location: location, keyPath: keyPath, message: message))
    }
    let root: JSON5Value
    do { root = try JSON5.parse(text) } catch {
      throw CueFileError(problems: [
        CueProblem(severity: .error, file: path, location: error.location, keyPath: "", message: error.message)
      ])
    }
    guard let list = root.arrayValue else {
      problem(root.location, "", "expected a list of timed events, found \(root.typeDescription)")
      throw CueFileError(problems: problems)
    }
    var steps: [Step] = []
    for (index, entry) in list.enumerated() {
      let path = "[\(index)]"
      guard let object = entry.objectValue else {
        problem(
          entry.location, path,
          "expected an event like { at: 1.5, cue: \"combat.start\" }, found \(entry.typeDescription)")
        continue
      }
      let known = ["at", "cue", "payload", "set", "value", "ramp"]
      for member in object.members where !known.contains(member.key) {
        let hint = closestMatch(to: member.key, among: known).map { "; did you mean \"\($0)\"?" } ?? ""
        problem(member.keyLocation, "\(path).\(member.key)", "unknown key \"\(member.key)\"\(hint)")
      }
      guard let at = object["at"] else {
        problem(entry.location, path, "missing \"at\": the time in seconds")
        continue
      }
      guard let time = at.numberValue, time.isFinite, time >= 0, time <= FrameMath.maximumSeconds else {
        problem(
          at.location, "\(path).at",
          "expected a time from 0 to \(Int(FrameMath.maximumSeconds)) s (one day), found \(describe(at))")
        continue
      }
      switch (object["cue"], object["set"]) {
      case (let cue?, nil):
        guard let name = cue.stringValue, !name.isEmpty else {
          problem(cue.location, "\(path).cue", "expected a cue name, found \(describe(cue))")
          continue
        }
        var payload: CuePayload = [:]
        if let value = object["payload"] {
          if let fields = value.objectValue {
            for member in fields.members {
              switch member.value.kind {
              case .number(let number): payload[member.key] = .number(number)
              case .string(let string): payload[member.key] = .string(string)
              case .bool(let flag): payload[member.key] = .bool(flag)
              default:
                problem(
                  member.value.location, "\(path).payload.\(member.key)",
                  "expected a number, a string or a boolean, found \(member.value.typeDescription)")
              }
            }
          } else {
            problem(value.location, "\(path).payload", "expected an object, found \(value.typeDescription)")
          }
        }
        steps.append(Step(time: time, kind: .cue(name, payload), line: entry.location.line))
      case (nil, let set?):
        guard let name = set.stringValue, !name.isEmpty else {
          problem(set.location, "\(path).set", "expected a parameter name, found \(describe(set))")
          continue
        }
        guard let value = object["value"], let number = value.numberValue, number.isFinite else {
          problem(
            object["value"]?.location ?? entry.location, "\(path).value",
            "expected the parameter's new value (a number)")
          continue
        }
        var ramp = 0.0
        if let rampValue = object["ramp"] {
          guard let seconds = rampValue.numberValue, seconds.isFinite, seconds >= 0,
            seconds <= FrameMath.maximumSeconds
          else {
            problem(rampValue.location, "\(path).ramp", "expected a time of 0 s or more, found \(describe(rampValue))")
            continue
          }
          ramp = seconds
        }
        steps.append(
          Step(time: time, kind: .parameter(name, value: number, rampSeconds: ramp), line: entry.location.line))
      case (nil, nil):
        problem(entry.location, path, "expected \"cue\" (an event) or \"set\" (a parameter change)")
      case (_?, _?):
        problem(entry.location, path, "an entry is either a cue or a parameter change (\"set\"), not both")
      }
    }
    if !problems.isEmpty { throw CueFileError(problems: problems) }
    return CueScript(steps: steps)
  }

  private static func describe(_ value: JSON5Value) -> String {
    switch value.kind {
    case .number(let number): return CueValue.number(number).description
    case .string(let string): return "\"\(string)\""
    default: return value.typeDescription
    }
  }
}
