import Foundation
import LeitmotifFixtures
import Synchronization
import Testing

@testable import Leitmotif
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// `releaseLoop` ends a loop at a seam decided by the mixer, from where the voice has read:
/// the seam of the pass being played, unless it is within `DecodeAheadStream.releaseCommitFrames`
/// (then the loop plays once more). The decode thread, which decodes up to 0.68 s ahead, waits
/// at each seam until the mixer is that near, so how far ahead it happens to be never decides.
@Suite("Loop release: the loop ends at the seam the mixer decides, the same however far the decoder is ahead")
struct LoopReleaseTests {
  static let start = 30_011
  static let length = 50_021

  /// A 2.5 s noise file with a loop of `length` frames from `start` (in the file's frames).
  func loopFile(in directory: TemporaryDirectory, format: PCMFormat = .stereo48000) throws -> String {
    let samples = EngineHarness.noise(seed: 9, seconds: 2.5, amplitude: 0.3, format: format)
    return try EngineHarness.vorbis(
      samples, in: directory, name: "loop-\(format.sampleRate).ogg", format: format,
      tags: [("LOOPSTART", "\(Self.start)"), ("LOOPLENGTH", "\(Self.length)")])
  }

  /// Plays `path` looping until released, releases it on mix frame `releaseFrame`, and renders
  /// `frames`. Before the release the decode thread is given time to fill its ring, as it has
  /// live (offline, the mixer keeps it nearly empty).
  func renderReleased(_ path: String, at releaseFrame: Int64, frames: Int) throws -> [Float] {
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    try player.setQueue(with: [MediaItem(path: path)])
    player.play()
    // Whole render calls up to the release's frame; the release lands inside the next one.
    var rendered = EngineHarness.render(
      engine, frames: Int(releaseFrame) / EngineHarness.renderFrames * EngineHarness.renderFrames)
    Thread.sleep(forTimeInterval: 0.2)
    engine.performing(atMixFrame: releaseFrame) { player.releaseLoop() }
    rendered += EngineHarness.render(engine, frames: frames - rendered.count / 2)
    return rendered
  }

  /// Plays `path` looping exactly `times` times and renders `frames`.
  func renderLooped(_ path: String, times: Int, frames: Int) throws -> [Float] {
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    player.loopRepeat = .times(times)
    try player.setQueue(with: [MediaItem(path: path)])
    player.play()
    return EngineHarness.render(engine, frames: frames)
  }

