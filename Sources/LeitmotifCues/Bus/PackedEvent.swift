import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

/// An event as bytes in a bus slot's own fixed area: how a poster that must not allocate (the C
/// API's `lm_post`, called from a game's audio callback or its frame loop) hands over a cue and
/// its payload. The poster copies its strings in (``PackedEventWriter``); the consumer, the
/// director, makes the `LevelEvent` from them on its own thread (`unpack(_:)`, internal).
///
/// Layout, every integer little-endian and unaligned:
///
///     u16 cue length, the cue's UTF-8 bytes, u16 value count, then per value:
///     u8 type (0 number, 1 string, 2 boolean), u16 key length, the key's bytes, and
///     number: 8 bytes (a Double's bits) | string: u16 length, its bytes | boolean: 1 byte
public enum PackedEvent {
  /// The bytes an event takes before its values.
  public static func size(cueLength: Int) -> Int { 4 + cueLength }
  /// The bytes each value adds.
  public static func numberSize(keyLength: Int) -> Int { 3 + keyLength + 8 }
  public static func stringSize(keyLength: Int, stringLength: Int) -> Int { 3 + keyLength + 2 + stringLength }
  public static func boolSize(keyLength: Int) -> Int { 3 + keyLength + 1 }

  /// The cue and payload packed in `bytes`; nil if they do not parse (which a writer that
  /// follows the layout never makes) or are not UTF-8.
  static func unpack(_ bytes: UnsafeRawBufferPointer) -> (cue: String, payload: CuePayload)? {
    var reader = Reader(bytes: bytes)
    guard let cue = reader.string(), let count = reader.u16() else { return nil }
    var payload: CuePayload = [:]
    for _ in 0..<count {
      guard let type = reader.u8(), let key = reader.string() else { return nil }
      switch type {
      case 0:
        guard let bits = reader.u64() else { return nil }
        payload[key] = .number(Double(bitPattern: bits))
      case 1:
        guard let value = reader.string() else { return nil }
        payload[key] = .string(value)
      case 2:
        guard let value = reader.u8() else { return nil }
        payload[key] = .bool(value != 0)
      default: return nil
      }
    }
    return (cue, payload)
  }

  private struct Reader {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    mutating func take(_ count: Int) -> UnsafeRawBufferPointer? {
      guard offset + count <= bytes.count else { return nil }
      defer { offset += count }
      return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
    }

    mutating func u8() -> UInt8? { take(1).map { $0[0] } }
    mutating func u16() -> Int? { take(2).map { Int($0[0]) | Int($0[1]) << 8 } }
    mutating func u64() -> UInt64? {
      take(8).map { raw in (0..<8).reduce(UInt64(0)) { $0 | UInt64(raw[$1]) << (8 * UInt64($1)) } }
    }
    mutating func string() -> String? {
      guard let length = u16(), let raw = take(length) else { return nil }
      return String(validating: raw.bindMemory(to: UInt8.self), as: UTF8.self)
    }
  }
}

/// Writes an event into the bytes a bus slot lent for it (`LevelEventBus.post(packedSize:_:)`),
/// in ``PackedEvent``'s layout. Copies only: no allocation, no locks. The sizes were checked
/// before (the bus lends exactly the size asked for; writing past it stops the program).
public struct PackedEventWriter: ~Copyable {
  private let bytes: UnsafeMutableRawBufferPointer
  private var offset = 0

  init(_ bytes: UnsafeMutableRawBufferPointer) { self.bytes = bytes }

  /// The cue, then how many values follow.
  public mutating func begin(cue: UnsafeRawBufferPointer, valueCount: Int) {
    string(cue)
    u16(valueCount)
  }

  public mutating func number(key: UnsafeRawBufferPointer, _ value: Double) {
    u8(0)
    string(key)
    var bits = value.bitPattern
    var byte = 0
    while byte < 8 {
      u8(UInt8(truncatingIfNeeded: bits))
      bits >>= 8
      byte += 1
    }
  }

  public mutating func string(key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
    u8(1)
    string(key)
    string(value)
  }

  public mutating func bool(key: UnsafeRawBufferPointer, _ value: Bool) {
    u8(2)
    string(key)
    u8(value ? 1 : 0)
  }

  private mutating func u8(_ value: UInt8) {
    precondition(offset < bytes.count, "PackedEventWriter: more bytes written than the size given")
    bytes[offset] = value
    offset += 1
  }

  private mutating func u16(_ value: Int) {
    u8(UInt8(truncatingIfNeeded: value))
    u8(UInt8(truncatingIfNeeded: value >> 8))
  }

  private mutating func string(_ value: UnsafeRawBufferPointer) {
    precondition(value.count <= 0xFFFF && offset + 2 + value.count <= bytes.count, "PackedEventWriter: too long")
    u16(value.count)
    if value.count > 0 {
      UnsafeMutableRawBufferPointer(rebasing: bytes[offset..<offset + value.count]).copyMemory(from: value)
    }
    offset += value.count
  }
}
