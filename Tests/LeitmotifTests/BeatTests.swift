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
  @Test("Offline: each beat on its frame, bars counted from the item's downbeat; a change on the bar starts the new item's count")
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
    #expect(beats.map(\.bar) == [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1], "combat counts its own bars from its start")
    #expect(beats.map(\.seconds) == (0...10).map { Double($0) * 0.5 })
    #expect(beats[4].isDownbeat && !beats[5].isDownbeat)
  }
}
