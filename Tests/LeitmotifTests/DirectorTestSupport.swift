import Foundation
import LeitmotifFixtures

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// A small game for the director's tests: bundled music made in code (tones a test can tell
/// apart by pitch), a cue file around it, and a run of the simulation that keeps the left channel.
struct DirectorFixture {
  static let rate = 48_000
  /// Pitches of the bundled pieces: which one plays is told by its tone.
  static let explorePitch = 220.0
  static let combatPitch = 880.0
  static let bossPitch = 660.0
  static let stingerPitch = 1_760.0
  static let userPitch = 330.0

  let directory: TemporaryDirectory
  var assets: String { directory.file("assets") }
  var cuePath: String { directory.file("cues.json5") }

  init() throws {
    directory = try TemporaryDirectory(prefix: "leitmotif-director")
    // Each test gets its own copy (some replace a file); the tones are made once per run.
    try FileManager.default.copyItem(atPath: try Self.sharedAssets.get().path, toPath: directory.file("assets"))
  }

  /// The bundled tones, made once for every test of the run.
  private static let sharedAssets = Result { () throws -> TemporaryDirectory in
    let shared = try TemporaryDirectory(prefix: "leitmotif-director-assets")
    let assets = shared.path
    try tone(
      assets + "/explore.ogg", pitch: explorePitch, seconds: 12,
      tags: [("TITLE", "Explore"), ("MOOD", "calm"), ("BPM", "120")])
    try tone(
      assets + "/combat.ogg", pitch: combatPitch, seconds: 12,
      tags: [("TITLE", "Combat"), ("MOOD", "tense"), ("BPM", "120")])
    try tone(
      assets + "/boss.ogg", pitch: bossPitch, seconds: 12, tags: [("TITLE", "Boss"), ("MOOD", "boss"), ("BPM", "90")])
    try tone(assets + "/hit.ogg", pitch: stingerPitch, seconds: 0.5, tags: [("TITLE", "Hit")])
    // Digital silence with a tempo: the first non-zero sample after it is the incoming music's.
    try VorbisEncoder.encode(
      samples: [Float](repeating: 0, count: 2 * 12 * rate), format: .stereo48000,
      tags: [("TITLE", "Quiet"), ("MOOD", "quiet"), ("BPM", "120")], to: assets + "/quiet.ogg")
    return shared
  }

  static func tone(_ path: String, pitch: Double, seconds: Double, amplitude: Float = 0.4, tags: [(String, String)])
    throws
  {
    let samples = ToneGenerator.sine(frequency: pitch, amplitude: amplitude, seconds: seconds, format: .stereo48000)
    // Same pitch on both channels (the generator detunes the right one): one tone per piece.
    var mono = samples
    for frame in 0..<(samples.count / 2) { mono[2 * frame + 1] = samples[2 * frame] }
    try VorbisEncoder.encode(samples: mono, format: .stereo48000, tags: tags, to: path)
  }

  /// Writes the cue file and loads it (the test fails on any problem).
  func sheet(_ text: String) throws -> CueSheet {
    try text.write(toFile: cuePath, atomically: true, encoding: .utf8)
    return try CueSheet.load(path: cuePath)
  }

  /// The common part of the tests' cue files: sources and states over the bundled tones.
  static let sources = """
      assets: "assets",
      sources: {
        calm: { bundled: "explore.ogg" },
        tense: { bundled: { mood: "tense" } },
        bossMusic: { bundled: "boss.ogg" },
        quiet: { bundled: "quiet.ogg" },
        hit: { bundled: "hit.ogg" },
        pair: { bundled: ["explore.ogg", "combat.ogg"] },
      },
    """

