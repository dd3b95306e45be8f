import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers
import Synchronization

/// Plays a level offline: a cue file and a script of timed events through the director on the
/// OpenAL loopback device, to a WAV file, faster than real time and the same samples every run.
/// What `leitmotif cues simulate` does, and what the tests and the demo use.
///
/// Timing is exact: the render is split so that an event at time T is applied at the frame of T,
/// and a transition quantized to the beat grid starts so that its incoming music's first sample
/// falls on the grid line. Immediate changes are heard on the first frame mixed after their
/// event.
public struct CueSimulation {
  /// How to run a simulation: the output's rate, mix size and format, how long, and what the player has.
  public struct Options: Sendable {
    /// The mixing rate, in Hz (8000 to 192000; default 48000).
    public var sampleRate = 48_000
    /// Frames per mix: the most a change can lag its event. Render calls are this size except
    /// where a change must land on an exact frame.
    public var renderFrames = 256
    /// The WAV file's samples: 32-bit float (the default) or 16-bit integer.
    public var sampleFormat: WAVSampleFormat = .float32
    /// How long to render (nil: until `tailSeconds` after the script's last step).
    public var durationSeconds: Double?
    /// Seconds rendered after the script's last step when `durationSeconds` is nil (default 8).
    public var tailSeconds = 8.0
    /// The player's library for `library` and `playlist` sources (nil: they fall back).
    public var library: MediaLibrary?
    /// The player's picks for `picks` sources.
    public var picks: MediaItemCollection?
    /// The state to start in (nil: the cue file's `start`).
    public var startState: String?
    /// How often the timeline samples each voice's gain, in seconds.
    public var gainSampleSeconds = 0.05
    /// Hears every report as the run makes it (on the director's notification queue; report
    /// times are audio times): the demo prints them while it renders.
    public var onReport: (@Sendable (DirectorReport) -> Void)?
    /// Hears every beat of the music as the game's beat callback would (`Director.addBeatObserver`):
    /// offline, as the render passes it.
    public var onBeat: (@Sendable (MusicBeat) -> Void)?
    /// Hears every marker (named cue point) of the music as the game's marker callback would
    /// (`Director.addMarkerObserver`): offline, as the render passes it.
    public var onMarker: (@Sendable (MusicMarker) -> Void)?
    /// The defaults: 48 kHz, 256-frame mixes, float32, until 8 s after the last step, no library or
    /// picks, the cue file's start state, gains sampled every 0.05 s.
    public init() {}
  }

  /// What a simulation produced.
  public struct Result: Sendable {
    /// Frames written (or rendered, without an output file).
    public var framesWritten: Int64
    /// The output's sample rate, in Hz.
    public var sampleRate: Int
    /// Underruns counted during the run (0 in a healthy run).
    public var underruns: Int
    /// What happened: events, rules, states, items and gains over time.
    public var timeline: CueTimeline
  }

