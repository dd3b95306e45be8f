import Leitmotif

/// `leitmotif pick` (being built: see issue 4).
enum PickCommand {
  static func run(_ arguments: [String]) -> Int32 {
    fail("pick: not built yet")
    return 2
  }
}
