import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifAnalysis
@testable import LeitmotifCues
@testable import LeitmotifLibrary

/// Tempo, beats and energy found by listening (Ellis 2007's onset envelope, tempo by
/// autocorrelation, beats by dynamic programming), on songs the fixtures make at known tempos.
@Suite("Tempo and beats: detected at scan, filling beatsPerMinute and the beat grid")
struct TempoTests {
  static func rhythm(_ song: RhythmSynthesizer.Song) -> RhythmAnalysis? {
    var analyzer = RhythmAnalyzer(sampleRate: song.format.sampleRate)
    song.samples.withUnsafeBufferPointer { all in
      var offset = 0
      while offset < all.count {
        let end = min(all.count, offset + 8192)
        analyzer.add(interleaved: UnsafeBufferPointer(rebasing: all[offset..<end]), channels: 2)
        offset = end
      }
    }
    return analyzer.finish()
  }

  @Test(
    "Songs at known tempos: tempo within 2 %, beats within 70 ms (F >= 0.8), the first beat on the grid",
    arguments: [
      (85.0, RhythmSynthesizer.Style.rock, 44_100, true), (128, .fourOnFloor, 48_000, false),
      (96, .swing, 48_000, false), (165, .funk, 44_100, true),
    ])
  func knownTempos(bpm: Double, style: RhythmSynthesizer.Style, rate: Int, pickup: Bool) throws {
    let song = RhythmSynthesizer.song(
      bpm: bpm, rate: rate, style: style, seconds: 20, leadIn: 0.6, pickup: pickup, harmony: true, seed: 11)
    let found = try #require(Self.rhythm(song), "\(song.name): no tempo")
    #expect(abs(found.beatsPerMinute / bpm - 1) < 0.02, "\(song.name): \(found.beatsPerMinute) BPM")
    let f = RhythmSynthesizer.fMeasure(detected: found.beatTimes, truth: song.beats)
    #expect(f >= 0.8, "\(song.name): F \(f)")
    // The grid's phase: the first beat, modulo a beat, is the true one's.
    let beat = 60 / bpm
    var phase = (found.firstBeatSeconds - song.beats[0]).truncatingRemainder(dividingBy: beat)
    if phase > beat / 2 { phase -= beat }
    if phase < -beat / 2 { phase += beat }
    #expect(abs(phase) < 0.03, "\(song.name): phase off by \(phase) s")
    #expect(found.confidence > 0.2)
  }

