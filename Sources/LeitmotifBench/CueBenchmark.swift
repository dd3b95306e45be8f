import Foundation
import Leitmotif
import LeitmotifFixtures
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `leitmotif-bench cues`: what the music director costs the game, and how fast it answers.
///
/// Three measurements, each on a fresh engine, over a small game made on the spot (two bundled
/// Ogg Vorbis tracks from `ToneGenerator.musicLike` and a cue file around them, in a temporary
/// directory):
/// 1. posting: the cost of one `Director.post` call on a game thread while the director's own
///    thread applies the events and a real-time headless engine streams and crossfades. Each call
///    is timed by itself with CLOCK_MONOTONIC (nothing subtracted; the clock's own cost is shown
///    beside). A plain locked queue (`Mutex<[LevelEvent]>` with a consumer thread of its own) is
///    measured in the same run, burst for burst in turn with the director, as the baseline.
/// 2. applying: events per second a pumped director applies in `update()` on an offline engine
///    (no real-time threads: `update()` runs on the calling thread, and so does the file opening
///    of a crossfade), for a cheap mix of rules (at 100 and at 4000 events per update, and with
///    whole-number values, which the director's reports spell faster) and a heavy mix where 1
///    event in 100 changes state.
/// 3. reload: the time from an atomic rewrite of the watched cue file (as an editor saves) to the
///    director's `.reloaded` report (the new rules in force), and to `.reloadFailed` for an
///    invalid file.
struct CueBenchmark {
  struct Options {
    /// Events the game thread posts to the director in measurement 1 (as many again go to the
    /// baseline queue).
    var posts = 200_000
    /// Events the pumped director applies in each case of measurement 2.
    var events = 100_000
    /// The game thread's sleep after each burst in measurement 1 (see `pauseMicroseconds`).
    var pauseMicroseconds = CueBenchmark.pauseMicroseconds
    /// Seconds of each case of measurement 4 (the director's idle cost), per round.
    var cpuSeconds = 10.0

    init() {}

    init(parsing arguments: [String]) throws {
      var rest = arguments[...]
      while let argument = rest.popFirst() {
        switch argument {
        case "--posts", "--events":
          guard let text = rest.popFirst(), let number = Int(text), number >= 1_000 else {
            throw UsageError(description: "\(argument) needs a whole number of 1000 or more")
          }
          if argument == "--posts" { posts = number } else { events = number }
        case "--cpu-seconds":
          guard let text = rest.popFirst(), let number = Double(text), number >= 1, number <= 600 else {
            throw UsageError(description: "--cpu-seconds needs a number of seconds from 1 to 600")
          }
          cpuSeconds = number
        case "--pause":
          guard let text = rest.popFirst(), let number = UInt32(text), number > 0 else {
            throw UsageError(description: "--pause needs a positive whole number of microseconds")
          }
          pauseMicroseconds = number
        default: throw UsageError(description: "unknown option \"\(argument)\"")
        }
      }
    }
  }

  struct Failure: Error, CustomStringConvertible {
    var description: String
  }

  // MARK: Measurement 1: posting

  /// Events per burst, and the pause after each: a burst is far below the bus's 4096, and the
  /// director's thread empties the bus during the pause, so no event should be dropped. Each
  /// pause is followed by a burst to the baseline and another pause, so the director gets 100
  /// events every 2 pauses: with 1 ms pauses (about 45,000 events a second) it fell behind here
  /// and dropped a tenth to a quarter of them (see measurement 2 for how fast it applies them).
  static let burstEvents = 100
  static let pauseMicroseconds: UInt32 = 2_000
  /// One event in this many changes state (alternately to combat and back): a crossfade of
  /// `CueGame.transitionSeconds` between the two tracks, opening a file on the engine's loader.
  /// Every 4000 events is about 6 times a second at this rate: each crossfade ends before the
  /// next begins. (Every 500, 46 a second, piled crossfades up until the engine ran out of its 16
  /// voices and refused them.)
  static let stateChangeEvery = 4_000
  /// Music plays this long before the game thread starts posting.
  static let warmUpSeconds = 0.5
  /// The goals for one `post`.
  static let goalMedianMicroseconds = 2.0
  static let goalP999Microseconds = 50.0

  // MARK: Measurement 2: applying

  static let applyRenderFrames = 256
  /// One event in this many changes state in the heavy mix.
  static let heavyStateChangeEvery = 100

  // MARK: Measurement 3: reload

  static let validReloads = 20
  static let invalidReloads = 5
  /// How long a write may wait for its report before the bench counts it as missed.
  static let reloadTimeoutSeconds = 5.0
  /// The goal: a saved change is in force within a second.
  static let goalReloadSeconds = 1.0

  let options: Options

