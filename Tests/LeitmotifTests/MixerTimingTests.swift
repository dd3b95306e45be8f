import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// The mixer's clock, to the frame: files of other rates, transitions under a rate change, pause
/// and resume, and the summed power of a crossfade measured per frame.
@Suite("The mixer: every voice on one sample clock")
struct MixerTimingTests {
  static let rate = 48_000

  /// A cue file over `game`'s assets with a silent piece and a tone to cross into.
  func level(quiet: String, tone: String, transition: String, quietState: String = "") -> String {
    """
    {
      assets: "assets",
      start: "quiet",
      sources: { quiet: { bundled: "\(quiet)" }, tone: { bundled: "\(tone)" } },
      states: {
        quiet: { music: "quiet"\(quietState) },
        tone: { music: "tone", transition: { \(transition) } },
      },
      rules: [ { on: "go", do: { state: "tone" } } ],
    }
    """
  }

  /// Runs `sheet` with `script` offline and returns both channels.
  func simulate(_ sheet: CueSheet, _ script: [CueScript.Step], seconds: Double) throws -> (
    left: [Float], right: [Float]
  ) {
    var options = CueSimulation.Options()
    options.durationSeconds = seconds
    var left = [Float](repeating: 0, count: Int(seconds * Double(Self.rate)) + 1)
    var right = left
    _ = try CueSimulation.run(
      sheet: sheet, script: CueScript(steps: script), outputPath: nil, options: options, diagnostics: nil
    ) { start, samples in
      for frame in 0..<(samples.count / 2) where Int(start) + frame < left.count {
        left[Int(start) + frame] = samples[2 * frame]
        right[Int(start) + frame] = samples[2 * frame + 1]
      }
    }
    return (left, right)
  }

  func silence(_ path: String, rate: Int, seconds: Double, bpm: Int, clickAt: Double? = nil) throws {
    let format = PCMFormat(sampleRate: rate, channelCount: 2)
    var samples = [Float](repeating: 0, count: 2 * Int(seconds * Double(rate)))
    if let clickAt { samples[2 * Int((clickAt * Double(rate)).rounded()) + 1] = 0.8 }
    try VorbisEncoder.encode(samples: samples, format: format, tags: [("TITLE", "Quiet"), ("BPM", "\(bpm)")], to: path)
  }

  /// A tone in the left channel only (the right one stays free for a marker).
  func leftTone(_ path: String, rate: Int, seconds: Double) throws {
    let format = PCMFormat(sampleRate: rate, channelCount: 2)
    var samples = ToneGenerator.sine(frequency: 440, amplitude: 0.4, seconds: seconds, format: format)
    for frame in 0..<(samples.count / 2) { samples[2 * frame + 1] = 0 }
    try VorbisEncoder.encode(samples: samples, format: format, tags: [("TITLE", "Tone")], to: path)
  }

  @Test("A 22.05 kHz playing item: the incoming music starts on its beat, to the frame (it was 301 frames late)")
  func outgoingAtAnotherRate() throws {
    let game = try DirectorFixture()
    try silence(game.assets + "/quiet22.ogg", rate: 22_050, seconds: 6, bpm: 120)
    let sheet = try game.sheet(
      level(quiet: "quiet22.ogg", tone: "combat.ogg", transition: "seconds: 0.5, curve: \"linear\", at: \"beat\""))
    // Beats every 0.5 s; the cue at 1.3 s waits for 1.5 s: mix frame 72 000.
    let (left, _) = try simulate(sheet, [.cue(1.3, "go")], seconds: 2.5)
    let first = try #require(Listen.firstSound(left, after: 0))
    #expect(abs(first - 72_000) <= 1, "first sound at frame \(first)")
  }

