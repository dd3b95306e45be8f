import Dispatch
import FoundationEssentials
import LeitmotifDecoding
import LeitmotifOutput
import Synchronization

/// A file opened by the loader, its decode thread already running, its ring filled and its
/// voice made, handed to the streaming thread. The loader never touches it again after sending.
package struct LoadedStream: @unchecked Sendable {
  var voice: Voice
}

/// A time-stretcher made on the loader for a voice that plays already, handed to the streaming
/// thread (which alone uses it from then on).
package struct MadeStretcher: @unchecked Sendable {
  var stretcher: TimeStretcher
}

/// Requests from game threads to the streaming thread. Every request about a voice names its
/// handle (slot and generation); the streaming thread drops those whose generation is no longer
/// the slot's (an earlier owner's, see `VoiceHandle`).
package enum EngineCommand: Sendable {
  /// A new owner took the slot (or an owner started over on it): whatever the slot played is let
  /// go, its settings reset, and only this generation's requests count from now on.
  case claim(VoiceHandle)
  /// The owner gave the slot back: what it plays is let go (faded out if audible).
  case release(VoiceHandle)
  /// The owner gave back `incoming`, a change's music it takes back before it is heard, and plays
  /// `keep` on. Released as `release` does; and when the command comes after the crossfade between
  /// them began (a late thread), `keep`, fading out for it, fades back up from the level it has,
  /// so the change is called off as heard as well (a released `incoming` over a fading `keep`
  /// left silence).
  case callOff(incoming: VoiceHandle, keep: VoiceHandle)
  case attach(voice: VoiceHandle, LoadedStream)
  case loadFailed(voice: VoiceHandle, DecodeError)
  /// Starts or resumes the voice. `unlessWaiting`: not if it waits to begin on a line (a
  /// crossfade's or a start's trigger), which it then goes on waiting for. `resumingOnly`: only
  /// if it was playing when it was last paused (a voice lined up to take over, paused with the
  /// music heard, is not started: it goes on waiting for its hand-over).
  case play(voice: VoiceHandle, unlessWaiting: Bool = false, resumingOnly: Bool = false)
  /// Starts the voice on the frame where the trigger's voice reaches the trigger's position (a
  /// stinger on the beat), or on the next line if it is not ready by then.
  case playOnTrigger(voice: VoiceHandle, StartTrigger)
  /// With the start on a trigger posted just before it: when that start comes, a duck of the
  /// group `group` starts on the same frame (a stinger on the beat that ducks the music).
  case duckOnStart(voice: VoiceHandle, group: UInt32, DuckShape)
  /// A duck of the voices of group `group` (see `Voice.duckGroup`), from the frame it is taken on.
  case duck(group: UInt32, DuckShape)
  /// The voice follows the ducks of group `group` (its owner's; 0: none).
  case setDuckGroup(voice: VoiceHandle, UInt32)
  /// Pauses the voice (a short fade; `play` resumes from the first frame it touched).
  /// `holdingFades`: its own fade stands still while paused (see `Voice.pause(clock:holdingFades:)`).
  /// `unlessWaiting`: not if it still waits to begin on a line, which it goes on waiting for
  /// (its music heard, paused with it, holds the line back). Decided on the command's frame: a
  /// pickup that began a lead before it was seen as not begun by a live player, and the two
  /// runs paused differently.
  case pause(voice: VoiceHandle, holdingFades: Bool = false, unlessWaiting: Bool = false)
  case stop(voice: VoiceHandle, generation: Int)
  case seek(voice: VoiceHandle, seconds: Double, generation: Int)
  case setRate(voice: VoiceHandle, Float)
  /// Speed without pitch (a voice with a stretcher; others ignore it until one comes).
  case setTempo(voice: VoiceHandle, Float)
  /// A stretcher for a voice made without one (`AudioEngine.provideStretcher`).
  case adoptStretcher(voice: VoiceHandle, MadeStretcher)
  case setVolume(voice: VoiceHandle, Float)
  /// The high-frequency gain of the voice's low-pass filter, 0...1 (1: unfiltered).
  case setLowPass(voice: VoiceHandle, Float)
  case scan(voice: VoiceHandle, direction: Int)  // +1 forward, -1 backward, 0 ends the scan
  /// The beat lines of segment `token` of the voice: every `secondsPerBeat` of its file, counted
  /// from `originSeconds` (beat 0). The mixer reports each as a `.beat` on the frame the voice
  /// plays it. `secondsPerBeat` 0 removes them. A voice keeps the lines of two segments (the one
  /// playing and a gapless follower). `markers`: seconds of the file (sorted) the mixer reports
  /// as a `.marker` each, on the frame the voice plays it (named cue points; the owner keeps
  /// their names).
  case setBeats(voice: VoiceHandle, token: Int, originSeconds: Double, secondsPerBeat: Double, markers: [Double] = [])
  /// Layer `layer`'s parameter-driven gain (0...1, glided) and low-pass (1: unfiltered).
  case setLayer(voice: VoiceHandle, layer: Int, gain: Float, lowPass: Float)
  /// Moves layer `layer`'s level to `level` along `curve` over `seconds`: at once, or from the
  /// frame where the trigger's voice reaches the trigger's position (a layer in on the bar).
  case fadeLayer(
    voice: VoiceHandle, layer: Int, level: Float, seconds: Double, curve: FadeCurve, trigger: StartTrigger?)
  /// Arms (or, with nil, disarms) the hand-over from a voice to a follower (see `Voice.Handoff`).
  case arm(voice: VoiceHandle, Voice.Handoff?)
  /// Starts `to` with a fade-in, and fades out every voice in `from` from its audible level, both
  /// on the same mix frame: as soon as `to` has audio, or, with a `trigger`, on the frame where
  /// the trigger's voice reaches the trigger's position in its file. `holdSeconds` later than
  /// that frame, not on it, the outgoing voices begin their fade (a pickup that starts before the
  /// grid line, a tail that plays past it).
  case crossfade(
    to: VoiceHandle, from: [VoiceHandle], seconds: Double, curve: FadeCurve, trigger: StartTrigger?,
    holdSeconds: Double = 0)
  /// Fades a voice out for good; it reports `.fadedOut` when silent.
  case fadeOutAndFinish(voice: VoiceHandle, seconds: Double, curve: FadeCurve)
  /// Drops what the voice decoded after the segment being heard (see `Voice.resync`).
  case resync(voice: VoiceHandle)
  /// Ends the loops of the voice's segments up to `through` at the first seam not yet committed
  /// (see `Voice.releaseLoop`).
  case releaseLoop(voice: VoiceHandle, through: Int)
  /// Moves the master gain to `gain` in a straight line over `frames` mix frames (at least a
  /// short glide, so that a jump does not click).
  case setMasterGain(Float, frames: Int)
  /// `command`, to take effect on mix frame `frame` (posted inside
  /// `AudioEngine.performing(atMixFrame:)`); on arrival if that frame is already mixed. Claims,
  /// releases and loads never wait (the pool's order must hold).
  indirect case timed(frame: Int64, EngineCommand)
  /// The high-frequency gain of the music bus's shelf filter, 0...1 (1: unfiltered).
  case setMasterLowPass(Float)
  case simulateDeviceDisconnect
  /// Tests only: the streaming thread sleeps this long, as a descheduled thread on a loaded
  /// machine would, so the sources run dry.
  case stallForTesting(milliseconds: Int)
}