  func run() throws {
    progress("making the bundled music and the cue file")
    let game = try CueGame()
    progress(
      String(
        format: "measuring: post() on a game thread, %d events in bursts of %d (and as many to the baseline)",
        options.posts, Self.burstEvents))
    let posting = try measurePosting(game)
    print(posting.report)
    print()
    var applying: [Applying] = []
    for mix in ApplyCase.allCases {
      progress("measuring: the pumped director applying \(options.events) events, \(mix.label)")
      applying.append(try measureApplying(game, mix))
    }
    print(report(applying))
    print()
    progress(
      "measuring: live reload, \(Self.validReloads) valid and \(Self.invalidReloads) invalid writes of the cue file")
    print(try measureReload(game))
    print()
    progress(
      String(
        format: "measuring: CPU of the music with and without a director on its own thread, %.0f s per case, 2 rounds",
        options.cpuSeconds))
    print(try measureIdleCost(game))
  }

  // MARK: - 4. What a director costs while music plays and nothing is posted

  /// The director's thread polls the bus every 5 ms while music plays (so that a post never
  /// wakes it): this measures what that costs, side by side in one run. Three cases on fresh
  /// real-time headless engines, each playing the same track: a `QueuePlayer` alone; the
  /// director on its own thread with the cue file not watched; the same with the file watched
  /// (the watcher stats it ten times a second). Rounds alternate the cases; CPU is the whole
  /// process's (getrusage), per wall second.
  private func measureIdleCost(_ game: CueGame) throws -> String {
    enum Case: CaseIterable {
      case playerAlone, director, directorWatching
      var label: String {
        switch self {
        case .playerAlone: return "QueuePlayer alone (the track on repeat)"
        case .director: return "Director, own thread, file not watched"
        case .directorWatching: return "Director, own thread, file watched"
        }
      }
    }
    try game.writeCueFile(rules: CueGame.rules)  // the reload measurement left a broken one
    var cpu: [Case: Double] = [:]
    var wall: [Case: Double] = [:]
    for _ in 0..<2 {
      for kind in Case.allCases {
        let engine = try AudioEngine(output: .headless)
        var director: Director?
        var player: QueuePlayer?
        switch kind {
        case .playerAlone:
          let queue = QueuePlayer(engine: engine)
          queue.repeatMode = .all
          try queue.setQueue(with: [MediaItem.load(path: game.directory.file("assets/explore.ogg"))])
          queue.play()
          player = queue
        case .director, .directorWatching:
          let made = try Director(
            engine: engine, cueFile: game.cuePath, clocking: .ownThread, watchesFile: kind == .directorWatching)
          made.start()
          director = made
        }
        usleep(500_000)  // past the start: files open, the first buffers queued
        let before = CPUUsage.now()
        let started = Date()
        usleep(useconds_t(options.cpuSeconds * 1_000_000))
        cpu[kind, default: 0] += CPUUsage.now().since(before).processSeconds
        wall[kind, default: 0] += Date().timeIntervalSince(started)
        director?.player.stop()
        director?.shutdown()
        player?.stop()
        engine.shutdown()
      }
    }
    let perSecond = Case.allCases.map { (cpu[$0] ?? 0) / max(wall[$0] ?? 1, 0.001) }
    var table = TextTable(["music", "CPU s per audio s", "ratio to the player alone"], rightAligned: [1, 2])
    for (index, kind) in Case.allCases.enumerated() {
      table.add([
        kind.label, String(format: "%.4f", perSecond[index]), String(format: "%.2f", perSecond[index] / perSecond[0]),
      ])
    }
    return """
      What a director costs while music plays and nothing is posted: real-time headless engines (AudioEngine(output: .headless)),
      each playing the same 20 s track for \(Int(options.cpuSeconds)) s per round, 2 rounds alternating the cases;
      CPU is the whole process's (getrusage), per wall second.

      \(table.render())
      """
  }

  // MARK: - 1. post() under load

  /// Per-call times of one path, in nanoseconds, and what they come to.
  struct Latencies {
    var label: String
    var nanoseconds: [UInt64]

    var sorted: [UInt64] { nanoseconds.sorted() }

    /// The `fraction` quantile (nearest rank) in microseconds.
    static func quantile(_ sorted: [UInt64], _ fraction: Double) -> Double {
      guard !sorted.isEmpty else { return .nan }
      let rank = min(sorted.count - 1, max(0, Int((fraction * Double(sorted.count)).rounded(.up)) - 1))
      return Double(sorted[rank]) / 1_000
    }
  }

  struct Posting {
    var report: String
  }