  /// Renders `script` against `sheet` into `outputPath` (nil: render without writing, for tests
  /// that only need the timeline or the samples via `onMix`).
  /// Runs on the calling thread and returns when the render is done.
  /// - Parameters:
  ///   - sheet: the cue file, loaded.
  ///   - script: the timed events to post.
  ///   - outputPath: the WAV file to write (nil: write nothing).
  ///   - options: rate, mix size, format, duration, library and picks, start state.
  ///   - diagnostics: receives the engine's notices and warnings.
  ///   - onMix: each render call's interleaved stereo samples with the frame it starts at.
  /// - Throws: `RenderError` when the output cannot be opened or written, or the options are out
  ///   of range.
  public static func run(
    sheet: CueSheet, script: CueScript, outputPath: String?, options: Options = Options(),
    diagnostics: DiagnosticsHandler? = nil,
    onMix: ((_ startFrame: Int64, _ samples: UnsafeBufferPointer<Float>) -> Void)? = nil
  ) throws(OfflineRenderer.RenderError) -> Result {
    guard options.sampleRate >= 8_000, options.sampleRate <= 192_000 else {
      throw .invalidOptions("sample rate \(options.sampleRate) Hz: expected 8000 to 192000")
    }
    guard options.renderFrames >= 16, options.renderFrames <= 8192 else {
      throw .invalidOptions("render size \(options.renderFrames) frames: expected 16 to 8192")
    }
    if let duration = options.durationSeconds, !(duration.isFinite && duration >= 0) {
      throw .invalidOptions("duration \(duration) s: expected a finite time of 0 s or more")
    }
    var session = try RenderSession(
      outputPath: outputPath ?? "/dev/null", sampleRate: options.sampleRate, renderFrames: options.renderFrames,
      sampleFormat: options.sampleFormat, diagnostics: diagnostics)
    let director = Director(engine: session.engine, sheet: sheet, library: options.library, clocking: .pumped)
    if let picks = options.picks { director.setPicks(picks) }
    let log = ReportLog()
    let onReport = options.onReport
    director.addObserver { report in
      log.append(report)
      onReport?(report)
    }
    if let onBeat = options.onBeat { director.addBeatObserver(onBeat) }
    if let onMarker = options.onMarker { director.addMarkerObserver(onMarker) }
    if outputPath != nil {
      // Never over what the run reads: the cue file, the bundled music (a render replaces only a
      // WAV file, and a bundled WAV is named here).
      let inputs = [sheet.path].compactMap { $0 } + (sheet.catalog?.items.map { $0.assetURL.path } ?? [])
      try session.openOutput(inputs: inputs)
    }

    let rate = Double(options.sampleRate)
    let endSeconds = options.durationSeconds ?? (script.lastTime + options.tailSeconds)
    let endFrame = FrameMath.frames(seconds: endSeconds, rate: rate)
    let sampleEvery = max(1, FrameMath.frames(seconds: options.gainSampleSeconds, rate: rate, rounding: .towardZero))
    var timeline = CueTimeline(sampleRate: options.sampleRate, durationSeconds: endSeconds)
    var frame: Int64 = 0
    var nextStep = 0
    var nextGainSample: Int64 = 0
    director.start(at: 0, state: options.startState)
    while frame < endFrame {
      let time = Double(frame) / rate
      // The director steps its `schedulingLead` ahead of the mix, as it does in real time;
      // script steps due by then go in first, and each takes effect on its own frame.
      let ahead = frame + director.leadFrames
      while nextStep < script.steps.count, Self.frame(of: script.steps[nextStep].time, rate: rate) <= ahead {
        let step = script.steps[nextStep]
        switch step.kind {
        case .cue(let cue, let payload):
          if !director.bus.post(cue, payload, atAudioTime: step.time) { timeline.note("bus full: \(cue) dropped") }
        case .parameter(let name, let value, let ramp):
          // Taken by a step of its own on the first grid frame at or after its time (the
          // director's steps before it first), as a live director takes it at its next step:
          // a live run's recording (`cues simulate --record`) names those steps' times.
          let grid = Director.gridFrames
          let at = (Self.frame(of: step.time, rate: rate) + grid - 1) / grid * grid
          director.stepOnGrid(upTo: at - 1)
          director.setParameter(name, value, rampSeconds: ramp)
          director.stepOnGrid(upTo: at)
        }
        nextStep += 1
      }
      director.stepOnGrid(upTo: ahead)
      if frame >= nextGainSample {
        timeline.sampleVoices(at: time, engine: session.engine, director: director)
        nextGainSample += sampleEvery
      }
      // Renders of `renderFrames`: what the director does lands inside them on its own frame.
      let next = min(endFrame, frame + Int64(options.renderFrames))
      let count = Int(next - frame)
      session.mix(frameCount: count)
      if let onMix {
        session.buffer.withUnsafeBufferPointer { onMix(frame, UnsafeBufferPointer(rebasing: $0[..<(2 * count)])) }
      }
      if outputPath != nil { try session.write(frameCount: count) }
      frame = next
    }
    try session.finish()
    director.player.stop()
    director.waitForReports()
    timeline.add(reports: log.all, script: script)
    return Result(
      framesWritten: frame, sampleRate: options.sampleRate, underruns: session.engine.underrunCount, timeline: timeline)
  }

  static func frame(of seconds: Double, rate: Double) -> Int64 { FrameMath.frames(seconds: seconds, rate: rate) }
}

/// The reports an observer collects (a class: the observer closure cannot hold a `Mutex`).
final class ReportLog: Sendable {
  private let list = Mutex<[DirectorReport]>([])
  func append(_ report: DirectorReport) { list.withLock { $0.append(report) } }
  var all: [DirectorReport] { list.withLock { $0 } }
}