  @Test("A 22.05 kHz incoming item starts on the beat, to the frame (it was 301 frames late)")
  func incomingAtAnotherRate() throws {
    let game = try DirectorFixture()
    try leftTone(game.assets + "/tone22.ogg", rate: 22_050, seconds: 4)
    let sheet = try game.sheet(
      level(quiet: "quiet.ogg", tone: "tone22.ogg", transition: "seconds: 0.5, curve: \"linear\", at: \"beat\""))
    let (left, _) = try simulate(sheet, [.cue(1.3, "go")], seconds: 2.5)
    let first = try #require(Listen.firstSound(left, after: 0))
    #expect(abs(first - 72_000) <= 1, "first sound at frame \(first)")
    // And it plays at its own speed: 440 Hz, not 440 × 48/22.05.
    let level440 = Listen.level(of: 440, in: Listen.window(left, 2.1, 2.4))
    #expect(level440 > 0.3, "440 Hz at \(level440)")
  }

  @Test(
    "While the rate ramps, a bar transition lands where the playing music reaches its bar line (it missed by 33 ms)")
  func transitionUnderARateRamp() throws {
    let game = try DirectorFixture()
    // Silence at 120 BPM with a click, in the right channel, on the bar line at 2 s of the file.
    try silence(game.assets + "/click.ogg", rate: 48_000, seconds: 8, bpm: 120, clickAt: 2.0)
    try leftTone(game.assets + "/tone.ogg", rate: 48_000, seconds: 4)
    var text = level(quiet: "click.ogg", tone: "tone.ogg", transition: "seconds: 0.5, curve: \"linear\", at: \"bar\"")
    text = text.replacingOccurrences(
      of: "rules: [", with: "rules: [ { on: \"faster\", do: { rate: 1.4, ramp: 1 } },")
    // The rate ramps from 1 to 1.4 over 0.2 ... 1.2 s; the transition is asked for at 0.5 s.
    let (left, right) = try simulate(try game.sheet(text), [.cue(0.2, "faster"), .cue(0.5, "go")], seconds: 3)
    let click = try #require(right.indices.max { abs(right[$0]) < abs(right[$1]) })
    #expect(abs(right[click]) > 0.3, "the click is heard")
    let first = try #require(Listen.firstSound(left, after: 0))
    #expect(abs(first - click) <= 2, "the incoming music starts at frame \(first), the bar line is heard at \(click)")
    #expect(
      Double(click) / 48_000 < 1.9, "the click came early: the rate ramp was in force (\(Double(click) / 48_000) s)")
  }

  @Test(
    "A 44.1 kHz item hands over to the next on the same frame wherever the mix blocks cut it (live and offline were a frame apart)"
  )
  func handOverFromAnotherRate() throws {
    // A silent 48 kHz piece of 1 s and k × 37 frames, then a silent 44.1 kHz piece of 2 s (96,000
    // mix frames, a whole number), then a tone; 0.5 s crossfades. The 44.1 kHz piece starts
    // 37 frames later in the mix's 256-frame blocks each time, so its position is summed over
    // blocks cut differently, and came out a last place either side of the whole frame: its
    // hand-over fell on one frame or the one before. It must start 72,000 frames after the
    // piece does, every time.
    let game = try DirectorFixture()
    try silence(game.assets + "/between44.ogg", rate: 44_100, seconds: 2, bpm: 120)
    try leftTone(game.assets + "/after.ogg", rate: 48_000, seconds: 1)
    var offsets: [Int: [Int]] = [:]
    for k in 0..<12 {
      let frames = 48_000 + 37 * k
      try VorbisEncoder.encode(
        samples: [Float](repeating: 0, count: 2 * frames), format: .stereo48000, tags: [("TITLE", "Lead \(k)")],
        to: game.assets + "/lead\(k).ogg")
      let sheet = try game.sheet(
        """
        {
          assets: "assets", start: "queue",
          sources: { pieces: { bundled: ["lead\(k).ogg", "between44.ogg", "after.ogg"] } },
          states: { queue: { music: "pieces", repeat: "none", transition: { seconds: 0 }, between: { seconds: 0.5, curve: "linear" } } },
        }
        """)
      let (left, _) = try simulate(sheet, [], seconds: 3.6)
      let first = try #require(Listen.firstSound(left, after: 0))
      // The 44.1 kHz piece starts where the lead's 0.5 s hand-over begins: 24,000 frames before
      // the lead's end.
      offsets[first - (frames - 24_000), default: []].append(k)
    }
    #expect(offsets.count == 1, "the tone began this many frames after the 44.1 kHz piece (for these k): \(offsets)")
    #expect(offsets.keys.allSatisfy { (72_000...72_001).contains($0) }, "\(offsets)")
  }

  @Test("Pause and resume lose nothing: the resume starts on the first frame the pause faded out")
  func pauseLosesNothing() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisNoise(in: directory, seconds: 3)
    let decoded = try EngineHarness.decodeAll(path).samples
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine, item: MediaItem(path: path))
    player.play()
    let before = EngineHarness.render(engine, frames: 20 * EngineHarness.renderFrames)
    #expect(Array(before) == Array(decoded[0..<before.count]), "what plays is the decode, sample for sample")
    let pausedAt = before.count / 2  // the pause lands on the next frame mixed
    player.pause()
    let fade = EngineHarness.render(engine, frames: 4 * EngineHarness.renderFrames)
    #expect(fade[(2 * 480)...].allSatisfy { $0 == 0 }, "silent after the 10 ms fade-out")
    player.play()
    let after = EngineHarness.render(engine, frames: 10 * EngineHarness.renderFrames)
    // The resume fades in over 480 frames from file frame `pausedAt`, then it is the decode.
    for frame in 480..<(after.count / 2) {
      let source = pausedAt + frame
      if after[2 * frame] != decoded[2 * source] || after[2 * frame + 1] != decoded[2 * source + 1] {
        Issue.record("frame \(frame) after the resume is not file frame \(source)")
        break
      }
    }
    #expect(abs(after[2 * 240] - decoded[2 * (pausedAt + 240)] * 0.5) < 1e-3, "half-way up the fade-in")
  }

  @Test("An equal-power crossfade keeps the summed power within 0.1 dB, frame by frame")
  func equalPowerPerFrame() throws {
    let directory = try TemporaryDirectory()
    // 400 Hz and 600 Hz: over 240 frames (whole periods of both) they are orthogonal, so the
    // power of the sum is the sum of the powers.
    let format = PCMFormat.stereo48000
    let a = directory.file("a.ogg")
    let b = directory.file("b.ogg")
    try VorbisEncoder.encode(
      samples: ToneGenerator.sine(frequency: 400, amplitude: 0.4, seconds: 5, format: format), format: format,
      quality: 0.9, to: a)
    try VorbisEncoder.encode(
      samples: ToneGenerator.sine(frequency: 600, amplitude: 0.4, seconds: 5, format: format), format: format,
      quality: 0.9, to: b)
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    player.transition = try Transition(duration: 2, curve: .equalPower)
    try player.setQueue(with: [MediaItem(path: a), MediaItem(path: b)])
    player.play()
    let rendered = EngineHarness.render(engine, seconds: 6)
    let left = stride(from: 0, to: rendered.count, by: 2).map { Double(rendered[$0]) }
    func power(_ start: Int) -> Double { left[start..<(start + 240)].reduce(0) { $0 + $1 * $1 } / 240 }
    let reference = power(48_000)
    var worst = 0.0
    // The crossfade runs from 3 s to 5 s.
    for start in stride(from: 3 * 48_000 - 2_400, to: 5 * 48_000 + 2_400, by: 240) {
      worst = max(worst, abs(10 * log10(power(start) / reference)))
    }
    #expect(worst < 0.1, "largest deviation: \(worst) dB")
    player.waitForNotifications()
  }
}