  private func measurePosting(_ game: CueGame) throws -> Posting {
    let diagnostics = DiagnosticLog()
    let engine = try AudioEngine(output: .headless, diagnostics: diagnostics.record)
    defer { engine.shutdown() }
    let director = try Director(engine: engine, cueFile: game.cuePath, clocking: .ownThread, watchesFile: false)
    let tally = ReportTally()
    director.addObserver { tally.record($0) }
    director.start()
    usleep(UInt32(Self.warmUpSeconds * 1e6))
    let baseline = LockedQueue()
    baseline.startConsumer()

    let script = CueGame.postingScript(stateChangeEvery: Self.stateChangeEvery)
    let clockCost = Self.clockCost(samples: options.posts)
    var postTimes = [UInt64]()
    var baselineTimes = [UInt64]()
    postTimes.reserveCapacity(options.posts)
    baselineTimes.reserveCapacity(options.posts)
    var rejected = 0
    let loadAtStart = loadAverage()
    let cpuBefore = CPUUsage.now()
    let stopwatch = Stopwatch()
    // Bursts alternate between the director and the baseline, so both see the same load, and
    // within a burst each call is timed by itself.
    var posted = 0
    var appended = 0
    var burst = 0
    var maximumVoices = 0
    while posted < options.posts || appended < options.posts {
      let toDirector = burst % 2 == 0
      burst += 1
      if toDirector {
        let end = min(options.posts, posted + Self.burstEvents)
        while posted < end {
          let event = script[posted % script.count]
          let start = Self.monotonicNanoseconds()
          let accepted = director.post(event.cue, event.payload)
          let finish = Self.monotonicNanoseconds()
          postTimes.append(finish &- start)
          if !accepted { rejected += 1 }
          posted += 1
        }
      } else {
        let end = min(options.posts, appended + Self.burstEvents)
        while appended < end {
          let event = script[appended % script.count]
          let start = Self.monotonicNanoseconds()
          baseline.append(event.cue, event.payload)
          let finish = Self.monotonicNanoseconds()
          baselineTimes.append(finish &- start)
          appended += 1
        }
      }
      usleep(options.pauseMicroseconds)
      if burst % 20 == 0 { maximumVoices = max(maximumVoices, director.player.voiceCount) }
    }
    let postingSeconds = stopwatch.seconds
    // The director catches up: every accepted event answered (fired or ignored).
    let accepted = options.posts - rejected
    let caughtUp = Stopwatch()
    while tally.answered < accepted && caughtUp.seconds < 10 { usleep(2_000) }
    let cpu = CPUUsage.now().since(cpuBefore)
    let wallSeconds = stopwatch.seconds
    baseline.stopConsumer()
    director.shutdown()
    director.player.stop()
    director.waitForReports()
    let counts = tally.counts

    let goalText = String(
      format: "median < %g µs, p99.9 < %g µs", Self.goalMedianMicroseconds, Self.goalP999Microseconds)
    var table = TextTable(
      ["call", "calls", "median µs", "p99 µs", "p99.9 µs", "max µs", "goal", "result"],
      rightAligned: [1, 2, 3, 4, 5])
    let postLatencies = Latencies(label: "Director.post(cue, payload)", nanoseconds: postTimes)
    let baselineLatencies = Latencies(
      label: "baseline: Mutex<[LevelEvent]> append", nanoseconds: baselineTimes)
    let clockLatencies = Latencies(label: "clock: two clock_gettime, nothing between", nanoseconds: clockCost)
    var medians: [Double] = []
    for latencies in [postLatencies, baselineLatencies, clockLatencies] {
      let sorted = latencies.sorted
      let median = Latencies.quantile(sorted, 0.5)
      let p999 = Latencies.quantile(sorted, 0.999)
      medians.append(median)
      let isGoalRow = latencies.label == postLatencies.label
      var result = ""
      if isGoalRow {
        var missed: [String] = []
        if !(median < Self.goalMedianMicroseconds) { missed.append("median") }
        if !(p999 < Self.goalP999Microseconds) { missed.append("p99.9") }
        result = missed.isEmpty ? "PASS" : "ABOVE GOAL (" + missed.joined(separator: ", ") + ")"
      }
      table.add([
        latencies.label, "\(sorted.count)",
        String(format: "%.3f", median),
        String(format: "%.3f", Latencies.quantile(sorted, 0.99)),
        String(format: "%.3f", p999),
        String(format: "%.3f", Double(sorted.last ?? 0) / 1_000),
        isGoalRow ? goalText : "", result,
      ])
    }
    var lines = [
      "post() on a game thread while the director and the engine are busy: a real-time headless engine",
      "(AudioEngine(output: .headless), 48 kHz) playing the cue file's music, the director on its own thread",
      "(Director(engine:cueFile:clocking: .ownThread)). The game thread posts \(options.posts) events in bursts of "
        + "\(Self.burstEvents), sleeping \(options.pauseMicroseconds) µs after each;",
      "bursts alternate with bursts of the baseline (the same events appended to a Mutex-protected array that a "
        + "consumer thread empties).",
      "The events: 1 in \(Self.stateChangeEvery) changes state (a \(CueGame.transitionSeconds) s crossfade between "
        + "the two tracks), the rest duck, set a parameter or set the volume, by payload and state.",
      "Each call timed alone with clock_gettime(CLOCK_MONOTONIC); nothing subtracted (the clock row is the clock's "
        + "own cost, measured the same way).",
      "Load average at the start: \(loadAtStart).",
      "",
      table.render(),
      "",
      String(
        format: "median ratio post / baseline: %.2f (%.3f µs / %.3f µs)", medians[0] / medians[1], medians[0],
        medians[1]),
      String(
        format:
          "posted %d: accepted %d, dropped %d (bus droppedCount %llu, .dropped reports %llu); the director answered %d "
          + "(%d fired, %d ignored)",
        options.posts, accepted, rejected, director.bus.droppedCount, counts.droppedReported, tally.answered,
        counts.fired, counts.ignored),
      String(
        format:
          "%d state changes, at most %d voices held by the director's player (sampled every 20 bursts); %.2f s of "
          + "posting; process CPU %.2f s in %.2f s wall (%.0f%% of a core), %d engine underruns",
        counts.stateChanges, maximumVoices, postingSeconds, cpu.processSeconds, wallSeconds,
        100 * cpu.processSeconds / wallSeconds, engine.underrunCount),
    ]
    if tally.answered < accepted {
      lines.append("note: the director had not answered every accepted event 10 s after the last post")
    }
    // Which calls are the slow ones. The first post of a burst used to find the director asleep
    // and wake it with a semaphore signal; while music plays the director now polls the bus every
    // 5 ms instead, so this line shows whether the first post of a burst still costs more.
    let firstOfBurst = Set(stride(from: 0, to: postTimes.count, by: Self.burstEvents))
    let slowestCount = max(1, postTimes.count / 1_000)
    let slowest = postTimes.indices.sorted { postTimes[$0] > postTimes[$1] }.prefix(slowestCount)
    let firstTimes = firstOfBurst.map { postTimes[$0] }.sorted()
    let otherTimes = postTimes.indices.filter { !firstOfBurst.contains($0) }.map { postTimes[$0] }.sorted()
    lines.append(
      String(
        format:
          "post() by place in its burst: first median %.3f µs, p99 %.3f µs; the "
          + "others median %.3f µs, p99.9 %.3f µs; of the %d slowest (the top 0.1%%), %d were first of a burst",
        Latencies.quantile(firstTimes, 0.5), Latencies.quantile(firstTimes, 0.99), Latencies.quantile(otherTimes, 0.5),
        Latencies.quantile(otherTimes, 0.999), slowestCount, slowest.filter { firstOfBurst.contains($0) }.count))
    if rejected > 0 {
      lines.append(
        "note: events were dropped: the director fell behind the game thread (try a longer --pause); the post "
          + "figures then include the cheaper drop path")
    }
    lines += counted(counts.problems, total: counts.problemCount).map { "note: the director reported \($0)" }
    lines += counted(diagnostics.lines).map { "note: the engine said \($0)" }
    return Posting(report: lines.joined(separator: "\n"))
  }

