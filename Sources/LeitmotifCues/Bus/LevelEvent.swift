import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

/// One gameplay event as the music director receives it from a ``LevelEventBus``.
///
/// Thread safety: a value type; safe to pass between threads.
public struct LevelEvent: Sendable {
  /// Order of acceptance on its bus, from 1 (gaps never happen: a dropped event gets no number).
  public var sequence: UInt64
  /// The cue's name as the game posted it, e.g. `"combat.start"`.
  public var cue: String
  /// The values posted with the cue, e.g. `["threat": 2]`.
  public var payload: CuePayload
  /// When it was posted: monotonic nanoseconds (DispatchTime.now().uptimeNanoseconds).
  ///
  /// Read before the event is given its sequence, so two threads posting at the same moment may
  /// get sequences in the opposite order of these times; ``sequence`` is the order that counts.
  public var postedNanoseconds: UInt64
  /// Offline runs: the audio time in seconds at which it takes effect; nil: as soon as the director sees it.
  public var audioTime: Double?

  /// Makes an event by hand (tests, offline scripts); a bus makes its own in `post`.
  public init(
    sequence: UInt64, cue: String, payload: CuePayload = [:], postedNanoseconds: UInt64, audioTime: Double? = nil
  ) {
    self.sequence = sequence
    self.cue = cue
    self.payload = payload
    self.postedNanoseconds = postedNanoseconds
    self.audioTime = audioTime
  }
}
