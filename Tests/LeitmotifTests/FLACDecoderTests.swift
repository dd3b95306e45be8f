import Foundation
import LeitmotifFixtures
import Testing

@testable import LeitmotifDecoding
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// FLAC through libFLAC: what a player's lossless rips need. The files are made with libFLAC's
/// own encoder (`FLACEncoder`), so what a decode must give back is known exactly.
@Suite("FLAC: decoded exactly, seeks to the frame, tags, channel fold-down, unknown lengths and cut files")
struct FLACDecoderTests {
  /// What a `bits`-bit FLAC of `samples` decodes to: the encoder's integers over 2^(bits-1).
  func quantized(_ samples: [Float], bits: Int) -> [Float] {
    let scale = Float((1 << (bits - 1)) - 1)
    let divisor = Float(1 << (bits - 1))
    return samples.map { Float(Int32((max(-1, min(1, $0)) * scale).rounded())) / divisor }
  }

  func noise(frames: Int, channels: Int, seed: UInt64 = 5) -> [Float] {
    ToneGenerator.whiteNoise(seed: seed, amplitude: 0.5, frameCount: frames, channelCount: channels)
  }

  func decodeAll(_ path: String) throws -> (any AudioDecoder, [Float]) {
    let decoder = try AudioFile.openDecoder(path: path)
    return (decoder, try AudioFile.decodeAll(decoder))
  }

  @Test(
    "16 and 24 bits, stereo and mono: every sample comes back, with the length, rate and tags", arguments: [16, 24])
  func roundTrip(bits: Int) throws {
    let directory = try TemporaryDirectory()
    for channels in [1, 2] {
      let path = directory.file("\(channels).flac")
      let samples = noise(frames: 30_000, channels: channels)
      try FLACEncoder.encode(
        samples: samples, format: PCMFormat(sampleRate: 44_100, channelCount: channels), bitsPerSample: bits,
        tags: [("TITLE", "Rip"), ("ARTIST", "Someone"), ("BPM", "120"), ("LOOPSTART", "1000"), ("LOOPLENGTH", "5000")],
        to: path)
      let (decoder, decoded) = try decodeAll(path)
      #expect(decoder.containerFormat == .flac)
      #expect(decoder.format == PCMFormat(sampleRate: 44_100, channelCount: channels))
      #expect(decoder.lengthFrames == 30_000)
      #expect(decoded == quantized(samples, bits: bits), "\(bits) bits, \(channels) channels")
      #expect(decoder.tags.title == "Rip" && decoder.tags.artist == "Someone" && decoder.tags.beatsPerMinute == 120)
      #expect(decoder.tags.loopStartFrame == 1000 && decoder.tags.loopEndFrame == 6000)
    }
  }

  @Test("A seek lands on the exact frame: what follows is the linear decode from there")
  func seekExact() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("a.flac")
    try FLACEncoder.encode(samples: noise(frames: 50_000, channels: 2), format: .stereo48000, to: path)
    let (_, linear) = try decodeAll(path)
    let decoder = try AudioFile.openDecoder(path: path)
    for target in [Int64(12_345), 4_096, 49_999, 0, 50_000] {
      try decoder.seek(toFrame: target)
      #expect(decoder.cursorFrames == target)
      var block = [Float](repeating: 0, count: 2 * 1000)
      let got = try block.withUnsafeMutableBufferPointer { (pointer) throws(DecodeError) -> Int in
        try decoder.readFrames(into: pointer.baseAddress!, frameCapacity: 1000)
      }
      let expected = min(1000, 50_000 - Int(target))
      #expect(got == expected)
      #expect(Array(block[0..<(2 * got)]) == Array(linear[(2 * Int(target))..<(2 * (Int(target) + got))]))
    }
    #expect(throws: DecodeError.self) { try decoder.seek(toFrame: 50_001) }
  }

  @Test("Six channels fold down to stereo: the centre reaches both sides at -3 dB, the surrounds their own side")
  func foldDown() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("surround.flac")
    let frames = 4_000
    // FLAC order: FL FR C LFE BL BR. A tone in C only, then one in BL only.
    var samples = [Float](repeating: 0, count: 6 * frames)
    for frame in 0..<frames {
      let value = Float(0.5 * sin(Double(frame) * 0.05))
      samples[6 * frame + (frame < frames / 2 ? 2 : 4)] = value
    }
    try FLACEncoder.encode(samples: samples, format: PCMFormat(sampleRate: 48_000, channelCount: 6), to: path)
    let (decoder, decoded) = try decodeAll(path)
    #expect(decoder.format.channelCount == 2)
    let source = quantized(samples, bits: 16)
    for frame in [100, 1_500] {
      let centre = source[6 * frame + 2]
      #expect(abs(decoded[2 * frame] - 0.707_106_77 * centre) < 1e-6)
      #expect(abs(decoded[2 * frame + 1] - 0.707_106_77 * centre) < 1e-6)
    }
    for frame in [2_100, 3_500] {
      let back = source[6 * frame + 4]
      #expect(abs(decoded[2 * frame] - 0.707_106_77 * back) < 1e-6, "left gets the back left")
      #expect(decoded[2 * frame + 1] == 0, "right gets nothing of the back left")
    }
  }

  @Test("A header that does not give the length: the file is counted once, with a warning, and plays whole")
  func unknownLength() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("stream.flac")
    let samples = noise(frames: 20_000, channels: 2)
    try FLACEncoder.encode(samples: samples, format: .stereo44100, unknownLength: true, to: path)
    let (decoder, decoded) = try decodeAll(path)
    #expect(decoder.lengthFrames == 20_000)
    #expect(decoder.warnings.contains { $0.contains("does not give the length") }, "\(decoder.warnings)")
    #expect(decoded == quantized(samples, bits: 16))
  }

  @Test("A file cut in half plays what is there, then says it is truncated; garbage is refused by name")
  func damaged() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("cut.flac")
    try FLACEncoder.encode(samples: noise(frames: 40_000, channels: 2), format: .stereo44100, to: path)
    let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
    try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: path))
    let decoder = try AudioFile.openDecoder(path: path)
    let (total, failure) = EngineHarness.readUntilFailure(decoder)
    #expect(total > 10_000 && total < 40_000, "\(total) frames before the cut")
    guard case .truncated? = failure?.reason else {
      Issue.record("expected .truncated, got \(String(describing: failure))")
      return
    }
    let garbage = directory.file("fake.flac")
    try Data("fLaC".utf8 + [UInt8](repeating: 0xAB, count: 200)).write(to: URL(fileURLWithPath: garbage))
    #expect(throws: DecodeError.self) { _ = try AudioFile.openDecoder(path: garbage) }
  }

  @Test("A 44.1 kHz FLAC plays through a 48 kHz engine like any other item")
  func plays() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("song.flac")
    let format = PCMFormat.stereo44100
    try FLACEncoder.encode(
      samples: ToneGenerator.sine(frequency: 440, amplitude: 0.5, seconds: 1, format: format), format: format,
      tags: [("TITLE", "Tone")], to: path)
    let engine = try EngineHarness.offlineEngine()
    let item = try MediaItem.load(path: path)
    #expect(item.title == "Tone")
    let player = try Player(engine: engine, item: item)
    player.play()
    let output = EngineHarness.render(engine, seconds: 0.5)
    #expect(EngineHarness.peak(output[24_000..<48_000]) > 0.4)
    player.stop()
  }
}
