import Foundation
import Synchronization

/// A decoder on its own thread, decoding ahead into a ring of stereo blocks that the streaming
/// thread takes from without ever waiting on a file (openal-soft's examples/alstreamcb.cpp keeps
/// a ring between its decoder and mixer the same way).
///
/// Why a thread of its own: decoding reads files, and a file read can stall (a busy disk, a
/// network home folder). On the streaming thread that stall would starve every voice; here it
/// only empties this voice's ring. Offline renders gain too: decoding runs on one core while
/// OpenAL mixes on the other.
///
/// The ring is single-producer (the decode thread) and single-consumer (the streaming thread):
/// `produced` and `consumed` count blocks; a slot is written only by the producer before it
/// publishes `produced` (release) and read only by the consumer after it loads `produced`
/// (acquire), then handed back by publishing `consumed`. Seeks are requests, not waits: the
/// consumer bumps `requestedGeneration`; the producer seeks and stamps every later block with
/// the new generation, and the consumer drops blocks of older generations.
///
/// Everything is allocated in `init`; nothing on either side allocates while playing.
final class DecodeAheadStream: @unchecked Sendable {
  /// Blocks in the ring: 8 x 4096 frames is 0.68 s at 48 kHz decoded ahead of the buffers
  /// OpenAL holds, enough to ride out a slow read; 256 KB per voice.
  static let blockCount = 8
  static let framesPerBlock = Voice.framesPerBuffer

  let path: String
  let format: AudioFormat
  let lengthFrames: Int64
  let containerFormat: ContainerFormat

  struct Block {
    var samples: UnsafePointer<Float>  // stereo, interleaved
    var frames: Int
    var startFrame: Int64
    var generation: Int
    /// The last block of its generation: the decoder reached the end (or failed, see `error`).
    var isEnd: Bool
    var error: DecodeError?
  }

  private let samples: UnsafeMutablePointer<Float>
  private let frameCounts: UnsafeMutablePointer<Int>
  private let startFrames: UnsafeMutablePointer<Int64>
  private let generations: UnsafeMutablePointer<Int>
  private let ends: UnsafeMutablePointer<Bool>
  private let errors: UnsafeMutablePointer<DecodeError?>
  private let counters = Counters()
  private let producerWake = DispatchSemaphore(value: 0)
  private let blockReady = DispatchSemaphore(value: 0)

  private final class Counters: Sendable {
    let produced = Atomic<Int>(0)
    let consumed = Atomic<Int>(0)
    let requestedGeneration = Atomic<Int>(0)
    let requestedFrame = Atomic<Int64>(0)
    let stopped = Atomic<Bool>(false)
    /// The generation whose end (or failure) the producer has reached, or -1.
    let endedGeneration = Atomic<Int>(-1)
  }

