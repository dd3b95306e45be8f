import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// Renders a value compactly (`{a:1,b:[true,null,"x"]}`) so a whole parse can be compared with
/// one exact string.
private func render(_ value: JSON5Value) -> String {
  switch value.kind {
  case .null: return "null"
  case .bool(let flag): return flag ? "true" : "false"
  case .number(let number):
    if number.isNaN { return "NaN" }
    if number.isInfinite { return number < 0 ? "-Infinity" : "Infinity" }
    if number == number.rounded() && abs(number) < 1e15 { return String(Int(number)) }
    return "\(number)"
  case .string(let text): return "\"\(text)\""
  case .array(let elements): return "[" + elements.map(render).joined(separator: ",") + "]"
  case .object(let object):
    return "{" + object.members.map { "\($0.key):\(render($0.value))" }.joined(separator: ",") + "}"
  }
}

/// Parses text that must be valid and renders it.
private func parsed(_ text: String) throws -> String {
  render(try JSON5.parse(text))
}

/// The error for text that must be rejected, or nil if it was accepted.
private func syntaxError(_ text: String) -> JSON5SyntaxError? {
  do {
    _ = try JSON5.parse(text)
    return nil
  } catch {
    return error
  }
}

private func at(_ line: Int, _ column: Int) -> JSON5.SourceLocation {
  JSON5.SourceLocation(line: line, column: column)
}

@Suite("JSON5 parser: the whole specification, with exact locations and messages")
struct JSON5ParserTests {
  // MARK: - Accepted syntax

  @Test("Plain JSON parses to the same values")
  func plainJSON() throws {
    #expect(
      try parsed(#"{"a": [1, 2.5, "x", true, false, null], "b": {}, "c": []}"#)
        == #"{a:[1,2.5,"x",true,false,null],b:{},c:[]}"#)
    #expect(try parsed("42") == "42")
    #expect(try parsed(#""top""#) == #""top""#)
    #expect(try parsed("null") == "null")
  }

  @Test("Line and block comments are allowed anywhere whitespace is")
  func comments() throws {
    let text = """
      // leading
      /* block */ { // after brace
        a /* before colon */ : /* before value */ 1 /* before comma */, // line
        b: [ /* empty */ 2 /** stars **/ ], /*/ still a comment */
      } // trailing, no newline at end
      """
    #expect(try parsed(text) == "{a:1,b:[2]}")
    #expect(try parsed("1//") == "1")
    #expect(try parsed("/**/1/**/") == "1")
  }

  @Test("Trailing commas are allowed in objects and lists, once")
  func trailingCommas() throws {
    #expect(try parsed("[1, 2,]") == "[1,2]")
    #expect(try parsed("{a: 1, b: [true,],}") == "{a:1,b:[true]}")
    #expect(try parsed("[\n  1,\n  // comment\n]") == "[1]")
    #expect(syntaxError("[,]")?.description == "1:2: expected a value, found ','")
    #expect(syntaxError("[1,,]")?.description == "1:4: expected a value, found ','")
    #expect(
      syntaxError("{,}")?.description
        == "1:2: expected a key (a name or a quoted string) or '}' in the object that starts at 1:1, found ','")
  }

