import Foundation
import LeitmotifFixtures
import Synchronization
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// Voices are handles with generations, held by leases: whatever an earlier owner still sends
/// (a release, a seek, a disarm, a file it was opening) never reaches the voice's next owner.
@Suite("Voice ownership: handles, generations and leases")
struct VoiceOwnershipTests {
  /// The level of a tone in the left channel (see `Listen.level`).
  func level(of frequency: Double, in stereo: [Float]) -> Double {
    let left = stride(from: 0, to: stereo.count, by: 2).map { stereo[$0] }
    return Listen.level(of: frequency, in: left[...], rate: 48_000)
  }

  func tone(_ directory: TemporaryDirectory, _ name: String, frequency: Double, seconds: Double) throws -> MediaItem {
    var item = MediaItem(
      path: try EngineHarness.vorbisTone(in: directory, name: name, seconds: seconds, frequency: frequency))
    item.title = name
    return item
  }

  @Test("A steal revokes the lease: the old owner's release and commands reach nobody; generations are never 0")
  func leases() throws {
    let engine = try AudioEngine(
      output: .offline(sampleRate: 48_000, renderFrames: EngineHarness.renderFrames), voiceLimit: 1)
    let stolen = Mutex<[VoiceHandle]>([])
    let listener: @Sendable (EngineEvent) -> Void = { event in
      if case .stolen(let voice, _) = event { stolen.withLock { $0.append(voice) } }
    }
    let first = try #require(engine.claimVoice(priority: 0, listener: listener))
    #expect(first.isCurrent)
    #expect(first.handle.generation != 0)
    #expect(engine.claimVoice(priority: 0, listener: { _ in }) == nil, "same priority: never stolen")
    _ = EngineHarness.render(engine, frames: EngineHarness.renderFrames)
    let second = try #require(engine.claimVoice(priority: 1, listener: { @Sendable _ in }), "higher priority steals")
    #expect(second.slot == first.slot && second.handle.generation != first.handle.generation)
    _ = EngineHarness.render(engine, frames: EngineHarness.renderFrames)  // events are delivered after a render
    #expect(stolen.withLock { $0 } == [first.handle], "the old owner is told, with its own handle")
    #expect(!first.isCurrent && second.isCurrent)
    first.release()
    #expect(second.isCurrent, "a revoked lease's release does nothing")
    #expect(engine.pool.ownedCount == 1)
    let renewal = engine.pool.renew(second)
    let renewed = try #require(renewal)
    #expect(renewed.slot == second.slot && !second.isCurrent && renewed.isCurrent)
    #expect(engine.pool.renew(first) == nil)
    withExtendedLifetime(second) {}
  }

  @Test("A one-shot player whose voice was stolen cannot silence the thief (its commands and release are dropped)")
  func stolenOneShot() throws {
    let directory = try TemporaryDirectory()
    let oneShotItem = try tone(directory, "stinger.ogg", frequency: 660, seconds: 3)
    let music = try tone(directory, "music.ogg", frequency: 330, seconds: 3)
    let engine = try AudioEngine(
      output: .offline(sampleRate: 48_000, renderFrames: EngineHarness.renderFrames), voiceLimit: 1)
    var oneShot: Player? = try Player(engine: engine, item: oneShotItem)
    let events = Mutex<[String]>([])
    oneShot!.addObserver { event in
      if case .voiceStolen = event { events.withLock { $0.append("stolen") } }
    }
    oneShot!.play()
    let before = EngineHarness.render(engine, seconds: 0.3)
    #expect(level(of: 660, in: before) > 0.1, "the one-shot plays")

    let queue = QueuePlayer(engine: engine)
    try queue.setQueue(with: [music])
    queue.play()  // music outranks a one-shot: it takes the only voice
    _ = EngineHarness.render(engine, seconds: 0.3)
    oneShot!.waitForNotifications()
    #expect(events.withLock { $0 } == ["stolen"])
    #expect(oneShot!.playbackState == .stopped)
    // What the old owner still does must not touch the music.
    oneShot!.pause()
    oneShot!.currentPlaybackTime = 2
    oneShot!.volume = 0
    oneShot = nil  // its deinit gives back a voice it no longer has
    let after = EngineHarness.render(engine, seconds: 0.5)
    #expect(level(of: 330, in: Array(after[(after.count / 2)...])) > 0.1, "the music plays on")
    #expect(level(of: 660, in: Array(after[(after.count / 2)...])) < 0.01)
    #expect(queue.playbackState == .playing)
  }