  /// The cost of the measuring itself: two clock readings back to back, `samples` times.
  static func clockCost(samples: Int) -> [UInt64] {
    var times = [UInt64]()
    times.reserveCapacity(samples)
    for _ in 0..<samples {
      let start = monotonicNanoseconds()
      let finish = monotonicNanoseconds()
      times.append(finish &- start)
    }
    return times
  }

  /// CLOCK_MONOTONIC in nanoseconds: on Linux a vDSO call, no system call.
  @inline(__always)
  static func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
  }

  /// The baseline: the simplest queue a game could post to, a locked array, with a consumer
  /// thread that takes everything every 0.2 ms (as the director's thread drains the bus).
  final class LockedQueue: Sendable {
    private let events = Mutex<[LevelEvent]>([])
    private let sequence = Atomic<UInt64>(0)
    private let running = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)

    init() { events.withLock { $0.reserveCapacity(4_096) } }

    /// The same work as the bus's post: read the clock, number the event, store it.
    func append(_ cue: String, _ payload: CuePayload) {
      let now = DispatchTime.now().uptimeNanoseconds
      events.withLock { events in
        let number = sequence.add(1, ordering: .relaxed).newValue
        events.append(LevelEvent(sequence: number, cue: cue, payload: payload, postedNanoseconds: now))
      }
    }

    func startConsumer() {
      running.store(true, ordering: .releasing)
      let thread = Thread { [self] in
        var taken: [LevelEvent] = []
        taken.reserveCapacity(4_096)
        while running.load(ordering: .acquiring) {
          events.withLock { swap(&$0, &taken) }
          if taken.isEmpty { usleep(200) }
          taken.removeAll(keepingCapacity: true)
        }
        finished.store(true, ordering: .releasing)
      }
      thread.name = "bench.baseline"
      thread.start()
    }

    func stopConsumer() {
      running.store(false, ordering: .releasing)
      while !finished.load(ordering: .acquiring) { usleep(1_000) }
    }
  }

  // MARK: - 2. Events applied per second

  enum ApplyCase: CaseIterable {
    case cheapFrame, cheapWholeNumbers, cheapFull, heavyFrame

    var label: String {
      switch self {
      case .cheapFrame: return "cheap mix, 100 events per update()"
      case .cheapWholeNumbers: return "cheap mix, whole-number values, 100 per update()"
      case .cheapFull: return "cheap mix, 4000 events per update()"
      case .heavyFrame: return "heavy mix (1 in 100 a crossfade), 100 per update()"
      }
    }

    var batch: Int { self == .cheapFull ? 4_000 : 100 }
    /// Render calls of `applyRenderFrames` after each update(): 3 × 256 frames = 16 ms of audio,
    /// one frame of a 60 Hz game; in the heavy mix 24 × 256 = 128 ms, so that each 0.1 s
    /// crossfade ends before the next starts. (With 16 ms, crossfades piled up 6 deep, the
    /// engine ran out of its 16 voices and most state changes failed early, which is cheaper.)
    var rendersPerUpdate: Int { self == .heavyFrame ? 24 : 3 }
    var stateChangeEvery: Int? { self == .heavyFrame ? CueBenchmark.heavyStateChangeEvery : nil }
  }

  struct Applying {
    var mix: ApplyCase
    var events: Int
    var updateSeconds: Double
    var updates: Int
    var slowestUpdateSeconds: Double
    var renderSeconds: Double
    /// The most voices the director's queue player held after an update's render.
    var maximumVoices: Int
    var counts: ReportTally.Counts
    var answered: Int
    var diagnostics: [String]
  }

  private func measureApplying(_ game: CueGame, _ mix: ApplyCase) throws -> Applying {
    let diagnostics = DiagnosticLog()
    let engine = try AudioEngine(
      output: .offline(sampleRate: 48_000, renderFrames: Self.applyRenderFrames), diagnostics: diagnostics.record)
    defer { engine.shutdown() }
    let cuePath = mix == .cheapWholeNumbers ? game.wholeNumberCuePath : game.cuePath
    let director = try Director(engine: engine, cueFile: cuePath, clocking: .pumped, watchesFile: false)
    let tally = ReportTally()
    director.addObserver { tally.record($0) }
    director.start()
    let buffer = UnsafeMutablePointer<Float>.allocate(capacity: Self.applyRenderFrames * 2)
    defer { buffer.deallocate() }
    engine.render(into: buffer, frameCount: Self.applyRenderFrames)

    let script = CueGame.applyingScript(stateChangeEvery: mix.stateChangeEvery)
    var updateNanoseconds: UInt64 = 0
    var slowest: UInt64 = 0
    var renderNanoseconds: UInt64 = 0
    var updates = 0
    var maximumVoices = 0
    var index = 0
    while index < options.events {
      let end = min(options.events, index + mix.batch)
      // Posting is measured in part 1; here only update() is timed.
      while index < end {
        let event = script[index % script.count]
        guard director.post(event.cue, event.payload) else {
          throw Failure(description: "the bus refused event \(index) (a batch is below its capacity)")
        }
        index += 1
      }
      let start = Self.monotonicNanoseconds()
      director.update()
      let finish = Self.monotonicNanoseconds()
      updateNanoseconds += finish &- start
      slowest = max(slowest, finish &- start)
      updates += 1
      // A frame's worth of audio between updates, as in a game: crossfades move on, voices free.
      for _ in 0..<mix.rendersPerUpdate { engine.render(into: buffer, frameCount: Self.applyRenderFrames) }
      renderNanoseconds += Self.monotonicNanoseconds() &- finish
      maximumVoices = max(maximumVoices, director.player.voiceCount)
    }
    director.player.stop()
    engine.render(into: buffer, frameCount: Self.applyRenderFrames)
    director.waitForReports()
    return Applying(
      mix: mix, events: options.events, updateSeconds: Double(updateNanoseconds) / 1e9, updates: updates,
      slowestUpdateSeconds: Double(slowest) / 1e9, renderSeconds: Double(renderNanoseconds) / 1e9,
      maximumVoices: maximumVoices,
      counts: tally.counts, answered: tally.answered, diagnostics: diagnostics.lines)
  }

  private func report(_ results: [Applying]) -> String {
    var table = TextTable(
      [
        "mix", "events", "update() total", "events/s", "µs/event", "slowest update()", "fired", "ignored",
        "state changes", "most voices", "goal",
      ],
      rightAligned: [1, 2, 3, 4, 5, 6, 7, 8, 9])
    var notes: [String] = []
    for result in results {
      table.add([
        result.mix.label, "\(result.events)",
        String(format: "%.3f s", result.updateSeconds),
        String(format: "%.0f", Double(result.events) / result.updateSeconds),
        String(format: "%.2f", 1e6 * result.updateSeconds / Double(result.events)),
        String(format: "%.2f ms", 1e3 * result.slowestUpdateSeconds),
        "\(result.counts.fired)", "\(result.counts.ignored)", "\(result.counts.stateChanges)",
        "\(result.maximumVoices)", "none set",
      ])
      if result.answered != result.events {
        notes.append("\(result.mix.label): \(result.answered) of \(result.events) events answered")
      }
      notes += counted(result.counts.problems, total: result.counts.problemCount).map {
        "\(result.mix.label): the director reported \($0)"
      }
      notes += counted(result.diagnostics).map { "\(result.mix.label): the engine said \($0)" }
    }
    var lines = [
      "Events the director applies per second: AudioEngine(output: .offline(sampleRate: 48000, renderFrames: "
        + "\(Self.applyRenderFrames))), Director(... clocking: .pumped).",
      "Each batch is posted (untimed), then one update() applies it (timed); 3 × \(Self.applyRenderFrames) frames "
        + "(16 ms, a 60 Hz frame; 128 ms in the heavy mix) are rendered after each update (untimed).",
      "Cheap mix: \"step\" events (a volume action with a 0.1 s ramp; conditions on the payload and the state) and "
        + "\"enemy.spotted\" (set a parameter to 0.8 or 0.2 over 0.5 s; payload threshold).",
      "Whole-number values: the same rules with volumes and values 0 or 1 and no ramps (see the note below the table).",
      "Heavy mix: the cheap mix, and 1 event in \(Self.heavyStateChangeEvery) changes state (a "
        + "\(CueGame.transitionSeconds) s crossfade: on an offline engine the file is opened inside update()).",
      "An observer counts the reports on the director's notification queue (every event gets one).",
      "",
      table.render(),
    ]
    let renderTotal = results.reduce(0) { $0 + $1.renderSeconds }
    lines.append(String(format: "rendering between updates (not counted above): %.2f s in all", renderTotal))
    lines += notes.map { "note: \($0)" }
    return lines.joined(separator: "\n")
  }

  // MARK: - 3. Live reload

  private func measureReload(_ game: CueGame) throws -> String {
    let diagnostics = DiagnosticLog()
    let engine = try AudioEngine(output: .headless, diagnostics: diagnostics.record)
    defer { engine.shutdown() }
    try game.writeCueFile(rules: CueGame.reloadRule(number: 0))
    let director = try Director(engine: engine, cueFile: game.cuePath, clocking: .ownThread, watchesFile: true)
    defer {
      director.shutdown()
      director.player.stop()
    }
    let tally = ReportTally()
    director.addObserver { tally.record($0) }
    director.start()
    usleep(UInt32(Self.warmUpSeconds * 1e6))

    var validSeconds: [Double] = []
    var invalidSeconds: [Double] = []
    var missed = 0
    var wrongRules = 0
    for write in 0..<(Self.validReloads + Self.invalidReloads) {
      let isValid = write < Self.validReloads
      // Writes land at different places in the watcher's 100 ms polling cycle: 150 to 249 ms
      // after the last report, in steps of 37 ms (mod 100), so the median is not one phase's.
      usleep(UInt32(150_000 + (write * 37_000) % 100_000))
      let before = isValid ? tally.counts.reloads.count : tally.counts.reloadFailures.count
      if isValid {
        try game.writeCueFile(rules: CueGame.reloadRule(number: write + 1))
      } else {
        // A misspelt action, different each time (so the file's size and content change).
        try "{ rules: [ { on: \"go\", do: { crosfade: \(write) } } ] }".write(
          toFile: game.cuePath, atomically: true, encoding: .utf8)
      }
      let written = DispatchTime.now().uptimeNanoseconds
      let waiting = Stopwatch()
      var reported: UInt64?
      while reported == nil && waiting.seconds < Self.reloadTimeoutSeconds {
        let counts = tally.counts
        let times = isValid ? counts.reloads : counts.reloadFailures
        if times.count > before { reported = times[before] } else { usleep(1_000) }
      }
      guard let reported else {
        missed += 1
        continue
      }
      let seconds = Double(reported &- written) / 1e9
      if isValid {
        validSeconds.append(seconds)
        if director.sheet.rules.first?.name != "reload \(write + 1)" { wrongRules += 1 }
      } else {
        invalidSeconds.append(seconds)
      }
    }

    var table = TextTable(
      ["write", "writes", "reported", "median", "max", "goal", "result"], rightAligned: [1, 2, 3, 4])
    for (label, seconds, count) in [
      ("valid change → .reloaded", validSeconds, Self.validReloads),
      ("invalid file → .reloadFailed", invalidSeconds, Self.invalidReloads),
    ] {
      let met = seconds.count == count && (seconds.max() ?? .infinity) <= Self.goalReloadSeconds
      table.add([
        label, "\(count)", "\(seconds.count)",
        String(format: "%.1f ms", 1e3 * (seconds.median ?? .nan)),
        String(format: "%.1f ms", 1e3 * (seconds.max() ?? .nan)),
        String(format: "every one ≤ %g s", Self.goalReloadSeconds),
        met ? "PASS" : "ABOVE GOAL",
      ])
    }
    var lines = [
      "Live reload: a real-time headless engine playing, Director(engine:cueFile: ..., watchesFile: true) on its own "
        + "thread (the watcher polls the file every 100 ms).",
      "Each write replaces the file atomically (a temporary file renamed over it, as editors save), 150 to 249 ms "
        + "after the previous report;",
      "the time runs from the rename's return to the report reaching an observer (.reloaded: the new rules are in "
        + "force; .reloadFailed: refused).",
      "",
      table.render(),
    ]
    if missed > 0 {
      lines.append("note: \(missed) writes got no report within \(Self.reloadTimeoutSeconds) s")
    }
    if wrongRules > 0 { lines.append("note: after \(wrongRules) reports the sheet did not have the rule just written") }
    lines += diagnostics.lines.map { "note: the engine said \($0)" }
    return lines.joined(separator: "\n")
  }
}

