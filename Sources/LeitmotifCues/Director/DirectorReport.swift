import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

/// What the director did, and why: one report per event it took (which rule fired and which
/// actions ran, or why nothing happened), and one for each change it made on its own time (a
/// quantized transition landing, a fallback to bundled music, a reload).
///
/// Subscribe with `Director.addObserver(_:)` or `Director.reports`.
public struct DirectorReport: Sendable, CustomStringConvertible {
  /// The director's time, in seconds: audio time in an offline run, seconds since the director
  /// started otherwise.
  public var time: Double
  /// When the director decided it (its time then): earlier than `time` for a change that waited
  /// for the beat grid, which is reported when it sounds.
  public var decidedAt: Double
  /// The event this answers (nil for reports of the director's own doing).
  public var event: LevelEvent?
  /// What happened.
  public var kind: Kind

  /// A report at `time`, decided at `decidedAt` (default: `time`).
  public init(time: Double, decidedAt: Double? = nil, event: LevelEvent?, kind: Kind) {
    self.time = time
    self.decidedAt = decidedAt ?? time
    self.event = event
    self.kind = kind
  }

  /// When what it reports sounds: a scheduled change's landing time, else `time`.
  public var soundingTime: Double {
    if case .scheduled(_, let at) = kind { return at }
    return time
  }

  /// What the director did.
  public enum Kind: Sendable {
    /// Rule `rule` fired; `actions` describe what it did, in order.
    case fired(rule: String, actions: [String])
    /// No rule acted on the event; `reason` says why (no rule for the cue, a condition, a
    /// cooldown, a state of higher priority).
    case ignored(reason: String)
    /// The music moved to `state` (`from` the one before) and plays `item` of `source`.
    case stateChanged(from: String?, to: String, item: MediaItem?, source: String?, isUserMusic: Bool)
    /// A change waits for the beat grid or the end of the item: it lands at `at`.
    case scheduled(what: String, at: Double)
    /// A source gave nothing; the director played `replacement` instead (nil: nothing at all).
    case fallback(state: String, source: String, replacement: String?, reason: String)
    /// A stinger started.
    case stinger(name: String, item: MediaItem)
    /// A new item is playing in the current state.
    case nowPlaying(item: MediaItem, source: String?, isUserMusic: Bool)
    /// The music ran out: the last item of a queue that does not repeat (`item`, the state's or
    /// the game's queue) played to its end, or a skip went past it. Nothing plays from here
    /// until a rule changes state or the game resumes; `state` is still the current state.
    case musicEnded(state: String?, item: MediaItem?)
    /// The bus was full: this many events were dropped (never processed) since the last report.
    case dropped(count: UInt64)
    /// The cue file changed and the new rules are in force (`warnings` from the check).
    /// `changes`: what the save changed, a line each ("states.explore.volume: 0.8 → 0.6"; empty
    /// when only comments or layout did).
    case reloaded(path: String, warnings: [CueProblem], changes: [String])
    /// The cue file changed but is invalid: the last good one stays in force.
    case reloadFailed(CueFileError)
    /// Something went wrong applying an action (a file that failed, no free voice).
    case problem(String)
  }

  /// "TIME s [CUE] WHAT", one line as `leitmotif cues simulate` prints it.
  public var description: String {
    let clock = fixedPoint(time, decimals: 3, width: 8) + " s"
    let cause = event.map { " [\($0.cue)]" } ?? ""
    return "\(clock)\(cause) \(kind)"
  }
}

extension DirectorReport.Kind: CustomStringConvertible {
  /// What happened, in a line.
  public var description: String {
    switch self {
    case .fired(let rule, let actions): return "rule \"\(rule)\": " + actions.joined(separator: "; ")
    case .ignored(let reason): return "ignored: \(reason)"
    case .stateChanged(let from, let to, let item, let source, let isUser):
      let what = item.map { " playing \($0.reportName)" } ?? ""
      let origin = source.map { " from \"\($0)\" (\(isUser ? "user song" : "bundled"))" } ?? ""
      return "state \(from.map { "\"\($0)\"" } ?? "none") -> \"\(to)\"\(what)\(origin)"
    case .scheduled(let what, let at): return "\(what) scheduled at \(fixedPoint(at, decimals: 3)) s"
    case .fallback(let state, let source, let replacement, let reason):
      return "state \"\(state)\": source \"\(source)\" gives nothing (\(reason)); "
        + (replacement.map { "playing \"\($0)\" instead" } ?? "nothing to play")
    case .stinger(let name, let item): return "stinger \"\(name)\": \(item.reportName)"
    case .nowPlaying(let item, let source, let isUser):
      return "now playing \(item.reportName)" + (source.map { " from \"\($0)\"" } ?? "")
        + (isUser ? " (user song)" : " (bundled)")
    case .musicEnded(let state, let item):
      return "the music ended\(state.map { " (state \"\($0)\")" } ?? ""): "
        + (item.map { "\($0.reportName) was the last of its queue" } ?? "its queue ran out")
        + ", which does not repeat; silence until a rule changes state or the game resumes"
    case .dropped(let count): return "\(count) event\(count == 1 ? "" : "s") dropped: the bus was full"
    case .reloaded(let path, let warnings, let changes):
      // Each change and warning on a line of its own, as a refused reload lists its problems:
      // the designer who saved the file wants to see that the save took, and what to look at.
      var lines = [
        "reloaded \(path): "
          + (changes.isEmpty
            ? "no change but comments or layout" : "\(changes.count) change\(changes.count == 1 ? "" : "s")")
      ]
      lines += CueFileChanges.shortened(changes).map { "  \($0)" }
      if !warnings.isEmpty {
        lines.append("\(warnings.count) warning\(warnings.count == 1 ? "" : "s"):")
        lines += warnings.map(\.description)
      }
      return lines.joined(separator: "\n")
    case .reloadFailed(let error):
      return "reload refused, the last good cue file stays in force:\n\(error)"
    case .problem(let message): return "problem: \(message)"
    }
  }
}

extension MediaItem {
  /// How reports name an item: "Title" by Artist, else its file name.
  var reportName: String {
    let name = "\"\(displayName)\""
    return artist.map { "\(name) by \($0)" } ?? name
  }
}
