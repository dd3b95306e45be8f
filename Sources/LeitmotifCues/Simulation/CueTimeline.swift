import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

/// What happened in a simulated run, for people and for tests: each event and what the director
/// did about it, the music states in time, the items that played, and each voice's gain sampled
/// over time. `jsonData()` writes it for `--timeline`; `lines` is the printed timeline.
public struct CueTimeline: Sendable, Codable {
  /// One event of the script and what the director did about it.
  public struct Event: Sendable, Codable {
    /// When it was posted, in seconds of the run.
    public var at: Double
    /// The cue's name.
    public var cue: String
    /// The payload, each value as the game posted it (a number, a string or a boolean; in the
    /// JSON, a JSON number, string or boolean).
    public var payload: [String: CueValue]
    /// "fired" or "ignored".
    public var outcome: String
    /// The rule that fired (nil when none did).
    public var rule: String?
    /// What the rule did, one entry per action.
    public var actions: [String]
    /// Why nothing happened, when nothing did.
    public var reason: String?
  }
  /// A stretch of time in which one state's music was heard (from the moment the director
  /// started it; a crossfade overlaps the next band's start).
  public struct StateBand: Sendable, Codable {
    /// The state's name.
    public var state: String
    /// When its music started, in seconds of the run.
    public var from: Double
    /// When the next state's music started (or the run ended).
    public var to: Double
  }
  /// An item (or a stinger) that started playing.
  public struct Item: Sendable, Codable {
    /// When it started, in seconds of the run.
    public var at: Double
    /// Its title tag, else its file name.
    public var title: String
    /// Its file.
    public var file: String
    /// The cue file's source it came from (nil: not queued by the director).
    public var source: String?
    /// Whether it is one of the player's own songs.
    public var userMusic: Bool
  }
  /// Voice gains at one moment: slot number → gain (only voices in use).
  public struct GainSample: Sendable, Codable {
    /// When the gains were sampled, in seconds of the run.
    public var at: Double
    /// Slot number → the voice's gain (0...1).
    public var gains: [String: Float]
    /// Slot number → what the voice plays, where the director knows (its title; stingers are
    /// marked "stinger: "). A voice fading out keeps the label it had.
    public var labels: [String: String]?
  }

  /// A value the picture draws as a lane of its own over time: a game parameter (in its own
  /// range, `minimum` to `maximum`), or the music's low-pass filter (0 to 1; 1 is open).
  public struct ValueLane: Sendable, Codable {
    public var name: String
    public var minimum: Double
    public var maximum: Double
    /// `[seconds, value]` where the value changed (and the first sample).
    public var points: [[Double]]
  }

  /// The run's sample rate, in Hz.
  public var sampleRate: Int
  /// The run's length, in seconds.
  public var durationSeconds: Double
  /// Every event of the script, in order.
  public var events: [Event] = []
  /// The states heard, in order.
  public var states: [StateBand] = []
  /// The music items that started, in order.
  public var items: [Item] = []
  /// The stingers that played, in order.
  public var stingers: [Item] = []
  /// The voices' gains over time.
  public var gains: [GainSample] = []
  /// The parameters and the music's low-pass filter over time (absent from older timelines).
  public var lanes: [ValueLane]? = nil
  /// Every report, as printed.
  public var lines: [String] = []
  /// Notes printed after the timeline (see `note(_:)`).
  public var notes: [String] = []

  /// An empty timeline of a run at `sampleRate` lasting `durationSeconds`.
  public init(sampleRate: Int, durationSeconds: Double) {
    self.sampleRate = sampleRate
    self.durationSeconds = durationSeconds
  }

  /// The state heard at `time` (the last one started at or before it).
  public func state(at time: Double) -> String? { states.last { $0.from <= time + 1e-9 }?.state }

  /// Adds a note (printed after the timeline).
  public mutating func note(_ text: String) { notes.append(text) }