  /// Runs `script` and returns the left channel and the timeline.
  func simulate(
    _ sheet: CueSheet, _ script: [CueScript.Step], seconds: Double,
    options: CueSimulation.Options = CueSimulation.Options()
  ) throws -> (left: [Float], timeline: CueTimeline) {
    var options = options
    options.durationSeconds = seconds
    var left = [Float](repeating: 0, count: Int(seconds * Double(Self.rate)) + 1)
    let result = try CueSimulation.run(
      sheet: sheet, script: CueScript(steps: script), outputPath: nil, options: options
    ) { _ in
    } onMix: { start, samples in
      for frame in 0..<(samples.count / 2) where Int(start) + frame < left.count {
        left[Int(start) + frame] = samples[2 * frame]
      }
    }
    return (left, result.timeline)
  }
}

/// Signal measurements on the left channel.
extension DirectorFixture {
  /// Renders `seconds` of a pumped director's offline engine in the game's own 256-frame
  /// callbacks, as a game's audio callback would (`advance` before each mix), calling `each`
  /// with the frame each callback starts on first; the left channel.
  static func renderPumped(
    _ director: Director, _ engine: AudioEngine, seconds: Double, each: (Int) throws -> Void = { _ in }
  ) rethrows -> [Float] {
    var left = [Float]()
    var buffer = [Float](repeating: 0, count: 2 * 256)
    while Double(left.count) < seconds * Double(rate) {
      try each(left.count)
      director.advance(toAudioTime: Double(left.count) / Double(rate))
      buffer.withUnsafeMutableBufferPointer { engine.render(into: $0.baseAddress!, frameCount: 256) }
      for frame in 0..<256 { left.append(buffer[2 * frame]) }
    }
    return left
  }
}

enum Listen {
  /// The strength of `frequency` in `samples` (a Goertzel filter), as an amplitude.
  static func level(of frequency: Double, in samples: ArraySlice<Float>, rate: Int = DirectorFixture.rate) -> Double {
    guard !samples.isEmpty else { return 0 }
    let omega = 2 * Double.pi * frequency / Double(rate)
    let coefficient = 2 * cos(omega)
    var previous = 0.0
    var beforePrevious = 0.0
    for sample in samples {
      let current = Double(sample) + coefficient * previous - beforePrevious
      beforePrevious = previous
      previous = current
    }
    let power = previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
    return 2 * sqrt(max(0, power)) / Double(samples.count)
  }

  /// The window from `from` to `to` seconds.
  static func window(_ left: [Float], _ from: Double, _ to: Double) -> ArraySlice<Float> {
    let start = max(0, min(left.count, Int(from * Double(DirectorFixture.rate))))
    let end = max(start, min(left.count, Int(to * Double(DirectorFixture.rate))))
    return left[start..<end]
  }

  static func rms(_ samples: ArraySlice<Float>) -> Double {
    guard !samples.isEmpty else { return 0 }
    return sqrt(samples.reduce(0) { $0 + Double($1) * Double($1) } / Double(samples.count))
  }

  /// Which of `pitches` is loudest between `from` and `to` (nil if all are quiet).
  static func loudest(_ left: [Float], _ from: Double, _ to: Double, among pitches: [Double]) -> Double? {
    let window = window(left, from, to)
    let levels = pitches.map { level(of: $0, in: window) }
    guard let best = levels.indices.max(by: { levels[$0] < levels[$1] }), levels[best] > 0.02 else { return nil }
    return pitches[best]
  }

  /// The first frame at or after `from` seconds whose sample is not zero.
  static func firstSound(_ left: [Float], after from: Double) -> Int? {
    let start = Int(from * Double(DirectorFixture.rate))
    return left[start...].firstIndex { $0 != 0 }
  }
}

extension CueScript.Step {
  static func cue(_ time: Double, _ name: String, _ payload: CuePayload = [:]) -> CueScript.Step {
    CueScript.Step(time: time, kind: .cue(name, payload))
  }
  static func set(_ time: Double, _ name: String, _ value: Double, ramp: Double = 0) -> CueScript.Step {
    CueScript.Step(time: time, kind: .parameter(name, value: value, rampSeconds: ramp))
  }
}

extension CueTimeline {
  /// The events' outcomes as "cue: fired rule" / "cue: ignored" lines, for failure messages.
  var summary: String { lines.joined(separator: "\n") }
}