/// `lines` with repeats folded into their first appearance ("12× ..."), in order; `total` (when
/// more than were kept) adds a line for those left out.
func counted(_ lines: [String], total: Int? = nil) -> [String] {
  var order: [String] = []
  var counts: [String: Int] = [:]
  for line in lines {
    if counts[line] == nil { order.append(line) }
    counts[line, default: 0] += 1
  }
  var result = order.map { counts[$0]! > 1 ? "\(counts[$0]!)× \($0)" : $0 }
  if let total, total > lines.count { result.append("(\(total - lines.count) more)") }
  return result
}

/// The director's reports, counted on its notification queue.
final class ReportTally: Sendable {
  struct Counts {
    var fired = 0
    var ignored = 0
    var stateChanges = 0
    var droppedReported: UInt64 = 0
    /// When each `.reloaded` and `.reloadFailed` reached the observer (DispatchTime uptime).
    var reloads: [UInt64] = []
    var reloadFailures: [UInt64] = []
    /// The first 100 `.problem` reports, and how many there were.
    var problems: [String] = []
    var problemCount = 0
  }

  private let state = Mutex(Counts())

  func record(_ report: DirectorReport) {
    let now = DispatchTime.now().uptimeNanoseconds
    state.withLock { counts in
      switch report.kind {
      case .fired: counts.fired += 1
      case .ignored: counts.ignored += 1
      case .stateChanged: counts.stateChanges += 1
      case .dropped(let count): counts.droppedReported += count
      case .reloaded: counts.reloads.append(now)
      case .reloadFailed: counts.reloadFailures.append(now)
      case .problem(let message):
        counts.problemCount += 1
        if counts.problems.count < 100 { counts.problems.append(message) }
      default: break
      }
    }
  }