  /// Samples every parameter of the cue file and the music's low-pass filter at `time`, keeping
  /// a point where a value changed (`sampleVoices` calls it).
  public mutating func sampleValues(at time: Double, director: Director, layerLevels: [(String, Float)] = []) {
    let values = director.parameterValues
    let sheet = director.sheet
    var lanes = self.lanes ?? []
    func record(_ name: String, _ value: Double, minimum: Double, maximum: Double) {
      let at = (time * 1000).rounded() / 1000
      let rounded = (value * 10_000).rounded() / 10_000
      if let index = lanes.firstIndex(where: { $0.name == name }) {
        if lanes[index].points.last?.last != rounded { lanes[index].points.append([at, rounded]) }
      } else {
        lanes.append(ValueLane(name: name, minimum: minimum, maximum: maximum, points: [[at, rounded]]))
      }
    }
    for spec in sheet.parameters {
      if let value = values[spec.name] { record(spec.name, value, minimum: spec.minimum, maximum: spec.maximum) }
    }
    record(Self.lowPassLane, Double(director.musicLowPass), minimum: 0, maximum: 1)
    // The tempo's lane from its first change on (most cue files never change it).
    if director.musicTempo != 1 || lanes.contains(where: { $0.name == Self.tempoLane }) {
      record(Self.tempoLane, Double(director.musicTempo), minimum: 0.5, maximum: 2)
    }
    for (name, level) in layerLevels { record(Self.layerLanePrefix + name, Double(level), minimum: 0, maximum: 1) }
    // A layer of a state no longer heard is silent (its lane drops to 0, not stays where it was).
    let heard = Set(layerLevels.map { Self.layerLanePrefix + $0.0 })
    for lane in lanes where lane.name.hasPrefix(Self.layerLanePrefix) && !heard.contains(lane.name) {
      record(lane.name, 0, minimum: 0, maximum: 1)
    }
    self.lanes = lanes
  }

  /// The lane of the music's low-pass filter.
  public static let lowPassLane = "music low-pass"
  /// The lane of the music's tempo (speed without pitch, 0.5 to 2).
  public static let tempoLane = "music tempo"
  /// The start of a layer's lane ("layer alert"): the level heard of that stem of the state's
  /// music, 0 to 1 (its fade times its parameter drive), while a state with it plays.
  public static let layerLanePrefix = "layer "

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
      let title =
        voice.item.title ?? FileSystemPath.displayed(voice.item.assetURL.deletingPathExtension().lastPathComponent)
      labels[String(slot)] = (voice.isStinger ? "stinger: " : "") + title
    }
    self.gains.append(
      GainSample(at: (time * 1000).rounded() / 1000, gains: gains, labels: labels.isEmpty ? nil : labels))
    let layers = director.layerSnapshot
    var levels: [(String, Float)] = []
    if let slot = layers.slot, engine.statuses.indices.contains(slot) {
      levels = layers.names.enumerated().map { ($0.element, engine.statuses[slot].layerLevel($0.offset)) }
    }
    sampleValues(at: time, director: director, layerLevels: levels)
  }

  /// Adds the director's reports: events and their outcomes, state bands, items, stingers.
  public mutating func add(reports: [DirectorReport], script: CueScript) {
    // The script's parameter changes make no report (a game may set one every frame): each is a
    // line of its own among the reports, at its time, so a ramp's effect can be read beside it.
    var sets = script.steps.compactMap { step -> (time: Double, line: String)? in
      guard case .parameter(let name, let value, let ramp) = step.kind else { return nil }
      return (step.time, Self.parameterLine(at: step.time, name: name, value: value, rampSeconds: ramp))
    }[...]
    for report in reports {
      while let next = sets.first, next.time <= report.time {
        lines.append(next.line)
        sets.removeFirst()
      }
      lines.append(report.description)
      switch report.kind {
      case .fired(let rule, let actions):
        if let event = report.event {
          events.append(
            Event(
              at: event.audioTime ?? report.time, cue: event.cue, payload: event.payload,
              outcome: "fired", rule: rule, actions: actions, reason: nil))
        }
      case .ignored(let reason):
        if let event = report.event {
          events.append(
            Event(
              at: event.audioTime ?? report.time, cue: event.cue, payload: event.payload,
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
    lines += sets.map(\.line)
  }

  /// A parameter change as the printed timeline shows it, in the reports' form.
  public static func parameterLine(at time: Double, name: String, value: Double, rampSeconds: Double) -> String {
    fixedPoint(time, decimals: 3, width: 8) + " s set \"\(name)\" to \(CueValue.number(value))"
      + (rampSeconds > 0 ? " over \(fixedPoint(rampSeconds, decimals: 3)) s" : "")
  }

  private static func item(_ item: MediaItem, at time: Double, source: String?, isUser: Bool) -> Item {
    Item(
      at: time, title: item.title ?? FileSystemPath.displayed(item.assetURL.deletingPathExtension().lastPathComponent),
      file: FileSystemPath.displayed(item.assetURL.lastPathComponent), source: source, userMusic: isUser)
  }

  /// The timeline as JSON (for `--timeline`).
  public func jsonData() throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    return try encoder.encode(self)
  }
}
