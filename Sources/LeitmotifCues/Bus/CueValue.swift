import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

/// A payload value: numbers, strings and booleans only.
///
/// Payloads stay this small on purpose: a game posts them on its hot path, and the music director
/// only needs something to compare against a cue file's rules (`threat >= 2`, `boss == "ganon"`).
///
/// Thread safety: a value type; safe to pass between threads.
public enum CueValue: Sendable, Hashable, CustomStringConvertible, ExpressibleByIntegerLiteral,
  ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByBooleanLiteral
{
  /// A number (integers are numbers too).
  case number(Double)
  /// A string.
  case string(String)
  /// A boolean.
  case bool(Bool)

  /// An integer literal, as a number: `["threat": 3]`.
  public init(integerLiteral value: Int) { self = .number(Double(value)) }
  /// A floating-point literal, as a number.
  public init(floatLiteral value: Double) { self = .number(value) }
  /// A string literal: `["kind": "wolf"]`.
  public init(stringLiteral value: String) { self = .string(value) }
  /// A boolean literal.
  public init(booleanLiteral value: Bool) { self = .bool(value) }

  /// The number, or nil when this is a string or a boolean.
  public var numberValue: Double? {
    if case .number(let value) = self { return value }
    return nil
  }

  /// The string, or nil when this is a number or a boolean.
  public var stringValue: String? {
    if case .string(let value) = self { return value }
    return nil
  }

  /// The boolean, or nil when this is a number or a string.
  public var boolValue: Bool? {
    if case .bool(let value) = self { return value }
    return nil
  }

  /// `2`, `2.5`, `"boss"` (quoted, so the string "2" and the number 2 read differently in logs), `true`.
  public var description: String {
    switch self {
    case .number(let value):
      // Integral numbers print as integers ("threat: 2", not "threat: 2.0"). The bound keeps the
      // conversion exact; beyond it Double's own spelling ("1e+20") is the clearer one anyway.
      if value.isFinite, value == value.rounded(), abs(value) < 1e15 {
        return String(Int64(value))
      }
      return String(value)
    case .string(let value):
      return String(reflecting: value)
    case .bool(let value):
      return String(value)
    }
  }
}

/// A level event's named values, e.g. `["threat": 2, "boss": "ganon"]`.
public typealias CuePayload = [String: CueValue]

/// A payload value in JSON is a JSON scalar of its own type (`"threat": 1`, not `"1"`).
extension CueValue: Codable {
  public init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    if let flag = try? container.decode(Bool.self) {
      self = .bool(flag)
    } else if let number = try? container.decode(Double.self) {
      self = .number(number)
    } else {
      self = .string(try container.decode(String.self))
    }
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    switch self {
    case .number(let value): try container.encode(value)
    case .string(let value): try container.encode(value)
    case .bool(let value): try container.encode(value)
    }
  }
}