  var counts: Counts { state.withLock { $0 } }
  /// Events answered: fired or ignored (each event gets exactly one of the two).
  var answered: Int { state.withLock { $0.fired + $0.ignored } }
}

/// The bench's game: two bundled tracks and a cue file, in a temporary directory.
final class CueGame {
  let directory: TemporaryDirectory
  var cuePath: String { directory.file("cues.json5") }
  /// The same rules with whole-number values and no ramps (measurement 2's comparison).
  var wholeNumberCuePath: String { directory.file("cues-whole.json5") }

  /// Every state change's crossfade. Short, because the bench changes state dozens of times a
  /// second: 0.5 s fades overlapped by the dozen and ran the engine out of its 16 voices.
  static let transitionSeconds = 0.1

  /// The tracks: 20 s of `musicLike` each (different seeds), tagged 120 BPM; the states repeat them.
  static let trackSeconds = 20.0

  init() throws {
    directory = try TemporaryDirectory(prefix: "leitmotif-bench-cues")
    let assets = directory.file("assets")
    try FileManager.default.createDirectory(atPath: assets, withIntermediateDirectories: true)
    let format = PCMFormat.stereo48000
    for (name, seed) in [("explore", UInt64(1)), ("combat", UInt64(2))] {
      let samples = ToneGenerator.musicLike(
        seed: seed, frameCount: format.frames(seconds: Self.trackSeconds), format: format)
      try VorbisEncoder.encode(
        samples: samples, format: format, tags: [("TITLE", name.capitalized), ("BPM", "120")],
        to: "\(assets)/\(name).ogg")
    }
    try writeCueFile(rules: Self.rules)
    try writeCueFile(rules: Self.wholeNumberRules, to: wholeNumberCuePath)
  }

