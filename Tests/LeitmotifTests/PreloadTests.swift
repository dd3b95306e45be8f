import Foundation
import LeitmotifFixtures
import Synchronization
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine

/// Preloaded audio (`AudioEngine.preload`): a file decoded once into memory plays from there,
/// sounds exactly as it does streamed, and keeps no file open while it plays.
@Suite("Preloading: short sounds decoded once into memory")
struct PreloadTests {
  /// The descriptors of this process open on `path` now.
  static func openDescriptors(on path: String) -> Int {
    let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? path
    let folder = "/proc/self/fd"
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
    return entries.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + $0)) == target }
      .count
  }

  /// Plays `path` on a fresh offline engine: 0.3 s, a seek to 1 s, then 0.6 s more, with `preload`
  /// before the player is made; also how many descriptors of the file were open mid-play.
  static func play(_ path: String, preload: Bool) throws -> (samples: [Float], openWhilePlaying: Int) {
    let engine = try EngineHarness.offlineEngine()
    defer { engine.shutdown() }
    if preload { try engine.preload(path) }
    let player = try Player(engine: engine, item: MediaItem(path: path))
    player.play()
    var samples = EngineHarness.render(engine, seconds: 0.3)
    let open = openDescriptors(on: path)
    player.currentPlaybackTime = 1
    samples += EngineHarness.render(engine, seconds: 0.6)
    return (samples, open)
  }

  @Test(
    "A preloaded file sounds as it does streamed, sample for sample (seek and resampling included), with no descriptor of it open",
    arguments: [PCMFormat.stereo48000, PCMFormat.stereo44100, PCMFormat.mono22050])
  func soundsTheSame(format: PCMFormat) throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-preload")
    let path = directory.file("shot.ogg")
    let samples = ToneGenerator.sine(frequency: 660, amplitude: 0.5, seconds: 2, format: format)
    try VorbisEncoder.encode(samples: samples, format: format, to: path)

    let streamed = try Self.expectSameSamples(path)
    #expect(EngineHarness.peak(streamed[...]) > 0.2, "the render holds the sound")
  }

  /// Plays `path` streamed and preloaded and expects the same samples, with a descriptor of the
  /// file open mid-play only when streamed (the comparison can tell the two apart). Returns the
  /// streamed render.
  @discardableResult
  static func expectSameSamples(_ path: String) throws -> [Float] {
    let streamed = try play(path, preload: false)
    let preloaded = try play(path, preload: true)
    let firstDifference = preloaded.samples.indices.first {
      $0 >= streamed.samples.count || preloaded.samples[$0] != streamed.samples[$0]
    }
    #expect(
      preloaded.samples.count == streamed.samples.count && firstDifference == nil,
      "first difference at sample \(firstDifference ?? -1)")
    #expect(streamed.openWhilePlaying == 1)
    #expect(preloaded.openWhilePlaying == 0)
    return streamed.samples
  }

  @Test(
    "MP3 with and without a LAME tag (the length then estimated) preloads to the frames streaming plays",
    // MPEG-1 stereo only: after a seek, libmpg123's mono and MPEG-2 kernels round in the last bit
    // or two by the phase its synthesis filter was left at (see MP3Decoder), which for a streamed
    // voice depends on how far its decode thread had read ahead; from memory it is always the
    // linear decode's. Streamed against itself, those files differ by 1e-7 from run to run.
    arguments: ["lame-44100-stereo.mp3", "notag-44100-stereo.mp3", "lame-48000-stereo.mp3"])
  func mp3SoundsTheSame(file: String) throws {
    let path = Fixture.path(file)
    #expect(EngineHarness.peak(try Self.expectSameSamples(path)[...]) > 0.1)
    // The decoded length is the file's, whatever its header estimated.
    let engine = try EngineHarness.offlineEngine()
    defer { engine.shutdown() }
    let decoder = try AudioFile.openDecoder(path: path)
    let frames = try AudioFile.decodeAll(decoder).count / decoder.format.channelCount
    #expect(try engine.preload(path) == frames * decoder.format.channelCount * 4)
  }

  /// A stream whose header says `claimed` frames and that holds `actual` (a ramp, mono 8 kHz).
  final class MisleadingHeader: AudioDecoder {
    let claimed: Int64
    let actual: Int64
    private(set) var cursorFrames: Int64 = 0
    init(claimed: Int64, actual: Int64) {
      self.claimed = claimed
      self.actual = actual
    }
    var path: String { "/music/misleading.mp3" }
    var containerFormat: ContainerFormat { .mp3 }
    var format: AudioFormat { AudioFormat(sampleRate: 8_000, channelCount: 1) }
    var lengthFrames: Int64 { claimed }
    var tags: AudioTags { AudioTags() }
    var artwork: Artwork? { nil }
    var warnings: [String] { [] }
    func readFrames(into buffer: UnsafeMutablePointer<Float>, frameCapacity: Int) throws(DecodeError) -> Int {
      let frames = Int(min(Int64(frameCapacity), actual - cursorFrames))
      for index in 0..<frames { buffer[index] = Float(cursorFrames + Int64(index)) }
      cursorFrames += Int64(frames)
      return frames
    }
    func seek(toFrame frame: Int64) throws(DecodeError) { cursorFrames = frame }
  }

  @Test(
    "A stream longer than its header said is kept whole; one shorter is refused as cut short, as streaming reports it")
  func headerLengths() throws {
    let longer = try DecodedAudio.decode(
      MisleadingHeader(claimed: 1_000, actual: 30_000), limitBytes: 1 << 20, preloadedBytes: 0, budgetBytes: 1 << 20)
    #expect(longer.lengthFrames == 30_000)
    #expect(longer.sizeBytes == 120_000)
    #expect((0..<30_000).allSatisfy { longer.samples[$0] == Float($0) })
    // Past the limit while growing: over the budget, with what it needed so far.
    #expect {
      try DecodedAudio.decode(
        MisleadingHeader(claimed: 1_000, actual: 30_000), limitBytes: 50_000, preloadedBytes: 7, budgetBytes: 50_007)
    } throws: { error in
      guard let error = error as? PreloadError, case .overBudget(let needed, 7, 50_007) = error.reason else {
        return false
      }
      return needed > 50_000
    }
    #expect {
      try DecodedAudio.decode(
        MisleadingHeader(claimed: 40_000, actual: 30_000), limitBytes: 1 << 20, preloadedBytes: 0, budgetBytes: 1 << 20)
    } throws: { error in
      guard let error = error as? PreloadError, case .decode(let cause) = error.reason,
        case .truncated(let why) = cause.reason
      else { return false }
      return why.contains("frame 30000, 10000 frames before its end")
    }
  }

  @Test("A FLAC file cut in half is refused with the decoder's error; streamed, it plays what it has")
  func cutFile() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-preload")
    let path = directory.file("cut.flac")
    let format = PCMFormat.stereo44100
    try FLACEncoder.encode(
      samples: ToneGenerator.sine(frequency: 300, amplitude: 0.5, seconds: 2, format: format), format: format, to: path)
    let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
    try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: path))
    let engine = try EngineHarness.offlineEngine()
    defer { engine.shutdown() }
    #expect {
      try engine.preload(path)
    } throws: { error in
      guard let error = error as? PreloadError, case .decode(let cause) = error.reason else { return false }
      return cause.path == path
    }
    #expect(!engine.isPreloaded(path))
    try Self.expectStillPlays(path, on: engine)
  }

  @Test("Holds, the bytes taken and the budget; a file over the budget or damaged is a typed error and still plays")
  func holdsAndBudget() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-preload")
    let stereo = try EngineHarness.vorbisTone(in: directory, name: "stereo.ogg", seconds: 1)
    let monoFormat = PCMFormat(sampleRate: 44_100, channelCount: 1)
    let mono = directory.file("mono.ogg")
    try VorbisEncoder.encode(
      samples: ToneGenerator.sine(frequency: 440, amplitude: 0.5, seconds: 1, format: monoFormat), format: monoFormat,
      to: mono)
    let engine = try EngineHarness.offlineEngine()
    defer { engine.shutdown() }

    // Exactly the decoded frames: 48,000 stereo frames and 44,100 mono ones, 4 bytes a sample.
    #expect(try engine.preload(stereo) == 48_000 * 2 * 4)
    #expect(try engine.preload(mono) == 44_100 * 4)
    #expect(engine.preloadedBytes == 48_000 * 2 * 4 + 44_100 * 4)
    // A second preload holds it again and takes nothing more; each unload lets go of one hold.
    try engine.preload(stereo)
    #expect(engine.preloadedBytes == 48_000 * 2 * 4 + 44_100 * 4)
    #expect(engine.unload(stereo))
    #expect(engine.isPreloaded(stereo))
    #expect(engine.unload(stereo))
    #expect(!engine.isPreloaded(stereo))
    #expect(!engine.unload(stereo), "not preloaded any more")
    #expect(engine.preloadedBytes == 44_100 * 4)
    // The same file by another spelling of its path is the same entry.
    #expect(engine.unload(directory.path + "/./mono.ogg"))
    #expect(engine.preloadedBytes == 0)

    // Over the budget: the error says what it needs and what is left.
    engine.preloadBudgetBytes = 100_000
    #expect {
      try engine.preload(stereo)
    } throws: { error in
      guard let error = error as? PreloadError,
        case .overBudget(let needed, let taken, let budget) = error.reason
      else { return false }
      return error.path == stereo && needed == 384_000 && taken == 0 && budget == 100_000
        && error.description.contains("preloadBudgetBytes")
    }
    #expect(engine.preloadedBytes == 0)

    // Damaged: the decoder's error, typed.
    let broken = directory.file("broken.ogg")
    try Data("OggS but not really a stream".utf8).write(to: URL(fileURLWithPath: broken))
    #expect {
      try engine.preload(broken)
    } throws: { error in
      guard let error = error as? PreloadError, case .decode(let cause) = error.reason else { return false }
      return cause.path == broken && error.description.hasPrefix("cannot preload")
    }

    // The file that did not fit still plays, streamed.
    try Self.expectStillPlays(stereo, on: engine)
  }

  /// A file that could not be preloaded plays, streamed: 0.3 s of it are heard.
  static func expectStillPlays(_ path: String, on engine: AudioEngine) throws {
    let player = try Player(engine: engine, item: MediaItem(path: path))
    player.play()
    #expect(EngineHarness.peak(EngineHarness.render(engine, seconds: 0.3)[...]) > 0.2)
  }

  /// The messages an engine's diagnostics handler was given.
  final class Notices: Sendable {
    let messages = Mutex<[String]>([])
    func withLock<Result>(_ body: ([String]) -> Result) -> Result { messages.withLock { body($0) } }
  }

  /// An offline engine whose diagnostics' messages collect in `notices`.
  static func engine(collecting notices: Notices) throws -> AudioEngine {
    try AudioEngine(
      output: .offline(sampleRate: 48_000, renderFrames: EngineHarness.renderFrames),
      diagnostics: { diagnostic in notices.messages.withLock { $0.append(diagnostic.message) } })
  }

  @Test("A file changed since it was preloaded streams as it is now, said once; preloading it again decodes it afresh")
  func changedFile() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-preload")
    let path = try EngineHarness.vorbisTone(in: directory, name: "shot.ogg", seconds: 1.5, frequency: 440)
    let notices = Notices()
    let engine = try Self.engine(collecting: notices)
    defer { engine.shutdown() }
    try engine.preload(path)
    let before = engine.preloadedBytes

    // The designer replaces the sound (another tone and length) while the game runs.
    try FileManager.default.removeItem(atPath: path)
    _ = try EngineHarness.vorbisTone(in: directory, name: "shot.ogg", seconds: 1, frequency: 880)
    let replacement = try Self.play(path, preload: false).samples

    func playOnce() -> [Float] {
      let player = try? Player(engine: engine, item: MediaItem(path: path))
      player?.play()
      let played = EngineHarness.render(engine, seconds: 0.3)
      player?.stop()
      _ = EngineHarness.render(engine, seconds: 0.1)
      return played
    }
    #expect(Array(playOnce().prefix(1_000)) == Array(replacement.prefix(1_000)))
    #expect(Array(playOnce().prefix(1_000)) == Array(replacement.prefix(1_000)))
    let said = notices.withLock { $0.filter { $0.contains("changed since it was preloaded") } }
    #expect(said.count == 1, "said once: \(said)")
    #expect(engine.preloadedBytes == before, "the old copy stays held until it is preloaded again")

    // Preloaded again: the new file is in memory (1 s now), and plays from there.
    try engine.preload(path)
    #expect(engine.preloadedBytes == 48_000 * 2 * 4)
    #expect(engine.unload(path))
    #expect(engine.isPreloaded(path), "two holds: the first preload's and the second's")
  }

  @Test("A file mounted from a pak preloads, holds nothing of the mount open, and plays on from memory once unmounted")
  func mountedFile() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-preload")
    let disk = try EngineHarness.vorbisTone(in: directory, name: "shot.ogg", seconds: 1.5, frequency: 550)
    let mounted = MountTests.uniquePath("stingers/shot.ogg")
    try MountedFiles.mount(contents: try MountTests.bytes(disk), at: mounted)
    defer { try? MountedFiles.unmount(mounted) }
    let fromDisk = try Self.play(disk, preload: false).samples
    let fromMount = try Self.play(mounted, preload: true).samples
    #expect(fromMount == fromDisk)

    let notices = Notices()
    let engine = try Self.engine(collecting: notices)
    defer { engine.shutdown() }
    try engine.preload(mounted)
    // Nothing of the mount is open: the game may let the pak go, and the sound stays.
    try MountedFiles.unmount(mounted)
    let player = try Player(engine: engine, item: MediaItem(path: mounted))
    player.play()
    let after = EngineHarness.render(engine, seconds: 0.3)
    #expect(Array(after.prefix(10_000)) == Array(fromDisk.prefix(10_000)))
    #expect(notices.withLock { $0.isEmpty }, "\(notices.withLock { $0 })")
    // Preloaded again while the file is gone (a director's reload does that): the copy in memory
    // is held once more, not refused as missing, and one unload leaves it in memory.
    let bytes = engine.preloadedBytes
    #expect(try engine.preload(mounted) == bytes)
    #expect(engine.unload(mounted) && engine.isPreloaded(mounted))
    player.stop()
    _ = EngineHarness.render(engine, seconds: 0.1)
    // Mounted again with other bytes (a new version of the pak): that file plays, streamed.
    let other = try EngineHarness.vorbisTone(in: directory, name: "other.ogg", seconds: 1, frequency: 880)
    try MountedFiles.mount(contents: try MountTests.bytes(other), at: mounted)
    let second = try Player(engine: engine, item: MediaItem(path: mounted))
    second.play()
    let replaced = EngineHarness.render(engine, seconds: 0.3)
    let expected = try Self.play(other, preload: false).samples
    #expect(Array(replaced.prefix(10_000)) == Array(expected.prefix(10_000)))
    #expect(notices.withLock { $0.contains { $0.contains("changed since it was preloaded") } })
  }

  @Test("A director preloads its cue file's short stingers, follows a reload, and lets go when it shuts down")
  func directorStingers() throws {
    let fixture = try DirectorFixture()
    let long = fixture.assets + "/long-stinger.ogg"
    try DirectorFixture.tone(long, pitch: 1_000, seconds: Director.preloadedStingerSeconds + 1, tags: [])
    func cues(stingers: [String]) -> String {
      """
      { version: 1, \(DirectorFixture.sources) start: "explore",
        states: { explore: { music: "calm" } },
        rules: [ \(stingers.enumerated().map { "{ on: \"cue\($0.offset)\", do: { stinger: \"\($0.element)\" } }" }.joined(separator: ", ")) ] }
      """
    }
    let hit = fixture.assets + "/hit.ogg"
    let engine = try EngineHarness.offlineEngine()
    defer { engine.shutdown() }
    try cues(stingers: ["hit", "long-stinger.ogg"]).write(toFile: fixture.cuePath, atomically: true, encoding: .utf8)
    let director = try Director(engine: engine, cueFile: fixture.cuePath, clocking: .pumped)
    #expect(engine.isPreloaded(hit))
    #expect(!engine.isPreloaded(long), "longer than \(Director.preloadedStingerSeconds) s: it streams")

    // Fired, it plays from memory: the stinger's tone is heard.
    var left: [Float] = []
    for call in 0..<24 {
      director.advance(toAudioTime: Double(call * EngineHarness.renderFrames) / Double(engine.sampleRate))
      if call == 0 { director.post("cue0") }
      let mixed = EngineHarness.render(engine, frames: EngineHarness.renderFrames)
      left += stride(from: 0, to: mixed.count, by: 2).map { mixed[$0] }
    }
    #expect(Listen.level(of: DirectorFixture.stingerPitch, in: left[...]) > 0.02)

    // A reload without the stinger lets go of it; with it again, it is preloaded again.
    try cues(stingers: []).write(toFile: fixture.cuePath, atomically: true, encoding: .utf8)
    #expect(director.reload().allSatisfy { $0.severity != .error })
    #expect(!engine.isPreloaded(hit))
    try cues(stingers: ["hit.ogg"]).write(toFile: fixture.cuePath, atomically: true, encoding: .utf8)
    #expect(director.reload().allSatisfy { $0.severity != .error })
    #expect(engine.isPreloaded(hit))
    director.shutdown()
    #expect(!engine.isPreloaded(hit))
    #expect(engine.preloadedBytes == 0)
  }

  @Test("A director watching its cue file decodes a stinger afresh when a new take is saved over it")
  func directorRefreshesChangedStinger() throws {
    let fixture = try DirectorFixture()
    try """
    { version: 1, \(DirectorFixture.sources) start: "explore",
      states: { explore: { music: "calm" } },
      rules: [ { on: "hit", do: { stinger: "hit" } } ] }
    """.write(toFile: fixture.cuePath, atomically: true, encoding: .utf8)
    let log = DiagnosticLog()
    let engine = try AudioEngine(output: .headless, diagnostics: log.handler)
    defer { engine.shutdown() }
    let director = try Director(engine: engine, cueFile: fixture.cuePath)
    defer { director.shutdown() }
    // hit.ogg: 0.5 s of 48 kHz stereo.
    #expect(engine.preloadedBytes == 24_000 * 2 * 4)
    // The new take, 0.75 s, saved as editors do: written beside, then renamed over the old one.
    let take = fixture.directory.file("take.ogg")
    try DirectorFixture.tone(take, pitch: 1_000, seconds: 0.75, tags: [])
    #expect(rename(take, fixture.assets + "/hit.ogg") == 0)
    let refreshed = EngineHarness.wait(seconds: 5) { engine.preloadedBytes == 36_000 * 2 * 4 }
    #expect(refreshed, "in memory: \(engine.preloadedBytes) bytes")
    // And it says so, naming the file.
    let said = EngineHarness.wait(seconds: 5) {
      log.all.contains { $0.severity == .notice && $0.message.contains("/hit.ogg\": the file changed") }
    }
    #expect(said, "\(log.all.map(\.description))")
    director.shutdown()
    #expect(engine.preloadedBytes == 0, "one hold, let go at shutdown")
  }
}
