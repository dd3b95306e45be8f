import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// Tempo that keeps pitch (issue 15, part 5): the queue player's voices go through SoundTouch,
/// so the music lasts duration / tempo and its tones stay where they are; beats, bar lines and
/// positions follow the stretched time; `rate` stays tape speed.
@Suite("Tempo keeping pitch: SoundTouch in each music voice, grids on the stretched time")
struct TimeStretchTests {
  static let rate = 48_000

  /// The tone's frequency from the left channel's upward zero crossings between `from` and `to`
  /// seconds (a pure tone: exact to a crossing).
  static func frequency(_ stereo: [Float], from: Double, to: Double) -> Double {
    let start = Int(from * Double(rate))
    let end = min(stereo.count / 2, Int(to * Double(rate)))
    var first: Int?
    var last = 0
    var count = 0
    for frame in (start + 1)..<end where stereo[2 * (frame - 1)] < 0 && stereo[2 * frame] >= 0 {
      if first == nil { first = frame } else { count += 1 }
      last = frame
    }
    guard let first, count > 0 else { return 0 }
    return Double(count) * Double(rate) / Double(last - first)
  }

  /// The frame after the last one louder than -60 dB: where the music ends.
  static func soundingFrames(_ stereo: [Float]) -> Int {
    var frame = stereo.count / 2 - 1
    while frame > 0 && abs(stereo[2 * frame]) < 0.001 && abs(stereo[2 * frame + 1]) < 0.001 { frame -= 1 }
    return frame + 1
  }

  /// Renders `path` on a queue player at `tempo` (and `playbackRate`) until it ends.
  static func renderQueue(_ path: String, tempo: Float, playbackRate: Float = 1, seconds: Double) throws -> [Float] {
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    try player.setTempo(tempo)
    try player.setQueue(with: [MediaItem(path: path)])
    try player.setCurrentPlaybackRate(playbackRate)
    engine.waitForLoader()
    let rendered = EngineHarness.render(engine, seconds: seconds)
    engine.shutdown()
    return rendered
  }

  @Test(
    "A 4 s tone at tempo T lasts 4 / T s within 1 % and keeps its pitch within 1 %; rate moves both",
    arguments: [Float(0.5), 0.8, 1.25, 2])
  func durationAndPitch(tempo: Float) throws {
    let directory = try TemporaryDirectory()
    let tone = try EngineHarness.vorbisTone(in: directory, seconds: 4, frequency: 440, amplitude: 0.4)
    let stretched = try Self.renderQueue(tone, tempo: tempo, seconds: 9)
    let seconds = Double(Self.soundingFrames(stretched)) / Double(Self.rate)
    let expected = 4 / Double(tempo)
    #expect(abs(seconds / expected - 1) < 0.01, "tempo \(tempo): \(seconds) s, expected \(expected) s")
    let pitch = Self.frequency(stretched, from: 0.3, to: expected - 0.3)
    #expect(abs(pitch / 440 - 1) < 0.01, "tempo \(tempo): \(pitch) Hz")
    // Steady all the way: no window of 50 ms drops below half the tone's level (no gap, no hole).
    let window = Self.rate / 20
    for start in stride(from: Self.rate / 10, to: Int((expected - 0.2) * Double(Self.rate)) - window, by: window) {
      let level = Listen.rms(stretched[(2 * start)..<(2 * (start + window))])
      #expect(level > 0.4 * 0.707 * 0.5, "tempo \(tempo): \(level) at \(Double(start) / Double(Self.rate)) s")
    }
    // The control: rate (tape speed) changes the pitch with the speed.
    let taped = try Self.renderQueue(tone, tempo: 1, playbackRate: tempo, seconds: 9)
    let tapePitch = Self.frequency(taped, from: 0.3, to: expected - 0.3)
    #expect(abs(tapePitch / (440 * Double(tempo)) - 1) < 0.01, "rate \(tempo): \(tapePitch) Hz")
  }

  /// Bursts (100 ms of 1 kHz) on every beat of a 120 BPM grid, 8 s. Longer than what WSOLA
  /// skips or repeats at a time (a click of 10 ms can fall between the sequences it keeps).
  static func clickTrack(in directory: TemporaryDirectory) throws -> String {
    var samples = [Float](repeating: 0, count: 2 * 8 * rate)
    for beat in 0..<16 {
      let start = beat * rate / 2 + rate / 100
      for frame in 0..<4_800 {
        let value = Float(0.5 * sin(2 * Double.pi * 1000 * Double(frame) / Double(rate)))
        samples[2 * (start + frame)] = value
        samples[2 * (start + frame) + 1] = value
      }
    }
    return try EngineHarness.vorbis(samples, in: directory, name: "clicks.ogg", tags: [("BPM", "120")])
  }

