import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

/// Parses JSON5 (https://spec.json5.org) and keeps the location of every value and key.
///
/// Foundation's `JSONSerialization` and `JSONDecoder` accept JSON5 but cannot say where a value
/// was, and the cue validator must report problems as FILE:LINE:COLUMN; hence this parser.
public enum JSON5 {
  /// The deepest nesting of lists and objects accepted. Deeper texts are rejected with an error
  /// instead of being parsed: no cue file needs more, and it bounds the work and memory spent on
  /// a hostile file.
  public static let maximumDepth = 512

  /// Parses a complete JSON5 text: one value of any kind, surrounded by optional whitespace and
  /// comments.
  ///
  /// Everything in the specification is accepted: comments, trailing commas, unquoted keys,
  /// single-quoted strings and all their escapes, hexadecimal numbers, leading and trailing
  /// decimal points, explicit `+` signs, `Infinity` and `NaN`. A leading byte order mark is
  /// skipped and does not count as a column.
  ///
  /// - Parameter text: the whole file.
  /// - Returns: the top-level value; keys and values carry their 1-based line and column.
  /// - Throws: `JSON5SyntaxError` at the first problem, saying what was expected and what was
  ///   found. The parser never traps, whatever the input.
  /// - Thread safety: a pure function; call it from any thread.
  public static func parse(_ text: String) throws(JSON5SyntaxError) -> JSON5Value {
    let utf8 = Array(text.utf8)
    return try utf8.withUnsafeBufferPointer { (bytes) throws(JSON5SyntaxError) -> JSON5Value in
      var parser = JSON5Parser(bytes: bytes)
      return try parser.parseDocument()
    }
  }
}

/// The parser's state: the UTF-8 bytes, a read offset, and what is needed to turn an offset into
/// a line and column.
///
/// It works on bytes rather than `Character`s because grapheme breaking would make a 1 MB file
/// slow, and every character JSON5 gives meaning to is ASCII; non-ASCII scalars are decoded only
/// where they matter (whitespace, identifiers, the text of messages).
///
/// Lists and objects are parsed with an explicit stack instead of recursion, so that a file of
/// 100 000 `[` ends in an error rather than a stack overflow, on any thread.
///
/// The bytes are read through an unsafe buffer (valid only during `JSON5.parse`) because array
/// bounds checks were a measurable share of the time on a 1 MB file. Every read goes through
/// `peek`, which checks the bounds itself, or indexes a position that `peek` has just checked.
struct JSON5Parser {
  private let bytes: UnsafeBufferPointer<UInt8>
  private var offset = 0
  /// The current line number and the offset where it starts.
  private var line = 1
  private var lineStart = 0
  /// Columns are computed on demand by counting scalars from the start of the line. To keep that
  /// linear on a long single-line file, the last answer is remembered and counting resumes from
  /// there.
  private var columnCacheOffset = 0
  private var columnCacheColumn = 1

