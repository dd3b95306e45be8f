import Foundation
import LeitmotifFixtures
import Testing

@testable import LeitmotifOutput

/// The WAV writer writes through a buffer of its own (256 KB): what goes in comes back out, across
/// the buffer's seams, in both sample formats; a file it cannot create is a typed error.
@Suite("WAV writer")
struct WAVWriterTests {
  /// 300,001 stereo frames (2.4 MB of float, 1.2 MB of 16-bit) in uneven writes, so flushes
  /// fall mid-write; values reach past ±1 (clamped) and include exact halves (rounding).
  static func samples() -> [Float] {
    (0..<600_002).map { index in
      switch index % 7 {
      case 0: return 1.5
      case 1: return -1.25
      case 2: return Float(index % 65_535 - 32_767) / 32_767
      case 3: return (Float(index % 200) + 0.5) / 32_767
      default: return sin(Float(index) * 0.001) * 0.8
      }
    }
  }

  static func write(_ samples: [Float], format: WAVSampleFormat, to path: String) throws {
    let writer = try WAVWriter(path: path, sampleRate: 48_000, channelCount: 2, sampleFormat: format)
    var frame = 0
    var step = 1
    let frames = samples.count / 2
    try samples.withUnsafeBufferPointer { all in
      while frame < frames {
        let count = min(step, frames - frame)
        try writer.write(UnsafeBufferPointer(rebasing: all[(2 * frame)..<(2 * (frame + count))]), frameCount: count)
        frame += count
        step = step * 3 % 40_000 + 1
      }
    }
    try writer.finish()
  }

  @Test("float and 16-bit files read back as written, across the buffer's seams")
  func roundTrip() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-wav")
    let samples = Self.samples()
    try Self.write(samples, format: .float32, to: directory.file("f.wav"))
    let float = try WAVFile(path: directory.file("f.wav"))
    #expect(float.frameCount == samples.count / 2)
    #expect(float.samples == samples)

    try Self.write(samples, format: .int16, to: directory.file("s.wav"))
    let int = try WAVFile(path: directory.file("s.wav"))
    #expect(int.frameCount == samples.count / 2)
    // Each sample clamped, scaled by 32767 and rounded half away from zero (Float.rounded()).
    let expected = samples.map { Float(Int16((max(-1, min(1, $0)) * 32767).rounded())) / 32767 }
    let wrong = zip(int.samples, expected).filter { abs($0 - $1) > 1e-6 }.count
    #expect(wrong == 0, "\(wrong) samples differ from clamp, scale and round")
  }

  @Test("16-bit conversion: the same samples as clamping, scaling and rounding one by one in Double")
  func int16MatchesTheReference() {
    // The conversion as it was written first: Swift's min and max (NaN clamps to 1), the Float
    // product, rounded half away from zero in Double.
    func reference(_ x: Float) -> Int16 {
      let scaled = Double(max(-1, min(1, x)) * 32767)
      return Int16(scaled < 0 ? scaled - 0.5 : scaled + 0.5)
    }
    var special: [Float] = [
      0, -0.0, 1, -1, 1.0001, -1.0001, .infinity, -.infinity, .nan, -.nan, .greatestFiniteMagnitude,
      .leastNonzeroMagnitude, -.leastNonzeroMagnitude, 0.5 / 32767, -0.5 / 32767, 1.5 / 32767, 32766.5 / 32767,
    ]
    // Every value whose product lands on a half, and its neighbours.
    for whole in stride(from: -32767, through: 32766, by: 1) {
      let half = (Float(whole) + 0.5) / 32767
      special += [half, half.nextUp, half.nextDown]
    }
    var generator = SplitMix64(seed: 7)
    var values: [Float] = []
    var mismatches: [(Float, Int16, Int16)] = []
    for index in 0..<(special.count + 2_000_000) {
      // Then random bit patterns below 2 in size (every exponent that matters), and evenly
      // spread values over [-1.2, 1.2].
      let random = generator.next()
      let x =
        index < special.count
        ? special[index]
        : index % 2 == 0
          ? Float(bitPattern: UInt32(truncatingIfNeeded: random) & 0xBFFF_FFFF)
          : Float(random % 2_400_001) / 1_000_000 - 1.2
      values.append(x)
      let (got, want) = (WAVWriter.int16Sample(x), reference(x))
      if got != want && mismatches.count < 10 { mismatches.append((x, got, want)) }
    }
    #expect(mismatches.isEmpty, "\(mismatches)")

    // The vector conversion the writer uses gives the same, eight at a time and in the tail
    // (an odd count leaves a tail of 3).
    var converted = [Int16](repeating: 0, count: values.count - 5)
    values.withUnsafeBufferPointer { input in
      converted.withUnsafeMutableBufferPointer { output in
        WAVWriter.convertToInt16(input.baseAddress!, output.baseAddress!, count: output.count)
      }
    }
    let vectorMismatches = converted.indices.filter { Int16(littleEndian: converted[$0]) != reference(values[$0]) }
    #expect(vectorMismatches.isEmpty, "\(vectorMismatches.prefix(10).map { (values[$0], converted[$0]) })")
  }

  @Test("a file that cannot be created is a WAVWriteError with the system's reason")
  func cannotCreate() throws {
    let path = "/nonexistent-leitmotif-dir/out.wav"
    #expect {
      _ = try WAVWriter(path: path, sampleRate: 48_000, channelCount: 2, sampleFormat: .float32)
    } throws: { error in
      guard let error = error as? WAVWriteError else { return false }
      return error.path == path && error.description == "No such file or directory"
    }
  }
}
