import Foundation
import LeitmotifFixtures
import Testing

@testable import LeitmotifDecoding
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// A file whose rate is not the mix rate is resampled by its stream's decode thread (libsoxr at
/// a fixed ratio), so the mixer reads mix-rate blocks. What must hold: soxr's output is
/// time-aligned (positions stay exact), clean, and every block still says truthfully which
/// segment, pass and file frame it shows, across gapless joins and loop seams.
@Suite("Resampling on the decode thread: time-aligned, clean, and every block says what it shows")
struct DecodeResamplingTests {
  /// Runs `input` (stereo) through a fresh converter to the end of the signal, in pieces of 700
  /// frames into room for 1024 (so soxr holds back and catches up across calls).
  static func convert(_ input: [Float], from inputRate: Int, to outputRate: Int) throws -> [Float] {
    let converter = try #require(FixedRateConverter(inputRate: inputRate, outputRate: outputRate))
    let capacity = 1024
    var output: [Float] = []
    var chunk = [Float](repeating: 0, count: 2 * capacity)
    var offset = 0
    input.withUnsafeBufferPointer { source in
      chunk.withUnsafeMutableBufferPointer { buffer in
        while true {
          let ending = offset >= input.count / 2
          let (taken, made) = converter.process(
            input: ending ? nil : source.baseAddress! + 2 * offset, frames: min(700, input.count / 2 - offset),
            into: buffer.baseAddress!, capacity: capacity)
          offset += taken
          output.append(contentsOf: buffer[0..<(2 * made)])
          if ending && made == 0 { break }
        }
      }
    }
    return output
  }

  @Test(
    "An impulse at input frame 1000 peaks at output frame 1000 × out / in, and the output is as long as the input",
    arguments: [8_000, 22_050, 44_100, 96_000])
  func timeAligned(inputRate: Int) throws {
    let frames = 20_000
    var input = [Float](repeating: 0, count: 2 * frames)
    input[2 * 1000] = 1
    input[2 * 1000 + 1] = 1
    let output = try Self.convert(input, from: inputRate, to: 48_000)
    let expectedLength = Double(frames) * 48_000 / Double(inputRate)
    #expect(abs(Double(output.count / 2) - expectedLength) <= 1, "\(output.count / 2) frames out")
    let peak = try #require((0..<(output.count / 2)).max { abs(output[2 * $0]) < abs(output[2 * $1]) })
    let expected = 1000 * 48_000 / Double(inputRate)
    #expect(abs(Double(peak) - expected) <= 1, "peak at \(peak), expected near \(expected)")
  }

  @Test("A 1 kHz sine at 44.1 kHz comes out at 48 kHz with its error below -90 dB")
  func clean() throws {
    let frames = 44_100
    let input = (0..<(2 * frames)).map { index -> Float in
      Float(0.5 * sin(2 * Double.pi * 1000 * Double(index / 2) / 44_100))
    }
    let output = try Self.convert(input, from: 44_100, to: 48_000)
    // Against the ideal sine at the output rate, away from the ends.
    var error = 0.0
    var signal = 0.0
    for frame in 4_800..<43_200 {
      let ideal = 0.5 * sin(2 * Double.pi * 1000 * Double(frame) / 48_000)
      error += pow(Double(output[2 * frame]) - ideal, 2)
      signal += ideal * ideal
    }
    let decibels = 10 * log10(error / signal)
    #expect(decibels < -90, "error at \(decibels) dB")
  }

  /// A 44.1 kHz Vorbis file of noise, `seconds` long.
  func file44(in directory: TemporaryDirectory, _ name: String, seconds: Double) throws -> String {
    let path = directory.file(name)
    let format = PCMFormat.stereo44100
    let samples = ToneGenerator.whiteNoise(
      seed: 3, amplitude: 0.3, frameCount: format.frames(seconds: seconds), channelCount: 2)
    try VorbisEncoder.encode(samples: samples, format: format, quality: 0.4, to: path)
    return path
  }

  func segment(_ path: String, token: Int, end: Int64, loop: LoopRegion? = nil, loopCount: Int? = 0) throws
    -> StreamSegment
  {
    let decoder = try AudioFile.openDecoder(path: path)
    return StreamSegment(
      token: token, decoder: decoder, startFrame: 0, endFrame: end, loop: loop, loopCount: loopCount)
  }

  /// Takes every block of generation 0 until the stream is drained.
  func blocks(of stream: DecodeAheadStream) -> [DecodeAheadStream.Block] {
    var taken: [DecodeAheadStream.Block] = []
    while let block = stream.peek(waitSeconds: 5, generation: 0) {
      taken.append(block)
      stream.release()
    }
    return taken
  }

