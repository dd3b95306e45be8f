import LeitmotifDecoding
import LeitmotifOutput

/// A gain that moves from one level to another over a stretch of mix frames, along a curve: the
/// mixer's crossfades and transport ramps, evaluated per frame. Rising, it follows the curve's
/// fade-in from `from`; falling, the curve's fade-out towards `to`, so a fade can start at
/// whatever level is heard now (a skip in the middle of a crossfade) without a jump. Before its
/// start it holds `from`; after its end, `to`.
package struct FadeEnvelope {
  var from: Float = 1
  var to: Float = 1
  var startFrame: Int64 = 0
  var durationFrames: Int64 = 0
  var curve: FadeCurve = .linear

  static let unity = FadeEnvelope()

  var endFrame: Int64 { startFrame + durationFrames }

  /// A fade of no length is a step: `from` before `startFrame`, `to` from it on.
  func gain(at frame: Int64) -> Float {
    guard durationFrames > 0 else { return frame >= startFrame ? to : from }
    guard frame < endFrame else { return to }
    guard frame > startFrame else { return from }
    let progress = Double(frame - startFrame) / Double(durationFrames)
    if curve == .linear { return from + (to - from) * Float(progress) }
    if to >= from {
      return from + (to - from) * Float(curve.fadeInGain(progress))
    } else {
      return to + (from - to) * Float(curve.fadeOutGain(progress))
    }
  }

  func isFinished(at frame: Int64) -> Bool { durationFrames == 0 || frame >= endFrame }

  /// Whether the gain is the same for every frame of `frame ..< frame + count`.
  func isConstant(from frame: Int64, count: Int) -> Bool {
    from == to || frame >= endFrame || frame + Int64(count) <= startFrame
  }
}