  @Test(
    "The first beat is the music's first, not one the tracker took up later: bars are counted from it",
    arguments: [(100.0, 0.0), (120, 0.0), (140, 0.0), (128, 0.37), (90, 1.2)])
  func firstBeatIsTheFirst(bpm: Double, leadIn: Double) throws {
    for style in [RhythmSynthesizer.Style.rock, .fourOnFloor, .swing, .ballad] {
      let song = RhythmSynthesizer.song(
        bpm: bpm, rate: 48_000, style: style, seconds: 20, leadIn: leadIn, pickup: false, harmony: true, seed: 5)
      let found = try #require(Self.rhythm(song), "\(song.name): no tempo")
      // Within 30 ms of the true first beat, not a beat later (the tracker takes up the pulse a
      // beat in when the music starts at once: bars counted from beat 2).
      #expect(
        abs(found.firstBeatSeconds - song.beats[0]) < 0.03,
        "\(song.name): first beat \(found.firstBeatSeconds) s, the music's \(song.beats[0]) s")
    }
  }

  /// 20 s of one stroke on every beat from 0.5 s, and nothing else: `hertz` a sine decaying
  /// at `decay` per second for 80 ms, at 0.8, or 0.5 but on every `accentEvery`th beat. With
  /// `kickEvery`, every that many strokes a kick (60 Hz, decaying at 40) sounds with the stroke.
  static func pulses(bpm: Double, hertz: Double, decay: Double, accentEvery: Int = 1, kickEvery: Int = 0)
    -> RhythmSynthesizer.Song
  {
    let rate = 44_100
    var samples = [Float](repeating: 0, count: 2 * 20 * rate)
    var beats: [Double] = []
    var time = 0.5
    while time < 19.5 {
      let amplitude = beats.count % accentEvery == 0 ? 0.8 : 0.5
      beats.append(time)
      let start = Int(time * Double(rate))
      for index in 0..<Int(0.08 * Double(rate)) {
        let t = Double(index) / Double(rate)
        var value = Float(amplitude * exp(-t * decay) * sin(2 * .pi * hertz * t))
        if kickEvery > 0, (beats.count - 1) % kickEvery == 0 {
          value += Float(0.8 * exp(-t * 40) * sin(2 * .pi * 60 * t))
        }
        samples[2 * (start + index)] = value
        samples[2 * (start + index) + 1] = value
      }
      time += 60 / bpm
    }
    return RhythmSynthesizer.Song(
      name: "\(Int(bpm)) BPM \(hertz) Hz strokes, accent every \(accentEvery)"
        + (kickEvery > 0 ? ", a kick every \(kickEvery)" : ""),
      format: AudioFormat(sampleRate: rate, channelCount: 2), samples: samples, beatsPerMinute: bpm, beats: beats)
  }

  @Test(
    "A kick on every beat and nothing else is heard at its own tempo, not half of it",
    arguments: [80.0, 90, 100, 120])
  func kickOnEveryBeat(bpm: Double) throws {
    // A low thump (60 Hz, decaying): a metronome.
    let song = Self.pulses(bpm: bpm, hertz: 60, decay: 40)
    let found = try #require(Self.rhythm(song), "\(song.name): no tempo")
    // 90, 100 and 120 came out as 45, 50 and 60: a pulse with nothing between its beats was taken
    // for eighths.
    #expect(abs(found.beatsPerMinute / bpm - 1) < 0.02, "\(song.name): \(found.beatsPerMinute) BPM")
    #expect(RhythmSynthesizer.fMeasure(detected: found.beatTimes, truth: song.beats) >= 0.8)
  }

  @Test(
    "A fast click track, plain or accented once a bar, is heard at its own tempo: even strokes are beats, not eighths",
    arguments: [(140.0, 1), (150, 1), (170, 1), (150, 4), (180, 4)])
  func fastClickTrack(bpm: Double, accentEvery: Int) throws {
    // A 1 kHz click. Every even pulse faster than 130 BPM came out at half its tempo (150 as 75):
    // taken for the eighths between beats, which alternate with the beats' stronger strokes.
    let song = Self.pulses(bpm: bpm, hertz: 1000, decay: 150, accentEvery: accentEvery)
    let found = try #require(Self.rhythm(song), "\(song.name): no tempo")
    #expect(abs(found.beatsPerMinute / bpm - 1) < 0.02, "\(song.name): \(found.beatsPerMinute) BPM")
    #expect(RhythmSynthesizer.fMeasure(detected: found.beatTimes, truth: song.beats) >= 0.8)
  }

  @Test("Clicks between kicks are still eighths: 150 clicks a minute with a kick on every other are 75 BPM")
  func eighthsBetweenBeats() throws {
    // The same clicks, a hi-hat's eighths, with a kick on every other: the beat is the kick's.
    let song = Self.pulses(bpm: 150, hertz: 1000, decay: 150, kickEvery: 2)
    let found = try #require(Self.rhythm(song), "\(song.name): no tempo")
    #expect(abs(found.beatsPerMinute / 75 - 1) < 0.02, "\(song.name): \(found.beatsPerMinute) BPM")
  }

  @Test("Silence, noise, a drone and a 2 s clip have no tempo; a drone still has a loudness and an energy")
  func noTempo() throws {
    let format = AudioFormat.stereo48000
    let silence = [Float](repeating: 0, count: 10 * 48_000 * 2)
    let noise = ToneGenerator.whiteNoise(seed: 5, amplitude: 0.3, frameCount: 10 * 48_000, channelCount: 2)
    let drone = ToneGenerator.sine(frequency: 220, amplitude: 0.3, seconds: 10, format: format)
    let clip = RhythmSynthesizer.song(
      bpm: 120, rate: 48_000, style: .rock, seconds: 2, leadIn: 0.1, pickup: false, harmony: true, seed: 2)
    for (name, samples) in [("silence", silence), ("noise", noise), ("drone", drone), ("clip", clip.samples)] {
      var analyzer = RhythmAnalyzer(sampleRate: 48_000)
      samples.withUnsafeBufferPointer { analyzer.add(interleaved: $0, channels: 2) }
      #expect(analyzer.finish() == nil, "\(name)")
    }
    var analyzer = AudioAnalyzer(format: format)
    drone.withUnsafeBufferPointer { analyzer.add($0, frames: drone.count / 2) }
    let analysis = analyzer.finish()
    let loudness = try #require(analysis.loudness)
    #expect(analysis.beatsPerMinute == nil)
    // Without a beat, energy is the loudness score alone (see EnergyScore).
    #expect(abs(try #require(analysis.energy) - 0.35 * min(1, max(0, (loudness + 30) / 20))) < 1e-9)
  }

  @Test("Energy: a loud, fast, busy song scores above a soft slow one")
  func energy() throws {
    func energy(_ song: RhythmSynthesizer.Song, gain: Float) -> Double? {
      var analyzer = AudioAnalyzer(format: song.format)
      let samples = song.samples.map { $0 * gain }
      samples.withUnsafeBufferPointer { analyzer.add($0, frames: samples.count / 2) }
      return analyzer.finish().energy
    }
    let fast = RhythmSynthesizer.song(
      bpm: 170, rate: 48_000, style: .funk, seconds: 12, leadIn: 0.2, pickup: false, harmony: true, seed: 3)
    let slow = RhythmSynthesizer.song(
      bpm: 70, rate: 48_000, style: .ballad, seconds: 12, leadIn: 0.2, pickup: false, harmony: true, seed: 3)
    let high = try #require(energy(fast, gain: 1))
    let low = try #require(energy(slow, gain: 0.25))
    #expect(high > low + 0.2, "fast \(high), slow \(low)")
    #expect((0...1).contains(high) && (0...1).contains(low))
  }

  // MARK: - The library

  @Test("A song without a BPM tag gets the detected tempo; a tagged one keeps its tag; bpm queries find both")
  func scanFillsTempo() throws {
    let library = try LibraryFolder()
    let song = RhythmSynthesizer.song(
      bpm: 132, rate: 44_100, style: .rock, seconds: 16, leadIn: 0.4, pickup: false, harmony: true, seed: 4)
    let untagged = library.music + "/untagged.ogg"
    let tagged = library.music + "/tagged.ogg"
    try VorbisEncoder.encode(samples: song.samples, format: song.format, tags: [("TITLE", "Groove")], to: untagged)
    try VorbisEncoder.encode(samples: song.samples, format: song.format, tags: [("BPM", "66")], to: tagged)
    let index = try DirectIndex(path: library.indexPath)
    _ = try library.scanner.scan(through: index)
    let detected = try #require(try index.item(at: untagged))
    let bpm = try #require(detected.beatsPerMinute)
    #expect(abs(bpm / 132 - 1) < 0.02 && detected.isBeatsPerMinuteDetected, "\(bpm)")
    #expect(detected.detectedBeatsPerMinute == detected.beatsPerMinute)
    #expect(try #require(detected.firstBeatSeconds) < 60 / 132 + 0.45)
    #expect(detected.energy != nil)
    let kept = try #require(try index.item(at: tagged))
    #expect(kept.beatsPerMinute == 66 && !kept.isBeatsPerMinuteDetected)
    #expect(abs(try #require(kept.detectedBeatsPerMinute) / 132 - 1) < 0.02)
    // The cue file's spelling, `bpm: [low, high]`, as a query.
    let sheet = try CueSheet.parse(
      #"{ sources: { fast: { library: { bpm: [120, 140], energy: [0, 1] } } } }"#, path: "cues.json5")
    guard case .library(let query)? = sheet.sources["fast"]?.kind else {
      Issue.record("not a library source")
      return
    }
    #expect(query.filterPredicates.count == 4)
    #expect(try index.index.run(query).items.map { $0.assetURL.path } == [untagged])
  }

  // MARK: - The director

  @Test("At bar, into a song whose tempo was detected: its own grid, from its first beat")
  func detectedGrid() throws {
    let game = try DirectorFixture()
    // 128 BPM from 0.37 s: bars (of 4 beats) at 0.37 + k x 1.875 s. No tags at all.
    let song = RhythmSynthesizer.song(
      bpm: 128, rate: 48_000, style: .fourOnFloor, seconds: 16, leadIn: 0.37, pickup: false, harmony: true, seed: 9)
    try VorbisEncoder.encode(samples: song.samples, format: song.format, to: game.assets + "/groove.ogg")
    try DirectorFixture.tone(game.assets + "/untimed.ogg", pitch: 330, seconds: 16, tags: [])
    func landing(_ file: String, sourceTempo: String = "") throws -> (Double, String) {
      let sheet = try game.sheet(
        """
        { start: "a", assets: "assets", tempo: { bpm: 100 },
          sources: { one: { bundled: "\(file)"\(sourceTempo) }, two: { bundled: "combat.ogg" } },
          states: { a: { music: "one", transition: { seconds: 0 } }, b: { music: "two" } },
          rules: [ { on: "go", do: { crossfade: "b", seconds: 0, at: "bar" } } ] }
        """)
      let timeline = try game.simulate(sheet, [.cue(2.5, "go")], seconds: 6).timeline
      let action = try #require(timeline.events.first { $0.cue == "go" }?.actions.first)
      let time = try #require(action.split(separator: "(").dropFirst().first?.split(separator: " ").first)
      return (try #require(Double(time)), action)
    }
    let (detected, said) = try landing("groove.ogg")
    #expect(abs(detected - (0.37 + 2 * 1.875)) < 0.03, "\(said)")
    #expect(!said.contains("no detected tempo"))
    // A tone has no beat: the cue file's 100 BPM grid from 0 (bars of 2.4 s), and the report says so.
    let (fallback, told) = try landing("untimed.ogg")
    #expect(abs(fallback - 4.8) < 0.001, "\(told)")
    #expect(told.contains("has no BPM tag and no detected tempo: its grid is the cue file's tempo (100 BPM"), "\(told)")
    // The source's own tempo (90 BPM in 3: bars of 2 s) is named as the source's; it was called
    // the cue file's.
    let (sourced, named) = try landing("untimed.ogg", sourceTempo: ", tempo: { bpm: 90, meter: 3 }")
    #expect(abs(sourced - 4) < 0.001, "\(named)")
    #expect(named.contains(#"its grid is source "one"'s tempo (90 BPM, 3 a bar)"#), "\(named)")
  }

  @Test("A BPM tag the analysis does not hear is followed, and the report of a change on its grid says so")
  func wrongTagIsSaid() throws {
    let game = try DirectorFixture()
    // 128 BPM, tagged 85 (not its half or double).
    let song = RhythmSynthesizer.song(
      bpm: 128, rate: 48_000, style: .fourOnFloor, seconds: 16, leadIn: 0, pickup: false, harmony: true, seed: 4)
    try VorbisEncoder.encode(
      samples: song.samples, format: song.format, tags: [("BPM", "85")], to: game.assets + "/tagged.ogg")
    let sheet = try game.sheet(
      """
      { start: "a", assets: "assets",
        sources: { one: { bundled: "tagged.ogg" }, two: { bundled: "combat.ogg" } },
        states: { a: { music: "one", transition: { seconds: 0 } }, b: { music: "two" } },
        rules: [ { on: "go", do: { crossfade: "b", seconds: 0, at: "bar" } } ] }
      """)
    let timeline = try game.simulate(sheet, [.cue(2.5, "go")], seconds: 6).timeline
    let line = try #require(timeline.events.first { $0.cue == "go" }?.actions.joined(separator: "; "))
    #expect(line.contains(#""tagged.ogg" is tagged 85 BPM but 128 BPM is heard: its grid follows the tag"#), "\(line)")
    // The tag's grid: bars of 4 × 60/85 s from 0, so the change lands at 2.824 s.
    #expect(line.contains("(2.824 s)"), "\(line)")
  }

  @Test("A rule with a stinger on the beat and a change on the bar of an untimed song says the grid once")
  func gridNoteOnce() throws {
    let game = try DirectorFixture()
    try DirectorFixture.tone(game.assets + "/untimed.ogg", pitch: 330, seconds: 16, tags: [])
    let sheet = try game.sheet(
      """
      { start: "a", assets: "assets", tempo: { bpm: 100 },
        sources: { one: { bundled: "untimed.ogg" }, two: { bundled: "combat.ogg" }, hitSound: { bundled: "hit.ogg" } },
        states: { a: { music: "one", transition: { seconds: 0 } }, b: { music: "two" } },
        rules: [ { on: "go", do: [ { stinger: "hitSound", at: "beat" }, { crossfade: "b", seconds: 0, at: "bar" } ] } ] }
      """)
    let timeline = try game.simulate(sheet, [.cue(2.5, "go")], seconds: 6).timeline
    let line = try #require(timeline.events.first { $0.cue == "go" }?.actions.joined(separator: "; "))
    #expect(line.contains("stinger") && line.contains("cut to"), "\(line)")
    #expect(line.components(separatedBy: "no detected tempo").count == 2, "said once: \(line)")
  }
}
