import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifDecoding
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// Inputs a user trial found that hung a render or destroyed a file: absurd tempo tags, loops a
/// few frames long, a render whose output names its input.
@Suite("Degenerate inputs: absurd BPM tags, tiny loops and a render over its own input neither hang nor destroy")
struct DegenerateInputTests {
  static let seconds = 1.0

  func tone(_ tags: [(String, String)], in directory: TemporaryDirectory, name: String) throws -> String {
    let samples = ToneGenerator.sine(frequency: 440, amplitude: 0.3, seconds: Self.seconds, format: .stereo48000)
    return try EngineHarness.vorbis(samples, in: directory, name: name, tags: tags)
  }

  @Test("A BPM tag outside 1...999 is no tempo; one inside is kept")
  func implausibleTempoTags() throws {
    let directory = try TemporaryDirectory()
    for (value, expected) in [
      ("1e308", nil), ("1e10", nil), ("1000", nil), ("0", nil), ("-120", nil), ("nan", nil), ("0.5", nil),
      ("999", 999.0), ("1", 1.0), ("128.5", 128.5),
    ] as [(String, Double?)] {
      let item = try MediaItem.load(path: try tone([("BPM", value)], in: directory, name: "bpm.ogg"))
      #expect(item.beatsPerMinute == expected, "BPM=\(value)")
    }
  }

  @Test(
    "A queue entry whose beat grid is absurdly dense (1e308 BPM, given in code) renders at once, with no beats to report",
    .hangGuard)
  func denseGridRenders() throws {
    let directory = try TemporaryDirectory()
    let path = try tone([], in: directory, name: "dense.ogg")
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    let beats = BeatLog()
    player.addBeatObserver { beats.add($0) }
    var entry = QueueDescriptor.Entry(item: MediaItem(path: path))
    entry.beatGrid = QueueDescriptor.BeatGrid(beatsPerMinute: 1e308)
    try player.setQueue(with: QueueDescriptor(entries: [entry]))
    player.play()
    engine.waitForLoader()
    let started = Date()
    let rendered = EngineHarness.render(engine, seconds: 2)
    player.waitForNotifications()
    engine.shutdown()
    // Without the guard the mixer never got through its first block.
    #expect(Date().timeIntervalSince(started) < 20)
    let peak = rendered.prefix(Int(Self.seconds * 48_000) * 2).map(abs).max() ?? 0
    #expect(peak > 0.2, "the tone plays")
    #expect(beats.all.isEmpty, "a grid that dense has no beats to report")
  }

  @Test("Loop points shorter than 256 frames are refused in code and ignored in tags (the file plays through)")
  func tinyLoops() throws {
    #expect(throws: QueueError.self) { try LoopPoints(startFrame: 0, endFrame: 255) }
    #expect(throws: QueueError.self) { try LoopPoints(loopStart: 1, loopLength: 1) }
    _ = try LoopPoints(startFrame: 0, endFrame: LoopPoints.minimumFrames)

    let directory = try TemporaryDirectory()
    let path = try tone([("LOOPSTART", "1"), ("LOOPLENGTH", "1")], in: directory, name: "tiny-loop.ogg")
    var options = QueueRenderer.Options()
    options.loopRepeat = .untilReleased
    options.durationSeconds = 3
    let started = Date()
    let result = try QueueRenderer.render(paths: [path], to: directory.file("out.wav"), options: options)
    // A 1-frame loop took a seek back per frame: a render of it never ended.
    #expect(Date().timeIntervalSince(started) < 20)
    #expect(result.failures.isEmpty)
    // No loop: the one second of the file, then the queue ends (not 3 s of looping).
    #expect(abs(Double(result.framesWritten) / 48_000 - Self.seconds) < 0.05, "\(result.framesWritten) frames")
  }

  @Test("A render never writes over what it reads, nor over a file that is not a WAV; over an earlier render it does")
  func renderKeepsItsInput() throws {
    let directory = try TemporaryDirectory()
    let path = try tone([], in: directory, name: "song.ogg")
    let original = try Data(contentsOf: URL(fileURLWithPath: path))
    func refused(_ output: String, _ inputs: [String], queue: Bool) -> String? {
      do {
        if queue {
          _ = try QueueRenderer.render(paths: inputs, to: output)
        } else {
          _ = try OfflineRenderer.render(path: inputs[0], to: output)
        }
        return nil
      } catch .write(let written, let reason) {
        #expect(written == output)
        return reason
      } catch {
        Issue.record("unexpected \(error)")
        return nil
      }
    }
    // The input itself, under its own name and another.
    for queue in [false, true] {
      let reason = refused(path, [path], queue: queue)
      #expect(reason?.contains("which the render reads") == true, "\(reason ?? "written")")
      let dotted = directory.path + "/./song.ogg"
      #expect(refused(dotted, [path], queue: queue) != nil)
    }
    #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == original, "the song is untouched")

    // Another file that is not a WAV (a cue file, say).
    let notes = directory.file("cues.json5")
    try "{ states: {} }".write(toFile: notes, atomically: true, encoding: .utf8)
    let reason = refused(notes, [path], queue: false)
    #expect(reason?.contains("not a WAV file") == true, "\(reason ?? "written")")
    #expect(try String(contentsOfFile: notes, encoding: .utf8) == "{ states: {} }")

    // An earlier render is replaced, and /dev/null takes any render.
    let output = directory.file("out.wav")
    _ = try OfflineRenderer.render(path: path, to: output)
    let again = try OfflineRenderer.render(path: path, to: output)
    #expect(again.framesWritten == 48_000)
    _ = try OfflineRenderer.render(path: path, to: "/dev/null")
  }
}

@Suite(
  "Playback rates: 0 pauses, 1/256 to 4 plays, anything else is refused; the engine plays the slowest rate through")
