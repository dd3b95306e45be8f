#if canImport(Glibc)
  import Glibc
#endif

/// A duck as the mixer plays it: down to `depth` (a gain) in a straight line over `attackFrames`,
/// held for `holdFrames`, back up to 1 over `releaseFrames`, from the mix frame it starts on.
///
/// Why in the mixer: a stinger on the beat is started by the mixer, on the frame where the music
/// reaches the beat (`StartTrigger`), found from the music's own position. A duck that goes with
/// it used to be the director's gain envelope, started where the director reckoned that beat,
/// forward from the last frame mixed: during a tempo or rate ramp that reckoning came out up to a
/// millisecond from the mixer's, and live (a lead behind) differently from offline, so the duck
/// of the same level differed by up to 3e-4. Started by the mixer with the stinger, on its frame,
/// it is the same frame in both, and each frame's level follows the formula (the director's
/// steps came every 5 ms, glided).
package struct DuckShape: Sendable, Equatable {
  package var depth: Float
  package var attackFrames: Int64
  package var holdFrames: Int64
  package var releaseFrames: Int64

  /// A duck `decibels` down (0 and above: no duck), with its times in seconds at `sampleRate`.
  package init(decibels: Double, attackSeconds: Double, holdSeconds: Double, releaseSeconds: Double, sampleRate: Int) {
    depth = Float(DuckShape.gain(decibels: decibels))
    func frames(_ seconds: Double) -> Int64 {
      seconds.isFinite && seconds > 0 ? Int64((seconds * Double(sampleRate)).rounded()) : 0
    }
    attackFrames = frames(attackSeconds)
    holdFrames = frames(holdSeconds)
    releaseFrames = frames(releaseSeconds)
  }

  /// The gain of a duck `decibels` down (0 dB and above: 1).
  package static func gain(decibels: Double) -> Double {
    guard decibels.isFinite else { return decibels < 0 ? 0 : 1 }
    return pow(10, min(0, decibels) / 20)
  }

  var lengthFrames: Int64 { attackFrames + holdFrames + releaseFrames }

  /// The gain `elapsed` frames after the duck's start (1 before it and after it is over).
  func gain(elapsed: Int64) -> Float {
    if elapsed <= 0 { return 1 }
    if elapsed < attackFrames { return 1 + (depth - 1) * Float(Double(elapsed) / Double(attackFrames)) }
    if elapsed < attackFrames + holdFrames { return depth }
    let releasing = elapsed - attackFrames - holdFrames
    if releasing < releaseFrames { return depth + (1 - depth) * Float(Double(releasing) / Double(releaseFrames)) }
    return 1
  }
}

/// The ducks under way, each on a group of voices (a queue player's music: `Voice.duckGroup`).
/// Where ducks overlap in one group, the deepest counts at each frame (two hits close together
/// do not duck twice as deep). Streaming thread only. Its storage is allocated once, for
/// `capacity` ducks, so starting and ending ducks allocates nothing (a further one replaces the
/// one that ends first); the streaming loop that owns it frees it (`deallocate`).
struct DuckSet {
  struct Duck {
    var group: UInt32
    var start: Int64
    var shape: DuckShape
    var end: Int64 { start + shape.lengthFrames }
  }

  static let capacity = 32
  private let ducks = UnsafeMutablePointer<Duck>.allocate(capacity: DuckSet.capacity)
  private(set) var count = 0

  var isEmpty: Bool { count == 0 }

  func deallocate() { ducks.deallocate() }

  /// Starts a duck of `group` on mix frame `start`.
  mutating func start(group: UInt32, at start: Int64, shape: DuckShape) {
    guard group != 0, shape.depth < 1, shape.lengthFrames > 0 else { return }
    let duck = Duck(group: group, start: start, shape: shape)
    if count < Self.capacity {
      (ducks + count).initialize(to: duck)
      count += 1
      return
    }
    var first = 0
    for index in 1..<count where ducks[index].end < ducks[first].end { first = index }
    ducks[first] = duck
  }

  /// Forgets the ducks that are over by mix frame `clock`.
  mutating func dropFinished(by clock: Int64) {
    var index = 0
    while index < count {
      if ducks[index].end <= clock {
        count -= 1
        ducks[index] = ducks[count]
      } else {
        index += 1
      }
    }
  }

  /// Whether a duck of `group` moves the gain anywhere in mix frames `from ..< from + count`.
  func touches(group: UInt32, from: Int64, count frames: Int) -> Bool {
    guard group != 0 else { return false }
    for index in 0..<count {
      let duck = ducks[index]
      if duck.group == group && duck.start < from + Int64(frames) && duck.end > from { return true }
    }
    return false
  }

  /// The gains of `group` for mix frames `from ..< from + count`, into `gains`.
  func fill(_ gains: UnsafeMutablePointer<Float>, group: UInt32, from: Int64, count frames: Int) {
    gains.initialize(repeating: 1, count: frames)
    for index in 0..<count {
      let duck = ducks[index]
      guard duck.group == group && duck.start < from + Int64(frames) && duck.end > from else { continue }
      let first = max(0, Int(duck.start - from))
      let last = min(frames, Int(duck.end - from))
      for frame in first..<last {
        let gain = duck.shape.gain(elapsed: from + Int64(frame) - duck.start)
        if gain < gains[frame] { gains[frame] = gain }
      }
    }
  }
}
