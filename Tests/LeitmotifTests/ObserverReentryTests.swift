import Foundation
import LeitmotifFixtures
import Synchronization
import Testing

@testable import Leitmotif

/// A game's observer calling back into what it observes: libdispatch stopped the process when an
/// observer waited for its own player's notifications (a `sync` onto the queue it ran on).
@Suite("Observers may call back into their player")
struct ObserverReentryTests {
  @Test("waitForNotifications from inside a Player's and a QueuePlayer's observer returns")
  func waitInsidePlayerObservers() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("tone.ogg")
    try DirectorFixture.tone(path, pitch: 440, seconds: 1, tags: [])
    let engine = try AudioEngine(output: .headless)
    defer { engine.shutdown() }
    let player = try Player(engine: engine, item: MediaItem(path: path))
    let playerCalls = Atomic<Int>(0)
    _ = player.addObserver { _ in
      player.waitForNotifications()
      playerCalls.add(1, ordering: .relaxed)
    }
    let queue = QueuePlayer(engine: engine)
    let queueCalls = Atomic<Int>(0)
    _ = queue.addObserver { _ in
      queue.waitForNotifications()
      queueCalls.add(1, ordering: .relaxed)
    }
    try queue.setQueue(with: [MediaItem(path: path)])
    player.play()
    queue.play()
    #expect(EngineHarness.wait(seconds: 5) { playerCalls.load(ordering: .relaxed) > 0 })
    #expect(EngineHarness.wait(seconds: 5) { queueCalls.load(ordering: .relaxed) > 0 })
    // From outside, it still waits for what was reported.
    player.waitForNotifications()
    queue.waitForNotifications()
  }

  @Test("waitForReports from inside a Director's observer returns")
  func waitInsideDirectorObserver() throws {
    let fixture = try DirectorFixture()
    _ = try fixture.sheet(
      """
      { \(DirectorFixture.sources) start: "explore", states: { explore: { music: "calm" } } }
      """)
    let engine = try AudioEngine(output: .headless)
    defer { engine.shutdown() }
    let director = try Director(engine: engine, cueFile: fixture.cuePath)
    defer { director.shutdown() }
    let calls = Atomic<Int>(0)
    _ = director.addObserver { _ in
      director.waitForReports()
      calls.add(1, ordering: .relaxed)
    }
    director.start()
    #expect(EngineHarness.wait(seconds: 5) { calls.load(ordering: .relaxed) > 0 })
  }
}
