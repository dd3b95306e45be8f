import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// Stems made to be checked to the sample: FLAC is lossless, so a stem that is the music's exact
/// negative cancels it to digital silence only while the two stay on the same frame.
private struct StemFolder {
  static let rate = DirectorFixture.rate
  let game: DirectorFixture

  init() throws {
    game = try DirectorFixture()
  }

  /// A 220 Hz sine (the same on both channels), its negative, or a constant level, `seconds` long.
  static func sine(seconds: Double, sign: Float = 1) -> [Float] {
    let frames = Int(seconds * Double(rate))
    var samples = [Float](repeating: 0, count: 2 * frames)
    for frame in 0..<frames {
      let value = sign * 0.4 * Float(sin(2 * Double.pi * 220 * Double(frame) / Double(rate)))
      samples[2 * frame] = value
      samples[2 * frame + 1] = value
    }
    return samples
  }

  static func constant(_ level: Float, seconds: Double) -> [Float] {
    [Float](repeating: level, count: 2 * Int(seconds * Double(rate)))
  }

  func write(_ name: String, _ samples: [Float], tags: [(String, String)] = []) throws {
    try FLACEncoder.encode(samples: samples, format: .stereo48000, tags: tags, to: game.assets + "/" + name)
  }

  /// A cue file over the stems: loudness off, so levels are the files' own.
  func sheet(sources: String, states: String, start: String, rules: String = "", parameters: String = "") throws
    -> CueSheet
  {
    try game.sheet(
      """
      {
        assets: "assets",
        loudness: "off",
        start: "\(start)",
        sources: { \(sources) },
        parameters: { \(parameters) },
        states: { \(states) },
        rules: [ \(rules) ],
      }
      """)
  }
}

