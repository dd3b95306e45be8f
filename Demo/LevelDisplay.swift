import Foundation
import Leitmotif

/// What the demo prints while the level runs: one line per thing the director does (the cue,
/// the rule, the crossfade, stinger or duck, the state and what plays), and a progress line.
struct LevelDisplay {
  let levelSeconds: Double
  /// Progress redraws in place on a terminal; elsewhere (CI, a pipe) a line every 30 s of level.
  let isTerminal = isatty(STDOUT_FILENO) != 0
  private var lastProgressLine = -1.0
  private(set) var state: String?
  private(set) var playing: String?

  init(levelSeconds: Double) { self.levelSeconds = levelSeconds }

  static func clock(_ seconds: Double) -> String {
    let tenths = Int((max(0, seconds) * 10).rounded())
    return String(format: "%02d:%02d.%d", tenths / 600, (tenths / 10) % 60, tenths % 10)
  }

  /// The line for a report (nil for the ones the demo does not show).
  mutating func line(for report: DirectorReport, levelTime: Double) -> String? {
    let at = Self.clock(levelTime)
    let cue = report.event.map { event -> String in
      let payload = event.payload.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
      return event.cue + (payload.isEmpty ? "" : " { \(payload.joined(separator: ", ")) }")
    }
    switch report.kind {
    case .fired(let rule, let actions):
      return "\(at)  \(cue ?? "")  -> rule \"\(rule)\": \(actions.joined(separator: "; "))"
    case .ignored(let reason):
      return "\(at)  \(cue ?? "")  -> ignored: \(reason)"
    case .stateChanged(_, let to, let item, let source, let isUser):
      state = to
      playing = item.map { Self.describe($0, source: source, isUser: isUser) }
      return "\(at)    music: state \"\(to)\"" + (playing.map { ", playing \($0)" } ?? "")
    case .nowPlaying(let item, let source, let isUser):
      playing = Self.describe(item, source: source, isUser: isUser)
      return "\(at)    music: next item, \(playing!)"
    case .stinger(_, let item):
      return "\(at)    music: stinger \"\(item.title ?? item.assetURL.lastPathComponent)\""
    case .scheduled:
      return nil  // the rule's line says when it lands
    case .musicEnded:
      state = nil
      playing = nil
      return "\(at)    music: \(report.kind)"
    case .fallback, .dropped, .reloaded, .reloadFailed, .problem:
      return "\(at)    \(report.kind)"
    }
  }

  static func describe(_ item: MediaItem, source: String?, isUser: Bool) -> String {
    "\"\(item.title ?? item.assetURL.lastPathComponent)\" (\(isUser ? "your song" : "bundled")"
      + (source.map { ", source \($0)" } ?? "") + ")"
  }

  /// The progress line, or nil when nothing needs printing now.
  mutating func progress(at levelTime: Double) -> String? {
    let fraction = min(1, levelTime / max(levelSeconds, 0.001))
    let bar = String(repeating: "#", count: Int(fraction * 30)) + String(repeating: ".", count: 30 - Int(fraction * 30))
    let text = "[\(bar)] \(Self.clock(levelTime)) / \(Self.clock(levelSeconds))  state: \(state ?? "-")"
    if isTerminal { return text }
    guard levelTime - lastProgressLine >= 30 || lastProgressLine < 0 else { return nil }
    lastProgressLine = levelTime
    return text
  }
}