/// A start on the beat: the moment a voice's playback reaches a position in its file (a grid
/// line of the music it plays), found by the mixer from that voice's own stream position, so it
/// lands on the frame whatever the rate did meanwhile, live as offline.
package struct StartTrigger: Sendable, Equatable {
  /// The voice whose position counts, and the segment (queue item) it must be playing.
  var voice: VoiceHandle
  var token: Int
  /// The position in that voice's file, in seconds (turned into its file's frames by the mixer).
  var fileSeconds: Double
  /// The grid's spacing in seconds of the file (a beat or a bar): when the incoming voice is not
  /// ready in time, the start moves on to the next line, and the next, instead of landing off
  /// the grid. Nil: start as soon as it is ready.
  var everySeconds: Double?
  /// The mix frame the line falls on had the music gone on, reckoned by the mixer while the
  /// music fades out for good (a skip, a crossfade away): when it ends before the line, the start
  /// comes there, on the same frame live as offline, not whenever the mixer notices the end.
  var fallbackFrame: Int64?
  /// Seconds of the voice's file, played at its speed then, between its reaching `fileSeconds`
  /// and the start: a line in the next pass of a loop (the music jumps back before it gets
  /// there, so no position in the file names it) is the loop's end, then this far into the
  /// pass after it. 0 for a line the music reaches.
  var afterSeconds: Double
  /// Once the voice has reached `fileSeconds` with `afterSeconds` still to go past that block:
  /// the mix frame the start falls on, fixed then (the music's position starts over in the
  /// next pass and no longer tells).
  var atMixFrame: Int64?
  /// The voice's `repositions` when the trigger was first looked at: when the music is moved
  /// after that (the game sets `currentPlaybackTime`), a start on the grid (`everySeconds`) takes
  /// the first line from where the music is then. A jump past the line started it at once, on
  /// whichever block came next (live and offline apart); a jump back made it wait for the line
  /// to come round again.
  var repositionsSeen: Int?
  /// The position is in the music's last pass (a change at the end of an item whose loop was
  /// released: its outro): while the voice will still jump back from its loop's end, it is not
  /// reached, neither in this pass nor as the next pass's line.
  var inFinalPass = false

  package init(
    voice: VoiceHandle, token: Int, fileSeconds: Double, everySeconds: Double?, afterSeconds: Double = 0,
    inFinalPass: Bool = false
  ) {
    self.voice = voice
    self.token = token
    self.fileSeconds = fileSeconds
    self.everySeconds = everySeconds
    self.afterSeconds = max(0, afterSeconds)
    self.inFinalPass = inFinalPass
  }

  /// In how many mix frames from `clock` the start falls (0: now or gone), as `music`, the
  /// trigger's voice, plays; nil while it waits for its first audio. When `music` reaches
  /// `fileSeconds` within the block of `frames` and `afterSeconds` reach past it, the start is
  /// fixed to its mix frame from then on (`atMixFrame`).
  mutating func framesUntilStart(music: Voice, clock: Int64, frames: Int) -> Int64? {
    if let frame = atMixFrame { return max(0, frame - clock) }
    followMoves(of: music)
    // A release that came too near its loop's seam leaves one more pass (see `Voice.releaseLoop`):
    // the end of the item comes after it. Taken as the next pass's line, a change at the end
    // landed inside the loop's last pass, and the outro was never heard.
    if inFinalPass, music.loopEndSeconds(token: token) != nil { return nil }
    if afterSeconds == 0, let end = music.loopEndSeconds(token: token), fileSeconds > end + 1e-9 {
      // A position past the end of a loop the voice will still jump back from is not reached
      // in this pass: it is the next pass's, as far past the seam. A release of the loop that
      // came too near its seam (see `Voice.releaseLoop`) leaves one more pass to play, which
      // the director, told the loop was released, did not count on: its line there waited a
      // whole pass.
      afterSeconds = fileSeconds - end
      fileSeconds = end
    }
    guard let due = music.framesUntil(fileFrame: music.fileFrames(seconds: fileSeconds), token: token) else {
      return nil
    }
    guard afterSeconds > 0 else { return due }
    let start = due + music.mixFrames(fileSeconds: afterSeconds)
    if due < Int64(frames) { atMixFrame = clock + start }
    return start
  }

  /// After the music was moved (see `repositionsSeen`), a start on the grid takes the first
  /// line at or after where it is, once it plays again.
  private mutating func followMoves(of music: Voice) {
    guard let seen = repositionsSeen else {
      repositionsSeen = music.repositions
      return
    }
    guard seen != music.repositions, let every = everySeconds, every > 0 else { return }
    guard let position = music.playingSeconds(token: token) else { return }
    repositionsSeen = music.repositions
    // A line in a loop's next pass is given as the loop's end plus the way past it; after a
    // move its grid is the file's own.
    let line = fileSeconds + afterSeconds
    fileSeconds = line + ((position - line) / every - 1e-9).rounded(.up) * every
    afterSeconds = 0
  }

  /// The next line, `seconds` on: a start whose music was not ready for its line.
  mutating func moveOn(by seconds: Double, music: Voice) {
    if let frame = atMixFrame {
      atMixFrame = frame + music.mixFrames(fileSeconds: seconds)
    } else if afterSeconds > 0 {
      afterSeconds += seconds
    } else {
      // (Past a loop's end, `framesUntilStart` takes it as the next pass's.)
      fileSeconds += seconds
    }
  }
}

