import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

#if canImport(Glibc)
  import Glibc
#endif

/// The game's parameter sets waiting for the director's next step: one fixed slot per
/// parameter of the cue file, found by the name's UTF-8 bytes. A set copies two numbers into
/// its slot (the last set of a parameter before a step wins), so setting a parameter from a
/// game's audio callback or frame loop allocates nothing and takes only this lock, which the
/// director's step holds just long enough to take the slots.
///
/// Names the cue file lacks (from the Swift API, which reports them at the step rather than
/// refusing them) wait in `unknown`, which does allocate.
struct ParameterInbox {
  struct Pending {
    var value: Double
    var ramp: Double
  }

  private(set) var names: [String] = []
  private var bytes: [[UInt8]] = []
  private var ranges: [ClosedRange<Double>] = []
  private var pending: [Pending?] = []
  private var unknown: [(name: String, value: Double, ramp: Double)] = []

  /// Slots for `sheet`'s parameters; sets still waiting for a parameter the new sheet keeps stay.
  mutating func adopt(_ sheet: CueSheet) {
    let kept = Dictionary(
      zip(names, pending).compactMap { name, set in set.map { (name, $0) } }, uniquingKeysWith: { $1 })
    names = sheet.parameters.map(\.name)
    bytes = names.map { Array($0.utf8) }
    ranges = sheet.parameters.map { min($0.minimum, $0.maximum)...max($0.minimum, $0.maximum) }
    pending = names.map { kept[$0] }
  }

  /// The slot of the parameter whose name is `name`'s bytes, or nil. No allocation.
  func index(of name: UnsafeRawBufferPointer) -> Int? {
    var index = 0
    while index < bytes.count {
      let candidate = bytes[index]
      if candidate.count == name.count
        && candidate.withUnsafeBytes({ memcmp($0.baseAddress!, name.baseAddress!, name.count) == 0 })
      {
        return index
      }
      index += 1
    }
    return nil
  }

  /// Sets slot `index` (from `index(of:)`). No allocation.
  mutating func set(_ index: Int, value: Double, ramp: Double) {
    pending[index] = Pending(value: value, ramp: ramp)
  }

  /// A set by name from Swift: a known name takes its slot, another waits to be reported.
  mutating func set(_ name: String, value: Double, ramp: Double) {
    if let index = names.firstIndex(of: name) {
      pending[index] = Pending(value: value, ramp: ramp)
    } else {
      unknown.append((name, value, ramp))
    }
  }

  /// The value a set without a ramp gives `name` before the director's step applies it
  /// (clamped to the cue file's range), or nil when none waits.
  func unrampedValue(of name: String) -> Double? {
    guard let index = names.firstIndex(of: name), let set = pending[index], set.ramp == 0, set.value.isFinite else {
      return nil
    }
    return min(ranges[index].upperBound, max(ranges[index].lowerBound, set.value))
  }

  /// Takes every waiting set, for the director's step: unknown names first (in the order set),
  /// then the parameters in the cue file's order.
  mutating func take() -> [(name: String, value: Double, ramp: Double)] {
    var taken = unknown
    unknown.removeAll(keepingCapacity: true)
    for index in pending.indices {
      guard let set = pending[index] else { continue }
      taken.append((names[index], set.value, set.ramp))
      pending[index] = nil
    }
    return taken
  }
}
