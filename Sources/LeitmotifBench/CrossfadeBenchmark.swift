import Foundation
import Leitmotif
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `leitmotif-bench crossfade`: the CPU a real-time engine costs per second of audio while a queue
/// crossfades back and forth, beside an idle engine and one voice playing.
///
/// Three cases, one after the other in one run, each on a fresh `AudioEngine(output: .headless)`:
/// the headless device mixes in real time on the engine's streaming thread and discards the
/// sound, so the whole engine works as it would on a sound card, and a second of wall clock is a
/// second of audio.
/// - idle: the engine alone, nothing playing: the floor every game pays.
/// - one voice: a `QueuePlayer` over the two items with gapless transitions and repeat all: one
///   voice plays all the time (the items join on it).
/// - two voices: the same queue with an equal-power crossfade, `skipToNextItem()` every
///   `skipEverySeconds`: each skip opens the other item and crossfades to it, so two voices
///   are heard for `fadeSeconds` of every `skipEverySeconds`.
///
/// CPU time is the whole process's (getrusage RUSAGE_SELF, user + kernel, every thread), so
/// nothing the engine does can hide from it; the goal is judged on it. The engine's threads
/// alone are the process minus the bench's own thread (RUSAGE_THREAD), which only sleeps, polls
/// `voiceCount` and skips; every other thread in the process is the library's.
struct CrossfadeBenchmark {
  struct Options {
    /// Wall seconds measured per case (also seconds of audio: the device runs in real time).
    var seconds = 60.0
    var useCache = true

    init() {}

    init(parsing arguments: [String]) throws {
      var rest = arguments[...]
      while let argument = rest.popFirst() {
        switch argument {
        case "--seconds":
          guard let text = rest.popFirst(), let number = Double(text), number > 0, number.isFinite else {
            throw UsageError(description: "--seconds needs a positive number")
          }
          seconds = number
        case "--no-cache": useCache = false
        default: throw UsageError(description: "unknown option \"\(argument)\"")
        }
      }
    }
  }

  /// Lengths of the two items: long enough that a skip every few seconds never reaches an end
  /// (each skip starts the other item from its beginning), and different, so they are two files.
  static let itemMinutes = [0.5, 0.6]
  /// The crossfade, and how often a skip starts one: two voices are heard 3 s of every 3.5 s
  /// (86%), and one crossfade ends before the next begins, so no third voice is heard.
  static let fadeSeconds = 3.0
  static let skipEverySeconds = 3.5
  /// Each case plays this long before the measurement starts, so that opening the device and the
  /// first file (done once per game, not per second) stays out of it.
  static let warmUpSeconds = 1.0
  /// How often the bench samples `voiceCount` (and checks whether a skip is due).
  /// Every poll wakes the bench's thread, which counts in the process's CPU time: 20 a second
  /// cost about 0.0006 CPU s per s here (100 cost 0.003, a third of the goal).
  static let pollSeconds = 0.05
  /// The goal: two voices crossfading cost at most 1% of one core.
  static let goalCPUPerAudioSecond = 0.01

  enum Case: CaseIterable {
    case idle, oneVoice, crossfading

    var label: String {
      switch self {
      case .idle: return "idle engine, nothing playing"
      case .oneVoice: return "one voice (gapless queue)"
      case .crossfading: return "two voices crossfading"
      }
    }
  }

  struct Measurement {
    var kind: Case
    var wallSeconds: Double
    var cpu: CPUUsage
    var loadAtStart: String
    /// `voiceCount` samples, by count of voices held.
    var voiceCounts: [Int: Int]
    var skips: Int
    /// `transitionStarted` events in the window: crossfades, and gapless joins.
    var crossfadesStarted: Int
    var gaplessJoins: Int
    /// The part of the window inside a crossfade (from each `transitionStarted` to its
    /// duration later): two voices heard.
    var crossfadeFraction: Double
    var underruns: Int
    var diagnostics: [String]

    var cpuPerAudioSecond: Double { cpu.processSeconds / wallSeconds }
    var engineThreadsPerAudioSecond: Double { (cpu.processSeconds - cpu.threadSeconds) / wallSeconds }
  }

  let options: Options

