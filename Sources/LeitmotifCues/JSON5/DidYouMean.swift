import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

/// The candidate that `word` is most plausibly a typo of, for "did you mean ...?" hints.
///
/// Comparison ignores case and uses the optimal-string-alignment distance (Damerau–Levenshtein
/// where a transposition of two neighbours costs 1, as in "lopo" for "loop"). A candidate is close
/// enough when that distance is at most `max(1, word.count / 3)`: one slip in a short word, about
/// one in three characters in a long one, beyond which the hint is more confusing than useful.
///
/// Two kinds of near miss always match, whatever their length, and win over mere typos: a
/// difference in case only ("Combat" for "combat") and a difference in '_' or '-' separators only
/// ("loop_start" for "loopStart", "fade-in" for "fadeIn").
///
/// Failing those, a word that starts with a candidate of 4 letters or more, or a word of 4 or
/// more that a candidate starts with, names it ("resumesPlayerMusic" for "resume", "trans" is
/// too short but "transit" for "transition"): a key spelt out at length, or cut short, is as
/// plain a miss as a typo, and got no hint. The longest such candidate wins.
///
/// - Parameters:
///   - word: what the user wrote, e.g. an unknown key.
///   - candidates: the valid words, in order of preference.
/// - Returns: the closest candidate, the first in `candidates` among equally close ones; nil if
///   none is close enough. Never `word` itself.
/// - Thread safety: a pure function.
public func closestMatch(to word: String, among candidates: [String]) -> String? {
  let folded = Array(word.lowercased())
  let normalized = withoutSeparators(folded)
  let limit = max(1, word.count / 3)
  var best: (candidate: String, distance: Int)?
  for candidate in candidates where candidate != word {
    let candidateFolded = Array(candidate.lowercased())
    // Case and separator differences count as distance 0 so that they beat any real typo.
    let distance =
      withoutSeparators(candidateFolded) == normalized
      ? 0 : optimalStringAlignmentDistance(folded, candidateFolded, limit: limit)
    if distance <= limit, distance < (best?.distance ?? .max) {
      best = (candidate, distance)
    }
  }
  if let best { return best.candidate }
  let plain = withoutSeparators(folded)
  return candidates.filter { candidate in
    let other = withoutSeparators(Array(candidate.lowercased()))
    guard candidate != word, other != plain else { return false }
    return (other.count >= 4 && plain.starts(with: other)) || (plain.count >= 4 && other.starts(with: plain))
  }.max { $0.count < $1.count }
}

private func withoutSeparators(_ characters: [Character]) -> [Character] {
  characters.filter { $0 != "_" && $0 != "-" }
}

/// The optimal-string-alignment distance between `a` and `b`: insertions, deletions,
/// substitutions and transpositions of adjacent characters, each costing 1, with no substring
/// edited twice. Returns `limit + 1` early when the lengths alone rule out a match.
func optimalStringAlignmentDistance(_ a: [Character], _ b: [Character], limit: Int = .max) -> Int {
  if abs(a.count - b.count) > limit { return limit == .max ? limit : limit + 1 }
  if a.isEmpty { return b.count }
  if b.isEmpty { return a.count }
  // Three rows of the dynamic-programming table are enough: the transposition looks two back.
  var previousPrevious = [Int](repeating: 0, count: b.count + 1)
  var previous = Array(0...b.count)
  var current = [Int](repeating: 0, count: b.count + 1)
  for i in 1...a.count {
    current[0] = i
    for j in 1...b.count {
      let cost = a[i - 1] == b[j - 1] ? 0 : 1
      var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
      if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
        value = min(value, previousPrevious[j - 2] + 1)
      }
      current[j] = value
    }
    (previousPrevious, previous, current) = (previous, current, previousPrevious)
  }
  return previous[b.count]
}
