/// Text from files (titles, artists, file names, paths in diagnostics) on its way to a terminal:
/// control characters are shown escaped, so an escape sequence in a tag cannot reach the
/// terminal and a newline cannot break a table's row. JSON output needs none of this: the
/// encoder escapes them already.
enum TerminalText {
  /// `text` with every C0 and C1 control character (and DEL) written as an escape: `\n`, `\t`,
  /// `\r`, `\e` for ESC, `\u{XX}` for the rest.
  static func safe(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: isControl) else { return text }
    var result = ""
    for scalar in text.unicodeScalars {
      guard isControl(scalar) else {
        result.unicodeScalars.append(scalar)
        continue
      }
      switch scalar {
      case "\n": result += "\\n"
      case "\t": result += "\\t"
      case "\r": result += "\\r"
      case "\u{1B}": result += "\\e"
      default: result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
      }
    }
    return result
  }

  private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
    scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
  }
}
