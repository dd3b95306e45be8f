import Foundation
import LeitmotifFixtures
import Synchronization
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifOutput
@testable import LeitmotifPlayers

/// The real-time path: the default device (headless on a machine without a sound card), the
/// streaming thread, underruns and device loss. These run in real time, so they are short.
@Suite("Real-time output", .serialized)
struct RealtimeTests {
  @Test("The default device opens, or falls back to the headless null output with a one-line notice")
  func defaultDeviceOrHeadless() throws {
    let log = DiagnosticLog()
    let engine = try AudioEngine(output: .defaultDevice, diagnostics: log.handler)
    if engine.initialDevice.kind == .headless {
      let notices = log.all.filter { $0.severity == .notice }
      #expect(notices.count == 1)
      #expect(notices.first?.message.contains("headless") == true)
      #expect(notices.first?.message.contains("\n") == false)
    }
    #expect(engine.sampleRate > 0)
    engine.shutdown()
  }

  @Test("The clocked headless output plays in real time with no sound card involved")
  func clockedHeadless() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 0.8)
    let engine = try AudioEngine(output: .headless)
    defer { engine.shutdown() }
    #expect(engine.initialDevice.kind == .headless)
    let player = try Player(engine: engine, item: MediaItem(path: path))
    let started = Date()
    player.play()
    #expect(EngineHarness.wait(seconds: 3) { player.playbackState == .stopped })
    let elapsed = Date().timeIntervalSince(started)
    #expect(elapsed > 0.7 && elapsed < 2.5, "a 0.8 s item took \(elapsed) s")
  }

  @Test("A queue crossfades and joins gaplessly in real time, in order, and lets its voices go at the end")
  func queueInRealTime() throws {
    let directory = try TemporaryDirectory()
    let paths = try (0..<3).map {
      try EngineHarness.vorbisTone(in: directory, name: "q\($0).ogg", seconds: 1, frequency: 300 + 100 * Double($0))
    }
    let engine = try AudioEngine(output: .headless)
    defer { engine.shutdown() }
    let player = QueuePlayer(engine: engine)
    let log = QueueLog(player)
    let descriptor = QueueDescriptor(entries: [
      .init(item: MediaItem(path: paths[0])),
      .init(item: MediaItem(path: paths[1]), transition: try Transition(duration: 0.4, curve: .equalPower)),
      .init(item: MediaItem(path: paths[2]), transition: .gapless),
    ])
    try player.setQueue(with: descriptor)
    let started = Date()
    player.play()
    #expect(EngineHarness.wait(seconds: 6) { player.playbackState == .stopped })
    let elapsed = Date().timeIntervalSince(started)
    #expect(elapsed > 2.3 && elapsed < 4.5, "1 + 1 + 1 − 0.4 s took \(elapsed) s")
    player.waitForNotifications()
    #expect(log.nowPlaying.map(\.0) == ["q0.ogg", "q1.ogg", "q2.ogg", "q0.ogg"])
    #expect(EngineHarness.wait(seconds: 1) { player.voiceCount == 0 }, "every voice let go: \(player.voiceCount)")
    #expect(player.underrunCount == 0)
  }

  @Test("The streaming thread runs at a raised priority where the system grants it; the other threads do not")
  func streamingThreadPriority() throws {
    // What this process may ask for, tried on a thread of its own.
    let granted = Mutex<Int32?>(nil)
    NativeThread { granted.withLock { $0 = ThreadPriority.raiseCurrent(toNice: ThreadPriority.streamingNice) } }.start()
    #expect(EngineHarness.wait(seconds: 2) { granted.withLock { $0 } != nil })
    let allowed = Int(try #require(granted.withLock { $0 }))

    let engine = try AudioEngine(output: .headless)
    defer { engine.shutdown() }
    let directory = try TemporaryDirectory()
    let player = try Player(
      engine: engine, item: MediaItem(path: try EngineHarness.vorbisTone(in: directory, seconds: 0.5)))
    player.play()
    #expect(EngineHarness.wait(seconds: 2) { engine.streamingThreadNice == allowed })
    #expect(engine.streamingThreadNice == allowed)
    // As the kernel sees it: every engine's streaming thread in this process (tests run in
    // parallel), and the threads that must stay normal; none under real-time scheduling.
    let threads = RealtimeTests.threadScheduling()
    let streaming = threads.filter { $0.name == "lm.streaming" }
    #expect(!streaming.isEmpty)
    #expect(streaming.allSatisfy { $0.nice == allowed && $0.policy == 0 }, "\(threads)")
    for name in ["lm.decode", "lm.notify", "lm.loader"] {
      #expect(threads.filter { $0.name == name }.allSatisfy { $0.nice == 0 && $0.policy == 0 }, "\(name): \(threads)")
    }
    print("streaming thread at nice \(engine.streamingThreadNice) (allowed here: \(allowed))")
  }

  /// Each thread of this process: its kernel name, nice value and scheduling policy
  /// (`/proc/self/task/*/stat` fields 19 and 41; policy 0 is the normal one).
  static func threadScheduling() -> [(name: String, nice: Int, policy: Int)] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { task in
      guard let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
        let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
      else { return nil }
      let name = String(stat[stat.index(after: open)..<close])
      // After the name come fields 3 onwards: field n is the (n - 2)th of them.
      let fields = stat[stat.index(after: close)...].split(separator: " ")
      guard fields.count > 38, let nice = Int(fields[16]), let policy = Int(fields[38]) else { return nil }
      return (name, nice, policy)
    }
  }

  @Test("A named device that does not exist is a typed error, not a crash")
  func missingNamedDevice() {
    #expect(throws: OutputError.self) { _ = try AudioEngine(output: .namedDevice("No Such Device 1234")) }
  }

  @Test("Playback runs in real time and ends by itself")
  func realTimePlayback() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 1.0)
    let engine = try AudioEngine(output: .defaultDevice)
    defer { engine.shutdown() }
    let player = try Player(engine: engine, item: MediaItem(path: path))
    let started = Date()
    player.play()
    #expect(EngineHarness.wait(seconds: 2) { player.isPreparedToPlay })
    usleep(500_000)
    let position = player.currentPlaybackTime
    #expect(position > 0.15 && position < 0.9, "position after half a second: \(position)")
    #expect(EngineHarness.wait(seconds: 3) { player.playbackState == .stopped })
    let elapsed = Date().timeIntervalSince(started)
    #expect(elapsed > 0.9 && elapsed < 3.0, "a 1 s item took \(elapsed) s")
  }

  @Test("An underrun restarts the source, is counted, and the item plays on")
  func underrunIsRecovered() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 2.0)
    let engine = try AudioEngine(output: .defaultDevice)
    defer { engine.shutdown() }
    let player = try Player(engine: engine, item: MediaItem(path: path))
    let log = EventLog(player)
    player.play()
    #expect(EngineHarness.wait(seconds: 2) { player.currentPlaybackTime > 0.2 })
    // About a third of a second is queued: a 700 ms stall drains it.
    engine.stallStreamingThread(milliseconds: 700)
    #expect(EngineHarness.wait(seconds: 4) { player.playbackState == .stopped })
    player.waitForNotifications()
    #expect(player.underrunCount >= 1)
    #expect(log.all.contains { if case .underrun = $0 { true } else { false } })
    #expect(log.all.contains { if case .itemEnded = $0 { true } else { false } })
  }

  @Test("Each latency keeps its own queue ahead of OpenAL: a device period and 32 ms, or 10.7 ms; none on demand")
  func queuedAheadPerLatency() throws {
    let standard = try AudioEngine(output: .defaultDevice)
    let low = try AudioEngine(output: .defaultDevice, latency: .low)
    let offline = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 512), latency: .low)
    let headless = try AudioEngine(output: .headless, latency: .low)
    defer { for engine in [standard, low, offline, headless] { engine.shutdown() } }
    #expect(low.outputLatency == .low && standard.outputLatency == .standard)
    let period = standard.initialDevice.mixPeriodFrames
    if !standard.initialDevice.rendersOnDemand {
      #expect(standard.queuedAheadFrames == period + 6 * 256)
      #expect(low.queuedAheadFrames == low.initialDevice.mixPeriodFrames + 2 * 256)
    }
    #expect(offline.queuedAheadFrames == 0)
    #expect(headless.queuedAheadFrames == 0)
  }

  @Test("Low latency: music plays through; each underrun adds two blocks of slack, up to the standard, with a notice")
  func lowLatencyWidensAfterUnderruns() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 6.0)
    let log = DiagnosticLog()
    let engine = try AudioEngine(output: .defaultDevice, latency: .low, diagnostics: log.handler)
    defer { engine.shutdown() }
    guard !engine.initialDevice.rendersOnDemand else { return }
    let period = engine.initialDevice.mixPeriodFrames
    let player = try Player(engine: engine, item: MediaItem(path: path))
    player.play()
    #expect(EngineHarness.wait(seconds: 2) { player.currentPlaybackTime > 0.3 })
    // A loaded machine may have run dry already; then it has widened once for each time.
    let before = engine.underrunCount
    #expect(
      before == 0 ? engine.queuedAheadFrames == period + 512 : engine.queuedAheadFrames > period + 512,
      "\(before) underruns, \(engine.queuedAheadFrames) frames queued ahead")
    var seen = [engine.queuedAheadFrames]
    for _ in 0..<3 {
      let count = engine.underrunCount
      // Far longer than anything queued: the bus runs dry.
      engine.stallStreamingThread(milliseconds: 300)
      #expect(EngineHarness.wait(seconds: 3) { engine.underrunCount > count })
      #expect(EngineHarness.wait(seconds: 1) { engine.queuedAheadFrames >= min(period + 1536, seen.last! + 512) })
      seen.append(engine.queuedAheadFrames)
    }
    #expect(seen.last == period + 1536, "frames queued ahead after each underrun: \(seen)")
    #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 <= $1 }, "\(seen)")
    player.waitForNotifications()
    let notices = log.all.filter { $0.message.contains("low latency keeps") }
    #expect(notices.count >= 2, "\(log.all.map(\.message))")
    #expect(notices.last?.message.contains("\(period + 1536) frames") == true, "\(notices.map(\.message))")
    #expect(player.playbackState == .playing)
  }

  @Test("Seeks while playing in real time are not underruns")
  func seeksAreNotUnderruns() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 6.0)
    let engine = try AudioEngine(output: .headless)
    defer { engine.shutdown() }
    let player = try Player(engine: engine, item: MediaItem(path: path))
    player.play()
    #expect(EngineHarness.wait(seconds: 2) { player.currentPlaybackTime > 0.1 })
    for target in [3.0, 1.0, 4.5, 0.5] {
      player.currentPlaybackTime = target
      usleep(150_000)
      let position = player.currentPlaybackTime
      #expect(position >= target && position < target + 0.6, "after seeking to \(target): \(position)")
    }
    #expect(player.underrunCount == 0)
    #expect(player.playbackState == .playing)
  }

  @Test("A device disconnect is reported; the engine reopens the default device and resumes where it was")
  func disconnectRecovery() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 4.0)
    let log = DiagnosticLog()
    let engine = try AudioEngine(output: .defaultDevice, diagnostics: log.handler)
    defer { engine.shutdown() }
    let player = try Player(engine: engine, item: MediaItem(path: path))
    let events = EventLog(player)
    player.play()
    #expect(EngineHarness.wait(seconds: 2) { player.currentPlaybackTime > 1.0 })
    let before = player.currentPlaybackTime
    engine.simulateDeviceDisconnect()
    #expect(EngineHarness.wait(seconds: 3) { log.all.contains { $0.message.contains("resumed") } })
    #expect(log.all.contains { $0.message.contains("disconnected") })
    usleep(200_000)
    let after = player.currentPlaybackTime
    #expect(after >= before, "resumed at \(after) s, was at \(before) s")
    #expect(after < before + 1.5)
    player.waitForNotifications()
    #expect(events.states.contains(.interrupted))
    #expect(player.playbackState == .playing)
  }
}
