extension String {
  /// This text for a message: longer than `limit` characters, cut in the middle, saying how long
  /// it was. Messages quote what callers pass (paths, names, cue file keys), and a megabyte of
  /// garbage passed in came back whole in every message that named it.
  package func cutInMiddle(limit: Int) -> String {
    guard count > limit else { return self }
    return "\(prefix(limit * 2 / 3))… (\(count) characters) …\(suffix(limit / 4))"
  }
}
