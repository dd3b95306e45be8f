import Foundation
import LeitmotifFixtures
import Synchronization
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// Collects beats from any thread.
final class BeatLog: Sendable {
  private let beats = Mutex<[(beat: MusicBeat, heardAt: UInt64)]>([])
  func add(_ beat: MusicBeat) { beats.withLock { $0.append((beat, DispatchTime.now().uptimeNanoseconds)) } }
  var all: [MusicBeat] { beats.withLock { $0.map(\.beat) } }
  var timed: [(beat: MusicBeat, heardAt: UInt64)] { beats.withLock { $0 } }
}

@Suite("Beat callbacks: every beat and bar of the music reaches the game, on its frame")
struct BeatTests {
  @Test(
    "Offline: each beat on its frame, bars counted from the item's downbeat; a change on the bar starts the new item's count"
  )
  func offlineBeats() throws {
    let game = try DirectorFixture()
    let text = """
      {
        start: "quiet",
        \(DirectorFixture.sources)
        states: { quiet: { music: "quiet", transition: { seconds: 0 } }, combat: { music: "tense" } },
        rules: [ { on: "go", do: { crossfade: "combat", seconds: 0.5, at: "bar" } } ],
      }
      """
    let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    let director = Director(engine: engine, sheet: try game.sheet(text), library: nil, clocking: .pumped)
    let log = BeatLog()
    director.addBeatObserver { log.add($0) }
    var buffer = [Float](repeating: 0, count: 2 * 256)
    var frame = 0
    while frame < 5 * 48_000 {
      director.advance(toAudioTime: Double(frame) / 48_000)
      if frame <= 14_400 && frame + 256 > 14_400 { director.post("go") }  // 0.3 s: the bar is at 2 s
      buffer.withUnsafeMutableBufferPointer { engine.render(into: $0.baseAddress!, frameCount: 256) }
      frame += 256
    }
    let beats = log.all
    // 120 BPM (both pieces' tags), 4/4: a beat every 24000 frames, from the first frame.
    #expect(beats.map(\.mixFrame) == (0...10).map { Int64($0 * 24_000) }, "\(beats.map(\.mixFrame))")
    #expect(beats.prefix(4).allSatisfy { $0.item.title == "Quiet" })
    #expect(beats.dropFirst(4).allSatisfy { $0.item.title == "Combat" }, "the outgoing piece's beats stop at the bar")
    #expect(beats.map(\.beat) == [1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3])
    #expect(beats.map(\.bar) == [1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2], "combat counts its own bars from its start")
    #expect(beats.map(\.seconds) == (0...10).map { Double($0) * 0.5 })
    #expect(beats[4].isDownbeat && !beats[5].isDownbeat)
  }
}

