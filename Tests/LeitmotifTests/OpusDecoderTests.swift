import Foundation
import LeitmotifFixtures
import Testing

@testable import LeitmotifDecoding
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// Ogg Opus through opusfile. The files are made with libopus's encoder (`OpusEncoder`); Opus is
/// lossy, so what must hold is the length to the frame (pre-skip and end padding trimmed), the
/// timing (no lag against the input), the level, the tags, and seeks that land where a linear
/// decode has the same audio.
@Suite("Ogg Opus: exact length and timing, tags, seeks, mono, and a 48 kHz mix without resampling")
struct OpusDecoderTests {
  func tone(frames: Int, channels: Int) -> [Float] {
    (0..<(frames * channels)).map { index in
      let frame = index / channels
      return Float(0.4 * sin(2 * Double.pi * (channels == 2 && index % 2 == 1 ? 660 : 440) * Double(frame) / 48_000))
    }
  }

  func decodeAll(_ path: String) throws -> (any AudioDecoder, [Float]) {
    let decoder = try AudioFile.openDecoder(path: path)
    return (decoder, try AudioFile.decodeAll(decoder))
  }

  /// The lag (in frames, -40...40) at which `output` best matches `input` in channel 0.
  func bestLag(_ input: [Float], _ output: [Float], channels: Int) -> Int {
    let frames = min(input.count, output.count) / channels
    return (-40...40).max { a, b in
      func score(_ lag: Int) -> Double {
        var sum = 0.0
        for frame in 2_000..<(frames - 2_000) {
          sum += Double(input[frame * channels]) * Double(output[(frame + lag) * channels])
        }
        return sum
      }
      return score(a) < score(b)
    }!
  }