  @Test(
    "A release ends the loop at this pass's seam when it comes more than the commit reach before it, else after the next",
    arguments: [40_000, 30_000, 8_193, 8_192, 3_000, 1]
  )
  func seamDecidedByPosition(framesBeforeSeam: Int) throws {
    let directory = try TemporaryDirectory()
    let path = try loopFile(in: directory)
    let reach = DecodeAheadStream.releaseCommitFrames
    // Released in the third pass (two jumps done), `framesBeforeSeam` before its seam.
    let seam = Self.start + 3 * Self.length
    let jumps = framesBeforeSeam > reach ? 2 : 3
    let frames = 120_000 + 5 * Self.length
    let released = try renderReleased(path, at: Int64(seam - framesBeforeSeam), frames: frames)
    let looped = try renderLooped(path, times: jumps, frames: frames)
    let heard = (0..<(released.count / 2)).last { released[2 * $0] != 0 }.map { $0 + 1 } ?? 0
    #expect(
      (heard - 120_000 + Self.length / 2) / Self.length == jumps,
      "released \(framesBeforeSeam) frames before a seam: \(heard) frames heard, \(jumps) loops expected")
    let mismatch = (0..<min(released.count, looped.count)).first { released[$0] != looped[$0] }
    #expect(mismatch == nil, "differs from looping \(jumps) times at sample \(mismatch ?? -1)")
  }

  @Test("A 44.1 kHz loop resampled to the mix rate ends where a loop counted to that pass ends, sample for sample")
  func resampledLoop() throws {
    let directory = try TemporaryDirectory()
    let path = try loopFile(in: directory, format: .stereo44100)
    // Mix frames of the file's seams: the file's frames × 48000 / 44100.
    let seam = Int(Double(Self.start + 3 * Self.length) * 48_000 / 44_100)
    let frames = 140_000 + 6 * Self.length
    for (before, jumps) in [(25_000, 2), (2_000, 3)] {
      let released = try renderReleased(path, at: Int64(seam - before), frames: frames)
      let looped = try renderLooped(path, times: jumps, frames: frames)
      let worst = zip(released, looped).map { abs($0 - $1) }.max() ?? 0
      #expect(worst == 0, "released \(before) frames before the seam: differs from \(jumps) loops by \(worst)")
      #expect(EngineHarness.peak(looped[(2 * (frames - 1000))...]) == 0, "the render reaches the end")
    }
  }

  @Test("Two releases: the later one cannot bring back a pass the earlier one ended")
  func secondReleaseKeepsTheFirst() throws {
    let directory = try TemporaryDirectory()
    let path = try loopFile(in: directory)
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    try player.setQueue(with: [MediaItem(path: path)])
    player.play()
    let seam = Self.start + Self.length
    let calls = EngineHarness.renderFrames
    var rendered = EngineHarness.render(engine, frames: (seam - 40_000) / calls * calls)
    engine.performing(atMixFrame: Int64(seam - 40_000)) { player.releaseLoop() }
    rendered += EngineHarness.render(engine, frames: (seam - 2_000) / calls * calls - rendered.count / 2)
    Thread.sleep(forTimeInterval: 0.2)
    engine.performing(atMixFrame: Int64(seam - 2_000)) { player.releaseLoop() }
    rendered += EngineHarness.render(engine, frames: 120_000 + Self.length)
    let looped = try renderLooped(path, times: 0, frames: rendered.count / 2)
    #expect(looped.count == rendered.count)
    let mismatch = (0..<rendered.count).first { rendered[$0] != looped[$0] }
    #expect(mismatch == nil, "the file played once through, no loop: first difference at \(mismatch ?? -1)")
  }

  @Test(
    "Live: a loop whose seam comes three blocks in is ready at once, plays its seams without underruns, and ends when released"
  )
  func liveShortLoop() throws {
    let directory = try TemporaryDirectory()
    // A loop of 10,000 frames from the start: the decode thread waits at its seam with three
    // blocks in the ring, fewer than pre-buffering asks for.
    let samples = EngineHarness.noise(seed: 3, seconds: 0.5, amplitude: 0.3)
    let path = try EngineHarness.vorbis(
      samples, in: directory, name: "short-loop.ogg", tags: [("LOOPSTART", "0"), ("LOOPLENGTH", "10000")])
    let engine = try AudioEngine(output: .defaultDevice)
    defer { engine.shutdown() }
    let player = QueuePlayer(engine: engine)
    try player.setQueue(with: [MediaItem(path: path)])
    let asked = Date()
    player.prepareToPlay()
    #expect(EngineHarness.wait(seconds: 4) { player.isPreparedToPlay })
    let ready = Date().timeIntervalSince(asked)
    #expect(ready < 1, "prepared after \(ready) s")
    player.play()
    usleep(1_500_000)
    #expect(player.playbackState == .playing, "still looping")
    player.releaseLoop()
    #expect(EngineHarness.wait(seconds: 3) { player.playbackState == .stopped }, "the outro (0.29 s) played and ended")
    #expect(player.underrunCount == 0)
  }
}

@Suite("Queue events as a user reads them")
struct QueueEventTextTests {
  @Test("A skip onto a gapless entry is reported as the 10 ms crossfade it is; events print as one short line")
  func skipOntoGaplessEntry() throws {
    let directory = try TemporaryDirectory()
    let first = try EngineHarness.vorbisTone(in: directory, name: "first.ogg", seconds: 3, frequency: 300)
    let second = try EngineHarness.vorbisTone(in: directory, name: "second.ogg", seconds: 3, frequency: 400)
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    var descriptor = QueueDescriptor(items: [MediaItem(path: first), MediaItem(path: second)])
    try descriptor.setTransition(.gapless, for: descriptor.entries[1].item)
    try player.setQueue(with: descriptor)
    let log = Mutex<[QueuePlayerEvent]>([])
    _ = player.addObserver { event in log.withLock { $0.append(event) } }
    player.play()
    _ = EngineHarness.render(engine, seconds: 0.5)
    try player.skipToNextItem()
    _ = EngineHarness.render(engine, seconds: 0.5)
    player.waitForNotifications()
    let events = log.withLock { $0 }
    let transitions = events.compactMap { event -> Transition? in
      if case .transitionStarted(_, let to, let transition) = event, to.assetURL.path == second { return transition }
      return nil
    }
    #expect(transitions.count == 1 && transitions.first?.isGapless == false, "\(transitions)")
    #expect(transitions.first.map { abs($0.duration - 0.01) < 1e-9 } == true, "\(transitions)")
    for event in events {
      #expect(event.description.count < 200, "\(event.description)")
    }
    #expect(events.contains { $0.description == "now playing \"second.ogg\" (index 1) after skipForward" })
  }
}
