import FoundationEssentials

/// Finds a key that appears twice in one object of a JSON text.
///
/// JSON leaves duplicate keys undefined and readers disagree: Foundation's `JSONDecoder` keeps
/// the first, most others (Python's `json`, JavaScript's `JSON.parse`, jq) the last. An answers
/// file that names an application "authorized" and then "denied" would grant access here while
/// every other tool shows a denial, so the consent files are refused as damaged instead of read
/// either way. Keys are compared as Swift strings, after unescaping: `"a\u0062"` repeats `"ab"`,
/// and canonically equivalent spellings are one key, as in the decoder's dictionaries.
///
/// Runs after `JSONDecoder` accepted the text, so it only follows JSON's grammar far enough to
/// find keys; what it cannot follow (a text in UTF-16, say) it reports rather than passes.
enum JSONDuplicateKeys {
  enum Finding: Equatable {
    /// Every object's keys are distinct.
    case none
    /// `key` appears twice in the object at `path` (the keys, and `[n]` indexes, leading to it).
    case duplicate(key: String, path: [String])
    /// Not a JSON text this scanner can follow; why.
    case unreadable(String)
  }

  /// Deeper than this is not a consent file (JSONDecoder stops at 512 as well).
  static let depthLimit = 512

  static func check(_ data: Data) -> Finding {
    var scanner = Scanner(bytes: [UInt8](data))
    do throws(Scanner.Stop) {
      // A UTF-8 byte order mark, as some editors write, is not part of the text.
      if scanner.bytes.starts(with: [0xEF, 0xBB, 0xBF]) { scanner.index = 3 }
      try scanner.value(depth: 0)
      scanner.skipWhitespace()
      guard scanner.index == scanner.bytes.count else { throw .unreadable("text after the JSON value") }
      return .none
    } catch {
      switch error {
      case .duplicate(let key, let path): return .duplicate(key: key, path: path)
      case .unreadable(let reason): return .unreadable(reason)
      }
    }
  }

  /// How a finding reads in a damage reason: `"KEY" appears twice in "applications"`.
  static func describe(key: String, path: [String]) -> String {
    let place = path.isEmpty ? "at the top level" : "in " + path.map { "\"\($0)\"" }.joined(separator: ".")
    return "\"\(key)\" appears twice \(place) (JSON readers disagree on which one counts)"
  }

  private struct Scanner {
    enum Stop: Error {
      case duplicate(key: String, path: [String])
      case unreadable(String)
    }

    let bytes: [UInt8]
    var index = 0
    /// The keys (and array indexes) from the top to the current value.
    var path: [String] = []

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func skipWhitespace() {
      while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    mutating func value(depth: Int) throws(Stop) {
      guard depth < JSONDuplicateKeys.depthLimit else { throw .unreadable("nested too deeply") }
      skipWhitespace()
      guard index < bytes.count else { throw .unreadable("a value is missing at the end") }
      switch bytes[index] {
      case UInt8(ascii: "{"):
        index += 1
        var keys = Set<String>()
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
          index += 1
          return
        }
        while true {
          skipWhitespace()
          guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
            throw .unreadable("expected a key at byte \(index)")
          }
          let key = try string()
          guard keys.insert(key).inserted else { throw .duplicate(key: key, path: path) }
          try expect(UInt8(ascii: ":"))
          path.append(key)
          try value(depth: depth + 1)
          path.removeLast()
          if try endOfList(closing: UInt8(ascii: "}")) { return }
        }
      case UInt8(ascii: "["):
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
          index += 1
          return
        }
        var element = 0
        while true {
          path.append("[\(element)]")
          try value(depth: depth + 1)
          path.removeLast()
          element += 1
          if try endOfList(closing: UInt8(ascii: "]")) { return }
        }
      case UInt8(ascii: "\""):
        _ = try string()
      default:
        // A number, true, false or null: JSONDecoder already checked its spelling.
        let start = index
        while index < bytes.count,
          bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: ".")
            || (bytes[index] >= UInt8(ascii: "0") && bytes[index] <= UInt8(ascii: "9"))
            || (bytes[index] >= UInt8(ascii: "a") && bytes[index] <= UInt8(ascii: "z"))
            || (bytes[index] >= UInt8(ascii: "A") && bytes[index] <= UInt8(ascii: "Z"))
        {
          index += 1
        }
        guard index > start else { throw .unreadable("unexpected byte \(bytes[start]) at byte \(start)") }
      }
    }

    /// After a member or element: true at the closing bracket, false after a comma.
    mutating func endOfList(closing: UInt8) throws(Stop) -> Bool {
      skipWhitespace()
      guard index < bytes.count else { throw .unreadable("the text ends inside an object or array") }
      let byte = bytes[index]
      index += 1
      if byte == closing { return true }
      guard byte == UInt8(ascii: ",") else { throw .unreadable("expected , or a closing bracket at byte \(index - 1)") }
      return false
    }

    mutating func expect(_ byte: UInt8) throws(Stop) {
      skipWhitespace()
      guard index < bytes.count, bytes[index] == byte else {
        throw .unreadable("expected \(Character(Unicode.Scalar(byte))) at byte \(index)")
      }
      index += 1
    }

    /// The string starting at the opening quote, unescaped.
    mutating func string() throws(Stop) -> String {
      index += 1
      var text: [UInt8] = []
      while true {
        guard index < bytes.count else { throw .unreadable("a string is not closed") }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""):
          return String(decoding: text, as: UTF8.self)
        case UInt8(ascii: "\\"):
          guard index < bytes.count else { throw .unreadable("a string is not closed") }
          let escaped = bytes[index]
          index += 1
          switch escaped {
          case UInt8(ascii: "b"): text.append(0x08)
          case UInt8(ascii: "f"): text.append(0x0C)
          case UInt8(ascii: "n"): text.append(0x0A)
          case UInt8(ascii: "r"): text.append(0x0D)
          case UInt8(ascii: "t"): text.append(0x09)
          case UInt8(ascii: "u"):
            var scalar = try hex4()
            // A surrogate pair spells one scalar in two escapes.
            if (0xD800..<0xDC00).contains(scalar), bytes[index...].starts(with: [0x5C, UInt8(ascii: "u")]) {
              index += 2
              let low = try hex4()
              if (0xDC00..<0xE000).contains(low) {
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
              } else {
                index -= 6
              }
            }
            text.append(contentsOf: Array(String(Character(Unicode.Scalar(scalar) ?? "\u{FFFD}")).utf8))
          default: text.append(escaped)  // \" \\ \/
          }
        default:
          text.append(byte)
        }
      }
    }

    mutating func hex4() throws(Stop) -> UInt32 {
      guard index + 4 <= bytes.count,
        let value = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
      else { throw .unreadable("a \\u escape without four hex digits at byte \(index)") }
      index += 4
      return value
    }
  }
}