extension BeatTests {
  @Test(
    "Across gapless repeats at another rate or tempo, bars count from 1 in each pass and no beat is lost or doubled",
    arguments: [
      ("rate: 0.8,", "", 0.8), ("", #"{ on: "hurry", do: { tempo: 1.25, ramp: 0 } },"#, 1.25), ("", "", 1),
      // (At tempo 0.8 a beat every 10 s was lost: reckoned just past one block's end, and just
      // behind the position at the next block's start.)
      ("", #"{ on: "hurry", do: { tempo: 0.8, ramp: 0 } },"#, 0.8),
    ])
  func beatsAcrossRepeats(stateRate: String, tempoRule: String, speed: Double) throws {
    let game = try DirectorFixture()
    // Two bars of 4/4 at 120 BPM (4 s), repeated gaplessly.
    try FLACEncoder.encode(
      samples: [Float](repeating: 0.1, count: 2 * 4 * 48_000), format: .stereo48000, tags: [("BPM", "120")],
      to: game.assets + "/two.flac")
    let text = """
      {
        assets: "assets", loudness: "off", start: "loop",
        sources: { two: { bundled: "two.flac" } },
        states: { loop: { music: "two", \(stateRate) between: "gapless", transition: { seconds: 0 } } },
        rules: [ \(tempoRule) ],
      }
      """
    let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    let director = Director(engine: engine, sheet: try game.sheet(text), library: nil, clocking: .pumped)
    let log = BeatLog()
    director.addBeatObserver { log.add($0) }
    director.post("hurry")
    var buffer = [Float](repeating: 0, count: 2 * 256)
    var frame = 0
    // Three passes and a little: 12 s of the file at the speed.
    let seconds = 12.2 / speed
    while frame < Int(seconds * 48_000) {
      director.advance(toAudioTime: Double(frame) / 48_000)
      buffer.withUnsafeMutableBufferPointer { engine.render(into: $0.baseAddress!, frameCount: 256) }
      frame += 256
    }
    let beats = log.all
    let labels = beats.map { "\($0.bar).\($0.beat)" }
    let pass = ["1.1", "1.2", "1.3", "1.4", "2.1", "2.2", "2.3", "2.4"]
    #expect(labels == pass + pass + pass + ["1.1"], "\(labels)")
    // Evenly spaced: a beat every 0.5 s of the file, heard at the speed.
    let spacing = 24_000 / speed
    let gaps = zip(beats.dropFirst(), beats).map { Double($0.mixFrame - $1.mixFrame) }
    // (Stretched, the first beat, on the first frame, comes before the stretcher's start settles:
    // the rest keep the spacing.)
    let steady = tempoRule.isEmpty ? gaps : Array(gaps.dropFirst())
    #expect(steady.allSatisfy { abs($0 - spacing) <= 2 }, "the beats' spacing: \(gaps)")
  }
}

extension BeatTests {
  @Test(
    "Through a loop's seam, at rate 1 and 0.8, the downbeat the loop starts on is reported with the loop start's bar",
    arguments: ["", "rate: 0.8,"])
  func beatsThroughALoop(stateRate: String) throws {
    let game = try DirectorFixture()
    // Two bars of 4/4 at 120 BPM; the second (2 s to 4 s) loops.
    try FLACEncoder.encode(
      samples: [Float](repeating: 0.1, count: 2 * 4 * 48_000), format: .stereo48000,
      tags: [("BPM", "120"), ("LOOPSTART", "96000"), ("LOOPLENGTH", "96000")], to: game.assets + "/two.flac")
    let text = """
      {
        assets: "assets", loudness: "off", start: "loop",
        sources: { two: { bundled: "two.flac" } },
        states: { loop: { music: "two", \(stateRate) transition: { seconds: 0 } } },
        rules: [],
      }
      """
    let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    let director = Director(engine: engine, sheet: try game.sheet(text), library: nil, clocking: .pumped)
    let log = BeatLog()
    director.addBeatObserver { log.add($0) }
    let speed = stateRate.isEmpty ? 1.0 : 0.8
    var buffer = [Float](repeating: 0, count: 2 * 256)
    var frame = 0
    // The first bar, the loop three times, and its downbeat once more.
    while frame < Int(8.2 / speed * 48_000) {
      director.advance(toAudioTime: Double(frame) / 48_000)
      buffer.withUnsafeMutableBufferPointer { engine.render(into: $0.baseAddress!, frameCount: 256) }
      frame += 256
    }
    let beats = log.all
    let labels = beats.map { "\($0.bar).\($0.beat)" }
    let loop = ["2.1", "2.2", "2.3", "2.4"]
    #expect(labels == ["1.1", "1.2", "1.3", "1.4"] + loop + loop + loop + ["2.1"], "\(labels)")
    let gaps = zip(beats.dropFirst(), beats).map { Double($0.mixFrame - $1.mixFrame) }
    #expect(gaps.allSatisfy { abs($0 - 24_000 / speed) <= 2 }, "the beats' spacing: \(gaps)")
  }
}

@Suite(
  "Beat callbacks live: delivered when OpenAL plays the beat's frame",
  .disabled(if: CGame.underThreadSanitizer, "the live run is timing-bound; see make test-tsan"))
struct LiveBeatTests {
  @Test("On OpenAL Soft's wave backend, each beat and marker reaches the game within a device period of being played")
  func liveBeats() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-beats")
    let cues = directory.file("cues.json5")
    let events = directory.file("events.json5")
    try """
    { assets: "\(LiveEqualsOfflineTests.assets)", start: "fight",
      sources: { battle: { bundled: "combat.ogg", cues: { theme: [1, 2.5, 4] } } },
      states: { fight: { music: "battle", transition: { seconds: 0 } } } }
    """.write(toFile: cues, atomically: true, encoding: .utf8)
    try "[]".write(toFile: events, atomically: true, encoding: .utf8)
    let environment = try WaveBackend.environment(
      capturingTo: directory.file("live.wav"), configuration: directory.file("wave.conf"))
    let run = try LeitmotifCommand.run(
      ["cues", "simulate", cues, "--events", events, "--live", "--duration", "5", "--beats"], environment: environment)
    #expect(run.status == 0, "\(run.errors)")
    // "   0.417 s beat 1.2 of "Steel and Sparks (Combat)" (frame 32073; OpenAL was playing frame 32812)"
    let heardLines = run.output.split(separator: "\n").compactMap {
      line -> (frame: Int64, heard: Int64, label: String)? in
      guard let open = line.range(of: "(frame "), let middle = line.range(of: "; OpenAL was playing frame ") else {
        return nil
      }
      let frame = Int64(line[open.upperBound..<middle.lowerBound])
      let heard = Int64(line[middle.upperBound...].dropLast())
      let label = line[..<open.lowerBound].split(separator: " ").dropFirst(2).prefix(2).joined(separator: " ")
      return frame.flatMap { frame in heard.map { (frame, $0, label) } }
    }
    let beats = heardLines.filter { $0.label.hasPrefix("bar ") || $0.label.hasPrefix("beat ") }
    // The markers: the source's "theme" at 1, 2.5 and 4 s of the file, 72000 frames apart.
    let markers = heardLines.filter { $0.label.hasPrefix("cue ") }
    #expect(markers.count == 3 && markers.allSatisfy { $0.label == "cue \"theme\"" }, "\(run.output)")
    for (earlier, later) in zip(markers, markers.dropFirst()) {
      #expect(later.frame - earlier.frame == 72_000, "markers at frames \(earlier.frame) and \(later.frame)")
    }
    if let first = markers.first, let downbeat = beats.first {
      #expect(first.frame - downbeat.frame == 48_000, "the first marker 1 s after the first downbeat")
    }
    // 144 BPM: a beat every 20000 frames at 48 kHz, 12 in 5 s, the first the music's first frame.
    #expect(beats.count >= 11, "\(run.output)")
    #expect(beats.first?.label == "bar 1.1" && beats.dropFirst().first?.label == "beat 1.2", "\(run.output)")
    for (earlier, later) in zip(beats, beats.dropFirst()) {
      #expect(later.frame - earlier.frame == 20_000, "beats at frames \(earlier.frame) and \(later.frame)")
    }
    // Delivered when played, not when mixed (the bus holds about 2500 frames ahead of the ear):
    // within one device period (1024 frames) and a bus block (256) of OpenAL's own position.
    // Never early by more than a bus block; most within a period; a beat late by more than two
    // periods would be the dispatcher failing, not the machine being busy (the whole suite runs
    // beside this test: a descheduled thread can lose a few milliseconds now and then).
    let lags = (beats + markers).map { $0.heard - $0.frame }
    print("live beats: OpenAL's position minus each beat's frame at delivery: \(lags)")
    #expect(lags.allSatisfy { $0 >= -256 && $0 <= 2 * 1024 + 256 }, "OpenAL's position minus the beat's frame: \(lags)")
    let withinAPeriod = lags.filter { $0 <= 1024 + 256 }.count
    #expect(
      withinAPeriod * 5 >= lags.count * 4, "within a period and a block: \(withinAPeriod) of \(lags.count): \(lags)")
  }
}
