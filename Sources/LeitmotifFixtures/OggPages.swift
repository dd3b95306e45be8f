/// Ogg page surgery for damaged-file tests and the mutation benchmark.
public enum OggPages {
  /// Recomputes the CRC of every Ogg page it can walk (CRC-32, polynomial 0x04C11DB7, no
  /// reflection, computed with the CRC field zeroed), so mutated pages pass libogg's check and
  /// the damage reaches libvorbis.
  public static func fixChecksums(_ bytes: inout [UInt8]) {
    var offset = 0
    while offset + 27 <= bytes.count, bytes[offset..<(offset + 4)].elementsEqual("OggS".utf8) {
      let segments = Int(bytes[offset + 26])
      guard offset + 27 + segments <= bytes.count else { return }
      let bodyLength = bytes[(offset + 27)..<(offset + 27 + segments)].reduce(0) { $0 + Int($1) }
      let end = offset + 27 + segments + bodyLength
      guard end <= bytes.count else { return }
      for index in 22..<26 { bytes[offset + index] = 0 }
      var crc: UInt32 = 0
      for byte in bytes[offset..<end] {
        crc ^= UInt32(byte) << 24
        for _ in 0..<8 { crc = (crc & 0x8000_0000) != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
      }
      for index in 0..<4 { bytes[offset + 22 + index] = UInt8((crc >> (8 * UInt32(index))) & 0xFF) }
      offset = end
    }
  }
}
