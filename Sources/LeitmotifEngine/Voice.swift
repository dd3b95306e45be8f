import LeitmotifDecoding
import LeitmotifOutput

#if canImport(Glibc)
  import Glibc
#endif

/// A playing instance, mixed by Leitmotif itself: its decode-ahead stream (one or more segments
/// joined gaplessly), its time-stretcher (tempo that keeps pitch, music voices only), the
/// resampler that maps its file rate and playback rate onto mix frames, its shelf filter, the transport (playing, paused, fades, seeks, scans), and the crossfade
/// envelope and hand-over that let a queue move on to a second voice.
///
/// Every time here is a mix frame (frames since the engine started, the mix clock): a voice
/// starts, fades, hands over and stops on an exact frame, the same live as offline, because the
/// mixer renders every voice into one bus on that one clock (`StreamingLoop`).
///
/// Streaming-thread only. Rules for everything in here (the loop's rules, see `StreamingLoop`):
/// no locks, no allocation once attached (scratch buffers and the resampler are made in `init`),
/// no decoding or file reads (the stream's own thread does those).
package final class Voice: VoiceInput {
  /// Frames per decoded block of the stream (`DecodeAheadStream.framesPerBlock`). 4096 frames is
  /// 85 ms at 48 kHz: large enough that one decode call per block is cheap.
  static let framesPerBuffer = 4096
  /// The playback rates a voice plays at: 1/256 to 4; `setRate` takes a rate outside it (a ramp
  /// passing through 0.001 on its way to a pause) as the nearest end. Below 1/256 a mix of 256
  /// frames asked its resampler for less than one frame of the file: the voice fell silent as an
  /// underrun, and at 1e-9 a render never ended.
  package static let rateRange: ClosedRange<Float> = (1.0 / 256)...4
  /// The most a voice's volume goes to. Players' own volumes stop at 1; a director's mix gain
  /// may lift a state's music over what its queue has baked in (a reload that made the state
  /// that plays louder), and the peak limiter keeps the bus within full scale.
  package static let maximumVolume: Float = 16
  /// Pause, stop and seek ramp the gain over this long (click-free; the issue asks >= 5 ms).
  package static let transportFadeSeconds = 0.010
  /// `transportFadeSeconds` in frames at `rate`: where a seek taken on frame F lands (F plus
  /// this), for the players and the director that reckon with it.
  package static func transportFadeFrames(rate: Int) -> Int64 {
    Int64((transportFadeSeconds * Double(rate)).rounded())
  }
  /// A volume change glides over this many frames (no zipper noise when the director steps it).
  static let volumeGlideFrames = 256
  /// Stems a voice mixes besides its music (a state's `layers`).
  package static let maximumLayers = 8

  /// The voice's identity in the pool: its events name it, so a late one reaches no other owner.
  let handle: VoiceHandle
  /// Where the voice publishes its state; a released voice that fades out among the dying gets
  /// a detached one, so it no longer writes over its slot's next owner.
  var status: VoiceStatus
  let stream: DecodeAheadStream
  var format: AudioFormat { stream.format }
  private var fileRate: Int { stream.format.sampleRate }
  /// The mix rate (the output device's).
  let mixRate: Int
  private let transportFadeFrames: Int64
  /// Offline engines wait (bounded) for the decode thread; the real-time streaming thread never does.
  private let decodeWaitSeconds: Double
  private let settleLoads: (@Sendable () -> Bool)?
  private var generation = 0
  /// A seek asked of the decode thread ahead of its frame (`prepareSeek`): the target and the
  /// generation that brings it. The voice reads the blocks of `generation` until the seek is
  /// taken (`reposition` to the same target), then those of this one. `fadeEnd` is the mix frame
  /// its fade-out ends on, where the target is taken; `asked` the frame of the seek that named
  /// the target (a later seek during the same fade-out takes its place); `keptThrough` the
  /// stream index the blocks kept for the fade-out end at.
  private var preSeek: (target: Target, generation: Int, fadeEnd: Int64, asked: Int64, keptThrough: Int)?
  /// How many times the stream was moved (a seek, a stop, a resume's step back): a start waiting
  /// on a grid line of this voice takes the first line after a move (see `StartTrigger`).
  private(set) var repositions = 0
  /// The voice has read every block kept for it before `preSeek`'s target: what follows in the
  /// ring is the target's (a fade-out that needed more is cut short there: see `mix`).
  private var readToPreSeek = false

  // MARK: Reading the stream

  /// The block being read (taken from the ring with `peek`, handed back when used up).
  private var block: DecodeAheadStream.Block?
  private var blockOffset = 0
  /// A block handed to the resampler, handed back to the ring at the next request for input
  /// (the resampler may read it until then).
  private var lentBlock = false
  /// The file frame of the next input frame (fractional when the decode thread resampled), and
  /// the segment it belongs to.
  private var inputPosition: Double
  private var inputFrame: Int64 { Int64((inputPosition + 1e-6).rounded(.down)) }
  private var inputToken: Int
  private var inputSegmentStart: Int64 = 0
  private var inputSegmentEnd: Int64 = 0
  private var inputFinalPass = true
  /// The pass of the segment read (how often it had jumped back), and the loop it jumps back
  /// from at that pass's end (nil in its final pass).
  private var inputPass = 0
  private var inputLoop: LoopRegion?
  /// Whether the `input...` values describe a block read (false after a seek, until the first
  /// block of the new position comes).
  private var inputKnown = false
  /// The loop release in force (see `releaseLoop`): segments up to `through` jump back no more,
  /// except `token`, which still jumps while its pass is below `pass`.
  private var loopRelease: (through: Int, token: Int, pass: Int)?
  /// A release that came while no block was there to measure from (applied on the first).
  private var pendingLoopRelease: Int?
  /// The segment heard last (to notice a gapless join becoming audible).
  private(set) var audibleToken: Int
  /// The stream has played out (for now: an appended segment revives it).
  private var decoderEnded = false
  /// The last segment's failure, reported when the voice ends (or, if the stream goes on, as a
  /// `.segmentFailed` for `failedToken`).
  private(set) var failure: DecodeError?
  private var failedToken = 0

  // MARK: Mixing

  /// Holds `scratch` and `chunk`.
  private let pages: PageMemory
  private let scratch: UnsafeMutablePointer<Float>
  private let resampler: VoiceResampler?
  /// File frames per output frame: file rate / mix rate × playback rate.
  private var ratio: Double
  /// File frames per frame of the stream's blocks: 1, or file rate / mix rate when the decode
  /// thread resamples to the mix rate (then only a playback rate other than 1 resamples here).
  private let blockStep: Double
  /// What the resampler reads per frame it makes: blocks' frames per output frame.
  private var resamplerRatio: Double { ratio / blockStep }
  /// Whether the voice goes through the resampler: from the start when its file rate is not the
  /// mix rate, and from its first rate change on (it stays resampled from then on, so a rate
  /// that glides back to 1 does not jump). Otherwise the file is read frame for frame: bit-exact.
  private var resampling: Bool
  /// Resampled: the file frame (fractional) that the next output frame shows, integrated from
  /// the ratio exactly as libsamplerate ramps it (the resampler reads ahead of it).
  private var resampledPosition: Double = 0
  /// A jump in the file the resampler has read but not yet played out (a loop seam, a gapless
  /// join): the output reaches `end` (in the file's frames before the jump) and goes on `jump`
  /// frames away. Until then the position heard is before the seam, though the resampler's
  /// input is past it: a grid line just before a loop end is reached, not skipped.
  private var pendingSeam: Seam?
  private struct Seam {
    var end: Double
    var jump: Double
    /// The segment heard up to the seam (its token and frames), and the one after it: resampled,
    /// a gapless join is heard (and reported, and the position told in its segment) only when
    /// the output reaches it, not when the resampler or the stretcher reads it, up to a tenth
    /// of a second before.
    var token: Int
    var segmentStart: Int64
    var segmentEnd: Int64
    var nextToken: Int
    var nextSegmentEnd: Int64
  }
  /// The output/input ratio of the resampler's last call (nil after a reset).
  private var lastResamplerRatio: Double?
  private var filter: ShelfFilter
  private(set) var rate: Float = 1
  private var volumeTarget: Float = 1
  private var volumeNow: Float = 1
  /// The glide's step per frame, fixed when the volume is set: the glide is the same whatever
  /// blocks the mix comes in (live and offline cut their blocks differently).
  private var volumeStep: Float = 0
  /// Paused with its fades held (`pause(clock:holdingFades:)`): the mix frame the pause began
  /// on, by which the fades move on when the voice resumes.
  private var fadesHeldFrom: Int64?
  /// Paused (or pausing) with its fades held.
  var holdsFades: Bool { fadesHeldFrom != nil }
  /// Paused: the mix frame the pause began on. The stems' moves are on frames of the music (a
  /// layer brought in on the bar), so they wait with it: on the resume they move on by the
  /// pause's length, and a move on a bar the pause came before still lands on that bar.
  private var layersHeldFrom: Int64?
  /// The group of voices whose ducks this one follows (its owner's: a queue player's music; 0:
  /// none). Kept by the voice, so a voice let go goes on ducked while it fades out.
  var duckGroup: UInt32 = 0
  /// The ducks' gain for each mix frame of the block being mixed, from `duckGainsStart` (set by
  /// the streaming loop around `mix`; nil when no duck of its group moves in the block).
  var duckGains: UnsafePointer<Float>?
  var duckGainsStart: Int64 = 0
  /// The ducks' gain on the last frame mixed (for the gain the voice publishes).
  private var duckNow: Float = 1
  /// Resampled output is made in chunks of this many frames (see `produce`).
  static let resamplerChunkFrames = 64

  // MARK: Tempo

  /// The time-stretcher: made with the voice when its owner asked (a queue player once any
  /// tempo other than 1 was set), or handed over later (`adopt`); nil for the others, and when
  /// SoundTouch could not make one (then the tempo stays 1).
  private var stretcher: TimeStretcher?
  /// The tempo: speed without pitch (1: as written). `rate` multiplies with it.
  private(set) var tempo: Float = 1
  /// Whether the voice goes through the stretcher: from its first tempo other than 1 on (it stays
  /// stretched from then on, so a tempo that glides back to 1 does not jump). The stretcher feeds
  /// the resampler (which then runs even at rate 1), so positions are integrated as for a rate.
  private var stretching = false
  /// Blocks' frames per frame of the stretcher's output: the tempo while stretching, else 1.
  private var stretchStep: Double { stretching ? Double(tempo) : 1 }
  /// The stretcher started on a voice already resampled (a tempo set while the rate was not 1):
  /// the file frame up to which the output is still what the resampler read before it (its
  /// read-ahead, at the rate alone). Until the output gets there the position moves at the rate,
  /// and the stretcher's alignment is not taken off: counted at the tempo from the start, music
  /// heard trailed the beat grid by 20 to 67 ms for as long as it played.
  private var unstretchedUntil: Double?
  /// File frames per mix frame: what the position moves by per frame heard.
  private var speed: Double { ratio * stretchStep }
  /// The stretcher's output handed to the resampler (`stretchChunkFrames` frames, the voice's
  /// pages); small, so that what the resampler holds of one tempo is short when the tempo changes.
  private let stretchOutput: UnsafeMutablePointer<Float>
  static let stretchChunkFrames = 128
  /// The output what went in should make (frames put over the tempo they went in at, summed), and
  /// what came out, since the stretcher's signal began: at the stream's end silence pushes out
  /// the difference, the music's last frames, which SoundTouch holds until more comes.
  private var stretchExpected: Double = 0
  private var stretchReceived: Int64 = 0
  /// The stream ended and silence is pushing the last frames out.
  private var stretchTailing = false
  private var stretchSilencePuts = 0

  // MARK: Layers

  /// One stem's controls. Its gain is `fade` (the level a rule's `layer` action or the state's
  /// `volume` for it sets, moving on exact mix frames) times `drive` (the parameters' curves,
  /// stepped by the director and glided here), and it has a low-pass filter of its own.
  private struct Layer {
    var fade = FadeEnvelope.unity
    var driveNow: Float = 1
    var driveTarget: Float = 1
    var driveStep: Float = 0
    var filter: ShelfFilter
  }
  /// The stems of the stream besides its music (none for most voices), mixed into the music
  /// frame by frame as it is read, before the resampler and the voice's own filter and gains.
  private var layers: [Layer]
  /// Scratch for a filtered stem, and the music with its stems mixed in (what the resampler
  /// reads, which it may keep until its next request).
  private let layerScratch: UnsafeMutablePointer<Float>
  private let layerMix: UnsafeMutablePointer<Float>
  /// The mix frame of the next frame `produce` makes: what a stem's gain is evaluated at.
  private var produceFrame: Int64 = 0
  var layerCount: Int { layers.count }

  // MARK: Transport

  /// Crossfades: the envelope multiplies the transport gain. `finishWhenSilent` makes a fade to 0
  /// end the voice (it is let go), reported as `.fadedOut`.
  private var envelope = FadeEnvelope.unity
  private var finishWhenSilent = false
  /// Fading out for good already (an earlier crossfade's outgoing side).
  var isFinishing: Bool { finishWhenSilent }
  private var reportedFadedOut = false
  /// A hand-over to another voice, armed by the queue: when the segment `token` is in its final
  /// pass and `seconds` (of output) from its end, the loop starts `follower` and fades this out,
  /// both on the same mix frame.
  package struct Handoff {
    var follower: VoiceHandle
    var token: Int
    var seconds: Double
    var curve: FadeCurve
    /// Its frame came before the follower had audio (the streaming loop has said so).
    var late = false
    /// How long the follower plays (its first pass, at its speed), once the streaming loop
    /// knows: the crossfade is at most half of that too.
    var incomingSeconds: Double?

    package init(follower: VoiceHandle, token: Int, seconds: Double, curve: FadeCurve) {
      self.follower = follower
      self.token = token
      self.seconds = seconds
      self.curve = curve
    }
  }
  var handoff: Handoff?

  package enum Mode: Equatable {
    /// Not mixed: prepared, or paused or stopped at a position. `resumeFades` means the position
    /// is somewhere in the middle and a resume should fade in.
    case ready(resumeFades: Bool)
    case playing
    /// The transport gain ramps to 0; then the pending action runs, on the frame the ramp ends.
    case fadingOut
    case ended
  }
  private(set) var mode: Mode = .ready(resumeFades: false)

  /// Where a seek goes: a frame of one segment.
  package struct Target: Equatable {
    var token: Int
    var frame: Int64
    var keepFollowing = true
  }

  package enum PendingAction: Equatable {
    /// Pause; resume from `resumeFrame`, the first frame the pause's fade-out touched, so that
    /// nothing is lost.
    case pause(resumeFrame: Int64)
    case stop
    case seek(Target, thenPlay: Bool)
    /// Seek to wherever the fade-out began, dropping what followed (see `resync`).
    case resync(Int64)
  }
  private var pendingAction: PendingAction?
  /// The transport ramp (pause, resume, stop and seek fades), linear over `transportFadeSeconds`.
  private var ramp = FadeEnvelope.unity
  /// Nothing is mixed before this mix frame (a start on an exact frame).
  private var startFrame: Int64 = 0
  /// Playing, and waiting for its first block (a seek or a start is on its way from the decode
  /// thread): not an underrun. `fadeInOnData`: the first frame that arrives starts a fade-in.
  private var awaitingData = false
  private var fadeInOnData = false
  private var inUnderrun = false
  /// The mix frame after the last one mixed (or the clock of the last command).
  private var lastClock: Int64 = 0

  // Scanning (beginSeekingForward/Backward): jumps that grow the longer the scan runs.
  private var scanDirection = 0
  private var scanStartedFrame: Int64 = 0
  private var lastScanJumpFrame: Int64 = 0

  /// Events met outside `mix` (a seek's refill), handed out by the next mix. Its capacity is
  /// reserved when the voice is made, so the streaming thread never allocates for it.
  private var deferredEvents: [EngineEvent] = []

  /// Made by the loader (so that starting a voice allocates nothing on the streaming thread);
  /// the streaming thread `install`s it in its slot.
  /// `settleLoads` (offline engines): waits for the engine's loader when it has work
  /// outstanding, true if it waited; a stream that runs dry asks it before ending, since the
  /// gapless join that continues it may still be opening.
  init(
    handle: VoiceHandle, stream: DecodeAheadStream, startFrame: Int64, mixRate: Int, waitForDecoding: Bool,
    timeStretching: Bool = false, settleLoads: (@Sendable () -> Bool)? = nil
  ) {
    self.handle = handle
    self.settleLoads = settleLoads
    self.status = VoiceStatus()
    self.stream = stream
    let loaded = (stream: stream, startFrame: startFrame)
    self.mixRate = mixRate
    transportFadeFrames = Voice.transportFadeFrames(rate: mixRate)
    decodeWaitSeconds = waitForDecoding ? 10 : 0
    inputPosition = Double(loaded.startFrame)
    inputToken = loaded.stream.firstToken
    inputSegmentEnd = loaded.stream.firstSegmentEnd
    firstPassFrames = loaded.stream.firstSegmentLoops ? nil : max(0, loaded.stream.firstSegmentEnd - startFrame)
    audibleToken = loaded.stream.firstToken
    // Pages of the voice's own, like its stream's ring: voices come and go by the dozen a second
    // in a busy level, and malloc's arenas would fragment (see PageMemory).
    let layered = loaded.stream.stemCount > 0
    pages = PageMemory(
      floatCount: 2 * (Voice.framesPerBuffer + Voice.resamplerChunkFrames + Voice.stretchChunkFrames)
        + (layered ? 4 * Voice.framesPerBuffer : 0) + 4 * Voice.primeFrames)
    scratch = pages.floats
    chunk = pages.floats + 2 * Voice.framesPerBuffer
    layerScratch = chunk + 2 * Voice.resamplerChunkFrames
    layerMix = layerScratch + (layered ? 2 * Voice.framesPerBuffer : 0)
    stretchOutput = layerMix + (layered ? 2 * Voice.framesPerBuffer : 0)
    releasedTail = stretchOutput + 2 * Voice.stretchChunkFrames
    primeInput = releasedTail + 2 * Voice.primeFrames
    // Made here, on the loader (SoundTouch allocates as it warms up), at the blocks' rate.
    stretcher = timeStretching ? TimeStretcher(sampleRate: loaded.stream.blockRate) : nil
    layers = (0..<loaded.stream.stemCount).map { _ in Layer(filter: ShelfFilter(sampleRate: loaded.stream.blockRate)) }
    resampler = VoiceResampler(maximumFrames: Voice.framesPerBuffer)
    ratio = Double(loaded.stream.format.sampleRate) / Double(mixRate)
    blockStep = Double(loaded.stream.format.sampleRate) / Double(loaded.stream.blockRate)
    resampling = loaded.stream.blockRate != mixRate
    resampledPosition = Double(loaded.startFrame)
    filter = ShelfFilter(sampleRate: mixRate)
    // Starting mid-file fades in, like a resume: the first sample may be far from zero.
    mode = .ready(resumeFades: loaded.startFrame > 0)
    deferredEvents.reserveCapacity(8)
    _ = ensureBlock(events: &deferredEvents)
  }

  /// Takes the slot's status (streaming thread, when the voice attaches) and publishes to it.
  func install(status slotStatus: VoiceStatus) {
    status = slotStatus
    status.sampleRate.store(stream.format.sampleRate, ordering: .releasing)
    status.isLetGo.store(false, ordering: .releasing)
    status.lengthFrames.store(inputSegmentEnd, ordering: .releasing)
    status.token.store(audibleToken, ordering: .releasing)
    publishPosition()
  }

  deinit {
    stream.stop()
  }

  // MARK: - Transport (called by the loop for commands, at the mix frame `clock`)

  func play(clock: Int64) {
    lastClock = clock
    switch mode {
    case .ready(let resumeFades):
      if let held = fadesHeldFrom {
        // Resumed from the frame where the pause began: its fades go on from there too.
        fadesHeldFrom = nil
        envelope = envelope.shifted(by: clock - held)
        if finishWhenSilent { status.fadeStartFrame.store(envelope.startFrame, ordering: .releasing) }
      }
      if let held = layersHeldFrom {
        layersHeldFrom = nil
        for index in layers.indices { layers[index].fade = layers[index].fade.shifted(by: max(0, clock - held)) }
      }
      startFrame = clock
      ramp = resumeFades ? FadeEnvelope(from: 0, to: 1, startFrame: clock, durationFrames: transportFadeFrames) : .unity
      mode = .playing
      if block == nil && !decoderEnded {
        awaitingData = true
        fadeInOnData = resumeFades
      }
    case .fadingOut:
      // Changed its mind mid-fade: fade back in from where the gain is, keep any pending seek.
      switch pendingAction {
      case .seek(let target, _)?: pendingAction = .seek(target, thenPlay: true)
      case .resync?: break
      default:
        pendingAction = nil
        // (Not paused after all: the stems' moves stand where they were.)
        layersHeldFrom = nil
        startRamp(to: 1, clock: clock)
        mode = .playing
      }
    case .ended:
      // Played to its end: like MediaPlayer, play again from the beginning.
      performStop()
      play(clock: clock)
    case .playing: break
    }
  }

  /// Pauses with the transport fade; `play` resumes from the first frame that fade touched.
  /// `holdingFades`: the voice's own fade (a crossfade's, a fade-out for good not yet begun)
  /// stands still while paused and goes on from where it was on the resume, moved on by the
  /// pause's length; a voice let go waits, paused, instead of ending. What every voice of a
  /// crossfade or a pickup does when the game pauses in the middle of it (`QueuePlayer.pause`):
  /// otherwise a pause completes a fade-in in progress, and a voice let go ends.
  func pause(clock: Int64, holdingFades: Bool = false) {
    lastClock = clock
    switch mode {
    case .playing:
      if holdingFades {
        fadesHeldFrom = clock
        // Let go, its fade not begun: it holds until the resume, however long the pause (an
        // owner may still take it back, see `QueuePlayer.waitingBack`).
        if finishWhenSilent && envelope.startFrame > clock { status.fadeStartFrame.store(.max, ordering: .releasing) }
      }
      if !layers.isEmpty { layersHeldFrom = clock }
      fadeOut(then: .pause(resumeFrame: positionFrames), clock: clock)
    case .fadingOut:
      if case .seek(let target, _)? = pendingAction { pendingAction = .seek(target, thenPlay: false) }
    case .ready, .ended: break
    }
  }

  func stop(clock: Int64) {
    lastClock = clock
    scanDirection = 0
    switch mode {
    case .playing, .fadingOut: fadeOut(then: .stop, clock: clock)
    case .ready, .ended: performStop()
    }
  }

  /// A seek that the voice will take at mix frame `frame` (a timed command, seen `clock` before
  /// it; or `clock` itself, a seek at once): the decode thread is sent to the target now, keeping
  /// the blocks the voice reads until then and through its fade-out, so the target's first block
  /// is decoded when the fade-out ends, live as offline. It used to be asked for only then: live,
  /// the voice waited for it (11 ms after a 10 ms fade-out, on a 96 kHz FLAC), offline the render
  /// did, so the two put the sought audio on different frames. Only when those blocks fit in the
  /// ring and nothing else is under way (else the seek goes as before: `seek(toSeconds:clock:)`).
  ///
  /// A second seek that comes while the first one's fade-out runs (or will run: both seen ahead)
  /// takes the first one's place: the fade goes on, and its end takes the later target, so the
  /// decode thread is sent there instead, keeping the same blocks. Without that, seeks within
  /// 10 ms of one another (a scrub, a seek at once over a dip's seek) found the later target
  /// undecoded live: 855 frames of silence that the offline render, which waits, did not have.
  /// A seek after another one's fade-out, seen while that one was prepared, is prepared when it
  /// is taken (as a seek at once: 10 ms ahead of its target).
  func prepareSeek(toSeconds seconds: Double, atFrame frame: Int64, clock: Int64) {
    guard seconds.isFinite, frame >= clock, scanDirection == 0, !finishWhenSilent, !inUnderrun else { return }
    let target = Target(
      token: audibleToken,
      frame: max(0, min(FrameMath.frames(seconds: seconds, rate: Double(fileRate)), heardSegmentEnd)))
    if let prepared = preSeek {
      // Taken on the same fade-out's end as the seek prepared, and after it: the later target.
      guard prepared.target != target, frame >= prepared.asked, frame < prepared.fadeEnd else { return }
      let sought = stream.requestSeek(
        token: target.token, frame: target.frame, keepFollowing: target.keepFollowing,
        keepingThrough: prepared.keptThrough)
      preSeek = (target, sought, prepared.fadeEnd, frame, prepared.keptThrough)
      return
    }
    // The frame the fade-out ends on: one that starts at `frame`, or the one under way when the
    // voice already fades out to a seek (which this one replaces).
    let fadeEnd: Int64
    switch (mode, pendingAction) {
    case (.playing, nil): fadeEnd = frame + transportFadeFrames
    case (.fadingOut, .seek?) where frame < ramp.endFrame: fadeEnd = ramp.endFrame
    default: return
    }
    guard !awaitingData, let current = block else { return }
    // The blocks' frames the voice reads until the fade-out ends, a quarter more (a rate may
    // rise meanwhile), and the resampler's reach (and the stretcher's: it is fed in pieces).
    let output = Double(fadeEnd - max(clock, lastClock))
    let reach = 2 * Self.resamplerChunkFrames + 2 * Self.primeFrames + (stretching ? 2 * TimeStretcher.maximumPut : 0)
    let needed = output * speed / blockStep * 1.25 + Double(reach)
    let left = Double(current.frames - blockOffset)
    func blocks(_ frames: Double) -> Int {
      1 + Int(max(0, (frames - left) / Double(DecodeAheadStream.framesPerBlock)).rounded(.up))
    }
    // Stretched, SoundTouch may read a whole processing sequence more before it gives more out
    // (6,864 frames at 96 kHz and tempo 1.3): kept too while that leaves half the ring to the
    // target (a 96 kHz piece stretched and sped up reads the ring in a fifth of a second, and
    // fewer blocks for the target ran it dry). Should the fade-out read past what is kept, it
    // is cut short there (see `mix`).
    let sequence = Double(stretching ? stretcher?.sequenceInputFrames ?? 0 : 0)
    let keep = max(blocks(needed), min(blocks(needed + sequence), DecodeAheadStream.blockCount / 2))
    guard keep < DecodeAheadStream.blockCount else { return }
    let keptThrough = stream.consumedIndex + keep
    let sought = stream.requestSeek(
      token: target.token, frame: target.frame, keepFollowing: target.keepFollowing, keepingThrough: keptThrough)
    preSeek = (target, sought, fadeEnd, frame, keptThrough)
  }

  /// Seconds are turned into the frame nearest to them: `Double(n) / rate` gives frame n exactly.
  func seek(toSeconds seconds: Double, clock: Int64) {
    let frame = seconds.isFinite ? FrameMath.frames(seconds: seconds, rate: Double(fileRate)) : 0
    seek(toFrame: frame, clock: clock)
  }

  /// Seeks within the segment being heard. `keepFollowing: false` also drops the segments decoded
  /// after it (the queue replaced them).
  func seek(toFrame frame: Int64, clock: Int64, keepFollowing: Bool = true) {
    lastClock = clock
    let target = Target(token: audibleToken, frame: max(0, min(frame, heardSegmentEnd)), keepFollowing: keepFollowing)
    switch mode {
    case .playing: fadeOut(then: .seek(target, thenPlay: true), clock: clock)
    case .fadingOut:
      let resume: Bool
      switch pendingAction {
      case .seek(_, let thenPlay)?: resume = thenPlay
      case .pause?, .stop?: resume = false
      case .resync?, nil: resume = true
      }
      pendingAction = .seek(target, thenPlay: resume)
    case .ready(let resumeFades):
      if target.frame == positionFrames && keepFollowing && (block != nil || decoderEnded) {
        // Already there (the loader opened the file at this very frame): no decoding twice.
        mode = .ready(resumeFades: resumeFades || target.frame > 0)
      } else {
        reposition(to: target)
        mode = .ready(resumeFades: resumeFades || target.frame > 0)
      }
    case .ended:
      reposition(to: target)
      mode = .ready(resumeFades: target.frame > 0)
    }
  }

  /// Drops what was decoded after the audible segment (the queue changed what follows it) and
  /// re-decodes from where the fade-out began: a 10 ms dip instead of the wrong next item.
  func resync(clock: Int64) {
    lastClock = clock
    switch mode {
    case .playing: fadeOut(then: .resync(positionFrames), clock: clock)
    case .fadingOut:
      if pendingAction == nil { pendingAction = .resync(positionFrames) }
    case .ready, .ended:
      reposition(to: Target(token: audibleToken, frame: positionFrames, keepFollowing: false))
      mode = .ready(resumeFades: true)
    }
  }

  /// The playback speed (> 0): resamples, so speed and pitch change together. Takes effect at the
  /// next frame mixed; a resampled voice glides to the new ratio within one mix.
  func setRate(_ newRate: Float) {
    guard newRate.isFinite, newRate > 0 else { return }
    rate = min(max(newRate, Self.rateRange.lowerBound), Self.rateRange.upperBound)
    ratio = Double(fileRate) / Double(mixRate) * Double(rate)
    if !resampling && resamplerRatio != 1, let resampler {
      resampling = true
      resampledPosition = inputPosition
      pendingSeam = nil
      lastResamplerRatio = nil
      resampler.reset()
      // Only under music heard: a voice not started (a rate set before play) or paused starts
      // the resampler clean, at its ratio, as a fade or the start itself covers it.
      if isAudible { primeResampler(resampler) }
    }
  }

  /// Frames of what was just played that a resampler taking over is given first (see
  /// `primeResampler`): more than libsamplerate's medium sinc reaches back at the fastest rate.
  static let primeFrames = 256
  /// The last `primeFrames` of the block released last (the frames before the current block).
  private let releasedTail: UnsafeMutablePointer<Float>
  private var releasedTailFrames = 0
  /// The history handed to the resampler while it is primed, and whether it still waits to be.
  private let primeInput: UnsafeMutablePointer<Float>
  private var primePending = false

  /// Gives a resampler that takes over from the unresampled path the `primeFrames` just played,
  /// at a ratio of 1, and throws its output for them away: it starts with its filter full of
  /// the music, as if it had been running. Reset, its filter held silence before the first frame,
  /// and the first change of rate away from 1 clicked (a dip over the filter's reach; trial 6).
  /// Its next output is the next frame to play, and its ratio glides from 1 to the new one.
  private func primeResampler(_ resampler: VoiceResampler) {
    // The frames before `inputPosition`: the released block's tail, then the current block's.
    let frames: Int = Self.primeFrames
    let fromCurrent: Int = block == nil ? 0 : min(blockOffset, frames)
    let fromTail: Int = min(frames - fromCurrent, releasedTailFrames)
    let silent: Int = frames - fromCurrent - fromTail
    primeInput.update(repeating: 0, count: 2 * silent)
    let tailStart: UnsafeMutablePointer<Float> = releasedTail + 2 * (releasedTailFrames - fromTail)
    (primeInput + 2 * silent).update(from: tailStart, count: 2 * fromTail)
    if let current = block, fromCurrent > 0 {
      let currentStart: UnsafePointer<Float> = current.samples + 2 * (blockOffset - fromCurrent)
      (primeInput + 2 * (silent + fromTail)).update(from: currentStart, count: 2 * fromCurrent)
    }
    primePending = true
    let produced = resampler.render(into: scratch, frames: Self.primeFrames, inputPerOutput: 1, input: self)
    primePending = false
    if produced == Self.primeFrames { lastResamplerRatio = 1 } else { resampler.reset() }
  }

  /// Takes a stretcher made on the loader for a voice that had none; false (and the caller lets
  /// it go off this thread) when it has one already.
  func adopt(_ made: TimeStretcher) -> Bool {
    guard stretcher == nil else { return false }
    stretcher = made
    return true
  }

  /// The tempo (speed without pitch; clamped to `TimeStretcher.tempoRange`), for a voice with a
  /// stretcher (others ignore it). Takes effect at the next frame mixed, from the stretcher's
  /// next sequence; the first tempo other than 1 starts the stretcher where the stream is read
  /// next, so nothing is skipped or heard twice.
  func setTempo(_ newTempo: Float) {
    guard let stretcher, resampler != nil, newTempo.isFinite, newTempo > 0 else { return }
    let clamped = min(max(newTempo, TimeStretcher.tempoRange.lowerBound), TimeStretcher.tempoRange.upperBound)
    if !stretching {
      guard clamped != 1 else { return }
      if !resampling {
        resampling = true
        resampledPosition = inputPosition
        pendingSeam = nil
        lastResamplerRatio = nil
        resampler?.reset()
      }
      if resampling {
        let read = inputPosition - (pendingSeam?.jump ?? 0)
        unstretchedUntil = read > resampledPosition ? read : nil
      }
      stretching = true
      restartStretcher(stretcher)
    }
    tempo = clamped
    stretcher.setTempo(clamped)
  }

  /// A fresh signal through the stretcher.
  private func restartStretcher(_ stretcher: TimeStretcher) {
    stretcher.clear()
    stretchExpected = 0
    stretchReceived = 0
    stretchTailing = false
    stretchSilencePuts = 0
  }

  /// Glides to the new volume over `volumeGlideFrames` while heard; a voice not heard yet (or
  /// paused) takes it at once, so a start at a low volume does not begin with a blip at full.
  /// `clock`: the mix frame it is applied on. A voice that has not sounded yet (silent, or
  /// starting on this very frame or later) takes the volume at once; one that is heard glides
  /// to it (no zipper noise). Without that, a start that sets its volume just after `play` on
  /// the same frame (a fade-in from 0) played its first mix gliding down from full volume.
  func setVolume(_ newVolume: Float, clock: Int64? = nil) {
    volumeTarget = newVolume.isFinite ? max(0, min(Voice.maximumVolume, newVolume)) : 1
    if !isAudible || clock.map({ $0 <= startFrame }) == true { volumeNow = volumeTarget }
    volumeStep = (volumeTarget - volumeNow) / Float(Voice.volumeGlideFrames)
  }

  /// The high-frequency gain of the voice's shelf filter (1: unfiltered).
  var lowPassGain: Float { filter.gainHF }

  /// Muffles the voice (see `ShelfFilter`); lands on the next frame mixed.
  func setLowPass(_ gainHF: Float) { filter.set(gainHF: gainHF) }

  /// Layer `index`'s parameter-driven gain (glided like `setVolume`) and low-pass; ignored for a
  /// layer the stream does not have.
  func setLayer(_ index: Int, gain: Float, lowPass: Float) {
    guard layers.indices.contains(index) else { return }
    let target = gain.isFinite ? max(0, min(1, gain)) : 1
    layers[index].driveTarget = target
    if !isAudible { layers[index].driveNow = target }
    layers[index].driveStep = (target - layers[index].driveNow) / Float(Voice.volumeGlideFrames)
    layers[index].filter.set(gainHF: lowPass)
  }

  /// Moves layer `index`'s level to `level` along `curve` over `seconds`, from mix frame `start`
  /// (0 s: at once, on that frame), from the level it has there.
  func fadeLayer(_ index: Int, to level: Float, seconds: Double, curve: FadeCurve, start: Int64) {
    guard layers.indices.contains(index) else { return }
    let target = level.isFinite ? max(0, min(1, level)) : 1
    layers[index].fade = .following(
      layers[index].fade, to: target, startFrame: start, durationFrames: max(0, frames(seconds: seconds)), curve: curve,
      now: lastClock)
  }

  /// Adds the stems of `block`'s frames `offset ..< offset + count` to `output` (which holds the
  /// music's), each at its gain: frame i at mix frame `mixStart + i * mixPerFrame`.
  private func addLayers(
    of block: DecodeAheadStream.Block, offset: Int, count: Int, into output: UnsafeMutablePointer<Float>,
    mixStart: Int64, mixPerFrame: Double
  ) {
    let planeFloats = 2 * DecodeAheadStream.framesPerBlock
    for index in layers.indices {
      var plane = block.samples + (index + 1) * planeFloats + 2 * offset
      let spanEnd = mixStart + Int64((Double(count) * mixPerFrame).rounded(.up))
      let steady =
        layers[index].driveNow == layers[index].driveTarget
        && layers[index].fade.isConstant(from: mixStart, count: Int(spanEnd - mixStart))
      if steady && layers[index].driveNow * layers[index].fade.gain(at: mixStart) == 0 { continue }
      if !layers[index].filter.isBypassed {
        layerScratch.update(from: plane, count: 2 * count)
        layers[index].filter.process(layerScratch, frames: count)
        plane = UnsafePointer(layerScratch)
      }
      if steady {
        let gain = layers[index].driveNow * layers[index].fade.gain(at: mixStart)
        for sample in 0..<(2 * count) { output[sample] += plane[sample] * gain }
        continue
      }
      for frame in 0..<count {
        var layer = layers[index]
        if layer.driveNow != layer.driveTarget {
          layer.driveNow =
            abs(layer.driveTarget - layer.driveNow) <= abs(layer.driveStep)
            ? layer.driveTarget : layer.driveNow + layer.driveStep
          layers[index].driveNow = layer.driveNow
        }
        let at = mixStart + Int64((Double(frame) * mixPerFrame).rounded(.down))
        let gain = layer.driveNow * layer.fade.gain(at: at)
        output[2 * frame] += plane[2 * frame] * gain
        output[2 * frame + 1] += plane[2 * frame + 1] * gain
      }
    }
  }

  func scan(direction: Int, clock: Int64) {
    scanDirection = direction
    scanStartedFrame = clock
    lastScanJumpFrame = clock
  }

  // MARK: - Crossfades

  /// Fades in along `curve` from mix frame `start` (the incoming side of a crossfade) and starts
  /// playing there: nothing of the voice is mixed before `start`. A voice already heard (a
  /// hand-over that began a moment before a skip asked for the same crossfade) fades in from the
  /// level it has, not from silence.
  func fadeIn(seconds: Double, curve: FadeCurve, start: Int64) {
    let duration = frames(seconds: max(seconds, Voice.transportFadeSeconds))
    envelope =
      isAudible
      ? .following(envelope, to: 1, startFrame: start, durationFrames: duration, curve: curve, now: lastClock)
      : FadeEnvelope(from: 0, to: 1, startFrame: start, durationFrames: duration, curve: curve)
    finishWhenSilent = false
    // The envelope does the fading: no transport fade on top of it.
    if case .ready = mode { mode = .ready(resumeFades: false) }
    play(clock: start)
  }

  /// Fades out from the level heard at `start` along `curve`, starting at mix frame `start` (until
  /// then the gain goes on as it was: a fade-in in progress goes on rising); at
  /// silence the voice ends and reports `.fadedOut`, and its owner lets it go. Music that ends
  /// before the fade would (its last item in its last pass, nothing joined after it) fades out by
  /// its end instead: it used to stop where it ended, mid-fade, a cut.
  func fadeOutAndFinish(seconds: Double, curve: FadeCurve, start: Int64) {
    handoff = nil
    var duration = frames(seconds: max(seconds, Voice.transportFadeSeconds))
    if let left = framesLeft(at: start), left < duration {
      duration = max(left, frames(seconds: Voice.transportFadeSeconds) / 2)
    }
    envelope = .following(envelope, to: 0, startFrame: start, durationFrames: duration, curve: curve, now: lastClock)
    finishWhenSilent = true
    status.fadeStartFrame.store(start, ordering: .releasing)
    status.isLetGo.store(true, ordering: .releasing)
  }

  /// Called off while fading out for good (see `EngineCommand.callOff`): fades back up from the
  /// level at `clock` over the transport fade, and plays on. Nothing once the fade has ended.
  func keepPlaying(clock: Int64) {
    if let held = fadesHeldFrom, finishWhenSilent, !reportedFadedOut {
      // Paused with its fade held (a pickup paused, then called off): back up from the level it
      // paused at, on the resume (the envelope moves on with it).
      envelope = FadeEnvelope(
        from: envelope.gain(at: held), to: 1, startFrame: held,
        durationFrames: frames(seconds: Voice.transportFadeSeconds))
      finishWhenSilent = false
      status.isLetGo.store(false, ordering: .releasing)
      return
    }
    guard finishWhenSilent, !reportedFadedOut, isAudible else { return }
    envelope = .following(
      envelope, to: 1, startFrame: clock, durationFrames: frames(seconds: Voice.transportFadeSeconds), curve: .linear,
      now: lastClock)
    finishWhenSilent = false
    status.isLetGo.store(false, ordering: .releasing)
  }

  /// How many mix frames of music the voice has left from mix frame `at`, when it will end: it
  /// plays the final pass of its stream's last segment. Nil when it goes on (a loop, a gapless
  /// join waiting or decoded), or is not playing.
  private func framesLeft(at frame: Int64) -> Int64? {
    guard mode == .playing, !awaitingData, isFinalPass, audibleToken == inputToken,
      stream.endsWith(token: inputToken)
    else { return nil }
    let now = Double(inputSegmentEnd) - (resampling ? exactPosition : inputPosition)
    // (A hair over: see `framesUntilHandoff`.)
    let left = FrameMath.clamp((now / speed + 1e-6).rounded(.down)) - max(0, frame - lastClock)
    return max(0, left)
  }

  /// In how many mix frames from now the armed hand-over should start: when the handed-over
  /// segment, in its final pass, is the crossfade's length from its end (0: now, it is already
  /// over). Nil: not yet within this reach (or nothing armed).
  func framesUntilHandoff() -> Int64? {
    guard let handoff, mode == .playing || mode == .ended, !awaitingData else { return nil }
    if mode == .ended || (block == nil && decoderEnded) { return 0 }
    guard inputToken == handoff.token else {
      // Already past the handed-over segment (it ended into a gapless follower): hand over now.
      return inputToken > handoff.token ? 0 : nil
    }
    guard isFinalPass else { return nil }
    // From the fractional position: the whole frame it falls in is one a block earlier or later
    // depending on where the mix blocks are cut, and so, live and offline, the hand-over was.
    // Rounded down from a hair over: a 44.1 kHz file on a 48 kHz mix is a whole number of mix
    // frames from its end on every block, but its position, summed over blocks cut where the
    // mix clock happens to cut them, comes out a last place either side (96223.99999999999 for
    // 96224), and live and offline handed over a frame apart.
    let remainingOutput = (Double(inputSegmentEnd) - filePosition) / speed
    let fade = Double(handoffFrames())
    return max(0, FrameMath.clamp((remainingOutput - fade + 1e-6).rounded(.down)))
  }

  /// In how many mix frames from now this voice plays frame `fileFrame` of segment `token` (0:
  /// it is there or past it; also 0 when it plays another segment now, or has ended: the moment
  /// is gone). Nil while it waits for its first audio.
  func framesUntil(fileFrame: Int64, token: Int) -> Int64? {
    guard !awaitingData else { return nil }
    return mixFramesUntil(fileFrame: Double(fileFrame), token: token, clock: lastClock) ?? 0
  }

  /// In how many mix frames from `clock` this voice plays frame `fileFrame` of segment `token`,
  /// if it is playing that segment now (nil otherwise: waiting for audio, paused, another
  /// segment). A voice that starts later in the block counts from its start frame.
  func mixFramesUntil(fileFrame: Double, token: Int, clock: Int64) -> Int64? {
    guard let position = playingPosition(token: token) else { return nil }
    // From the exact (fractional, when resampled) position: the first output frame at or after
    // the one that shows file frame `fileFrame`.
    let remaining = (fileFrame - position) / speed
    return max(0, startFrame - clock) + max(0, FrameMath.clamp((remaining - 1e-6).rounded(.up)))
  }

  /// The file frame (fractional when resampled) of the next frame mixed, while segment `token`
  /// plays (see `mixFramesUntil`).
  func playingPosition(token: Int) -> Double? {
    guard !awaitingData, mode == .playing || mode == .fadingOut, heardToken == token else { return nil }
    return resampling ? exactPosition : inputPosition
  }

  /// The file's sample rate.
  var fileSampleRate: Int { fileRate }

  /// Ends the loops of the segments up to `token`, at the first seam the decode thread has not
  /// been allowed to jump at yet: a seam more than `DecodeAheadStream.releaseCommitFrames` (of
  /// the blocks' frames) beyond what the voice has read ends the loop there; nearer ones are
  /// committed, and the loop ends after them. Decided here, from the position read, so a
  /// release on a given mix frame ends the loop at the same seam live and offline, however far
  /// ahead the decode thread happens to be.
  func releaseLoop(through token: Int) {
    guard inputKnown else {
      pendingLoopRelease = max(pendingLoopRelease ?? token, token)
      return
    }
    let through = max(token, loopRelease?.through ?? token)
    var cut = (token: inputToken, pass: inputPass)
    if inputToken > through {
      // The released segments were read to their ends already: nothing of them is left to loop.
      cut = (through, 0)
    } else if let loop = inputLoop, !isFinalPass {
      // The seams within reach are committed: this pass's, and, for a loop shorter than the
      // reach, the ones after it.
      cut.pass += DecodeAheadStream.passesCommitted(
        framesToSeam: DecodeAheadStream.framesToSeam(
          of: loop, pass: inputPass, from: inputPosition, inPass: inputPass, blockStep: blockStep),
        loopFrames: Double(loop.end - loop.start) / blockStep)
    }
    if let earlier = loopRelease, earlier.through >= cut.token {
      // An earlier release stands: it may only end the loop sooner.
      cut.pass = earlier.token == cut.token ? min(cut.pass, earlier.pass) : min(cut.pass, inputPass)
    }
    loopRelease = (through, cut.token, cut.pass)
    stream.releaseLoop(through: through, cutToken: cut.token, cutPass: cut.pass)
  }

  /// Whether the block read is in its segment's final pass: so marked when decoded, or made so
  /// by a release since.
  private var isFinalPass: Bool {
    if inputFinalPass { return true }
    guard let release = loopRelease, inputToken <= release.through else { return false }
    return inputToken != release.token || inputPass >= release.pass
  }

  /// Resampled: the (fractional) file frame of the next frame mixed: the end of what the
  /// resampler made, less what of its last chunk is not mixed yet.
  private var exactPosition: Double {
    let position = unfoldedPosition
    guard let seam = pendingSeam, position >= seam.end - 1e-9 else { return position }
    return position + seam.jump
  }

  /// The position of the next frame mixed, before a pending seam: integrated, and, stretched,
  /// less how far the stretcher's output is ahead of that on average
  /// (`TimeStretcher.alignmentSeconds`).
  private var unfoldedPosition: Double {
    let position = resampledPosition - Double(chunkFrames - chunkOffset) * speed
    guard stretching, unstretchedUntil == nil else { return position }
    return position - TimeStretcher.alignmentSeconds(tempo: tempo) * Double(fileRate)
  }

  /// Folds a seam the output has played past into the position (so the next one has the slot),
  /// and reports a gapless join there on the frame it is heard: `nextFrame` is the mix frame of
  /// the next frame mixed.
  private func foldPassedSeam(events: inout [EngineEvent], nextFrame: Int64) {
    let position = unfoldedPosition
    guard let seam = pendingSeam, position >= seam.end - 1e-9 else { return }
    let heard = nextFrame - max(0, FrameMath.clamp(((position - seam.end) / speed).rounded(.down)))
    fold(seam, heardAt: max(0, heard), events: &events)
  }

  private func fold(_ seam: Seam, heardAt frame: Int64, events: inout [EngineEvent]) {
    resampledPosition += seam.jump
    pendingSeam = nil
    if resampling { seamHeard = (frame, seam.nextToken, seam.end + seam.jump) }
    guard seam.nextToken != audibleToken, seam.nextToken >= 0 else { return }
    audibleToken = seam.nextToken
    status.lengthFrames.store(seam.nextSegmentEnd, ordering: .releasing)
    status.token.store(seam.nextToken, ordering: .releasing)
    events.append(.segmentStarted(voice: handle, token: seam.nextToken, frame: frame))
  }

  /// Resampled, a seam read and not yet heard: the output still plays the segment before it.
  private var unheardSeam: Seam? {
    guard resampling, let seam = pendingSeam, unfoldedPosition < seam.end - 1e-9 else { return nil }
    return seam
  }

  /// The last jump or join the output went through: the mix frame it was heard on, and the
  /// segment and file frame played from there. A beat line right there (a loop's start, the
  /// first downbeat of a gapless repeat) was not yet in reach when the block began: the mixer
  /// reports it after (see `StreamingLoop.reportBeats`).
  private(set) var seamHeard: (frame: Int64, token: Int, position: Double)?

  /// Where the pass of segment `token` being heard ends: the file frame of its loop's end or of
  /// its own end, where the music goes on elsewhere (a line there belongs to what comes next).
  /// Nil while another segment is heard.
  func passEnd(token: Int) -> Double? {
    if let seam = unheardSeam { return seam.token == token ? seam.end : nil }
    guard inputToken == token else { return nil }
    if let loop = inputLoop, !isFinalPass { return Double(loop.end) }
    return Double(inputSegmentEnd)
  }

  /// File frames per mix frame now.
  var framesPerMixFrame: Double { speed }

  /// Resampled or stretched: in how many mix frames from the last mix's end the input not yet
  /// read is heard (what the resampler and the stretcher hold; a gain set on the stems before
  /// that frame comes too late for it). 0 when read frame for frame.
  func readAheadFrames() -> Int64 {
    guard resampling, inputKnown else { return 0 }
    let unread = inputPosition - (pendingSeam?.jump ?? 0)
    return max(0, FrameMath.clamp(((unread - unfoldedPosition) / speed).rounded(.up)))
  }

  /// A layered voice lends the resampler this much of a block at a time: the stems' gains are
  /// set on what it reads, so the less it holds, the nearer its line a layer move can still be
  /// asked for (a whole block was up to 107 ms at rate 0.8).
  static let layeredReadFrames = 256

  /// The segment heard (its token and frames): the one read, or, resampled, the one before a
  /// join the output has not reached.
  private var heardToken: Int { unheardSeam?.token ?? inputToken }
  private var heardSegmentStart: Int64 { unheardSeam?.segmentStart ?? inputSegmentStart }
  private var heardSegmentEnd: Int64 { unheardSeam?.segmentEnd ?? inputSegmentEnd }

  /// While the resampler reads (inside `resampleChunk`): the mix frame on which input at file
  /// frame `position` of the block being read is heard. The resampler and the stretcher read
  /// ahead of what they give out, the stretcher by up to a tenth of a second, so what is read now
  /// is not heard on the frame being made.
  private func heardFrame(ofInput position: Double) -> Int64 {
    let unfolded = position - (pendingSeam?.jump ?? 0)
    var heard = resampledPosition
    if stretching { heard -= TimeStretcher.alignmentSeconds(tempo: tempo) * Double(fileRate) }
    return produceFrame + FrameMath.clamp(((unfolded - heard) / speed).rounded())
  }

  /// Frames of this voice's file in `seconds`.
  func fileFrames(seconds: Double) -> Int64 { FrameMath.frames(seconds: seconds, rate: Double(fileRate)) }

  /// Where segment `token` plays now, in seconds of its file (nil: another segment, waiting for
  /// audio, or not moving).
  func playingSeconds(token: Int) -> Double? {
    playingPosition(token: token).map { $0 / Double(fileRate) }
  }

  /// Where the loop of segment `token` ends, in seconds of its file, while this voice plays that
  /// segment and will jump back from there (nil: no loop, or its last pass).
  func loopEndSeconds(token: Int) -> Double? {
    if let seam = unheardSeam {
      // The output has yet to reach a jump the resampler read: back in this segment (a loop).
      return seam.token == token && seam.nextToken == token ? seam.end / Double(fileRate) : nil
    }
    guard inputToken == token, let loop = inputLoop, !isFinalPass else { return nil }
    return Double(loop.end) / Double(fileRate)
  }

  /// Mix frames this voice takes to play `fileSeconds` of its file at its speed now.
  func mixFrames(fileSeconds: Double) -> Int64 {
    FrameMath.clamp((fileSeconds * Double(fileRate) / speed).rounded())
  }

  /// The armed crossfade's length in seconds, at most half the outgoing item (a 3 s crossfade out
  /// of a 1 s item would otherwise begin before it is heard) and half the incoming one (a 3 s
  /// crossfade into a 2 s item faded it out again before it had come in: it peaked 6 dB down,
  /// under the outgoing item, with three voices heard at once).
  func handoffSeconds() -> Double {
    guard let handoff else { return 0 }
    let itemSeconds = Double(inputSegmentEnd - inputSegmentStart) / Double(fileRate) / (Double(rate) * stretchStep)
    var seconds = handoff.seconds
    if itemSeconds > 0 { seconds = min(seconds, itemSeconds / 2) }
    if let incoming = handoff.incomingSeconds, incoming > 0 { seconds = min(seconds, incoming / 2) }
    return max(Voice.transportFadeSeconds, seconds)
  }

  /// Frames of the file from where the voice starts to the end of its first segment; nil when
  /// that segment loops.
  private let firstPassFrames: Int64?

  /// Output seconds of the voice's first pass through its first segment, at its speed now (nil
  /// when the segment loops): what a crossfade into it may take half of.
  var firstPassSeconds: Double? {
    guard let frames = firstPassFrames, frames > 0 else { return nil }
    return Double(frames) / Double(fileRate) / (Double(rate) * stretchStep)
  }

  private func handoffFrames() -> Int64 { frames(seconds: handoffSeconds()) }

  /// A voice that is being let go: silent now, or fading to silence.
  var isLetGo: Bool { finishWhenSilent }

  /// Let go: the mix frame its fade to silence begins on (later than now while it is held, as
  /// the music under a pickup is, to the downbeat). Nil while it plays on.
  var letGoFadeStart: Int64? { finishWhenSilent ? envelope.startFrame : nil }

  /// Audio is ready (or the stream already ended): a crossfade into this voice can start.
  ///
  /// Offline it waits (bounded) for the decode thread's first block: the loader hands an offline
  /// voice over without pre-buffering, and a start must not slip to a later mix because the
  /// decode thread was a moment slower in one run than in another.
  var hasAudio: Bool {
    if block != nil || decoderEnded || stream.availableBlocks > 0 { return true }
    guard decodeWaitSeconds > 0 else { return false }
    return stream.peek(waitSeconds: decodeWaitSeconds, generation: generation) != nil
      || stream.isDrained(generation: generation)
  }

  /// Playing or fading: stopping it now would be heard.
  var isAudible: Bool { mode == .playing || mode == .fadingOut }

  /// Paused at a position (not stopped, not ended, not yet begun): a start on a line of this
  /// music waits for it to go on.
  var isPausedAtPosition: Bool {
    if case .ready(resumeFades: true) = mode { return true }
    return false
  }

  /// Asked to play and waiting for its first audio.
  var isStarting: Bool { awaitingData }

  /// Let go and silent, with `.fadedOut` still to report (the next mix reports it).
  var awaitsFadedOutReport: Bool { finishWhenSilent && !reportedFadedOut }

  /// The gain at mix frame `frame`: volume, transport ramp and crossfade envelope together.
  func currentGain(at frame: Int64) -> Float {
    volumeNow * ramp.gain(at: frame) * envelope.gain(at: frame) * duckNow
  }

  // MARK: - Mixing

  /// Mixes the voice's frames for mix frames `clock ..< clock + frames` into `bus` (stereo,
  /// added to what is there). Events worth reporting go to `events` (which has capacity: no
  /// allocation).
  func mix(into bus: UnsafeMutablePointer<Float>, frames: Int, clock: Int64, events: inout [EngineEvent]) {
    if !deferredEvents.isEmpty {
      events.append(contentsOf: deferredEvents)
      deferredEvents.removeAll(keepingCapacity: true)
    }
    if scanDirection != 0 && mode == .playing { scanStep(clock: clock) }
    var done = 0
    while done < frames && (mode == .playing || mode == .fadingOut) {
      let frame = clock + Int64(done)
      if frame < startFrame {
        done += Int(min(Int64(frames - done), startFrame - frame))
        continue
      }
      var span = min(frames - done, Voice.framesPerBuffer)
      // Stop on the frame a transport fade or a final fade ends, so what follows happens there.
      if mode == .fadingOut && !ramp.isFinished(at: frame) { span = min(span, Int(ramp.endFrame - frame)) }
      if finishWhenSilent && !envelope.isFinished(at: frame) { span = min(span, Int(envelope.endFrame - frame)) }
      produceFrame = frame
      let produced: Int
      if !resampling && layers.isEmpty && filter.isBypassed {
        // Nothing to do to the file's frames but scale them: add them to the bus straight from
        // the decoded blocks (a copy less per frame, per voice).
        produced = readInput(into: scratch, count: span, events: &events, addingTo: bus + 2 * done)
      } else {
        produced = produce(count: span, events: &events)
        if produced > 0 {
          audioArrived(at: frame)
          filter.process(scratch, frames: produced)
          addScaled(into: bus + 2 * done, frames: produced, from: frame, source: scratch)
        }
      }
      done += produced
      let end = frame + Int64(produced)
      if produced < span {
        if mode == .fadingOut && pendingAction != nil && readToPreSeek {
          // The fade-out needed more of the music than was kept for it (a stretcher that took
          // more than reckoned): the rest of it will never come, so what the fade led to (the
          // seek) is taken here, not waited for (it used to wait for ever: the voice fell silent).
          runPendingAction(clock: end)
          continue
        }
        if decoderEnded && block == nil {
          if finishWhenSilent {
            reportFadedOut(events: &events)
          } else {
            mode = .ended
            events.append(failure.map { .failed(voice: handle, $0) } ?? .ended(voice: handle))
          }
        } else if !awaitingData && !inUnderrun {
          // The decode thread fell behind: this voice is silent until its ring has blocks again.
          inUnderrun = true
          status.underruns.add(1, ordering: .relaxed)
          events.append(.underrun(voice: handle))
        }
        break
      }
      if finishWhenSilent && envelope.to == 0 && envelope.isFinished(at: end) {
        reportFadedOut(events: &events)
        break
      }
      if mode == .fadingOut && ramp.isFinished(at: end) { runPendingAction(clock: end) }
    }
    if finishWhenSilent && !reportedFadedOut && mode != .playing && mode != .fadingOut && fadesHeldFrom == nil {
      // Let go and silent (paused, stopped or never started): done.
      reportFadedOut(events: &events)
    }
    lastClock = clock + Int64(frames)
    duckNow = duckGains.map { $0[frames - 1] } ?? 1
    publishPosition()
  }

  private func reportFadedOut(events: inout [EngineEvent]) {
    mode = .ended
    guard !reportedFadedOut else { return }
    reportedFadedOut = true
    events.append(.fadedOut(voice: handle))
  }

  /// The voice has audio for mix frame `frame`: a start that waited for it begins here.
  private func audioArrived(at frame: Int64) {
    if awaitingData {
      awaitingData = false
      if fadeInOnData {
        fadeInOnData = false
        ramp = FadeEnvelope(from: 0, to: 1, startFrame: frame, durationFrames: transportFadeFrames)
      }
    }
    inUnderrun = false
  }

  /// Multiplies `frames` frames of `source` by the gain of each frame (mix frames from `frame` on)
  /// and adds them to `bus`.
  private func addScaled(
    into bus: UnsafeMutablePointer<Float>, frames: Int, from frame: Int64, source scratch: UnsafePointer<Float>
  ) {
    if let duckGains {
      // A duck moves the gain: frame by frame, the duck's level times the voice's own.
      let ducks = duckGains + Int(frame - duckGainsStart)
      for offset in 0..<frames {
        if volumeNow != volumeTarget {
          volumeNow = abs(volumeTarget - volumeNow) <= abs(volumeStep) ? volumeTarget : volumeNow + volumeStep
        }
        let at = frame + Int64(offset)
        let gain = volumeNow * ramp.gain(at: at) * envelope.gain(at: at) * ducks[offset]
        bus[2 * offset] += scratch[2 * offset] * gain
        bus[2 * offset + 1] += scratch[2 * offset + 1] * gain
      }
      return
    }
    if volumeNow == volumeTarget && ramp.isConstant(from: frame, count: frames)
      && envelope.isConstant(from: frame, count: frames)
    {
      let gain = volumeNow * ramp.gain(at: frame) * envelope.gain(at: frame)
      if gain == 0 { return }
      if gain == 1 {
        for index in 0..<(2 * frames) { bus[index] += scratch[index] }
      } else {
        for index in 0..<(2 * frames) { bus[index] += scratch[index] * gain }
      }
      return
    }
    for offset in 0..<frames {
      if volumeNow != volumeTarget {
        volumeNow = abs(volumeTarget - volumeNow) <= abs(volumeStep) ? volumeTarget : volumeNow + volumeStep
      }
      let at = frame + Int64(offset)
      let gain = volumeNow * ramp.gain(at: at) * envelope.gain(at: at)
      bus[2 * offset] += scratch[2 * offset] * gain
      bus[2 * offset + 1] += scratch[2 * offset + 1] * gain
    }
  }

  /// Fills `scratch` with up to `count` frames at the mix rate; fewer when the stream has nothing
  /// more now (ended, or the decode thread is behind).
  private func produce(count: Int, events: inout [EngineEvent]) -> Int {
    guard resampling, let resampler else { return readInput(into: scratch, count: count, events: &events) }
    // Resampled in whole chunks of `resamplerChunkFrames`, each made when its first frame is
    // needed, with the ratio in force then: the output is the same whatever blocks the mix
    // comes in, live or offline.
    var produced = 0
    while produced < count {
      if chunkFrames == chunkOffset {
        chunkOffset = 0
        produceFrame += Int64(produced)
        chunkFrames = resampleChunk(resampler, into: chunk, frames: Voice.resamplerChunkFrames)
        produceFrame -= Int64(produced)
        if chunkFrames == 0 { break }
      }
      let frames = min(count - produced, chunkFrames - chunkOffset)
      (scratch + 2 * produced).update(from: chunk + 2 * chunkOffset, count: 2 * frames)
      chunkOffset += frames
      produced += frames
      if pendingSeam != nil { foldPassedSeam(events: &events, nextFrame: produceFrame + Int64(produced)) }
    }
    return produced
  }

  /// The chunk of resampled output being mixed, and how far.
  private let chunk: UnsafeMutablePointer<Float>
  private var chunkFrames = 0
  private var chunkOffset = 0

  /// One call of the resampler, and where the output stands in the file after it.
  private func resampleChunk(_ resampler: VoiceResampler, into output: UnsafeMutablePointer<Float>, frames count: Int)
    -> Int
  {
    let produced = resampler.render(into: output, frames: count, inputPerOutput: resamplerRatio, input: self)
    // Where the output now stands in the file: libsamplerate ramps its output/input ratio
    // linearly from the last call's to this one's across the call (input frames are
    // `blockStep` file frames each, times the tempo when they come from the stretcher).
    let target = 1 / resamplerRatio
    let last = lastResamplerRatio ?? target
    if last == target && unstretchedUntil == nil {
      resampledPosition += Double(produced) * speed
    } else if produced > 0 {
      for frame in 0..<produced {
        var step = blockStep / (last + (target - last) * Double(frame) / Double(count))
        // What the resampler read before the stretcher started comes out first, at the rate alone.
        let readBeforeStretching = unstretchedUntil.map { resampledPosition < $0 - 1e-9 } ?? false
        if !readBeforeStretching {
          unstretchedUntil = nil
          step *= stretchStep
        }
        resampledPosition += step
      }
    }
    lastResamplerRatio = produced == count ? target : last + (target - last) * Double(produced) / Double(count)
    return produced
  }

  /// Reads input frames (at the file rate) straight into `output`; or, with `bus`, scales them and
  /// adds them to it (mix frames from `produceFrame` on) without copying them first.
  private func readInput(
    into output: UnsafeMutablePointer<Float>, count: Int, events: inout [EngineEvent],
    addingTo bus: UnsafeMutablePointer<Float>? = nil
  ) -> Int {
    // Layers and the filter work on `output`: the direct path is only for a voice with neither.
    assert(bus == nil || (layers.isEmpty && filter.isBypassed), "the direct path skips layers and the filter")
    var produced = 0
    while produced < count {
      readingFrame = produceFrame + Int64(produced)
      guard ensureBlock(events: &events), let current = block else { break }
      let frames = min(count - produced, current.frames - blockOffset)
      if let bus {
        let frame = produceFrame + Int64(produced)
        if produced == 0 && frames > 0 { audioArrived(at: frame) }
        addScaled(into: bus + 2 * produced, frames: frames, from: frame, source: current.samples + 2 * blockOffset)
      } else {
        (output + 2 * produced).update(from: current.samples + 2 * blockOffset, count: 2 * frames)
      }
      if !layers.isEmpty {
        addLayers(
          of: current, offset: blockOffset, count: frames, into: output + 2 * produced,
          mixStart: produceFrame + Int64(produced), mixPerFrame: 1)
      }
      blockOffset += frames
      produced += frames
      inputPosition = current.startPosition + Double(blockOffset) * blockStep
      if blockOffset >= current.frames {
        // Its tail, for a resampler that may take over from here (`primeResampler`).
        releasedTailFrames = min(Self.primeFrames, current.frames)
        releasedTail.update(
          from: current.samples + 2 * (current.frames - releasedTailFrames), count: 2 * releasedTailFrames)
        block = nil
        stream.release()
      }
    }
    return produced
  }

  /// For the resampler: the stretcher's next output while stretching, else the rest of the
  /// current block, lent until the next request.
  package func nextInput(maximumFrames: Int) -> (UnsafePointer<Float>, Int)? {
    if primePending {
      primePending = false
      return (UnsafePointer(primeInput), Self.primeFrames)
    }
    guard stretching, let stretcher else { return nextBlockInput(maximumFrames: maximumFrames) }
    return nextStretchedInput(stretcher, maximumFrames: min(maximumFrames, Voice.stretchChunkFrames))
  }

  /// The stretcher's next output, fed from the blocks as it asks for more; at the stream's end,
  /// silence pushes out the last frames it holds (SoundTouch's own `flush` allocates), cut at the
  /// length the music should have.
  private func nextStretchedInput(_ stretcher: TimeStretcher, maximumFrames: Int) -> (UnsafePointer<Float>, Int)? {
    while true {
      var room = maximumFrames
      if stretchTailing { room = min(room, max(0, Int(stretchExpected.rounded()) - Int(stretchReceived))) }
      let received = room > 0 ? stretcher.receive(into: stretchOutput, maximumFrames: room) : 0
      if received > 0 {
        stretchReceived += Int64(received)
        return (UnsafePointer(stretchOutput), received)
      }
      if let (pointer, frames) = nextBlockInput(maximumFrames: TimeStretcher.maximumPut) {
        // Audio after the end (a segment appended to a stream that had played out): a new signal.
        if stretchTailing { restartStretcher(stretcher) }
        stretcher.put(pointer, frames: frames)
        stretchExpected += Double(frames) / Double(stretcher.tempo)
        continue
      }
      // Nothing more now: the decode thread is behind (wait for it), or the stream ended.
      guard decoderEnded, room > 0, stretchSilencePuts < 32 else { return nil }
      stretchTailing = true
      stretchSilencePuts += 1
      stretcher.put(stretcher.silence, frames: TimeStretcher.maximumPut)
    }
  }

  /// The rest of the current block, lent until the next request.
  private func nextBlockInput(maximumFrames: Int) -> (UnsafePointer<Float>, Int)? {
    if lentBlock {
      lentBlock = false
      block = nil
      stream.release()
    }
    // Resampled: the mix frame of what is read next is only known to the chunk (a join is
    // reported on the chunk's first frame).
    readingFrame = produceFrame
    guard ensureBlock(events: &deferredEvents), let current = block else { return nil }
    let frames = min(maximumFrames, current.frames - blockOffset, layers.isEmpty ? .max : Self.layeredReadFrames)
    var pointer = current.samples + 2 * blockOffset
    if !layers.isEmpty {
      // The resampler reads the music with its stems mixed in (it may keep reading this until
      // its next request, so it is the voice's own buffer, not scratch).
      layerMix.update(from: pointer, count: 2 * frames)
      addLayers(
        of: current, offset: blockOffset, count: frames, into: layerMix, mixStart: heardFrame(ofInput: inputPosition),
        mixPerFrame: 1 / (resamplerRatio * stretchStep))
      pointer = UnsafePointer(layerMix)
    }
    blockOffset += frames
    inputPosition = current.startPosition + Double(blockOffset) * blockStep
    if blockOffset >= current.frames { lentBlock = true }
    return (pointer, frames)
  }

  /// The mix frame of the next frame read from the blocks (for the frame a gapless join is
  /// heard on).
  private var readingFrame: Int64 = 0

  /// Makes `block` the next block with frames of the current generation; false if there is none
  /// now. A segment that failed is reported when the stream goes on past it.
  @discardableResult
  private func ensureBlock(events: inout [EngineEvent]) -> Bool {
    if block != nil && !lentBlock { return true }
    if lentBlock {
      lentBlock = false
      block = nil
      stream.release()
    }
    while true {
      guard let next = stream.peek(waitSeconds: decodeWaitSeconds, generation: generation) else {
        if stream.isDrained(generation: generation) {
          // Offline: the segment that follows may still be opening on the loader.
          if let settleLoads, settleLoads() { continue }
          decoderEnded = true
        } else if decodeWaitSeconds > 0 {
          // Offline only: the decode thread gave nothing for seconds. End rather than hang.
          failure = DecodeError(path: stream.path, reason: .unsupported("the decoder stopped answering"))
          decoderEnded = true
        }
        return false
      }
      guard next.generation == generation else {
        // The sought audio of a seek asked for ahead waits for the seek (see `prepareSeek`).
        if let preSeek, next.generation == preSeek.generation {
          readToPreSeek = true
          return false
        }
        stream.release()
        continue
      }
      decoderEnded = false
      if next.frames > 0, let failed = failure, failedToken != next.token {
        events.append(.segmentFailed(voice: handle, token: failedToken, failed))
        failure = nil
      }
      if let error = next.error {
        failure = error
        failedToken = next.token
      }
      guard next.frames > 0 else {
        stream.release()
        continue
      }
      // Resampled, a join heard later than it is read: a join into the next segment, however
      // its frames go on.
      let joinsLater = resampling && inputKnown && next.token != inputToken
      if abs(next.startPosition - inputPosition) > 1e-3 || joinsLater {
        // A jump in the file (a loop back, a gapless join): the resampled position jumps with it
        // when the output reaches it, not when the resampler reads it (it reads ahead). A
        // second jump before the first is heard (a loop shorter than the resampler's reach)
        // folds the first at once.
        if let seam = pendingSeam {
          fold(
            seam, heardAt: resampling ? max(produceFrame, heardFrame(ofInput: seam.end + seam.jump)) : readingFrame,
            events: &events)
        }
        pendingSeam = Seam(
          end: inputPosition, jump: next.startPosition - inputPosition, token: inputToken,
          segmentStart: inputSegmentStart, segmentEnd: inputSegmentEnd, nextToken: next.token,
          nextSegmentEnd: next.segmentEnd)
      }
      if !resampling && inputKnown && (abs(next.startPosition - inputPosition) > 1e-3 || next.token != inputToken) {
        // Read frame for frame, a jump or a join is heard on the frame it is read.
        seamHeard = (readingFrame, next.token, next.startPosition)
      }
      block = next
      blockOffset = 0
      inputPosition = next.startPosition
      inputToken = next.token
      inputSegmentStart = next.segmentStart
      inputSegmentEnd = next.segmentEnd
      inputFinalPass = next.finalPass
      inputPass = next.pass
      inputLoop = next.loop
      inputKnown = true
      if let token = pendingLoopRelease {
        pendingLoopRelease = nil
        releaseLoop(through: token)
      }
      if next.token != audibleToken && next.token >= 0 && !joinsLater {
        // A gapless join: the next segment's first frame is mixed now.
        audibleToken = next.token
        status.lengthFrames.store(next.segmentEnd, ordering: .releasing)
        status.token.store(next.token, ordering: .releasing)
        events.append(.segmentStarted(voice: handle, token: next.token, frame: readingFrame))
      }
      return true
    }
  }

  /// The file frame (fractional) of the frame mixed next: resampled, integrated; else where the
  /// block read is (blocks the decode thread resampled start on fractional file frames).
  private var filePosition: Double { resampling ? exactPosition : inputPosition }

  /// The file frame mixed next.
  var positionFrames: Int64 {
    let position = resampling ? Int64(exactPosition.rounded(.down)) : inputFrame
    return max(heardSegmentStart, min(position, heardSegmentEnd))
  }

  /// Publishes the position and the gain heard.
  func publishPosition() {
    // A seek or a pause of a playing voice fades it out first (10 ms). From the moment it is
    // taken the position is where play goes on: the seek's target (else `currentPlaybackTime`
    // read the old place again after the seek was done, and a media key's "previous" right after
    // a seek took the item before), or the first frame the pause's fade touched, where the
    // resume starts (else the time ran 10 ms on while pausing, then stepped back).
    let position: Int64
    var moving = false
    switch pendingAction {
    case .seek(let target, _)? where target.token == audibleToken: position = target.frame
    case .pause(let resumeFrame)?: position = resumeFrame
    default:
      position = decoderEnded && block == nil ? inputSegmentEnd : positionFrames
      moving = mode == .playing && pendingAction == nil && !awaitingData && !(decoderEnded && block == nil)
    }
    status.positionFrames.store(position, ordering: .releasing)
    status.readAheadFrames.store(layers.isEmpty ? 0 : readAheadFrames(), ordering: .relaxed)
    // The exact position and its frame (a voice that starts later stands still until then).
    let exact = max(Double(heardSegmentStart), min(filePosition, Double(heardSegmentEnd)))
    status.storePlayingPosition(moving ? exact : .nan, mixFrame: max(lastClock, startFrame))
    // What is heard: a voice that is prepared but not started (a crossfade's follower, waiting)
    // is silent, so the stealing policy takes it first and timelines do not draw it.
    status.gainBits.store((isAudible ? currentGain(at: lastClock) : 0).bitPattern, ordering: .relaxed)
    if !layers.isEmpty {
      let clock = lastClock
      status.storeLayerLevels(
        { isAudible ? layers[$0].driveNow * layers[$0].fade.gain(at: clock) : 0 }, count: layers.count)
    }
  }

  // MARK: - Internals

  private func frames(seconds: Double) -> Int64 { FrameMath.frames(seconds: seconds, rate: Double(mixRate)) }

  private func fadeOut(then action: PendingAction, clock: Int64) {
    if awaitingData || clock < startFrame {
      // Nothing was heard yet: no fade needed, act at once.
      awaitingData = false
      pendingAction = action
      runPendingAction(clock: clock)
      return
    }
    pendingAction = action
    startRamp(to: 0, clock: clock)
    mode = .fadingOut
  }

  private func runPendingAction(clock: Int64) {
    let action = pendingAction
    pendingAction = nil
    if finishWhenSilent && envelope.to == 0 && envelope.isFinished(at: clock) {
      // A crossfade's outgoing voice reached silence: it is done, whatever was pending.
      mode = .ended
      return
    }
    switch action {
    case .pause(let resumeFrame)?:
      // Resume from the first frame the fade-out touched: what was faded out is heard again.
      reposition(to: Target(token: audibleToken, frame: resumeFrame))
      mode = .ready(resumeFades: true)
      // A pause completes a fade-in in progress: the voice resumes at full level (unless its
      // fades are held: they go on from the pause on the resume).
      if !finishWhenSilent && fadesHeldFrom == nil { envelope = .unity }
    case nil:
      mode = .ready(resumeFades: true)
      if !finishWhenSilent { envelope = .unity }
    case .stop?:
      performStop()
    case .seek(let target, let thenPlay)?:
      reposition(to: target)
      mode = .ready(resumeFades: true)
      if thenPlay { play(clock: clock) }
    case .resync(let frame)?:
      reposition(to: Target(token: audibleToken, frame: frame, keepFollowing: false))
      mode = .ready(resumeFades: true)
      play(clock: clock)
    }
  }

  private func performStop() {
    scanDirection = 0
    fadesHeldFrom = nil
    layersHeldFrom = nil
    reposition(to: Target(token: stream.firstToken, frame: 0))
    mode = .ready(resumeFades: false)
  }

  /// Drops what was read, moves the stream, and takes the first block of the new generation if
  /// it is there already (offline it waits for it): used by stop, seek, pause and resync.
  private func reposition(to target: Target) {
    repositions &+= 1
    if block != nil {
      block = nil
      lentBlock = false
      stream.release()
    }
    decoderEnded = false
    failure = nil
    if let preSeek, preSeek.target == target {
      // Asked for ahead: the decode thread is there already (the blocks before are dropped as
      // `ensureBlock` comes to them).
      generation = preSeek.generation
    } else {
      generation = stream.requestSeek(token: target.token, frame: target.frame, keepFollowing: target.keepFollowing)
    }
    preSeek = nil
    readToPreSeek = false
    inputPosition = Double(target.frame)
    inputToken = target.token
    inputKnown = false
    resampledPosition = Double(target.frame)
    pendingSeam = nil
    unstretchedUntil = nil
    lastResamplerRatio = nil
    // What played before is not what comes next: no history for a resampler taking over.
    releasedTailFrames = 0
    chunkFrames = 0
    chunkOffset = 0
    resampler?.reset()
    if stretching, let stretcher { restartStretcher(stretcher) }
    _ = ensureBlock(events: &deferredEvents)
    publishPosition()
  }

  private func startRamp(to target: Float, clock: Int64) {
    ramp = FadeEnvelope(from: ramp.gain(at: clock), to: target, startFrame: clock, durationFrames: transportFadeFrames)
  }

  /// One jump of a scan: every quarter second, move by a distance that doubles each second the
  /// scan has run (2x, 4x, 8x, up to 16x speed), forward or backward.
  private func scanStep(clock: Int64) {
    let interval = Int64(mixRate / 4)
    guard clock - lastScanJumpFrame >= interval else { return }
    lastScanJumpFrame = clock
    let elapsedSeconds = Double(clock - scanStartedFrame) / Double(mixRate)
    let speed = min(16, Glibc.exp2(1 + elapsedSeconds))
    let rate = Double(fileRate)
    let jumpFrames = Int64(speed * 0.25 * rate)
    let position = positionFrames
    let target = scanDirection > 0 ? position + jumpFrames : position - jumpFrames - Int64(0.25 * rate)
    if target >= inputSegmentEnd {
      scanDirection = 0
      return
    }
    seek(toFrame: max(0, target), clock: clock)
  }
}