  @Test("Unquoted keys are ECMAScript identifier names, Unicode letters and \\u escapes included")
  func unquotedKeys() throws {
    let value = try JSON5.parse(
      #"{ $a: 1, _b: 2, c3: 3, café: 4, ünï_ö: 5, \u0061b: 6, a\u0062c: 7, null: 8, true: 9, 日本: 10, 𝒜x: 11 }"#)
    #expect(value.objectValue?.keys == ["$a", "_b", "c3", "café", "ünï_ö", "ab", "abc", "null", "true", "日本", "𝒜x"])
    #expect(value.objectValue?["日本"]?.numberValue == 10)
    // Combining marks and connector punctuation may follow the first character.
    #expect(try JSON5.parse("{ e\u{301}: 1, a‿b: 2 }").objectValue?.keys == ["e\u{301}", "a‿b"])
    #expect(
      syntaxError("{ 1a: 2 }")?.description
        == "1:3: expected a key (a name or a quoted string) or '}' in the object that starts at 1:1, found '1a'")
    #expect(syntaxError("{ a-b: 1 }")?.description == "1:4: expected ':' after the key 'a', found '-'")
    #expect(
      syntaxError(#"{ \u0020a: 1 }"#)?.description
        == "1:3: expected an escape of a letter, digit, '$' or '_' in the key, found an escape of U+20")
    #expect(
      syntaxError(#"{ \x41: 1 }"#)?.description == #"1:3: expected 'u' after '\' in a key, found 'x41'"#)
  }

  @Test("Strings: both quotes, every escape, surrogate pairs, line continuations, raw U+2028/2029")
  func strings() throws {
    #expect(try JSON5.parse(#"'single "double" inside'"#).stringValue == #"single "double" inside"#)
    #expect(try JSON5.parse(#""double 'single' inside""#).stringValue == "double 'single' inside")
    #expect(
      try JSON5.parse(#"'\' \" \\ \b \f \n \r \t \v \0 \/ \q'"#).stringValue
        == "' \" \\ \u{8} \u{C} \n \r \t \u{B} \u{0} / q")
    #expect(try JSON5.parse(#""\x41\x7e\xE9""#).stringValue == "A~é")
    #expect(try JSON5.parse(#""\u00e9\u00C9\u4E2D""#).stringValue == "éÉ中")
    #expect(try JSON5.parse(#""\uD83D\uDE00!""#).stringValue == "😀!")
    #expect(try JSON5.parse(#""\0a""#).stringValue == "\u{0}a")
    // A backslash before any line terminator joins the lines.
    #expect(
      try JSON5.parse("'one \\\ntwo \\\r\nthree \\\rfour \\\u{2028}five \\\u{2029}six'").stringValue
        == "one two three four five six")
    #expect(try JSON5.parse("'a\u{2028}b\u{2029}c'").stringValue == "a\u{2028}b\u{2029}c")
    #expect(try JSON5.parse("'tab\there é😀'").stringValue == "tab\there é😀")
    #expect(try JSON5.parse("''").stringValue == "")
  }

  @Test("Numbers: hexadecimal, leading and trailing points, signs, exponents, Infinity and NaN")
  func numbers() throws {
    let cases: [(String, Double)] = [
      ("0", 0), ("7", 7), ("-7", -7), ("+7", 7), ("0x1F", 31), ("0X1f", 31), ("-0x10", -16), ("+0xff", 255),
      (".5", 0.5), ("5.", 5), ("-.5", -0.5), ("+5.", 5), ("0.1", 0.1), ("1.5e3", 1500), ("1E-2", 0.01),
      ("-1.5e+3", -1500), ("2e0", 2), (".5e1", 5), ("5.e1", 50), ("123456789012345", 123_456_789_012_345),
      ("123456789012345678901234567890", 1.2345678901234568e29), ("0xFFFFFFFFFFFFFFFFFF", 4.722366482869645e21),
      ("Infinity", .infinity), ("-Infinity", -.infinity), ("+Infinity", .infinity),
    ]
    for (text, expected) in cases {
      #expect(try JSON5.parse(text).numberValue == expected, "\(text)")
    }
    #expect(try JSON5.parse("NaN").numberValue?.isNaN == true)
    #expect(try JSON5.parse("-NaN").numberValue?.isNaN == true)
    #expect(try JSON5.parse("+NaN").numberValue?.isNaN == true)
    #expect(try JSON5.parse("-0").numberValue?.sign == .minus)
    #expect(try parsed("[1,-2,0x3,.4,Infinity]") == "[1,-2,3,0.4,Infinity]")
  }

