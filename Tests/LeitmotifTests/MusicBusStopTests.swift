import Foundation
import Testing

@testable import LeitmotifEngine
@testable import LeitmotifOutput

/// A source the device stopped keeps its unheard audio (issue 12, part 8: found again by the
/// sound-server test under issue 13's CI runs, which lost 16,586 frames once).
@Suite("Music bus: a source stopped by its device keeps what it had not played")
struct MusicBusStopTests {
  @Test(
    "Stopped with 12 blocks queued: nothing is taken as played, early or after the queue's length; a requeue puts all back"
  )
  func stoppedSourceKeepsItsQueue() throws {
    let device = try OutputDevice.openLoopback(sampleRate: 48_000)
    let bus = try MusicBus(device: device)
    for block in 0..<12 {
      let samples = try #require(bus.nextBlock(frames: MusicBus.blockFrames), "block \(block)")
      for index in 0..<(2 * MusicBus.blockFrames) { samples[index] = Float(block) / 12 }
      bus.commit(frames: MusicBus.blockFrames)
    }
    let queued = 12 * MusicBus.blockFrames
    bus.keepPlaying()
    bus.collectPlayed()  // seen playing, with all of it queued
    #expect(bus.queuedFrames == queued)

    // What OpenAL does when the device goes: the source stops, every buffer "processed".
    bus.stopSource()
    bus.collectPlayed()
    #expect(bus.stoppedEarly)
    #expect(bus.queuedFrames == queued, "the unheard blocks were taken as played")
    // Later than the queue could have played: still not an underrun, still all there.
    usleep(UInt32(queued * 1_000_000 / 48_000) + 50_000)
    bus.collectPlayed()
    #expect(bus.stoppedEarly)
    #expect(bus.queuedFrames == queued)
    #expect(bus.keepPlaying() == false)

    try bus.requeueUnheard(on: device)
    #expect(bus.queuedFrames == queued)
    #expect(!bus.stoppedEarly)
  }

  @Test(
    "A backend that mixes two periods at once to catch up runs a short queue dry at once: an underrun (restarted), not a stop by the device"
  )
  func catchUpMixIsAnUnderrun() throws {
    let device = try OutputDevice.openLoopback(sampleRate: 48_000)
    let bus = try MusicBus(device: device)
    // What `OutputLatency.low` keeps: a period (1024 frames) and two blocks.
    for block in 0..<6 {
      let samples = try #require(bus.nextBlock(frames: MusicBus.blockFrames), "block \(block)")
      samples.update(repeating: 0.25, count: 2 * MusicBus.blockFrames)
      bus.commit(frames: MusicBus.blockFrames)
    }
    bus.keepPlaying()
    bus.collectPlayed()  // seen playing, 1536 frames (32 ms) queued
    #expect(bus.queuedFrames == 1536)
    // At once, by the wall clock: OpenAL mixes 2048 frames, more than the source has.
    var output = [Float](repeating: 0, count: 2 * 2048)
    output.withUnsafeMutableBufferPointer { device.render(into: $0.baseAddress!, frameCount: 2048) }
    #expect(output[2 * 1535] == 0.25 && output[2 * 1536] == 0, "the queue played out, then nothing")
    #expect(bus.sourceStopped)
    #expect(!bus.stoppedEarly, "a queue OpenAL mixed through was taken for a stop by the device")
    bus.collectPlayed()
    #expect(bus.queuedFrames == 0, "what OpenAL played is taken as played")
    // The loop mixes on and restarts the source: reported as the underrun it was.
    _ = try #require(bus.nextBlock(frames: MusicBus.blockFrames))
    bus.commit(frames: MusicBus.blockFrames)
    #expect(bus.keepPlaying())
  }
}
