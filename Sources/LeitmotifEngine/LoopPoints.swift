import LeitmotifDecoding
import LeitmotifOutput

/// A loop inside an item, in sample frames of the file (sample-exact, like the LOOPSTART and
/// LOOPLENGTH tags games write). Playback jumps from `endFrame` back to `startFrame`.
public struct LoopPoints: Sendable, Equatable, Hashable {
  /// The loop's first frame.
  public let startFrame: Int64
  /// The frame just after the loop's last one; nil loops to the end of the file.
  public let endFrame: Int64?

  /// The shortest loop: 256 frames (5.8 ms at 44.1 kHz). Each pass of a loop is a seek back in
  /// the file, and a seek costs what decoding a few hundred frames does: a 10-frame loop played
  /// slower than real time, a 1-frame one never got through a render. No music loops that short.
  /// LOOPSTART/LOOPLENGTH tags of a shorter loop are ignored (the file plays straight through).
  public static let minimumFrames: Int64 = 256

  /// - Throws: `QueueError.invalidLoopPoints` for a negative start or a loop shorter than
  ///   `minimumFrames`. (Points beyond the file's end are found when the file is opened: the
  ///   item then fails with `DecodeError.Reason.pointsOutsideFile`, or earlier when its duration
  ///   is known; so is a loop to the end that is too short.)
  public init(startFrame: Int64, endFrame: Int64? = nil) throws(QueueError) {
    guard startFrame >= 0 else { throw QueueError.invalidLoopPoints("the loop start \(startFrame) is negative") }
    if let endFrame, endFrame <= startFrame {
      throw QueueError.invalidLoopPoints("the loop \(startFrame)..<\(endFrame) has zero or negative length")
    }
    if let endFrame, endFrame - startFrame < Self.minimumFrames {
      throw QueueError.invalidLoopPoints(
        "the loop \(startFrame)..<\(endFrame) is \(endFrame - startFrame) frames long: a loop needs at least \(Self.minimumFrames)"
      )
    }
    self.startFrame = startFrame
    self.endFrame = endFrame
  }

  /// From LOOPSTART and LOOPLENGTH values (frames).
  public init(loopStart: Int64, loopLength: Int64) throws(QueueError) {
    guard loopLength > 0 else { throw QueueError.invalidLoopPoints("LOOPLENGTH \(loopLength) must be positive") }
    try self.init(startFrame: loopStart, endFrame: loopStart + loopLength)
  }
}

/// How many times an item with loop points loops before it plays its outro.
public enum LoopRepeat: Sendable, Equatable, Hashable {
  /// Ignore the loop: play straight through.
  case off
  /// Jump back from the loop's end to its start this many times (the loop body is heard n + 1
  /// times), then play on to the end.
  case times(Int)
  /// Loop until `QueuePlayer.releaseLoop()`, then play the outro. Game music's usual choice.
  case untilReleased

  package var count: Int? {
    switch self {
    case .off: return 0
    case .times(let n): return n
    case .untilReleased: return nil
    }
  }
}
