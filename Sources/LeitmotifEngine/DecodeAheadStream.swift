import Dispatch
import FoundationEssentials
import LeitmotifDecoding
import LeitmotifOutput
import Synchronization

/// A sequence of segments decoded on their own thread, ahead, into a ring of stereo blocks that
/// the streaming thread takes from without ever waiting on a file (openal-soft's
/// examples/alstreamcb.cpp keeps a ring between its decoder and mixer the same way).
///
/// Why a thread of its own: decoding reads files, and a file read can stall (a busy disk, a
/// network home folder). On the streaming thread that stall would starve every voice; here it
/// only empties this voice's ring. Offline renders gain too: decoding runs on one core while
/// the mixer mixes on the other.
///
/// Gapless joins and loops happen here, in the decoder, because only a decoder can make them
/// sample-exact, and cheaply: one voice plays the whole run (OpenAL's own loop points work only
/// for static buffers). At a loop's end the decode thread seeks back to the loop's start, once
/// the mixer has read to within `releaseCommitFrames` of it (so a release decides the seam, not
/// how far ahead this thread is); at a segment's end it continues with the next segment. A block never spans either seam, so every
/// block the mixer reads belongs to one segment and one run of frames.
///
/// The ring is single-producer (the decode thread) and single-consumer (the streaming thread):
/// `produced` and `consumed` count blocks; a slot is written only by the producer before it
/// publishes `produced` (release) and read only by the consumer after it loads `produced`
/// (acquire), then handed back by publishing `consumed`. Seeks are requests, not waits: the
/// consumer bumps `requestedGeneration`; the producer seeks and stamps every later block with
/// the new generation, and the consumer drops blocks of older generations.
///
/// The segments still to come sit behind a mutex that only the decode thread and game-side
/// threads take (never the streaming thread), so the queue can change while this plays.
///
/// The ring is allocated in `init`; nothing on the streaming side allocates while playing.
package final class DecodeAheadStream: @unchecked Sendable {
  /// Blocks in the ring: 8 x 4096 frames is 0.68 s at 48 kHz decoded ahead of what the mixer
  /// reads, enough to ride out a slow read; 256 KB per voice.
  static let blockCount = 8
  static let framesPerBlock = Voice.framesPerBuffer
  /// The producer refills in bursts: once the ring is full it sleeps until only this many blocks
  /// are left (0.26 s still ahead of the mixer), then decodes until it is full again. Decoding
  /// blocks in bursts instead of one at a time keeps libvorbis's tables in cache and wakes the
  /// thread less often: on a virtual machine that halves what decoding costs (measured with
  /// `leitmotif-bench crossfade`). Three, not two: a voice whose time-stretcher starts reads
  /// about two blocks at once (SoundTouch's first sequences), and with two left a stream of three
  /// planes (a piece with two stems) ran dry live for 14 mixes, 17 ms, before its decode thread
  /// caught up (offline the voice waits, so live and offline differed by up to 1.15 from there).
  /// `leitmotif-bench voices` at 16 voices: 0.0444 CPU s per audio s on OpenAL's null device
  /// and 0.0337 headless, against 0.0472 and 0.0353 with two, in back-to-back runs.
  static let lowWaterBlocks = 3
  /// An offline consumer that had to wait is woken when this many blocks are ready (see `peek`).
  static let offlineWakeBlocks = 4
  /// Finished segments kept (with their open decoders) so a seek can still go back into them
  /// while their audio is queued or heard.
  static let retainedSegments = 8
  /// How near (in frames of the ring's blocks, 0.17 s at 48 kHz) the mixer must have read to a
  /// loop's seam before the decode thread jumps back at it, and so how late a release can come
  /// and still end the loop at that seam (see `releaseLoop`). A jump decoded earlier would put
  /// the next pass in the ring before the mixer could decide against it: a release then played
  /// one more pass, or not, depending on how far ahead the decode thread happened to be. Two
  /// blocks: about what the ring holds when the producer is woken to refill anyway (three,
  /// `lowWaterBlocks`), so a loop is decoded nearly as far ahead at its seams as anywhere else.
  static let releaseCommitFrames = 2 * framesPerBlock

  /// Frames of the ring's blocks from file frame `position`, in pass `pass` of `loop`'s segment,
  /// to the end of pass `seamPass` (the seam after it). The voice, committing seams, and the
  /// decode thread, jumping at them, both measure with this, so the two cannot disagree.
  static func framesToSeam(
    of loop: LoopRegion, pass seamPass: Int, from position: Double, inPass pass: Int, blockStep: Double
  ) -> Double {
    (Double(loop.end) - position + Double(seamPass - pass) * Double(loop.end - loop.start)) / blockStep
  }

  /// The loop passes a release still plays when its seam is `framesToSeam` frames of the ring's
  /// blocks away, for a loop `loopFrames` long in them: 0 beyond `releaseCommitFrames`, else the
  /// seams within that reach (this pass's, and for a loop shorter than it, the ones after). The
  /// voice commits them (`Voice.releaseLoop`); the director counts them for a change at the end.
  package static func passesCommitted(framesToSeam: Double, loopFrames: Double) -> Int {
    let reach = Double(releaseCommitFrames)
    guard framesToSeam <= reach, loopFrames > 0 else { return 0 }
    return 1 + Int(((reach - framesToSeam) / loopFrames).rounded(.down))
  }

  /// The first segment's file, for messages.
  let path: String
  /// Every segment has this rate (the loader refuses others for gapless joins); blocks are stereo.
  let format: AudioFormat
  /// The rate of the blocks in the ring: the mix rate when the decode thread resamples (the
  /// file's rate is another, see `RateConversionStage`), otherwise the file's rate.
  let blockRate: Int
  /// File frames per frame of the ring's blocks.
  let blockStep: Double
  let firstToken: Int
  /// Where the first segment ends (frames of its file).
  let firstSegmentEnd: Int64
  /// Whether the first segment has a loop (then it may play for longer than it is long).
  let firstSegmentLoops: Bool
  /// The stems (layers) besides the music itself that every block carries, each in a plane of
  /// its own after the music's (see `StreamSegment.stems`): the first segment's count, at most
  /// `Voice.maximumLayers`. A later segment with fewer stems leaves the other planes silent.
  let stemCount: Int
  /// Floats per block in the ring: a stereo plane of `framesPerBlock` for the music and one for
  /// each stem.
  private let blockFloats: Int

  package struct Block {
    /// Stereo, interleaved, at `blockRate`; stem k's plane follows at
    /// `samples + (k + 1) * 2 * framesPerBlock` (same frames, same layout).
    var samples: UnsafePointer<Float>
    var frames: Int
    /// The file frame the first frame shows: whole unless the decode thread resampled.
    var startPosition: Double
    var generation: Int
    var token: Int
    /// The segment's start and end (trim points) in frames of its file.
    var segmentStart: Int64
    var segmentEnd: Int64
    /// No jump back to a loop start will follow in this segment: what is left of it is the rest
    /// of the file up to `segmentEnd` (a crossfade to the next item can be timed from here).
    var finalPass: Bool
    /// How many times the segment had jumped back to its loop's start when this was decoded.
    var pass: Int
    /// The loop the decode thread will jump back from at the end of this pass, unless released
    /// (nil in the final pass).
    var loop: LoopRegion?
    /// The segment failed here (the block holds what decoded before the failure); the stream
    /// goes on with the next segment, if there is one.
    var error: DecodeError?
  }

  private let samples: UnsafeMutablePointer<Float>
  /// The pages `samples` lives in (and, after the ring, the decode thread's scratch block): a
  /// mapping of its own, freed with the stream (see PageMemory).
  private let samplePages: PageMemory
  private let meta: UnsafeMutablePointer<Block>
  private let counters = Counters()
  private let producerWake = DispatchSemaphore(value: 0)
  private let blockReady = DispatchSemaphore(value: 0)
  private let upcoming = Mutex<Upcoming>(Upcoming())

  private struct Upcoming {
    var segments: [StreamSegment] = [] { didSet { mirror?.upcomingCount.store(segments.count, ordering: .releasing) } }
    /// The token the decode thread is decoding now (set under this lock when it moves on).
    var decodingToken: Int { didSet { mirror?.decodingToken.store(decodingToken, ordering: .releasing) } }
    /// Where the two are mirrored for the streaming thread.
    var mirror: Counters?
    init(decodingToken: Int = 0) { self.decodingToken = decodingToken }
  }

  private final class Counters: Sendable {
    let produced = Atomic<Int>(0)
    let consumed = Atomic<Int>(0)
    let requestedGeneration = Atomic<Int>(0)
    let requestedFrame = Atomic<Int64>(0)
    let requestedToken = Atomic<Int>(0)
    /// Whether a seek back into an earlier segment keeps the segments that followed it.
    let requestKeepsFollowing = Atomic<Bool>(true)
    let stopped = Atomic<Bool>(false)
    /// Segments with a token up to this one stop looping (see `releaseLoop`), except that
    /// segment `releaseCutToken` still jumps back while it has jumped fewer than
    /// `releaseCutPass` times (the seams the mixer had already committed to).
    let loopReleasedThrough = Atomic<Int>(Int.min)
    let releaseCutToken = Atomic<Int>(Int.min)
    let releaseCutPass = Atomic<Int>(0)
    /// The producer waits at a loop's seam for the mixer to come near it: every block the
    /// consumer hands back then wakes it (not only at the low-water mark).
    let producerAtSeam = Atomic<Bool>(false)
    /// Mirrors of `Upcoming` for the streaming thread, which never takes its lock: how many
    /// segments wait, and the token being decoded (stored under the lock whenever they change).
    let upcomingCount = Atomic<Int>(0)
    let decodingToken = Atomic<Int>(0)
    /// The generation in which the producer ran out of segments (and waits for more), or -1.
    let drainedGeneration = Atomic<Int>(-1)
    /// The ring level at which a publish wakes the consumer: 1 until an offline consumer first
    /// waits, then `offlineWakeBlocks` (see `peek`).
    let consumerWakeLevel = Atomic<Int>(1)
    /// A seek asked for ahead of its frame (`requestSeek(…keepingThrough:)`): the blocks before
    /// this index stay the consumer's, in the generation before; Int.min when the last request
    /// kept none. Written by the consumer only.
    let keepThrough = Atomic<Int>(Int.min)
    /// The last generation the producer has started (past the blocks kept, when it kept some).
    let startedGeneration = Atomic<Int>(0)
  }

  /// The decode thread's reference to its stream, dropped before the thread reports it ended
  /// (only that thread touches it).
  private final class StreamHold: @unchecked Sendable {
    var stream: DecodeAheadStream?
    init(_ stream: DecodeAheadStream) { self.stream = stream }
  }

  /// Moves a non-Sendable value to another thread that becomes its only user.
  private struct Handover<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
  }

  /// Whether the first generation is fully decoded into the ring (a short file): pre-buffering
  /// then need not wait for more blocks.
  var initialGenerationEnded: Bool { counters.drainedGeneration.load(ordering: .acquiring) == 0 }

  /// The decode thread waits at a loop's seam for the mixer to read nearer (see `seamGateOpen`):
  /// the ring holds all it will for now, so pre-buffering need not wait for more.
  var waitsAtSeam: Bool { counters.producerAtSeam.load(ordering: .acquiring) }

  /// Whether the stream ends with segment `token`: nothing waits to follow it and the decode
  /// thread has not moved past it. Streaming thread: a segment appended a moment later revives the
  /// stream, as always.
  func endsWith(token: Int) -> Bool {
    counters.upcomingCount.load(ordering: .acquiring) == 0 && counters.decodingToken.load(ordering: .acquiring) == token
  }

  /// The stream has played out: the producer ran out of segments in `generation` and every block
  /// it made has been taken. Not final: a segment appended later revives it (a gapless join that
  /// arrives before the mixer has read everything decoded still joins without a gap).
  func isDrained(generation: Int) -> Bool {
    counters.drainedGeneration.load(ordering: .acquiring) == generation && availableBlocks == 0
  }

  /// Takes ownership of `first` (its decoder already at `startFrame`) and starts decoding at once.
  /// With `mixRate` (not the file's), the decode thread resamples to it, unless soxr cannot.
  /// `census` counts the decode thread while it runs (the engine's shutdown waits for it).
  init(first: StreamSegment, startFrame: Int64, mixRate: Int? = nil, census: ThreadCensus? = nil) {
    path = first.decoder.path
    format = first.decoder.format
    firstToken = first.token
    firstSegmentEnd = first.endFrame
    firstSegmentLoops = first.loop != nil && first.loopCount != 0
    stemCount = min(first.stems.count, Voice.maximumLayers)
    let count = Self.blockCount
    let block = Self.framesPerBlock * 2
    blockFloats = block * (1 + stemCount)
    // Layered music is not resampled here: its stems are mixed by the voice first, and the
    // voice's own resampler takes the mix (one resampler for the piece, not one per stem).
    let converter =
      stemCount > 0
      ? nil : mixRate.flatMap { FixedRateConverter(inputRate: first.decoder.format.sampleRate, outputRate: $0) }
    blockRate = converter?.outputRate ?? first.decoder.format.sampleRate
    blockStep = Double(first.decoder.format.sampleRate) / Double(blockRate)
    // One block more than the ring: the decode thread's scratch; resampling, four more: its
    // input block and three blocks of output.
    samplePages = PageMemory(floatCount: count * blockFloats + (converter == nil ? 1 : 5) * block)
    let floats = samplePages.floats
    samples = floats
    let ringEnd = count * blockFloats
    let stage = converter.map {
      RateConversionStage(
        converter: $0, blockFrames: Self.framesPerBlock, input: floats + ringEnd + block,
        output: floats + ringEnd + 2 * block, outputCapacity: 3 * Self.framesPerBlock)
    }
    meta = .allocate(capacity: count)
    meta.initialize(
      repeating: Block(
        samples: UnsafePointer(samples), frames: 0, startPosition: 0, generation: 0, token: 0, segmentStart: 0,
        segmentEnd: 0, finalPass: true, pass: 0, loop: nil, error: nil),
      count: count)
    upcoming.withLock { state in
      state.mirror = counters
      state.decodingToken = first.token
    }
    // The decoder (and the resampler) move to the decode thread and are used only there from now on.
    let handover = Handover((first, stage))
    census?.enter()
    let hold = StreamHold(self)
    let thread = NativeThread {
      nameCurrentThread("lm.decode")
      hold.stream?.produce(first: handover.value.0, startFrame: startFrame, stage: handover.value.1)
      // The segments that were still to come will never play: their decoders (and the files, a
      // mount's among them) close now, not when the last owner of the stream lets it go, which
      // may be a player the game keeps after the engine's shutdown.
      hold.stream?.dropUpcoming()
      // Let go of the stream before the census hears this thread is done: when the thread held
      // it last, its pages are unmapped here, inside the time `AudioEngine.shutdown` waits for
      // (at process exit, that wait is what runs before the libraries' destructors).
      hold.stream = nil
      // Done with everything: named so, since between `leave` and its return a descheduled
      // thread still shows in /proc (the C exit test, under load, saw "lm.decode" there after
      // the engine's shutdown had seen it end).
      nameCurrentThread("lm.ended")
      census?.leave()
    }
    thread.start()
  }

  deinit {
    meta.deinitialize(count: Self.blockCount)
    meta.deallocate()
  }

  /// Ends the decode thread (it holds the stream until then). Called when the voice is freed.
  func stop() {
    counters.stopped.store(true, ordering: .releasing)
    producerWake.signal()
  }

  // MARK: - Game side (any thread but the streaming thread)

  /// Adds a segment to play after the ones already there, gaplessly.
  func append(_ segment: StreamSegment) {
    // Under the lock the producer checks for segments and declares the stream drained; clearing
    // the flag here, under the same lock, means a consumer never sees "drained" while a segment
    // waits (an offline render would otherwise end a voice that is about to go on).
    upcoming.withLock { state in
      // A stopped stream plays nothing more: the segment (and its file) is not kept.
      guard !counters.stopped.load(ordering: .acquiring) else { return }
      state.segments.append(segment)
      counters.drainedGeneration.store(-1, ordering: .releasing)
    }
    producerWake.signal()
  }

  /// Lets go of the segments still to come (the decode thread, once stopped).
  private func dropUpcoming() {
    // Taken out under the lock, released after it (closing a file may take a while).
    let dropped = upcoming.withLock { state -> [StreamSegment] in
      defer { state.segments = [] }
      return state.segments
    }
    withExtendedLifetime(dropped) {}
  }

  /// Replaces the segments still to come after `token`. Returns false when the decode thread has
  /// already moved past `token` (it decoded ahead into the old next segment): the caller must then
  /// re-seek the voice within `token` with `keepFollowing: false` so the stale audio is dropped.
  func replaceUpcoming(after token: Int, with segments: [StreamSegment]) -> Bool {
    let inPlace = upcoming.withLock { state -> Bool in
      // A stopped stream plays nothing more: nothing to replace, nothing stale to drop.
      guard !counters.stopped.load(ordering: .acquiring) else { return true }
      state.segments = segments
      if !segments.isEmpty { counters.drainedGeneration.store(-1, ordering: .releasing) }
      return state.decodingToken == token
    }
    producerWake.signal()
    return inPlace
  }

  /// Ends the loops of every segment up to `token` (streaming thread: the voice decides what
  /// is committed). Segment `cutToken` still jumps back until it has jumped `cutPass` times (the
  /// seams within `releaseCommitFrames` of what the mixer has read, which the decode thread may
  /// already have jumped at); every other segment up to `token` jumps no more.
  func releaseLoop(through token: Int, cutToken: Int, cutPass: Int) {
    counters.releaseCutToken.store(cutToken, ordering: .relaxed)
    counters.releaseCutPass.store(cutPass, ordering: .relaxed)
    counters.loopReleasedThrough.store(token, ordering: .releasing)
    producerWake.signal()
  }

  // MARK: - Consumer (the streaming thread)

  /// Blocks decoded and not yet taken.
  var availableBlocks: Int {
    counters.produced.load(ordering: .acquiring) - counters.consumed.load(ordering: .relaxed)
  }

  /// The index of the block `peek` gives (blocks are counted from the stream's start).
  var consumedIndex: Int { counters.consumed.load(ordering: .relaxed) }

  /// Past the blocks a seek asked for ahead keeps, before the decode thread has started the new
  /// generation there: what sits at that index is stale and about to be overwritten.
  private func awaitsStartAfterKept(consumed: Int) -> Bool {
    let keep = counters.keepThrough.load(ordering: .relaxed)
    return keep != Int.min && consumed >= keep
      && counters.startedGeneration.load(ordering: .acquiring) < counters.requestedGeneration.load(ordering: .relaxed)
  }

  /// The oldest decoded block, if any. With `waitSeconds > 0` (offline renders only) waits that
  /// long for one, unless the stream is drained in the consumer's `generation` (no block will
  /// come); the real-time streaming thread never waits.
  func peek(waitSeconds: Double = 0, generation: Int = -2) -> Block? {
    var deadline: DispatchTime?
    while true {
      let consumed = counters.consumed.load(ordering: .relaxed)
      if !awaitsStartAfterKept(consumed: consumed), counters.produced.load(ordering: .acquiring) > consumed {
        return meta[consumed % Self.blockCount]
      }
      guard waitSeconds > 0, counters.drainedGeneration.load(ordering: .acquiring) != generation else { return nil }
      // An offline render mixes faster than one file decodes, so it comes here for nearly every
      // block; woken for each, the two threads spent about 6 % of the render's CPU (perf) in
      // futex wakes and context switches. So the producer wakes it once a few blocks are ready,
      // or when it stops making blocks (every sleep of the producer signals first: no wake is
      // lost).
      counters.consumerWakeLevel.store(Self.offlineWakeBlocks, ordering: .relaxed)
      let limit = deadline ?? .now() + waitSeconds
      deadline = limit
      if blockReady.wait(timeout: limit) == .timedOut { return nil }
    }
  }

  /// Hands the block from `peek` back to the producer.
  func release() {
    // Sequentially consistent with the producer's flag (see `waitAtSeam`): either it sees this
    // block handed back, or this sees it waiting and wakes it.
    let consumed = counters.consumed.add(1, ordering: .sequentiallyConsistent).newValue
    // Wake the producer only when the ring falls to its low-water mark (see `produce`), or when
    // it waits at a loop's seam for the mixer to come nearer.
    if counters.produced.load(ordering: .acquiring) - consumed <= Self.lowWaterBlocks
      || counters.producerAtSeam.load(ordering: .sequentiallyConsistent)
    {
      producerWake.signal()
    }
  }

  /// Asks the decode thread to continue from `frame` of segment `token`; blocks of earlier
  /// generations are stale. Going back into a finished segment replays what followed it, unless
  /// `keepFollowing` is false (the following segments were replaced). Returns the new generation.
  ///
  /// `keepingThrough`: a seek asked for before the consumer takes it (`Voice.prepareSeek`):
  /// the blocks before that index (see `consumedIndex`; at most `blockCount - 1` ahead) stay the
  /// consumer's to read in the old generation (the fade-out before the jump); the decode thread
  /// decodes the stream as it was up to there if it has not yet, drops what it decoded past
  /// it, and starts the new generation there, so the sought audio is waiting when the consumer
  /// gets to it. Until the decode thread has done so, `peek` gives nothing from that index on.
  func requestSeek(token: Int, frame: Int64, keepFollowing: Bool = true, keepingThrough: Int? = nil) -> Int {
    counters.keepThrough.store(keepingThrough ?? Int.min, ordering: .relaxed)
    counters.requestedFrame.store(frame, ordering: .relaxed)
    counters.requestedToken.store(token, ordering: .relaxed)
    counters.requestKeepsFollowing.store(keepFollowing, ordering: .relaxed)
    let generation = counters.requestedGeneration.add(1, ordering: .releasing).newValue
    producerWake.signal()
    return generation
  }

  // MARK: - Producer (the decode thread)

  /// The decode thread's view of the segment it decodes.
  private struct Current {
    var segment: StreamSegment
    var cursor: Int64
    var jumpsDone = 0
    /// Decoded up to the loop's end, the jump back still to come (see `seamGateOpen`).
    var atSeam = false
  }

  /// The end of the last block published (producer only): where the mixer stands once it has
  /// read everything in the ring.
  private var lastPublished = (token: Int.min, pass: 0, end: 0.0, generation: -1)

  private func produce(first: StreamSegment, startFrame: Int64, stage: RateConversionStage?) {
    var generation = 0
    var current: Current? = Current(segment: first, cursor: startFrame)
    var retained: [StreamSegment] = []
    var refilling = true
    let scratch = samples + Self.blockCount * blockFloats
    while !counters.stopped.load(ordering: .acquiring) {
      let requested = counters.requestedGeneration.load(ordering: .acquiring)
      var pendingError: DecodeError?
      let kept = counters.keepThrough.load(ordering: .relaxed)
      // A seek asked for ahead, with fewer blocks decoded than it keeps: the stream goes on as it
      // was until there are that many (the consumer reads them before it takes the seek), unless
      // it has nothing more to give.
      let extending =
        requested != generation && kept != Int.min && counters.produced.load(ordering: .relaxed) < kept
        && (current != nil || stage?.hasWork == true || upcoming.withLock { !$0.segments.isEmpty })
      if extending { refilling = true }
      if requested != generation && !extending {
        generation = requested
        if kept != Int.min, counters.produced.load(ordering: .relaxed) > kept {
          // A seek asked for ahead: what was decoded past the blocks the consumer keeps is
          // dropped, and the new generation is written from there (the consumer reads no block
          // at or past that index until `startedGeneration` says so).
          counters.produced.store(kept, ordering: .relaxed)
        }
        // The sought audio is wanted at once, whatever the ring holds: a producer waiting for
        // the low-water mark (the ring had been full) used to wait on, so a seek asked for ahead
        // that kept every block decoded found its target undecoded when its fade-out ended
        // (live 510 frames late; offline the render waited).
        refilling = true
        counters.startedGeneration.store(generation, ordering: .releasing)
        counters.drainedGeneration.store(-1, ordering: .releasing)
        let token = counters.requestedToken.load(ordering: .relaxed)
        let frame = counters.requestedFrame.load(ordering: .relaxed)
        let keep = counters.requestKeepsFollowing.load(ordering: .relaxed)
        if current?.segment.token != token, let index = retained.lastIndex(where: { $0.token == token }) {
          // Back into a finished segment: it becomes current again; what followed it goes back
          // in front of the upcoming segments (or away, when the caller replaced them).
          var following = Array(retained[(index + 1)...])
          if let current { following.append(current.segment) }
          let target = retained[index]
          retained.removeSubrange(index...)
          upcoming.withLock { state in
            if keep { state.segments.insert(contentsOf: following, at: 0) }
            state.decodingToken = token
          }
          current = Current(segment: target, cursor: frame)
        } else if current?.segment.token != token {
          // The segment is gone (an unknown token): continue with what is queued after it.
          current = nil
        }
        if var active = current {
          active.cursor = max(0, min(frame, active.segment.endFrame))
          active.atSeam = false
          do { try active.segment.decoder.seek(toFrame: active.cursor) } catch { pendingError = error }
          current = active
        }
        stage?.reset()
        lastPublished = (current?.segment.token ?? Int.min, current?.jumpsDone ?? 0, Double(frame), generation)
      }
      if let stage, stage.hasWork {
        // Resampled output waits to go into the ring (or to be made): before any new input.
        guard ringHasRoom(&refilling) else {
          sleepUntilWoken()
          continue
        }
        publishConverted(stage, generation: generation)
        continue
      }
      if current == nil {
        if let stage, stage.holdsSignal, upcoming.withLock({ $0.segments.isEmpty }) {
          // Out of segments, for now: let out what the resampler holds before saying so.
          stage.finish()
          continue
        }
        current = takeNext(drainedIfNone: generation)
        if current == nil {
          // Out of segments (takeNext said so: the consumer ends the voice once it has played
          // everything). Wait for an append or a seek (one asked for ahead is taken at once).
          if counters.requestedGeneration.load(ordering: .acquiring) == generation { sleepUntilWoken() }
          continue
        }
      }
      if var active = current, active.atSeam {
        // At a loop's end. The jump back waits until the mixer is near enough that a release
        // can no longer end the loop here (a release that came first plays on into the outro).
        active.atSeam = false
        if mayJump(active) {
          guard seamGateOpen(active, generation: generation) else {
            waitAtSeam(active, generation: generation)
            continue
          }
          let loop = active.segment.loop!
          active.jumpsDone += 1
          active.cursor = loop.start
          do { try active.segment.decoder.seek(toFrame: loop.start) } catch {
            // The pass played; the rest of the segment cannot be had.
            endSegment(active.segment, failure: error, at: loop.end, stage: stage, generation: generation)
            retain(active.segment, in: &retained)
            current = nil
            continue
          }
        }
        current = active
        continue
      }
      guard ringHasRoom(&refilling), var active = current else {
        sleepUntilWoken()
        continue
      }
      let segment = active.segment
      let loopLive = isLoopLive(active)
      // A trimmed end or a loop's end is a hard boundary. At the file's own end the decoder is
      // read until it gives nothing more, so that it can report a file cut short.
      let trimmed = segment.endFrame < segment.decoder.lengthFrames
      let boundary = loopLive ? segment.loop!.end : (trimmed ? segment.endFrame : Int64.max)
      let slot = counters.produced.load(ordering: .relaxed) % Self.blockCount
      let output = stage?.input ?? samples + slot * blockFloats
      let capacity = Int(max(0, min(Int64(Self.framesPerBlock), boundary - active.cursor)))
      let isStereo = segment.decoder.format.channelCount == 2
      var frames = 0
      var error = pendingError
      if error == nil && capacity > 0 {
        do {
          frames = try segment.decoder.readFrames(into: isStereo ? output : scratch, frameCapacity: capacity)
        } catch let failure {
          error = failure
        }
      }
      if !isStereo {
        for frame in 0..<frames {
          output[2 * frame] = scratch[frame]
          output[2 * frame + 1] = scratch[frame]
        }
      }
      if segment.gain != 1 {
        // The item's own level (ReplayGain): applied here, per sample, so it changes exactly at
        // a gapless seam, which a source gain set by the streaming thread could not.
        let gain = segment.gain
        for index in 0..<(2 * frames) { output[index] *= gain }
      }
      for stem in 0..<stemCount {
        decodeStem(
          stem < segment.stems.count ? segment.stems[stem] : nil, at: active.cursor, frames: frames,
          into: output + (stem + 1) * Self.framesPerBlock * 2, scratch: scratch, gain: segment.gain)
      }
      if frames == 0 && error == nil && capacity > 0 && segment.decoder.cursorFrames < min(boundary, segment.endFrame) {
        // Damage swallowed part of the stream: the item ends early, and says so.
        error = DecodeError(
          path: segment.decoder.path,
          reason: .truncated(
            "the stream ended at frame \(segment.decoder.cursorFrames), \(segment.endFrame - segment.decoder.cursorFrames) frames before its end"
          ))
      }
      let blockStart = active.cursor
      active.cursor += Int64(frames)
      let segmentDone = error != nil || (!loopLive && (frames == 0 || (trimmed && active.cursor >= segment.endFrame)))
      // The seam: the jump back to the loop's start (sample-exact) is the next step.
      if loopLive && error == nil && active.cursor >= boundary { active.atSeam = true }
      let finalPass = segmentDone || (!active.atSeam && !isLoopLive(active))
      let loop = finalPass ? nil : segment.loop
      if let stage {
        stage.stage(
          frames: frames, fileFrame: blockStart, token: segment.token, segmentStart: segment.startFrame,
          segmentEnd: segment.endFrame, finalPass: finalPass, pass: active.jumpsDone, loop: loop)
        // A failure ends the signal: what decoded before it plays, then the failure is reported.
        if let error {
          stage.finish(
            failure: error, token: segment.token, segmentStart: segment.startFrame, segmentEnd: segment.endFrame)
        }
      } else if frames > 0 || error != nil {
        // A block of zero frames only carries news (a failure); a plain end needs no block: the
        // next block's token (or the drained flag) tells.
        publish(
          frames: frames, position: Double(blockStart), token: segment.token, segmentStart: segment.startFrame,
          segmentEnd: segment.endFrame, finalPass: finalPass, pass: active.jumpsDone, loop: loop,
          generation: generation, error: error)
      }
      if segmentDone {
        retain(segment, in: &retained)
        current = nil
      } else {
        current = active
      }
    }
  }

  /// Decodes `frames` frames of a stem from file frame `start` (the frames the music's block
  /// holds) into its stereo `plane`. The stem follows the music's cursor: when it is elsewhere
  /// (the music looped back, joined, or was sought) it is sought to the same frame first, so it
  /// stays sample-locked whatever the music does. Past the stem's end, or with no stem, the
  /// plane is silent. A stem that fails to decode falls silent; the music plays on.
  private func decodeStem(
    _ stem: (any AudioDecoder)?, at start: Int64, frames: Int, into plane: UnsafeMutablePointer<Float>,
    scratch: UnsafeMutablePointer<Float>, gain: Float
  ) {
    var done = 0
    if let stem, frames > 0, start < stem.lengthFrames {
      do {
        if stem.cursorFrames != start { try stem.seek(toFrame: start) }
        let isStereo = stem.format.channelCount == 2
        while done < frames {
          let read = try stem.readFrames(into: isStereo ? plane + 2 * done : scratch, frameCapacity: frames - done)
          if read == 0 { break }
          if !isStereo {
            for frame in 0..<read {
              plane[2 * (done + frame)] = scratch[frame]
              plane[2 * (done + frame) + 1] = scratch[frame]
            }
          }
          done += read
        }
      } catch {
        // Damaged after the cue file checked it: this layer is silent from here on.
      }
    }
    if done < frames { (plane + 2 * done).update(repeating: 0, count: 2 * (frames - done)) }
    if gain != 1 {
      for index in 0..<(2 * done) { plane[index] *= gain }
    }
  }

  /// A loop is live while it may still jump back (`mayJump`) and the cursor has not reached its
  /// end (a seek to its end or beyond plays the outro).
  private func isLoopLive(_ active: Current) -> Bool {
    guard let loop = active.segment.loop, active.cursor < loop.end else { return false }
    return mayJump(active)
  }

  /// Whether the segment jumps back at its loop's end (once more): its jumps are not used up,
  /// and it was not released, or was released after the mixer committed to this seam.
  private func mayJump(_ active: Current) -> Bool {
    guard active.segment.loop != nil else { return false }
    if let count = active.segment.loopCount, active.jumpsDone >= count { return false }
    let token = active.segment.token
    guard token <= counters.loopReleasedThrough.load(ordering: .acquiring) else { return true }
    return token == counters.releaseCutToken.load(ordering: .relaxed)
      && active.jumpsDone < counters.releaseCutPass.load(ordering: .relaxed)
  }

  /// Whether the mixer has read near enough to the seam the producer stands at (within
  /// `releaseCommitFrames`, the same reach `Voice.releaseLoop` commits) for the jump to be
  /// decoded. Measured from the start of the block the consumer reads (or, with the ring empty,
  /// from the end of the last one published), which is never past where it is: so a seam the
  /// producer jumps at is one the voice counts as committed, and a release that ends the loop at
  /// a seam always comes before the jump there.
  private func seamGateOpen(_ active: Current, generation: Int) -> Bool {
    guard let loop = active.segment.loop else { return true }
    let consumed = counters.consumed.load(ordering: .sequentiallyConsistent)
    let reference: (token: Int, pass: Int, position: Double)
    if counters.produced.load(ordering: .relaxed) > consumed {
      let next = meta[consumed % Self.blockCount]
      // Blocks of an earlier generation are dropped by the consumer as it comes to them.
      guard next.generation == generation else { return false }
      reference = (next.token, next.pass, next.startPosition)
    } else {
      // Nothing in the ring: the mixer has read all there is. When nothing of this pass went out
      // yet, what it has still to come is in the resampler, less than a block and its reach.
      guard lastPublished.generation == generation, lastPublished.token == active.segment.token else { return true }
      reference = (lastPublished.token, lastPublished.pass, lastPublished.end)
    }
    // The mixer is in an earlier segment: its distance to this seam is longer than the ring.
    guard reference.token == active.segment.token else { return false }
    let distance = Self.framesToSeam(
      of: loop, pass: active.jumpsDone, from: reference.position, inPass: reference.pass, blockStep: blockStep)
    // One frame short of the voice's reach, so a rounding difference cannot make the two disagree.
    return distance <= Double(Self.releaseCommitFrames - 1)
  }

  /// Sleeps at a seam until the consumer hands back a block (or a request comes). The flag is
  /// raised before the gate is looked at again: a block handed back in between is seen either
  /// here or by the consumer, which then wakes this thread.
  private func waitAtSeam(_ active: Current, generation: Int) {
    counters.producerAtSeam.store(true, ordering: .sequentiallyConsistent)
    if !seamGateOpen(active, generation: generation) { sleepUntilWoken() }
    counters.producerAtSeam.store(false, ordering: .relaxed)
  }

  /// Keeps a finished segment (a seek may still go back into it).
  private func retain(_ segment: StreamSegment, in retained: inout [StreamSegment]) {
    retained.append(segment)
    if retained.count > Self.retainedSegments { retained.removeFirst() }
  }

  /// Reports a segment's failure at file frame `frame`: after what the resampler holds, when
  /// there is one.
  private func endSegment(
    _ segment: StreamSegment, failure: DecodeError, at frame: Int64, stage: RateConversionStage?, generation: Int
  ) {
    if let stage {
      stage.finish(
        failure: failure, token: segment.token, segmentStart: segment.startFrame, segmentEnd: segment.endFrame)
    } else {
      publish(
        frames: 0, position: Double(frame), token: segment.token, segmentStart: segment.startFrame,
        segmentEnd: segment.endFrame, finalPass: true, pass: 0, loop: nil, generation: generation, error: failure)
    }
  }

  /// Moves to the next upcoming segment, rewound to its start. With none, marks the stream
  /// drained in `generation`, under the lock that `append` takes.
  private func takeNext(drainedIfNone generation: Int) -> Current? {
    let next = upcoming.withLock { state -> StreamSegment? in
      guard !state.segments.isEmpty else {
        counters.drainedGeneration.store(generation, ordering: .releasing)
        return nil
      }
      let segment = state.segments.removeFirst()
      state.decodingToken = segment.token
      return segment
    }
    guard let next else { return nil }
    if next.decoder.cursorFrames != next.startFrame {
      do { try next.decoder.seek(toFrame: next.startFrame) } catch {
        return Current(segment: next, cursor: next.endFrame)
      }
    }
    return Current(segment: next, cursor: next.startFrame)
  }

  /// The producer's only way to sleep: it wakes a waiting consumer first, which may be waiting
  /// for more blocks than will now come (see `peek`), then sleeps until the consumer or a request
  /// wakes it (at most half a second: the loop then looks again).
  private func sleepUntilWoken() {
    blockReady.signal()
    _ = producerWake.wait(timeout: .now() + .milliseconds(500))
  }

  /// Whether the producer should fill the ring now: it refills from the low-water mark until full.
  private func ringHasRoom(_ refilling: inout Bool) -> Bool {
    let level = counters.produced.load(ordering: .relaxed) - counters.consumed.load(ordering: .acquiring)
    if level >= Self.blockCount { refilling = false }
    if level <= Self.lowWaterBlocks { refilling = true }
    return refilling
  }

  /// One step of the resampler's side: a block of its output into the ring, or, with none
  /// pending, a run of the resampler (and, when an ending is complete, the failure that ended it).
  private func publishConverted(_ stage: RateConversionStage, generation: Int) {
    if let made = stage.nextOutput() {
      let slot = counters.produced.load(ordering: .relaxed) % Self.blockCount
      (samples + slot * blockFloats).update(from: made.samples, count: 2 * made.frames)
      let marker = made.marker
      publish(
        frames: made.frames, position: made.position, token: marker.token, segmentStart: marker.segmentStart,
        segmentEnd: marker.segmentEnd, finalPass: marker.finalPass, pass: marker.pass, loop: marker.loop,
        generation: generation, error: nil)
    } else if let (failure, marker) = stage.advance() {
      publish(
        frames: 0, position: Double(marker.fileFrame), token: marker.token, segmentStart: marker.segmentStart,
        segmentEnd: marker.segmentEnd, finalPass: true, pass: marker.pass, loop: nil, generation: generation,
        error: failure)
    }
  }

  private func publish(
    frames: Int, position: Double, token: Int, segmentStart: Int64, segmentEnd: Int64, finalPass: Bool, pass: Int,
    loop: LoopRegion?, generation: Int, error: DecodeError?
  ) {
    let slot = counters.produced.load(ordering: .relaxed) % Self.blockCount
    meta[slot] = Block(
      samples: UnsafePointer(samples + slot * blockFloats), frames: frames, startPosition: position,
      generation: generation, token: token, segmentStart: segmentStart, segmentEnd: segmentEnd, finalPass: finalPass,
      pass: pass, loop: loop, error: error)
    if frames > 0 { lastPublished = (token, pass, position + Double(frames) * blockStep, generation) }
    let level = counters.produced.add(1, ordering: .releasing).newValue - counters.consumed.load(ordering: .relaxed)
    if level >= counters.consumerWakeLevel.load(ordering: .relaxed) || error != nil {
      blockReady.signal()
    }
  }
}
