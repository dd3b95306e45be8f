import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

/// What identifies a piece of music across renames, moves and tag edits: a 64-bit FNV-1a hash of
/// its decoded audio.
///
/// Hashed, in order: the length in frames, the sample rate and the channel count (8 bytes each,
/// little-endian), then the PCM of two windows of `windowSeconds` each: the start of the file,
/// and the middle (so two tracks that both open with the same silence or count-in still differ).
/// Samples are quantized to 16 bits before hashing, so a float rounding difference between
/// decoder builds does not change the identity. Tags are not decoded audio, so retagging keeps
/// the fingerprint; a re-encode changes it (the scanner then keeps the id by path).
///
/// Computed from the scan's one full decode (which also feeds the analysis): `Accumulator` is
/// given every block in order and hashes the frames that fall in the two windows. Sample-exact
/// seeks make this the same hash as seeking to the windows would give.
package enum AudioFingerprint {
  static let windowSeconds = 1.5

  /// The fingerprint of `decoder`'s audio, decoding only the two windows (about 3 s).
  static func compute(_ decoder: any AudioDecoder) throws(DecodeError) -> UInt64 {
    var accumulator = Accumulator(decoder: decoder)
    let channels = decoder.format.channelCount
    let blockFrames = 4096
    var block = [Float](repeating: 0, count: blockFrames * channels)
    for window in accumulator.windows {
      if window.lowerBound != decoder.cursorFrames { try decoder.seek(toFrame: window.lowerBound) }
      var frame = window.lowerBound
      while frame < window.upperBound {
        let frames = try block.withUnsafeMutableBufferPointer { (pointer) throws(DecodeError) -> Int in
          try decoder.readFrames(
            into: pointer.baseAddress!, frameCapacity: Int(min(Int64(blockFrames), window.upperBound - frame)))
        }
        if frames == 0 { break }
        block.withUnsafeBufferPointer { accumulator.add(startFrame: frame, samples: $0, frames: frames) }
        frame += Int64(frames)
      }
    }
    return accumulator.value
  }

  /// The hash, fed with blocks of the decode in order (any block size); `value` when done.
  struct Accumulator {
    private var hasher = FNV1a()
    private let channels: Int
    /// The frames hashed: the start of the file, and (for a file longer than two windows) its middle.
    let windows: [Range<Int64>]

    init(decoder: any AudioDecoder) {
      let length = decoder.lengthFrames
      channels = decoder.format.channelCount
      hasher.add(UInt64(bitPattern: length))
      hasher.add(UInt64(decoder.format.sampleRate))
      hasher.add(UInt64(channels))
      let window = Int64(AudioFingerprint.windowSeconds * Double(decoder.format.sampleRate))
      var windows = [0..<min(window, length)]
      if length > 2 * window { windows.append((length / 2)..<(length / 2 + window)) }
      self.windows = windows
    }

    mutating func add(startFrame: Int64, samples: UnsafeBufferPointer<Float>, frames: Int) {
      let block = startFrame..<(startFrame + Int64(frames))
      for window in windows where window.overlaps(block) {
        let from = Int(max(window.lowerBound, block.lowerBound) - startFrame)
        let to = Int(min(window.upperBound, block.upperBound) - startFrame)
        for index in (from * channels)..<(to * channels) {
          let sample = Int16(max(-32_768, min(32_767, (samples[index] * 32_767).rounded())))
          hasher.add16(UInt16(bitPattern: sample))
        }
      }
    }

    var value: UInt64 { hasher.value }
  }

  /// The 64-bit FNV-1a hash (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
  package struct FNV1a {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func add(byte: UInt8) {
      value ^= UInt64(byte)
      value &*= 0x100_0000_01b3
    }

    mutating func add16(_ number: UInt16) {
      add(byte: UInt8(truncatingIfNeeded: number))
      add(byte: UInt8(truncatingIfNeeded: number >> 8))
    }

    mutating func add(_ number: UInt64) {
      for shift in stride(from: 0, to: 64, by: 8) { add(byte: UInt8(truncatingIfNeeded: number >> UInt64(shift))) }
    }
  }
}
