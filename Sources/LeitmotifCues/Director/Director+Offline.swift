import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

extension Director {
  /// Offline engines driven from outside (the C API's `lm_render`, a game's own audio callback):
  /// starts the director at audio time `seconds` if it has not started (in `startState`, nil:
  /// the cue file's `start`), then applies everything due up to that time: events on the bus,
  /// parameters, scheduled changes. Call it before each mix with the audio time of the mix's
  /// first frame, as `CueSimulation` does.
  ///
  /// - Parameters:
  ///   - seconds: the audio time, in seconds from the start of the render; never less than the
  ///     time of the call before.
  ///   - startState: the state to start in, used by the first call only.
  /// - Returns: the audio time of the next scheduled change (a transition waiting for the beat
  ///   grid), nil when none is due: end the next mix there and the change lands on its exact
  ///   frame.
  ///
  /// Thread safety: any thread; calls take turns with each other (one step at a time).
  @discardableResult
  public func advance(toAudioTime seconds: Double, startState: String? = nil) -> Double? {
    let frame = FrameMath.frames(seconds: seconds, rate: Double(engine.sampleRate))
    start(at: seconds, state: startState)
    // As in real time: the director steps `leadFrames` ahead of the mix, on its grid of frames,
    // and what it does waits in the engine for its frame.
    stepOnGrid(upTo: frame + leadFrames)
    return timing().deadline
  }
}
