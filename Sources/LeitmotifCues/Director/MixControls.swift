import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

#if canImport(Glibc)
  import Glibc
#endif

/// A level moving in a straight line from one value to another over a stretch of director time:
/// volume and rate changes, parameter ramps, fades around pause, stop and seek.
struct Ramp: Sendable {
  private(set) var from: Double
  private(set) var to: Double
  private(set) var start: Double = 0
  private(set) var duration: Double = 0
  /// The shape of the move (linear unless a move says otherwise: a state's fade-in follows its
  /// transition's curve).
  private(set) var curve: FadeCurve = .linear

  init(_ value: Double) {
    from = value
    to = value
  }

  func value(at time: Double) -> Double {
    guard duration > 0, time < start + duration else { return to }
    guard time > start else { return from }
    let progress = (time - start) / duration
    if curve == .linear { return from + (to - from) * progress }
    return to >= from
      ? from + (to - from) * curve.fadeInGain(progress) : to + (from - to) * curve.fadeOutGain(progress)
  }

  func isMoving(at time: Double) -> Bool { duration > 0 && time < start + duration }

  /// Heads for `target` from wherever it is at `time`, arriving `seconds` later.
  mutating func move(to target: Double, over seconds: Double, at time: Double, curve: FadeCurve = .linear) {
    from = value(at: time)
    to = target
    start = time
    duration = max(0, seconds)
    self.curve = curve
  }

  mutating func set(_ value: Double) {
    from = value
    to = value
    duration = 0
  }
}
