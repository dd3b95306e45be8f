import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput

/// MediaPlayer's playback states.
public enum PlaybackState: String, Sendable, Equatable {
  /// Not playing; the next `play()` starts from the beginning.
  case stopped
  /// Playing (or about to: the item is still opening).
  case playing
  /// Paused; `play()` resumes from the same frame.
  case paused
  /// The output device went away; playback resumes by itself when it is back.
  case interrupted
  /// Scanning forward (`beginSeekingForward()`) until `endSeeking()`.
  case seekingForward
  /// Scanning backward (`beginSeekingBackward()`) until `endSeeking()`.
  case seekingBackward
}

/// What a player reports, in order, to its observers and event streams.
public enum PlayerEvent: Sendable {
  /// The playback state changed to this.
  case playbackStateChanged(PlaybackState)
  /// `prepareToPlay` finished: the item is open and buffered.
  case prepared
  /// The item played to its end.
  case itemEnded
  /// The item could not be opened, or failed while playing (it ends early; the process goes on).
  case itemFailed(DecodeError)
  /// The output ran dry and was restarted.
  case underrun
  /// The engine gave the player's voice to a sound of higher priority: the player stopped. The
  /// next `play()` claims a voice again and starts the item from its beginning.
  case voiceStolen
}

/// Errors of player requests that cannot be carried out.
public enum PlayerError: Error, Sendable, Equatable, CustomStringConvertible {
  /// `currentPlaybackRate` must be 0 (pause) or within [1/256, 4].
  case rateOutOfRange(Float)
  /// A queue player's `tempo` must be within 0.5...2 (SoundTouch's range).
  case tempoOutOfRange(Float)
  /// The engine already plays as many voices as it can.
  case noFreeVoice(limit: Int)

  /// Why the request failed, in a sentence.
  public var description: String {
    switch self {
    case .rateOutOfRange(let rate):
      return "playback rate \(rate) is out of range: expected 0 (pause) or a value from 1/256 (0.0039) to 4"
    case .tempoOutOfRange(let tempo):
      return "tempo \(tempo) is out of range: expected a value in 0.5...2 (1 plays as written)"
    case .noFreeVoice(let limit): return "no free voice: the engine plays at most \(limit) at once"
    }
  }
}

/// MediaPlayer's `MPMediaPlayback`: what both players (`Player` for one item, `QueuePlayer` for a
/// queue) do, so code can drive either.
public protocol MediaPlayback: AnyObject, Sendable {
  /// The engine the player plays on.
  var engine: AudioEngine { get }
  /// Opens and buffers the item ahead of `play()` (returns at once; the loader does the work).
  func prepareToPlay()
  /// Whether the item is open and buffered.
  var isPreparedToPlay: Bool { get }
  /// Starts or resumes playback (preparing first if needed). Returns at once.
  func play()
  /// Pauses with a short fade; `play()` resumes from the same frame.
  func pause()
  /// Stops with a short fade; the next `play()` starts from the beginning.
  func stop()
  /// The position in the item, in seconds; setting it seeks sample-accurately, without a click.
  var currentPlaybackTime: TimeInterval { get set }
  /// The playback speed (pitch follows), 0 when not playing. Setting 0 pauses; [1/256, 4] plays at that
  /// speed; other values are refused and reported to the engine's diagnostics (use
  /// `setCurrentPlaybackRate(_:)` to get the error).
  var currentPlaybackRate: Float { get set }
  /// - Throws: `PlayerError.rateOutOfRange` for NaN, negatives and values above 4.
  func setCurrentPlaybackRate(_ rate: Float) throws(PlayerError)
  /// Scans forward: jumps that grow the longer it runs, until `endSeeking()`.
  func beginSeekingForward()
  /// Scans backward, the same way.
  func beginSeekingBackward()
  /// Ends a scan and restores the state from before it, at the scanned position.
  func endSeeking()
  /// Playing, paused, stopped, interrupted or seeking.
  var playbackState: PlaybackState { get }
  /// The item playing (or ready to): `Player`'s item, `QueuePlayer`'s now-playing one.
  var nowPlayingItem: MediaItem? { get }
  /// The player's own volume, 0 to 1 (under the engine's master volume).
  var volume: Float { get set }
}

package extension MediaPlayback {
  /// For `currentPlaybackRate`'s setter, which cannot throw: a refused rate goes to the engine's
  /// diagnostics instead.
  func setRateReportingErrors(_ rate: Float) {
    do throws(PlayerError) { try setCurrentPlaybackRate(rate) } catch {
      engine.report(Diagnostic(.error, error.description, error: error))
    }
  }
}

package extension PlayerError {
  /// A rate must be 0 (pause) or in `Voice.rateRange` (1/256 to 4).
  static func check(rate: Float) throws(PlayerError) {
    guard rate == 0 || Voice.rateRange.contains(rate) else { throw PlayerError.rateOutOfRange(rate) }
  }
}

extension PlayerEvent: CustomStringConvertible {
  /// One line, as `QueuePlayerEvent` and `DirectorReport` print theirs.
  public var description: String {
    switch self {
    case .playbackStateChanged(let state): return "playback state: \(state.rawValue)"
    case .prepared: return "prepared"
    case .itemEnded: return "item ended"
    case .itemFailed(let error): return "item failed: \(error)"
    case .underrun: return "underrun"
    case .voiceStolen: return "voice stolen"
    }
  }
}