  @Test(
    "Stereo and mono: as many frames as went in, no lag, the level kept, the tags (and R128 gain) read",
    arguments: [1, 2])
  func roundTrip(channels: Int) throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("song.opus")
    let input = tone(frames: 48_000, channels: channels)
    try OpusEncoder.encode(
      samples: input, channels: channels,
      tags: [
        ("TITLE", "Opus Song"), ("ARTIST", "Someone"), ("BPM", "100"), ("LOOPSTART", "4800"),
        ("R128_TRACK_GAIN", "-1792"),
      ], to: path)
    let (decoder, output) = try decodeAll(path)
    #expect(decoder.containerFormat == .opus)
    #expect(decoder.format == AudioFormat(sampleRate: 48_000, channelCount: channels))
    #expect(decoder.lengthFrames == 48_000, "\(decoder.lengthFrames) frames")
    #expect(output.count == input.count)
    #expect(bestLag(input, output, channels: channels) == 0)
    let level = { (samples: [Float]) -> Double in
      let middle = samples[4_000..<(samples.count - 4_000)]
      return sqrt(middle.reduce(0) { $0 + Double($1 * $1) } / Double(middle.count))
    }
    #expect(abs(20 * log10(level(output) / level(input))) < 0.5, "level \(level(output)) against \(level(input))")
    #expect(decoder.tags.title == "Opus Song" && decoder.tags.artist == "Someone" && decoder.tags.beatsPerMinute == 100)
    #expect(decoder.tags.loopStartFrame == 4_800)
    // -1792 / 256 = -7 dB towards -23 LUFS: -2 dB as ReplayGain (towards -18 LUFS).
    #expect(decoder.tags.replayGainTrackGainDecibels == -2)
  }

  @Test("A seek lands on the frame: what follows lines up with the linear decode there, at no lag")
  func seek() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("song.opus")
    try OpusEncoder.encode(samples: tone(frames: 96_000, channels: 2), channels: 2, to: path)
    let (_, linear) = try decodeAll(path)
    let decoder = try AudioFile.openDecoder(path: path)
    for target in [Int64(30_000), 77_777, 1_000] {
      try decoder.seek(toFrame: target)
      var block = [Float](repeating: 0, count: 2 * 2_000)
      let got = try block.withUnsafeMutableBufferPointer { (pointer) throws(DecodeError) -> Int in
        try decoder.readFrames(into: pointer.baseAddress!, frameCapacity: 2_000)
      }
      #expect(got == 2_000)
      let reference = linear[(2 * Int(target))..<(2 * Int(target) + 2 * got)]
      let largest = zip(block, reference).map { abs($0 - $1) }.max() ?? 1
      func mismatch(_ lag: Int) -> Float {
        var sum: Float = 0
        for frame in 100..<1_900 { sum += abs(block[2 * frame] - linear[2 * (Int(target) + frame + lag)]) }
        return sum
      }
      let lag = (-5...5).min { mismatch($0) < mismatch($1) }!
      // Lossy: after a seek the decoder starts from other state than a linear decode has there
      // (opusfile pre-rolls 80 ms), so the samples differ a little (up to 0.05 on this 0.4 tone
      // when measured), but they line up with the linear decode at no lag: the seek is exact.
      #expect(lag == 0, "at \(target): lag \(lag)")
      #expect(largest < 0.1, "at \(target): largest difference \(largest)")
    }
    #expect(throws: DecodeError.self) { try decoder.seek(toFrame: 96_001) }
  }

  @Test(
    "A chained Opus file (a mono link, then a stereo one) plays both links gaplessly, folded to stereo, and seeks across"
  )
  func chained() throws {
    let directory = try TemporaryDirectory()
    let first = directory.file("first.opus")
    let second = directory.file("second.opus")
    let mono = tone(frames: 48_000, channels: 1)
    let stereo = tone(frames: 24_000, channels: 2)
    try OpusEncoder.encode(samples: mono, channels: 1, tags: [("TITLE", "Link One")], serial: 1, to: first)
    try OpusEncoder.encode(samples: stereo, channels: 2, tags: [("TITLE", "Link Two")], serial: 2, to: second)
    let path = directory.file("chained.opus")
    try (try Data(contentsOf: URL(fileURLWithPath: first)) + Data(contentsOf: URL(fileURLWithPath: second)))
      .write(to: URL(fileURLWithPath: path))

    let (decoder, output) = try decodeAll(path)
    #expect(decoder.format == AudioFormat(sampleRate: 48_000, channelCount: 2))
    #expect(decoder.lengthFrames == 72_000, "\(decoder.lengthFrames) frames")
    #expect(output.count == 2 * 72_000)
    #expect(decoder.tags.title == "Link One")
    // Each link where it belongs, no lag: the first (mono on both sides), then the second.
    let firstPart = Array(output[0..<(2 * 48_000)])
    #expect(bestLag(mono.flatMap { [$0, $0] }, firstPart, channels: 2) == 0)
    let secondPart = Array(output[(2 * 48_000)...])
    #expect(bestLag(stereo, secondPart, channels: 2) == 0)
    // A seek into the second link lands on its frame.
    try decoder.seek(toFrame: 60_000)
    var block = [Float](repeating: 0, count: 2 * 1_000)
    let got = try block.withUnsafeMutableBufferPointer { (pointer) throws(DecodeError) -> Int in
      try decoder.readFrames(into: pointer.baseAddress!, frameCapacity: 1_000)
    }
    #expect(got == 1_000)
    let reference = output[(2 * 60_000)..<(2 * 61_000)]
    #expect((zip(block, reference).map { abs($0 - $1) }.max() ?? 1) < 0.1)
  }

  @Test("An Ogg Opus file plays in a 48 kHz engine; garbage after OpusHead is refused by name")
  func playsAndRefuses() throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("song.opus")
    try OpusEncoder.encode(samples: tone(frames: 48_000, channels: 2), channels: 2, tags: [("TITLE", "Tone")], to: path)
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine, item: MediaItem.load(path: path))
    player.play()
    let output = EngineHarness.render(engine, seconds: 0.5)
    #expect(EngineHarness.peak(output[24_000..<48_000]) > 0.3)
    player.stop()
    let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    let broken = directory.file("broken.opus")
    try Data(bytes.prefix(60) + [UInt8](repeating: 0x5A, count: 500)).write(to: URL(fileURLWithPath: broken))
    #expect {
      _ = try AudioFile.openDecoder(path: broken)
    } throws: { error in
      (error as? DecodeError)?.path == broken
    }
  }
}