  @Test(
    "Offline, sound effects and music started in one step on a full pool: the music takes a voice the effects had not yet begun"
  )
  func musicStealsVoicesNotYetTakenUp() throws {
    let directory = try TemporaryDirectory()
    let effectA = try tone(directory, "a.ogg", frequency: 440, seconds: 3)
    let effectC = try tone(directory, "c.ogg", frequency: 880, seconds: 3)
    let music = try tone(directory, "music.ogg", frequency: 660, seconds: 3)
    let engine = try AudioEngine(
      output: .offline(sampleRate: 48_000, renderFrames: EngineHarness.renderFrames), voiceLimit: 2)
    let players = [try Player(engine: engine, item: effectA), try Player(engine: engine, item: effectC)]
    for player in players { player.play() }
    let queue = QueuePlayer(engine: engine)
    try queue.setQueue(with: [music])
    queue.play()  // before any render: neither effect's claim is taken up
    let heard = EngineHarness.render(engine, seconds: 1)
    for player in players { player.waitForNotifications() }
    #expect(level(of: 660, in: Array(heard[(heard.count / 2)...])) > 0.1, "the music plays")
    #expect(queue.voiceCount > 0 && queue.playbackState == .playing)
    #expect(players.filter { $0.playbackState == .stopped }.count == 1, "one effect gave its voice up")
    #expect(players.filter { $0.playbackState == .playing }.count == 1, "the other plays on")
  }

  @Test("A playing player nobody holds plays to its end, then gives its voice back; a paused one goes at once")
  func oneShotPlaysWithoutAReference() throws {
    let directory = try TemporaryDirectory()
    let hit = try tone(directory, "hit.ogg", frequency: 440, seconds: 1)
    let engine = try AudioEngine(
      output: .offline(sampleRate: 48_000, renderFrames: EngineHarness.renderFrames), voiceLimit: 4)
    try Player(engine: engine, item: hit).play()  // fire and forget
    weak var paused: Player?
    do {
      let player = try Player(engine: engine, item: hit)
      player.play()
      player.pause()
      paused = player
    }
    #expect(EngineHarness.wait(seconds: 2) { paused == nil }, "the paused one is gone at once")
    #expect(engine.pool.ownedCount == 1)
    let heard = EngineHarness.render(engine, seconds: 1.5)
    #expect(level(of: 440, in: Array(heard[(48_000 / 5 * 2)..<(48_000 * 8 / 10 * 2)])) > 0.1, "heard")
    #expect(EngineHarness.wait(seconds: 2) { engine.pool.ownedCount == 0 }, "its voice given back when it ended")

    // Live the same: the voice plays out on the streaming thread and comes back when it ends.
    let live = try AudioEngine(output: .headless)
    defer { live.shutdown() }
    try Player(engine: live, item: hit).play()
    usleep(500_000)
    #expect(live.pool.ownedCount == 1, "still playing its 1 s item")
    #expect(EngineHarness.wait(seconds: 3) { live.pool.ownedCount == 0 }, "given back after it ended")
  }

