import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

#if canImport(Glibc)
  import Glibc
#endif

/// A picture of a simulated run (a `CueTimeline`), so that someone can follow a level's music
/// without listening to it: time runs across; at the top, the cues the game posted (solid lines
/// for those a rule answered, grey dashed ones for those it ignored); below them a row of bands
/// for the music states; then one lane per voice with its gain from 0 to 1 over time, coloured by
/// what it plays (bundled music, the player's own songs, stingers) and labelled wherever that
/// changes; and a time axis with a tick every 10 s (for a level of a few minutes; finer for a
/// short one). A voice that was prepared but never heard (gain 0) gets no lane; a voice fading out
/// keeps the label it had. In a browser, each cue name's tooltip gives its payload, rule, actions
/// or the reason it was ignored.
///
/// The picture is an SVG written by hand (no dependencies) and is deterministic: the same
/// timeline gives the same bytes, so a picture can be committed and compared.
///
/// Thread safety: both functions keep no state and can be called from any thread.
public enum TimelinePicture {
  /// The picture of `timeline` as a self-contained SVG document, about 1600 px wide.
  /// - Parameters:
  ///   - timeline: a simulated run, as `CueSimulation.run` returns it or `--timeline` wrote it.
  ///   - title: the first line of the picture (for example the level's name).
  /// - Returns: the SVG text (UTF-8 XML).
  public static func svg(_ timeline: CueTimeline, title: String) -> String {
    var picture = Picture(timeline: timeline)
    return picture.draw(title: title)
  }

  /// What `--timeline FILE` writes, in the demo and in `leitmotif cues simulate` alike: the
  /// timeline's data (BASE.json, `CueTimeline.jsonData()`), its picture (BASE.svg) and, where a
  /// converter exists, BASE.png, where BASE is FILE without its extension. One meaning in both
  /// tools, so `--timeline level.json` and `--timeline level.svg` give the same three files.
  /// - Returns: the files written, in that order.
  /// - Throws: the error of a file that could not be written.
  public static func write(_ timeline: CueTimeline, title: String, named path: String) throws -> [String] {
    let url = URL(fileURLWithPath: path)
    let base = url.pathExtension.isEmpty ? url : url.deletingPathExtension()
    let json = base.appendingPathExtension("json").path
    let svg = base.appendingPathExtension("svg").path
    let png = base.appendingPathExtension("png").path
    try timeline.jsonData().write(to: URL(fileURLWithPath: json))
    try Data(self.svg(timeline, title: title).utf8).write(to: URL(fileURLWithPath: svg))
    return [json, svg] + (writePNG(svgPath: svg, pngPath: png) ? [png] : [])
  }

  /// Converts an SVG file to PNG with a converter found on `PATH`: `rsvg-convert` (Debian
  /// package `librsvg2-bin`) or else ImageMagick's `convert`. Optional: the SVG is the picture;
  /// without a converter nothing happens and the result is false.
  ///
  /// Blocks until the converter exits.
  /// - Parameters:
  ///   - svgPath: the SVG file to read (from `svg(_:title:)`).
  ///   - pngPath: where the PNG goes (replaced if it exists).
  /// - Returns: true when a converter ran, exited with status 0 and the PNG exists (false too
  ///   when the converter fails, for example a `convert` that is not ImageMagick).
  public static func writePNG(svgPath: String, pngPath: String) -> Bool {
    if let converter = executable(named: "rsvg-convert") {
      return run(converter, ["--format", "png", "--output", pngPath, svgPath], output: pngPath)
    }
    if let converter = executable(named: "convert") {
      return run(converter, [svgPath, pngPath], output: pngPath)
    }
    return false
  }

