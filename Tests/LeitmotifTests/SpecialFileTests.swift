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

/// Numbers from a Vorbis file's headers that would overflow or explode (issue 13, part 1).
@Suite("Hostile header numbers: rates and lengths outside what a file can be are refused or not believed")
struct HostileHeaderTests {
  /// Byte offsets of each logical stream's Vorbis identification packet (the first packet of a
  /// page that begins a stream) and of every page that ends one.
  private static func pages(_ bytes: [UInt8]) -> (idPackets: [Int], lastPages: [Int]) {
    var idPackets: [Int] = []
    var lastPages: [Int] = []
    var offset = 0
    while offset + 27 <= bytes.count, bytes[offset..<(offset + 4)].elementsEqual("OggS".utf8) {
      let segments = Int(bytes[offset + 26])
      let body = offset + 27 + segments
      if bytes[offset + 5] & 0x02 != 0 { idPackets.append(body) }
      if bytes[offset + 5] & 0x04 != 0 { lastPages.append(offset) }
      offset = body + bytes[(offset + 27)..<body].reduce(0) { $0 + Int($1) }
    }
    return (idPackets, lastPages)
  }

  private static func setRate(_ rate: UInt32, ofLink link: Int, in bytes: inout [UInt8]) {
    let packet = pages(bytes).idPackets[link]
    precondition(bytes[packet] == 1 && bytes[(packet + 1)..<(packet + 7)].elementsEqual("vorbis".utf8))
    for index in 0..<4 { bytes[packet + 12 + index] = UInt8(truncatingIfNeeded: rate >> (8 * UInt32(index))) }
  }

  private static func setLastGranule(_ granule: Int64, ofLink link: Int, in bytes: inout [UInt8]) {
    let page = pages(bytes).lastPages[link]
    for index in 0..<8 { bytes[page + 6 + index] = UInt8(truncatingIfNeeded: granule >> (8 * Int64(index))) }
  }

  private static func chain(_ directory: TemporaryDirectory, _ name: String) throws -> [UInt8] {
    let path = directory.file(name)
    let first = PCMFormat.stereo44100
    let second = PCMFormat(sampleRate: 8_000, channelCount: 2)
    try VorbisEncoder.encodeChain(
      [
        .init(samples: ToneGenerator.sine(frequency: 440, seconds: 1, format: first), format: first),
        .init(samples: ToneGenerator.sine(frequency: 440, seconds: 1, format: second), format: second),
      ], to: path)
    return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
  }

  @Test(
    "A sample rate below 1 kHz or above 768 kHz is a DecodeError naming the file, from the library and leitmotif info",
    arguments: [UInt32(255), 999, 768_001, 2_147_483_647, 2_147_483_648, UInt32.max])
  func rateOutOfRange(rate: UInt32) throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-hostile-rate")
    let path = directory.file("rate.ogg")
    try VorbisEncoder.encode(
      samples: ToneGenerator.sine(frequency: 440, seconds: 0.5, format: .stereo44100), format: .stereo44100, to: path)
    var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    Self.setRate(rate, ofLink: 0, in: &bytes)
    OggPages.fixChecksums(&bytes)
    try Data(bytes).write(to: URL(fileURLWithPath: path))