  @Test("Event streams end when the engine shuts down, and players say they stopped", .hangGuard)
  func streamsEndAtShutdown() async throws {
    let directory = try TemporaryDirectory()
    let item = try tone(directory, "long.ogg", frequency: 440, seconds: 30)
    let engine = try AudioEngine(output: .headless)
    let player = try Player(engine: engine, item: item)
    let queue = QueuePlayer(engine: engine)
    try queue.setQueue(with: [item])
    let game = try DirectorFixture()
    try #"{ start: "explore", \#(DirectorFixture.sources) states: { explore: { music: "calm" } } }"#
      .write(toFile: game.cuePath, atomically: true, encoding: .utf8)
    let director = try Director(engine: engine, cueFile: game.cuePath)
    let heard = Mutex(0)
    director.addObserver(timing: .whenHeard) { _ in heard.withLock { $0 += 1 } }
    let playerEvents = player.events
    let queueEvents = queue.events
    let reports = director.reports
    let listening = Task {
      var seen = 0
      for await _ in playerEvents { seen += 1 }
      for await _ in queueEvents { seen += 1 }
      for await _ in reports { seen += 1 }
      return seen
    }
    player.play()
    queue.play()
    director.start()
    try await Task.sleep(nanoseconds: 300_000_000)
    engine.shutdown()
    let seen = await listening.value
    #expect(seen >= 3, "the events before the end came through")
    // Reports still waiting to be heard were handed on, and nothing is left to wait for (a drain
    // scheduled on the shut-down engine used to keep waitForReports busy for its 3 s).
    let waiting = Date()
    director.waitForReports()
    #expect(Date().timeIntervalSince(waiting) < 1)
    #expect(heard.withLock { $0 } >= 1)
    #expect(player.playbackState == .stopped && queue.playbackState == .stopped)
    var after = 0
    for await _ in player.events { after += 1 }  // made after the shutdown: already over
    #expect(after == 0)
  }

  @Test("A queue that steals its own fading voice plays on")
  func queueStealsItsOwnFadingVoice() throws {
    let directory = try TemporaryDirectory()
    let list = try [220.0, 330, 440, 550].enumerated().map { index, frequency in
      try tone(directory, "item\(index).ogg", frequency: frequency, seconds: 4)
    }
    let engine = try AudioEngine(
      output: .offline(sampleRate: 48_000, renderFrames: EngineHarness.renderFrames), voiceLimit: 2)
    let queue = QueuePlayer(engine: engine)
    queue.transition = try Transition(duration: 2, curve: .equalPower)
    try queue.setQueue(with: list)
    queue.play()
    _ = EngineHarness.render(engine, seconds: 0.5)
    try queue.skipToNextItem()  // into the prepared follower; the first item fades out
    _ = EngineHarness.render(engine, seconds: 0.3)
    try queue.skipToNextItem()  // needs a voice: the only one to take is the queue's own fading one
    _ = EngineHarness.render(engine, seconds: 0.3)
    queue.waitForNotifications()
    #expect(queue.playbackState == .playing)
    #expect(queue.indexOfNowPlayingItem == 2)
    let later = EngineHarness.render(engine, seconds: 2.5)
    #expect(level(of: 440, in: Array(later[(later.count / 2)...])) > 0.1, "the third item is heard")
  }

  @Test("Setting a player's item while the old file is still opening never plays the old file")
  func itemChangeWhileOpening() throws {
    let directory = try TemporaryDirectory()
    let old = try tone(directory, "old.ogg", frequency: 440, seconds: 5)
    let engine = try AudioEngine(output: .headless)
    defer { engine.shutdown() }
    let player = try Player(engine: engine, item: old)
    let failures = Mutex(0)
    player.addObserver { event in
      if case .itemFailed = event { failures.withLock { $0 += 1 } }
    }
    player.play()  // the loader starts opening old.ogg...
    player.item = MediaItem(path: directory.file("missing.ogg"))  // ...and the player moves on at once
    player.play()
    #expect(EngineHarness.wait(seconds: 5) { failures.withLock { $0 } == 1 }, "the new item fails to open")
    usleep(300_000)
    #expect(!player.isPreparedToPlay, "old.ogg was dropped when it arrived")
    #expect(player.currentPlaybackTime == 0)
    #expect(engine.statuses.allSatisfy { !$0.isPrepared.load(ordering: .acquiring) }, "no voice plays anything")
    #expect(player.playbackState == .stopped)
  }

