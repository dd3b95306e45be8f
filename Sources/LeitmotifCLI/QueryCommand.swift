import Leitmotif

/// `leitmotif query` (being built: see issue 4).
enum QueryCommand {
  static func run(_ arguments: [String]) -> Int32 {
    fail("query: not built yet")
    return 2
  }
}