/// What the streaming thread reports back; delivered on the notification thread, to the owner of
/// the voice named (and only while that handle still owns its slot).
package enum EngineEvent: @unchecked Sendable {
  case prepared(voice: VoiceHandle)
  case ended(voice: VoiceHandle)
  /// A gapless join became audible: segment `token` is heard now.
  case segmentStarted(voice: VoiceHandle, token: Int, frame: Int64)
  /// A segment failed mid-stream; the stream went on with the next one.
  case segmentFailed(voice: VoiceHandle, token: Int, DecodeError)
  /// A voice that was let go (a crossfade's outgoing side) is silent now.
  case fadedOut(voice: VoiceHandle)
  /// An armed hand-over started: `to` fades in, `from` fades out, over `seconds` (the armed
  /// length, or half the outgoing or the incoming item when that is shorter).
  case handedOff(from: VoiceHandle, to: VoiceHandle, seconds: Double, frame: Int64)
  /// A segment to be joined gaplessly could not be opened, or has another sample rate than the
  /// stream (`rateMismatch`: one stream has one rate).
  case appendFailed(voice: VoiceHandle, token: Int, DecodeError, rateMismatch: Bool)
  case failed(voice: VoiceHandle, DecodeError)
  case underrun(voice: VoiceHandle)
  /// The voice plays beat line `index` of segment `token` (see `EngineCommand.setBeats`) on mix
  /// frame `frame`, which is heard at `audibleAtNanoseconds` of the uptime clock (less what the
  /// device itself still holds; 0 on an engine that renders offline).
  case beat(voice: VoiceHandle, token: Int, index: Int, frame: Int64, audibleAtNanoseconds: UInt64)
  /// The voice plays marker `index` of segment `token` (see `EngineCommand.setBeats`) on mix
  /// frame `frame`, heard at `audibleAtNanoseconds` as a beat is.
  case marker(voice: VoiceHandle, token: Int, index: Int, frame: Int64, audibleAtNanoseconds: UInt64)
  case deviceLost(String)
  /// The music goes on on a new device. `heldFrames`: what the lost device was estimated to
  /// hold unplayed (its latency); `replayedFrames`: how much of it is played again (all of it,
  /// unless it held more than the bus keeps of what it played).
  case deviceRestored(OutputDevice.Kind, String, replayedFrames: Int, heldFrames: Int)
  case interrupted(voice: VoiceHandle, Bool)
  /// OpenAL's mixer on the named device was paused (true: nothing played for a while) or
  /// started again (false). A case of its own, not a `Diagnostic`: the streaming thread makes no
  /// message text.
  case outputPaused(String, Bool)
  /// `OutputLatency.low`: after an underrun the bus keeps more queued from now on, `frames` in
  /// all (a device period and its slack).
  case queueWidened(frames: Int)
  case diagnostic(Diagnostic)
  /// The voice pool gave this voice to another owner (see `VoicePool.claim`); delivered to the
  /// listener it had, which no longer owns the slot.
  case stolen(VoiceHandle, @Sendable (EngineEvent) -> Void)
  /// Something the streaming thread is done with, to be freed off the streaming thread.
  case reclaim(AnyObject)

  /// The voice the event is about (nil: about the engine).
  package var voice: VoiceHandle? {
    switch self {
    case .prepared(let voice), .ended(let voice), .segmentStarted(let voice, _, _), .segmentFailed(let voice, _, _),
      .fadedOut(let voice), .appendFailed(let voice, _, _, _), .failed(let voice, _), .underrun(let voice),
      .interrupted(let voice, _), .stolen(let voice, _), .beat(let voice, _, _, _, _),
      .marker(let voice, _, _, _, _):
      return voice
    case .handedOff(let from, _, _, _):
      return from
    case .deviceLost, .deviceRestored, .outputPaused, .queueWidened, .diagnostic, .reclaim:
      return nil
    }
  }
}

