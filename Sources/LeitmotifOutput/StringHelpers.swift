#if canImport(Glibc)
  import Glibc
#endif

// The few string operations of full Foundation that Leitmotif used and FoundationEssentials lacks
// (`trimmingCharacters(in:)`, `caseInsensitiveCompare`, `String(format:)`): the library targets
// import only FoundationEssentials, so a static libLeitmotifC carries no CoreFoundation or ICU.
// They live here as the lowest layer that needs one (OpenAL.swift reads ALSOFT_CONF); the layers
// above all see LeitmotifOutput. Each gives the text its Foundation original gave. The names
// differ from Foundation's so that code importing both (the tests, the executables) is unambiguous.

extension Unicode.Scalar {
  /// A scalar of Foundation's `CharacterSet.whitespaces`: tab, and the space separators (Unicode
  /// category Zs) with U+200B ZERO WIDTH SPACE, which Foundation counts too.
  package var isFoundationWhitespace: Bool {
    switch value {
    case 0x09, 0x20, 0xA0, 0x1680, 0x2000...0x200B, 0x202F, 0x205F, 0x3000: true
    default: false
    }
  }

  /// A scalar of Foundation's `CharacterSet.whitespacesAndNewlines`: the whitespace above and
  /// U+000A to U+000D, U+0085, U+2028 and U+2029.
  package var isFoundationWhitespaceOrNewline: Bool {
    switch value {
    case 0x0A...0x0D, 0x85, 0x2028, 0x2029: true
    default: isFoundationWhitespace
    }
  }
}

extension Unicode.Scalar {
  /// Unicode's full case folding of the scalar, as Foundation's (CoreFoundation's) tables have
  /// it: lower-casing, upper-casing and lower-casing again folds as the standard's table does
  /// (ẞ to ß to SS to ss, ſ to S to s, Ꭰ to ꭰ), except that the dotless ı folds to itself
  /// (upper-casing would make it I). Those tables predate Unicode 16 and the old Cyrillic
  /// letters ᲀ to ᲈ, so these fold to themselves here too (Swift's tables are newer).
  package var foundationCaseFolded: String {
    guard value != 0x131, !(0x1C80...0x1C88).contains(value), let age = properties.age, age.major < 16 else {
      return String(self)
    }
    return properties.lowercaseMapping.uppercased().lowercased()
  }
}

extension StringProtocol {
  /// The text without the scalars at either end for which `isTrimmed` holds. Like Foundation's
  /// `trimmingCharacters(in:)`, by Unicode scalars: a combining mark after a trimmed space stays.
  package func trimming(where isTrimmed: (Unicode.Scalar) -> Bool) -> String {
    let scalars = unicodeScalars
    guard let first = scalars.firstIndex(where: { !isTrimmed($0) }) else { return "" }
    let last = scalars.lastIndex(where: { !isTrimmed($0) })!
    return String(String.UnicodeScalarView(scalars[first...last]))
  }

  /// `trimmingCharacters(in: .whitespaces)`.
  package func trimmingWhitespace() -> String { trimming(where: \.isFoundationWhitespace) }

  /// `trimmingCharacters(in: .whitespacesAndNewlines)`.
  package func trimmingWhitespaceAndNewlines() -> String { trimming(where: \.isFoundationWhitespaceOrNewline) }

  /// Whether the two are equal ignoring case, as Foundation's `caseInsensitiveCompare(_:) ==
  /// .orderedSame`: by full case folding ("Straße" equals "STRASSE", "ǅ" equals "ǆ") and
  /// canonical equivalence (Swift's `==`). (Foundation's comparison left letters beyond U+FFFF,
  /// such as Deseret's, and Greek letters with a subscript iota unfolded; this folds them.)
  package func equalsIgnoringCase(_ other: some StringProtocol) -> Bool { caseFolded == other.caseFolded }

  /// Case folded scalar by scalar (`Unicode.Scalar.foundationCaseFolded`).
  private var caseFolded: String {
    var folded = ""
    for scalar in unicodeScalars { folded += scalar.foundationCaseFolded }
    return folded
  }
}

/// `value` with `decimals` digits after the point, right-aligned in at least `width` characters:
/// what `String(format: "%<width>.<decimals>f", value)` printed (C's `printf`, whose rounding and
/// "nan"/"inf" Foundation's formatting passed through, with the decimal point of the C locale
/// the process has set, as there).
package func fixedPoint(_ value: Double, decimals: Int, width: Int = 0) -> String {
  let arguments: [CVarArg] = [Int32(width), Int32(decimals), value]
  var buffer = [CChar](repeating: 0, count: 64)
  let length = Int(withVaList(arguments) { vsnprintf(&buffer, buffer.count, "%*.*f", $0) })
  if length >= buffer.count {
    // A huge value (`%f` writes every integer digit): once more with room for all of it.
    buffer = [CChar](repeating: 0, count: length + 1)
    _ = withVaList(arguments) { vsnprintf(&buffer, buffer.count, "%*.*f", $0) }
  }
  return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}
