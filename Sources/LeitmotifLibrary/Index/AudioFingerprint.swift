import Foundation
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
/// Cost: about 3 s of decoding per file (a few milliseconds), never the whole file.
package enum AudioFingerprint {
  static let windowSeconds = 1.5

  static func compute(_ decoder: any AudioDecoder) throws(DecodeError) -> UInt64 {
    var hasher = FNV1a()
    let length = decoder.lengthFrames
    let channels = decoder.format.channelCount
    hasher.add(UInt64(bitPattern: length))
    hasher.add(UInt64(decoder.format.sampleRate))
    hasher.add(UInt64(channels))
    let window = Int64(windowSeconds * Double(decoder.format.sampleRate))
    var starts: [Int64] = [0]
    if length > 2 * window { starts.append(length / 2) }
    let blockFrames = 4096
    var block = [Float](repeating: 0, count: blockFrames * channels)
    for start in starts {
      if start != 0 || decoder.cursorFrames != 0 { try decoder.seek(toFrame: start) }
      var remaining = Int(min(window, length - start))
      while remaining > 0 {
        let frames = try block.withUnsafeMutableBufferPointer { (pointer) throws(DecodeError) -> Int in
          try decoder.readFrames(into: pointer.baseAddress!, frameCapacity: min(blockFrames, remaining))
        }
        if frames == 0 { break }
        for index in 0..<(frames * channels) {
          let sample = Int16(max(-32_768, min(32_767, (block[index] * 32_767).rounded())))
          hasher.add16(UInt16(bitPattern: sample))
        }
        remaining -= frames
      }
    }
    return hasher.value
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