  /// Moves a non-Sendable value to another thread that becomes its only user.
  private struct Handover<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
  }

  /// Whether the first generation is fully decoded into the ring (a short file): pre-buffering
  /// then need not wait for more blocks.
  var initialGenerationEnded: Bool { counters.endedGeneration.load(ordering: .acquiring) == 0 }

  /// Takes ownership of `decoder` (already at `startFrame`) and starts decoding at once.
  init(decoder: any AudioDecoder, startFrame: Int64) {
    path = decoder.path
    format = decoder.format
    lengthFrames = decoder.lengthFrames
    containerFormat = decoder.containerFormat
    let count = Self.blockCount
    samples = .allocate(capacity: count * Self.framesPerBlock * 2)
    samples.initialize(repeating: 0, count: count * Self.framesPerBlock * 2)
    frameCounts = .allocate(capacity: count)
    frameCounts.initialize(repeating: 0, count: count)
    startFrames = .allocate(capacity: count)
    startFrames.initialize(repeating: 0, count: count)
    generations = .allocate(capacity: count)
    generations.initialize(repeating: 0, count: count)
    ends = .allocate(capacity: count)
    ends.initialize(repeating: false, count: count)
    errors = .allocate(capacity: count)
    errors.initialize(repeating: nil, count: count)
    // The decoder moves to the decode thread and is used only there from now on.
    let handover = Handover(decoder)
    let thread = Thread { [self] in self.produce(decoder: handover.value, startFrame: startFrame) }
    thread.name = "leitmotif.decode"
    thread.start()
  }

  deinit {
    let count = Self.blockCount
    samples.deallocate()
    frameCounts.deallocate()
    startFrames.deallocate()
    generations.deallocate()
    ends.deallocate()
    errors.deinitialize(count: count)
    errors.deallocate()
  }

  /// Ends the decode thread (it holds the stream until then). Called when the voice is freed.
  func stop() {
    counters.stopped.store(true, ordering: .releasing)
    producerWake.signal()
  }

  // MARK: - Consumer (the streaming thread)

  /// Blocks decoded and not yet taken.
  var availableBlocks: Int {
    counters.produced.load(ordering: .acquiring) - counters.consumed.load(ordering: .relaxed)
  }

  /// The oldest decoded block, if any. With `waitSeconds > 0` (offline renders only) waits that
  /// long for one; the real-time streaming thread never waits.
  func peek(waitSeconds: Double = 0) -> Block? {
    var deadline: DispatchTime?
    while true {
      let consumed = counters.consumed.load(ordering: .relaxed)
      if counters.produced.load(ordering: .acquiring) > consumed {
        let slot = consumed % Self.blockCount
        return Block(
          samples: UnsafePointer(samples + slot * Self.framesPerBlock * 2), frames: frameCounts[slot],
          startFrame: startFrames[slot], generation: generations[slot], isEnd: ends[slot], error: errors[slot])
      }
      guard waitSeconds > 0 else { return nil }
      let limit = deadline ?? .now() + waitSeconds
      deadline = limit
      if blockReady.wait(timeout: limit) == .timedOut { return nil }
    }
  }

  /// Hands the block from `peek` back to the producer.
  func release() {
    counters.consumed.add(1, ordering: .releasing)
    producerWake.signal()
  }

  /// Asks the decode thread to continue from `frame`; blocks of earlier generations are stale.
  /// Returns the new generation.
  func requestSeek(toFrame frame: Int64) -> Int {
    counters.requestedFrame.store(frame, ordering: .relaxed)
    let generation = counters.requestedGeneration.add(1, ordering: .releasing).newValue
    producerWake.signal()
    return generation
  }

  // MARK: - Producer (the decode thread)

  private func produce(decoder: any AudioDecoder, startFrame: Int64) {
    var generation = 0
    var ended = false
    var cursor = startFrame
    let scratch = UnsafeMutablePointer<Float>.allocate(capacity: Self.framesPerBlock * 2)
    defer { scratch.deallocate() }
    while !counters.stopped.load(ordering: .acquiring) {
      let requested = counters.requestedGeneration.load(ordering: .acquiring)
      var seekError: DecodeError?
      if requested != generation {
        generation = requested
        cursor = counters.requestedFrame.load(ordering: .relaxed)
        ended = false
        do { try decoder.seek(toFrame: cursor) } catch { seekError = error }
      }
      let full =
        counters.produced.load(ordering: .relaxed) - counters.consumed.load(ordering: .acquiring) >= Self.blockCount
      if ended || full {
        _ = producerWake.wait(timeout: .now() + .milliseconds(100))
        continue
      }
      let slot = counters.produced.load(ordering: .relaxed) % Self.blockCount
      let output = samples + slot * Self.framesPerBlock * 2
      var frames = 0
      var error = seekError
      if error == nil {
        do {
          frames = try decoder.readFrames(
            into: format.channelCount == 2 ? output : scratch, frameCapacity: Self.framesPerBlock)
        } catch let failure {
          error = failure
        }
      }
      if format.channelCount == 1 {
        for frame in 0..<frames {
          output[2 * frame] = scratch[frame]
          output[2 * frame + 1] = scratch[frame]
        }
      }
      if frames == 0 && error == nil && decoder.cursorFrames < lengthFrames {
        // Damage swallowed part of the stream: the item ends early, and says so.
        error = DecodeError(
          path: path,
          reason: .truncated(
            "the stream ended at frame \(decoder.cursorFrames), \(lengthFrames - decoder.cursorFrames) frames before its end"
          ))
      }
      frameCounts[slot] = frames
      startFrames[slot] = cursor
      generations[slot] = generation
      ends[slot] = frames == 0 || error != nil
      errors[slot] = error
      ended = ends[slot]
      cursor += Int64(frames)
      counters.produced.add(1, ordering: .releasing)
      if ended { counters.endedGeneration.store(generation, ordering: .releasing) }
      blockReady.signal()
    }
  }
}
