import Dispatch
import LeitmotifDecoding

/// An offline engine's decoder for a file its stream resamples: the next stretch of the file is
/// decoded on another core while the stream's decode thread resamples the last one.
///
/// Why: resampling a file to the mix rate (soxr, on the stream's decode thread, see
/// `RateConversionStage`) costs about as much as decoding it. One after the other on one thread,
/// an offline render of a 44.1 kHz file into a 48 kHz mix ran at half the decoder's speed while
/// the second core waited (`leitmotif-bench queue`). Real-time engines do not use it: there what
/// counts is CPU, not wall time, and every voice's decode thread already runs beside the mixer.
///
/// Two chunks: the decode thread copies out of one while a Dispatch worker decodes the next into
/// the other. A seek (a loop seam, a seek of the player) waits for the chunk under way, then seeks
/// on the calling thread; the next read reads straight from the decoder there, and starts the
/// next chunk behind it. The wrapped decoder is used by one thread at a time: the semaphore that
/// hands a chunk over hands the decoder back with it. What comes out is what the wrapped decoder gives,
/// frame for frame (a failure after the frames that decoded before it), only sooner.
///
/// Thread safety: like any `AudioDecoder`, one thread at a time (the stream's decode thread).
final class PipelinedDecoder: AudioDecoder {
  /// Frames decoded ahead at a time: eight of the stream's blocks (0.74 s at 44.1 kHz; 256 KB
  /// of stereo). In `leitmotif-bench queue`, one block a chunk gained little (0.52 of the
  /// decoder's speed, against 0.46 without the pipeline), four 0.69 to 0.71, eight 0.73, sixteen 0.75.
  static let chunkFrames = 8 * DecodeAheadStream.framesPerBlock

  private let worker: Worker
  /// The chunk being read from, and how far.
  private var current = 0
  private var offset = 0
  private var count = 0
  /// After the current chunk: the failure that ended it, or the end of the file.
  private var failure: DecodeError?
  private var ended = false
  /// A chunk is being decoded into the other slot.
  private var inFlight = false
  private var cursor: Int64
  private var knownWarnings: [String]
  // What the file is, read once here: the wrapped decoder is then touched by one thread at a
  // time (these never change after a decoder opens).
  let path: String
  let containerFormat: ContainerFormat
  let format: AudioFormat
  let lengthFrames: Int64
  let tags: AudioTags
  let artwork: Artwork?

  init(_ inner: any AudioDecoder) {
    worker = Worker(inner)
    cursor = inner.cursorFrames
    knownWarnings = inner.warnings
    path = inner.path
    containerFormat = inner.containerFormat
    format = inner.format
    lengthFrames = inner.lengthFrames
    tags = inner.tags
    artwork = inner.artwork
  }

  deinit {
    // The worker may still be decoding into the other chunk: its memory goes with the worker,
    // which the closure under way holds until it is done.
    if inFlight { worker.ready.wait() }
  }

  var cursorFrames: Int64 { cursor }
  /// As of the last chunk taken (the wrapped decoder's own list may be growing on the worker).
  var warnings: [String] { knownWarnings }

  func readFrames(into buffer: UnsafeMutablePointer<Float>, frameCapacity: Int) throws(DecodeError) -> Int {
    let channels = worker.channels
    while true {
      if offset < count {
        let frames = min(frameCapacity, count - offset)
        buffer.update(from: worker.chunks[current] + offset * channels, count: frames * channels)
        offset += frames
        cursor += Int64(frames)
        return frames
      }
      if let failure {
        self.failure = nil
        ended = true
        throw failure
      }
      if ended || frameCapacity <= 0 { return 0 }
      let next = 1 - current
      if !inFlight {
        // The first read after a start or a seek: straight from the decoder, as it would be
        // without the pipeline (not a whole chunk first: a loop seam or a seek would wait for
        // it), with the next chunk started behind it.
        let frames: Int
        do throws(DecodeError) {
          frames = try worker.inner.readFrames(into: buffer, frameCapacity: frameCapacity)
        } catch {
          ended = true
          throw error
        }
        guard frames > 0 else {
          ended = true
          return 0
        }
        cursor += Int64(frames)
        worker.fill(next)
        inFlight = true
        return frames
      }
      worker.ready.wait()
      inFlight = false
      current = next
      offset = 0
      count = worker.filledFrames
      failure = worker.filledFailure
      ended = worker.filledEnd
      knownWarnings = worker.warnings
      if !ended {
        worker.fill(1 - current)
        inFlight = true
      }
    }
  }

  func seek(toFrame frame: Int64) throws(DecodeError) {
    if inFlight {
      worker.ready.wait()
      inFlight = false
    }
    offset = 0
    count = 0
    failure = nil
    ended = false
    try worker.inner.seek(toFrame: frame)
    cursor = frame
  }

  func prepareForDecoding() throws(DecodeError) { try worker.inner.prepareForDecoding() }

  /// The wrapped decoder, the two chunks and what the last fill found. Each field is written by
  /// one side before `ready` is signalled (or a fill is started) and read by the other after.
  private final class Worker: @unchecked Sendable {
    let inner: any AudioDecoder
    let channels: Int
    let chunks: [UnsafeMutablePointer<Float>]
    let ready = DispatchSemaphore(value: 0)
    var filledFrames = 0
    var filledFailure: DecodeError?
    var filledEnd = false
    var warnings: [String] = []

    init(_ inner: any AudioDecoder) {
      self.inner = inner
      channels = inner.format.channelCount
      let floats = PipelinedDecoder.chunkFrames * inner.format.channelCount
      chunks = (0..<2).map { _ in
        let chunk = UnsafeMutablePointer<Float>.allocate(capacity: floats)
        chunk.initialize(repeating: 0, count: floats)
        return chunk
      }
    }

    deinit { for chunk in chunks { chunk.deallocate() } }

    /// Decodes the next chunk into slot `index` on a Dispatch worker; `ready` says when.
    func fill(_ index: Int) {
      DispatchQueue.global().async { [self] in
        let chunk = chunks[index]
        var frames = 0
        var failure: DecodeError?
        var end = false
        while frames < PipelinedDecoder.chunkFrames {
          do throws(DecodeError) {
            let read = try inner.readFrames(
              into: chunk + frames * channels, frameCapacity: PipelinedDecoder.chunkFrames - frames)
            if read == 0 {
              end = true
              break
            }
            frames += read
          } catch {
            failure = error
            end = true
            break
          }
        }
        filledFrames = frames
        filledFailure = failure
        filledEnd = end
        warnings = inner.warnings
        ready.signal()
      }
    }
  }
}
