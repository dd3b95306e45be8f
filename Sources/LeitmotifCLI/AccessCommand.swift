import Leitmotif

/// `leitmotif access` (being built: see issue 4).
enum AccessCommand {
  static func run(_ arguments: [String]) -> Int32 {
    fail("access: not built yet")
    return 2
  }
}
