import Foundation
import Leitmotif

/// `leitmotif-bench queue`: how fast an offline engine renders a queue that crossfades from item
/// to item, against decoding the same items and nothing else.
///
/// Two paths, each over the same four Ogg Vorbis files, repeated in turn (decode, queue, decode,
/// queue, ...) so that slow drift of the machine falls on both alike; the medians are compared
/// (see `SpeedComparison` for why):
/// - decode: `DecodePath.engineDecode` on each file in turn (`AudioFile.openDecoder` +
///   `readFrames`, 4096 frames a read, into one reused buffer): the decoding the queue cannot avoid.
/// - queue: an offline `AudioEngine` at 48 kHz rendering 1024 frames a call into memory, with a
///   `QueuePlayer` over the four items and an equal-power crossfade between each two, until the
///   player stops at the end of the queue. On top of the decoding: the decode-ahead threads,
///   OpenAL mixing and resampling 44.1 kHz to 48 kHz, the crossfades' second voice.
/// - queue at the files' rate: the same at 44.1 kHz, the rate `QueueRenderer` and `leitmotif
///   render` pick by default (the first file's): no resampling. Side by side with the 48 kHz row
///   it shows what resampling costs (libsoxr's HQ filter costs about four fifths of what decoding
///   the Vorbis does).
///
/// Speed is seconds of audio per wall second: for decode, the files' length; for the queue, the
/// length of what it rendered, which is shorter by the crossfades' overlap (three crossfades of
/// `fadeSeconds` each). The goal is on the ratio of those speeds, so the overlap counts against
/// the queue. An offline render decodes on threads of its own (one per voice) while the caller
/// mixes, so it may use more than one core: the CPU columns show the process's CPU time beside.
struct QueueBenchmark {
  struct Options {
    var rounds = 5
    var useCache = true
    /// The offline engine's rate and the crossfade's length: the goal is for the defaults; other
    /// values are for experiments (44100: no resampling; a fade of 0: gapless joins on one voice).
    var sampleRate = 48_000
    var fadeSeconds = 3.0

    init() {}

    init(parsing arguments: [String]) throws {
      var rest = arguments[...]
      while let argument = rest.popFirst() {
        switch argument {
        case "--rounds":
          guard let text = rest.popFirst(), let number = Int(text), number > 0 else {
            throw UsageError(description: "--rounds needs a positive whole number")
          }
          rounds = number
        case "--sample-rate":
          guard let text = rest.popFirst(), let number = Int(text), number > 0 else {
            throw UsageError(description: "--sample-rate needs a positive whole number")
          }
          sampleRate = number
        case "--fade":
          guard let text = rest.popFirst(), let number = Double(text), number >= 0, number.isFinite else {
            throw UsageError(description: "--fade needs a number of seconds, 0 or more")
          }
          fadeSeconds = number
        case "--no-cache": useCache = false
        default: throw UsageError(description: "unknown option \"\(argument)\"")
        }
      }
    }
  }

  /// The four items: 7 minutes together, about half a second of decoding per round here.
  static let itemMinutes = [1.0, 1.5, 2.0, 2.5]
  static let renderFrames = 1024
  /// The goal (issue 12): the queue renders at least 0.9 times as fast as its items decode.
  static let goal = 0.9

  enum Path: CaseIterable {
    case decode, queue, queueAtFileRate

    var label: String {
      switch self {
      case .decode: return "decode only (openDecoder + readFrames)"
      case .queue: return "queue render (offline, crossfades)"
      case .queueAtFileRate: return "the same at the files' rate (no resampling)"
      }
    }
  }

  struct Failure: Error, CustomStringConvertible {
    var description: String
  }

  /// What one queue render did besides taking time.
  struct RenderFacts {
    var frames: Int64
    var crossfades: Int
    var underruns: Int
    var diagnostics: [String]
  }

  let options: Options

