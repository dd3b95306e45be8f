import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// `make demo` without a sound card: the demo level rendered offline, checked by ear (the WAV's
/// level and peaks) and by its timeline against the level's script.
@Suite("The demo level, rendered offline")
struct DemoTests {
  /// When each state should start being heard: the script's event, and the longest wait for the
  /// bar it lands on (the slowest piece, 90 BPM in 4/4, has bars of 2.67 s).
  static let expectedStates: [(event: Double, state: String)] = [
    (0, "menu"), (6, "explore"), (28, "stealth"), (48, "explore"), (58, "combat"), (88, "explore"),
    (104, "boss"), (130, "bossPhase2"), (158, "explore"), (176, "menu"),
  ]
  static let longestBar = 4 * 60 / 90.0
  /// The combat music's pickup (its two-bar intro at 144 BPM): its downbeat lands on the first
  /// bar line at least that far ahead.
  static let combatPickup = 2 * 4 * 60 / 144.0

  @Test("In real time at --speed 8 each cue goes in, and is printed, at its time in the level's script")
  func realtimeSpeed() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-demo-speed")
    let level = directory.file("level.json5")
    try """
    [ { at: 6, cue: "level.start" }, { at: 20, cue: "area.dark" }, { at: 36, cue: "area.light" }, { at: 44, cue: "combat.end" } ]
    """.write(toFile: level, atomically: true, encoding: .utf8)
    let run = try LeitmotifCommand.run(
      ["--realtime", "--speed", "8", "--level", level, "--no-desktop", "--timeline", directory.file("level.svg")],
      program: "leitmotif-demo")
    #expect(run.status == 0, "\(run.errors)")
    // "00:20.0  area.dark  -> rule ...": the level's clock when the director took the cue. The
    // clock used to start before the director's, and every cue was printed (and went in) 0.5 s
    // of the level early at --speed 4, 1 s at --speed 8.
    var printed: [String: Double] = [:]
    for line in run.output.split(separator: "\n") {
      let fields = line.split(separator: " ", omittingEmptySubsequences: true)
      guard fields.count > 1, ["level.start", "area.dark", "area.light", "combat.end"].contains(String(fields[1]))
      else {
        continue
      }
      let clock = fields[0].split(separator: ":")
      guard clock.count == 2, let minutes = Double(clock[0]), let seconds = Double(clock[1]) else { continue }
      printed[String(fields[1])] = minutes * 60 + seconds
    }
    let script = ["level.start": 6.0, "area.dark": 20, "area.light": 36, "combat.end": 44]
    #expect(Set(printed.keys) == Set(script.keys), "\(run.output)")
    for (cue, at) in script {
      // Not early; late by at most a step of the director's thread and of the poll (8 × 30 ms).
      #expect((printed[cue] ?? -1) >= at - 0.05 && (printed[cue] ?? .infinity) <= at + 0.25, "\(cue): \(printed)")
    }
  }

  @Test(
    "Ctrl-C, SIGTERM and SIGHUP stop the real-time demo in order (the music app it paused is resumed) and exit 128 + the signal"
  )
  func signalsStopInOrder() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-demo-signal")
    let executable = try #require(LeitmotifCommand.executable(named: "leitmotif-demo"))
    for number in [SIGTERM, SIGINT, SIGHUP] {
      let out = directory.file("out-\(number)")
      let child = try ChildProcess(
        executable,
        ["--realtime", "--speed", "4", "--no-desktop", "--timeline", directory.file("level-\(number).svg")],
        environment: ProcessInfo.processInfo.environment, output: out)
      // Once the level plays (the signal before it would find the default action).
      let deadline = Date().addingTimeInterval(30)
      while Date() < deadline, !((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").contains("in real time") {
        usleep(50_000)
      }
      usleep(300_000)
      switch number {
      case SIGTERM: child.terminate()
      case SIGINT: child.interrupt()
      default: child.hangUp()
      }
      let status = child.finish(status: true)
      let printed = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
      #expect(status == String(128 + number), "\(printed)")
      #expect(printed.contains("stopped by signal \(number): shutting down"), "\(printed)")
    }
  }

  @Test("Not silent, no clipping, and the music changes when the script says")
  func demoLevel() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-demo-test")
    let wav = directory.file("level.wav")
    let svg = directory.file("level.svg")
    let run = try LeitmotifCommand.run(
      ["--offline", "--out", wav, "--timeline", svg], program: "leitmotif-demo")
    #expect(run.status == 0, "\(run.errors)")
    #expect(run.output.contains("rendered the 184 s level"), "\(run.output)")
    #expect(run.output.contains("rule \"boss\""), "the run shows which rule did what")
    #expect(run.output.contains("music: state \"combat\""), "and what the music does")

    // The sound: 32-bit float stereo at 48 kHz.
    let samples = try Self.floatSamples(wav)
    #expect(samples.count == 184 * 48_000 * 2)
    let peak = samples.reduce(Float(0)) { max($0, abs($1)) }
    let rms = sqrt(samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count))
    #expect(peak < 1, "clipped: peak \(peak)")
    #expect(rms > 0.03, "too quiet: RMS \(rms)")
    // No stretch of a second is silent while the level runs (the music never drops out).
    for second in 1..<183 {
      let window = samples[(second * 96_000)..<((second + 1) * 96_000)]
      #expect(window.contains { abs($0) > 0.01 }, "silent at \(second) s")
    }

    // The timeline: each state starts at its event, on the next bar at the latest.
    let timeline = try JSONDecoder().decode(
      CueTimeline.self, from: Data(contentsOf: URL(fileURLWithPath: directory.file("level.json"))))
    #expect(timeline.states.map(\.state) == Self.expectedStates.map(\.state), "\(timeline.states)")
    for (band, expected) in zip(timeline.states, Self.expectedStates) {
      #expect(
        band.from >= expected.event
          && band.from <= expected.event + Self.longestBar + (band.state == "combat" ? Self.combatPickup : 0) + 0.05,
        "\(band.state) heard from \(band.from) s, its event at \(expected.event) s")
    }
    // The events the cue file must ignore: a cooldown, a weak threat, the boss's priority.
    let ignored = timeline.events.filter { $0.outcome == "ignored" }.map(\.at)
    #expect(ignored == [41, 66.4, 112, 114], "\(timeline.events.map { "\($0.at) \($0.cue) \($0.outcome)" })")
    #expect(timeline.stingers.count == 3)
    // Victory: the fanfare is the bridge into exploring (on the boss's bar after 158 s), and the
    // exploring music follows it on its last second (the fanfare lasts 4 s).
    let victory = try #require(timeline.items.first { $0.title == "Victory (Stinger)" }, "\(timeline.items)")
    let exploring = try #require(timeline.items.first { $0.at > victory.at && $0.title.contains("Exploration") })
    #expect(victory.at >= 158 && victory.at <= 158 + Self.longestBar + 0.05, "\(victory)")
    #expect(abs(exploring.at - victory.at - 3) < 0.05, "\(exploring.at) after \(victory.at)")
    #expect(FileManager.default.fileExists(atPath: svg))
    let picture = try String(contentsOfFile: svg, encoding: .utf8)
    #expect(picture.contains("bossPhase2") && picture.contains("enemy.spotted"))
    // A lane per parameter, and the music's low-pass filter, with the level's moves on them.
    let lanes = timeline.lanes ?? []
    #expect(
      Set(lanes.map(\.name)) == [
        "health", "paused", "intensity", CueTimeline.lowPassLane, CueTimeline.tempoLane, "layer alert",
      ],
      "\(lanes.map(\.name))")
    // The enraged boss at 150 s: the tempo rises to 1.15 over 2 s (pitch kept), and eases back
    // to 1 as the fight ends at 158 s.
    let tempo = lanes.first { $0.name == CueTimeline.tempoLane }?.points ?? []
    #expect(tempo.first.map { $0[0] >= 150 && $0[0] < 150.5 } == true, "the tempo moves from 150 s: \(tempo.prefix(3))")
    #expect(tempo.contains { $0[0] >= 152 && $0[0] < 158 && abs($0[1] - 1.15) < 0.001 }, "1.15 while enraged")
    #expect(tempo.last.map { $0[0] >= 158 && $0[0] < 160 && $0[1] == 1 } == true, "back to 1: \(tempo.suffix(3))")
    #expect(picture.contains(#"data-name="music tempo""#))
    // The stealth state's alert stem: silent in the dark until the wolf at 40 s brings it in on
    // the bar; silent again once the state is left.
    let alert = lanes.first { $0.name == "layer alert" }?.points ?? []
    let stealth = try #require(timeline.states.first { $0.state == "stealth" })
    #expect(!alert.contains { $0[0] > stealth.from + 0.1 && $0[0] < 40 && $0[1] > 0 }, "no alert before 40 s: \(alert)")
    #expect(
      alert.contains { $0[0] >= 40 && $0[0] < stealth.to && $0[1] > 0.9 }, "the alert stem rises after 40 s: \(alert)")
    #expect(alert.contains { $0[0] >= 40 && $0[0] < stealth.to && $0[1] > 0.1 && $0[1] < 0.9 }, "it fades in: \(alert)")
    #expect(alert.last?[1] == 0, "silent after the stealth state: \(alert.suffix(3))")
    #expect(picture.contains(#"data-name="layer alert""#))
    let health = lanes.first { $0.name == "health" }?.points ?? []
    #expect(health.contains { $0[0] >= 74 && $0[0] <= 76 && $0[1] < 0.5 }, "health drops at 74 s: \(health.prefix(5))")
    let filter = lanes.first { $0.name == CueTimeline.lowPassLane }?.points ?? []
    #expect(filter.contains { $0[0] >= 74 && $0[0] <= 86 && $0[1] < 0.8 }, "low health muffles the music (0.71)")
    #expect(picture.contains(#"data-name="intensity""#) && picture.contains(#"data-name="music low-pass""#))
  }

  /// The samples of a WAV file of 32-bit floats (the header's `data` chunk).
  static func floatSamples(_ path: String) throws -> [Float] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    guard let range = data.range(of: Data("data".utf8)) else { return [] }
    let start = range.upperBound + 4
    let count = (data.count - start) / 4
    return data[start...].withUnsafeBytes { raw in
      (0..<count).map { raw.loadUnaligned(fromByteOffset: $0 * 4, as: Float.self) }
    }
  }
}
