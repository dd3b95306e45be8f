import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifDecoding
@testable import LeitmotifLibrary

#if canImport(Glibc)
  import Glibc
#endif

/// Paths are bytes on Linux (issue 14, part 5): a name that is not UTF-8 is indexed, played and
/// shown, its bytes kept exact.
@Suite("File names that are not UTF-8")
struct FileNameTests {
  /// Latin-1 "Déjà" and "Café": what an old rip on a Latin-1 system names its folders and files.
  static let dejaLatin1: [UInt8] = [0x44, 0xE9, 0x6A, 0xE0]
  static let cafeLatin1: [UInt8] = [0x43, 0x61, 0x66, 0xE9]

  /// Renames `source` to the path `bytes` (any bytes); the test fails if the file system refuses.
  static func rename(_ source: String, to bytes: [UInt8]) throws {
    let done = FileSystemPath.withCString(FileSystemPath.string(decoding: bytes)) { Glibc.rename(source, $0) }
    try #require(done == 0, "rename to \(bytes): \(String(cString: strerror(errno)))")
  }

  static func makeFolder(_ bytes: [UInt8]) throws {
    let done = FileSystemPath.withCString(FileSystemPath.string(decoding: bytes)) { mkdir($0, 0o755) }
    try #require(done == 0, "mkdir \(bytes): \(String(cString: strerror(errno)))")
  }

