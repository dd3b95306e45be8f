import LeitmotifDecoding
import LeitmotifOutput

/// A gain that moves from one level to another over a stretch of mix frames, along a curve: the
/// mixer's crossfades and transport ramps, evaluated per frame. Rising, it follows the curve's
/// fade-in from `from`; falling, the curve's fade-out towards `to`, so a fade can start at
/// whatever level is heard now (a skip in the middle of a crossfade) without a jump. Before its
/// start it holds `from`, or, when it was set to follow another fade (`following`), goes on
/// along that one; after its end, `to`.
package struct FadeEnvelope {
  var from: Float = 1
  var to: Float = 1
  var startFrame: Int64 = 0
  var durationFrames: Int64 = 0
  var curve: FadeCurve = .linear
  /// What the gain does before `startFrame`: the fade that was running when this one was set for
  /// a later frame (nil: it holds `from`).
  private(set) var lead: Lead?

  /// The fade that runs until a later one starts: its own levels and frames, without a lead.
  struct Lead {
    var from: Float
    var to: Float
    var startFrame: Int64
    var durationFrames: Int64
    var curve: FadeCurve

    var endFrame: Int64 { startFrame + durationFrames }

    func gain(at frame: Int64) -> Float {
      FadeEnvelope.gain(
        at: frame, from: from, to: to, startFrame: startFrame, durationFrames: durationFrames, curve: curve)
    }

    func isConstant(from frame: Int64, count: Int) -> Bool {
      FadeEnvelope.isConstant(from: frame, count: count, from: from, to: to, startFrame: startFrame, endFrame: endFrame)
    }
  }

  static let unity = FadeEnvelope()

  init() {}

  init(from: Float, to: Float, startFrame: Int64, durationFrames: Int64, curve: FadeCurve = .linear) {
    self.from = from
    self.to = to
    self.startFrame = startFrame
    self.durationFrames = durationFrames
    self.curve = curve
  }

  /// A fade to `to` from mix frame `startFrame` on, from the level `previous` has there; until
  /// then the gain goes on along `previous`. `now`: the first frame still to be mixed.
  ///
  /// Why: a crossfade's outgoing music holds through the incoming pickup and fades seconds
  /// later. Set as a plain fade, its gain jumped at once to its level at the fade's start: music
  /// still fading in from an earlier crossfade went from 0.76 to full on the mix block in which
  /// the new change was taken, a step that also fell on another frame live than offline (the
  /// blocks differ).
  static func following(
    _ previous: FadeEnvelope, to: Float, startFrame: Int64, durationFrames: Int64, curve: FadeCurve, now: Int64
  ) -> FadeEnvelope {
    var envelope = FadeEnvelope(
      from: previous.gain(at: startFrame), to: to, startFrame: startFrame, durationFrames: durationFrames,
      curve: curve)
    guard startFrame > now else { return envelope }
    // Replacing a fade that has not begun, from no later than it would have: what ran before it
    // runs on. Otherwise the previous fade itself leads (a fade replaced by a later one before it
    // began, which is rare, drops its own lead: its level holds until it starts).
    let replacesPending = previous.startFrame > now && startFrame <= previous.startFrame
    envelope.lead = replacesPending ? previous.lead ?? previous.segment : previous.segment
    return envelope
  }

  /// The same fade (and what leads it) `frames` later: a voice paused with its fades held goes
  /// on along them from where it paused (see `Voice.pause(clock:holdingFades:)`).
  func shifted(by frames: Int64) -> FadeEnvelope {
    var envelope = self
    envelope.startFrame += frames
    envelope.lead?.startFrame += frames
    return envelope
  }

  private var segment: Lead {
    Lead(from: from, to: to, startFrame: startFrame, durationFrames: durationFrames, curve: curve)
  }

  var endFrame: Int64 { startFrame + durationFrames }

  /// A fade of no length is a step: `from` (or the lead) before `startFrame`, `to` from it on.
  func gain(at frame: Int64) -> Float {
    if frame < startFrame, let lead { return lead.gain(at: frame) }
    return Self.gain(
      at: frame, from: from, to: to, startFrame: startFrame, durationFrames: durationFrames, curve: curve)
  }

  private static func gain(
    at frame: Int64, from: Float, to: Float, startFrame: Int64, durationFrames: Int64, curve: FadeCurve
  ) -> Float {
    guard durationFrames > 0 else { return frame >= startFrame ? to : from }
    guard frame < startFrame + durationFrames else { return to }
    guard frame > startFrame else { return from }
    let progress = Double(frame - startFrame) / Double(durationFrames)
    if curve == .linear { return from + (to - from) * Float(progress) }
    if to >= from {
      return from + (to - from) * Float(curve.fadeInGain(progress))
    } else {
      return to + (from - to) * Float(curve.fadeOutGain(progress))
    }
  }

  /// Whether the gain has reached `to` for good (a fade with a lead has not, before it starts).
  func isFinished(at frame: Int64) -> Bool {
    if lead != nil && frame < startFrame { return false }
    return durationFrames == 0 || frame >= endFrame
  }

  /// Whether the gain is the same for every frame of `frame ..< frame + count`.
  func isConstant(from frame: Int64, count: Int) -> Bool {
    if let lead, frame < startFrame {
      // (The stretch that crosses into the fade is split by the caller's per-frame path.)
      return frame + Int64(count) <= startFrame && lead.isConstant(from: frame, count: count)
    }
    return Self.isConstant(from: frame, count: count, from: from, to: to, startFrame: startFrame, endFrame: endFrame)
  }

  private static func isConstant(
    from frame: Int64, count: Int, from: Float, to: Float, startFrame: Int64, endFrame: Int64
  ) -> Bool {
    from == to || frame >= endFrame || frame + Int64(count) <= startFrame
  }
}
