import Foundation
import LeitmotifFixtures
import LeitmotifOutput
import Testing

@testable import LeitmotifCues
@testable import LeitmotifDecoding
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// WAV and AIFF through libsndfile: what sound designers export. The files are written byte by
/// byte here (`RIFFBuilder`), chunk by chunk as a sound editor writes them, so what a decode must
/// give back, and which loop and tags the file carries, is known exactly.
@Suite("WAV and AIFF: decoded exactly, seeks to the frame, smpl and INST loops, INFO tags, damaged files")
struct WAVDecoderTests {
  /// A RIFF WAVE or FORM AIFF file, chunk by chunk.
  struct RIFFBuilder {
    var chunks: [(String, [UInt8])] = []

    static func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF)] }
    static func le32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8((value >> (8 * $0)) & 0xFF) } }
    static func be16(_ value: Int) -> [UInt8] { le16(value).reversed() }
    static func be32(_ value: Int) -> [UInt8] { le32(value).reversed() }

    /// PCM 16-bit (`float: false`) or IEEE float 32-bit samples, as WAVE's `fmt ` and `data`.
    static func wave(_ samples: [Float], rate: Int, channels: Int, float: Bool = false) -> RIFFBuilder {
      var builder = RIFFBuilder()
      let bytesPerSample = float ? 4 : 2
      builder.chunks.append(
        (
          "fmt ",
          le16(float ? 3 : 1) + le16(channels) + le32(rate) + le32(rate * channels * bytesPerSample)
            + le16(channels * bytesPerSample) + le16(8 * bytesPerSample)
        ))
      builder.chunks.append(
        ("data", float ? samples.flatMap { le32(Int($0.bitPattern)) } : samples.flatMap { le16(Int(pcm16($0))) }))
      return builder
    }

    static func pcm16(_ sample: Float) -> Int16 { Int16((max(-1, min(1, sample)) * 32767).rounded()) }

    /// A `smpl` chunk with one forward loop from `start` to `last` (WAVE's dwEnd: the loop's last
    /// frame, inclusive).
    mutating func loop(start: Int, last: Int) {
      let header = [Int](repeating: 0, count: 7).flatMap(Self.le32) + Self.le32(1) + Self.le32(0)
      chunks.insert(
        (
          "smpl",
          header + Self.le32(0) + Self.le32(0) + Self.le32(start) + Self.le32(last) + Self.le32(0) + Self.le32(0)
        ), at: 1)
    }

    /// A LIST INFO chunk of (id, text) pairs (INAM title, IART artist, IPRD album, ...).
    mutating func info(_ entries: [(String, String)]) {
      var body = Array("INFO".utf8)
      for (id, text) in entries {
        var bytes = Array(text.utf8) + [0]
        if bytes.count % 2 == 1 { bytes.append(0) }
        body += Array(id.utf8) + Self.le32(bytes.count) + bytes
      }
      chunks.insert(("LIST", body), at: 1)
    }

    /// An ACID chunk: a tempo and a meter.
    mutating func acid(bpm: Float, beatsPerBar: Int) {
      let body =
        Self.le32(0x01) + Self.le16(60) + Self.le16(0) + Self.le32(0) + Self.le32(8) + Self.le16(4)
        + Self.le16(beatsPerBar) + Self.le32(Int(bpm.bitPattern))
      chunks.insert(("acid", body), at: 1)
    }

    func riffBytes() -> [UInt8] {
      var body = Array("WAVE".utf8)
      for (id, bytes) in chunks {
        body += Array(id.utf8) + Self.le32(bytes.count) + bytes + (bytes.count % 2 == 1 ? [0] : [])
      }
      return Array("RIFF".utf8) + Self.le32(body.count) + body
    }

    /// An AIFF file: COMM (the rate as an 80-bit extended float), SSND (big-endian 16-bit), and
    /// with `loop`, a MARK chunk and an INST sustain loop between its two markers.
    static func aiff(_ samples: [Float], rate: Int, channels: Int, loop: (start: Int, end: Int)? = nil) -> [UInt8] {
      let frames = samples.count / channels
      let exponent = 63 - rate.leadingZeroBitCount
      let mantissa = UInt64(rate) << (63 - exponent)
      let extended = be16(16_383 + exponent) + (0..<8).map { UInt8((mantissa >> (8 * (7 - $0))) & 0xFF) }
      var body = Array("AIFF".utf8)
      func chunk(_ id: String, _ bytes: [UInt8]) {
        body += Array(id.utf8) + be32(bytes.count) + bytes + (bytes.count % 2 == 1 ? [0] : [])
      }
      chunk("COMM", be16(channels) + be32(frames) + be16(16) + extended)
      if let loop {
        // Two markers (id, position, a pascal-string name padded to even length).
        let markers = be16(2) + be16(1) + be32(loop.start) + [1, 0x61] + be16(2) + be32(loop.end) + [1, 0x62]
        chunk("MARK", markers)
        // INST: base note, detune, low/high note, low/high velocity, gain, then the sustain loop
        // (forward: mode 1, from marker 1 to marker 2) and the release loop (none).
        chunk("INST", [60, 0, 0, 127, 0, 127] + be16(0) + be16(1) + be16(1) + be16(2) + be16(0) + be16(0) + be16(0))
      }
      chunk("SSND", be32(0) + be32(0) + samples.flatMap { be16(Int(pcm16($0))) })
      return Array("FORM".utf8) + be32(body.count) + body
    }
  }

  func noise(frames: Int, channels: Int, seed: UInt64 = 9) -> [Float] {
    ToneGenerator.whiteNoise(seed: seed, amplitude: 0.5, frameCount: frames, channelCount: channels)
  }

  func write(_ bytes: [UInt8], to path: String) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
  }

  @Test("16-bit and float WAV, stereo and mono: every sample comes back, with the length, rate, INFO tags and loop")
  func roundTrip() throws {
    let directory = try TemporaryDirectory()
    for (channels, float) in [(2, false), (1, false), (2, true)] {
      let samples = noise(frames: 20_000, channels: channels)
      var file = RIFFBuilder.wave(samples, rate: 44_100, channels: channels, float: float)
      file.loop(start: 1_000, last: 5_999)
      file.info([("INAM", "Cavern"), ("IART", "Sound Team"), ("IPRD", "Dungeon OST"), ("IGNR", "Ambient")])
      file.acid(bpm: 96, beatsPerBar: 3)
      let path = directory.file("\(channels)-\(float).wav")
      try write(file.riffBytes(), to: path)

      let decoder = try AudioFile.openDecoder(path: path)
      #expect(decoder.containerFormat == .wav)
      #expect(decoder.format == PCMFormat(sampleRate: 44_100, channelCount: channels))
      #expect(decoder.lengthFrames == 20_000)
      let decoded = try AudioFile.decodeAll(decoder)
      let expected = float ? samples : samples.map { Float(RIFFBuilder.pcm16($0)) / 32_768 }
      #expect(decoded == expected, "\(channels) channels, float \(float)")
      #expect(decoder.tags.title == "Cavern" && decoder.tags.artist == "Sound Team")
      #expect(decoder.tags.album == "Dungeon OST" && decoder.tags.genre == "Ambient")
      // smpl's dwEnd is the loop's last frame; the loop end is the frame after it.
      #expect(decoder.tags.loopStartFrame == 1_000 && decoder.tags.loopEndFrame == 6_000)
      #expect(decoder.tags.beatsPerMinute == 96 && decoder.tags.meter == 3)
    }
  }

  @Test("A seek lands on the exact frame: what follows is the linear decode from there")
  func seekExact() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("a.wav")
    try write(RIFFBuilder.wave(noise(frames: 30_000, channels: 2), rate: 48_000, channels: 2).riffBytes(), to: path)
    let linear = try AudioFile.decodeAll(try AudioFile.openDecoder(path: path))
    let decoder = try AudioFile.openDecoder(path: path)
    for target in [Int64(12_345), 4_096, 29_999, 0, 30_000] {
      try decoder.seek(toFrame: target)
      #expect(decoder.cursorFrames == target)
      var block = [Float](repeating: 0, count: 2 * 500)
      let got = try block.withUnsafeMutableBufferPointer {
        try decoder.readFrames(into: $0.baseAddress!, frameCapacity: 500)
      }
      #expect(got == min(500, 30_000 - Int(target)))
      #expect(
        Array(block[0..<(2 * got)]) == Array(linear[(2 * Int(target))..<(2 * (Int(target) + got))]), "at \(target)")
    }
    #expect(throws: DecodeError.self) { try decoder.seek(toFrame: 30_001) }
  }

  @Test("AIFF: big-endian samples come back, and the INST sustain loop is the loop")
  func aiff() throws {
    let directory = try TemporaryDirectory()
    let samples = noise(frames: 10_000, channels: 2)
    let path = directory.file("loop.aiff")
    try write(RIFFBuilder.aiff(samples, rate: 32_000, channels: 2, loop: (2_000, 8_000)), to: path)
    let decoder = try AudioFile.openDecoder(path: path)
    #expect(decoder.containerFormat == .aiff)
    #expect(decoder.format == PCMFormat(sampleRate: 32_000, channelCount: 2) && decoder.lengthFrames == 10_000)
    #expect(try AudioFile.decodeAll(decoder) == samples.map { Float(RIFFBuilder.pcm16($0)) / 32_768 })
    #expect(decoder.tags.loopStartFrame == 2_000 && decoder.tags.loopEndFrame == 8_000)
  }

  @Test("Six channels fold to stereo as FLAC's do (WAVE order: the centre into both sides)")
  func sixChannels() throws {
    let directory = try TemporaryDirectory()
    // Only the centre (the third channel in WAVE's order) sounds.
    var samples = [Float](repeating: 0, count: 6 * 1_000)
    for frame in 0..<1_000 { samples[6 * frame + 2] = 0.5 }
    let path = directory.file("surround.wav")
    try write(RIFFBuilder.wave(samples, rate: 48_000, channels: 6, float: true).riffBytes(), to: path)
    let decoder = try AudioFile.openDecoder(path: path)
    #expect(decoder.format.channelCount == 2)
    let decoded = try AudioFile.decodeAll(decoder)
    #expect(decoded.count == 2_000)
    #expect(decoded[0] > 0.1 && abs(decoded[0] - decoded[1]) < 1e-6, "\(decoded.prefix(2))")
  }

  @Test("Damaged files are errors naming the file; a loop past the end is dropped with a warning")
  func damaged() throws {
    let directory = try TemporaryDirectory()
    let header = directory.file("header.wav")
    try write(Array("RIFF".utf8) + RIFFBuilder.le32(100) + Array("WAVE".utf8) + Array("fmt ".utf8), to: header)
    #expect {
      _ = try AudioFile.openDecoder(path: header)
    } throws: { error in
      (error as? DecodeError)?.path == header
    }
    let notWave = directory.file("avi.wav")
    try write(Array("RIFF".utf8) + RIFFBuilder.le32(4) + Array("AVI ".utf8), to: notWave)
    #expect {
      _ = try AudioFile.openDecoder(path: notWave)
    } throws: { error in
      (error as? DecodeError)?.description.contains("a RIFF file that is not WAVE") == true
    }
    let empty = directory.file("empty.wav")
    try write(RIFFBuilder.wave([], rate: 48_000, channels: 2).riffBytes(), to: empty)
    #expect(throws: DecodeError.self) { _ = try AudioFile.openDecoder(path: empty) }

    var file = RIFFBuilder.wave(noise(frames: 1_000, channels: 2), rate: 48_000, channels: 2)
    file.loop(start: 500, last: 5_000)
    let pastEnd = directory.file("past.wav")
    try write(file.riffBytes(), to: pastEnd)
    let decoder = try AudioFile.openDecoder(path: pastEnd)
    #expect(decoder.tags.loopStartFrame == nil && decoder.tags.loopEndFrame == nil)
    #expect(decoder.warnings.contains { $0.contains("does not fit") }, "\(decoder.warnings)")

    // Cut in the middle of its data: plays what is there.
    let whole = RIFFBuilder.wave(noise(frames: 4_000, channels: 2), rate: 48_000, channels: 2).riffBytes()
    let cut = directory.file("cut.wav")
    try write(Array(whole.prefix(whole.count - 4_000)), to: cut)
    let cutDecoder = try AudioFile.openDecoder(path: cut)
    #expect(cutDecoder.lengthFrames == 3_000)
    #expect(try AudioFile.decodeAll(cutDecoder).count == 6_000)
  }

  @Test(
    "A LIST chunk whose entry claims more than it holds opens at once (libsndfile alone loops for ever), its tags dropped",
    .hangGuard)
  func damagedInfoList() throws {
    let directory = try TemporaryDirectory()
    let samples = noise(frames: 2_000, channels: 2)
    var file = RIFFBuilder.wave(samples, rate: 48_000, channels: 2)
    file.info([("RNAM", "an entry libsndfile does not know"), ("INAM", "Fine"), ("IART", "Someone")])
    var bytes = file.riffBytes()
    // RNAM's size (at "RNAM" + 4) becomes 0xFFFFFFF4: libsndfile/libsndfile#1118.
    let name = try #require(bytes.firstRange(of: Array("RNAM".utf8)))
    bytes.replaceSubrange((name.upperBound)..<(name.upperBound + 4), with: [0xF4, 0xFF, 0xFF, 0xFF])
    let path = directory.file("damaged-info.wav")
    try write(bytes, to: path)
    let decoder = try AudioFile.openDecoder(path: path)
    #expect(decoder.tags.title == nil && decoder.tags.artist == nil)
    #expect(try AudioFile.decodeAll(decoder) == samples.map { Float(RIFFBuilder.pcm16($0)) / 32_768 })
    // The same file with its LIST intact keeps its tags: only a damaged list is hidden.
    try write(file.riffBytes(), to: path)
    #expect(try AudioFile.openDecoder(path: path).tags.title == "Fine")
  }

  @Test("A WAV's smpl loop plays as a loop: one repeat renders its length plus the loop's, sample-exact")
  func loopRenders() throws {
    let directory = try TemporaryDirectory()
    let samples = ToneGenerator.sine(frequency: 300, amplitude: 0.4, seconds: 1, format: .stereo48000)
    var file = RIFFBuilder.wave(samples, rate: 48_000, channels: 2, float: true)
    file.loop(start: 12_000, last: 35_999)
    let path = directory.file("loop.wav")
    try write(file.riffBytes(), to: path)
    var options = QueueRenderer.Options()
    options.loopRepeat = .times(1)
    let out = directory.file("out.wav")
    let result = try QueueRenderer.render(paths: [path], to: out, options: options, onEvent: { _ in })
    #expect(result.failures.isEmpty)
    let wav = try WAVFile(path: out)
    #expect(wav.frameCount == 48_000 + 24_000)
    // After the jump back, frame 36000 of the output is frame 12000 of the file again.
    let output = wav.samples
    let jump = 36_000
    #expect(Array(output[(2 * jump)..<(2 * jump + 200)]) == Array(samples[(2 * 12_000)..<(2 * 12_000 + 200)]))
  }

  @Test("The player's library indexes WAV and AIFF files with their tags, length and analysis")
  func libraryScan() throws {
    let library = try LibraryFolder()
    var file = RIFFBuilder.wave(
      ToneGenerator.sine(frequency: 440, amplitude: 0.3, seconds: 1.5, format: .stereo48000), rate: 48_000, channels: 2)
    file.info([("INAM", "Rip"), ("IART", "Band"), ("IPRD", "Live")])
    try write(file.riffBytes(), to: library.music + "/rip.wav")
    try write(
      RIFFBuilder.aiff(noise(frames: 44_100, channels: 2), rate: 44_100, channels: 2), to: library.music + "/b.AIFF")
    let index = try DirectIndex(path: library.indexPath)
    let report = try library.scanner.scan(through: index)
    #expect(report.added == 2 && report.failed.isEmpty, "\(report)")
    #expect(report.unsupported.isEmpty)
    let rip = try #require(try index.item(at: library.music + "/rip.wav"))
    #expect(rip.title == "Rip" && rip.artist == "Band" && rip.albumTitle == "Live")
    #expect(abs((rip.playbackDuration ?? 0) - 1.5) < 0.001 && rip.loudness != nil)
    let aiff = try #require(try index.item(at: library.music + "/b.AIFF"))
    #expect(aiff.sampleRate == 44_100 && abs((aiff.playbackDuration ?? 0) - 1) < 0.001)
  }

  @Test("A folder of WAV and AIFF music is bundled music: listed (any case of extension) and tagged")
  func bundled() throws {
    let directory = try TemporaryDirectory()
    let music = directory.file("music")
    try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
    var file = RIFFBuilder.wave(
      ToneGenerator.sine(frequency: 220, amplitude: 0.3, seconds: 2, format: .stereo48000), rate: 48_000, channels: 2)
    file.info([("INAM", "Ambience")])
    try write(file.riffBytes(), to: music + "/ambience.WAV")
    try write(RIFFBuilder.aiff(noise(frames: 4_800, channels: 1), rate: 48_000, channels: 1), to: music + "/hit.aif")
    let catalog = BundledCatalog(directory: URL(fileURLWithPath: music), analyzing: false, environment: [:])
    #expect(catalog.failures.isEmpty, "\(catalog.failures)")
    #expect(catalog.relativePaths == ["ambience.WAV", "hit.aif"])
    #expect(catalog.item(relativePath: "ambience.WAV")?.title == "Ambience")
  }
}
