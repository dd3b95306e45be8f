import Foundation

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

/// MediaPlayer's `MPMediaPlayback`: what both players (`Player` for one item, `QueuePlayer` for a
/// queue) do, so code can drive either.
public protocol MediaPlayback: AnyObject, Sendable {
  var engine: AudioEngine { get }
  func prepareToPlay()
  var isPreparedToPlay: Bool { get }
  func play()
  func pause()
  func stop()
  var currentPlaybackTime: TimeInterval { get set }
  var currentPlaybackRate: Float { get set }
  /// - Throws: `PlayerError.rateOutOfRange` for NaN, negatives and values above 4.
  func setCurrentPlaybackRate(_ rate: Float) throws(PlayerError)
  func beginSeekingForward()
  func beginSeekingBackward()
  func endSeeking()
  var playbackState: PlaybackState { get }
}

extension MediaPlayback {
  /// For `currentPlaybackRate`'s setter, which cannot throw: a refused rate goes to the engine's
  /// diagnostics instead.
  func setRateReportingErrors(_ rate: Float) {
    do throws(PlayerError) { try setCurrentPlaybackRate(rate) } catch {
      engine.report(Diagnostic(.error, error.description, error: error))
    }
  }
}

extension PlayerError {
  /// A rate must be 0 (pause) or in (0, 4].
  static func check(rate: Float) throws(PlayerError) {
    guard rate.isFinite, rate >= 0, rate <= 4 else { throw PlayerError.rateOutOfRange(rate) }
  }
}
