import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import Synchronization

/// Renders a queue of files through a `QueuePlayer` on the OpenAL loopback device to a WAV file:
/// what `leitmotif render` does with several files or any queue option. Crossfades, gapless
/// joins, loops, repeat and shuffle sound exactly as in real time, faster than real time and the
/// same bytes every run.
public struct QueueRenderer {
  /// How to render a queue: transitions, repeat and shuffle, loops, duration, output rate and format.
  public struct Options: Sendable {
    /// How each item takes over from the one before it. Default: the queue player's (an
    /// equal-power crossfade of 3 s); `.gapless` joins with no gap and no overlap.
    public var transition: Transition = .defaultCrossfade
    /// Whether the queue repeats (default `.none`; `.one` and `.all` need `durationSeconds`).
    public var repeatMode: RepeatMode = .none
    /// Whether the queue plays shuffled (default `.off`).
    public var shuffleMode: ShuffleMode = .off
    /// Seeds the shuffle: the same seed and files give the same order.
    public var seed: UInt64 = 0
    /// How items with loop points loop. Default: straight through (`.off`), unlike the queue
    /// player's `.untilReleased`, which no render can wait for without `durationSeconds`.
    public var loopRepeat: LoopRepeat = .off
    /// Stop after this many seconds of output (nil: when the queue ends).
    public var durationSeconds: Double?
    /// The mixing rate (nil: the rate of the first file that opens, in the order given).
    public var sampleRate: Int?
    /// The WAV file's samples: 32-bit float (the default) or 16-bit integer.
    public var sampleFormat: WAVSampleFormat = .float32
    /// Frames per mix; every render call has this size, so runs are repeatable.
    public var renderFrames: Int = 1024
    /// Playback speed in [1/256, 4], for every item (speed and pitch together).
    public var rate: Float = 1
    /// Tempo in 0.5...2, for every item: speed without pitch (`QueuePlayer.tempo`); it
    /// multiplies with `rate`.
    public var tempo: Float = 1
    /// Where to start in the first item played, in seconds of its file.
    public var startSeconds: Double = 0

    /// The defaults: 3 s equal-power crossfades, no repeat or shuffle, no loops, until the queue ends,
    /// at the first file's rate, float32, 1024-frame mixes, rate 1, from the start.
    public init() {}

    /// Checks the options on their own: ranges, and that the render can end.
    /// - Throws: `RenderError.invalidOptions` naming the option; `.queue(.invalidLoopCount)`;
    ///   `.player(.rateOutOfRange)`.
    public func validate() throws(OfflineRenderer.RenderError) {
      if let duration = durationSeconds, !(duration.isFinite && duration >= 0) {
        throw .invalidOptions("duration \(duration) s: expected a finite duration of 0 s or more")
      }
      guard startSeconds.isFinite, startSeconds >= 0 else {
        throw .invalidOptions("start time \(startSeconds) s: expected a finite time of 0 s or more")
      }
      guard renderFrames > 0 else { throw .invalidOptions("render size \(renderFrames) frames: expected 1 or more") }
      guard Voice.rateRange.contains(rate) else { throw .player(.rateOutOfRange(rate)) }
      guard tempo.isFinite, TimeStretcher.tempoRange.contains(tempo) else { throw .player(.tempoOutOfRange(tempo)) }
      if case .times(let count) = loopRepeat, count < 0 { throw .queue(.invalidLoopCount(count)) }
      if durationSeconds == nil {
        // A render that cannot end would fill the disk: refuse it before writing anything.
        if loopRepeat == .untilReleased {
          throw .invalidOptions(
            "the render would never end: items loop until released; give a duration, or a number of loops")
        }
        if repeatMode != .none {
          throw .invalidOptions(
            "the render would never end: repeat \"\(repeatMode.rawValue)\" plays forever; give a duration")
        }
      }
    }

