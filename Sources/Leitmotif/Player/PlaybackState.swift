/// MediaPlayer's playback states.
public enum PlaybackState: String, Sendable, Equatable {
  case stopped
  case playing
  case paused
  /// The output device went away; playback resumes by itself when it is back.
  case interrupted
  case seekingForward
  case seekingBackward
}

/// What a player reports, in order, to its observers and event streams.
public enum PlayerEvent: Sendable {
  case playbackStateChanged(PlaybackState)
  /// `prepareToPlay` finished: the item is open and buffered.
  case prepared
  /// The item played to its end.
  case itemEnded
  /// The item could not be opened, or failed while playing (it ends early; the process goes on).
  case itemFailed(DecodeError)
  /// The output ran dry and was restarted.
  case underrun
}

/// Errors of player requests that cannot be carried out.
public enum PlayerError: Error, Sendable, Equatable, CustomStringConvertible {
  /// `currentPlaybackRate` must be 0 (pause) or within (0, 4].
  case rateOutOfRange(Float)
  /// The engine already plays as many voices as it can.
  case noFreeVoice(limit: Int)

  public var description: String {
    switch self {
    case .rateOutOfRange(let rate):
      return "playback rate \(rate) is out of range: expected 0 (pause) or a value in (0, 4]"
    case .noFreeVoice(let limit): return "no free voice: the engine plays at most \(limit) at once"
    }
  }
}