  @Test("Number rejections: leading zeros, missing digits, letters glued to a number")
  func numberRejections() {
    let cases: [(String, String)] = [
      (
        "012",
        "1:2: expected '.', an exponent or the end of the number after a leading '0' "
          + "(leading zeros are not allowed), found '12'"
      ),
      (
        "-00",
        "1:3: expected '.', an exponent or the end of the number after a leading '0' "
          + "(leading zeros are not allowed), found '0'"
      ),
      ("0x", "1:3: expected a hexadecimal digit after '0x', found the end of the input"),
      ("0xG", "1:3: expected a hexadecimal digit after '0x', found 'G'"),
      ("0x1G", "1:4: expected the end of the number, found 'G'"),
      ("1e", "1:3: expected a digit in the exponent, found the end of the input"),
      ("1e+", "1:4: expected a digit in the exponent, found the end of the input"),
      (".", "1:2: expected a digit, found the end of the input"),
      (".e1", "1:2: expected a digit, found 'e1'"),
      ("-", "1:2: expected a digit, found the end of the input"),
      ("+ 1", "1:2: expected a digit, found the character U+20"),
      ("5px", "1:2: expected the end of the number, found 'px'"),
      ("12é", "1:3: expected the end of the number, found 'é'"),
      ("-Infinit", "1:2: expected a number after '-', found 'Infinit'"),
      ("+tru", "1:2: expected a number after '+', found 'tru'"),
      ("1.2.3", "1:4: expected the end of the input after the number that starts at 1:1, found '.'"),
    ]
    for (text, expected) in cases {
      #expect(syntaxError(text)?.description == expected, "\(text)")
    }
  }

