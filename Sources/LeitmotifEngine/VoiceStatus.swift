import LeitmotifDecoding
import LeitmotifOutput
import Synchronization

/// What the streaming thread publishes about one voice, for any thread to read without waiting.
///
/// Written only by the streaming thread (release), read by game threads (acquire), except that
/// the pool clears `isLetGo` and `gainBits` when it hands the slot to a new owner.
package final class VoiceStatus: Sendable {
  /// The generation of the claim the streaming thread took up last (see `VoiceHandle`): the
  /// other fields describe that owner's voice. Stored last when a claim resets the fields, so a
  /// reader that sees its own generation reads no earlier owner's values.
  let generation = Atomic<UInt32>(0)
  /// The frame being heard now: the first queued buffer's start plus AL_SAMPLE_OFFSET.
  package let positionFrames = Atomic<Int64>(0)
  /// The file frame (fractional when resampled or stretched) of the frame mixed on a mix frame,
  /// the two stored as one (a `Double`'s bits, then the mix frame): with the speed, where the
  /// voice is on any later frame, exactly, whichever block it was published after (see
  /// `PlayingPosition`). NaN while the position does not move on with the clock (not playing,
  /// or a seek or pause under way).
  let exactPosition = Atomic<WordPair>(WordPair(first: UInt(Double.nan.bitPattern), second: 0))

  /// The last `exactPosition` published, or nil while it does not move on with the clock.
  package var playingPosition: (fileFrame: Double, mixFrame: Int64)? {
    let pair = exactPosition.load(ordering: .acquiring)
    let frame = Double(bitPattern: UInt64(pair.first))
    guard frame.isFinite else { return nil }
    return (frame, Int64(bitPattern: UInt64(pair.second)))
  }

  func storePlayingPosition(_ fileFrame: Double, mixFrame: Int64) {
    exactPosition.store(
      WordPair(first: UInt(fileFrame.bitPattern), second: UInt(bitPattern: Int(mixFrame))), ordering: .releasing)
  }
  package let lengthFrames = Atomic<Int64>(0)
  /// Mix frames the resampler and the stretcher have read ahead of what is heard (see
  /// `Voice.readAheadFrames`): a layer move on a line nearer than that cannot land on it.
  package let readAheadFrames = Atomic<Int64>(0)
  package let sampleRate = Atomic<Int>(0)
  /// The last seek request (by generation) the streaming thread has carried out.
  package let seekGenerationDone = Atomic<Int>(0)
  /// Buffers queued and ready: `prepareToPlay` is done.
  package let isPrepared = Atomic<Bool>(false)
  package let underruns = Atomic<Int>(0)
  /// The segment being heard (its token), for queues whose items join gaplessly on one voice.
  let token = Atomic<Int>(0)
  /// The gain heard (volume, transport and crossfade together), as Float bits: the voice pool
  /// steals the quietest voice first.
  let gainBits = Atomic<UInt32>(0)
  /// The voice is fading out for good (the outgoing side of a crossfade): first to be stolen.
  package let isLetGo = Atomic<Bool>(false)
  /// While `isLetGo`: the mix frame its fade-out starts on. Later than now when the outgoing
  /// music holds its level first (through an incoming pickup, or a tail): until then it is
  /// heard unfaded, and a called-off change can still keep it (see `EngineCommand.callOff`).
  package let fadeStartFrame = Atomic<Int64>(0)

  /// The level heard of each layer (stem) of the voice, 0 to 1 (its fade times its parameter
  /// drive, not the voice's gain), 16 bits each, four to a word: layers 0-3, then 4-7.
  let layerLevelsLow = Atomic<UInt64>(0)
  let layerLevelsHigh = Atomic<UInt64>(0)

  package var gain: Float { Float(bitPattern: gainBits.load(ordering: .relaxed)) }

  /// Layer `index`'s level heard (0 to 1, to 1/65535), 0 for a layer the voice does not have.
  package func layerLevel(_ index: Int) -> Float {
    guard (0..<8).contains(index) else { return 0 }
    let word = index < 4 ? layerLevelsLow.load(ordering: .relaxed) : layerLevelsHigh.load(ordering: .relaxed)
    return Float((word >> UInt64(16 * (index % 4))) & 0xFFFF) / 65535
  }

  /// Publishes the layers' levels (at most 8; the rest read 0).
  func storeLayerLevels(_ levels: (Int) -> Float, count: Int) {
    var words: (UInt64, UInt64) = (0, 0)
    for index in 0..<min(count, 8) {
      let bits = UInt64((max(0, min(1, levels(index))) * 65535).rounded()) << UInt64(16 * (index % 4))
      if index < 4 { words.0 |= bits } else { words.1 |= bits }
    }
    layerLevelsLow.store(words.0, ordering: .relaxed)
    layerLevelsHigh.store(words.1, ordering: .relaxed)
  }
}