    /// Sets `player` up with these options and `items` as its queue, positioned at
    /// `startSeconds` of the first item; it does not start playing. (`leitmotif play` sets its
    /// real-time player up the same way.)
    /// - Throws: `QueueError` when the queue is refused (then the player is unchanged but for its
    ///   modes).
    public func configure(_ player: QueuePlayer, items: [MediaItem]) throws(QueueError) {
      player.transition = transition
      player.repeatMode = repeatMode
      player.loopRepeat = loopRepeat
      // Seed and shuffle before the queue: the whole queue is shuffled, its first item included.
      player.shuffleSeed = seed
      player.shuffleMode = shuffleMode
      player.setMixTempo(tempo)
      try player.setQueue(with: items)
      // Past the end of the first item, as for a single file, is an error: the queue went on
      // silently past it (a player's trial).
      if startSeconds > 0, let first = player.nowPlayingItem, let end = first.playbackDuration, startSeconds >= end {
        throw .startAfterEnd(item: first.displayName, start: startSeconds, end: end)
      }
      if startSeconds > 0 { player.currentPlaybackTime = startSeconds }
    }
  }

  /// An item that could not be played; the queue went on past it.
  public struct Failure: Sendable {
    /// The item.
    public var item: MediaItem
    /// Why it could not be played.
    public var error: DecodeError
  }

  /// What a queue render produced.
  public struct Result: Sendable {
    /// Frames written to the WAV file.
    public var framesWritten: Int64
    /// The WAV file's sample rate, in Hz.
    public var sampleRate: Int
    /// Underruns counted during the render (0 in a healthy run).
    public var underruns: Int
    /// The items that failed, in the order they did.
    public var failures: [Failure]
  }

