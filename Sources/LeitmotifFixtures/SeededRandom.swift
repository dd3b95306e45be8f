/// SplitMix64 (Steele, Lea and Flood 2014): a tiny, fast, seeded random number generator whose
/// output is the same on every machine and every run. Tests and fixtures use it wherever they need
/// "random" data, so a failure can be replayed from its seed.
///
/// SplitMix64 is counter-based: value `n` is a pure function of `seed + n * gamma`, which is what
/// lets `ToneGenerator.whiteNoise` start at any frame and still give the same samples.
///
/// Not cryptographic. Thread safety: a value type; each copy advances on its own.
public struct SplitMix64: RandomNumberGenerator, Sendable {
  public private(set) var state: UInt64

  public init(seed: UInt64) { state = seed }

  /// The golden-ratio increment.
  static let gamma: UInt64 = 0x9E37_79B9_7F4A_7C15

  public mutating func next() -> UInt64 {
    state &+= Self.gamma
    return Self.mix(state)
  }

  /// The `index`-th output (0-based) of a generator seeded with `seed`, without stepping through
  /// the ones before it.
  public static func value(seed: UInt64, index: UInt64) -> UInt64 {
    mix(seed &+ (index &+ 1) &* gamma)
  }

  @inline(__always)
  static func mix(_ value: UInt64) -> UInt64 {
    var z = value
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// A uniformly distributed Float in [-1, 1).
  @inline(__always)
  static func unitFloat(_ bits: UInt64) -> Float {
    // The top 24 bits give every Float in [0, 1) on a 2^-24 grid exactly.
    Float(bits >> 40) * (1.0 / 16_777_216.0) * 2 - 1
  }
}
