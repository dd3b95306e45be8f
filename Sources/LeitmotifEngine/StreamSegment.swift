import LeitmotifDecoding
import LeitmotifOutput

/// One stretch of one file that a voice plays: the unit of gapless playback and of loops.
///
/// A voice's stream is a sequence of segments decoded back to back into the same ring,
/// so consecutive segments join with no gap and no overlap. A segment is an asset reference plus
/// how to play it (trim points, a loop); the decoder in it is opened by the loader and from then
/// on used only by the stream's decode thread.
package struct StreamSegment: @unchecked Sendable {
  /// Identifies the segment within its stream (the queue player uses its queue entry's id).
  /// Tokens of one stream are unique.
  let token: Int
  let decoder: any AudioDecoder
  /// Where the segment starts and ends, in frames of the file (the trim points). A restart
  /// (a rewind, repeat one) begins at `startFrame`.
  let startFrame: Int64
  let endFrame: Int64
  /// A loop inside the segment, in frames of the file, or nil.
  let loop: LoopRegion?
  /// How many times playback jumps back from the loop's end to its start; nil loops until the
  /// loop is released (`DecodeAheadStream.releaseLoop`).
  let loopCount: Int?
  /// Multiplies every decoded sample (1: unchanged): a per-item level (ReplayGain).
  var gain: Float = 1
  /// The piece's other stems (layers), decoded in step with `decoder`: frame n of each is
  /// decoded with frame n of the segment, into a plane of its own in the same ring block, so
  /// the layers cannot drift apart (loops and seeks included). A stem shorter than the segment
  /// is silent past its end; a longer one is cut where the segment ends or loops.
  var stems: [any AudioDecoder] = []

  /// The same segment, read through `decoder` (a wrapper of this one's, see `PipelinedDecoder`).
  func reading(through decoder: any AudioDecoder) -> StreamSegment {
    StreamSegment(
      token: token, decoder: decoder, startFrame: startFrame, endFrame: endFrame, loop: loop, loopCount: loopCount,
      gain: gain, stems: stems)
  }
}

/// A loop, in frames of the file: `start ..< end`.
package struct LoopRegion: Sendable, Equatable {
  var start: Int64
  var end: Int64
}
