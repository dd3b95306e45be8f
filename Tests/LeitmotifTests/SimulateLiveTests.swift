import Foundation
import LeitmotifFixtures
import Synchronization
import Testing

@testable import LeitmotifCues
@testable import LeitmotifEngine

/// `leitmotif cues simulate --live`: the options that only a live run has.
@Suite("cues simulate --live: its duration and latency")
struct SimulateLiveTests {
  static func cues(assets: String) -> String {
    """
    {
      assets: "\(assets)",
      start: "calm",
      sources: { calm: { bundled: "calm.ogg" } },
      states: { calm: { music: "calm" } },
      parameters: { danger: { default: 0 } },
      rules: [ { on: "late", do: { stop: true } } ],
    }
    """
  }

  @Test("A --duration shorter than the script ends the run there (a cue at 30 s is never posted), with --latency low")
  func durationCutsTheScript() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-simulate-live")
    _ = try EngineHarness.vorbisTone(in: directory, name: "calm.ogg", seconds: 4)
    let cues = directory.file("level.json5")
    let events = directory.file("script.json5")
    try Self.cues(assets: directory.path).write(toFile: cues, atomically: true, encoding: .utf8)
    try #"[ { at: 30, cue: "late" } ]"#.write(toFile: events, atomically: true, encoding: .utf8)
    let started = Date()
    let run = try LeitmotifCommand.run(
      ["cues", "simulate", cues, "--events", events, "--live", "--duration", "1.5", "--latency", "low"])
    let elapsed = Date().timeIntervalSince(started)
    #expect(run.status == 0, "\(run.errors)")
    #expect(run.output.contains("played 1.5 s live"), "\(run.output)")
    #expect(!run.output.contains("[late]"), "\(run.output)")
    #expect(elapsed < 10, "a 1.5 s run took \(elapsed) s")
  }

  @Test("The script's times are the director's: an event at 1 s is applied live at 1 s (within a step), as offline")
  func scriptOnTheDirectorsClock() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-simulate-live")
    _ = try EngineHarness.vorbisTone(in: directory, name: "calm.ogg", seconds: 4)
    let cues = directory.file("level.json5")
    let events = directory.file("script.json5")
    let recorded = directory.file("recorded.json5")
    try Self.cues(assets: directory.path).write(toFile: cues, atomically: true, encoding: .utf8)
    try #"[ { at: 0.5, set: "danger", value: 0.8, ramp: 0.25 }, { at: 1, cue: "late" } ]"#.write(
      toFile: events, atomically: true, encoding: .utf8)
    let run = try LeitmotifCommand.run(
      ["cues", "simulate", cues, "--events", events, "--live", "--duration", "1.5", "--record", recorded])
    #expect(run.status == 0, "\(run.errors)")
    let script = try CueScript.load(path: recorded)
    #expect(script.steps.count == 2, "\(run.output)")
    // The parameter change is recorded (it was left out, so a replay differed) and printed.
    let set = try #require(script.steps.first)
    guard case .parameter(let name, let value, let ramp) = set.kind else {
      Issue.record("the first recorded step is not the parameter change: \(run.output)")
      return
    }
    #expect(name == "danger" && value == 0.8 && ramp == 0.25)
    #expect(set.time > 0.47 && set.time < 0.65, "set at \(set.time) s")
    #expect(run.output.contains(#"set "danger" to 0.8 over 0.250 s"#), "\(run.output)")
    #expect(run.output.contains("recorded 1 event and 1 parameter change"), "\(run.output)")
    // Each time is written so that it reads back as the very frame of the mix clock it names
    // (with 9 decimals a replayed ramp started a fraction of a nanosecond off). The device's rate
    // is the test machine's: one of the usual ones.
    let rates = [22_050.0, 32_000, 44_100, 48_000, 88_200, 96_000]
    for step in script.steps {
      #expect(rates.contains { (step.time * $0).rounded() / $0 == step.time }, "\(step.time) is no frame")
    }
    let applied = try #require(script.steps.last?.time)
    // Posted on the wall clock from `start`, it landed about 0.2 s early (director time 0 is a
    // quarter of a second after the start). Never early now; late only by as much as a loaded
    // machine wakes the posting thread late (45 ms once, with the whole suite running).
    #expect(applied > 0.97 && applied < 1.15, "applied at \(applied) s")
  }

  @Test(
    "A real-time director schedules at least one pump of the streaming thread ahead (two device periods and a block); offline, 1024 frames at 48 kHz"
  )
  func defaultLead() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-simulate-live")
    _ = try EngineHarness.vorbisTone(in: directory, name: "calm.ogg", seconds: 1)
    let cues = directory.file("level.json5")
    try Self.cues(assets: directory.path).write(toFile: cues, atomically: true, encoding: .utf8)
    let sheet = try CueSheet.load(path: cues)
    let live = try AudioEngine(output: .defaultDevice)
    let offline = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    let liveDirector = Director(engine: live, sheet: sheet, clocking: .pumped)
    let offlineDirector = Director(engine: offline, sheet: sheet, clocking: .pumped)
    defer {
      liveDirector.shutdown()
      offlineDirector.shutdown()
      live.shutdown()
      offline.shutdown()
    }
    // Two periods: a pump that finds two of OpenAL's mixes done tops up both at once.
    let pump = 2 * live.initialDevice.mixPeriodFrames + 256
    #expect(liveDirector.leadFrames >= Int64(pump), "lead \(liveDirector.leadFrames) frames, a pump mixes \(pump)")
    #expect(liveDirector.leadFrames >= 1024)
    #expect(offlineDirector.leadFrames == 1024)
  }

  @Test("--app: a simulation with the player's library uses the consent given to that application id")
  func applicationConsent() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-simulate-app")
    _ = try EngineHarness.vorbisTone(in: directory, name: "calm.ogg", seconds: 2)
    let music = directory.file("Music")
    try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
    try DirectorFixture.tone(music + "/mine.ogg", pitch: 330, seconds: 2, tags: [("TITLE", "Mine")])
    let cues = directory.file("level.json5")
    try """
    { assets: "\(directory.path)", start: "calm",
      sources: { mine: { library: {}, fallback: "calm" }, calm: { bundled: "calm.ogg" } },
      states: { calm: { music: "mine" } } }
    """.write(toFile: cues, atomically: true, encoding: .utf8)
    let events = directory.file("script.json5")
    try "[]".write(toFile: events, atomically: true, encoding: .utf8)
    let environment = [
      "HOME": directory.path, "XDG_STATE_HOME": directory.file("state"), "XDG_CACHE_HOME": directory.file("cache"),
      "XDG_DATA_HOME": directory.file("data"), "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
    ]
    func simulate(_ app: String) throws -> String {
      let run = try LeitmotifCommand.run(
        [
          "cues", "simulate", cues, "--events", events, "--out", "/dev/null", "--duration", "1",
          "--library", music, "--app", app,
        ], environment: environment, input: FileHandle.nullDevice)
      #expect(run.status == 0, "\(run.errors)\n\(run.output)")
      return run.output
    }
    #expect(try LeitmotifCommand.run(["access", "allow", "my-game"], environment: environment).status == 0)
    #expect(try LeitmotifCommand.run(["access", "deny", "their-game"], environment: environment).status == 0)
    let allowed = try simulate("my-game")
    #expect(allowed.contains("\"Mine\"") && allowed.contains("(user song)"), "\(allowed)")
    let denied = try simulate("their-game")
    #expect(denied.contains("denied by the player") && !denied.contains("(user song)"), "\(denied)")
    // Another application is not asked for on the terminal: nobody answered for it.
    let unasked = try simulate("new-game")
    #expect(unasked.contains("not been granted") && !unasked.contains("(user song)"), "\(unasked)")
  }

  @Test("--latency takes standard or low, and only with --live; --timeline only with --out")
  func latencyChecked() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-simulate-live")
    let cues = directory.file("level.json5")
    let events = directory.file("script.json5")
    try Self.cues(assets: directory.path).write(toFile: cues, atomically: true, encoding: .utf8)
    try "[]".write(toFile: events, atomically: true, encoding: .utf8)
    let wrong = try LeitmotifCommand.run(["cues", "simulate", cues, "--events", events, "--live", "--latency", "fast"])
    #expect(wrong.status == 2)
    #expect(wrong.errors.contains("--latency: expected standard or low, got \"fast\""), "\(wrong.errors)")
    let offline = try LeitmotifCommand.run(
      ["cues", "simulate", cues, "--events", events, "--out", directory.file("x.wav"), "--latency", "low"])
    #expect(offline.status == 2)
    #expect(offline.errors.contains("--latency goes with --live"), "\(offline.errors)")
    // --timeline is the offline render's: with --live it wrote nothing and said nothing.
    let timeline = try LeitmotifCommand.run(
      ["cues", "simulate", cues, "--events", events, "--live", "--timeline", directory.file("t")])
    #expect(timeline.status == 2)
    #expect(timeline.errors.contains("--timeline goes with --out; with --live, --record"), "\(timeline.errors)")
  }
  @Test("A director that wakes late catches up its ramps, and takes what was posted since at the present frame")
  func catchUpTakesNoInput() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-simulate-live")
    _ = try EngineHarness.vorbisTone(in: directory, name: "calm.ogg", seconds: 2)
    let cues = directory.file("level.json5")
    try Self.cues(assets: directory.path).write(toFile: cues, atomically: true, encoding: .utf8)
    let sheet = try CueSheet.load(path: cues)
    let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    let director = Director(engine: engine, sheet: sheet, clocking: .pumped)
    defer {
      director.shutdown()
      engine.shutdown()
    }
    let taken = Mutex<[(name: String, time: Double)]>([])
    director.onParametersTaken = { changes, time in
      taken.withLock { list in for change in changes { list.append((change.name, time)) } }
    }
    director.advance(toAudioTime: 0)
    // A ramp keeps the director moving, so the next step catches up every grid frame in between.
    director.setParameter("danger", 1, rampSeconds: 2)
    director.advance(toAudioTime: 0.1)
    // Set when the clock is at 1 s: taken at 1 s (and the lead), not at the first frame missed.
    director.setParameter("danger", 0.5)
    director.advance(toAudioTime: 1)
    let times = taken.withLock { $0 }
    #expect(times.count == 2, "\(times)")
    let lead = Double(director.leadFrames) / 48_000
    let last = try #require(times.last?.time)
    #expect(abs(last - (1 + lead)) < 256.0 / 48_000, "set at 1 s (lead \(lead) s), taken at \(last) s")
  }
}