@Suite("Layers: stems of one piece, sample-locked, brought in and out by rules and parameters")
struct LayerTests {
  @Test("A stem starts on its music's frame and stays on it, through loops and a seek (it cancels its negative)")
  func sampleLocked() throws {
    let folder = try StemFolder()
    // A loop from 1 s to 3 s of a 4 s piece: the stem has no loop tags of its own and follows.
    try folder.write(
      "pad.flac", StemFolder.sine(seconds: 4), tags: [("LOOPSTART", "48000"), ("LOOPLENGTH", "96000")])
    try folder.write("anti.flac", StemFolder.sine(seconds: 4, sign: -1))
    let sheet = try folder.sheet(
      sources: #"pad: { bundled: "pad.flac" }, anti: { bundled: "anti.flac" }"#,
      states: """
        locked: { music: "pad", transition: { seconds: 0 }, layers: { anti: "anti" } },
        half: { music: "pad", transition: { seconds: 0 }, layers: { anti: { music: "anti", volume: 0.5 } } },
        """,
      start: "locked",
      rules: #"{ on: "jump", do: { seek: 0.5 } }, { on: "half", do: { state: "half" } }"#)
    let (left, timeline) = try folder.game.simulate(sheet, [.cue(5.2, "jump"), .cue(8, "half")], seconds: 10)
    // Digital silence: off by one frame, the 220 Hz sines would leave about 0.01.
    let residue = Listen.window(left, 0, 7.9).map { abs($0) }.max() ?? 1
    #expect(residue < 1e-6, "largest sample with the stem at full volume: \(residue)\n\(timeline.summary)")
    // The same piece with its stem at half: half the music is left.
    let level = Listen.level(of: 220, in: Listen.window(left, 8.5, 9.5))
    #expect(abs(level - 0.2) < 0.005, "220 Hz at \(level) with the stem at 0.5 (expected 0.2)")
  }

  @Test("Resampled (44.1 kHz stems on a 48 kHz mix, and at another rate) the stems stay locked")
  func lockedWhenResampled() throws {
    let folder = try StemFolder()
    let rate = 44_100
    func sine(_ sign: Float) -> [Float] {
      (0..<(4 * rate)).flatMap { frame -> [Float] in
        let value = sign * 0.4 * Float(sin(2 * Double.pi * 220 * Double(frame) / Double(rate)))
        return [value, value]
      }
    }
    try FLACEncoder.encode(samples: sine(1), format: .stereo44100, to: folder.game.assets + "/pad.flac")
    try FLACEncoder.encode(samples: sine(-1), format: .stereo44100, to: folder.game.assets + "/anti.flac")
    let sheet = try folder.sheet(
      sources: #"pad: { bundled: "pad.flac" }, anti: { bundled: "anti.flac" }"#,
      states: #"locked: { music: "pad", transition: { seconds: 0 }, layers: { anti: "anti" } }"#,
      start: "locked",
      rules: #"{ on: "slow", do: { rate: 0.8, ramp: 0.5 } }, { on: "solo", do: { layer: "anti", volume: 0 } }"#)
    let (left, timeline) = try folder.game.simulate(sheet, [.cue(1, "slow"), .cue(3, "solo")], seconds: 3.5)
    let residue = Listen.window(left, 0, 2.95).map { abs($0) }.max() ?? 1
    #expect(residue < 1e-5, "largest sample, resampled: \(residue)\n\(timeline.summary)")
    let alone = Listen.rms(Listen.window(left, 3.1, 3.4))
    #expect(alone > 0.2, "the music without its stem: RMS \(alone)")
  }

  @Test("A layer action on the bar: the stem is heard from the bar's frame exactly, and fades along its curve")
  func layerOnTheBar() throws {
    let folder = try StemFolder()
    try folder.write("quiet.flac", StemFolder.constant(0, seconds: 8), tags: [("BPM", "120")])
    try folder.write("drums.flac", StemFolder.constant(0.25, seconds: 8))
    let sheet = try folder.sheet(
      sources: #"quiet: { bundled: "quiet.flac" }, drums: { bundled: "drums.flac" }"#,
      states:
        #"sneak: { music: "quiet", transition: { seconds: 0 }, layers: { drums: { music: "drums", volume: 0 } } }"#,
      start: "sneak",
      rules: """
        { on: "spotted", do: { layer: "drums", volume: 1, at: "bar" } },
        { on: "hidden", do: { layer: "drums", volume: 0, seconds: 1, curve: "linear", at: "beat" } },
        """)
    // 120 BPM in 4/4: the cue at 0.3 s waits for the bar at 2 s; "hidden" at 4.2 s for the beat at 4.5 s.
    let (left, timeline) = try folder.game.simulate(sheet, [.cue(0.3, "spotted"), .cue(4.2, "hidden")], seconds: 6)
    let first = try #require(Listen.firstSound(left, after: 0), "the layer never came in\n\(timeline.summary)")
    #expect(first == 2 * StemFolder.rate, "first sound at frame \(first), expected \(2 * StemFolder.rate)")
    #expect(left[first] == 0.25, "the layer's level: \(left[first])")
    // Linear from 1 at 4.5 s to 0 at 5.5 s: half way at 5 s.
    let middle = left[5 * StemFolder.rate]
    #expect(abs(middle - 0.125) < 1e-4, "half way through the fade: \(middle)")
    #expect(left[Int(4.5 * Double(StemFolder.rate)) - 1] == 0.25, "the fade started before its beat")
    #expect(Listen.window(left, 5.6, 6).allSatisfy { $0 == 0 }, "the layer is silent after its fade")
    #expect(timeline.summary.contains("layer \"drums\" to 1 on the bar (2 s)"), "\(timeline.summary)")
  }

  @Test(
    "A layer action on the bar at another rate or tempo: the stem comes in on the bar heard, not when the resampler or stretcher reads it",
    arguments: [
      // The state at rate 0.8: the bar at 2 s of the file is heard at 2.5 s; asked 2.2 s before
      // it, and 50 ms before (a whole block read ahead made that 100 to 190 ms late).
      ("rate: 0.8,", "", 0.3),
      ("rate: 0.8,", "", 2.45),
      // Tempo 1.25 from the start: the bar is heard about 1.6 s in.
      ("", #"{ on: "hurry", do: { tempo: 1.25, ramp: 0 } },"#, 0.3),
      // A rate ramp from 1 to 0.8 over 3 s: the line reckoned when asked came 41 to 88 ms early.
      ("", #"{ on: "hurry", do: { rate: 0.8, ramp: 3 } },"#, 0.3),
    ])
  func layerOnTheBarAtAnotherSpeed(stateRate: String, tempoRule: String, askedAt: Double) throws {
    let folder = try StemFolder()
    // The music steps up to 0.1 on its bar at 2 s; the stem, 0.25 throughout, is brought in on
    // that bar: heard together, the level goes from 0 to 0.35 in one step.
    try folder.write(
      "steps.flac", StemFolder.constant(0, seconds: 2) + StemFolder.constant(0.1, seconds: 6), tags: [("BPM", "120")])
    try folder.write("drums.flac", StemFolder.constant(0.25, seconds: 8))
    let sheet = try folder.sheet(
      sources: #"steps: { bundled: "steps.flac" }, drums: { bundled: "drums.flac" }"#,
      states: """
        sneak: {
          music: "steps", \(stateRate) transition: { seconds: 0 },
          layers: { drums: { music: "drums", volume: 0 } },
        },
        """,
      start: "sneak",
      rules: """
        \(tempoRule)
        { on: "spotted", do: { layer: "drums", volume: 1, at: "bar" } },
        """)
    let (left, timeline) = try folder.game.simulate(
      sheet, [.cue(0, "hurry"), .cue(askedAt, "spotted")], seconds: 3.5)
    let (alone, _) = try folder.game.simulate(sheet, [.cue(0, "hurry")], seconds: 3.5)
    // Resampled or stretched, a step is not one frame: the resampler rings a few frames either
    // side, the stretcher's overlap makes it a ramp of about 8 ms. Where it begins and how long
    // it takes to settle: with the stem on the bar it is the music's own step, 3.5 times as high.
    // A stem late or early adds a stretch at the music's level (0.1) or the stem's (0.25).
    func step(_ samples: [Float], to level: Float) -> (start: Int, frames: Int)? {
      guard let start = samples.firstIndex(where: { $0 > 0.02 * level }),
        let end = samples[start...].firstIndex(where: { $0 > 0.98 * level })
      else { return nil }
      return (start, end - start)
    }
    let music = try #require(step(alone, to: 0.1), "the music's step never came\n\(timeline.summary)")
    let both = try #require(step(left, to: 0.35), "the layer never came in\n\(timeline.summary)")
    // Within 1 ms (48 frames), the issue's bound for a transition on the grid (it was 33 to 110 ms late).
    #expect(
      abs(both.start - music.start) <= 48 && abs(both.frames - music.frames) <= 48,
      "the music's bar is heard from frame \(music.start) in \(music.frames) frames; with the layer from \(both.start) in \(both.frames)\n\(timeline.summary)"
    )
    let settled = Listen.window(left, Double(both.start + both.frames) / Double(StemFolder.rate) + 0.05, 3.4)
    #expect(settled.allSatisfy { abs($0 - 0.35) < 0.02 }, "the level after the bar")
    if !stateRate.isEmpty {
      // At rate 0.8 the bar is exactly where the file's 2 s is heard.
      #expect(
        abs(both.start - 120_000) <= 48, "the bar at 2 s of the file heard at frame \(both.start), expected 120000")
    }
  }

  @Test(
    "At rate 0.8, a layer move asked 5 ms before the bar (nearer than the resampler reads ahead) comes on the next bar, and the report names that bar"
  )
  func layerAskedTooNearItsBar() throws {
    let folder = try StemFolder()
    try folder.write("quiet.flac", StemFolder.constant(0, seconds: 8), tags: [("BPM", "120")])
    try folder.write("drums.flac", StemFolder.constant(0.25, seconds: 8))
    let sheet = try folder.sheet(
      sources: #"quiet: { bundled: "quiet.flac" }, drums: { bundled: "drums.flac" }"#,
      states:
        #"sneak: { music: "quiet", rate: 0.8, transition: { seconds: 0 }, layers: { drums: { music: "drums", volume: 0 } } }"#,
      start: "sneak",
      rules: #"{ on: "spotted", do: { layer: "drums", volume: 1, at: "bar" } },"#)
    // The bars of the file (2 s apart) are heard every 2.5 s: at 2.5 s, 5 s.
    let (left, timeline) = try folder.game.simulate(sheet, [.cue(2.495, "spotted")], seconds: 5.5)
    let half = try #require(left.firstIndex { $0 >= 0.125 }, "the layer never came in\n\(timeline.summary)")
    #expect(abs(half - 240_000) <= 48, "the layer came in at frame \(half)\n\(timeline.summary)")
    // The report said the bar at 2.5 s, which the mixer could no longer reach.
    #expect(timeline.summary.contains("layer \"drums\" to 1 on the bar (5 s)"), "\(timeline.summary)")
  }

  @Test(
    "A layer move on the bar asked before a pause, or during it, comes on the music's bar after the resume",
    arguments: [0.3, 1.5])
  func layerAcrossAPause(askedAt: Double) throws {
    let folder = try StemFolder()
    try folder.write("quiet.flac", StemFolder.constant(0, seconds: 8), tags: [("BPM", "120")])
    try folder.write("drums.flac", StemFolder.constant(0.25, seconds: 8))
    let sheet = try folder.sheet(
      sources: #"quiet: { bundled: "quiet.flac" }, drums: { bundled: "drums.flac" }"#,
      states:
        #"sneak: { music: "quiet", transition: { seconds: 0 }, layers: { drums: { music: "drums", volume: 0 } } }"#,
      start: "sneak",
      rules: """
        { on: "spotted", do: { layer: "drums", volume: 1, at: "bar" } },
        { on: "menu", priority: 50, do: { pause: true } },
        { on: "back", priority: 50, do: { resume: true } },
        """)
    // 120 BPM: the bar is 2 s into the music. Paused at 1 s for 2 s, the music reaches it at 4 s.
    let script: [CueScript.Step] = [.cue(askedAt, "spotted"), .cue(1, "menu"), .cue(3, "back")].sorted {
      $0.time < $1.time
    }
    let (left, timeline) = try folder.game.simulate(sheet, script, seconds: 5)
    let first = try #require(Listen.firstSound(left, after: 0), "the layer never came in\n\(timeline.summary)")
    // The pause lands where its 10 ms fade would end on the director's clock, and the resume on
    // its cue: the music is 10 ms behind, and its bar comes 480 frames before 4 s.
    #expect(
      first == 4 * StemFolder.rate - 480,
      "first sound at frame \(first), expected \(4 * StemFolder.rate - 480)\n\(timeline.summary)")
    #expect(Listen.window(left, 4.1, 5).allSatisfy { $0 == 0.25 }, "the layer after the bar")
  }

  @Test(
    "A layer action on the bar while the change to its music waits for its own line: on the incoming music's bar, the same frame whatever the render size"
  )
  func layerWhileItsChangeWaits() throws {
    let folder = try StemFolder()
    try folder.write("calm.flac", StemFolder.constant(0, seconds: 8), tags: [("BPM", "120")])
    try folder.write("quiet.flac", StemFolder.constant(0, seconds: 8))
    try folder.write("drums.flac", StemFolder.constant(0.25, seconds: 8))
    let sheet = try folder.sheet(
      sources: """
        calm: { bundled: "calm.flac" }, quiet: { bundled: "quiet.flac", tempo: { bpm: 90, offset: 0.5 } },
        drums: { bundled: "drums.flac" }
        """,
      states: """
        calm: { music: "calm", transition: { seconds: 0 } },
        sneak: {
          music: "quiet", transition: { seconds: 0, at: "bar", bars: 2 },
          layers: { drums: { music: "drums", volume: 0 } },
        },
        """,
      start: "calm",
      rules: """
        { on: "enter", do: { state: "sneak" } },
        { on: "spotted", do: { layer: "drums", volume: 1, at: "bar" } },
        """)
    // Calm (120 BPM: bars of 2 s) changes to sneak on its second bar line, at 4 s; the layer,
    // asked for at 1 s, comes on sneak's first bar line (its bars begin 0.5 s into its file), at
    // 4.5 s. It used to move at once, on music not begun: the drums were heard from 4 s, and the
    // report took its bar from the waiting music's standing position.
    let script: [CueScript.Step] = [.cue(0.3, "enter"), .cue(1.0, "spotted")]
    var options = CueSimulation.Options()
    let (left, timeline) = try folder.game.simulate(sheet, script, seconds: 6, options: options)
    let first = try #require(Listen.firstSound(left, after: 0), "the layer never came in\n\(timeline.summary)")
    #expect(first == 9 * StemFolder.rate / 2, "first sound at frame \(first), expected \(9 * StemFolder.rate / 2)")
    #expect(left[first] == 0.25, "the layer's level: \(left[first])")
    #expect(timeline.summary.contains("layer \"drums\" to 1 on the bar (4.5 s)"), "\(timeline.summary)")
    options.renderFrames = 1000
    let (other, _) = try folder.game.simulate(sheet, script, seconds: 6, options: options)
    let worst = zip(left, other).map { abs($0 - $1) }.max() ?? 1
    #expect(worst == 0, "renders in blocks of 256 and 1,000 frames differ by \(worst)")
  }

  @Test("A parameter drives a layer's volume and its low-pass; the music itself is untouched")
  func parameterDrivesALayer() throws {
    let folder = try StemFolder()
    try folder.write("bed.flac", StemFolder.constant(0.1, seconds: 5))
    try folder.write("pulse.flac", StemFolder.constant(0.2, seconds: 5))
    let sheet = try folder.sheet(
      sources: #"bed: { bundled: "bed.flac" }, pulse: { bundled: "pulse.flac" }"#,
      states: #"stealth: { music: "bed", transition: { seconds: 0 }, layers: { pulse: "pulse" } }"#,
      start: "stealth",
      rules: #"{ on: "alert", do: { set: "alert", value: 0.5 } }"#,
      parameters: #"alert: { drives: [ { target: "volume", layer: "pulse", curve: [[0, 0], [1, 1]] } ] }"#)
    let (left, timeline) = try folder.game.simulate(sheet, [.cue(1, "alert")], seconds: 2)
    // alert 0: only the bed (0.1); alert 0.5: the bed and half the pulse (0.1 + 0.1).
    #expect(Listen.window(left, 0.1, 0.9).allSatisfy { abs($0 - 0.1) < 2e-4 }, "\(timeline.summary)")
    #expect(Listen.window(left, 1.1, 1.9).allSatisfy { abs($0 - 0.2) < 2e-4 }, "with alert at 0.5")

    // The low-pass of one layer: an 8 kHz stem muffled, the bed below it unchanged.
    try DirectorFixture.tone(folder.game.assets + "/bright.ogg", pitch: 8_000, seconds: 5, tags: [("TITLE", "Bright")])
    let muffled = try folder.sheet(
      sources: #"bed: { bundled: "bed.flac" }, bright: { bundled: "bright.ogg" }"#,
      states: #"calm: { music: "bed", transition: { seconds: 0 }, layers: { shine: "bright" } }"#,
      start: "calm",
      rules: #"{ on: "dive", do: { set: "depth", value: 1 } }"#,
      parameters: #"depth: { drives: [ { target: "lowpass", layer: "shine", curve: [[0, 1], [1, 0.05]] } ] }"#)
    let (filtered, _) = try folder.game.simulate(muffled, [.cue(1, "dive")], seconds: 2)
    let open = Listen.level(of: 8_000, in: Listen.window(filtered, 0.2, 0.9))
    let closed = Listen.level(of: 8_000, in: Listen.window(filtered, 1.2, 1.9))
    #expect(open > 0.3 && closed / open < 0.15, "8 kHz layer: \(open) open, \(closed) muffled")
    let under = Listen.window(filtered, 1.2, 1.9)
    let bed = under.reduce(0) { $0 + Double($1) } / Double(under.count)
    #expect(abs(bed - 0.1) < 0.002, "the bed's level under the muffled layer: \(bed)")
  }

  @Test("A stem shorter than its music is silent past its end")
  func shortStem() throws {
    let folder = try StemFolder()
    try folder.write("long.flac", StemFolder.constant(0.25, seconds: 3))
    try folder.write("short.flac", StemFolder.constant(0.125, seconds: 1))
    let sheet = try folder.sheet(
      sources: #"long: { bundled: "long.flac" }, short: { bundled: "short.flac" }"#,
      states: #"one: { music: "long", repeat: "none", transition: { seconds: 0 }, layers: { hit: "short" } }"#,
      start: "one")
    let (left, timeline) = try folder.game.simulate(sheet, [], seconds: 2.5)
    #expect(Listen.window(left, 0.05, 0.99).allSatisfy { $0 == 0.375 }, "both together\n\(timeline.summary)")
    #expect(Listen.window(left, 1, 2.5).allSatisfy { $0 == 0.25 }, "the music alone after the stem's end")
  }
}

@Suite("Layers in the cue file: what the check refuses")
struct LayerCheckTests {
  private func errors(_ body: String) throws -> [String] {
    let game = try DirectorFixture()
    try FLACEncoder.encode(
      samples: StemFolder.constant(0.1, seconds: 1), format: .stereo48000, to: game.assets + "/stem.flac")
    let samples = ToneGenerator.sine(frequency: 440, seconds: 1, format: .stereo44100)
    try FLACEncoder.encode(samples: samples, format: .stereo44100, to: game.assets + "/other-rate.flac")
    try body.write(toFile: game.cuePath, atomically: true, encoding: .utf8)
    let text = try String(contentsOfFile: game.cuePath, encoding: .utf8)
    return CueSheet.check(text, path: game.cuePath).problems.filter { $0.severity == .error }.map(\.description)
  }

  @Test("Unknown layers, layers of the player's songs, a rate drive, a sample-rate mismatch")
  func refused() throws {
    let found = try errors(
      """
      {
        assets: "assets",
        start: "a",
        sources: {
          calm: { bundled: "explore.ogg" },
          stem: { bundled: "stem.flac" },
          odd: { bundled: "other-rate.flac" },
          theirs: { library: {} , fallback: "calm" },
        },
        parameters: {
          alert: { drives: [ { target: "rate", layer: "drums", curve: [[0, 1]] }, { target: "volume", layer: "drum", curve: [[0, 1]] } ] },
        },
        states: {
          a: { music: "calm", layers: { drums: "stem", wrong: "odd" } },
          b: { music: "theirs", layers: { drums: "stem" } },
          c: { music: "calm", layers: { mine: "theirs" } },
        },
        rules: [
          { on: "x", do: [ { state: "b" }, { state: "c" }, { layer: "bass", volume: 1 }, { layer: "drums", volume: 2 } ] },
          { on: "y", do: { layer: "drums", volume: 1, at: "end" } },
        ],
      }
      """)
    let all = found.joined(separator: "\n")
    #expect(all.contains("a layer's drive takes volume or lowpass"), "\(all)")
    #expect(all.contains("no state has a layer named \"drum\"; did you mean \"drums\"?"), "\(all)")
    #expect(all.contains("states.a.layers.wrong: layer file \"other-rate.flac\" is 44100 Hz"), "\(all)")
    #expect(all.contains("states.b.layers: layers are stems of the game's own music"), "\(all)")
    #expect(all.contains("states.c.layers.mine: \"theirs\" is a source of the player's music"), "\(all)")
    #expect(all.contains("rules[0].do[2].layer: no state has a layer named \"bass\""), "\(all)")
    #expect(all.contains("rules[0].do[3].volume"), "\(all)")
    #expect(all.contains("rules[1].do.at"), "\(all)")
  }
}

@Suite("Layers from Swift: a queue entry's stems and QueuePlayer.setVolume(_:ofLayer:)")
struct QueueLayerTests {
  @Test("Stems play with their item; a layer's volume moves on the frame; a layer it does not have is refused")
  func queueLayers() throws {
    let directory = try TemporaryDirectory()
    let music = directory.file("music.flac")
    let stem = directory.file("stem.flac")
    try FLACEncoder.encode(samples: StemFolder.constant(0.25, seconds: 3), format: .stereo48000, to: music)
    try FLACEncoder.encode(samples: StemFolder.constant(0.125, seconds: 3), format: .stereo48000, to: stem)
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    var entry = QueueDescriptor.Entry(item: MediaItem(path: music))
    entry.layers = [QueueDescriptor.Layer(item: MediaItem(path: stem), volume: 0)]
    try player.setQueue(with: QueueDescriptor(entries: [entry]))
    #expect(player.layerCount == 1)
    player.play()
    let before = EngineHarness.render(engine, seconds: 1)
    #expect(before[2 * 100] == 0.25 && before[2 * 47_999] == 0.25, "the stem starts silent: \(before[2 * 100])")
    try player.setVolume(1, ofLayer: 0)
    let after = EngineHarness.render(engine, seconds: 1)
    #expect(after.allSatisfy { $0 == 0.375 }, "music and stem from the next frame: \(after[0]) ... \(after.last!)")
    #expect(player.volume(ofLayer: 0) == 1)
    #expect(throws: QueueError.self) { try player.setVolume(1, ofLayer: 1) }
    #expect(throws: QueueError.self) { try player.setVolume(1.5, ofLayer: 0) }
    var tooMany = entry
    tooMany.layers = Array(repeating: QueueDescriptor.Layer(item: MediaItem(path: stem)), count: 9)
    #expect(throws: QueueError.self) { try player.setQueue(with: QueueDescriptor(entries: [tooMany])) }
  }
}
