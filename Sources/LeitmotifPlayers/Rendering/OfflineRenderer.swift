import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import Synchronization

/// Renders one file through the OpenAL loopback device to a WAV file: what `leitmotif render`
/// does, and what the tests use to hear the engine.
public struct OfflineRenderer {
  /// How to render: where to start, how fast, how long, and the output's rate and sample format.
  public struct Options: Sendable {
    /// Where to start in the file, in seconds.
    public var seekSeconds: Double = 0
    /// Playback speed in [1/256, 4].
    public var rate: Float = 1
    /// Stop after this many seconds of output (nil: until the item ends).
    public var durationSeconds: Double?
    /// The mixing rate (nil: the file's own rate).
    public var sampleRate: Int?
    /// The WAV file's samples: 32-bit float (the default) or 16-bit integer.
    public var sampleFormat: WAVSampleFormat = .float32
    /// Frames per mix; every render call has this size, so runs are repeatable.
    public var renderFrames: Int = 1024
    /// The defaults: from the start, rate 1, to the item's end, at the file's rate, float32, 1024-frame mixes.
    public init() {}
  }

  /// What a render produced.
  public struct Result: Sendable {
    /// Frames written to the WAV file.
    public var framesWritten: Int64
    /// The WAV file's sample rate, in Hz.
    public var sampleRate: Int
    /// Underruns counted during the render (0 in a healthy run).
    public var underruns: Int
    /// Why the file stopped early, when it failed midway (nil: it played to its end or the duration).
    public var failure: DecodeError?
  }

  /// Why a render could not be made. The description says what failed, on which file.
  public enum RenderError: Error, CustomStringConvertible {
    /// The file could not be opened or decoded.
    case decode(DecodeError)
    /// The loopback output could not be opened.
    case output(OutputError)
    /// The player refused a request (a rate out of range, no voice).
    case player(PlayerError)
    /// The queue was refused (`QueueRenderer`).
    case queue(QueueError)
    /// The options cannot make a render: out of range, or a render that would never end.
    case invalidOptions(String)
    /// The WAV file at `path` could not be written; `underlying` is the system's reason.
    case write(path: String, underlying: String)

    /// The error in a sentence.
    public var description: String {
      switch self {
      case .decode(let error): return error.description
      case .output(let error): return error.description
      case .player(let error): return error.description
      case .queue(let error): return error.description
      case .invalidOptions(let why): return why
      case .write(let path, let underlying): return "\(path): cannot write: \(underlying)"
      }
    }
  }

  /// Renders `path` to the WAV file `outputPath`, on the calling thread (it blocks until done).
  /// - Parameters:
  ///   - path: the audio file (Ogg Vorbis, Opus, MP3, FLAC, WAV or AIFF).
  ///   - outputPath: the WAV file to write (replaced if it is a WAV file; never the input, never
  ///     a file of another kind: `RenderError.write` says so).
  ///   - options: where to start, rate, duration, sample rate and format.
  ///   - diagnostics: receives the engine's notices and warnings.
  /// - Returns: frames written, the rate, underruns, and the failure if the file stopped early.
  /// - Throws: `RenderError` when the file cannot be opened, the output not written, or the
  ///   options are out of range. A file that fails midway ends early: `Result.failure` says why.
  public static func render(
    path: String, to outputPath: String, options: Options = Options(),
    diagnostics: DiagnosticsHandler? = nil
  ) throws(RenderError) -> Result {
    let probe: any AudioDecoder
    do { probe = try AudioFile.openDecoder(path: path) } catch { throw .decode(error) }
    let fileRate = probe.format.sampleRate
    let lengthFrames = probe.lengthFrames
    // A start past the end rendered nothing and said it had written a file.
    if options.seekSeconds.isFinite,
      FrameMath.frames(seconds: options.seekSeconds, rate: Double(fileRate)) > lengthFrames
    {
      throw .invalidOptions(
        "seek to \(options.seekSeconds) s is past the end of \(FileSystemPath.displayed(path)) (\((probe.durationSeconds * 1000).rounded() / 1000) s)"
      )
    }
    let outputRate = options.sampleRate ?? fileRate
    var session = try RenderSession(
      outputPath: outputPath, sampleRate: outputRate, renderFrames: options.renderFrames,
      sampleFormat: options.sampleFormat, diagnostics: diagnostics)
    let player: Player
    do { player = try Player(engine: session.engine, item: MediaItem(path: path)) } catch { throw .player(error) }
    let failure = FailureBox()
    player.addObserver { event in
      if case .itemFailed(let error) = event { failure.value.withLock { $0 = error } }
    }
    // The position first: the file then opens right there (setting a rate starts playback).
    if options.seekSeconds > 0 { player.currentPlaybackTime = options.seekSeconds }
    do { try player.setCurrentPlaybackRate(options.rate) } catch { throw .player(error) }
    player.play()
    try session.openOutput(inputs: [path])
    // Where the item ends in output frames: what is left of it, sped up by the rate, resampled.
    let startFrame = min(lengthFrames, FrameMath.frames(seconds: options.seekSeconds, rate: Double(fileRate)))
    let itemFrames = Int64(
      (Double(lengthFrames - startFrame) / Double(options.rate) * Double(outputRate) / Double(fileRate)).rounded(.up))
    var limit = itemFrames
    if let duration = options.durationSeconds {
      limit = min(limit, FrameMath.frames(seconds: duration, rate: Double(outputRate), rounding: .towardZero))
    }

    var written: Int64 = 0
    while written < limit {
      session.mix()
      let frames = Int(min(Int64(options.renderFrames), limit - written))
      try session.write(frameCount: frames)
      written += Int64(frames)
      if player.playbackState == .stopped { break }
    }
    try session.finish()
    player.waitForNotifications()
    return Result(
      framesWritten: written, sampleRate: outputRate, underruns: session.engine.underrunCount,
      failure: failure.value.withLock { $0 })
  }
}

private final class FailureBox: Sendable {
  let value = Mutex<DecodeError?>(nil)
}