  /// Writes the cue file with `rules` (the text inside `rules: [...]`), atomically.
  func writeCueFile(rules: String, to path: String? = nil) throws {
    try """
    {
      assets: "assets",
      start: "explore",
      parameters: {
        intensity: { drives: [{ target: "volume", curve: [[0, 1], [1, 0.8]] }] },
      },
      sources: {
        calm: { bundled: "explore.ogg" },
        tense: { bundled: "combat.ogg" },
      },
      states: {
        explore: { music: "calm", transition: { seconds: \(Self.transitionSeconds) } },
        combat: { music: "tense", transition: { seconds: \(Self.transitionSeconds) } },
      },
      rules: [
    \(rules)
      ],
    }
    """.write(toFile: path ?? cuePath, atomically: true, encoding: .utf8)
  }

  /// The rules of measurements 1 and 2.
  static let rules = """
        { name: "fight", on: "combat.start", when: { notState: "combat" }, do: { state: "combat" } },
        { name: "calm down", on: "combat.end", when: { state: "combat" }, do: { state: "explore" } },
        {
          name: "hurt", on: "player.hurt", cooldown: 0.25, when: { payload: { damage: { atLeast: 5 } } },
          do: { duck: -6, attack: 0.05, hold: 0.2, release: 0.2 },
        },
        {
          name: "threat", on: "enemy.*", when: { state: ["explore", "combat"], payload: { threat: { atLeast: 2 } } },
          do: { set: "intensity", value: 0.8, ramp: 0.5 },
        },
        { name: "all clear", on: "enemy.*", do: { set: "intensity", value: 0.2, ramp: 0.5 } },
        {
          name: "running in a fight", on: "step", when: { state: "combat", payload: { speed: { above: 1 } } },
          do: { volume: 0.9, ramp: 0.1 },
        },
        { name: "step", on: "step", when: { payload: { speed: { exists: true } } }, do: { volume: 1, ramp: 0.1 } },
    """

