import Foundation
import LeitmotifFixtures
import LeitmotifRealtimeAudit
import Synchronization
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// The streaming thread's rules (see `StreamingLoop`), checked: while music plays and
/// crossfades, the thread that mixes allocates nothing, waits on no lock and does no file I/O.
/// The test executable replaces malloc, pthread_mutex_lock, syscall (futex waits) and the file
/// calls (LeitmotifRealtimeAudit) and counts them on the engine's streaming thread only.
/// What happens inside OpenAL Soft's own calls is counted apart and printed: 1.19 allocates a
/// list item for every buffer queued, and its device calls take a process-wide lock that other
/// engines (other tests, running at the same time) may hold.
@Suite(
  "The real-time rules, checked on the streaming thread and in the C calls for an audio callback", .serialized,
  .enabled(if: lm_audit_available() != 0, "the audit stands aside under a sanitizer"))
struct RealtimeRulesTests {
  func crossfadeHeavyRun(output: OutputChoice) throws -> lm_audit_counts {
    let directory = try TemporaryDirectory()
    let items = try (0..<8).map { index in
      MediaItem(
        path: try EngineHarness.vorbisTone(
          in: directory, name: "item\(index).ogg", seconds: 1.2, frequency: 220 + 55 * Double(index)))
    }
    let engine = try AudioEngine(
      output: output, voiceLimit: 16, diagnostics: nil,
      streamingThreadHooks: AudioEngine.ThreadHooks(enter: lm_audit_enter, leave: lm_audit_leave))
    defer { engine.shutdown() }
    let player = QueuePlayer(engine: engine)
    player.transition = try Transition(duration: 0.4, curve: .equalPower)
    player.repeatMode = .all
    // Each item has a stem (a layer, mixed per frame by the voice), a beat grid (beats found by
    // the mixer) and named cue points (markers, found the same way): all run on the streaming
    // thread too.
    let stem = MediaItem(
      path: try EngineHarness.vorbisTone(in: directory, name: "stem.ogg", seconds: 1.2, frequency: 990))
    let entries = items.map { item in
      var entry = QueueDescriptor.Entry(item: item)
      entry.layers = [QueueDescriptor.Layer(item: stem, volume: 0.5)]
      entry.beatGrid = QueueDescriptor.BeatGrid(beatsPerMinute: 240)
      entry.cuePoints = ["tick": [0.05, 0.35, 0.65]]
      return entry
    }
    let beats = BeatLog()
    player.addBeatObserver { beats.add($0) }
    let markers = Mutex<Int>(0)
    player.addMarkerObserver { _ in markers.withLock { $0 += 1 } }
    try player.setQueue(with: QueueDescriptor(entries: entries))
    player.play()
    #expect(EngineHarness.wait(seconds: 3) { player.currentPlaybackTime > 0.3 })
    lm_audit_arm(1)
    // Four seconds: about five crossfades (each a voice opened, attached, faded in, handed over,
    // faded out and let go), volume, filter and tempo changes, ducks, a seek and a skip.
    for step in 0..<40 {
      usleep(100_000)
      if step % 7 == 0 { player.volume = step % 14 == 0 ? 0.6 : 1 }
      if step == 10 { player.lowPassGain = 0.3 }
      if step == 20 { player.lowPassGain = 1 }
      if step == 25 { player.currentPlaybackTime = 0.2 }
      if step == 30 { try player.skipToNextItem() }
      if step % 5 == 2 { try player.setVolume(step % 10 == 2 ? 0.1 : 1, ofLayer: 0, over: 0.15, curve: .sCurve) }
      if step == 12 { player.setLayerMix(gains: [0.7], lowPasses: [0.2]) }
      // Ducks (the mixer's, per frame over every voice of the player), overlapping.
      if step % 6 == 3 {
        player.duck(
          DuckShape(
            decibels: -9, attackSeconds: 0.05, holdSeconds: 0.5, releaseSeconds: 0.2, sampleRate: engine.sampleRate))
      }
      if step == 22 { player.setLayerMix(gains: [1], lowPasses: [1]) }
      // Tempo (SoundTouch in each voice): on, changed across its range, and back to 1.
      if step == 4 { try player.setTempo(1.3) }
      if step == 16 { try player.setTempo(0.6) }
      if step == 27 { try player.setTempo(2) }
      if step == 35 { try player.setTempo(1) }
    }
    lm_audit_arm(0)
    let counts = lm_audit_read()
    #expect(player.playbackState == .playing)
    #expect(beats.all.count >= 8, "the mixer reported \(beats.all.count) beats in 4 s at 240 BPM")
    #expect(markers.withLock { $0 } >= 4, "the mixer reported \(markers.withLock { $0 }) markers")
    return counts
  }

  @Test("Headless real time (the loopback device rendered on the wall clock): no allocation, lock wait or file I/O")
  func headless() throws {
    let counts = try crossfadeHeavyRun(output: .headless)
    #expect(counts.allocations == 0, "allocations: \(counts.allocations)")
    #expect(counts.lockWaits == 0, "lock waits: \(counts.lockWaits)")
    #expect(counts.fileCalls == 0, "file calls: \(counts.fileCalls)")
    print(
      "real-time audit, headless: \(counts.openALAllocations) allocations and \(counts.openALLockWaits) lock waits inside OpenAL's own calls"
    )
  }

  @Test(
    "The default device (OpenAL's null backend here, its own mixing thread): Leitmotif allocates nothing, waits on no lock, reads no file"
  )
  func defaultDevice() throws {
    let counts = try crossfadeHeavyRun(output: .defaultDevice)
    #expect(counts.allocations == 0, "allocations: \(counts.allocations)")
    #expect(counts.lockWaits == 0, "lock waits: \(counts.lockWaits)")
    #expect(counts.fileCalls == 0, "file calls: \(counts.fileCalls)")
    // OpenAL Soft 1.19 allocates a list item in every alSourceQueueBuffers (and frees it when
    // the buffer is unqueued): one per bus block. Counted apart, and said.
    print(
      "real-time audit, default device: \(counts.openALAllocations) allocations and \(counts.openALLockWaits) lock waits inside OpenAL's own calls"
    )
  }

  @Test("The audit can tell: a thread that allocates and reads a file while audited is counted")
  func auditCounts() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("x.txt")
    try "hello".write(toFile: path, atomically: true, encoding: .utf8)
    let thread = Thread {
      lm_audit_enter()
      lm_audit_arm(1)
      let array = [Int](repeating: 7, count: 1000)
      _ = try? String(contentsOfFile: path, encoding: .utf8)
      withExtendedLifetime(array) {}
      lm_audit_arm(0)
      lm_audit_leave()
    }
    thread.start()
    while !thread.isFinished { usleep(1000) }
    let counts = lm_audit_read()
    #expect(counts.allocations > 0 && counts.fileCalls > 0, "\(counts)")
  }
}
