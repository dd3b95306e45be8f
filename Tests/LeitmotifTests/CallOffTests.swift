import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// A change taken back before it is heard (`QueuePlayer.takeBackQueue`, the director's call-off)
/// looks at the outgoing voice, finds it not yet fading, and gives the incoming voice back. When
/// that command reaches the mixer only after the crossfade began (a late director thread), the
/// mixer undoes the crossfade: the music kept fades back up. It used to go on fading out under a
/// released incoming voice: silence where the music should have played on.
@Suite("Call-off: a change taken back after its crossfade began in the mixer is undone there")
struct CallOffTests {
  static let rate = 48_000

  @Test("The kept music fades back up and plays on; the incoming music is gone")
  func lateCallOff() throws {
    let directory = try TemporaryDirectory()
    let kept = directory.path + "/kept.ogg"
    let incoming = directory.path + "/incoming.ogg"
    try DirectorFixture.tone(kept, pitch: 440, seconds: 6, tags: [])
    try DirectorFixture.tone(incoming, pitch: 660, seconds: 6, tags: [])
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    try player.setQueue(with: [MediaItem(path: kept)])
    player.play()
    var rendered = EngineHarness.render(engine, seconds: 1)
    // The change lands on 2 s of the kept file, with a 1 s crossfade.
    try player.setQueue(
      with: QueueDescriptor(items: [MediaItem(path: incoming)]), startingAt: nil,
      transition: try Transition(duration: 1, curve: .equalPower),
      landing: QueuePlayer.Landing(fileSeconds: 2, everySeconds: nil))
    rendered += EngineHarness.render(engine, seconds: 0.5)
    Thread.sleep(forTimeInterval: 0.2)  // the incoming voice opens, as it has time to live
    rendered += EngineHarness.render(engine, frames: EngineHarness.renderFrames)  // and is attached
    // Taken back while the kept music is not fading yet; the mixer only hears of it 0.1 s after
    // the crossfade began.
    engine.holdCommandsForTesting(true)
    let takenBack = player.takeBackQueue()
    rendered += EngineHarness.render(engine, frames: Int(0.6 * Double(Self.rate)))
    engine.holdCommandsForTesting(false)
    rendered += EngineHarness.render(engine, seconds: 2)
    player.waitForNotifications()
    #expect(takenBack)
    #expect(player.nowPlayingItem?.assetURL.path == kept)
    #expect(player.playbackState == .playing)

    let left = stride(from: 0, to: rendered.count, by: 2).map { rendered[$0] }
    let full = Listen.level(of: 440, in: Listen.window(left, 0.5, 1.0))
    // The crossfade began at about 2 s and was undone about 0.1 s into it.
    let after = Listen.level(of: 440, in: Listen.window(left, 2.3, 3.9))
    let incomingAfter = Listen.level(of: 660, in: Listen.window(left, 2.3, 3.9))
    let heardIncoming = Listen.level(of: 660, in: Listen.window(left, 2.0, 2.1))
    #expect(full > 0.3, "the kept tone plays at \(full) before the change")
    #expect(
      heardIncoming > 0.05 * full, "the crossfade did begin before the late call-off (660 Hz at \(heardIncoming))")
    #expect(after > 0.95 * full, "the kept tone plays on at \(after) (before: \(full))")
    #expect(incomingAfter < 0.01 * full, "the incoming tone is gone (\(incomingAfter))")
    // No click where it turns back: the largest step stays a sine's at this level.
    let turn = Array(rendered[(2 * Int(2.0 * Double(Self.rate)))..<(2 * Int(2.3 * Double(Self.rate)))])
    #expect(EngineHarness.largestStep(turn) < 0.1, "a step of \(EngineHarness.largestStep(turn)) at the turn")
  }
}
