import CMalloc
import Foundation
import Leitmotif
import LeitmotifFixtures

#if canImport(Glibc)
  import Glibc
#endif

/// `leitmotif-bench soak [--minutes M]`: a long live run under load, for what only time shows
/// (issue 13): a crash, memory that creeps, underruns that lose the place, threads that pile up.
///
/// On the headless device (real time, no sound card needed): a director with a cue file of three
/// states and a stinger, and three queue players on the same engine that repeat two tracks with
/// 1 s crossfades (about 8 voices at a time, fades included); half the music is 44.1 kHz, so its
/// decode threads resample it to the 48 kHz mix. The game side, on this thread:
/// a cue every 100 ms, a parameter and the three players' volumes set every frame (60 a second),
/// the cue file rewritten (atomically, two versions in turn) every 10 s. Two busy loops (child
/// processes) load both cores meanwhile.
///
/// It prints peak and current RSS and the heap in use after 1 minute and at the end (and each minute), the underruns (with how many
/// times a player's position did not follow the clock: the place lost), the threads before the
/// engine was made and after it was shut down, and the counts of what it did.
struct SoakBenchmark {
  struct Options {
    var minutes = 30.0

    init() {}

    init(parsing arguments: [String]) throws {
      var rest = arguments[...]
      while let argument = rest.popFirst() {
        switch argument {
        case "--minutes":
          guard let text = rest.popFirst(), let value = Double(text), value >= 0.1, value <= 24 * 60 else {
            throw UsageError(description: "--minutes needs a number from 0.1 to 1440")
          }
          minutes = value
        default:
          throw UsageError(description: "soak: unknown option \(argument)")
        }
      }
    }
  }

  let options: Options

