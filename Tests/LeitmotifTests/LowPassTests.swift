import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

@Suite("The low-pass (shelf) filter on music voices and on the bus, rendered offline")
struct LowPassTests {
  /// Renders `seconds` of a stereo tone of `frequency` through a `Player`, with `lowPassGain` set
  /// before play (or never touched, for nil).
  func renderTone(frequency: Double, lowPassGain: Float?, seconds: Double = 1) throws -> [Float] {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: seconds + 0.5, frequency: frequency)
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine, item: MediaItem(path: path))
    if let lowPassGain { player.lowPassGain = lowPassGain }
    player.play()
    return EngineHarness.render(engine, seconds: seconds)
  }

  /// Root mean square over `frames` of a stereo render.
  func rms(_ stereo: [Float], frames: Range<Int>) -> Double { EngineHarness.power(stereo, frames: frames).squareRoot() }

  /// After the 10 ms fade-in, to just before the render ends.
  let steadyFrames = 4096..<45_056

  @Test("At 0.1 an 8 kHz tone loses most of its energy and a 200 Hz tone keeps nearly all")
  func mufflesHighsAndKeepsBass() throws {
    let trebleOpen = rms(try renderTone(frequency: 8000, lowPassGain: 1), frames: steadyFrames)
    let trebleMuffled = rms(try renderTone(frequency: 8000, lowPassGain: 0.1), frames: steadyFrames)
    let bassOpen = rms(try renderTone(frequency: 200, lowPassGain: 1), frames: steadyFrames)
    let bassMuffled = rms(try renderTone(frequency: 200, lowPassGain: 0.1), frames: steadyFrames)
    #expect(trebleOpen > 0.3 && bassOpen > 0.3, "the tones are heard: \(trebleOpen), \(bassOpen)")
    #expect(trebleMuffled / trebleOpen < 0.4, "8 kHz keeps \(trebleMuffled / trebleOpen) of its RMS")
    #expect(bassMuffled / bassOpen > 0.9, "200 Hz keeps \(bassMuffled / bassOpen) of its RMS")
  }

  @Test("The engine's master low-pass muffles the whole bus, and 1 gives the output back bit for bit")
  func masterLowPass() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 2, frequency: 8000)
    func render(_ gain: Float?) throws -> [Float] {
      let engine = try EngineHarness.offlineEngine()
      let player = try Player(engine: engine, item: MediaItem(path: path))
      if let gain { engine.masterLowPassGain = gain }
      player.play()
      return EngineHarness.render(engine, seconds: 1)
    }
    let open = try render(nil)
    let muffled = try render(0.1)
    #expect(rms(muffled, frames: steadyFrames) / rms(open, frames: steadyFrames) < 0.4)
    #expect(try render(1) == open)
  }

  @Test("A gain of 1 is bit-identical to a render that never set the filter, also after a change back")
  func unityIsBitExact() throws {
    let untouched = try renderTone(frequency: 8000, lowPassGain: nil)
    let unity = try renderTone(frequency: 8000, lowPassGain: 1)
    #expect(unity == untouched)
    let muffled = try renderTone(frequency: 8000, lowPassGain: 0.3)
    #expect(muffled != untouched, "the comparison can tell a filter apart")

    // Muffled, then back to 1 before anything was heard: the filter is detached, not set to 1.
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 1.5, frequency: 8000)
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine, item: MediaItem(path: path))
    player.lowPassGain = 0.2
    player.play()
    _ = EngineHarness.render(engine, frames: EngineHarness.renderFrames)
    player.lowPassGain = 1
    let rest = EngineHarness.render(engine, seconds: 1)
    let reference = Array(untouched[(2 * EngineHarness.renderFrames)...])
    #expect(Array(rest.prefix(reference.count)) == reference)
  }

  @Test("Out-of-range and non-finite gains are clamped, or mean unfiltered")
  func gainIsClamped() throws {
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine)
    player.lowPassGain = -3
    #expect(player.lowPassGain == 0)
    player.lowPassGain = 7
    #expect(player.lowPassGain == 1)
    player.lowPassGain = .nan
    #expect(player.lowPassGain == 1)
    let queue = QueuePlayer(engine: engine)
    queue.lowPassGain = 0.25
    #expect(queue.lowPassGain == 0.25)
    queue.lowPassGain = -.infinity
    #expect(queue.lowPassGain == 1)
  }

  @Test("A player's filter stays set when its item changes")
  func survivesItemChange() throws {
    let directory = try TemporaryDirectory()
    let first = try EngineHarness.vorbisTone(in: directory, name: "first.ogg", seconds: 1, frequency: 8000)
    let second = try EngineHarness.vorbisTone(in: directory, name: "second.ogg", seconds: 1, frequency: 8000)
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine, item: MediaItem(path: first))
    player.lowPassGain = 0.1
    player.play()
    _ = EngineHarness.render(engine, seconds: 0.2)
    player.item = MediaItem(path: second)
    player.play()
    let output = EngineHarness.render(engine, seconds: 0.5)
    let open = rms(try renderTone(frequency: 8000, lowPassGain: 1), frames: steadyFrames)
    #expect(player.lowPassGain == 0.1)
    #expect(rms(output, frames: 4096..<(output.count / 2)) / open < 0.4)
  }

  @Test("A player's volume and rate stay set when its item changes")
  func volumeAndRateSurviveItemChange() throws {
    let directory = try TemporaryDirectory()
    let first = try EngineHarness.vorbisTone(in: directory, name: "first.ogg", seconds: 1, frequency: 440)
    let second = try EngineHarness.vorbisTone(in: directory, name: "second.ogg", seconds: 2, frequency: 440)
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine, item: MediaItem(path: first))
    player.volume = 0.25
    try player.setCurrentPlaybackRate(2)
    _ = EngineHarness.render(engine, seconds: 0.2)
    player.item = MediaItem(path: second)
    player.play()
    let output = EngineHarness.render(engine, seconds: 0.5)
    // The tone was encoded at amplitude 0.5: a quarter of it, and twice as fast on the clock.
    #expect(abs(EngineHarness.peak(output[(2 * 4096)...]) - 0.125) < 0.02)
    #expect(player.currentPlaybackTime > 0.8, "played at rate 2: \(player.currentPlaybackTime) s of the file in 0.5 s")
  }

  @Test("Changing it mid-play takes effect: the later blocks of an 8 kHz tone drop, and come back")
  func changeMidPlay() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 2, frequency: 8000)
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine, item: MediaItem(path: path))
    player.play()
    let open = EngineHarness.render(engine, seconds: 0.5)
    player.lowPassGain = 0.1
    let muffled = EngineHarness.render(engine, seconds: 0.5)
    player.lowPassGain = 1
    let reopened = EngineHarness.render(engine, seconds: 0.4)
    let openRMS = rms(open, frames: 8192..<(open.count / 2))
    // The change lands in the first mix after it was set: every block after that one is muffled.
    let muffledRMS = rms(muffled, frames: EngineHarness.renderFrames..<(muffled.count / 2))
    let reopenedRMS = rms(reopened, frames: EngineHarness.renderFrames..<(reopened.count / 2))
    #expect(openRMS > 0.3)
    #expect(muffledRMS / openRMS < 0.4, "after the change: \(muffledRMS / openRMS)")
    #expect(reopenedRMS / openRMS > 0.95, "after setting 1 again: \(reopenedRMS / openRMS)")
  }

  @Test("A queue player filters every voice it owns, a crossfade's incoming one too")
  func queuePlayerFiltersEveryVoice() throws {
    let directory = try TemporaryDirectory()
    let first = try EngineHarness.vorbisTone(in: directory, name: "first.ogg", seconds: 1.5, frequency: 8000)
    let second = try EngineHarness.vorbisTone(in: directory, name: "second.ogg", seconds: 1.5, frequency: 7000)

    func render(lowPassGain: Float) throws -> [Float] {
      let engine = try EngineHarness.offlineEngine()
      let player = QueuePlayer(engine: engine)
      player.transition = try Transition(duration: 0.5, curve: .equalPower)
      player.lowPassGain = lowPassGain
      try player.setQueue(with: [MediaItem(path: first), MediaItem(path: second)])
      player.play()
      return EngineHarness.render(engine, seconds: 3.5)
    }
    let open = try render(lowPassGain: 1)
    let muffled = try render(lowPassGain: 0.1)
    // The whole first item, and the second item's last half second (heard alone, on its own voice).
    let lastSound = (open.lastIndex { abs($0) > 1e-3 } ?? 0) / 2
    #expect(lastSound > 100_000, "both items played (sound until frame \(lastSound))")
    let firstItem = 4096..<48_000
    let secondItem = (lastSound - 24_000)..<(lastSound - 2_000)
    #expect(rms(muffled, frames: firstItem) / rms(open, frames: firstItem) < 0.4)
    #expect(rms(muffled, frames: secondItem) / rms(open, frames: secondItem) < 0.4)
  }
}
