import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifPlayers

/// Seconds from options, cue files and the API that used to trap once they became frames
/// (issue 13, part 2). The checker and the command line refuse times above a day; the Swift API,
/// which cannot refuse, saturates.
@Suite("Hostile times: seconds too large for frames are refused by the checker and the CLI, saturated by the API")
struct HostileTimeTests {
  @Test("FrameMath saturates: NaN is 0, 1e308 and -1e308 are held to the limit, ordinary values are exact")
  func frameMathSaturates() {
    #expect(FrameMath.frames(seconds: .nan, rate: 48_000) == 0)
    #expect(FrameMath.frames(seconds: 1e308, rate: 48_000) == FrameMath.limit)
    #expect(FrameMath.frames(seconds: .infinity, rate: 48_000) == FrameMath.limit)
    #expect(FrameMath.frames(seconds: -1e308, rate: 48_000) == -FrameMath.limit)
    #expect(FrameMath.frames(seconds: 1.5, rate: 48_000) == 72_000)
    #expect(FrameMath.frames(seconds: 1e-5, rate: 44_100) == 0)
    // Sums of saturated values still fit.
    #expect(FrameMath.limit.multipliedReportingOverflow(by: 1000).overflow == false)
  }

  @Test("Every seconds key of a cue file at 1e308 is an error naming the key and the range [0, 86400]")
  func cueFileSeconds() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-hostile-times")
    try FileManager.default.createDirectory(atPath: directory.file("music"), withIntermediateDirectories: true)
    _ = try EngineHarness.vorbisTone(in: directory, name: "music/calm.ogg", seconds: 0.2)
    let huge = "1e308"
    let text = """
      {
        assets: "music",
        start: "explore",
        tempo: { bpm: 96, offset: \(huge) },
        sources: { calm: { bundled: "calm.ogg", cuePoints: [\(huge)] } },
        states: {
          explore: { music: "calm", between: { seconds: \(huge) } },
          combat: { music: "calm", transition: { seconds: \(huge), at: "bar" } },
        },
        rules: [
          { on: "a", cooldown: \(huge), do: { crossfade: "combat", seconds: \(huge) } },
          { on: "b", do: [{ seek: \(huge), fade: \(huge) }, { stop: true, fade: \(huge) }, { rate: 0.5, ramp: \(huge) }] },
          { on: "c", do: [{ duck: -6, attack: \(huge), hold: \(huge), release: \(huge) }, { volume: 0.5, ramp: \(huge) }] },
          { on: "d", do: [{ skip: "next", seconds: \(huge) }, { pause: true, fade: \(huge) }] },
        ],
      }
      """
    let problems = CueSheet.check(text, path: directory.file("cues.json5")).problems.filter { $0.severity == .error }
    let paths = Set(problems.filter { $0.description.contains("outside [0, 86400]") }.map(\.keyPath))
    let expected: Set = [
      "tempo.offset", "sources.calm.cuePoints[0]", "states.explore.between.seconds",
      "states.combat.transition.seconds", "rules[0].cooldown", "rules[0].do.seconds", "rules[1].do[0].seek",
      "rules[1].do[0].fade", "rules[1].do[1].fade", "rules[1].do[2].ramp", "rules[2].do[0].attack",
      "rules[2].do[0].hold", "rules[2].do[0].release", "rules[2].do[1].ramp", "rules[3].do[0].seconds",
      "rules[3].do[1].fade",
    ]
    #expect(
      expected.subtracting(paths).isEmpty, "not refused: \(expected.subtracting(paths).sorted()); all: \(problems)")

    // One day is still accepted.
    let day = CueSheet.check(text.replacingOccurrences(of: huge, with: "86400"), path: directory.file("cues.json5"))
    #expect(day.problems.filter { $0.severity == .error }.isEmpty, "\(day.problems)")
  }

  @Test("A level script event at 1e15 s or a ramp of 1e308 s is a problem naming the line, not a trap")
  func levelScriptTimes() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-hostile-script")
    let path = directory.file("level.json5")
    try Data("[\n  { at: 1e15, cue: \"a\" },\n  { at: 1, set: \"x\", value: 1, ramp: 1e308 },\n]\n".utf8)
      .write(to: URL(fileURLWithPath: path))
    let error = try #require(throws: (any Error).self) { try CueScript.load(path: path) }
    let text = "\(error)"
    #expect(text.contains("2:") && text.contains("3:") && text.contains("86400"), "\(text)")
  }

  @Test("play and render refuse --seek 1e15 and --duration 1e15 with a usage error that gives the range")
  func commandLineTimes() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-hostile-cli")
    let song = try EngineHarness.vorbisTone(in: directory, seconds: 0.5)
    let out = directory.file("out.wav")
    for arguments in [
      ["render", "--out", out, "--seek", "1e15", song], ["render", "--out", out, "--duration", "1e15", song],
      ["play", "--seek", "1e15", song], ["render", "--out", out, "--crossfade", "1e308", song, song],
    ] {
      let run = try LeitmotifCommand.run(arguments)
      #expect(run.status == 2 || run.status == 1, "\(arguments): status \(run.status)")
      #expect(run.errors.contains("86400"), "\(arguments): \(run.errors)")
      #expect(!run.errors.contains("Fatal error"), "\(run.errors)")
    }
  }

  @Test("The API saturates: a 1e308 s crossfade, a seek to 1e15 s and a skip keep the engine running")
  func apiSaturates() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-hostile-api")
    let a = try EngineHarness.vorbisTone(in: directory, name: "a.ogg", seconds: 2, frequency: 330)
    let b = try EngineHarness.vorbisTone(in: directory, name: "b.ogg", seconds: 2, frequency: 550)
    let engine = try EngineHarness.offlineEngine()
    defer { engine.shutdown() }
    let queue = QueuePlayer(engine: engine)
    // The API refuses a crossfade over a day; the engine must still survive one (the value a
    // transition could carry before that check), so the unchecked initializer makes it.
    #expect(throws: QueueError.invalidCrossfade(1e308)) { try Transition(duration: 1e308, curve: .linear) }
    queue.transition = Transition(validDuration: 1e308, curve: .linear)
    try queue.setQueue(with: [MediaItem(path: a), MediaItem(path: b)])
    queue.play()
    _ = EngineHarness.render(engine, seconds: 0.5)
    try queue.skipToNextItem()  // a crossfade of 1e308 s begins
    let fading = EngineHarness.render(engine, seconds: 0.5)
    #expect(EngineHarness.peak(fading[...]) > 0.1, "the outgoing item still plays while the endless fade runs")
    queue.currentPlaybackTime = 1e15
    _ = EngineHarness.render(engine, seconds: 0.5)

    let player = try Player(engine: engine, item: MediaItem(path: a))
    player.currentPlaybackTime = 1e15
    player.play()
    _ = EngineHarness.render(engine, seconds: 0.3)
    player.currentPlaybackTime = -1e308
    player.play()
    let afterRewind = EngineHarness.render(engine, seconds: 0.3)
    #expect(EngineHarness.peak(afterRewind[...]) > 0.1, "a seek below 0 plays from the start")
  }
}