  /// The first frame at or after `from` louder than half the click.
  static func onset(_ stereo: [Float], after from: Int) -> Int? {
    var frame = max(0, from)
    while frame < stereo.count / 2 {
      if abs(stereo[2 * frame]) > 0.25 { return frame }
      frame += 1
    }
    return nil
  }

  @Test(
    "Beats and positions follow the stretched time: at tempo T each beat is reported on the frame its click is heard (within 15 ms: WSOLA places each sequence where it matches, not on a grid), and the position moves T s a second",
    arguments: [Float(0.8), 1.25, 1.5])
  func beatsFollowStretchedTime(tempo: Float) throws {
    let directory = try TemporaryDirectory()
    let clicks = try Self.clickTrack(in: directory)
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    let beats = BeatLog()
    player.addBeatObserver { beats.add($0) }
    try player.setTempo(tempo)
    var entry = QueueDescriptor.Entry(item: MediaItem(path: clicks))
    // The click's own start is 10 ms into each beat.
    entry.beatGrid = QueueDescriptor.BeatGrid(beatsPerMinute: 120, offsetSeconds: 0.01)
    try player.setQueue(with: QueueDescriptor(entries: [entry]))
    player.play()
    engine.waitForLoader()
    var rendered: [Float] = []
    var positions: [(Double, Double)] = []
    for second in 1...4 {
      rendered += EngineHarness.render(engine, seconds: 1)
      positions.append((Double(rendered.count / 2) / Double(Self.rate), player.currentPlaybackTime))
      _ = second
    }
    player.waitForNotifications()
    engine.shutdown()
    let heardBeats = beats.all.filter { $0.mixFrame < Int64(rendered.count / 2) - 4_800 }
    #expect(heardBeats.count >= Int(3.5 * 2 * Double(tempo)), "\(heardBeats.count) beats in 4 s")
    var worst = 0
    for beat in heardBeats {
      let frame = Int(beat.mixFrame)
      guard let heard = Self.onset(rendered, after: frame - 2_400) else {
        Issue.record("tempo \(tempo): no click near beat at frame \(frame)")
        continue
      }
      worst = max(worst, abs(heard - frame))
      #expect(abs(heard - frame) <= 720, "tempo \(tempo): beat reported at \(frame), heard at \(heard)")
      // Unstretched, the beat would be at its file time: tell the two apart.
      let fileFrame = Int((Double(beat.beat - 1 + 4 * (beat.bar - 1)) * 0.5 + 0.01) * Double(Self.rate))
      if fileFrame > 24_000 { #expect(abs(fileFrame - frame) > 2_400) }
    }
    print("tempo \(tempo): \(heardBeats.count) beats, worst \(Double(worst) / 48) ms from the click heard")
    for (time, position) in positions {
      #expect(abs(position - time * Double(tempo)) < 0.03, "tempo \(tempo): at \(time) s the position is \(position)")
    }
  }

  @Test("A tempo change while playing is seamless: nothing skipped or heard twice, no click, the rest at the new speed")
  func changeWhilePlaying() throws {
    let directory = try TemporaryDirectory()
    let tone = try EngineHarness.vorbisTone(in: directory, seconds: 6, frequency: 330, amplitude: 0.4)
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    try player.setQueue(with: [MediaItem(path: tone)])
    player.play()
    engine.waitForLoader()
    var rendered = EngineHarness.render(engine, seconds: 2)
    #expect(abs(player.currentPlaybackTime - Double(rendered.count / 2) / Double(Self.rate)) < 0.01)
    try player.setTempo(1.5)
    rendered += EngineHarness.render(engine, seconds: 5)
    engine.shutdown()
    let seconds = Double(Self.soundingFrames(rendered)) / Double(Self.rate)
    let expected = 2.048 + (6 - 2.048) / 1.5
    #expect(abs(seconds / expected - 1) < 0.01, "\(seconds) s, expected \(expected) s")
    let pitch = Self.frequency(rendered, from: 2.3, to: expected - 0.3)
    #expect(abs(pitch / 330 - 1) < 0.01, "\(pitch) Hz after the change")
    // No click where the stretcher takes over: no step larger than the tone's own steepest.
    let around = Array(rendered[(2 * 2 * Self.rate - 9_600)..<(2 * 2 * Self.rate + 19_200)])
    let steepest = Float(0.4 * 2 * Double.pi * 330 / Double(Self.rate))
    #expect(EngineHarness.largestStep(around) < 2.5 * steepest, "step \(EngineHarness.largestStep(around))")
    #expect(throws: PlayerError.tempoOutOfRange(3)) { try player.setTempo(3) }
    #expect(throws: PlayerError.tempoOutOfRange(0.25)) { try player.setTempo(0.25) }
  }

  @Test(
    "The cue file's tempo: an action (with a ramp) and a parameter target; a change at the bar lands on the stretched bar line"
  )
  func cueFileTempo() throws {
    let game = try DirectorFixture()
    let text = """
      {
        start: "quiet",
        \(DirectorFixture.sources)
        parameters: { timeLeft: { min: 0, max: 60, default: 60,
          drives: [ { target: "tempo", curve: [[0, 1.5], [20, 1.25], [21, 1]] } ] } },
        states: { quiet: { music: "quiet", transition: { seconds: 0 } }, combat: { music: "tense" } },
        rules: [
          { on: "hurry", do: { tempo: 1.25 } },
          { on: "go", do: { crossfade: "combat", seconds: 0, at: "bar" } },
          { on: "relax", do: { tempo: 1, ramp: 0.5 } },
        ],
      }
      """
    let sheet = try game.sheet(text)
    let (left, timeline) = try game.simulate(
      sheet, [.cue(0.1, "hurry"), .cue(0.5, "go"), .cue(4, "relax"), .set(6, "timeLeft", 10)], seconds: 8)
    // Quiet is digital silence at 120 BPM: the combat tone's first sample is the bar line. From
    // 0.1 s quiet moves 1.25 s a second, so its bar at 2 s of the file is heard at
    // 0.1 + 1.9 / 1.25 = 1.62 s (at tempo 1 it would be 2 s).
    let first = try #require(Listen.firstSound(left, after: 0.2), "\(timeline.summary)")
    let heard = Double(first) / Double(DirectorFixture.rate)
    #expect(abs(heard - 1.62) < 0.025, "the bar was heard at \(heard) s\n\(timeline.summary)")
    // The combat tone keeps its pitch at tempo 1.25.
    #expect(abs(Self.frequency(left.flatMap { [$0, $0] }, from: 2, to: 3.8) / DirectorFixture.combatPitch - 1) < 0.01)
    let lane = try #require(timeline.lanes?.first { $0.name == CueTimeline.tempoLane })
    let value = { (time: Double) in lane.points.last { $0[0] <= time + 1e-9 }?[1] ?? 1 }
    #expect(value(1) == 1.25 && value(5) == 1 && value(7) > 1.3, "\(lane.points)")
    #expect(timeline.summary.contains("tempo 1.25"), "\(timeline.summary)")
  }

  @Test("Bad tempos in a cue file are refused, naming the key and the range")
  func badTempos() throws {
    let game = try DirectorFixture()
    let text = """
      {
        start: "quiet",
        \(DirectorFixture.sources)
        parameters: { alert: { min: 0, max: 1, drives: [ { target: "tempo", layer: "drums", curve: [[0, 1]] } ] } },
        states: { quiet: { music: "quiet" } },
        rules: [ { on: "hurry", do: { tempo: 3 } }, { on: "slow", do: { tempo: 1, ramp: -1 } } ],
      }
      """
    try text.write(toFile: game.cuePath, atomically: true, encoding: .utf8)
    let problems: String
    do {
      _ = try CueSheet.load(path: game.cuePath)
      Issue.record("the cue file loaded")
      return
    } catch { problems = "\(error)" }
    #expect(problems.contains("rules[0].do.tempo") && problems.contains("0.5"), "\(problems)")
    #expect(problems.contains("rules[1].do.ramp"), "\(problems)")
    #expect(problems.contains("tempo applies to the whole music"), "\(problems)")
  }

  @Test(
    "`leitmotif render --tempo T FILE`: duration / T within 1 %, pitch within 1 %; a tempo out of range is a usage error"
  )
  func command() throws {
    let directory = try TemporaryDirectory()
    let tone = try EngineHarness.vorbisTone(in: directory, seconds: 3, frequency: 523.25, amplitude: 0.4)
    let out = directory.file("fast.wav")
    let run = try LeitmotifCommand.run(["render", "--tempo", "1.25", "--out", out, tone])
    #expect(run.status == 0, "\(run.output)\(run.errors)")
    let wav = try WAVFile(path: out)
    let seconds = Double(Self.soundingFrames(wav.samples)) / Double(wav.sampleRate)
    #expect(abs(seconds / (3 / 1.25) - 1) < 0.01, "\(seconds) s")
    let pitch = Self.frequency(wav.samples, from: 0.3, to: seconds - 0.3)
    #expect(abs(pitch / 523.25 - 1) < 0.01, "\(pitch) Hz")
    let refused = try LeitmotifCommand.run(["render", "--tempo", "3", "--out", out, tone])
    #expect(refused.status == 2)
    #expect(refused.errors.contains("--tempo: expected a tempo in 0.5...2"), "\(refused.errors)")
  }
}
