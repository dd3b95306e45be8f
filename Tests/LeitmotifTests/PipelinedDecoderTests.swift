import Foundation
import LeitmotifFixtures
import Testing

@testable import LeitmotifDecoding
@testable import LeitmotifEngine

/// `PipelinedDecoder`: an offline engine reads a file its stream resamples through it, decoding
/// the next chunk on another core. It must give exactly what the decoder it wraps gives. (The
/// whole path, through an offline engine, is `PreloadTests`' "preloaded equals streamed" at
/// 44.1 and 22.05 kHz: the streamed side is pipelined there, the preloaded one is not.)
@Suite("Pipelined decoding")
struct PipelinedDecoderTests {
  /// Reads `capacity` frames (or to the end) from each and says whether they gave the same.
  private static func readBoth(
    _ plain: any AudioDecoder, _ pipelined: PipelinedDecoder, capacity: Int
  ) throws -> (same: Bool, frames: Int) {
    let channels = plain.format.channelCount
    var a = [Float](repeating: 1, count: capacity * channels)
    var b = [Float](repeating: 2, count: capacity * channels)
    var gotA = 0
    var gotB = 0
    // A decoder may return fewer frames than asked (a Vorbis packet at a time): read to capacity.
    while gotA < capacity {
      let read = try a.withUnsafeMutableBufferPointer {
        try plain.readFrames(into: $0.baseAddress! + gotA * channels, frameCapacity: capacity - gotA)
      }
      if read == 0 { break }
      gotA += read
    }
    while gotB < capacity {
      let read = try b.withUnsafeMutableBufferPointer {
        try pipelined.readFrames(into: $0.baseAddress! + gotB * channels, frameCapacity: capacity - gotB)
      }
      if read == 0 { break }
      gotB += read
    }
    let same =
      gotA == gotB && a[0..<(gotA * channels)] == b[0..<(gotB * channels)]
      && plain.cursorFrames == pipelined.cursorFrames
    return (same, gotA)
  }

  @Test(
    "Frame for frame what the wrapped decoder gives: across chunk edges, after seeks back and forth, to the end",
    arguments: [PCMFormat.stereo44100, PCMFormat.mono22050])
  func sameFrames(format: PCMFormat) throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-pipelined")
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 3, frequency: 523, format: format)
    let plain = try AudioFile.openDecoder(path: path)
    let pipelined = PipelinedDecoder(try AudioFile.openDecoder(path: path))
    #expect(pipelined.lengthFrames == plain.lengthFrames && pipelined.format == plain.format)
    let chunk = PipelinedDecoder.chunkFrames
    // Small and large reads, one across two chunk edges, seeks into the middle of a chunk and
    // back to the start.
    var steps: [(seek: Int64?, capacity: Int)] = [
      (nil, 1000), (nil, 4096), (nil, chunk * 2 + 17), (nil, 333), (50_000, 700), (nil, chunk), (0, 5), (nil, 9_000),
      (Int64(format.sampleRate) * 2, chunk + 1),
    ]
    steps.append((nil, Int(plain.lengthFrames)))  // the rest
    for (index, step) in steps.enumerated() {
      if let frame = step.seek {
        try plain.seek(toFrame: frame)
        try pipelined.seek(toFrame: frame)
      }
      let (same, frames) = try Self.readBoth(plain, pipelined, capacity: step.capacity)
      #expect(
        same,
        "step \(index): \(frames) frames differ, or the cursors (\(plain.cursorFrames), \(pipelined.cursorFrames))")
    }
    #expect(pipelined.cursorFrames == plain.lengthFrames)
    // At the end: nothing more, and a seek back plays again.
    var one = [Float](repeating: 0, count: 2)
    #expect(
      try one.withUnsafeMutableBufferPointer { try pipelined.readFrames(into: $0.baseAddress!, frameCapacity: 1) } == 0)
    try plain.seek(toFrame: 10)
    try pipelined.seek(toFrame: 10)
    #expect(try Self.readBoth(plain, pipelined, capacity: chunk).same)
  }

  /// Gives frames 0, 1, 2, ... as their own numbers (mono) and fails at `failsAt`.
  final class FailsPartWay: AudioDecoder {
    let failsAt: Int64
    private(set) var cursorFrames: Int64 = 0
    init(failsAt: Int64) { self.failsAt = failsAt }
    var path: String { "/music/damaged.ogg" }
    var containerFormat: ContainerFormat { .vorbis }
    var format: AudioFormat { AudioFormat(sampleRate: 44_100, channelCount: 1) }
    var lengthFrames: Int64 { 10 * failsAt }
    var tags: AudioTags { AudioTags() }
    var artwork: Artwork? { nil }
    var warnings: [String] { [] }
    func readFrames(into buffer: UnsafeMutablePointer<Float>, frameCapacity: Int) throws(DecodeError) -> Int {
      guard cursorFrames < failsAt else { throw DecodeError(path: path, reason: .corrupt("a hole at \(cursorFrames)")) }
      let frames = Int(min(Int64(min(frameCapacity, 1000)), failsAt - cursorFrames))
      for index in 0..<frames { buffer[index] = Float(cursorFrames + Int64(index)) }
      cursorFrames += Int64(frames)
      return frames
    }
    func seek(toFrame frame: Int64) throws(DecodeError) { cursorFrames = frame }
  }

  @Test(
    "A failure comes after every frame that decoded before it, then the end; a seek reads again",
    // In the first read (straight from the decoder), in the first chunk, in the second.
    arguments: [500, 6_000, PipelinedDecoder.chunkFrames + 2_500])
  func failureInOrder(failsAt: Int) throws {
    let failsAt = Int64(failsAt)
    let pipelined = PipelinedDecoder(FailsPartWay(failsAt: failsAt))
    var buffer = [Float](repeating: -1, count: 4096)
    var frames: [Float] = []
    var failure: DecodeError?
    while failure == nil {
      do {
        let read = try buffer.withUnsafeMutableBufferPointer {
          try pipelined.readFrames(into: $0.baseAddress!, frameCapacity: 4096)
        }
        if read == 0 { break }
        frames += buffer[0..<read]
      } catch let error as DecodeError {
        failure = error
      }
    }
    #expect(frames.count == Int(failsAt))
    #expect(frames.enumerated().allSatisfy { Float($0.offset) == $0.element })
    guard case .corrupt(let why) = failure?.reason else {
      Issue.record("expected the damage, got \(String(describing: failure))")
      return
    }
    #expect(why == "a hole at \(failsAt)")
    #expect(pipelined.cursorFrames == failsAt)
    #expect(
      try buffer.withUnsafeMutableBufferPointer { try pipelined.readFrames(into: $0.baseAddress!, frameCapacity: 10) }
        == 0)
    try pipelined.seek(toFrame: 7)
    let read = try buffer.withUnsafeMutableBufferPointer {
      try pipelined.readFrames(into: $0.baseAddress!, frameCapacity: 3)
    }
    #expect(read == 3 && Array(buffer[0..<3]) == [7, 8, 9])
  }
}
