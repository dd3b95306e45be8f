import CLeitmotifHeader
import Synchronization

/// The engines the C side holds, by handle. A handle is never a pointer to a Swift object: it
/// is an integer in a pointer's clothing, `tag | generation | slot`, so that any value a C
/// program passes (NULL, a handle of an engine already destroyed, garbage) is looked up, not
/// dereferenced, and an unknown one is an error code instead of a crash.
///
/// Layout of the 64 bits: the top 16 are `tag` ("LM", to turn away stray pointers), the next 32
/// the slot's generation (bumped when its engine is destroyed, so a stale handle never names the
/// engine that took the slot next), the low 16 the slot index plus one (a handle is never 0).
final class HandleTable: Sendable {
  static let shared = HandleTable()

  static let tag: UInt = 0x4C4D << 48
  static let capacity = 0xFFFF

  private struct Slot {
    var generation: UInt32 = 1
    var session: EngineSession?
  }

  private let slots = Mutex<(slots: [Slot], free: [Int])>(([], []))

  /// Registers `session` and returns its handle's bits.
  func insert(_ session: EngineSession) throws(CAPIError) -> UInt {
    let bits = slots.withLock { table -> UInt? in
      let index: Int
      if let reused = table.free.popLast() {
        index = reused
      } else if table.slots.count < Self.capacity {
        index = table.slots.count
        table.slots.append(Slot())
      } else {
        return nil
      }
      table.slots[index].session = session
      return Self.tag | UInt(table.slots[index].generation) << 16 | UInt(index + 1)
    }
    guard let bits else {
      throw CAPIError(LM_ERROR_TOO_MANY_ENGINES, "\(Self.capacity) engines are alive: destroy one first")
    }
    return bits
  }

  /// The live engine of `bits`, or nil for a handle that is not (or no longer) one.
  func lookup(_ bits: UInt) -> EngineSession? {
    guard let (index, generation) = Self.decode(bits) else { return nil }
    return slots.withLock { table in
      guard index < table.slots.count, table.slots[index].generation == generation else { return nil }
      return table.slots[index].session
    }
  }

  /// Takes the engine of `bits` out of the table: from now on its handle is stale.
  func remove(_ bits: UInt) -> EngineSession? {
    guard let (index, generation) = Self.decode(bits) else { return nil }
    return slots.withLock { table in
      guard index < table.slots.count, table.slots[index].generation == generation,
        let session = table.slots[index].session
      else { return nil }
      table.slots[index].session = nil
      // Wrapping after 2^32 destroys of one slot is the only way a stale handle could match again.
      table.slots[index].generation = generation == UInt32.max ? 1 : generation + 1
      table.free.append(index)
      return session
    }
  }

  private static func decode(_ bits: UInt) -> (index: Int, generation: UInt32)? {
    guard bits & (0xFFFF << 48) == tag else { return nil }
    let slot = Int(bits & 0xFFFF)
    guard slot > 0 else { return nil }
    return (slot - 1, UInt32(truncatingIfNeeded: bits >> 16))
  }
}
