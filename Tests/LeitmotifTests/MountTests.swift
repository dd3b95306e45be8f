import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifDecoding

/// Music from memory and from the game's own archive (`MountedFiles`): what a mount serves is
/// what the same bytes on disk give, sample for sample, through every path that opens a file.
@Suite("Mounted files: music from memory and from a pak")
struct MountTests {
  /// A path no other test mounts (the table is the process's, and tests run side by side).
  static func uniquePath(_ what: String) -> String { "/leitmotif-mount-\(UUID().uuidString)/\(what)" }

  /// A pak as games make them: one file, an index of names, offsets and lengths, then the bytes.
  /// Read back through positional reads of one descriptor (`pread`), as a game's reader would.
  final class Pak: @unchecked Sendable {
    let path: String
    private(set) var index: [String: (offset: Int64, length: Int64)] = [:]
    private(set) var opened = 0
    private(set) var failing: Set<String> = []
    private let lock = NSLock()

    init(path: String, files: [(name: String, bytes: [UInt8])]) throws {
      self.path = path
      var blob: [UInt8] = []
      for file in files {
        index[file.name] = (Int64(blob.count), Int64(file.bytes.count))
        blob += file.bytes
      }
      try Data(blob).write(to: URL(fileURLWithPath: path))
    }

    /// Makes every read of `name` fail from now on (a disk that dies under the game).
    func fail(_ name: String) { lock.withLock { _ = failing.insert(name) } }

    var openCount: Int { lock.withLock { opened } }

    func open(_ name: String) -> (any MountedFileReader)? {
      guard let entry = index[name] else { return nil }
      let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
      guard descriptor >= 0 else { return nil }
      lock.withLock { opened += 1 }
      return Reader(pak: self, name: name, descriptor: descriptor, offset: entry.offset, length: entry.length)
    }

    fileprivate func closed() { lock.withLock { opened -= 1 } }
    fileprivate func isFailing(_ name: String) -> Bool { lock.withLock { failing.contains(name) } }

    final class Reader: MountedFileReader {
      let pak: Pak
      let name: String
      let descriptor: Int32
      let offset: Int64
      let sizeBytes: Int64

      init(pak: Pak, name: String, descriptor: Int32, offset: Int64, length: Int64) {
        self.pak = pak
        self.name = name
        self.descriptor = descriptor
        self.offset = offset
        sizeBytes = length
      }

      deinit {
        close(descriptor)
        pak.closed()
      }

      func read(into buffer: UnsafeMutableRawPointer, count: Int, at position: Int64) -> Int {
        if pak.isFailing(name) { return -1 }
        let wanted = Int(max(0, min(Int64(count), sizeBytes - position)))
        guard wanted > 0 else { return 0 }
        return pread(descriptor, buffer, wanted, off_t(offset + position))
      }
    }
  }

  static func bytes(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }

  @Test("A file mounted from memory decodes exactly as the same file on disk, in every format")
  func memoryFileDecodesAsOnDisk() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-mount")
    let samples = ToneGenerator.sine(frequency: 440, amplitude: 0.3, seconds: 2, format: .stereo48000)
    let vorbis = directory.file("tone.ogg"), flac = directory.file("tone.flac"), opus = directory.file("tone.opus")
    try VorbisEncoder.encode(samples: samples, format: .stereo48000, tags: [("TITLE", "Tone")], to: vorbis)
    try FLACEncoder.encode(samples: samples, format: .stereo48000, tags: [("TITLE", "Tone")], to: flac)
    try OpusEncoder.encode(samples: samples, channels: 2, tags: [("TITLE", "Tone")], to: opus)
    let mp3 = CGame.repository + "/Tests/LeitmotifTests/Fixtures/lame-44100-stereo.mp3"
    for file in [vorbis, flac, opus, mp3] {
      let mounted = Self.uniquePath("music/" + URL(fileURLWithPath: file).lastPathComponent)
      try MountedFiles.mount(contents: try Self.bytes(file), at: mounted)
      defer { try? MountedFiles.unmount(mounted) }
      #expect(MountedFiles.kind(of: mounted) == .file)
      #expect(MountedFiles.kind(of: URL(fileURLWithPath: mounted).deletingLastPathComponent().path) == .folder)
      let fromDisk = try AudioFile.openDecoder(path: file)
      let fromMemory = try AudioFile.openDecoder(path: mounted)
      #expect(fromMemory.containerFormat == fromDisk.containerFormat)
      #expect(fromMemory.lengthFrames == fromDisk.lengthFrames, "\(file)")
      #expect(fromMemory.tags == fromDisk.tags, "\(file)")
      #expect(try AudioFile.decodeAll(fromMemory) == AudioFile.decodeAll(fromDisk), "\(file)")
      // Seeks go through the mount too: the same frames after a seek into the middle.
      try fromDisk.seek(toFrame: fromDisk.lengthFrames / 2)
      try fromMemory.seek(toFrame: fromMemory.lengthFrames / 2)
      #expect(try AudioFile.decodeAll(fromMemory) == AudioFile.decodeAll(fromDisk), "\(file) after a seek")
      // The analysis cache keys the bytes, wherever they live.
      #expect(AnalysisCache.key(forFileAt: mounted) == AnalysisCache.key(forFileAt: file))
    }
  }

  @Test("A cue file and its bundled music from a pak play the same level, to the sample, as from disk")
  func pakLevelPlaysAsFromDisk() throws {
    let game = try DirectorFixture()
    let cueText = """
      {
        start: "explore",
        \(DirectorFixture.sources.replacingOccurrences(of: "assets: \"assets\"", with: "assets: \"music\""))
        states: {
          explore: { music: "calm" },
          combat: { music: "tense", transition: { seconds: 0.5, at: "beat" } },
        },
        rules: [
          { name: "fight", on: "combat.start", do: { state: "combat" } },
          { name: "hit", on: "player.hit", do: { stinger: "hit" } },
        ],
      }
      """
    // From disk: the fixture's own folder, the cue file beside it.
    let onDisk = try game.sheet(cueText.replacingOccurrences(of: "assets: \"music\"", with: "assets: \"assets\""))
    let script: [CueScript.Step] = [.cue(1.2, "player.hit"), .cue(2.1, "combat.start")]
    let expected = try game.simulate(onDisk, script, seconds: 4)

    // From the pak: every file of the assets folder and the cue file, in one archive.
    let names = try FileManager.default.contentsOfDirectory(atPath: game.assets).sorted()
    var files = try names.map { ("music/" + $0, try Self.bytes(game.assets + "/" + $0)) }
    files.append(("cues.json5", Array(cueText.utf8)))
    let pak = try Pak(path: game.directory.file("game.pak"), files: files)
    let root = Self.uniquePath("pak")
    try MountedFiles.mount(folder: root, files: files.map(\.0)) { pak.open($0) }
    defer { try? MountedFiles.unmount(root) }

    let mountedSheet = try CueSheet.load(path: root + "/cues.json5")
    #expect(mountedSheet.catalog?.items.count == 5, "\(mountedSheet.catalog?.failures ?? [])")
    // A selection by tag (`tense` is `{ mood: "tense" }`) finds its file in the mount's listing.
    #expect(mountedSheet.catalog?.relativePaths.contains("combat.ogg") == true)
    let played = try game.simulate(mountedSheet, script, seconds: 4)
    #expect(played.timeline.states.map(\.state) == ["explore", "combat"], "\(played.timeline.summary)")
    #expect(played.left.count == expected.left.count)
    let differing = zip(played.left, expected.left).filter { $0 != $1 }.count
    #expect(differing == 0, "\(differing) samples differ from the level played from disk")
    #expect(Listen.rms(played.left[...]) > 0.05, "the level is not silent")
    #expect(pak.openCount == 0, "every file the level opened was closed again")
  }

  @Test("Mount mistakes and a failing archive are typed errors naming the path; nothing crashes")
  func badMounts() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-mount")
    let tone = directory.file("tone.ogg")
    // Noise, so the file is large (a pure tone packs into a few reads, all made at the open).
    var random = SplitMix64(seed: 7)
    let noise = (0..<(2 * 10 * 48_000)).map { _ in Float.random(in: -0.3...0.3, using: &random) }
    try VorbisEncoder.encode(samples: noise, format: .stereo48000, tags: [], to: tone)
    let root = Self.uniquePath("pak")
    let pak = try Pak(
      path: directory.file("game.pak"),
      files: [("a.ogg", try Self.bytes(tone)), ("b.ogg", try Self.bytes(tone)), ("notes.txt", Array("hello".utf8))])
    try MountedFiles.mount(folder: root, files: ["a.ogg", "b.ogg", "notes.txt", "missing.ogg"]) { pak.open($0) }
    defer { try? MountedFiles.unmount(root) }

    // Over, inside or around a mount: refused, naming the mount already there.
    for overlapping in [
      root, root + "/a.ogg", root + "/deeper/x.ogg", URL(fileURLWithPath: root).deletingLastPathComponent().path,
    ] {
      #expect(throws: MountedFiles.MountError.self, "\(overlapping)") {
        try MountedFiles.mount(contents: [1, 2, 3], at: overlapping)
      }
    }
    // Names that are not clean relative paths.
    for name in ["/abs.ogg", "../up.ogg", "", "a.ogg|a.ogg"] {
      let names = name.contains("|") ? name.split(separator: "|").map(String.init) : [name]
      let error = #expect(throws: MountedFiles.MountError.self) {
        try MountedFiles.mount(folder: Self.uniquePath("other"), files: names) { _ in nil }
      }
      #expect(error?.description.contains("file name") == true, "\(String(describing: error))")
    }
    #expect(throws: MountedFiles.MountError(path: "", reason: .emptyPath)) {
      try MountedFiles.mount(contents: [1], at: "")
    }
    #expect(throws: MountedFiles.MountError(path: "/nowhere-mounted", reason: .notMounted)) {
      try MountedFiles.unmount("/nowhere-mounted")
    }

    // A listed name the archive cannot open is a missing file; a text file is not music; the
    // folder is a folder; a name the mount does not list is not there (and not looked for on disk).
    func reason(_ path: String) -> DecodeError.Reason? {
      do {
        _ = try AudioFile.openDecoder(path: path)
        return nil
      } catch { return error.reason }
    }
    #expect(reason(root + "/missing.ogg") == .fileNotFound)
    #expect(reason(root + "/notes.txt") == .unrecognizedFormat(detected: "text"))
    #expect(reason(root) == .isDirectory)
    #expect(
      MountedFiles.files(under: root) == [root + "/a.ogg", root + "/b.ogg", root + "/missing.ogg", root + "/notes.txt"])

    // While a file is open the mount stays: unmount says how many are open.
    let decoder = try AudioFile.openDecoder(path: root + "/a.ogg")
    let busy = #expect(throws: MountedFiles.MountError.self) { try MountedFiles.unmount(root) }
    #expect(busy?.reason == .inUse(openFiles: 1), "\(String(describing: busy))")
    #expect(busy?.description.contains("1 of its files is open") == true)
    // The archive fails under the decoder: a read error naming the file, not a crash or a hang.
    pak.fail("a.ogg")
    let failure = #expect(throws: DecodeError.self) { _ = try AudioFile.decodeAll(decoder) }
    #expect(failure?.path == root + "/a.ogg", "\(String(describing: failure))")
    _ = decoder
  }

  @Test("After the engine shuts down no file of a mount is open, while a queue player of it still lives")
  func shutdownClosesMountedFiles() throws {
    let directory = try TemporaryDirectory()
    var files: [(String, [UInt8])] = []
    for index in 0..<3 {
      let path = try EngineHarness.vorbisTone(
        in: directory, name: "\(index).ogg", seconds: 1, frequency: 300 + 100 * Double(index))
      files.append(("\(index).ogg", try Self.bytes(path)))
    }
    let pak = try Pak(path: directory.file("music.pak"), files: files)
    let root = Self.uniquePath("music")
    try MountedFiles.mount(folder: root, files: files.map(\.0)) { pak.open($0) }
    defer { try? MountedFiles.unmount(root) }

    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    // Gapless: the next items wait, opened, in the playing voice's stream.
    player.transition = .gapless
    try player.setQueue(with: files.map { MediaItem(path: root + "/" + $0.0) })
    player.play()
    _ = EngineHarness.render(engine, seconds: 0.5)
    #expect(pak.openCount >= 2, "the next item is open before it plays: \(pak.openCount)")
    engine.shutdown()
    // The game still holds its player (and through it the engine): the files must be closed anyway.
    withExtendedLifetime(player) {
      #expect(pak.openCount == 0, "\(pak.openCount) files of the pak still open after shutdown")
      #expect(throws: Never.self) { try MountedFiles.unmount(root) }
    }
  }

  @Test("A cue file whose bundled music is missing from the pak names the file and the mount")
  func missingBundledFile() throws {
    let root = Self.uniquePath("pak")
    let cueText = """
      { start: "explore", assets: "music", sources: { calm: { bundled: "explore.ogg" } },
        states: { explore: { music: "calm" } } }
      """
    try MountedFiles.mount(folder: root, files: ["cues.json5", "music/other.ogg"]) { name in
      name == "cues.json5" ? MemoryBytes(Array(cueText.utf8)) : nil
    }
    defer { try? MountedFiles.unmount(root) }
    let error = #expect(throws: CueFileError.self) { _ = try CueSheet.load(path: root + "/cues.json5") }
    let text = error?.description ?? ""
    #expect(text.contains("explore.ogg") && text.contains(root + "/music"), "\(text)")
  }
}