  @Test("Literals: null, true, false; anything else unquoted is not a value")
  func literals() throws {
    #expect(try parsed("[null, true, false]") == "[null,true,false]")
    #expect(syntaxError("tru")?.description == "1:1: expected a value, found 'tru'; did you mean true?")
    #expect(syntaxError("{ loop: True }")?.description == "1:9: expected a value, found 'True'; did you mean true?")
    #expect(syntaxError("[nulls]")?.description == "1:2: expected a value, found 'nulls'; did you mean null?")
    // A bare word is text without its quotes.
    #expect(
      syntaxError("{ start: hall }")?.description == "1:10: expected a value, found 'hall'; text needs quotes: \"hall\""
    )
    #expect(syntaxError("[undefined]")?.description == "1:2: expected a value, found 'undefined'")
    #expect(syntaxError("[é]")?.description == "1:2: expected a value, found 'é'; text needs quotes: \"é\"")
    #expect(syntaxError("}")?.description == "1:1: expected a value, found '}'")
  }

  @Test("Whitespace includes the byte order mark, no-break space, line separators and every Zs space")
  func unicodeWhitespace() throws {
    let text = "\u{FEFF}\u{A0}[\u{3000}1\u{2000},\u{B}2\u{C}\u{1680},\u{202F}3\u{205F}\u{2028}\u{2029}]\u{FEFF}"
    #expect(try parsed(text) == "[1,2,3]")
    // Zero-width space is a format character (Cf), not whitespace.
    #expect(syntaxError("[1,\u{200B}2]")?.description == "1:4: expected a value, found the character U+200B")
  }

  // MARK: - Locations

  @Test("Values and keys have exact locations across CRLF, CR, U+2028, tabs, é, emoji and comments")
  func locations() throws {
    let text =
      "{\r\n\tname: 'é😀x',\r\n  \"gain\": -3, /* multi\nline */ tags: [1,\r 2],\u{2028}loop: true\n}"
    let value = try JSON5.parse(text)
    #expect(value.location == at(1, 1))
    let object = try #require(value.objectValue)
    let members = object.members
    #expect(members.map(\.key) == ["name", "gain", "tags", "loop"])
    #expect(members.map(\.keyLocation) == [at(2, 2), at(3, 3), at(4, 9), at(6, 1)])
    #expect(members.map(\.value.location) == [at(2, 8), at(3, 11), at(4, 15), at(6, 7)])
    let tags = try #require(object["tags"]?.arrayValue)
    #expect(tags.map(\.location) == [at(4, 16), at(5, 2)])
    #expect(object.member(forKey: "loop")?.keyLocation == at(6, 1))
  }

  @Test("Columns count Unicode scalars, not bytes, UTF-16 units or grapheme clusters")
  func columnsCountScalars() throws {
    let object = try #require(try JSON5.parse(#"{ "😀😀": 1, é: [ 'a' ] }"#).objectValue)
    #expect(object.members.map(\.keyLocation) == [at(1, 3), at(1, 12)])
    #expect(object.members.map(\.value.location) == [at(1, 9), at(1, 15)])
    #expect(object["é"]?.arrayValue?.first?.location == at(1, 17))
    // A family emoji is one grapheme but five scalars (three people and two zero-width joiners).
    let list = try #require(try JSON5.parse("[\"👩‍👩‍👧\", 1]").arrayValue)
    #expect(list.map(\.location) == [at(1, 2), at(1, 11)])
    // A byte order mark at the start of the file is invisible and takes no column.
    #expect(try JSON5.parse("\u{FEFF}[1]").arrayValue?.first?.location == at(1, 2))
  }

  @Test("Line continuations and raw U+2028 inside strings start new lines")
  func linesInsideStrings() throws {
    let list = try #require(try JSON5.parse("['a\\\r\nb', 1, 'c\u{2029}d', 2]").arrayValue)
    #expect(list.map(\.location) == [at(1, 2), at(2, 5), at(2, 8), at(3, 5)])
  }

  @Test("Duplicate keys are kept in order; the subscript returns the first")
  func duplicateKeys() throws {
    let object = try #require(try JSON5.parse("{a: 1, b: 2, a: 3}").objectValue)
    #expect(object.keys == ["a", "b", "a"])
    #expect(object["a"]?.numberValue == 1)
    #expect(object.members.last?.value.numberValue == 3)
    #expect(object.members.map(\.keyLocation) == [at(1, 2), at(1, 8), at(1, 14)])
    #expect(object["missing"] == nil)
  }

  @Test("Type descriptions and conveniences")
  func typeDescriptions() throws {
    let list = try #require(try JSON5.parse("[null, true, 1, 's', [], {}]").arrayValue)
    #expect(list.map(\.typeDescription) == ["null", "a boolean", "a number", "a string", "a list", "an object"])
    #expect(list[0].isNull)
    #expect(list[1].boolValue == true && list[1].numberValue == nil)
    #expect(list[2].numberValue == 1 && list[2].stringValue == nil)
    #expect(list[3].stringValue == "s" && list[3].boolValue == nil)
    #expect(list[4].arrayValue?.count == 0 && list[4].objectValue == nil)
    #expect(list[5].objectValue?.members.count == 0 && list[5].arrayValue == nil)
  }

  @Test("SourceLocation and JSON5SyntaxError descriptions and ordering")
  func descriptions() {
    #expect(at(3, 5).description == "3:5")
    #expect(at(2, 9) < at(3, 1))
    #expect(at(3, 1) < at(3, 2))
    #expect(!(at(3, 2) < at(3, 2)))
    #expect(JSON5SyntaxError(location: at(4, 7), message: "oops").description == "4:7: oops")
  }

  // MARK: - Rejections

  @Test("A missing comma names the container and where it starts")
  func missingComma() {
    let text = "{\n  cues: [\n    { name: \"a\" \"b\": 1 }\n  ]\n}"
    #expect(
      syntaxError(text)
        == JSON5SyntaxError(
          location: at(3, 17),
          message: #"expected ',' or '}' after a member of the object that starts at 3:5, found '"'"#))
    #expect(
      syntaxError("/* é\n😀 */ [1 2]")?.description
        == "2:9: expected ',' or ']' after an element of the list that starts at 2:6, found '2'")
    #expect(
      syntaxError("[1\n")?.description
        == "2:1: expected ',' or ']' after an element of the list that starts at 1:1, found the end of the input")
  }

  @Test("A missing colon, and a key that is not a key")
  func missingColon() {
    #expect(syntaxError("{\r\n\tgain 1}")?.description == "2:7: expected ':' after the key 'gain', found '1'")
    #expect(syntaxError("{ 'it''s': 1}")?.description == #"1:7: expected ':' after the key 'it', found "'""#)
    #expect(syntaxError("{ \"a\" = 1 }")?.description == "1:7: expected ':' after the key 'a', found '='")
    #expect(syntaxError("{ a: }")?.description == "1:6: expected a value, found '}'")
    #expect(
      syntaxError("{ [1]: 2 }")?.description
        == "1:3: expected a key (a name or a quoted string) or '}' in the object that starts at 1:1, found '['")
  }

  @Test("Unterminated strings and comments point at where they start")
  func unterminated() {
    #expect(
      syntaxError("{a: \"é😀")?.description
        == #"1:5: expected the closing '"' of this string, found the end of the input"#)
    #expect(
      syntaxError("['abc\\")?.description
        == "1:2: expected the closing quote of this string, found the end of the input")
    #expect(
      syntaxError("[1, /* x\n")?.description == "1:5: expected '*/' to close this comment, found the end of the input")
    #expect(
      syntaxError("[1, /* x *")?.description == "1:5: expected '*/' to close this comment, found the end of the input")
  }

  @Test("A raw line break inside a string is rejected where it is")
  func rawLineBreakInString() {
    let expected =
      #"2:6: expected the closing "'" of the string that starts at 2:2, found a line break "#
      + #"(write \n, or end the line with \ to continue the string)"#
    #expect(syntaxError("[1,\r\n\t'abc\nd']")?.description == expected)
    #expect(syntaxError("\"a\rb\"")?.location == at(1, 3))
  }

  @Test("Bad escapes: escaped digits, octal \\0, short \\x and \\u, lone surrogates")
  func badEscapes() {
    let cases: [(String, String)] = [
      (#"'a\1'"#, #"1:3: expected an escape such as \n, \t, \xHH or \uHHHH, found '\1' (digits cannot be escaped)"#),
      (
        #"'\01'"#,
        "1:2: expected a character after '\\0' that is not a digit (octal escapes are not allowed), "
          + "found '1'"
      ),
      (#"'\x4G'"#, #"1:2: expected two hexadecimal digits after '\x', found 'G'"#),
      (#"'\x'"#, #"1:2: expected two hexadecimal digits after '\x', found "'""#),
      (#"'\u12G4'"#, #"1:2: expected four hexadecimal digits after '\u', found 'G4'"#),
      (#"'\u12'"#, #"1:2: expected four hexadecimal digits after '\u', found "'""#),
      (
        #"'\uD83D'"#,
        #"1:2: expected a low surrogate (\uDC00 to \uDFFF) after the high surrogate \uD83D in a string, found "'""#
      ),
      (
        #"'\uD83D\u0041'"#,
        #"1:2: expected a low surrogate (\uDC00 to \uDFFF) after the high surrogate \uD83D in a string, found \u0041"#
      ),
      (
        #"'\uDE00'"#,
        #"1:2: expected a high surrogate (\uD800 to \uDBFF) before the low surrogate \uDE00 in a string, found none"#
      ),
    ]
    for (text, expected) in cases {
      #expect(syntaxError(text)?.description == expected, "\(text)")
    }
  }

  @Test("Only whitespace and comments may follow the top-level value")
  func trailingContent() {
    #expect(
      syntaxError("{a: 1} // fine\n}")?.description
        == "2:1: expected the end of the input after the object that starts at 1:1, found '}'")
    #expect(
      syntaxError("1 2")?.description
        == "1:3: expected the end of the input after the number that starts at 1:1, found '2'")
    #expect(syntaxError("")?.description == "1:1: expected a value, found the end of the input")
    #expect(syntaxError(" // only a comment\n")?.description == "2:1: expected a value, found the end of the input")
    #expect(syntaxError("[1] /x")?.description == "1:5: expected a comment ('//' or '/*') after '/', found 'x'")
    #expect(
      syntaxError("[1] /")?.description
        == "1:5: expected a comment ('//' or '/*') after '/', found the end of the input")
  }

  // MARK: - Depth and robustness

  @Test("Nesting: 512 levels parse, 513 are rejected, 100 000 '[' fail cleanly without recursion")
  func nesting() throws {
    var value = try JSON5.parse(String(repeating: "[", count: 512) + String(repeating: "]", count: 512))
    var depth = 1
    while let inner = value.arrayValue?.first {
      value = inner
      depth += 1
    }
    #expect(depth == 512)
    let tooDeep = "expected at most 512 nested lists and objects, found deeper nesting"
    #expect(
      syntaxError(String(repeating: "[", count: 513) + String(repeating: "]", count: 513))
        == JSON5SyntaxError(location: at(1, 513), message: tooDeep))
    #expect(
      syntaxError(String(repeating: "[", count: 100_000)) == JSON5SyntaxError(location: at(1, 513), message: tooDeep))
    let objects = String(repeating: "{a:", count: 600) + "1" + String(repeating: "}", count: 600)
    #expect(syntaxError(objects) == JSON5SyntaxError(location: at(1, 1537), message: tooDeep))
    #expect(syntaxError(String(repeating: "[", count: 100)) != nil)
  }

  @Test("Never traps: random bytes, every truncation and random mutations of a valid document")
  func neverTraps() throws {
    let document = """
      \u{FEFF}// cue file
      { name: 'Boss é😀', "gain": -3.5e-1, fade: 0x1F, tags: ['a', "b\\n\\u00e9\\uD83D\\uDE00", .5, +Infinity, NaN],
        /* block */ loop: { start: 5., end: null, on: true, off: false, }, 'x\\
      y': [[], {}, [{}]], $k\\u0061y: '\\x41\\0\\v', }
      """
    #expect(try JSON5.parse(document).objectValue?.keys == ["name", "gain", "fade", "tags", "loop", "xy", "$kay"])
    let bytes = Array(document.utf8)
    for length in 0...bytes.count {
      _ = try? JSON5.parse(String(decoding: bytes[..<length], as: UTF8.self))
    }
    var generator = JSON5FuzzGenerator(seed: 0x5EED)
    let interesting = Array("{}[]:,'\"\\/*\n\r 0x1e.+-uNIaf\u{2028}é😀".utf8) + [0, 0xFF, 0xC3, 0xE2, 0x80]
    for _ in 0..<3000 {
      var mutated = bytes
      for _ in 0..<(1 + generator.next(below: 4)) {
        mutated[generator.next(below: mutated.count)] = interesting[generator.next(below: interesting.count)]
      }
      _ = try? JSON5.parse(String(decoding: mutated, as: UTF8.self))
      let random = (0..<generator.next(below: 48)).map { _ in
        generator.next(below: 2) == 0
          ? interesting[generator.next(below: interesting.count)] : UInt8(generator.next(below: 256))
      }
      _ = try? JSON5.parse(String(decoding: random, as: UTF8.self))
    }
  }

  @Test("A large document parses completely")
  func largeDocument() throws {
    var text = "{ cues: [\n"
    for index in 0..<2_000 {
      text += "  { name: 'cue\(index)', \"gain\": -\(index % 7).5, fade: 0x1F, tags: ['a', \"b\\n\"], loop: true },\n"
    }
    text += "] }"
    let cues = try #require(try JSON5.parse(text).objectValue?["cues"]?.arrayValue)
    #expect(cues.count == 2_000)
    #expect(cues.last?.location == at(2_001, 3))
    #expect(cues.last?.objectValue?["gain"]?.numberValue == -4.5)
  }
}