  @Test("A gapless join: the first segment's blocks end where its last frame is shown, the next starts there")
  func joinAttribution() throws {
    let directory = try TemporaryDirectory()
    let path = try file44(in: directory, "a.ogg", seconds: 1.5)
    // The first segment is longer than the ring holds (8 blocks, 32,768 frames), so the decode
    // thread cannot reach its end before the second is appended (if it did, the stream would
    // end its signal there and start the next one afresh, which is not what this test is about).
    let stream = DecodeAheadStream(
      first: try segment(path, token: 1, end: 60_000), startFrame: 0, mixRate: 48_000)
    defer { stream.stop() }
    stream.append(try segment(path, token: 2, end: 8_000))
    #expect(stream.blockRate == 48_000, "the ring holds mix-rate frames")
    let all = blocks(of: stream)
    #expect(all.allSatisfy { $0.frames > 0 && $0.frames <= DecodeAheadStream.framesPerBlock && $0.error == nil })
    let first = all.filter { $0.token == 1 }
    let second = all.filter { $0.token == 2 }
    #expect(first.count + second.count == all.count)
    #expect(all.firstIndex { $0.token == 2 } == first.count, "token 1's blocks all come first")
    // Output frame j shows input time j × 44100 / 48000; the join is at input frame 60 000.
    let firstFrames = first.reduce(0) { $0 + $1.frames }
    #expect(firstFrames == Int((60_000.0 * 48_000 / 44_100).rounded(.up)), "\(firstFrames) frames of token 1")
    let joinStart = try #require(second.first?.startPosition)
    #expect(abs(joinStart - Double(firstFrames) * 44_100 / 48_000 + 60_000) < 1e-9, "token 2 starts at \(joinStart)")
    #expect(joinStart >= 0 && joinStart < 1)
    // Within each segment the blocks follow each other: no frame shown twice or skipped; and
    // they are whole blocks but for the last before the join and the end (short blocks would
    // make the ring hold less time).
    for run in [first, second] {
      #expect(run.dropLast().allSatisfy { $0.frames == DecodeAheadStream.framesPerBlock }, "\(run.map(\.frames))")
      for (earlier, later) in zip(run, run.dropFirst()) {
        let next = earlier.startPosition + Double(earlier.frames) * 44_100 / 48_000
        #expect(abs(later.startPosition - next) < 1e-6, "\(later.startPosition) after \(next)")
      }
    }
    let total = all.reduce(0) { $0 + $1.frames }
    #expect(abs(Double(total) - 68_000 * 48_000 / 44_100) <= 1, "\(total) frames in all")
  }

  @Test("A loop seam: the pass before the jump is not final, the jump goes back to the loop's start")
  func loopSeam() throws {
    let directory = try TemporaryDirectory()
    let path = try file44(in: directory, "a.ogg", seconds: 0.5)
    let loop = LoopRegion(start: 2_000, end: 9_000)
    let stream = DecodeAheadStream(
      first: try segment(path, token: 1, end: 12_000, loop: loop, loopCount: 1), startFrame: 0, mixRate: 48_000)
    defer { stream.stop() }
    let all = blocks(of: stream)
    let firstPass = all.prefix { !$0.finalPass }
    let afterJump = all.dropFirst(firstPass.count)
    let firstFrames = firstPass.reduce(0) { $0 + $1.frames }
    #expect(firstFrames == Int((9_000.0 * 48_000 / 44_100).rounded(.up)), "\(firstFrames) frames before the seam")
    let resumed = try #require(afterJump.first?.startPosition)
    #expect(resumed >= 2_000 && resumed < 2_001, "after the seam it shows frame \(resumed)")
    let total = all.reduce(0) { $0 + $1.frames }
    #expect(abs(Double(total) - Double(9_000 + 10_000) * 48_000 / 44_100) <= 1, "\(total) frames in all")
  }

  @Test("A seek starts a new signal: the first block shows the frame asked for, exactly")
  func seek() throws {
    let directory = try TemporaryDirectory()
    let path = try file44(in: directory, "a.ogg", seconds: 1)
    let stream = DecodeAheadStream(first: try segment(path, token: 1, end: 44_100), startFrame: 0, mixRate: 48_000)
    defer { stream.stop() }
    let generation = stream.requestSeek(token: 1, frame: 30_000)
    var found: DecodeAheadStream.Block?
    while let block = stream.peek(waitSeconds: 5, generation: generation) {
      stream.release()
      if block.generation == generation {
        found = block
        break
      }
    }
    let block = try #require(found)
    #expect(block.startPosition == 30_000)
  }
}

@Suite("A 44.1 kHz file in a 48 kHz mix: heard where its frames say, at rate 1 and at another rate")
struct ResampledTimingTests {
  /// Silence with one click, in both channels, at `clickFrame` of a 44.1 kHz file.
  func clickFile(in directory: TemporaryDirectory, clickFrame: Int) throws -> String {
    let path = directory.file("click44.ogg")
    let format = PCMFormat.stereo44100
    var samples = [Float](repeating: 0, count: 2 * 88_200)
    samples[2 * clickFrame] = 0.8
    samples[2 * clickFrame + 1] = 0.8
    try VorbisEncoder.encode(samples: samples, format: format, quality: 0.4, to: path)
    return path
  }

  func loudest(_ stereo: [Float]) -> Int {
    (0..<(stereo.count / 2)).max { abs(stereo[2 * $0]) < abs(stereo[2 * $1]) } ?? -1
  }

  @Test(
    "The click at file frame 30 000 is heard at mix frame 30 000 × 48 / 44.1, at rate 1 and at rate 1.25",
    arguments: [Float(1), 1.25])
  func click(rate: Float) throws {
    let directory = try TemporaryDirectory()
    let path = try clickFile(in: directory, clickFrame: 30_000)
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine, item: MediaItem(path: path))
    player.currentPlaybackRate = rate
    player.play()
    let output = EngineHarness.render(engine, seconds: 1.5)
    let expected = 30_000 * 48_000 / 44_100 / Double(rate)
    let heard = loudest(output)
    #expect(abs(Double(heard) - expected) <= 2, "heard at \(heard), expected \(expected)")
    // The reported position follows the file's frames.
    let seconds = Double(output.count / 2) / 48_000
    #expect(abs(player.currentPlaybackTime - seconds * Double(rate)) < 0.03, "at \(player.currentPlaybackTime)")
    player.stop()
  }
}