  private static func executable(named name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    for folder in path.split(separator: ":") where !folder.isEmpty {
      let candidate = folder + "/" + name
      if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
  }

  /// Runs `executable` with its standard streams on /dev/null and waits for it; whether it
  /// exited with 0 and wrote `output`. Through `posix_spawn`: FoundationEssentials has no
  /// `Process`.
  private static func run(_ executable: String, _ arguments: [String], output: String) -> Bool {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for descriptor: Int32 in [0, 1, 2] {
      posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY, 0)
    }
    // argv (the program's path first, as `Process` passed it) and the environment as they are.
    let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for argument in argv { free(argument) } }
    var child = pid_t()
    guard posix_spawn(&child, executable, &actions, nil, argv, environ) == 0 else { return false }
    var status: Int32 = 0
    while waitpid(child, &status, 0) < 0 {
      guard errno == EINTR else { return false }
    }
    // Exited (not killed by a signal: WIFEXITED), with status 0 (WEXITSTATUS).
    return status & 0x7F == 0 && (status >> 8) & 0xFF == 0 && FileManager.default.fileExists(atPath: output)
  }
}

// MARK: - Drawing

/// The drawing of one picture: the layout is computed top to bottom, and the elements are
/// collected in layers (background first, text last, so that text is never hidden).
private struct Picture {
  /// Sizes in pixels.
  enum Layout {
    static let width = 1600.0
    /// Room on the left for the rows' names ("voice 2", "state").
    static let plotLeft = 140.0
    static let plotRight = width - 50
    static let cueFontSize = 11.0
    static let cueRowHeight = 15.0
    /// More rows of cue names than this and they overlap rather than push the picture down.
    static let cueRowLimit = 12
    static let stateRowHeight = 26.0
    static let laneLabelRowHeight = 13.0
    static let laneLabelRowLimit = 3
    static let lanePlotHeight = 50.0
    static let laneGap = 12.0
    /// A label is written again after a gap of this long in a lane even if it did not change.
    static let relabelGapSeconds = 2.0
  }

  /// What a voice plays, for its colour.
  enum Kind: CaseIterable {
    case bundled, user, stinger, unknown
    var colour: String {
      switch self {
      case .bundled: "#2f6fb3"
      case .user: "#9b3fb5"
      case .stinger: "#e0701c"
      case .unknown: "#8a8a8a"
      }
    }
    /// A darker shade for text on white.
    var textColour: String {
      switch self {
      case .bundled: "#1d4f85"
      case .user: "#71288a"
      case .stinger: "#a84c08"
      case .unknown: "#555555"
      }
    }
    var legend: String {
      switch self {
      case .bundled: "bundled music"
      case .user: "player's song"
      case .stinger: "stinger"
      case .unknown: "unlabelled"
      }
    }
  }

  static let stateColours = [
    "#cfe2f6", "#fde0b4", "#d5eecd", "#f6ccd5", "#e2d6f3", "#cfeeea", "#f2edbf", "#e6ddd2",
  ]
  static let fontFamily = "DejaVu Sans, Verdana, Helvetica, Arial, sans-serif"

  let timeline: CueTimeline
  let durationSeconds: Double
  var background: [String] = []
  var shapes: [String] = []
  var markers: [String] = []
  var texts: [String] = []

  init(timeline: CueTimeline) {
    self.timeline = timeline
    var end = timeline.durationSeconds.isFinite ? timeline.durationSeconds : 0
    if end <= 0 {
      end = max(
        timeline.gains.last?.at ?? 0, timeline.events.map(\.at).max() ?? 0, timeline.states.map(\.to).max() ?? 0)
    }
    durationSeconds = end > 0 ? end : 1
  }

  func x(_ seconds: Double) -> Double {
    Layout.plotLeft + max(0, min(1, seconds / durationSeconds)) * (Layout.plotRight - Layout.plotLeft)
  }