/// SplitMix64: a tiny deterministic generator so that the fuzz test is the same on every run.
private struct JSON5FuzzGenerator {
  var state: UInt64
  init(seed: UInt64) { state = seed }

  mutating func next(below bound: Int) -> Int {
    state &+= 0x9E37_79B9_7F4A_7C15
    var mixed = state
    mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
    mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
    mixed ^= mixed >> 31
    return Int(mixed % UInt64(max(bound, 1)))
  }
}

@Suite("Did you mean: the closest plausible candidate for a misspelt word")
struct DidYouMeanTests {
  @Test("One typo in a short word: substitution, insertion, deletion, transposition")
  func singleTypos() {
    let keys = ["gain", "fade", "loop", "tempo", "length"]
    #expect(closestMatch(to: "gian", among: keys) == "gain")
    #expect(closestMatch(to: "gan", among: keys) == "gain")
    #expect(closestMatch(to: "gains", among: keys) == "gain")
    #expect(closestMatch(to: "lopo", among: keys) == "loop")
    #expect(closestMatch(to: "fada", among: keys) == "fade")
    #expect(closestMatch(to: "lenght", among: ["lens", "length"]) == "length")
  }

  @Test("A key spelt out at length, or cut short, names the key it starts or that starts with it")
  func prefixes() {
    let keys = ["music", "repeat", "resume", "transition", "between", "tempo"]
    #expect(closestMatch(to: "resumesPlayerMusic", among: keys) == "resume")
    #expect(closestMatch(to: "transit", among: keys) == "transition")
    #expect(closestMatch(to: "tempoRamp", among: keys) == "tempo")
    #expect(closestMatch(to: "tra", among: keys) == nil, "too short to say")
    #expect(closestMatch(to: "musicians", among: ["music", "musicBox"]) == "music")
  }

