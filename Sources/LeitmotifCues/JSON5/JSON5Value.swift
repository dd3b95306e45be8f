import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

extension JSON5 {
  /// A position in a source text, for messages of the form FILE:LINE:COLUMN.
  ///
  /// Both numbers are 1-based. The column counts Unicode scalars from the start of the line (a
  /// tab counts 1, "é" counts 1, an emoji made of one scalar counts 1), which is what most editors
  /// show. Lines end at "\n", "\r\n", "\r", U+2028 and U+2029.
  ///
  /// It is nested in `JSON5` rather than top-level because Swift Testing also declares a
  /// `SourceLocation`, and test files import both modules: a second top-level type of that name
  /// would make the name ambiguous in every test that uses `#_sourceLocation`.
  public struct SourceLocation: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The 1-based line number.
    public var line: Int
    /// The 1-based column, in Unicode scalars from the start of the line.
    public var column: Int

    /// The position at `line` and `column` (both 1-based).
    public init(line: Int, column: Int) {
      self.line = line
      self.column = column
    }

    /// Orders by line, then column: the order of positions in the text.
    public static func < (a: SourceLocation, b: SourceLocation) -> Bool {
      (a.line, a.column) < (b.line, b.column)
    }

    /// "LINE:COLUMN", e.g. "3:5".
    public var description: String { "\(line):\(column)" }
  }
}

/// A value parsed from a JSON5 text, with the location of its first character.
public struct JSON5Value: Sendable {
  /// What the value is. Numbers are always `Double` because JSON5 numbers are ECMAScript
  /// numbers (hexadecimal literals, `Infinity` and `NaN` included).
  ///
  /// Not `indirect`: lists and objects already hold their contents in array storage, and boxing
  /// every case would cost one heap allocation per number, boolean and string in the file.
  public enum Kind: Sendable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number (hexadecimal, `Infinity` and `NaN` included).
    case number(Double)
    /// A string, escapes resolved.
    case string(String)
    /// A list, in file order.
    case array([JSON5Value])
    /// An object, its members in file order.
    case object(JSON5Object)
  }

  /// What the value is.
  public var kind: Kind
  /// Where the value's first character is: the quote of a string, the sign or first digit of a
  /// number, the `[` of a list, the `{` of an object.
  public var location: JSON5.SourceLocation

  /// A value of `kind` whose first character is at `location`.
  public init(kind: Kind, location: JSON5.SourceLocation) {
    self.kind = kind
    self.location = location
  }

  /// "null", "a boolean", "a number", "a string", "a list" or "an object", for messages like
  /// "expected a number, found a string".
  public var typeDescription: String {
    switch kind {
    case .null: "null"
    case .bool: "a boolean"
    case .number: "a number"
    case .string: "a string"
    case .array: "a list"
    case .object: "an object"
    }
  }

  /// The string, if the value is a string.
  public var stringValue: String? {
    if case .string(let value) = kind { value } else { nil }
  }

  /// The number, if the value is a number.
  public var numberValue: Double? {
    if case .number(let value) = kind { value } else { nil }
  }

  /// The boolean, if the value is `true` or `false`.
  public var boolValue: Bool? {
    if case .bool(let value) = kind { value } else { nil }
  }

  /// The elements, if the value is a list.
  public var arrayValue: [JSON5Value]? {
    if case .array(let value) = kind { value } else { nil }
  }

  /// The object, if the value is an object.
  public var objectValue: JSON5Object? {
    if case .object(let value) = kind { value } else { nil }
  }

  /// Whether the value is `null`.
  public var isNull: Bool {
    if case .null = kind { true } else { false }
  }
}

/// A JSON5 object: its members in file order, duplicates included.
///
/// Duplicate keys are kept rather than resolved because a duplicate in a cue file is almost
/// always a mistake, and the validator reports it with both locations.
public struct JSON5Object: Sendable {
  /// One `key: value` pair.
  public struct Member: Sendable {
    /// The key, with escapes resolved.
    public var key: String
    /// Where the key's first character is (its quote, if it is quoted).
    public var keyLocation: JSON5.SourceLocation
    /// The value.
    public var value: JSON5Value

    /// A member `key: value`, the key's first character at `keyLocation`.
    public init(key: String, keyLocation: JSON5.SourceLocation, value: JSON5Value) {
      self.key = key
      self.keyLocation = keyLocation
      self.value = value
    }
  }

  /// The members in file order; duplicates are kept.
  public var members: [Member]

  /// An object of `members` (in file order; duplicates kept).
  public init(members: [Member] = []) {
    self.members = members
  }

  /// The value of the first member with that key, or nil.
  public subscript(key: String) -> JSON5Value? {
    member(forKey: key)?.value
  }

  /// The first member with that key (to reach its `keyLocation`), or nil.
  public func member(forKey key: String) -> Member? {
    members.first { $0.key == key }
  }

  /// The keys in file order, duplicates included.
  public var keys: [String] { members.map(\.key) }
}

/// Why a JSON5 text could not be parsed, and where.
public struct JSON5SyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
  /// Where the problem is: the unexpected character, or the start of an unterminated string or
  /// comment.
  public var location: JSON5.SourceLocation
  /// What was expected and what was found, e.g. "expected ':' after the key 'gain', found '='".
  public var message: String

  /// A syntax error `message` at `location`.
  public init(location: JSON5.SourceLocation, message: String) {
    self.location = location
    self.message = message
  }

  /// "LINE:COLUMN: message"; prefix the file name for a FILE:LINE:COLUMN report.
  public var description: String { "\(location): \(message)" }
}