  mutating func draw(title: String) -> String {
    var y = 32.0
    texts.append(text(20, y, title, size: 20, attributes: ##"font-weight="bold" fill="#111111""##))
    y += 22
    texts.append(text(20, y, summary(), size: 12, attributes: ##"fill="#555555""##))
    y += 24
    drawLegend(y: y)
    y += 26

    let cueTop = y
    let cueBottom = cueTop + layOutCueNames(top: cueTop) + 4
    let stateTop = cueBottom
    drawStates(top: stateTop)
    var laneTop = stateTop + Layout.stateRowHeight + Layout.laneGap
    for slot in slots() {
      laneTop += drawLane(slot: slot, top: laneTop) + Layout.laneGap
    }
    for lane in valueLanes() {
      laneTop += drawValueLane(lane, top: laneTop) + Layout.laneGap
    }
    let axisY = laneTop - Layout.laneGap + 6
    drawAxis(y: axisY, gridTop: stateTop)
    drawCueLines(bottom: axisY)
    y = axisY + 34
    for note in timeline.notes {
      texts.append(text(20, y, "note: " + note, size: 11, attributes: ##"fill="#a03030""##))
      y += 15
    }
    let height = (y + 4).rounded(.up)

    var document = """
      <?xml version="1.0" encoding="UTF-8"?>
      <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(Layout.width))" height="\(Int(height))" \
      viewBox="0 0 \(Int(Layout.width)) \(Int(height))" font-family="\(Self.fontFamily)">

      """
    document += "<title>\(escaped(title))</title>\n"
    document += "<rect x=\"0\" y=\"0\" width=\"\(Int(Layout.width))\" height=\"\(Int(height))\" fill=\"#ffffff\"/>\n"
    for layer in [background, shapes, markers, texts] {
      for element in layer { document += element + "\n" }
    }
    document += "</svg>\n"
    return document
  }

  // MARK: Header

  func summary() -> String {
    let fired = timeline.events.filter { $0.outcome == "fired" }.count
    let ignored = timeline.events.count - fired
    var parts = [
      "\(clock(durationSeconds)) at \(timeline.sampleRate) Hz",
      "\(timeline.events.count) cue\(timeline.events.count == 1 ? "" : "s") (\(fired) fired, \(ignored) ignored)",
      "\(Set(timeline.states.map(\.state)).count) states entered \(timeline.states.count) time\(timeline.states.count == 1 ? "" : "s")",
      "\(timeline.stingers.count) stinger\(timeline.stingers.count == 1 ? "" : "s")",
    ]
    let userSongs = Set(timeline.items.filter(\.userMusic).map(\.title)).count
    if userSongs > 0 { parts.append("\(userSongs) of the player's song\(userSongs == 1 ? "" : "s")") }
    return parts.joined(separator: "  ·  ")
  }

  mutating func drawLegend(y: Double) {
    var x = 20.0
    for kind in Kind.allCases where kind != .unknown || hasUnlabelledVoices() {
      shapes.append(
        "<rect x=\"\(fixed(x))\" y=\"\(fixed(y - 10))\" width=\"16\" height=\"11\" fill=\"\(kind.colour)\" "
          + "fill-opacity=\"0.45\" stroke=\"\(kind.colour)\" stroke-width=\"1.5\"/>")
      texts.append(text(x + 22, y, kind.legend, size: 12, attributes: ##"fill="#333333""##))
      x += 22 + textWidth(kind.legend, size: 12) + 24
    }
    for (fired, label) in [(true, "cue fired"), (false, "cue ignored")] {
      markers.append(
        "<line x1=\"\(fixed(x + 8))\" y1=\"\(fixed(y - 12))\" x2=\"\(fixed(x + 8))\" y2=\"\(fixed(y + 3))\" "
          + cueLineStyle(fired: fired) + "/>")
      texts.append(text(x + 16, y, label, size: 12, attributes: ##"fill="#333333""##))
      x += 16 + textWidth(label, size: 12) + 24
    }
    let explanation = "each lane is one voice: its height is the gain, 0 to 1"
    texts.append(text(x + 10, y, explanation, size: 12, attributes: ##"fill="#666666" font-style="italic""##))
  }

  func hasUnlabelledVoices() -> Bool {
    slots().contains { slot in segments(slot: slot).contains { $0.label == nil } }
  }

  // MARK: Cues

  /// Where each cue's name goes: its row (0 is the top one) and whether it is written to the left
  /// of its line (near the right edge). Names are staggered into rows so that none overlap.
  struct CueName {
    var event: CueTimeline.Event
    var row: Int
    var leftOfLine: Bool
  }
  var cueNames: [CueName] = []
  var cueTop = 0.0

  /// Places the cue names and returns the height they take.
  mutating func layOutCueNames(top: Double) -> Double {
    cueTop = top
    let events = timeline.events.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }
      .map(\.element)
    var spans: [(start: Double, end: Double)] = []
    var leftOfLine: [Bool] = []
    for event in events {
      let lineX = x(event.at)
      let width = textWidth(event.cue, size: Layout.cueFontSize)
      let left = lineX + 3 + width > Layout.width - 6
      spans.append(left ? (lineX - 3 - width, lineX) : (lineX, lineX + 3 + width))
      leftOfLine.append(left)
    }
    let rows = Self.rows(for: spans, limit: Layout.cueRowLimit, gap: 6)
    cueNames = events.indices.map { CueName(event: events[$0], row: rows[$0], leftOfLine: leftOfLine[$0]) }
    let rowCount = (rows.max() ?? -1) + 1
    for name in cueNames {
      let lineX = x(name.event.at)
      let baseline = top + Double(name.row + 1) * Layout.cueRowHeight - 4
      let fired = name.event.outcome == "fired"
      var attributes =
        fired ? ##"fill="#222222" font-weight="bold""## : ##"fill="#8a8a8a" font-style="italic""##
      if name.leftOfLine { attributes += ##" text-anchor="end""## }
      let textX = name.leftOfLine ? lineX - 3 : lineX + 3
      texts.append(
        text(
          textX, baseline, name.event.cue, size: Layout.cueFontSize, attributes: attributes, halo: true,
          tooltip: tooltip(name.event)))
    }
    return Double(max(rowCount, 1)) * Layout.cueRowHeight
  }

  func tooltip(_ event: CueTimeline.Event) -> String {
    var lines = ["\(event.cue) at \(fixed(event.at, decimals: 2)) s: \(event.outcome)"]
    if !event.payload.isEmpty {
      lines.append(
        "payload: "
          + event.payload.keys.sorted().map { "\($0)=\(event.payload[$0].map { "\($0)" } ?? "")" }.joined(
            separator: ", "))
    }
    if let rule = event.rule { lines.append("rule: \(rule)") }
    if !event.actions.isEmpty { lines.append("did: " + event.actions.joined(separator: "; ")) }
    if let reason = event.reason { lines.append("why: \(reason)") }
    return lines.joined(separator: "\n")
  }

  func cueLineStyle(fired: Bool) -> String {
    fired
      ? ##"stroke="#333333" stroke-width="1.2" stroke-opacity="0.8""##
      : ##"stroke="#9a9a9a" stroke-width="1.2" stroke-dasharray="4 3""##
  }

  /// The cue lines run from under each name down to the time axis (drawn over the lanes, under
  /// all text).
  mutating func drawCueLines(bottom: Double) {
    for name in cueNames {
      let lineX = fixed(x(name.event.at))
      let from = cueTop + Double(name.row) * Layout.cueRowHeight + 1
      markers.append(
        "<line x1=\"\(lineX)\" y1=\"\(fixed(from))\" x2=\"\(lineX)\" y2=\"\(fixed(bottom))\" "
          + cueLineStyle(fired: name.event.outcome == "fired") + "/>")
    }
  }

  // MARK: States

  mutating func drawStates(top: Double) {
    texts.append(
      text(
        Layout.plotLeft - 10, top + Layout.stateRowHeight / 2 + 4, "state", size: 12,
        attributes: ##"fill="#333333" font-weight="bold" text-anchor="end""##))
    let names = Set(timeline.states.map(\.state)).sorted()
    var labelEnd = -Double.infinity
    for band in timeline.states {
      let colour = Self.stateColours[(names.firstIndex(of: band.state) ?? 0) % Self.stateColours.count]
      let left = x(band.from)
      let right = max(left + 1, x(min(band.to, durationSeconds)))
      shapes.append(
        "<rect x=\"\(fixed(left))\" y=\"\(fixed(top))\" width=\"\(fixed(right - left))\" "
          + "height=\"\(fixed(Layout.stateRowHeight))\" fill=\"\(colour)\" stroke=\"#ffffff\" stroke-width=\"1\"/>")
      // A name that does not fit its band runs on to the right, after the previous name.
      let labelX = max(left + 5, labelEnd + 6)
      texts.append(
        text(
          labelX, top + Layout.stateRowHeight / 2 + 4, band.state, size: 12,
          attributes: ##"fill="#222222""##,
          tooltip: "\(band.state): \(fixed(band.from, decimals: 2)) s to \(fixed(band.to, decimals: 2)) s"))
      labelEnd = labelX + textWidth(band.state, size: 12)
    }
  }

  // MARK: Voices

  /// The voices that were ever heard (a gain above 0), in slot order.
  func slots() -> [String] {
    var slots = Set<String>()
    for sample in timeline.gains { slots.formUnion(sample.gains.filter { $0.value > 0 }.keys) }
    return slots.sorted { (Int($0) ?? Int.max, $0) < (Int($1) ?? Int.max, $1) }
  }

  /// A stretch in which one voice sounded with one label.
  struct Segment {
    var label: String?
    var points: [(seconds: Double, gain: Double)]
  }

  /// The voice's stretches of sound. A voice that is prepared but silent (gain 0: a follower
  /// waiting for its crossfade) is not drawn; a voice that loses its label while it sounds (one
  /// fading out) keeps the label it had.
  func segments(slot: String) -> [Segment] {
    var segments: [Segment] = []
    var open = false
    for sample in timeline.gains {
      guard let gain = sample.gains[slot], gain > 0 else {
        open = false
        continue
      }
      let label = sample.labels?[slot] ?? (open ? segments[segments.count - 1].label : nil)
      let point = (seconds: sample.at, gain: Double(min(1, gain)))
      if open, segments[segments.count - 1].label == label {
        segments[segments.count - 1].points.append(point)
      } else {
        segments.append(Segment(label: label, points: [point]))
        open = true
      }
    }
    return segments
  }

  func kind(of label: String?) -> Kind {
    guard let label else { return .unknown }
    if label.hasPrefix("stinger: ") || timeline.stingers.contains(where: { $0.title == label }) { return .stinger }
    if timeline.items.contains(where: { $0.title == label && $0.userMusic }) { return .user }
    return .bundled
  }

  /// Draws one voice's lane and returns its height.
  mutating func drawLane(slot: String, top: Double) -> Double {
    let segments = segments(slot: slot)
    // Labels where what the voice plays changes (or it starts again after a pause).
    var labelled: [(segment: Int, text: String)] = []
    var previousLabel: String?
    var previousEnd = -Double.infinity
    for (index, segment) in segments.enumerated() {
      guard let label = segment.label, let first = segment.points.first else { continue }
      if label != previousLabel || first.seconds - previousEnd > Layout.relabelGapSeconds {
        labelled.append((index, label))
      }
      previousLabel = label
      previousEnd = segment.points.last?.seconds ?? first.seconds
    }
    let spans = labelled.map { entry -> (start: Double, end: Double) in
      let width = textWidth(entry.text, size: 11)
      // Near the right edge a label moves left so that it stays in the picture.
      let start = min(x(segments[entry.segment].points[0].seconds) + 2, Layout.width - 6 - width)
      return (start, start + width)
    }
    let rows = Self.rows(for: spans, limit: Layout.laneLabelRowLimit, gap: 8)
    let labelHeight = Double((rows.max() ?? 0) + 1) * Layout.laneLabelRowHeight + 3
    let plotTop = top + labelHeight
    let baseline = plotTop + Layout.lanePlotHeight

    texts.append(
      text(
        Layout.plotLeft - 10, plotTop + Layout.lanePlotHeight / 2 + 4, "voice \(slot)", size: 12,
        attributes: ##"fill="#333333" font-weight="bold" text-anchor="end""##))
    texts.append(
      text(Layout.plotLeft - 4, plotTop + 4, "1", size: 9, attributes: ##"fill="#999999" text-anchor="end""##))
    texts.append(
      text(Layout.plotLeft - 4, baseline, "0", size: 9, attributes: ##"fill="#999999" text-anchor="end""##))
    background.append(
      "<g class=\"lane\" data-slot=\"\(escaped(slot))\"><rect x=\"\(fixed(Layout.plotLeft))\" y=\"\(fixed(plotTop))\" "
        + "width=\"\(fixed(Layout.plotRight - Layout.plotLeft))\" height=\"\(fixed(Layout.lanePlotHeight))\" "
        + "fill=\"#f5f6f8\"/><line x1=\"\(fixed(Layout.plotLeft))\" y1=\"\(fixed(plotTop))\" "
        + "x2=\"\(fixed(Layout.plotRight))\" y2=\"\(fixed(plotTop))\" stroke=\"#dddddd\" stroke-dasharray=\"2 3\"/>"
        + "<line x1=\"\(fixed(Layout.plotLeft))\" y1=\"\(fixed(baseline))\" x2=\"\(fixed(Layout.plotRight))\" "
        + "y2=\"\(fixed(baseline))\" stroke=\"#bbbbbb\"/></g>")

    for segment in segments {
      let points = Self.simplified(segment.points)
      guard let first = points.first, let last = points.last else { continue }
      let kind = kind(of: segment.label)
      let top = points.map { "\(fixed(x($0.seconds))),\(fixed(baseline - $0.gain * Layout.lanePlotHeight))" }
      // A single sample still gets a visible width.
      let endX = max(x(last.seconds), x(first.seconds) + 1)
      let area =
        "M\(fixed(x(first.seconds))),\(fixed(baseline)) L" + top.joined(separator: " L")
        + (points.count == 1 ? " L\(fixed(endX)),\(fixed(baseline - first.gain * Layout.lanePlotHeight))" : "")
        + " L\(fixed(endX)),\(fixed(baseline)) Z"
      shapes.append("<path d=\"\(area)\" fill=\"\(kind.colour)\" fill-opacity=\"0.35\" stroke=\"none\"/>")
      shapes.append(
        "<polyline points=\"\(top.joined(separator: " "))\" fill=\"none\" stroke=\"\(kind.colour)\" "
          + "stroke-width=\"1.6\" stroke-linejoin=\"round\"/>")
    }
    for (index, entry) in labelled.enumerated() {
      let kind = kind(of: entry.text)
      let baselineY = top + Double(rows[index] + 1) * Layout.laneLabelRowHeight
      texts.append(
        text(
          spans[index].start, baselineY, entry.text, size: 11, attributes: "fill=\"\(kind.textColour)\"",
          halo: true))
    }
    return labelHeight + Layout.lanePlotHeight
  }

  /// The parameter lanes (every parameter of the cue file), then the music's low-pass filter's
  /// and its tempo's when they moved at all, then each layer's level (a state's stems, as heard).
  func valueLanes() -> [CueTimeline.ValueLane] {
    (timeline.lanes ?? []).filter { lane in
      (lane.name != CueTimeline.lowPassLane && lane.name != CueTimeline.tempoLane)
        || lane.points.contains { $0.count == 2 && $0[1] != 1 }
    }
  }

  /// Draws a parameter's (or the filter's, or a layer's) value over time as a line in its range, and returns
  /// the lane's height.
  mutating func drawValueLane(_ lane: CueTimeline.ValueLane, top: Double) -> Double {
    let height = Layout.lanePlotHeight * 0.6
    let baseline = top + height
    let span = max(1e-9, lane.maximum - lane.minimum)
    func y(_ value: Double) -> Double { baseline - max(0, min(1, (value - lane.minimum) / span)) * height }
    let isFilter = lane.name == CueTimeline.lowPassLane
    // Parameters green, the filter and the tempo purple, layers (a stem's level heard) orange.
    let colour =
      isFilter || lane.name == CueTimeline.tempoLane
      ? "#7a5195" : lane.name.hasPrefix(CueTimeline.layerLanePrefix) ? "#c05a00" : "#2f6f4f"
    texts.append(
      text(
        Layout.plotLeft - 10, top + height / 2 + 4,
        isFilter ? "low-pass" : lane.name == CueTimeline.tempoLane ? "tempo" : lane.name, size: 12,
        attributes: ##"fill="#333333" font-weight="bold" text-anchor="end""##))
    texts.append(
      text(
        Layout.plotLeft - 4, top + 4, Self.number(lane.maximum), size: 9,
        attributes: ##"fill="#999999" text-anchor="end""##))
    texts.append(
      text(
        Layout.plotLeft - 4, baseline, Self.number(lane.minimum), size: 9,
        attributes: ##"fill="#999999" text-anchor="end""##))
    background.append(
      "<g class=\"value-lane\" data-name=\"\(escaped(lane.name))\"><rect x=\"\(fixed(Layout.plotLeft))\" "
        + "y=\"\(fixed(top))\" width=\"\(fixed(Layout.plotRight - Layout.plotLeft))\" height=\"\(fixed(height))\" "
        + "fill=\"#f7f8f5\"/></g>")
    // A value holds until the next point (a step), then ramps were sampled point by point.
    var path: [String] = []
    for (index, point) in lane.points.enumerated() where point.count == 2 {
      if index > 0, let previous = lane.points[index - 1].last {
        path.append("\(fixed(x(point[0]))),\(fixed(y(previous)))")
      }
      path.append("\(fixed(x(point[0]))),\(fixed(y(point[1])))")
    }
    if let last = lane.points.last, last.count == 2 { path.append("\(fixed(x(durationSeconds))),\(fixed(y(last[1])))") }
    shapes.append(
      "<polyline points=\"\(path.joined(separator: " "))\" fill=\"none\" stroke=\"\(colour)\" stroke-width=\"1.6\" "
        + "stroke-linejoin=\"round\"/>")
    return height
  }

  /// A lane's range end: whole numbers without a point.
  static func number(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e9 ? String(Int(value)) : fixed(value, decimals: 2)
  }

  /// Drops the points inside a stretch of equal gain (a long level has thousands of samples per
  /// voice, most of them on a plateau).
  static func simplified(_ points: [(seconds: Double, gain: Double)]) -> [(seconds: Double, gain: Double)] {
    guard points.count > 2 else { return points }
    var kept = [points[0]]
    for index in 1..<(points.count - 1)
    where !(points[index - 1].gain == points[index].gain && points[index].gain == points[index + 1].gain) {
      kept.append(points[index])
    }
    kept.append(points[points.count - 1])
    return kept
  }

  // MARK: Time axis

  /// Seconds between ticks: 10 s for a level of a few minutes, finer or coarser so that there
  /// are at most 20.
  func tickSeconds() -> Double {
    for step in [1.0, 2, 5, 10, 15, 30, 60, 120, 300, 600] where durationSeconds / step <= 20 { return step }
    return 1200
  }

  mutating func drawAxis(y: Double, gridTop: Double) {
    shapes.append(
      "<line x1=\"\(fixed(Layout.plotLeft))\" y1=\"\(fixed(y))\" x2=\"\(fixed(Layout.plotRight))\" "
        + "y2=\"\(fixed(y))\" stroke=\"#444444\" stroke-width=\"1\"/>")
    let step = tickSeconds()
    var tick = 0
    while Double(tick) * step <= durationSeconds + 1e-9 {
      let seconds = Double(tick) * step
      let tickX = fixed(x(seconds))
      background.append(
        "<line x1=\"\(tickX)\" y1=\"\(fixed(gridTop))\" x2=\"\(tickX)\" y2=\"\(fixed(y))\" stroke=\"#e4e4e4\"/>")
      shapes.append(
        "<line x1=\"\(tickX)\" y1=\"\(fixed(y))\" x2=\"\(tickX)\" y2=\"\(fixed(y + 5))\" stroke=\"#444444\"/>")
      texts.append(
        text(x(seconds), y + 18, clock(seconds), size: 11, attributes: ##"fill="#333333" text-anchor="middle""##))
      tick += 1
    }
    texts.append(
      text(
        Layout.plotLeft - 24, y + 18, "time", size: 12,
        attributes: ##"fill="#333333" font-weight="bold" text-anchor="end""##))
  }

  // MARK: Helpers

  /// Assigns each span (in order) the first row where it does not overlap the row's last span;
  /// past `limit` rows, the row that is free soonest.
  static func rows(for spans: [(start: Double, end: Double)], limit: Int, gap: Double) -> [Int] {
    var rowEnds: [Double] = []
    var rows: [Int] = []
    for span in spans {
      if let free = rowEnds.firstIndex(where: { $0 + gap <= span.start }) {
        rows.append(free)
        rowEnds[free] = span.end
      } else if rowEnds.count < limit {
        rows.append(rowEnds.count)
        rowEnds.append(span.end)
      } else {
        let soonest = rowEnds.indices.min { rowEnds[$0] < rowEnds[$1] } ?? 0
        rows.append(soonest)
        rowEnds[soonest] = max(rowEnds[soonest], span.end)
      }
    }
    return rows
  }

  /// A `<text>` element; `halo` draws a white outline under the letters so that lines crossing
  /// them do not make them hard to read.
  func text(
    _ x: Double, _ y: Double, _ content: String, size: Double, attributes: String, halo: Bool = false,
    tooltip: String? = nil
  ) -> String {
    let haloAttributes =
      halo ? ##" stroke="#ffffff" stroke-width="3" stroke-linejoin="round" paint-order="stroke""## : ""
    let title = tooltip.map { "<title>\(escaped($0))</title>" } ?? ""
    return "<text x=\"\(fixed(x))\" y=\"\(fixed(y))\" font-size=\"\(fixed(size))\" \(attributes)\(haloAttributes)>"
      + "\(title)\(escaped(content))</text>"
  }

  /// An estimate of a text's width (the SVG cannot be measured without a renderer); generous,
  /// so that staggered names do not touch.
  func textWidth(_ text: String, size: Double) -> Double { Double(text.count) * size * 0.62 }

  /// A time as m:ss.
  func clock(_ seconds: Double) -> String {
    let whole = Int(seconds.rounded())
    let remainder = whole % 60
    return "\(whole / 60):\(remainder < 10 ? "0" : "")\(remainder)"
  }
}

/// A number with a fixed count of decimals (the same text on every run and platform).
private func fixed(_ value: Double, decimals: Int = 1) -> String {
  let text = fixedPoint(value.isFinite ? value : 0, decimals: decimals)
  return text.hasPrefix("-") && Double(text) == 0 ? String(text.dropFirst()) : text
}

/// `text` as XML character data or attribute value: markup characters as entities, and the
/// control characters XML 1.0 does not allow as spaces.
private func escaped(_ text: String) -> String {
  var result = ""
  result.reserveCapacity(text.utf8.count)
  for scalar in text.unicodeScalars {
    switch scalar {
    case "&": result += "&amp;"
    case "<": result += "&lt;"
    case ">": result += "&gt;"
    case "\"": result += "&quot;"
    case "'": result += "&apos;"
    case "\t", "\n", "\r": result.unicodeScalars.append(scalar)
    default:
      let value = scalar.value
      if value < 0x20 || value == 0xFFFE || value == 0xFFFF {
        result += " "
      } else {
        result.unicodeScalars.append(scalar)
      }
    }
  }
  return result
}
