/// A plain-text table with aligned columns, for stdout. Numbers are right-aligned, text left.
struct TextTable {
  var header: [String]
  var rows: [[String]] = []
  /// Columns (by index) aligned to the right.
  var rightAligned: Set<Int> = []

  init(_ header: [String], rightAligned: Set<Int> = []) {
    self.header = header
    self.rightAligned = rightAligned
  }

  mutating func add(_ row: [String]) { rows.append(row) }

  func render() -> String {
    let all = [header] + rows
    let columns = all.map(\.count).max() ?? 0
    let widths = (0..<columns).map { column in
      all.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0
    }
    func line(_ cells: [String]) -> String {
      (0..<columns).map { column in
        let cell = column < cells.count ? cells[column] : ""
        let padding = String(repeating: " ", count: widths[column] - cell.count)
        return rightAligned.contains(column) ? padding + cell : cell + padding
      }.joined(separator: "  ").replacing(/\s+$/, with: "")
    }
    let rule = widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")
    return ([line(header), rule] + rows.map(line)).joined(separator: "\n")
  }
}