  func run() throws {
    let files = try BenchFiles(useCache: options.useCache)
    progress("files in \(files.directory)")
    let paths = try Self.itemMinutes.map { try files.vorbis(minutes: $0, quality: DecodeBenchmark.vorbisQuality) }
    let fade = try Transition(duration: options.fadeSeconds, curve: .equalPower)
    let sampleRate = options.sampleRate

    let loadAtStart = loadAverage()
    progress("warming up: decoding every item once")
    let decodedFrames = try Self.decodeAll(paths)
    let itemSeconds = Double(decodedFrames) / Double(BenchFiles.format.sampleRate)
    var times: [Path: [Double]] = [:]
    var cpuTimes: [Path: [Double]] = [:]
    var facts: [Path: RenderFacts] = [:]
    // At the files' own rate only when the queue row resamples.
    let measured = Path.allCases.filter { $0 != .queueAtFileRate || sampleRate != BenchFiles.format.sampleRate }
    for round in 1...options.rounds {
      for path in measured {
        let stopwatch = Stopwatch()
        switch path {
        case .decode:
          let frames = try Self.decodeAll(paths)
          guard frames == decodedFrames else {
            throw Failure(description: "decoding gave \(frames) frames, then \(decodedFrames)")
          }
        case .queue, .queueAtFileRate:
          let rate = path == .queue ? sampleRate : BenchFiles.format.sampleRate
          let rendered = try Self.renderQueue(paths, fade: fade, sampleRate: rate, itemSeconds: itemSeconds)
          if let before = facts[path], before.frames != rendered.frames {
            throw Failure(description: "the queue rendered \(rendered.frames) frames, before \(before.frames)")
          }
          facts[path] = rendered
        }
        let seconds = stopwatch.seconds
        times[path, default: []].append(seconds)
        cpuTimes[path, default: []].append(stopwatch.cpuSeconds)
        progress(String(format: "round %d/%d  %@: %.3f s", round, options.rounds, path.label, seconds))
      }
    }
    guard let queueFacts = facts[.queue] else { return }
    let queueSeconds = Double(queueFacts.frames) / Double(options.sampleRate)
    var audioSeconds: [Path: Double] = [.decode: itemSeconds, .queue: queueSeconds]
    if let native = facts[.queueAtFileRate] {
      audioSeconds[.queueAtFileRate] = Double(native.frames) / Double(BenchFiles.format.sampleRate)
    }

    var table = TextTable(
      [
        "path", "audio", "median", "min–max", "× real time", "ratio to decode", "goal", "result", "CPU median",
        "CPU ratio",
      ],
      rightAligned: [1, 2, 3, 4, 5, 8, 9])
    let decodeSpeed = itemSeconds / (times[.decode]?.median ?? .nan)
    let decodeCPUSpeed = itemSeconds / (cpuTimes[.decode]?.median ?? .nan)
    for path in measured {
      let pathTimes = times[path] ?? []
      let median = pathTimes.median ?? .nan
      let cpuMedian = cpuTimes[path]?.median ?? .nan
      let speed = audioSeconds[path]! / median
      let ratio = speed / decodeSpeed
      // The goal is for the default setup; other rates and fades are experiments.
      let isGoalPath =
        path != .decode && options.sampleRate == Options().sampleRate
        && options.fadeSeconds == Options().fadeSeconds
      table.add([
        path.label,
        String(format: "%.1f s", audioSeconds[path]!),
        String(format: "%.3f s", median),
        String(format: "%.3f–%.3f", pathTimes.min() ?? .nan, pathTimes.max() ?? .nan),
        String(format: "%.0f×", speed),
        String(format: "%.3f", ratio),
        isGoalPath ? String(format: "≥ %.2f", Self.goal) : "",
        isGoalPath ? (ratio >= Self.goal ? "PASS" : "BELOW GOAL") : "",
        String(format: "%.3f s", cpuMedian),
        String(format: "%.3f", (audioSeconds[path]! / cpuMedian) / decodeCPUSpeed),
      ])
    }
    let timeRatio = (times[.decode]?.median ?? .nan) / (times[.queue]?.median ?? .nan)
    let expectedSeconds = itemSeconds - Double(Self.itemMinutes.count - 1) * options.fadeSeconds
    var lines = [
      "Offline render of a queue with crossfades against decoding its items: "
        + Self.itemMinutes.map { String(format: "%g", $0) }.joined(separator: ", ")
        + " min of Ogg Vorbis q\(String(format: "%.1f", DecodeBenchmark.vorbisQuality)), 44.1 kHz stereo.",
      "Queue: AudioEngine(output: .offline(sampleRate: \(options.sampleRate), renderFrames: \(Self.renderFrames))), "
        + "QueuePlayer, \(String(format: "%g", options.fadeSeconds)) s equal-power crossfades, render(into:frameCount:) until it stops.",
      "Median of \(options.rounds) interleaved rounds (decode, queue, decode, ...), wall time, engine and files opened "
        + "included. × real time = audio seconds / wall seconds;",
      "ratio to decode = the queue's × real time / decode's, judged on wall time. CPU columns: the same runs in process CPU time.",
      "Load average at the start: \(loadAtStart).",
      "",
      table.render(),
      "",
      String(
        format: "the queue rendered %.3f s (items %.3f s − %d × %g s of overlap = %.3f s); %d crossfades, %d underruns",
        queueSeconds, itemSeconds, Self.itemMinutes.count - 1, options.fadeSeconds, expectedSeconds,
        queueFacts.crossfades, queueFacts.underruns),
      String(format: "time to get through the same items: decode time / queue time = %.3f", timeRatio),
    ]
    lines += facts.values.flatMap(\.diagnostics).map { "note: the engine said \($0)" }
    print(lines.joined(separator: "\n"))
  }

  /// Decodes every file once with the engine's decoder; the frames of all together.
  static func decodeAll(_ paths: [String]) throws -> Int64 {
    try paths.reduce(0) { $0 + (try DecodePath.engineDecode(path: $1)) }
  }

  /// Renders the queue of `paths` until the player stops after its last item.
  static func renderQueue(_ paths: [String], fade: Transition, sampleRate: Int, itemSeconds: Double) throws
    -> RenderFacts
  {
    let diagnostics = DiagnosticLog()
    let engine = try AudioEngine(
      output: .offline(sampleRate: sampleRate, renderFrames: renderFrames), diagnostics: diagnostics.record)
    let player = QueuePlayer(engine: engine)
    player.transition = fade
    try player.setQueue(with: paths.map { MediaItem(path: $0) })
    let transitions = TransitionLog()
    player.addObserver { event in
      if case .transitionStarted(_, _, let transition) = event { transitions.record(transition) }
    }
    player.play()
    // A queue that never stops (a bug) fails the bench instead of hanging it.
    let limitFrames = Int64((itemSeconds + 60) * Double(sampleRate))
    let buffer = UnsafeMutablePointer<Float>.allocate(capacity: renderFrames * 2)
    defer { buffer.deallocate() }
    var frames: Int64 = 0
    while player.playbackState != .stopped {
      engine.render(into: buffer, frameCount: renderFrames)
      frames += Int64(renderFrames)
      guard frames < limitFrames else {
        throw Failure(description: "the queue still played after \(frames) frames (items: \(itemSeconds) s)")
      }
    }
    player.waitForNotifications()
    return RenderFacts(
      frames: frames, crossfades: transitions.started(from: 0, seconds: .infinity).crossfades,
      underruns: engine.underrunCount, diagnostics: diagnostics.lines)
  }
}
