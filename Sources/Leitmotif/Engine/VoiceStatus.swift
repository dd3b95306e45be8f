import Synchronization

/// What the streaming thread publishes about one voice, for any thread to read without waiting.
///
/// Written only by the streaming thread (release), read by game threads (acquire).
final class VoiceStatus: Sendable {
  /// The frame being heard now: the first queued buffer's start plus AL_SAMPLE_OFFSET.
  let positionFrames = Atomic<Int64>(0)
  let lengthFrames = Atomic<Int64>(0)
  let sampleRate = Atomic<Int>(0)
  /// The last seek request (by generation) the streaming thread has carried out.
  let seekGenerationDone = Atomic<Int>(0)
  /// Buffers queued and ready: `prepareToPlay` is done.
  let isPrepared = Atomic<Bool>(false)
  let underruns = Atomic<Int>(0)
}