  func run() throws {
    let files = try BenchFiles(useCache: options.useCache)
    progress("files in \(files.directory)")
    let items = try Self.itemMinutes.map {
      MediaItem(path: try files.vorbis(minutes: $0, quality: DecodeBenchmark.vorbisQuality))
    }
    var measurements: [Measurement] = []
    for kind in Case.allCases {
      progress(String(format: "measuring: %@ for %g s", kind.label, options.seconds))
      measurements.append(try measure(kind, items: items))
    }
    print(report(measurements))
  }

  private func measure(_ kind: Case, items: [MediaItem]) throws -> Measurement {
    let diagnostics = DiagnosticLog()
    let engine = try AudioEngine(output: .headless, diagnostics: diagnostics.record)
    defer { engine.shutdown() }
    let transitions = TransitionLog()
    var player: QueuePlayer?
    if kind != .idle {
      let queue = QueuePlayer(engine: engine)
      queue.transition =
        kind == .crossfading ? try Transition(duration: Self.fadeSeconds, curve: .equalPower) : .gapless
      queue.repeatMode = .all
      try queue.setQueue(with: items)
      queue.addObserver { event in
        if case .transitionStarted(_, _, let transition) = event { transitions.record(transition) }
      }
      queue.play()
      player = queue
    }
    usleep(UInt32(Self.warmUpSeconds * 1e6))

    let loadAtStart = loadAverage()
    let windowStart = DispatchTime.now().uptimeNanoseconds
    let before = CPUUsage.now()
    let stopwatch = Stopwatch()
    var voiceCounts: [Int: Int] = [:]
    var skips = 0
    var nextSkip = 0.0
    var tick = 0
    while true {
      let elapsed = stopwatch.seconds
      if elapsed >= options.seconds { break }
      if kind == .crossfading, let player, elapsed >= nextSkip {
        try player.skipToNextItem()
        skips += 1
        nextSkip += Self.skipEverySeconds
      }
      voiceCounts[player?.voiceCount ?? 0, default: 0] += 1
      // Sleep to the next tick of a fixed grid, so that skips do not drift later and later.
      tick += 1
      let wake = min(Double(tick) * Self.pollSeconds, options.seconds)
      let sleepSeconds = wake - stopwatch.seconds
      if sleepSeconds > 0 { usleep(UInt32(sleepSeconds * 1e6)) }
    }
    let cpu = CPUUsage.now().since(before)
    let wallSeconds = stopwatch.seconds

    player?.stop()
    player?.waitForNotifications()
    let underruns = engine.underrunCount
    let window = transitions.started(from: windowStart, seconds: wallSeconds)
    return Measurement(
      kind: kind, wallSeconds: wallSeconds, cpu: cpu, loadAtStart: loadAtStart, voiceCounts: voiceCounts,
      skips: skips, crossfadesStarted: window.crossfades, gaplessJoins: window.gaplessJoins,
      crossfadeFraction: window.crossfadeSeconds / wallSeconds, underruns: underruns,
      diagnostics: diagnostics.lines)
  }

