// What `leitmotif pick` shows: the layout of one frame from the picker's state, as lines that
// each fill the terminal's width exactly (never wider, so nothing wraps).
import Foundation
import Leitmotif

/// The view state the model does not keep (where the cursor is, what is scrolled into view) and
/// the drawing of a frame.
struct PickScreen {
  /// Index in `picker.items` of the highlighted item.
  var cursor = 0
  /// Index of the first item shown.
  var top = 0
  /// A line shown instead of the list (e.g. while scanning), if any.
  var notice: String?

  /// Rows above the list (title, search, rule) and below it (rule, status, keys).
  static let chromeRows = 6
  static let minimumSize = (columns: 24, rows: 8)

  func listRows(screenRows: Int) -> Int { max(1, screenRows - Self.chromeRows) }

  /// Keeps the cursor on an item and in view.
  mutating func clamp(itemCount: Int, screenRows: Int) {
    cursor = itemCount == 0 ? 0 : min(max(cursor, 0), itemCount - 1)
    let rows = listRows(screenRows: screenRows)
    if cursor < top { top = cursor }
    if cursor >= top + rows { top = cursor - rows + 1 }
    top = max(0, min(top, max(0, itemCount - rows)))
  }

  /// The frame for a `columns` x `rows` terminal: escape sequences that draw every line.
  func frame(picker: MediaPicker, columns: Int, rows: Int) -> String {
    let lines = self.lines(picker: picker, columns: columns, rows: rows)
    var output = ""
    for (row, line) in lines.enumerated() {
      output += "\u{1b}[\(row + 1);1H"
      output += line.reversed ? "\u{1b}[7m\(line.text)\u{1b}[0m" : line.text
    }
    return output
  }

  struct Line {
    var text: String
    var reversed = false
  }

  /// The lines of a frame, each exactly `columns` wide.
  func lines(picker: MediaPicker, columns: Int, rows: Int) -> [Line] {
    func line(_ text: String, reversed: Bool = false) -> Line {
      Line(text: TextWidth.fit(TerminalText.safe(text), to: columns), reversed: reversed)
    }
    guard columns >= Self.minimumSize.columns, rows >= Self.minimumSize.rows else {
      var small = [line("Terminal too small", reversed: true)]
      if rows > 1 {
        small.append(line("(\(columns)x\(rows); needs \(Self.minimumSize.columns)x\(Self.minimumSize.rows))"))
      }
      while small.count < rows { small.append(line("")) }
      return Array(small.prefix(rows))
    }
    let rule = String(repeating: "─", count: columns)
    let multiple = picker.allowsPickingMultipleItems
    var lines: [Line] = []
    let title = picker.prompt.map { "Leitmotif · \($0)" } ?? "Leitmotif · Pick music"
    lines.append(line(" " + title, reversed: true))
    lines.append(line(" Search: \(picker.searchText)▏"))
    lines.append(Line(text: rule))

    let listRows = self.listRows(screenRows: rows)
    var list: [Line] = []
    if let notice {
      // Wrapped, not cut: it may name a long path, and what went wrong comes after it.
      for part in TextWidth.wrap(TerminalText.safe(notice), to: columns - 2) { list.append(line(" " + part)) }
    } else if picker.items.isEmpty {
      if picker.libraryItemCount == 0 {
        list.append(line(" The library is empty: no songs were found in its folders."))
      } else {
        list.append(line(" No song's title, artist or album contains \"\(picker.searchText)\"."))
      }
    } else {
      let sectionStarts = Dictionary(
        picker.sections.map { ($0.range.lowerBound, $0.title) }, uniquingKeysWith: { first, _ in first })
      let last = min(picker.items.count, top + listRows)
      for index in top..<last {
        let item = picker.items[index]
        let gutter = TextWidth.fit(sectionStarts[index].map { " " + $0 } ?? "", to: 3)
        let marker = index == cursor ? "> " : "  "
        let box = multiple ? (picker.isSelected(item) ? "[x] " : "[ ] ") : ""
        let duration = item.playbackDuration.map(Self.clock) ?? ""
        let textWidth = columns - 3 - 2 - box.count - 6
        let text = TextWidth.fit(Self.describe(item), to: textWidth)
        let row = gutter + marker + box + text + " " + TextWidth.fit(duration, to: 5, alignRight: true)
        list.append(Line(text: TextWidth.fit(row, to: columns), reversed: index == cursor))
      }
    }
    while list.count < listRows { list.append(line("")) }
    lines += list.prefix(listRows)

    lines.append(Line(text: rule))
    var status = " \(picker.items.count) of \(picker.libraryItemCount) songs"
    if multiple { status += " · \(picker.selection.count) selected" }
    if let section = picker.sections.first(where: { $0.range.contains(cursor) }), notice == nil {
      status += " · \(section.title)"
    }
    lines.append(line(status))
    let keys =
      multiple
      ? " type to search  ↑↓ PgUp PgDn move  Space mark  Enter pick  Esc cancel"
      : " type to search  ↑↓ PgUp PgDn move  Enter pick  Esc cancel"
    lines.append(line(keys))
    return lines
  }