  init(bytes: UnsafeBufferPointer<UInt8>) {
    self.bytes = bytes
    // A byte order mark is invisible in editors, so it must not shift the columns of line 1.
    if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
      offset = 3
      startLine(at: 3, counting: false)
    }
  }

  // MARK: - The document, lists and objects

  mutating func parseDocument() throws(JSON5SyntaxError) -> JSON5Value {
    try skipTrivia()
    let value = try parseValueTree()
    try skipTrivia()
    if offset < bytes.count {
      throw error(
        at: offset,
        "expected the end of the input after the \(noun(of: value)) that starts at \(value.location), "
          + "found \(describeFound(at: offset))")
    }
    return value
  }

  /// A list or object still being read.
  private struct OpenContainer {
    var isObject: Bool
    var location: JSON5.SourceLocation
    var elements: [JSON5Value] = []
    var members: [JSON5Object.Member] = []
    /// The key whose value is being read (objects only).
    var pendingKey = ""
    var pendingKeyLocation = JSON5.SourceLocation(line: 0, column: 0)

    func finished() -> JSON5Value {
      isObject
        ? JSON5Value(kind: .object(JSON5Object(members: members)), location: location)
        : JSON5Value(kind: .array(elements), location: location)
    }

    var name: String { isObject ? "the object" : "the list" }
  }

  /// Reads one value, with everything nested in it. Trivia before it must already be skipped.
  private mutating func parseValueTree() throws(JSON5SyntaxError) -> JSON5Value {
    var open: [OpenContainer] = []
    while true {
      // Here: at the first character of a value.
      let location = self.location(at: offset)
      var value: JSON5Value
      let byte = peek()
      if byte == ascii("{") || byte == ascii("[") {
        let isObject = byte == ascii("{")
        if open.count >= JSON5.maximumDepth {
          throw JSON5SyntaxError(
            location: location,
            message: "expected at most \(JSON5.maximumDepth) nested lists and objects, found deeper nesting")
        }
        offset += 1
        try skipTrivia()
        let closer = isObject ? ascii("}") : ascii("]")
        if peek() == closer {
          offset += 1
          value = OpenContainer(isObject: isObject, location: location).finished()
        } else {
          var container = OpenContainer(isObject: isObject, location: location)
          if isObject { try readKeyAndColon(into: &container) }
          open.append(container)
          continue
        }
      } else {
        value = try parseScalar(location: location)
      }

      // Attach the finished value to its container; each container that closes becomes the
      // finished value of the one around it.
      attaching: while true {
        guard let top = open.indices.last else { return value }
        if open[top].isObject {
          open[top].members.append(
            JSON5Object.Member(key: open[top].pendingKey, keyLocation: open[top].pendingKeyLocation, value: value))
        } else {
          open[top].elements.append(value)
        }
        try skipTrivia()
        let closer = open[top].isObject ? ascii("}") : ascii("]")
        if peek() == ascii(",") {
          offset += 1
          try skipTrivia()
          if peek() == closer {  // a trailing comma
            offset += 1
            value = open.removeLast().finished()
            continue attaching
          }
          if open[top].isObject { try readKeyAndColon(into: &open[top]) }
          break attaching
        } else if peek() == closer {
          offset += 1
          value = open.removeLast().finished()
          continue attaching
        } else {
          let container = open[top]
          let what = container.isObject ? "a member" : "an element"
          throw error(
            at: offset,
            "expected ',' or '\(Character(Unicode.Scalar(closer)))' after \(what) of \(container.name) that starts at "
              + "\(container.location), found \(describeFound(at: offset))")
        }
      }
    }
  }

  /// Reads `key :` and the trivia after it. Starts at the key, after trivia.
  private mutating func readKeyAndColon(into container: inout OpenContainer) throws(JSON5SyntaxError) {
    let keyStart = offset
    let keyLocation = location(at: offset)
    let key: String
    let byte = peek()
    if byte == ascii("\"") || byte == ascii("'") {
      key = try parseString(location: keyLocation)
    } else if let identifier = try parseIdentifierName() {
      key = identifier
    } else {
      throw error(
        at: keyStart,
        "expected a key (a name or a quoted string) or '}' in the object that starts at \(container.location), "
          + "found \(describeFound(at: keyStart))")
    }
    try skipTrivia()
    guard peek() == ascii(":") else {
      throw error(at: offset, "expected ':' after the key \(quoted(key)), found \(describeFound(at: offset))")
    }
    offset += 1
    try skipTrivia()
    container.pendingKey = key
    container.pendingKeyLocation = keyLocation
  }

  // MARK: - Scalars

  /// Reads a string, number or literal (`null`, `true`, `false`, `Infinity`, `NaN`).
  private mutating func parseScalar(location: JSON5.SourceLocation) throws(JSON5SyntaxError) -> JSON5Value {
    guard let byte = peek() else {
      throw error(at: offset, "expected a value, found the end of the input")
    }
    switch byte {
    case ascii("\""), ascii("'"):
      return JSON5Value(kind: .string(try parseString(location: location)), location: location)
    case ascii("0")...ascii("9"), ascii("."), ascii("+"), ascii("-"):
      return JSON5Value(kind: .number(try parseNumber()), location: location)
    default:
      let end = wordEnd(from: offset)
      let kind: JSON5Value.Kind
      switch word(from: offset, to: end) {
      case "null": kind = .null
      case "true": kind = .bool(true)
      case "false": kind = .bool(false)
      case "Infinity": kind = .number(.infinity)
      case "NaN": kind = .number(.nan)
      case let word where !word.isEmpty && end - offset <= 40:
        // A bare word where a value goes is a literal mistyped ("True"), or else nearly always
        // text that lost its quotes.
        let hint =
          closestMatch(to: word, among: ["true", "false", "null", "Infinity", "NaN"]).map { "did you mean \($0)?" }
          ?? "text needs quotes: \"\(word)\""
        throw error(at: offset, "expected a value, found \(describeFound(at: offset)); \(hint)")
      default: throw error(at: offset, "expected a value, found \(describeFound(at: offset))")
      }
      offset = end
      return JSON5Value(kind: kind, location: location)
    }
  }

  /// Reads a number: decimal or hexadecimal, with optional sign, or a signed `Infinity`/`NaN`.
  private mutating func parseNumber() throws(JSON5SyntaxError) -> Double {
    let start = offset
    var index = offset
    var negative = false
    if peek(index) == ascii("+") || peek(index) == ascii("-") {
      negative = peek(index) == ascii("-")
      index += 1
    }
    let sign: Double = negative ? -1 : 1

    // A signed Infinity or NaN.
    if let byte = peek(index), isASCIIIdentifierStart(byte) {
      let end = wordEnd(from: index)
      let magnitude: Double
      switch word(from: index, to: end) {
      case "Infinity": magnitude = .infinity
      case "NaN": magnitude = .nan
      default:
        throw error(
          at: index, "expected a number after '\(negative ? "-" : "+")', found \(describeFound(at: index))")
      }
      offset = end
      return sign * magnitude
    }

    // Hexadecimal: only integers, no exponent.
    if peek(index) == ascii("0"), peek(index + 1) == ascii("x") || peek(index + 1) == ascii("X") {
      index += 2
      var value: Double = 0
      var digitCount = 0
      while let byte = peek(index), let digit = hexDigitValue(byte) {
        value = value * 16 + Double(digit)
        digitCount += 1
        index += 1
      }
      if digitCount == 0 {
        throw error(at: index, "expected a hexadecimal digit after '0x', found \(describeFound(at: index))")
      }
      try expectNumberEnd(at: index)
      offset = index
      return sign * value
    }

    // Decimal.
    let integerStart = index
    var integer: Double = 0
    while let byte = peek(index), isDigit(byte) {
      integer = integer * 10 + Double(byte &- ascii("0"))
      index += 1
    }
    let integerDigits = index - integerStart
    if integerDigits > 1 && bytes[integerStart] == ascii("0") {
      throw error(
        at: integerStart + 1,
        "expected '.', an exponent or the end of the number after a leading '0' (leading zeros are not allowed), "
          + "found \(describeFound(at: integerStart + 1))")
    }
    var isPlainInteger = true
    var fractionDigits = 0
    if peek(index) == ascii(".") {
      isPlainInteger = false
      index += 1
      while let byte = peek(index), isDigit(byte) {
        fractionDigits += 1
        index += 1
      }
    }
    if integerDigits == 0 && fractionDigits == 0 {
      throw error(at: index, "expected a digit, found \(describeFound(at: index))")
    }
    if peek(index) == ascii("e") || peek(index) == ascii("E") {
      isPlainInteger = false
      index += 1
      if peek(index) == ascii("+") || peek(index) == ascii("-") { index += 1 }
      var exponentDigits = 0
      while let byte = peek(index), isDigit(byte) {
        exponentDigits += 1
        index += 1
      }
      if exponentDigits == 0 {
        throw error(at: index, "expected a digit in the exponent, found \(describeFound(at: index))")
      }
    }
    try expectNumberEnd(at: index)
    offset = index
    // Integers below 2^53 are exact when accumulated; everything else goes through the standard
    // library's correctly rounded conversion.
    if isPlainInteger && integerDigits <= 15 { return sign * integer }
    let text = String(decoding: bytes[start..<index], as: UTF8.self)
    guard let value = Double(text) else {
      // The grammar above only lets through what `Double(_:)` accepts; this is a safety net.
      throw error(at: start, "expected a number, found \(quoted(text))")
    }
    return value
  }

  /// ECMAScript forbids a letter or digit right after a number ("5px", "0x1G", "1.5.2" is caught
  /// later as a missing comma).
  private mutating func expectNumberEnd(at index: Int) throws(JSON5SyntaxError) {
    guard let byte = peek(index) else { return }
    var isBad = isDigit(byte) || isASCIIIdentifierStart(byte) || byte == ascii("\\")
    if byte >= 0x80, let decoded = decodeScalar(at: index) { isBad = isIdentifierStart(decoded.scalar) }
    if isBad {
      throw error(at: index, "expected the end of the number, found \(describeFound(at: index))")
    }
  }

  /// Reads a single- or double-quoted string, resolving escapes. Starts at the opening quote.
  private mutating func parseString(location: JSON5.SourceLocation) throws(JSON5SyntaxError) -> String {
    let quote = bytes[offset]
    offset += 1
    // Most strings have no escape: they are decoded straight from the input. `buffer` is used
    // only from the first escape on.
    var buffer: [UInt8] = []
    var usesBuffer = false
    var chunkStart = offset
    while true {
      guard let byte = peek() else {
        throw JSON5SyntaxError(
          location: location,
          message: "expected the closing \(quoted(String(Unicode.Scalar(quote)))) of this string, "
            + "found the end of the input")
      }
      switch byte {
      case quote:
        let text: String
        if usesBuffer {
          buffer.append(contentsOf: bytes[chunkStart..<offset])
          text = String(decoding: buffer, as: UTF8.self)
        } else {
          text = String(decoding: bytes[chunkStart..<offset], as: UTF8.self)
        }
        offset += 1
        return text
      case ascii("\\"):
        buffer.append(contentsOf: bytes[chunkStart..<offset])
        usesBuffer = true
        try parseEscape(into: &buffer, stringLocation: location)
        chunkStart = offset
      case 0x0A, 0x0D:
        throw error(
          at: offset,
          "expected the closing \(quoted(String(Unicode.Scalar(quote)))) of the string that starts at \(location), "
            + "found a line break (write \\n, or end the line with \\ to continue the string)")
      case 0xE2 where isSeparatorLineEnd(at: offset):
        // U+2028 and U+2029 are allowed raw in JSON5 strings, but they still end a line.
        offset += 3
        startLine(at: offset)
      default:
        offset += 1
      }
    }
  }

  /// Reads one escape sequence (starting at the backslash) and appends its UTF-8 to `buffer`.
  private mutating func parseEscape(into buffer: inout [UInt8], stringLocation: JSON5.SourceLocation)
    throws(JSON5SyntaxError)
  {
    let backslash = offset
    offset += 1
    guard let byte = peek() else {
      throw JSON5SyntaxError(
        location: stringLocation,
        message: "expected the closing quote of this string, found the end of the input")
    }
    switch byte {
    case ascii("b"): append(0x08, to: &buffer)
    case ascii("f"): append(0x0C, to: &buffer)
    case ascii("n"): append(0x0A, to: &buffer)
    case ascii("r"): append(0x0D, to: &buffer)
    case ascii("t"): append(0x09, to: &buffer)
    case ascii("v"): append(0x0B, to: &buffer)
    case ascii("0"):
      // "\0" followed by a digit would be a legacy octal escape, which ECMAScript 5 forbids.
      if let next = peek(offset + 1), isDigit(next) {
        throw error(
          at: backslash,
          "expected a character after '\\0' that is not a digit (octal escapes are not allowed), "
            + "found \(describeFound(at: offset + 1))")
      }
      append(0x00, to: &buffer)
    case ascii("1")...ascii("9"):
      throw error(
        at: backslash,
        "expected an escape such as \\n, \\t, \\xHH or \\uHHHH, found '\\\(Character(Unicode.Scalar(byte)))' "
          + "(digits cannot be escaped)")
    case ascii("x"):
      guard let high = peek(offset + 1).flatMap(hexDigitValue), let low = peek(offset + 2).flatMap(hexDigitValue)
      else {
        let bad = peek(offset + 1).flatMap(hexDigitValue) == nil ? offset + 1 : offset + 2
        throw error(at: backslash, "expected two hexadecimal digits after '\\x', found \(describeFound(at: bad))")
      }
      offset += 2
      appendScalar(UInt32(high * 16 + low), to: &buffer)
    case ascii("u"):
      offset -= 1  // parseUnicodeEscape starts at the backslash
      let scalar = try parseUnicodeEscape(in: "a string")
      appendScalar(scalar.value, to: &buffer)
      return
    case 0x0A:
      // A line continuation: the backslash and the line break are dropped.
      offset += 1
      startLine(at: offset)
      return
    case 0x0D:
      offset += 1
      if peek() == 0x0A { offset += 1 }
      startLine(at: offset)
      return
    default:
      if isSeparatorLineEnd(at: offset) {
        offset += 3
        startLine(at: offset)
        return
      }
      // Any other character stands for itself: \' \" \\ and also \q (a "non-escape character").
      let length = byte < 0x80 ? 1 : (decodeScalar(at: offset)?.length ?? 1)
      buffer.append(contentsOf: bytes[offset..<min(offset + length, bytes.count)])
      offset += length
      return
    }
    offset += 1
  }

  /// Reads `\uHHHH`, or a pair of them forming a surrogate pair. Starts at the backslash.
  private mutating func parseUnicodeEscape(in context: String) throws(JSON5SyntaxError) -> Unicode.Scalar {
    let start = offset
    let first = try readUnicodeEscapeUnit(in: context)
    if (0xDC00...0xDFFF).contains(first) {
      throw error(
        at: start,
        "expected a high surrogate (\\uD800 to \\uDBFF) before the low surrogate \(unitName(first)) in \(context), "
          + "found none")
    }
    if (0xD800...0xDBFF).contains(first) {
      let secondStart = offset
      var second: UInt32?
      if peek() == ascii("\\") && peek(offset + 1) == ascii("u") { second = try readUnicodeEscapeUnit(in: context) }
      guard let second, (0xDC00...0xDFFF).contains(second) else {
        throw error(
          at: start,
          "expected a low surrogate (\\uDC00 to \\uDFFF) after the high surrogate \(unitName(first)) in \(context), "
            + "found \(second.map(unitName) ?? describeFound(at: secondStart))")
      }
      let value = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
      return Unicode.Scalar(value) ?? "\u{FFFD}"
    }
    return Unicode.Scalar(first) ?? "\u{FFFD}"
  }

  /// Reads one `\uHHHH` starting at the backslash and returns the UTF-16 code unit.
  private mutating func readUnicodeEscapeUnit(in context: String) throws(JSON5SyntaxError) -> UInt32 {
    let start = offset
    guard peek() == ascii("\\"), peek(offset + 1) == ascii("u") else {
      throw error(at: start, "expected 'u' after '\\' in \(context), found \(describeFound(at: start + 1))")
    }
    var unit: UInt32 = 0
    for index in (offset + 2)..<(offset + 6) {
      guard let digit = peek(index).flatMap(hexDigitValue) else {
        throw error(at: start, "expected four hexadecimal digits after '\\u', found \(describeFound(at: index))")
      }
      unit = unit * 16 + UInt32(digit)
    }
    offset += 6
    return unit
  }

  /// Reads an unquoted key (an ECMAScript IdentifierName), or returns nil if none starts here.
  private mutating func parseIdentifierName() throws(JSON5SyntaxError) -> String? {
    let start = offset
    // Fast path: plain ASCII names need no decoding.
    var index = offset
    while let byte = peek(index), isASCIIIdentifierPart(byte) { index += 1 }
    if index > start, !isASCIIIdentifierStart(bytes[start]) { return nil }  // starts with a digit
    let needsSlowPath = peek(index).map { $0 >= 0x80 || $0 == ascii("\\") } ?? false
    if !needsSlowPath {
      guard index > start else { return nil }
      offset = index
      return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    var scalars = String.UnicodeScalarView()
    while let byte = peek() {
      let scalar: Unicode.Scalar
      let escapeStart = offset
      var length = 0
      if byte == ascii("\\") {
        scalar = try parseUnicodeEscape(in: "a key")
        let valid = scalars.isEmpty ? isIdentifierStart(scalar) : isIdentifierPart(scalar)
        if !valid {
          throw error(
            at: escapeStart,
            "expected an escape of a letter, digit, '$' or '_' in the key, found an escape of "
              + "U+\(String(scalar.value, radix: 16, uppercase: true))")
        }
      } else {
        guard let decoded = decodeScalar(at: offset) else { break }
        let valid = scalars.isEmpty ? isIdentifierStart(decoded.scalar) : isIdentifierPart(decoded.scalar)
        if !valid { break }
        scalar = decoded.scalar
        length = decoded.length
      }
      scalars.append(scalar)
      offset += length
    }
    return scalars.isEmpty ? nil : String(scalars)
  }

  // MARK: - Whitespace, comments and lines

  /// Skips whitespace and comments, keeping track of lines.
  private mutating func skipTrivia() throws(JSON5SyntaxError) {
    while let byte = peek() {
      switch byte {
      case 0x20, 0x09, 0x0B, 0x0C:
        offset += 1
      case 0x0A:
        offset += 1
        startLine(at: offset)
      case 0x0D:
        offset += 1
        if peek() == 0x0A { offset += 1 }
        startLine(at: offset)
      case ascii("/"):
        try skipComment()
      case 0x80...:
        guard let decoded = decodeScalar(at: offset), isWhitespace(decoded.scalar) else { return }
        offset += decoded.length
        if decoded.scalar == "\u{2028}" || decoded.scalar == "\u{2029}" { startLine(at: offset) }
      default:
        return
      }
    }
  }

  /// Skips a `//` or `/* */` comment starting at the slash.
  private mutating func skipComment() throws(JSON5SyntaxError) {
    let start = offset
    let next = peek(offset + 1)
    if next == ascii("/") {
      // The line break that ends it is left for `skipTrivia`, which counts the line.
      offset += 2
      while let byte = peek(), byte != 0x0A, byte != 0x0D, !isSeparatorLineEnd(at: offset) { offset += 1 }
    } else if next == ascii("*") {
      let location = self.location(at: start)
      offset += 2
      while true {
        guard let byte = peek() else {
          throw JSON5SyntaxError(
            location: location, message: "expected '*/' to close this comment, found the end of the input")
        }
        if byte == ascii("*") && peek(offset + 1) == ascii("/") {
          offset += 2
          return
        } else if byte == 0x0A {
          offset += 1
          startLine(at: offset)
        } else if byte == 0x0D {
          offset += 1
          if peek() == 0x0A { offset += 1 }
          startLine(at: offset)
        } else if isSeparatorLineEnd(at: offset) {
          offset += 3
          startLine(at: offset)
        } else {
          offset += 1
        }
      }
    } else {
      throw error(
        at: start, "expected a comment ('//' or '/*') after '/', found \(describeFound(at: offset + 1))")
    }
  }

  /// Records that a new line begins at `position`.
  private mutating func startLine(at position: Int, counting: Bool = true) {
    if counting { line += 1 }
    lineStart = position
    columnCacheOffset = position
    columnCacheColumn = 1
  }

  /// The line and column of a byte offset on the current line (offsets before the current line
  /// are never asked for: locations are taken before the parser moves past a line break).
  private mutating func location(at position: Int) -> JSON5.SourceLocation {
    let target = min(max(position, lineStart), bytes.count)
    if target < columnCacheOffset {
      columnCacheOffset = lineStart
      columnCacheColumn = 1
    }
    var column = columnCacheColumn
    var index = columnCacheOffset
    while index < target {
      // Count scalars: every byte except UTF-8 continuation bytes starts one.
      if bytes[index] & 0xC0 != 0x80 { column += 1 }
      index += 1
    }
    columnCacheOffset = target
    columnCacheColumn = column
    return JSON5.SourceLocation(line: line, column: column)
  }

  private mutating func error(at position: Int, _ message: String) -> JSON5SyntaxError {
    JSON5SyntaxError(location: location(at: position), message: message)
  }

  // MARK: - Describing what was found

  /// Names what is at `position` for "found ..." in messages: a word ('tru'), a character ('"'),
  /// "a line break" or "the end of the input".
  private func describeFound(at position: Int) -> String {
    guard let byte = peek(position) else { return "the end of the input" }
    if byte == 0x0A || byte == 0x0D || isSeparatorLineEnd(at: position) { return "a line break" }
    let end = wordEnd(from: position)
    if end > position {
      // Long words are cut so that a minified file does not end up in the message.
      let word = String(decoding: bytes[position..<min(end, position + 40)], as: UTF8.self)
      return quoted(end - position > 40 ? word + "…" : word)
    }
    guard let scalar = decodeScalar(at: position)?.scalar else { return "an invalid byte" }
    // Invisible characters are named by code point, or the message would show nothing.
    switch scalar.properties.generalCategory {
    case .control, .format, .unassigned, .privateUse, .surrogate, .spaceSeparator, .lineSeparator,
      .paragraphSeparator:
      return "the character U+\(String(scalar.value, radix: 16, uppercase: true))"
    default:
      return quoted(String(scalar))
    }
  }

  /// The end of the run of letters, digits, '$' and '_' starting at `position`.
  private func wordEnd(from position: Int) -> Int {
    var index = position
    while let byte = peek(index) {
      if isASCIIIdentifierPart(byte) {
        index += 1
      } else if byte >= 0x80, let decoded = decodeScalar(at: index), isIdentifierPart(decoded.scalar) {
        index += decoded.length
      } else {
        break
      }
    }
    return index
  }

  private func noun(of value: JSON5Value) -> String {
    switch value.kind {
    case .null: "null"
    case .bool: "boolean"
    case .number: "number"
    case .string: "string"
    case .array: "list"
    case .object: "object"
    }
  }

  private func quoted(_ text: String) -> String {
    text.contains("'") && !text.contains("\"") ? "\"\(text)\"" : "'\(text)'"
  }

  private func unitName(_ unit: UInt32) -> String {
    let hex = String(unit, radix: 16, uppercase: true)
    return "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
  }

  // MARK: - Bytes and scalars

  private func peek() -> UInt8? { offset < bytes.count ? bytes[offset] : nil }

  private func peek(_ position: Int) -> UInt8? {
    position >= 0 && position < bytes.count ? bytes[position] : nil
  }

  /// Whether U+2028 or U+2029 (E2 80 A8 / E2 80 A9) starts at `position`.
  private func isSeparatorLineEnd(at position: Int) -> Bool {
    peek(position) == 0xE2 && peek(position + 1) == 0x80
      && (peek(position + 2) == 0xA8 || peek(position + 2) == 0xA9)
  }

  /// Decodes the UTF-8 scalar at `position`; nil at the end or on a malformed sequence (which a
  /// Swift `String` never contains, but the parser does not rely on that).
  private func decodeScalar(at position: Int) -> (scalar: Unicode.Scalar, length: Int)? {
    guard let first = peek(position) else { return nil }
    if first < 0x80 { return (Unicode.Scalar(first), 1) }
    let length: Int
    var value: UInt32
    switch first {
    case 0xC0...0xDF:
      length = 2
      value = UInt32(first & 0x1F)
    case 0xE0...0xEF:
      length = 3
      value = UInt32(first & 0x0F)
    case 0xF0...0xF7:
      length = 4
      value = UInt32(first & 0x07)
    default: return nil
    }
    for index in (position + 1)..<(position + length) {
      guard let byte = peek(index), byte & 0xC0 == 0x80 else { return nil }
      value = value << 6 | UInt32(byte & 0x3F)
    }
    guard let scalar = Unicode.Scalar(value) else { return nil }
    return (scalar, length)
  }

  /// The short word between two offsets, or "" if it is too long to be a literal; literals are
  /// compared as small strings, which Swift stores without allocating.
  private func word(from start: Int, to end: Int) -> String {
    end - start <= 8 ? String(decoding: bytes[start..<end], as: UTF8.self) : ""
  }

  private func append(_ byte: UInt8, to buffer: inout [UInt8]) {
    buffer.append(byte)
  }

  private func appendScalar(_ value: UInt32, to buffer: inout [UInt8]) {
    let scalar = Unicode.Scalar(value) ?? "\u{FFFD}"
    UTF8.encode(scalar) { buffer.append($0) }
  }
}