  @Test("Too far, empty candidates, and never the word itself")
  func noMatch() {
    #expect(closestMatch(to: "xyz", among: ["gain"]) == nil)
    #expect(closestMatch(to: "vol", among: ["volume"]) == nil)
    #expect(closestMatch(to: "gain", among: []) == nil)
    #expect(closestMatch(to: "gain", among: ["gain"]) == nil)
    #expect(closestMatch(to: "gain", among: ["gain", "rain"]) == "rain")
    // Two typos in a six-letter word exceed the limit of max(1, 6 / 3) = 2 only at three.
    #expect(closestMatch(to: "lxxgth", among: ["length"]) == "length")
    #expect(closestMatch(to: "lxxxth", among: ["length"]) == nil)
  }

  @Test("Longer words allow about one edit in three")
  func longWords() {
    #expect(closestMatch(to: "fadeOutSeconds", among: ["fadeInSeconds"]) == "fadeInSeconds")
    #expect(closestMatch(to: "transitoinn", among: ["transition"]) == "transition")
  }

  @Test("Case-only and separator-only differences match and beat real typos")
  func caseAndSeparators() {
    #expect(closestMatch(to: "Combat", among: ["explore", "combat"]) == "combat")
    #expect(closestMatch(to: "Gain", among: ["rain", "gain"]) == "gain")
    #expect(closestMatch(to: "loop_start", among: ["loopEnd", "loopStart"]) == "loopStart")
    #expect(closestMatch(to: "loopstart", among: ["loop_start"]) == "loop_start")
    #expect(closestMatch(to: "fade-in-seconds", among: ["fadeOut", "fadeInSeconds"]) == "fadeInSeconds")
    #expect(closestMatch(to: "a_b_c_d", among: ["abce", "ABCD"]) == "ABCD")
  }

  @Test("Ties go to the first candidate")
  func ties() {
    #expect(closestMatch(to: "cat", among: ["bat", "hat"]) == "bat")
    #expect(closestMatch(to: "cat", among: ["hat", "bat"]) == "hat")
  }

  @Test("Optimal string alignment distance")
  func distance() {
    func osa(_ a: String, _ b: String) -> Int { optimalStringAlignmentDistance(Array(a), Array(b)) }
    #expect(osa("kitten", "sitting") == 3)
    #expect(osa("ab", "ba") == 1)
    // Unlike unrestricted Damerau–Levenshtein (2), OSA may not edit a transposed pair again.
    #expect(osa("ca", "abc") == 3)
    #expect(osa("", "abc") == 3)
    #expect(osa("same", "same") == 0)
  }
}
