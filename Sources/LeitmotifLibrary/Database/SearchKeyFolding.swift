import LeitmotifOutput
@_spi(_Unicode) import Swift

/// The index's search keys: text folded case-, diacritic- and width-insensitively ("Beyoncé"
/// matches "beyonce", "Ｔｅｓｔ" matches "test"), exactly as Foundation's
/// `folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)`
/// folded it: the keys of an index written before are compared with keys folded now, so a
/// different fold would make its songs unfindable until a rescan. FoundationEssentials has no
/// `folding`. The rules are CoreFoundation's (`CFStringFold`), checked scalar by scalar against
/// it over all of Unicode, and for each scalar after a base letter:
/// - Width: the fullwidth ASCII forms become ASCII, the halfwidth katakana and hangul forms their
///   usual (the hangul ones conjoining) letters, and the other forms of U+FF5F to U+FFEE their own.
/// - Diacritics: a base whose canonical decomposition starts below U+0510 (Latin, Greek,
///   Cyrillic, Armenian) keeps only that letter ("é" to "e", "Ё" to "Е", "≠" to "="); the marks
///   after a base go, after one below U+0510 all of them, after another only those below U+0510
///   (so "が" and "ऩ" stay, as their own script's letters). Marks that stay are decomposed.
/// - Case: Unicode's full case folding, as Foundation had it (`foundationCaseFolded`).
/// Uses the standard library's canonical decomposition (`_nfd`, the SPI swift-foundation uses).
enum SearchKeyFolding {
  static func fold(_ text: String) -> String {
    var folded = String.UnicodeScalarView()
    // The current base's first decomposed scalar (nil before the first base: leading marks are
    // bases of their own, as in Foundation).
    var base: UInt32?
    for scalar in text.unicodeScalars {
      if let base, isMark(scalar) {
        if base < 0x510 || scalar.value < 0x510 { continue }
        folded.append(contentsOf: String(scalar)._nfd)
        continue
      }
      let wide = widthFolded(scalar)
      let decomposed = String(wide)._nfd.first(where: { _ in true }) ?? wide
      let letter = decomposed.value < 0x510 ? decomposed : wide
      base = letter.value
      folded.append(contentsOf: letter.foundationCaseFolded.unicodeScalars)
    }
    return String(folded)
  }

  /// Whether CoreFoundation counts `scalar` a mark of the base before it: Unicode's
  /// Grapheme_Extend and the emoji skin-tone modifiers, as of its tables (before Unicode 16).
  private static func isMark(_ scalar: Unicode.Scalar) -> Bool {
    if spacingMarksExtendingSince16.contains(scalar.value) { return false }
    if scalar.value == 0x1171E { return true }  // AHOM CONSONANT SIGN MEDIAL RA: Grapheme_Extend before Unicode 16
    guard let age = scalar.properties.age, age.major < 16 else { return false }
    return scalar.properties.isGraphemeExtend || scalar.properties.isEmojiModifier
  }

  /// Spacing marks that Unicode 16 made Grapheme_Extend; CoreFoundation's tables are older.
  private static let spacingMarksExtendingSince16: Set<UInt32> = [
    0x0CC0, 0x0CC7, 0x0CC8, 0x0CCA, 0x0CCB, 0x1715, 0x1734, 0x1B3B, 0x1B3D, 0x1B43, 0x1B44, 0x1BAA, 0x1BF2,
    0x1BF3, 0xA953, 0xA9C0, 0x111C0, 0x11235, 0x1134D, 0x116B6, 0x1193D, 0x11F41, 0x16FF0, 0x16FF1, 0x1D166,
    0x1D16D,
  ]

  private static func widthFolded(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
    switch scalar.value {
    case 0xFF01...0xFF5E: return Unicode.Scalar(scalar.value - 0xFEE0)!
    case 0xFF5F...0xFFEE:
      let narrow = halfwidthAndFullwidthForms[Int(scalar.value - 0xFF5F)]
      return narrow == 0 ? scalar : Unicode.Scalar(narrow)!
    default: return scalar
    }
  }

  /// What CoreFoundation's width folding makes of U+FF5F to U+FFEE (0: the scalar stays).
  private static let halfwidthAndFullwidthForms: [UInt32] = [
    0x2985, 0x2986, 0x3002, 0x300C, 0x300D, 0x3001, 0x30FB, 0x30F2, 0x30A1, 0x30A3, 0x30A5, 0x30A7,
    0x30A9, 0x30E3, 0x30E5, 0x30E7, 0x30C3, 0x30FC, 0x30A2, 0x30A4, 0x30A6, 0x30A8, 0x30AA, 0x30AB,
    0x30AD, 0x30AF, 0x30B1, 0x30B3, 0x30B5, 0x30B7, 0x30B9, 0x30BB, 0x30BD, 0x30BF, 0x30C1, 0x30C4,
    0x30C6, 0x30C8, 0x30CA, 0x30CB, 0x30CC, 0x30CD, 0x30CE, 0x30CF, 0x30D2, 0x30D5, 0x30D8, 0x30DB,
    0x30DE, 0x30DF, 0x30E0, 0x30E1, 0x30E2, 0x30E4, 0x30E6, 0x30E8, 0x30E9, 0x30EA, 0x30EB, 0x30EC,
    0x30ED, 0x30EF, 0x30F3, 0x3099, 0x309A, 0x1160, 0x1100, 0x1101, 0x11AA, 0x1102, 0x11AC, 0x11AD,
    0x1103, 0x1104, 0x1105, 0x11B0, 0x11B1, 0x11B2, 0x11B3, 0x11B4, 0x11B5, 0x111A, 0x1106, 0x1107,
    0x1108, 0x1121, 0x1109, 0x110A, 0x110B, 0x110C, 0x110D, 0x110E, 0x110F, 0x1110, 0x1111, 0x1112,
    0, 0, 0, 0x1161, 0x1162, 0x1163, 0x1164, 0x1165, 0x1166, 0, 0, 0x1167,
    0x1168, 0x1169, 0x116A, 0x116B, 0x116C, 0, 0, 0x116D, 0x116E, 0x116F, 0x1170, 0x1171,
    0x1172, 0, 0, 0x1173, 0x1174, 0x1175, 0, 0, 0, 0xA2, 0xA3, 0xAC,
    0, 0xA6, 0xA5, 0x20A9, 0, 0x2502, 0x2190, 0x2191, 0x2192, 0x2193, 0x25A0, 0x25CB,
  ]
}
