import Foundation
import LeitmotifFixtures
import Testing

/// An engine with nothing to play pauses OpenAL's own mixer after two seconds (an idle OpenAL
/// device still mixes a period of silence every period, about ten times what the rest of an
/// idle engine costs: `leitmotif-bench voices`), and starts it again when something plays.
/// OpenAL Soft 1.19's wave writer is the exception: its stop writes the header's sizes and a
/// restart would then write the audio over the header.
@Suite("An idle engine pauses OpenAL's mixer")
struct IdleDeviceTests {
  static let level = """
    {
      assets: "\(LiveEqualsOfflineTests.assets)",
      start: "explore",
      sources: { calm: { bundled: "explore.ogg" } },
      states: { explore: { music: "calm" } },
      rules: [
        { on: "quiet", do: { stop: true, fade: 0.1 } },
        { on: "again", do: { resume: true } },
      ],
    }
    """
  static let script = """
    [
      { at: 1.0, cue: "quiet" },
      { at: 5.5, cue: "again" },
    ]
    """

  /// Runs the level live for 8 s with `environment`; its standard error.
  static func runLevel(_ directory: TemporaryDirectory, environment: [String: String]) throws -> String {
    let cues = directory.file("level.json5")
    let events = directory.file("script.json5")
    try Self.level.write(toFile: cues, atomically: true, encoding: .utf8)
    try Self.script.write(toFile: events, atomically: true, encoding: .utf8)
    let run = try LeitmotifCommand.run(
      ["cues", "simulate", cues, "--events", events, "--live", "--duration", "8"], environment: environment)
    #expect(run.status == 0, "\(run.errors)")
    return run.errors
  }

  @Test("On OpenAL's null device: paused 2 s after the stop, running again at the resume")
  func pausesAndResumes() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-idle")
    var environment = ProcessInfo.processInfo.environment
    environment["ALSOFT_DRIVERS"] = "null"
    let errors = try Self.runLevel(directory, environment: environment)
    let lines = errors.split(separator: "\n").map(String.init)
    let paused = lines.firstIndex { $0.contains("OpenAL's mixer on") && $0.contains("is paused until something plays") }
    let resumed = lines.firstIndex { $0.contains("OpenAL's mixer on") && $0.contains("runs again") }
    #expect(paused != nil, "the mixer is paused while nothing plays: \(errors)")
    #expect(resumed != nil, "and runs again when the music resumes: \(errors)")
    if let paused, let resumed { #expect(paused < resumed) }
    #expect(lines.filter { $0.contains("is paused until") }.count == 1, "paused once: \(errors)")
  }

  @Test(
    "On the wave writer the mixer is not paused: the capture keeps every frame of the 8 s and the music after the stop")
  func waveWriterKeepsRunning() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-idle-wave")
    let capture = directory.file("live.wav")
    let environment = try WaveBackend.environment(capturingTo: capture, configuration: directory.file("wave.conf"))
    let errors = try Self.runLevel(directory, environment: environment)
    #expect(!errors.contains("is paused until"), "\(errors)")
    let heard = try DemoTests.floatSamples(capture)
    let frames = heard.count / 2
    let rate = 48_000
    #expect(frames >= 7 * rate + rate / 2, "the capture holds \(Double(frames) / Double(rate)) s of 8 s")
    func rms(_ start: Int, _ count: Int) -> Double {
      let range = max(0, 2 * start)..<min(heard.count, 2 * (start + count))
      guard !range.isEmpty else { return 0 }
      return (range.reduce(0.0) { $0 + Double(heard[$1] * heard[$1]) } / Double(range.count)).squareRoot()
    }
    let firstSound = (0..<frames).first { abs(heard[2 * $0]) > 1e-4 } ?? frames
    #expect(rms(firstSound, rate / 2) > 0.01, "the music plays before the stop")
    #expect(rms(firstSound + 3 * rate, rate) < 1e-4, "silence while stopped")
    #expect(rms(firstSound + 5 * rate, rate) > 0.01, "the music plays after the resume")
  }
}