  @Test("Any bytes come back exact; valid UTF-8 is unchanged; odd bytes show as U+FFFD, one each")
  func theMappingIsExactBothWays() throws {
    var random = SplitMix64(seed: 0xF11E)
    // Pieces that make hard names: ASCII, Latin-1 bytes, valid multi-byte UTF-8, truncated and
    // overlong sequences, surrogates encoded as UTF-8, and a valid scalar of the escape range.
    let pieces: [[UInt8]] = [
      Array("a".utf8), Array("/".utf8), Array(".mp3".utf8), [0xE9], [0xFF], [0xC3, 0xA9], [0xE2, 0x82, 0xAC],
      [0xF0, 0x9F, 0x8E, 0xB5], [0xE2, 0x82], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0x80], [0xF4, 0x8F, 0xB3, 0xA9],
      [0xF4, 0x90, 0x80, 0x80],
    ]
    for _ in 0..<3000 {
      var bytes: [UInt8] = []
      for _ in 0..<Int.random(in: 1...12, using: &random) { bytes += pieces.randomElement(using: &random)! }
      let path = FileSystemPath.string(decoding: bytes)
      #expect(FileSystemPath.bytes(of: path) == bytes, "\(bytes)")
      #expect(
        FileSystemPath.withCString(path) { Array(UnsafeBufferPointer(start: $0, count: strlen($0))) }
          .map { UInt8(bitPattern: $0) } == bytes)
      #expect(FileSystemPath.path(fileURL: FileSystemPath.fileURLString("/" + path)) == "/" + path, "\(bytes)")
      let shown = FileSystemPath.displayed(path)
      #expect(!shown.unicodeScalars.contains { (0x10FC80...0x10FCFF).contains($0.value) })
      if let valid = String(validating: bytes, as: UTF8.self),
        !valid.unicodeScalars.contains(where: {
          (0x10FC80...0x10FCFF).contains($0.value)
        })
      {
        #expect(path == valid)
        #expect(!FileSystemPath.isEscaped(path))
        #expect(shown == valid)
      } else {
        #expect(FileSystemPath.isEscaped(path))
        let escapes = path.unicodeScalars.filter { (0x10FC80...0x10FCFF).contains($0.value) }.count
        // (No piece holds a U+FFFD of its own, so every one shown stands for one escaped byte.)
        #expect(shown.unicodeScalars.filter { $0 == "\u{FFFD}" }.count == escapes)
      }
    }
    let latin1 = FileSystemPath.string(decoding: Array("/music/".utf8) + Self.cafeLatin1 + Array(".mp3".utf8))
    #expect(FileSystemPath.displayed(latin1) == "/music/Caf\u{FFFD}.mp3")
    #expect(FileSystemPath.fileURLString(latin1) == "file:///music/Caf%E9.mp3")
    #expect(FileSystemPath.path(fileURL: "file:///music/Caf%E9.mp3") == latin1)
    #expect(FileSystemPath.path(fileURL: "file://localhost/music/Caf%E9.mp3") == latin1)
    #expect(FileSystemPath.path(fileURL: "file:///music/Caf%C3%A9.mp3") == "/music/Café.mp3")
    #expect(FileSystemPath.path(fileURL: "file://server/music/a.mp3") == nil)
    #expect(FileSystemPath.fileURLString("/music/A B#1.ogg") == "file:///music/A%20B%231.ogg")
  }

  /// A library whose folder and files are named in Latin-1, with one UTF-8 file beside them.
  struct Latin1Library {
    let library: LibraryFolder
    let folderBytes: [UInt8]
    let songBytes: [UInt8]

    init() throws {
      library = try LibraryFolder()
      folderBytes = Array(library.music.utf8) + [UInt8(ascii: "/")] + FileNameTests.dejaLatin1
      try FileNameTests.makeFolder(folderBytes)
      // No TITLE tag: the title comes from the file name.
      let format = PCMFormat.mono22050
      let staging = library.temporary.path + "/staging.ogg"
      try VorbisEncoder.encode(
        samples: ToneGenerator.sine(frequency: 330, seconds: 0.5, format: format), format: format,
        tags: [("ARTIST", "Old Rip")], to: staging)
      songBytes = folderBytes + [UInt8(ascii: "/")] + FileNameTests.cafeLatin1 + Array(".ogg".utf8)
      try FileNameTests.rename(staging, to: songBytes)
      try library.song("Straße.ogg", frequency: 550, title: "Straße")
    }

    var songPath: String { FileSystemPath.string(decoding: songBytes) }
  }

  @Test("A scan indexes a Latin-1 folder and file; the item opens, plays and shows U+FFFD in its title")
  func aLatin1NameIsIndexedAndPlayed() throws {
    let fixture = try Latin1Library()
    let index = try DirectIndex(path: fixture.library.indexPath)

    let report = try fixture.library.scanner.scan(through: index)
    #expect(report.added == 2, "\(report)")
    #expect(report.failed.isEmpty, "\(report.failed)")
    let item = try #require(try index.items().first { $0.artist == "Old Rip" })
    #expect(FileSystemPath.bytes(of: item.assetURL.path) == fixture.songBytes)
    #expect(item.title == "Caf\u{FFFD}")
    #expect(item.displayName == "Caf\u{FFFD}")
    #expect(item.playbackDuration.map { abs($0 - 0.5) < 0.001 } == true)
    // Its audio: the decoder opens the exact bytes and reads every frame.
    let decoder = try AudioFile.openDecoder(path: item.assetURL.path)
    #expect(decoder.lengthFrames == 11_025)
    #expect(EngineHarness.readUntilFailure(decoder).failure == nil)
    // And the engine plays it.
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine, item: item)
    player.play()
    let output = EngineHarness.render(engine, seconds: 0.4)
    #expect(EngineHarness.peak(output[...]) > 0.1, "the Latin-1 file played silence")
    engine.shutdown()

    // A rescan finds the same path unchanged (the walk and the index agree byte for byte).
    let again = try fixture.library.scanner.scan(through: index)
    #expect(again.unchanged == 2 && again.added == 0 && again.removed == 0, "\(again)")
    // A query by that title finds it.
    let found = try index.index.run(MediaQuery(filterPredicates: [.init(value: "Caf\u{FFFD}", forProperty: .title)]))
    #expect(found.items.map(\.assetURL.path) == [fixture.songPath])

    // The Latin-1 folder itself as the library folder (a URL made from its path string).
    let inner = LibraryScanner(folders: [URL(fileURLWithPath: FileSystemPath.string(decoding: fixture.folderBytes))])
    let innerIndex = try DirectIndex(path: fixture.library.temporary.path + "/inner.sqlite")
    let innerReport = try inner.scan(through: innerIndex)
    #expect(innerReport.added == 1 && innerReport.failed.isEmpty, "\(innerReport)")
    #expect(try innerIndex.items().map(\.assetURL.path) == [fixture.songPath])
  }

  @Test("A missing Latin-1 path is a typed error that shows the name with U+FFFD")
  func anErrorShowsTheNameReadably() throws {
    let path = FileSystemPath.string(decoding: Array("/nonexistent/".utf8) + Self.cafeLatin1 + Array(".ogg".utf8))
    #expect {
      _ = try AudioFile.openDecoder(path: path)
    } throws: { error in
      guard let error = error as? DecodeError, case .fileNotFound = error.reason else { return false }
      return error.path == path && "\(error)".hasPrefix("/nonexistent/Caf\u{FFFD}.ogg: ")
    }
  }

  @Test("Playlists name Latin-1 files by their bytes, by percent-escaped file URLs, and in Latin-1 for UTF-8 files")
  func playlistEntriesResolveByBytes() throws {
    let fixture = try Latin1Library()
    // An M3U written on a Latin-1 system: the folder and file by their bytes, the same file by a
    // file URL, and "Straße" in Latin-1 (0xDF) for the file that is now named in UTF-8.
    var text = Array("#EXTM3U\n#PLAYLIST:Vieux Caf".utf8) + [0xE9] + Array("\n".utf8)
    text += fixture.dejaLatin1Relative + Array("\n".utf8)
    text += Array(FileSystemPath.fileURLString(fixture.songPath).utf8) + Array("\n".utf8)
    text += Array("Stra".utf8) + [0xDF] + Array("e.ogg\n".utf8)
    try Data(text).write(to: URL(fileURLWithPath: fixture.library.music + "/old.m3u"))
    let index = try DirectIndex(path: fixture.library.indexPath)

    let report = try fixture.library.scanner.scan(through: index)
    #expect(report.playlistFailures.isEmpty, "\(report.playlistFailures)")
    let playlist = try #require(try index.index.run(.playlists()).collections.first)
    #expect(playlist.items.map(\.displayName) == ["Caf\u{FFFD}", "Caf\u{FFFD}", "Straße"])
    #expect(playlist.name == "Vieux Café")
  }

  @Test(
    "leitmotif scan shows a file name with a newline and an escape sequence escaped, on one line",
    .enabled(if: LeitmotifCommand.executable != nil, "the leitmotif executable is not next to the test bundle"))
  func scanEscapesNames() throws {
    let temporary = try TemporaryDirectory(prefix: "leitmotif-scan-escapes")
    let home = temporary.path
    let music = temporary.file("Music")
    try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
    // Text, not music: the scan reports it as failed, by name.
    try "not music\n".write(toFile: music + "/bad\nline\u{1B}[31mred.mp3", atomically: true, encoding: .utf8)
    let environment = [
      "HOME": home, "XDG_STATE_HOME": home + "/state", "XDG_CACHE_HOME": home + "/cache",
      "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
    ]
    func run(_ arguments: [String]) throws -> (status: String, output: String) {
      let output = home + "/stdout.txt"
      let child = try ChildProcess(LeitmotifCommand.executable, arguments, environment: environment, output: output)
      _ = child.finish()
      return (child.finish(status: true), (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
    }
    #expect(try run(["access", "allow", "escape-test"]).status == "0")
    let scan = try run(["scan", "--app", "escape-test", "--library", music])
    let failed = scan.output.split(separator: "\n").filter { $0.hasPrefix("failed: ") }
    #expect(failed.count == 1, "\(scan.output)")
    #expect(failed.first?.contains("bad\\nline\\e[31mred.mp3") == true, "\(scan.output)")
    #expect(!scan.output.contains("\u{1B}"), "no escape reaches the terminal")
  }

  @Test(
    "leitmotif info takes a Latin-1 argument; query --json gives the exact bytes as a file URL",
    .enabled(if: LeitmotifCommand.executable != nil, "the leitmotif executable is not next to the test bundle"))
  func theCommandLineKeepsTheBytes() throws {
    let fixture = try Latin1Library()
    let home = fixture.library.temporary.path
    let environment = [
      "HOME": home, "XDG_STATE_HOME": home + "/state", "XDG_CACHE_HOME": home + "/cache",
      "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
    ]
    func run(_ arguments: [String]) throws -> (status: String, output: String, errors: String) {
      let output = home + "/stdout.txt"
      let child = try ChildProcess(LeitmotifCommand.executable, arguments, environment: environment, output: output)
      let errors = child.finish()
      return (child.finish(status: true), (try? String(contentsOfFile: output, encoding: .utf8)) ?? "", errors)
    }

    let info = try run(["info", fixture.songPath])
    #expect(info.status == "0", "\(info.errors)")
    #expect(
      info.output.contains("\"path\":\"\(fixture.library.music)/D\u{FFFD}j\u{FFFD}/Caf\u{FFFD}.ogg\""), "\(info.output)"
    )
    #expect(info.output.contains("\"frames\":11025"), "\(info.output)")

    // render writes a Latin-1 name as its bytes, and shows it with U+FFFD (it wrote the UTF-8 of
    // the escape, a name with four odd bytes, and printed that).
    let wav = home + "/" + FileSystemPath.deletingExtension(FileSystemPath.lastComponent(fixture.songPath)) + ".wav"
    let render = try run(["render", "--out", wav, "--duration", "0.1", fixture.songPath])
    #expect(render.status == "0", "\(render.errors)")
    #expect(FileSystemPath.withCString(wav) { access($0, F_OK) } == 0, "no file by the name's bytes")
    #expect(
      render.output.contains("wrote \(home)/Caf\u{FFFD}.wav"), "\(render.output)")

    #expect(try run(["access", "allow", "latin1-test"]).status == "0")
    let scan = try run(["scan", "--app", "latin1-test", "--library", fixture.library.music])
    #expect(scan.status == "0", "\(scan.errors)")
    #expect(scan.output.contains("2 added"), "\(scan.output)")
    let query = try run(["query", "--app", "latin1-test", "--library", fixture.library.music, "--json"])
    #expect(query.status == "0", "\(query.errors)")
    #expect(query.output.contains("/D%E9j%E0/Caf%E9.ogg\""), "\(query.output)")
    // The URL printed names the song again: in --where, and as the FILE of render (a player's
    // trial: neither took it back).
    let line = try #require(query.output.split(separator: "\n").first { $0.contains("Caf%E9.ogg") })
    let url = try #require(line.split(separator: "\"").first { $0.hasPrefix("file://") }.map(String.init))
    let found = try run(["query", "--app", "latin1-test", "--library", fixture.library.music, "--where", "path=\(url)"])
    #expect(found.output.contains("1 item"), "\(found.output)\(found.errors)")
    let again = try run(["render", "--out", home + "/again.wav", "--duration", "0.1", url])
    #expect(again.status == "0", "\(again.errors)")
    // Ids past 2^53, as strings too.
    let id = try #require(line.split(separator: ",").first { $0.contains("\"persistentID\":") })
    let digits = id.split(separator: ":")[1]
    #expect(line.contains("\"persistentIDString\":\"\(digits)\""), "\(line)")
  }
}

extension FileNameTests.Latin1Library {
  /// The song's path relative to the library folder, as bytes: `D\xE9j\xE0/Caf\xE9.ogg`.
  var dejaLatin1Relative: [UInt8] { Array(songBytes.dropFirst(library.music.utf8.count + 1)) }
}