  /// Memory figures from /proc/self/status, in KiB.
  static func memory() -> (peak: Int, current: Int) {
    let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    func field(_ name: String) -> Int {
      guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return -1 }
      return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? -1
    }
    return (field("VmHWM"), field("VmRSS"))
  }

  /// What the program holds on the heap, in KiB: bytes in chunks malloc handed out, in every
  /// arena, plus its large mmapped blocks (glibc's mallinfo2). RSS also counts freed chunks the
  /// allocator keeps for reuse, so RSS can creep while this stays flat; a leak moves both.
  static func heapInUse() -> Int {
    let info = mallinfo2()
    return (info.uordblks + info.hblkhd) / 1024
  }

  /// What malloc holds from the system, in KiB: its arenas (in use or free) and mmapped blocks.
  static func heapHeld() -> Int {
    let info = mallinfo2()
    return (info.arena + info.hblkhd) / 1024
  }

  static func threadCount() -> Int { threadNames().count }

  /// The names of this process's threads (`/proc/self/task/*/comm`).
  static func threadNames() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.map {
      ((try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)) ?? "?")
        .trimmingCharacters(in: .whitespacesAndNewlines)
    }.sorted()
  }

  func run() throws {
    let minutes = options.minutes
    let threadsBefore = Self.threadCount()
    let game = try SoakGame()
    setenv("ALSOFT_DRIVERS", "null", 0)
    var summary: [String] = []
    do {
      let engine = try AudioEngine(output: .headless)
      let director = try Director(engine: engine, cueFile: game.cuePath, clocking: .ownThread, watchesFile: true)
      let problems = Counter()
      _ = director.addObserver { report in
        switch report.kind {
        case .problem, .reloadFailed: problems.add()
        default: break
        }
      }
      director.start()
      var players: [QueuePlayer] = []
      for index in 0..<3 {
        let player = QueuePlayer(engine: engine)
        player.repeatMode = .all
        player.transition = try Transition(duration: 1, curve: .equalPower)
        try player.setQueue(with: game.tracks.shuffled().map { MediaItem(path: $0) })
        player.volume = 0.3
        player.play()
        players.append(player)
        usleep(UInt32(200_000 * (index + 1)))
      }
      let load = [BusyLoop(), BusyLoop()]
      defer { for loop in load { loop.stop() } }

      let started = Date()
      let total = minutes * 60
      var cues = 0
      var parameters = 0
      var rewrites = 0
      var positionLosses = 0
      var oneMinute: (peak: Int, current: Int)? = nil
      var oneMinuteHeap = 0
      var lastPositions = players.map { ($0.currentPlaybackTime, $0.nowPlayingItem, Date()) }
      var nextCue = 0.0
      var nextRewrite = 10.0
      var nextCheck = 1.0
      var nextMinute = 60.0
      let names = ["combat.start", "combat.end", "boss", "hit", "calm"]
      while true {
        let elapsed = Date().timeIntervalSince(started)
        if elapsed >= total { break }
        if elapsed >= nextCue {
          _ = director.post(names[cues % names.count], ["n": .number(Double(cues))])
          cues += 1
          nextCue += 0.1
        }
        let wave = 0.5 + 0.5 * sin(elapsed)
        director.setParameter("intensity", wave)
        for (index, player) in players.enumerated() { player.volume = Float(0.2 + 0.1 * sin(elapsed + Double(index))) }
        parameters += 1
        if elapsed >= nextRewrite {
          try game.writeCueFile(version: rewrites % 2)
          rewrites += 1
          nextRewrite += 10
        }
        if elapsed >= nextCheck {
          // A player's place follows the clock, except across an item change: otherwise an
          // underrun (or anything else) lost or repeated audio.
          for (index, player) in players.enumerated() {
            let (position, item, at) = lastPositions[index]
            let now = (player.currentPlaybackTime, player.nowPlayingItem, Date())
            let expected = now.2.timeIntervalSince(at)
            if now.1 == item && abs((now.0 - position) - expected) > 0.25 { positionLosses += 1 }
            lastPositions[index] = now
          }
          nextCheck += 1
        }
        if oneMinute == nil && elapsed >= min(60, total / 2) {
          oneMinute = Self.memory()
          oneMinuteHeap = Self.heapInUse()
          FileHandle.standardError.write(
            Data("soak: \(Int(elapsed)) s, peak RSS \(oneMinute!.peak) KiB\n".utf8))
        }
        if elapsed >= nextMinute {
          // The shape of the memory curve (a plateau or a slope) says more than two points.
          let memory = Self.memory()
          FileHandle.standardError.write(
            Data(
              ("soak: \(Int(elapsed / 60)) of \(Int(minutes)) min, RSS \(memory.current) KiB, peak \(memory.peak) KiB, "
                + "heap in use \(Self.heapInUse()) KiB (malloc holds \(Self.heapHeld()) KiB), "
                + "threads \(Self.threadCount())\n").utf8))
          nextMinute += 60
        }
        usleep(16_667)
      }
      let end = Self.memory()
      let endHeap = Self.heapInUse()
      let stillPlaying = players.filter { $0.playbackState == .playing }.count
      let underruns = engine.underrunCount
      let audible = director.audibleState ?? "none"
      director.shutdown()
      for player in players { player.stop() }
      engine.shutdown()
      let start = oneMinute ?? end
      func mib(_ kib: Int) -> String { String(format: "%.1f MiB", Double(kib) / 1024) }
      summary = [
        "Soak: \(String(format: "%.1f", minutes)) min live on the headless device, load: two busy loops",
        "  cues posted          \(cues) (one every 100 ms)",
        "  parameter updates    \(parameters) (a director parameter and 3 player volumes each frame)",
        "  cue-file rewrites    \(rewrites) (every 10 s); problem or refused-reload reports: \(problems.value)",
        "  peak RSS             \(mib(start.peak)) after \(min(1, minutes / 2)) min, \(mib(end.peak)) at the end"
          + " (growth \(mib(end.peak - start.peak)))",
        "  current RSS          \(mib(start.current)) after \(min(1, minutes / 2)) min, \(mib(end.current)) at the end",
        "  heap in use          \(mib(oneMinuteHeap)) after \(min(1, minutes / 2)) min, \(mib(endHeap)) at the end"
          + " (growth \(mib(endHeap - oneMinuteHeap)); malloc's live bytes, without its free lists)",
        "  underruns            \(underruns); place lost (position off the clock by > 0.25 s): \(positionLosses)",
        "  still playing        \(stillPlaying) of \(players.count) queue players; director audible state \"\(audible)\"",
      ]
    }
    // Everything is released by now: the engine's and the director's threads must be gone.
    // libdispatch keeps idle worker threads (named "…-qos.overcommit") a few seconds before they
    // exit: wait up to 15 s for the count to come back, and say how long it took.
    let waitStarted = Date()
    while Self.threadCount() > threadsBefore && Date().timeIntervalSince(waitStarted) < 15 { usleep(100_000) }
    let waited = Date().timeIntervalSince(waitStarted)
    let threadsAfter = Self.threadCount()
    FileHandle.standardError.write(Data("soak: threads at the end: \(Self.threadNames())\n".utf8))
    summary.append(
      "  threads              \(threadsBefore) before the engine, \(threadsAfter) after shutdown"
        + " (\(String(format: "%.1f", waited)) s after it)"
        + (threadsAfter <= threadsBefore ? "" : " (MORE: a thread outlived the engine)"))
    print(summary.joined(separator: "\n"))
  }
}

/// A count shared with a report handler.
private final class Counter: @unchecked Sendable {
  private let lock = NSLock()
  private var count = 0
  func add() { lock.withLock { count += 1 } }
  var value: Int { lock.withLock { count } }
}

