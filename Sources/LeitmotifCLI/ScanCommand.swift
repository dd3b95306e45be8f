import Leitmotif

/// `leitmotif scan` (being built: see issue 4).
enum ScanCommand {
  static func run(_ arguments: [String]) -> Int32 {
    fail("scan: not built yet")
    return 2
  }
}
