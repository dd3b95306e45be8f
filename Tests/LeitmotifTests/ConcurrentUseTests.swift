import Foundation
import LeitmotifFixtures
import Synchronization
import Testing

@testable import Leitmotif

/// A game calls Leitmotif from wherever it likes: its main loop, its input handler, a loading
/// thread, a network callback. Here several threads at once drive one queue player and three
/// one-shot players on a real-time engine with seeded random commands (play, pause, stop, skips,
/// seeks, rates, tempo, volumes, crossfade lengths, repeat and shuffle modes, new queues, item
/// changes, a file that does not exist), while another thread reads their state. Afterwards the
/// engine must still play a new queue from its start, and shut down promptly.
@Suite("Concurrent use: players driven from several threads at once keep working")
struct ConcurrentUseTests {
  @Test(
    "Random commands from four threads, then the engine still plays and shuts down", arguments: [11, 12] as [UInt64])
  func randomCommandsFromManyThreads(seed: UInt64) throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-concurrent")
    let items = [
      MediaItem(path: try EngineHarness.vorbisTone(in: directory, name: "a.ogg", seconds: 1.5, frequency: 330)),
      MediaItem(
        path: try EngineHarness.vorbisTone(
          in: directory, name: "b.ogg", seconds: 2, frequency: 440, format: PCMFormat.stereo44100)),
      MediaItem(path: try EngineHarness.vorbisTone(in: directory, name: "c.ogg", seconds: 0.4, frequency: 550)),
      MediaItem(path: directory.file("missing.ogg")),
    ]
    let engine = try AudioEngine(output: .headless)
    let queue = QueuePlayer(engine: engine)
    let players = try (0..<3).map { _ in try Player(engine: engine) }
    let stop = Atomic<Bool>(false)
    let operations = Atomic<Int>(0)

    let workers = 4
    let done = DispatchGroup()
    for worker in 0..<workers {
      done.enter()
      Thread {
        defer { done.leave() }
        var random = SplitMix64(seed: seed &* 31 &+ UInt64(worker))
        func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
        func unit() -> Double { Double(random.next() >> 11) / Double(1 << 53) }
        while !stop.load(ordering: .relaxed) {
          let player = pick(players)
          switch random.next() % 24 {
          case 0: queue.play()
          case 1: queue.pause()
          case 2: queue.stop()
          case 3: try? queue.skipToNextItem()
          case 4: try? queue.skipToPreviousItem()
          case 5: try? queue.skip(toIndex: Int(random.next() % 5))
          case 6: queue.currentPlaybackTime = unit() * 3 - 0.5
          case 7: try? queue.setCurrentPlaybackRate(Float(0.25 + unit() * 2))
          case 8: try? queue.setTempo(Float(0.6 + unit()))
          case 9: queue.volume = Float(unit())
          case 10: queue.repeatMode = pick(RepeatMode.allCases)
          case 11: queue.shuffleMode = pick(ShuffleMode.allCases)
          case 12: if let fade = try? Transition(duration: unit() * 1.2) { queue.transition = fade }
          case 13: try? queue.setQueue(with: (0..<Int(random.next() % 4 + 1)).map { _ in pick(items) })
          case 14: try? queue.append([pick(items)])
          case 15: player.item = pick(items)
          case 16: player.play()
          case 17: player.pause()
          case 18: player.stop()
          case 19: player.currentPlaybackTime = unit() * 2
          case 20: try? player.setCurrentPlaybackRate(Float(0.5 + unit()))
          case 21: player.volume = Float(unit())
          case 22: engine.masterGain = Float(0.5 + unit() / 2)
          default: queue.prepareToPlay()
          }
          operations.add(1, ordering: .relaxed)
          // A breath between calls, as a game's frame has (and so that the storm leaves the
          // other suites, some of them timing live audio, a share of the two cores here).
          usleep(UInt32(100 + random.next() % 400))
          if random.next() % 8 == 0 { usleep(UInt32(random.next() % 3_000)) }
        }
      }.start()
    }
    // A reader, as a game's HUD would be: every state property, all the time.
    done.enter()
    Thread {
      defer { done.leave() }
      while !stop.load(ordering: .relaxed) {
        _ = queue.nowPlayingItem
        _ = queue.currentPlaybackTime
        _ = queue.playbackState
        _ = queue.queue.count
        _ = queue.indexOfNowPlayingItem
        for player in players { _ = (player.playbackState, player.currentPlaybackTime) }
        usleep(500)
      }
    }.start()
    Thread.sleep(forTimeInterval: 3)
    stop.store(true, ordering: .relaxed)
    #expect(done.wait(timeout: .now() + 10) == .success, "a thread calling the players did not come back")
    #expect(operations.load(ordering: .relaxed) > 1_000)

    // Still alive: a fresh queue plays from its start.
    queue.stop()
    try queue.setQueue(with: [items[1]])
    try queue.setCurrentPlaybackRate(1)
    try queue.setTempo(1)
    queue.repeatMode = .none
    queue.play()
    let deadline = Date().addingTimeInterval(5)
    while Date() < deadline && !(queue.playbackState == .playing && queue.currentPlaybackTime > 0.3) {
      usleep(10_000)
    }
    #expect(queue.playbackState == .playing)
    #expect(queue.currentPlaybackTime > 0.3, "the queue did not play on after the storm")
    #expect(queue.nowPlayingItem?.assetURL == items[1].assetURL)

    let started = Date()
    engine.shutdown()
    #expect(Date().timeIntervalSince(started) < 3, "shutdown took \(Date().timeIntervalSince(started)) s")
  }
}