/// Many producers, one consumer; the consumer never waits.
///
/// Game threads append under the mutex (they may wait a moment for each other). The streaming
/// thread only ever *tries* the lock and swaps the whole batch out for its own empty array, so a
/// game thread holding the lock can delay a command by one pump but never stall the audio.
///
/// A consumer that has nothing to do sleeps in `waitForPost` and is woken by the next post (one
/// wake per batch, however many posts it holds), so idle engines do not poll.
package final class CommandQueue<Element: Sendable>: Sendable {
  private let pending = Mutex<[Element]>([])
  private let wake = DispatchSemaphore(value: 0)
  private let wakePending = Atomic<Bool>(false)
  /// What `post` does to an element first (the engine's commands: stamp the poster's mix frame).
  private let prepare: (@Sendable (Element) -> Element)?
  /// For tests: while set, `takeAll` takes nothing, as if the lock were busy, so the consumer runs
  /// on without what was posted (what a late thread's commands do).
  let heldForTesting = Atomic<Bool>(false)

  /// `reserving`: the capacity the queue starts with (the consumer swaps its own batch in, so
  /// the capacities last; a producer that must not allocate, the streaming thread, finds room).
  init(reserving capacity: Int = 0, prepare: (@Sendable (Element) -> Element)? = nil) {
    self.prepare = prepare
    pending.withLock { $0.reserveCapacity(capacity) }
  }

  package func post(_ element: Element) {
    let element = prepare?(element) ?? element
    pending.withLock { $0.append(element) }
    wakeUp()
  }

  /// Wakes a consumer sleeping in `waitForPost` (a semaphore signal: it never blocks).
  func wakeUp() {
    if !wakePending.exchange(true, ordering: .acquiringAndReleasing) { wake.signal() }
  }

  /// Sleeps until something is posted (or `wakeUp`), at most `timeout`.
  func waitForPost(timeout: DispatchTimeInterval) {
    _ = wake.wait(timeout: .now() + timeout)
    wakePending.store(false, ordering: .releasing)
  }

  /// Moves everything pending into `batch` (which must be empty) without blocking.
  /// Returns false if the lock was busy; the caller tries again next time.
  func takeAll(into batch: inout [Element]) -> Bool {
    guard !heldForTesting.load(ordering: .relaxed) else { return false }
    return pending.withLockIfAvailable { queue in
      swap(&queue, &batch)
    } != nil
  }

  /// Appends `batch` to the queue without blocking; false (and nothing moved) if the lock was busy.
  func tryPost(contentsOf batch: [Element]) -> Bool {
    let posted = pending.withLockIfAvailable { queue in queue.append(contentsOf: batch) } != nil
    if posted { wakeUp() }
    return posted
  }

  /// Blocking variant for consumers that may wait (the notification thread).
  func takeAllWaiting(into batch: inout [Element]) {
    pending.withLock { queue in swap(&queue, &batch) }
  }
}
