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

  @Test(
    "Paused while a new queue waits for its line: the music heard pauses with it, and the new queue still starts on its line"
  )
  func pauseBeforeTheLine() throws {
    let directory = try TemporaryDirectory()
    let heard = directory.path + "/heard.ogg"
    let waiting = directory.path + "/waiting.ogg"
    try DirectorFixture.tone(heard, pitch: 440, seconds: 8, tags: [])
    try DirectorFixture.tone(waiting, pitch: 660, seconds: 6, tags: [])
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    try player.setQueue(with: [MediaItem(path: heard)])
    player.play()
    var rendered = EngineHarness.render(engine, seconds: 1)
    // The new queue on 2 s of the music heard; paused at 1.3 s, for 2 s.
    try player.setQueue(
      with: QueueDescriptor(items: [MediaItem(path: waiting)]), startingAt: nil,
      transition: try Transition(duration: 0.1, curve: .equalPower),
      landing: QueuePlayer.Landing(fileSeconds: 2, everySeconds: nil))
    rendered += EngineHarness.render(engine, seconds: 0.1)
    Thread.sleep(forTimeInterval: 0.2)  // the new queue's music opens
    rendered += EngineHarness.render(engine, frames: Int(0.2 * 48_000))
    player.pause()
    rendered += EngineHarness.render(engine, seconds: 2)
    player.play()
    rendered += EngineHarness.render(engine, seconds: 3)
    player.waitForNotifications()

    let left = stride(from: 0, to: rendered.count, by: 2).map { rendered[$0] }
    let full = Listen.level(of: 440, in: Listen.window(left, 0.3, 1.2))
    #expect(full > 0.3, "the music heard plays (440 Hz at \(full))")
    #expect(Listen.rms(Listen.window(left, 1.5, 3.2)) < 0.001, "silence while paused")
    // From the resume at 3.3 s the music heard goes on from 1.3 s of its file, 0.7 s to its line.
    let after = Listen.level(of: 440, in: Listen.window(left, 3.4, 3.9))
    let early = Listen.level(of: 660, in: Listen.window(left, 3.4, 3.9))
    #expect(after > 0.9 * full, "the music heard resumes (440 Hz at \(after))")
    #expect(early < 0.01 * full, "the new queue waits for its line (660 Hz at \(early))")
    let later = Listen.level(of: 660, in: Listen.window(left, 4.2, 5.5))
    #expect(later > 0.9 * full, "then it starts on it (660 Hz at \(later))")
  }
}