    #expect {
      _ = try AudioFile.openDecoder(path: path)
    } throws: { error in
      guard let error = error as? DecodeError, case .unsupported(let why) = error.reason else { return false }
      return error.path == path && why.contains("\(rate) Hz") && why.contains("1000 to 768000 Hz")
    }
    let info = try LeitmotifCommand.run(["info", path])
    #expect(info.status != 0)
    #expect(info.errors.contains(path) && info.errors.contains("\(rate) Hz"), "\(info.errors)")
  }

  @Test(
    "A later link of a chain at 1, 2 or 100 Hz is refused, whole or cut off, without upsampling into memory",
    .hangGuard, arguments: [UInt32(1), 2, 100])
  func slowLaterLink(rate: UInt32) throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-hostile-link")
    var bytes = try Self.chain(directory, "source.ogg")
    Self.setRate(rate, ofLink: 1, in: &bytes)
    OggPages.fixChecksums(&bytes)

    // Whole: the seekable open reads every link's header and refuses the file.
    let whole = directory.file("whole.ogg")
    try Data(bytes).write(to: URL(fileURLWithPath: whole))
    #expect {
      _ = try AudioFile.openDecoder(path: whole)
    } throws: { error in
      guard let error = error as? DecodeError, case .unsupported(let why) = error.reason else { return false }
      return error.path == whole && why.contains("link 2 of 2") && why.contains("\(rate) Hz")
    }

    // Cut off inside the second link: the file is read linearly, and the first link's second is
    // all there is. Before the fix, counting its length interpolated the 1 Hz link up to 44.1 kHz
    // (44,100 output frames for each of its frames) and grew by gigabytes.
    let cut = directory.file("cut.ogg")
    try Data(bytes[0..<(bytes.count - bytes.count / 10)]).write(to: URL(fileURLWithPath: cut))
    let decoder: any AudioDecoder
    do {
      decoder = try AudioFile.openDecoder(path: cut)
    } catch {
      #expect(error.path == cut)
      return
    }
    #expect(decoder.lengthFrames <= 44_100 + 4_096, "length \(decoder.lengthFrames)")
    let (frames, failure) = EngineHarness.readUntilFailure(decoder, limit: 10 * 44_100)
    #expect(frames <= 44_100 + 4_096, "\(frames) frames decoded")
    let error = try #require(failure, "the refused link is reported")
    #expect(error.path == cut && error.description.contains("\(rate) Hz"), "\(error)")
  }

  @Test(
    "Last granule positions near 2^63 are not believed: the file plays what it holds, info and render work",
    .hangGuard)
  func granulesNearInt64Max() throws {
    // libvorbisfile 1.3.7 already bounds these (checked with a C program: ov_pcm_total stays
    // sane), so this passes on the old decoder too: it guards the behaviour, not the decoder's
    // own overflow checks, which stand behind libvorbisfile in case another version trusts them.
    let directory = try TemporaryDirectory(prefix: "leitmotif-hostile-granule")
    var chained = try Self.chain(directory, "source.ogg")
    Self.setLastGranule(Int64.max - 10, ofLink: 0, in: &chained)
    Self.setLastGranule(Int64.max - 5, ofLink: 1, in: &chained)
    OggPages.fixChecksums(&chained)
    let chainPath = directory.file("chain.ogg")
    try Data(chained).write(to: URL(fileURLWithPath: chainPath))

    let single = directory.file("single-source.ogg")
    try VorbisEncoder.encode(
      samples: ToneGenerator.sine(frequency: 440, seconds: 1, format: .stereo44100), format: .stereo44100, to: single)
    var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: single)))
    Self.setLastGranule(Int64.max, ofLink: 0, in: &bytes)
    OggPages.fixChecksums(&bytes)
    let singlePath = directory.file("single.ogg")
    try Data(bytes).write(to: URL(fileURLWithPath: singlePath))

    for (path, realFrames) in [(chainPath, 44_100 + 8_000 * 44_100 / 8_000), (singlePath, 44_100)] {
      do {
        let decoder = try AudioFile.openDecoder(path: path)
        #expect(decoder.lengthFrames <= Int64(realFrames + 4_096), "\(path): length \(decoder.lengthFrames)")
        let decoded = (try? AudioFile.decodeAll(decoder)) ?? []
        #expect(decoded.count / 2 <= realFrames + 4_096)
      } catch {
        #expect(error.path == path)
      }
      let info = try LeitmotifCommand.run(["info", path])
      #expect(info.status == 0 || info.errors.contains(path), "\(info.errors)")
      let out = directory.file("out.wav")
      let render = try LeitmotifCommand.run(["render", "--out", out, path])
      // A trap would end the process by a signal (status 128 + n from the runner, or a crash text).
      #expect(render.status == 0 || render.status == 1, "status \(render.status): \(render.errors)")
      #expect(!render.errors.contains("Fatal error"), "\(render.errors)")
    }
  }
}