  @Test("Commands with a stale handle are dropped: an old owner cannot disarm, pause or release the new owner's voice")
  func staleCommands() throws {
    let directory = try TemporaryDirectory()
    let list = [
      try tone(directory, "a.ogg", frequency: 330, seconds: 1.5),
      try tone(directory, "b.ogg", frequency: 550, seconds: 2),
    ]
    let engine = try AudioEngine(
      output: .offline(sampleRate: 48_000, renderFrames: EngineHarness.renderFrames), voiceLimit: 2)
    // An owner that had both slots and gave them back: its handles are stale from now on.
    let stale = [engine.claimVoice(listener: { _ in })!, engine.claimVoice(listener: { _ in })!]
    let staleHandles = stale.map(\.handle)
    for lease in stale { lease.release() }
    let queue = QueuePlayer(engine: engine)
    queue.transition = try Transition(duration: 0.5, curve: .equalPower)
    try queue.setQueue(with: list)
    queue.play()
    _ = EngineHarness.render(engine, seconds: 0.2)
    #expect(queue.voiceCount == 2, "the playing item and its armed follower, on the slots the old owner had")
    for handle in staleHandles {
      engine.commands.post(.arm(voice: handle, nil))
      engine.commands.post(.pause(voice: handle))
      engine.commands.post(.setVolume(voice: handle, 0))
      engine.commands.post(.release(handle))
      engine.pool.release(handle)
    }
    let output = EngineHarness.render(engine, seconds: 2)
    queue.waitForNotifications()
    #expect(queue.indexOfNowPlayingItem == 1, "the hand-over armed on the queue's voice still fired")
    #expect(level(of: 550, in: Array(output[(output.count / 2)...])) > 0.1)
  }

  @Test(
    "After shutdown no engine thread remains: streaming, notifications, the loader and every decode thread have ended")
  func shutdownEndsEveryThread() throws {
    let directory = try TemporaryDirectory()
    let list = try [330.0, 440].enumerated().map { index, frequency in
      try tone(directory, "item\(index).ogg", frequency: frequency, seconds: 3)
    }
    let engine = try AudioEngine(output: .headless)
    let census = engine.decodeThreads
    let queue = QueuePlayer(engine: engine)
    try queue.setQueue(with: list)
    queue.play()  // a playing voice and a prepared follower: two decode threads
    #expect(EngineHarness.wait(seconds: 5) { census.count == 2 })
    let loader = try #require(engine.loader)
    #expect(!loader.isFinished)
    engine.shutdown()
    #expect(census.count == 0)
    #expect(loader.isFinished)
    #expect(engine.isShutDown)

    // An offline engine's decode threads end with it, too: dropping the last reference is enough.
    var offline: AudioEngine? = try EngineHarness.offlineEngine()
    let offlineCensus = offline!.decodeThreads
    do {
      let player = try Player(engine: offline!, item: list[0])
      player.play()
      _ = EngineHarness.render(offline!, seconds: 0.1)
      #expect(offlineCensus.count == 1)
    }
    offline = nil
    #expect(offlineCensus.count == 0)
  }

  @Test("Shutdown does not wait out the audible dispatcher's sleep: its thread ends at once")
  func audibleDispatcherStopsAtOnce() throws {
    // A beat due in 10 s: the thread sleeps (a second at a time) until then.
    let dispatcher = AudibleDispatcher()
    dispatcher.schedule(at: DispatchTime.now().uptimeNanoseconds + 10_000_000_000) {}
    usleep(50_000)
    let started = DispatchTime.now().uptimeNanoseconds
    dispatcher.stop(waitingUpTo: 2)
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    // It took back its own wake-up and waited out the sleep: 0.8 s for every lm_engine_destroy.
    #expect(seconds < 0.3, "stop took \(seconds) s")
  }
}