// MARK: - Character classes

@inline(__always) private func ascii(_ character: Unicode.Scalar) -> UInt8 { UInt8(character.value) }

@inline(__always) private func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

private func hexDigitValue(_ byte: UInt8) -> Int? {
  switch byte {
  case 0x30...0x39: Int(byte - 0x30)
  case 0x41...0x46: Int(byte - 0x41 + 10)
  case 0x61...0x66: Int(byte - 0x61 + 10)
  default: nil
  }
}

private func isASCIIIdentifierStart(_ byte: UInt8) -> Bool {
  (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x24 || byte == 0x5F
}

private func isASCIIIdentifierPart(_ byte: UInt8) -> Bool { isASCIIIdentifierStart(byte) || isDigit(byte) }

/// ECMAScript 5.1 IdentifierStart: a Unicode letter (Lu, Ll, Lt, Lm, Lo, Nl), '$' or '_'.
private func isIdentifierStart(_ scalar: Unicode.Scalar) -> Bool {
  if scalar.isASCII { return isASCIIIdentifierStart(UInt8(scalar.value)) }
  switch scalar.properties.generalCategory {
  case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter, .letterNumber: return true
  default: return false
  }
}

/// ECMAScript 5.1 IdentifierPart: a start character, a combining mark (Mn, Mc), a digit (Nd), a
/// connector (Pc), ZWNJ or ZWJ.
private func isIdentifierPart(_ scalar: Unicode.Scalar) -> Bool {
  if scalar.isASCII { return isASCIIIdentifierPart(UInt8(scalar.value)) }
  if isIdentifierStart(scalar) || scalar == "\u{200C}" || scalar == "\u{200D}" { return true }
  switch scalar.properties.generalCategory {
  case .nonspacingMark, .spacingMark, .decimalNumber, .connectorPunctuation: return true
  default: return false
  }
}

/// JSON5 whitespace beyond ASCII: no-break space, the line and paragraph separators, the byte order
/// mark and every other space separator (Zs).
private func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
  switch scalar {
  case "\u{20}", "\u{09}", "\u{0A}", "\u{0B}", "\u{0C}", "\u{0D}", "\u{A0}", "\u{2028}", "\u{2029}", "\u{FEFF}":
    return true
  default:
    return scalar.properties.generalCategory == .spaceSeparator
  }
}