  /// Renders `paths` as a queue to the WAV file `outputPath`, until the queue ends (the player
  /// stops after playing its last item) or `durationSeconds` of output are written. A queue that
  /// ends is cut after its last sound (digital silence at the very end of the last item, at most
  /// one render call of it, goes too); voices still fading out when it ends play out to silence.
  ///
  /// Each file is opened once up front for its tags (titles for the events, album tags for
  /// album shuffle); a file that cannot be opened stays in the queue and fails when its turn
  /// comes (`onEvent` hears `.itemFailed`, and `Result.failures` lists it).
  ///
  /// - Parameters:
  ///   - paths: the audio files (Ogg Vorbis, Opus, MP3, FLAC, WAV, AIFF), in queue order.
  ///   - outputPath: the WAV file to write (replaced if it is a WAV file; never one of `paths`,
  ///     never a file of another kind: `RenderError.write` says so).
  ///   - options: transitions, repeat, shuffle, loops, duration, rate and output format.
  ///   - diagnostics: receives the engine's notices and warnings.
  ///   - onEvent: the queue player's events, in order, on its notification queue (not the calling
  ///     thread); all of them have been delivered when `render` returns.
  /// - Throws: `RenderError`: `.invalidOptions` for options out of range and for a render that
  ///   could never end (`loopRepeat == .untilReleased` or a repeat mode without
  ///   `durationSeconds`) or no files; `.decode` when no file opens and `sampleRate` is nil;
  ///   `.output`, `.player`, `.queue` and `.write` as their names say.
  public static func render(
    paths: [String], to outputPath: String, options: Options = Options(), diagnostics: DiagnosticsHandler? = nil,
    onEvent: (@Sendable (QueuePlayerEvent) -> Void)? = nil
  ) throws(OfflineRenderer.RenderError) -> Result {
    try options.validate()
    guard !paths.isEmpty else { throw .invalidOptions("no files to render: the queue needs at least one") }
    var items: [MediaItem] = []
    var firstOpened: String?
    var firstError: DecodeError?
    for path in paths {
      do {
        items.append(try MediaItem.load(path: path))
        firstOpened = firstOpened ?? path
      } catch {
        items.append(MediaItem(path: path))
        firstError = firstError ?? error
      }
    }
    let outputRate: Int
    if let rate = options.sampleRate {
      outputRate = rate
    } else if let path = firstOpened {
      do { outputRate = try AudioFile.openDecoder(path: path).format.sampleRate } catch { throw .decode(error) }
    } else if let firstError {
      throw .decode(firstError)  // nothing opens, so there is no rate to mix at
    } else {
      preconditionFailure("a path either opens or fails")
    }

    var session = try RenderSession(
      outputPath: outputPath, sampleRate: outputRate, renderFrames: options.renderFrames,
      sampleFormat: options.sampleFormat, diagnostics: diagnostics)
    let player = QueuePlayer(engine: session.engine)
    let failures = FailureLog()
    player.addObserver { event in
      if case .itemFailed(let item, let error) = event { failures.append(Failure(item: item, error: error)) }
      onEvent?(event)
    }
    do { try options.configure(player, items: items) } catch { throw .queue(error) }
    // Setting the rate starts playback (after the position: the first file opens right there).
    do { try player.setCurrentPlaybackRate(options.rate) } catch { throw .player(error) }
    try session.openOutput(inputs: paths)

    let limit = options.durationSeconds.map { FrameMath.frames(seconds: $0, rate: Double(outputRate)) } ?? Int64.max
    // A safety net under the queue's own end, should it never come: every item heard in full as
    // many times as it may loop, slowed by the rate, plus slack. Past it, the render stops and says so.
    let loopPasses = Double((options.loopRepeat.count ?? 0) + 1)
    let queueSeconds =
      items.reduce(0) { $0 + ($1.playbackDuration ?? 0) } * loopPasses / (Double(options.rate) * Double(options.tempo))
    let safetyLimit =
      options.durationSeconds == nil
      ? FrameMath.frames(seconds: queueSeconds + 10, rate: Double(outputRate), rounding: .towardZero) : Int64.max

    var written: Int64 = 0
    // Each mix is written when the next one shows the queue still going, so that the mix the
    // queue ended in can be cut after its last sound: the engine notices a voice has played out
    // on the pump after its last sample, one render call late.
    var held: (samples: [Float], frameCount: Int)?
    while true {
      let produced = written + Int64(held?.frameCount ?? 0)
      guard produced < limit else { break }
      session.mix()
      if player.playbackState == .stopped && session.mixIsSilent {
        if let last = held { held = (last.samples, lastSoundFrames(last.samples, frameCount: last.frameCount)) }
        break
      }
      // (Stopped but not silent: voices of the last crossfade still fade out; written to silence.)
      if let last = held {
        try session.write(last.samples, frameCount: last.frameCount)
        written += Int64(last.frameCount)
      }
      held = (session.buffer, Int(min(Int64(options.renderFrames), limit - produced)))
      if produced >= safetyLimit {
        session.engine.report(
          Diagnostic(
            .warning,
            "the queue did not end after \(Int(queueSeconds)) s of items (\(produced) frames): render stopped there"))
        break
      }
    }
    if let last = held {
      try session.write(last.samples, frameCount: last.frameCount)
      written += Int64(last.frameCount)
    }
    try session.finish()
    player.stop()
    player.waitForNotifications()
    return Result(
      framesWritten: written, sampleRate: outputRate, underruns: session.engine.underrunCount,
      failures: failures.all)
  }
}

/// How many of the first `frameCount` stereo frames of `samples` reach its last non-zero sample.
private func lastSoundFrames(_ samples: [Float], frameCount: Int) -> Int {
  guard let last = samples[..<(2 * frameCount)].lastIndex(where: { $0 != 0 }) else { return 0 }
  return last / 2 + 1
}

/// The failures an observer collects (a class: the observer closure cannot hold a `Mutex`).
private final class FailureLog: Sendable {
  private let list = Mutex<[QueueRenderer.Failure]>([])
  func append(_ failure: QueueRenderer.Failure) { list.withLock { $0.append(failure) } }
  var all: [QueueRenderer.Failure] { list.withLock { $0 } }
}