  /// `rules` with whole numbers for every volume and value, and no ramps: the director describes
  /// each action it takes in its report, and a fraction takes longer to write than a whole number.
  static let wholeNumberRules =
    rules
    .replacingOccurrences(of: "value: 0.8, ramp: 0.5", with: "value: 1")
    .replacingOccurrences(of: "value: 0.2, ramp: 0.5", with: "value: 0")
    .replacingOccurrences(of: "volume: 0.9, ramp: 0.1", with: "volume: 0")
    .replacingOccurrences(of: "volume: 1, ramp: 0.1", with: "volume: 1")

  /// A changed but valid rule set for the reload measurement, named after `number`.
  static func reloadRule(number: Int) -> String {
    "    { name: \"reload \(number)\", on: \"go\", do: { volume: \(String(format: "%.2f", 0.5 + Double(number % 50) / 100)) } },\n"
      + rules
  }

  typealias Event = (cue: String, payload: CuePayload)

  /// Measurement 1's events, repeated: every `stateChangeEvery`-th alternately starts and ends a
  /// fight; between them steps, hurts and enemies in turn, with payloads that pass and fail.
  static func postingScript(stateChangeEvery: Int) -> [Event] {
    let others: [Event] = [
      ("step", ["speed": 0.5]), ("player.hurt", ["damage": 8]), ("enemy.spotted", ["threat": 3]),
      ("step", ["speed": 2]), ("player.hurt", ["damage": 2]), ("enemy.spotted", ["threat": 1, "kind": "wolf"]),
    ]
    return (0..<(2 * stateChangeEvery)).map { index in
      if index == 0 { return ("combat.start", ["threat": 3]) }
      if index == stateChangeEvery { return ("combat.end", [:]) }
      return others[index % others.count]
    }
  }

  /// Measurement 2's events: steps and enemies (cheap), and with `stateChangeEvery`, fights
  /// starting and ending in turn.
  static func applyingScript(stateChangeEvery: Int?) -> [Event] {
    let others: [Event] = [
      ("step", ["speed": 0.5]), ("enemy.spotted", ["threat": 3]), ("step", ["speed": 2]),
      ("enemy.spotted", ["threat": 1]),
    ]
    guard let every = stateChangeEvery else { return others }
    return (0..<(2 * every)).map { index in
      if index == 0 { return ("combat.start", [:]) }
      if index == every { return ("combat.end", [:]) }
      return others[index % others.count]
    }
  }
}