  /// "Title — Artist · Album", leaving out what is unknown (the file name stands in for a title).
  static func describe(_ item: MediaItem) -> String {
    var text = item.displayName
    if let artist = item.artist, !artist.isEmpty { text += " — \(artist)" }
    if let album = item.albumTitle, !album.isEmpty { text += " · \(album)" }
    return text
  }

  /// "3:07", "1:02:03".
  static func clock(_ seconds: TimeInterval) -> String {
    guard seconds.isFinite, seconds >= 0 else { return "" }
    let total = Int(seconds.rounded())
    let (hours, minutes, secs) = (total / 3600, total / 60 % 60, total % 60)
    return hours > 0
      ? String(format: "%d:%02d:%02d", hours, minutes, secs) : String(format: "%d:%02d", minutes, secs)
  }
}

/// Terminal columns taken by text: wide (East Asian, emoji) characters take two, combining marks
/// none, controls are shown as spaces.
enum TextWidth {
  static func columns(_ character: Character) -> Int {
    guard let scalar = character.unicodeScalars.first else { return 0 }
    let value = scalar.value
    if value < 0x20 || (0x7f..<0xa0).contains(value) { return 1 }  // replaced by a space
    if scalar.properties.generalCategory == .nonspacingMark || scalar.properties.generalCategory == .enclosingMark {
      return 0
    }
    // Emoji shown as emoji take two, in the Basic Multilingual Plane too (✨ U+2728, ⚡ U+26A1):
    // a playlist named with one pushed the table's next column out of line (a player's trial).
    if scalar.properties.isEmojiPresentation || character.unicodeScalars.contains("\u{FE0F}") { return 2 }
    let wide: [ClosedRange<UInt32>] = [
      0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
      0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x1F300...0x1F64F,
      0x1F900...0x1F9FF, 0x20000...0x3FFFD,
    ]
    return wide.contains { $0.contains(value) } ? 2 : 1
  }

  static func columns(_ text: String) -> Int { text.reduce(0) { $0 + columns($1) } }

  /// `text` in lines of at most `width` columns, broken after a space where one is near enough,
  /// else anywhere (a long path).
  static func wrap(_ text: String, to width: Int) -> [String] {
    guard width > 0 else { return [text] }
    var lines: [String] = []
    var current = ""
    var used = 0
    for character in text {
      let wide = columns(character)
      if used + wide > width && !current.isEmpty {
        if let space = current.lastIndex(of: " "), columns(String(current[space...])) < width / 3 {
          lines.append(String(current[..<space]))
          current = String(current[current.index(after: space)...])
        } else {
          lines.append(current)
          current = ""
        }
        used = columns(current)
      }
      current.append(character)
      used += wide
    }
    if !current.isEmpty || lines.isEmpty { lines.append(current) }
    return lines
  }

  /// `text` cut (with "…") or padded with spaces to exactly `width` columns.
  static func fit(_ text: String, to width: Int, alignRight: Bool = false) -> String {
    guard width > 0 else { return "" }
    var clean = ""
    for character in text {
      let value = character.unicodeScalars.first?.value ?? 0
      clean.append(value < 0x20 || (0x7f..<0xa0).contains(value) ? " " : character)
    }
    var used = columns(clean)
    if used > width {
      var cut = ""
      used = 0
      for character in clean {
        let next = columns(character)
        if used + next > width - 1 { break }
        cut.append(character)
        used += next
      }
      clean = cut + "…"
      used += 1
    }
    let padding = String(repeating: " ", count: max(0, width - used))
    return alignRight ? padding + clean : clean + padding
  }
}