/// A child process. Spawned with posix_spawn, not Foundation's Process, which keeps threads of
/// its own (they would count as the engine's).
private final class ChildRun {
  private var pid: pid_t = 0
  init(_ arguments: [String]) {
    var argv = arguments.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    if posix_spawn(&pid, arguments[0], nil, nil, &argv, environ) != 0 { pid = 0 }
  }

  /// Waits for it to end; its exit status (-1 if it never started or was killed).
  func wait() -> Int32 {
    guard pid > 0 else { return -1 }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    pid = 0
    return (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1
  }

  func kill() {
    guard pid > 0 else { return }
    Glibc.kill(pid, SIGKILL)
    _ = wait()
  }
}

/// A child process that spins on one core until stopped.
private final class BusyLoop {
  private let child = ChildRun(["/bin/sh", "-c", "while :; do :; done"])
  func stop() { child.kill() }
}

extension SoakBenchmark {
  /// `leitmotif-bench soak-assets DIR` (the soak runs it as a child process): makes the soak's
  /// music in DIR. In a process of its own because its PCM (7.7 MB a file) would move glibc's
  /// malloc thresholds for the whole soak: freeing a block that big raises the mmap threshold to
  /// its size and the trim threshold to twice that, so every arena then keeps up to 15 MB free
  /// and RSS climbs for minutes (measured: 60.7 to 70.6 MiB peak over 30 minutes, with the heap
  /// in use flat at 17 to 19 MiB). The soak measures the engine, not its fixtures.
  static func makeAssets(in assets: String) throws {
    guard !assets.isEmpty else { throw UsageError(description: "soak-assets needs a directory") }
    try FileManager.default.createDirectory(atPath: assets, withIntermediateDirectories: true)
    // Some at 44.1 kHz, as most players' own songs are: their decode threads resample them to
    // the 48 kHz mix (libsoxr allocates there while it runs), and that must stay flat too.
    let rates: [String: PCMFormat] = ["combat": .stereo44100, "b": .stereo44100, "hit": .stereo44100]
    for (index, name) in ["explore", "combat", "boss", "a", "b"].enumerated() {
      let format = rates[name] ?? .stereo48000
      let samples = ToneGenerator.musicLike(
        seed: UInt64(index + 1), frameCount: format.frames(seconds: 20), format: format)
      try VorbisEncoder.encode(
        samples: samples, format: format, tags: [("TITLE", name.capitalized), ("BPM", "120")],
        to: "\(assets)/\(name).ogg")
    }
    let hitFormat = rates["hit"] ?? .stereo48000
    let hit = ToneGenerator.sine(frequency: 1_760, amplitude: 0.3, seconds: 0.4, format: hitFormat)
    try VorbisEncoder.encode(samples: hit, format: hitFormat, tags: [("TITLE", "Hit")], to: "\(assets)/hit.ogg")
  }
}

/// The soak's music and cue file, made on the spot in a temporary directory.
private struct SoakGame {
  let directory: TemporaryDirectory
  var cuePath: String { directory.file("cues.json5") }
  var tracks: [String] { ["a", "b"].map { directory.file("assets/\($0).ogg") } }

  init() throws {
    directory = try TemporaryDirectory(prefix: "leitmotif-soak")
    let assets = directory.file("assets")
    let child = ChildRun(["/proc/self/exe", "soak-assets", assets])
    guard child.wait() == 0, FileManager.default.fileExists(atPath: "\(assets)/hit.ogg") else {
      throw UsageError(description: "soak: could not make the music (leitmotif-bench soak-assets \(assets))")
    }
    try writeCueFile(version: 0)
  }

  /// Two versions in turn, so every rewrite is a real change (volumes and fade lengths).
  func writeCueFile(version: Int) throws {
    let fade = version == 0 ? 0.5 : 0.8
    let volume = version == 0 ? 0.9 : 0.7
    try """
    {
      assets: "assets",
      start: "explore",
      tempo: { bpm: 120 },
      parameters: { intensity: { drives: [{ target: "volume", curve: [[0, 1], [1, 0.6]] }] } },
      sources: { calm: { bundled: "explore.ogg" }, tense: { bundled: "combat.ogg" }, big: { bundled: "boss.ogg" } },
      states: {
        explore: { music: "calm", volume: \(volume), transition: { seconds: \(fade) } },
        combat: { music: "tense", transition: { seconds: \(fade), at: "beat" } },
        boss: { music: "big", transition: { seconds: \(fade), at: "bar", enter: "same-position" } },
      },
      rules: [
        { on: "combat.start", do: { state: "combat" } },
        { on: "combat.end", do: { state: "explore" } },
        { on: "boss", do: { state: "boss" } },
        { on: "calm", do: { state: "explore" } },
        { on: "hit", do: { stinger: "hit.ogg", at: "beat", duck: { db: -6, hold: 0.2 } } },
      ],
    }
    """.write(toFile: cuePath, atomically: true, encoding: .utf8)
  }
}
