import Foundation

/// What happened in a simulated run, for people and for tests: each event and what the director
/// did about it, the music states in time, the items that played, and each voice's gain sampled
/// over time. `jsonData()` writes it for `--timeline`; `lines` is the printed timeline.
public struct CueTimeline: Sendable, Codable {
  public struct Event: Sendable, Codable {
    public var at: Double
    public var cue: String
    public var payload: [String: String]
    /// "fired" or "ignored".
    public var outcome: String
    public var rule: String?
    public var actions: [String]
    public var reason: String?
  }
  /// A stretch of time in which one state's music was heard (from the moment the director
  /// started it; a crossfade overlaps the next band's start).
  public struct StateBand: Sendable, Codable {
    public var state: String
    public var from: Double
    public var to: Double
  }
  public struct Item: Sendable, Codable {
    public var at: Double
    public var title: String
    public var file: String
    public var source: String?
    public var userMusic: Bool
  }
  /// Voice gains at one moment: slot number → gain (only voices in use).
  public struct GainSample: Sendable, Codable {
    public var at: Double
    public var gains: [String: Float]
    /// Slot number → what the voice plays, where the director knows (its title; stingers are
    /// marked "stinger: "). A voice fading out keeps the label it had.
    public var labels: [String: String]?
  }

  public var sampleRate: Int
  public var durationSeconds: Double
  public var events: [Event] = []
  public var states: [StateBand] = []
  public var items: [Item] = []
  public var stingers: [Item] = []
  public var gains: [GainSample] = []
  /// Every report, as printed.
  public var lines: [String] = []
  public var notes: [String] = []

  public init(sampleRate: Int, durationSeconds: Double) {
    self.sampleRate = sampleRate
    self.durationSeconds = durationSeconds
  }

  /// The state heard at `time` (the last one started at or before it).
  public func state(at time: Double) -> String? { states.last { $0.from <= time + 1e-9 }?.state }

  /// Adds a note (printed after the timeline).
  public mutating func note(_ text: String) { notes.append(text) }

  /// Samples the gain of every voice in use, and what the director's voices play, at `time`
  /// (a real-time run calls this every 50 ms or so; `CueSimulation` does it by itself).
  public mutating func sampleVoices(at time: Double, engine: AudioEngine, director: Director) {
    var gains: [String: Float] = [:]
    for slot in 0..<engine.voiceLimit {
      let status = engine.statuses[slot]
      guard status.isPrepared.load(ordering: .acquiring) else { continue }
      gains[String(slot)] = (status.gain * 1000).rounded() / 1000
    }
    var labels: [String: String] = [:]
    for (slot, voice) in director.voiceItems where gains[String(slot)] != nil {
      let title = voice.item.title ?? voice.item.assetURL.deletingPathExtension().lastPathComponent
      labels[String(slot)] = (voice.isStinger ? "stinger: " : "") + title
    }
    self.gains.append(
      GainSample(at: (time * 1000).rounded() / 1000, gains: gains, labels: labels.isEmpty ? nil : labels))
  }

  /// Adds the director's reports: events and their outcomes, state bands, items, stingers.
  public mutating func add(reports: [DirectorReport], script: CueScript) {
    for report in reports {
      lines.append(report.description)
      switch report.kind {
      case .fired(let rule, let actions):
        if let event = report.event {
          events.append(
            Event(
              at: event.audioTime ?? report.time, cue: event.cue, payload: event.payload.mapValues(\.description),
              outcome: "fired", rule: rule, actions: actions, reason: nil))
        }
      case .ignored(let reason):
        if let event = report.event {
          events.append(
            Event(
              at: event.audioTime ?? report.time, cue: event.cue, payload: event.payload.mapValues(\.description),
              outcome: "ignored", rule: nil, actions: [], reason: reason))
        }
      case .stateChanged(_, let to, let item, let source, let isUser):
        if let last = states.indices.last { states[last].to = report.time }
        states.append(StateBand(state: to, from: report.time, to: durationSeconds))
        if let item { items.append(Self.item(item, at: report.time, source: source, isUser: isUser)) }
      case .nowPlaying(let item, let source, let isUser):
        items.append(Self.item(item, at: report.time, source: source, isUser: isUser))
      case .stinger(let name, let item):
        stingers.append(Self.item(item, at: report.time, source: name, isUser: false))
      default:
        break
      }
    }
  }

  private static func item(_ item: MediaItem, at time: Double, source: String?, isUser: Bool) -> Item {
    Item(
      at: time, title: item.title ?? item.assetURL.deletingPathExtension().lastPathComponent,
      file: item.assetURL.lastPathComponent, source: source, userMusic: isUser)
  }

  /// The timeline as JSON (for `--timeline`).
  public func jsonData() throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    return try encoder.encode(self)
  }
}