struct SlowRateTests {
  @Test("A rate between 0 and 1/256 is refused with the range named; 1/256 renders without an underrun")
  func slowestRate() throws {
    let directory = try TemporaryDirectory()
    let samples = ToneGenerator.sine(frequency: 440, amplitude: 0.3, seconds: 1, format: .stereo48000)
    let path = try EngineHarness.vorbis(samples, in: directory, name: "tone.ogg")
    for rate: Float in [1e-9, 0.001, 0.0039, -1, .nan, 4.01] {
      var options = OfflineRenderer.Options()
      options.rate = rate
      options.durationSeconds = 1
      #expect(throws: OfflineRenderer.RenderError.self, "rate \(rate)") {
        _ = try OfflineRenderer.render(path: path, to: directory.file("refused.wav"), options: options)
      }
    }
    #expect(PlayerError.rateOutOfRange(0.001).description.contains("1/256"))
    // The slowest rate plays: 1 s of output is 1/256 s of the file, a 1.7 Hz wave of the tone.
    var options = OfflineRenderer.Options()
    options.rate = 1.0 / 256
    options.durationSeconds = 1
    let output = directory.file("slow.wav")
    let result = try OfflineRenderer.render(path: path, to: output, options: options)
    #expect(result.underruns == 0)
    #expect(result.failure == nil)
    let rendered = try WAVFile(path: output).samples
    let rms = sqrt(rendered.reduce(0) { $0 + Double($1) * Double($1) } / Double(max(1, rendered.count)))
    // Below 1/256 this was silent (an underrun per mix) and at 1e-9 the render never ended.
    #expect(rms > 0.05, "rms \(rms)")
  }
}

@Suite("Small messages a user trial found wrong")
struct TrialMessageTests {
  @Test("A parameter set in a cue file that declares none says so, not \"(it has: )\"")
  func noParameters() throws {
    let game = try DirectorFixture()
    let sheet = try game.sheet(
      """
      {
        start: "calm",
      \(DirectorFixture.sources)
        states: { calm: { music: "calm" } },
      }
      """)
    let (_, timeline) = try game.simulate(sheet, [.set(0.5, "danger", 1)], seconds: 1)
    #expect(
      timeline.summary.contains("parameter \"danger\" is not in the cue file (it declares no parameters)"),
      "\(timeline.summary)")
  }

  @Test("cues simulate --duration 0 is a usage error, as render's is")
  func zeroDuration() throws {
    let game = try DirectorFixture()
    _ = try game.sheet("{ start: \"calm\",\n\(DirectorFixture.sources)\n states: { calm: { music: \"calm\" } } }")
    let events = game.directory.file("events.json5")
    try "[]".write(toFile: events, atomically: true, encoding: .utf8)
    let run = try LeitmotifCommand.run(
      ["cues", "simulate", game.cuePath, "--events", events, "--out", game.directory.file("x.wav"), "--duration", "0"])
    #expect(run.status == 2, "\(run.errors)")
    #expect(run.errors.contains("above 0"), "\(run.errors)")
  }

  @Test("A cue file saved as Latin-1 is an error at the byte that is not UTF-8, naming it")
  func latin1CueFile() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("cues.json5")
    // "café" in Latin-1 on line 3, after "  // caf".
    var bytes = Array("{\n  start: \"a\",\n  // caf".utf8)
    bytes.append(0xE9)
    bytes += Array("\n  states: { a: { music: \"x\" } },\n}\n".utf8)
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    let error = #expect(throws: CueFileError.self) { _ = try CueSheet.load(path: path) }
    let problem = try #require(error?.problems.first)
    #expect(problem.location == JSON5.SourceLocation(line: 3, column: 9), "\(problem)")
    #expect(problem.message.contains("0xE9"), "\(problem.message)")
    // A multi-byte character before it counts as one column; a broken sequence is found at its lead.
    #expect(
      CueSheet.firstInvalidUTF8(in: Data(Array("é\u{1F3B5}x".utf8) + [0xE2, 0x28])).0
        == JSON5.SourceLocation(line: 1, column: 4))
  }

  @Test("A reload with warnings lists them, as a refused reload lists its problems")
  func reloadListsWarnings() {
    let warning = CueProblem(
      severity: .warning, file: "cues.json5", location: JSON5.SourceLocation(line: 7, column: 3),
      keyPath: "states.boss",
      message: "the state is never entered")
    let report = DirectorReport(
      time: 1, event: nil, kind: .reloaded(path: "cues.json5", warnings: [warning], changes: []))
    #expect(
      report.kind.description.hasPrefix("reloaded cues.json5: no change but comments or layout\n1 warning:\n"),
      "\(report.kind.description)")
    #expect(report.kind.description.contains("cues.json5:7:3: warning: states.boss: the state is never entered"))
  }

  @Test("A persistent id in a cue file larger than a JSON5 number holds exactly is an error that says to quote it")
  func largeIDInCueFile() throws {
    let game = try DirectorFixture()
    let text = """
      {
        start: "explore",
      \(DirectorFixture.sources.replacingOccurrences(of: "sources: {", with: "sources: {\n    mine: { library: { persistentID: 5724575397412592994 }, fallback: \"calm\" },"))
        states: { explore: { music: "mine" } },
      }
      """
    let error = #expect(throws: CueFileError.self) { _ = try game.sheet(text) }
    #expect(error?.description.contains("write its digits as a string") == true, "\(String(describing: error))")
    // Quoted, or small enough, it is accepted.
    _ = try game.sheet(text.replacingOccurrences(of: "5724575397412592994", with: "\"5724575397412592994\""))
    _ = try game.sheet(text.replacingOccurrences(of: "5724575397412592994", with: "42"))
  }
}
