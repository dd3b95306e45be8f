import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// A queue set to start on a line of music that is itself still waiting for its own line (the
/// director hands a bridge's state music on behind the bridge as soon as it reckons the bridge
/// heard) waits for that music to begin, then for its line in it.
@Suite("Landings on music that has not begun yet")
struct WaitingLandingTests {
  @Test("A crossfade on a line of music still waiting to begin waits for it, then for its line")
  func landingOnWaitingMusic() throws {
    let directory = try TemporaryDirectory()
    let first = directory.path + "/first.ogg"
    let second = directory.path + "/second.ogg"
    let third = directory.path + "/third.ogg"
    try DirectorFixture.tone(first, pitch: 440, seconds: 8, tags: [])
    try DirectorFixture.tone(second, pitch: 660, seconds: 4, tags: [])
    try DirectorFixture.tone(third, pitch: 880, seconds: 6, tags: [])
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    try player.setQueue(with: [MediaItem(path: first)])
    player.play()
    var rendered = EngineHarness.render(engine, seconds: 1)
    // The second piece on 2 s of the first; the third on 2 s of the second, set while the
    // second still waits for its line.
    try player.setQueue(
      with: QueueDescriptor(items: [MediaItem(path: second)]), startingAt: nil,
      transition: try Transition(duration: 0.1, curve: .equalPower),
      landing: QueuePlayer.Landing(fileSeconds: 2, everySeconds: nil))
    rendered += EngineHarness.render(engine, seconds: 0.1)
    Thread.sleep(forTimeInterval: 0.2)  // the second piece opens
    rendered += EngineHarness.render(engine, frames: EngineHarness.renderFrames)
    try player.setQueue(
      with: QueueDescriptor(items: [MediaItem(path: third)]), startingAt: nil,
      transition: try Transition(duration: 0.5, curve: .equalPower),
      landing: QueuePlayer.Landing(fileSeconds: 2, everySeconds: nil))
    rendered += EngineHarness.render(engine, seconds: 6)
    player.waitForNotifications()

    let left = stride(from: 0, to: rendered.count, by: 2).map { rendered[$0] }
    let full = Listen.level(of: 660, in: Listen.window(left, 2.2, 3.8))
    #expect(full > 0.3, "the second piece plays from 2 s (660 Hz at \(full))")
    let early = Listen.level(of: 880, in: Listen.window(left, 1.0, 3.9))
    #expect(early < 0.01 * full, "the third piece waits for 2 s of the second, at 4 s (880 Hz at \(early) before)")
    let later = Listen.level(of: 880, in: Listen.window(left, 4.6, 6.5))
    #expect(later > 0.9 * full, "then it plays (880 Hz at \(later))")
    // Its crossfade begins on the second piece's 2 s, at 4 s of the mix: rising through it.
    let rising = Listen.level(of: 880, in: Listen.window(left, 4.15, 4.35))
    #expect(rising > 0.3 * full && rising < 0.95 * full, "880 Hz at \(rising) a quarter second into its fade")
  }
}
