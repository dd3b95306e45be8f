import Foundation
import LeitmotifFixtures
import Synchronization
import Testing

@testable import Leitmotif
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

#if canImport(Glibc)
  import Glibc
#endif

/// A FIFO (or a device) named like a music file must not hang whoever opens it: opening one for
/// reading blocks until a writer comes. Each case runs under a guard: if it is still running
/// after a few seconds, the guard opens the FIFO's write end (which releases a blocked open) and
/// the case fails instead of hanging the suite.
@Suite("Special files: a FIFO named like music is refused at once, and the queue goes on")
struct SpecialFileTests {
  /// Runs `body` on a thread of its own; false when it did not finish within `seconds` (then the
  /// FIFO is opened for writing and closed, to let the stuck open go).
  static func finishes(within seconds: Double, releasing fifo: String, _ body: @escaping @Sendable () -> Void) -> Bool {
    let done = DispatchSemaphore(value: 0)
    Thread {
      body()
      done.signal()
    }.start()
    if done.wait(timeout: .now() + seconds) == .success { return true }
    let writer = open(fifo, O_WRONLY | O_NONBLOCK)
    if writer >= 0 { close(writer) }
    _ = done.wait(timeout: .now() + 5)
    return false
  }

  static func fifo(in directory: TemporaryDirectory, named name: String) throws -> String {
    let path = directory.file(name)
    try #require(mkfifo(path, 0o644) == 0, "mkfifo: errno \(errno)")
    return path
  }

  @Test("opening a FIFO named .ogg or .mp3 throws a DecodeError naming it, without waiting for a writer")
  func decoderRefusesFIFO() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-fifo")
    for name in ["song.ogg", "song.mp3", "song.flac"] {
      let path = try Self.fifo(in: directory, named: name)
      let outcome = Mutex<DecodeError?>(nil)
      let finished = Self.finishes(within: 3, releasing: path) {
        do { _ = try AudioFile.openDecoder(path: path) } catch { outcome.withLock { $0 = error as? DecodeError } }
      }
      #expect(finished, "opening \(name) hung")
      let error = try #require(outcome.withLock { $0 }, "\(name) opened")
      #expect(error.path == path)
      #expect(error.description.contains("FIFO"), "\(error)")
    }
  }

  @Test("a queue whose first item is a FIFO reports it and plays the next item")
  func queueSkipsFIFO() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-fifo-queue")
    let fifo = try Self.fifo(in: directory, named: "broken.ogg")
    let good = try EngineHarness.vorbisTone(in: directory, name: "good.ogg", seconds: 2)
    let rendered = Mutex<[Float]>([])
    let log = Mutex<QueueLog?>(nil)
    let finished = Self.finishes(within: 10, releasing: fifo) {
      do {
        let engine = try EngineHarness.offlineEngine()
        let queue = QueuePlayer(engine: engine)
        log.withLock { $0 = QueueLog(queue) }
        try queue.setQueue(with: [MediaItem(path: fifo), MediaItem(path: good)])
        queue.play()
        let samples = EngineHarness.render(engine, seconds: 1.5)
        queue.waitForNotifications()
        rendered.withLock { $0 = samples }
        engine.shutdown()
      } catch {
        Issue.record("\(error)")
      }
    }
    #expect(finished, "the queue hung on the FIFO")
    let failures = log.withLock { $0?.failures ?? [] }
    #expect(failures.map(\.0.assetURL.path) == [fifo])
    #expect(failures.first?.1.description.contains("FIFO") ?? false, "\(failures)")
    let peak = rendered.withLock { $0 }.map { abs($0) }.max() ?? 0
    #expect(peak > 0.3, "the good item after the FIFO did not play (peak \(peak))")
  }

  @Test("leitmotif info on a FIFO exits at once with an error that names the file")
  func commandRefusesFIFO() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-fifo-cli")
    let fifo = try Self.fifo(in: directory, named: "track.mp3")
    let run = Mutex<LeitmotifCommand.Run?>(nil)
    let finished = Self.finishes(within: 10, releasing: fifo) {
      run.withLock { $0 = try? LeitmotifCommand.run(["info", fifo]) }
    }
    #expect(finished, "leitmotif info hung on a FIFO")
    let result = try #require(run.withLock { $0 })
    #expect(result.status != 0)
    #expect(result.errors.contains(fifo) && result.errors.contains("FIFO"), "\(result.errors)")
  }
}

/// Numbers from a file's tags that would overflow when combined (issue 13, part 1).
@Suite("Hostile tag numbers: loop tags that overflow are dropped, not trapped on")
struct HostileTagNumberTests {
  @Test("LOOPSTART=Int64.max with LOOPLENGTH=1: the file opens, plays and shows its info, with no loop")
  func loopTagsOverflow() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-hostile-tags")
    let path = directory.file("loop.ogg")
    let format = PCMFormat.stereo48000
    try VorbisEncoder.encode(
      samples: ToneGenerator.sine(frequency: 440, seconds: 1, format: format), format: format,
      tags: [("LOOPSTART", "9223372036854775807"), ("LOOPLENGTH", "1")], to: path)
    let decoder = try AudioFile.openDecoder(path: path)
    #expect(decoder.tags.loopStartFrame == nil && decoder.tags.loopEndFrame == nil)

    let info = try LeitmotifCommand.run(["info", path])
    #expect(info.status == 0, "\(info.errors)")

    let engine = try EngineHarness.offlineEngine()
    defer { engine.shutdown() }
    let player = try Player(engine: engine, item: MediaItem(path: path))
    player.play()
    let rendered = EngineHarness.render(engine, seconds: 0.5)
    #expect((rendered.map { abs($0) }.max() ?? 0) > 0.3)
  }
}