  private func report(_ measurements: [Measurement]) -> String {
    let idle = measurements.first { $0.kind == .idle }?.cpuPerAudioSecond ?? .nan
    var table = TextTable(
      [
        "case", "voices held (voiceCount)", "CPU s per audio s", "% of a core", "user", "kernel", "engine threads",
        "over idle", "goal", "result",
      ],
      rightAligned: [2, 3, 4, 5, 6, 7])
    var notes: [String] = []
    for measurement in measurements {
      let samples = measurement.voiceCounts.values.reduce(0, +)
      let voices = measurement.voiceCounts.keys.sorted().map { count in
        String(format: "%d: %.0f%%", count, 100 * Double(measurement.voiceCounts[count]!) / Double(max(samples, 1)))
      }.joined(separator: ", ")
      let perSecond = measurement.cpuPerAudioSecond
      let isGoalCase = measurement.kind == .crossfading
      table.add([
        measurement.kind.label, voices,
        String(format: "%.4f", perSecond),
        String(format: "%.2f%%", 100 * perSecond),
        String(format: "%.4f", measurement.cpu.processUserSeconds / measurement.wallSeconds),
        String(format: "%.4f", measurement.cpu.processSystemSeconds / measurement.wallSeconds),
        String(format: "%.4f", measurement.engineThreadsPerAudioSecond),
        measurement.kind == .idle ? "" : String(format: "%+.4f", perSecond - idle),
        isGoalCase ? String(format: "≤ %.2f", Self.goalCPUPerAudioSecond) : "",
        isGoalCase ? (perSecond <= Self.goalCPUPerAudioSecond ? "PASS" : "ABOVE GOAL") : "",
      ])
      var facts = [
        String(format: "%.1f s measured", measurement.wallSeconds),
        "load average at its start \(measurement.loadAtStart)",
      ]
      if measurement.kind == .crossfading {
        facts.append(
          String(
            format: "%d skips, %d crossfades started, inside a crossfade %.0f%% of the time", measurement.skips,
            measurement.crossfadesStarted, 100 * measurement.crossfadeFraction))
      }
      if measurement.kind == .oneVoice { facts.append("\(measurement.gaplessJoins) gapless joins") }
      if measurement.kind != .idle { facts.append("\(measurement.underruns) underruns") }
      notes.append("\(measurement.kind.label): " + facts.joined(separator: ", "))
      notes += measurement.diagnostics.map { "\(measurement.kind.label): engine said \($0)" }
    }
    return [
      "CPU time per second of audio on the headless real-time device (AudioEngine(output: .headless): 48 kHz stereo,",
      "mixed by the engine's streaming thread and discarded), each case on a fresh engine after \(String(format: "%g", Self.warmUpSeconds)) s of warm-up.",
      "Items: two Ogg Vorbis q\(String(format: "%.1f", DecodeBenchmark.vorbisQuality)) files of "
        + Self.itemMinutes.map { String(format: "%g s", $0 * 60) }.joined(separator: " and ")
        + ", 44.1 kHz stereo (OpenAL resamples them to 48 kHz).",
      "Two voices: a \(String(format: "%g", Self.fadeSeconds)) s equal-power crossfade, skipToNextItem() every "
        + "\(String(format: "%g", Self.skipEverySeconds)) s, repeat all.",
      "CPU: getrusage(RUSAGE_SELF) user + kernel of the whole process, per wall second (= audio second); the goal is judged on it.",
      "Engine threads: the same minus the bench's own thread (RUSAGE_THREAD: it sleeps, polls voiceCount every "
        + "\(String(format: "%g", Self.pollSeconds * 1000)) ms and skips).",
      "voiceCount counts the voices a player holds: the one playing, the next item prepared on a voice of its own",
      "(for a crossfade), and those fading out: a working crossfade shows 3 while it is heard and 2 between.",
      "",
      table.render(),
      "",
    ].joined(separator: "\n") + notes.map { "note: \($0)" }.joined(separator: "\n")
  }
}

/// The transitions a queue player reported, with when: filled on the player's notification queue.
final class TransitionLog: Sendable {
  private let entries = Mutex<[(nanoseconds: UInt64, transition: Transition)]>([])

  func record(_ transition: Transition) {
    let now = DispatchTime.now().uptimeNanoseconds
    entries.withLock { $0.append((now, transition)) }
  }

  /// Transitions that started in the window of `seconds` from `start` (DispatchTime uptime), and
  /// how much of the window lies inside a crossfade (the union of each crossfade's span).
  func started(from start: UInt64, seconds: Double) -> (crossfades: Int, gaplessJoins: Int, crossfadeSeconds: Double) {
    let spans = entries.withLock { $0 }.compactMap { entry -> (begin: Double, duration: Double)? in
      guard entry.nanoseconds >= start else { return nil }
      let begin = Double(entry.nanoseconds - start) / 1e9
      return begin < seconds ? (begin, entry.transition.duration) : nil
    }
    var covered = 0.0
    var reached = 0.0
    for span in spans.filter({ $0.duration > 0 }).sorted(by: { $0.begin < $1.begin }) {
      let begin = max(span.begin, reached)
      let end = min(span.begin + span.duration, seconds)
      if end > begin { covered += end - begin }
      reached = max(reached, end)
    }
    return (spans.filter { $0.duration > 0 }.count, spans.filter { $0.duration == 0 }.count, covered)
  }
}

/// What an engine said (its diagnostics handler), kept to be printed with the figures.
final class DiagnosticLog: Sendable {
  private let collected = Mutex<[String]>([])

  func record(_ diagnostic: Diagnostic) { collected.withLock { $0.append(diagnostic.description) } }

  var lines: [String] { collected.withLock { $0 } }
}
