import Foundation
import Synchronization

/// Renders one file through the OpenAL loopback device to a WAV file: what `leitmotif render`
/// does, and what the tests use to hear the engine.
public struct OfflineRenderer {
  public struct Options: Sendable {
    /// Where to start in the file, in seconds.
    public var seekSeconds: Double = 0
    /// Playback speed in (0, 4].
    public var rate: Float = 1
    /// Stop after this many seconds of output (nil: until the item ends).
    public var durationSeconds: Double?
    /// The mixing rate (nil: the file's own rate).
    public var sampleRate: Int?
    public var sampleFormat: WAVSampleFormat = .float32
    /// Frames per mix; every render call has this size, so runs are repeatable.
    public var renderFrames: Int = 1024
    public init() {}
  }

  public struct Result: Sendable {
    public var framesWritten: Int64
    public var sampleRate: Int
    public var underruns: Int
    public var failure: DecodeError?
  }

  public enum RenderError: Error, CustomStringConvertible {
    case decode(DecodeError)
    case output(OutputError)
    case player(PlayerError)
    /// The queue was refused (`QueueRenderer`).
    case queue(QueueError)
    /// The options cannot make a render: out of range, or a render that would never end.
    case invalidOptions(String)
    case write(path: String, underlying: String)

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

  /// Renders `path` to the WAV file `outputPath`.
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
    try session.openOutput()
    // Where the item ends in output frames: what is left of it, sped up by the rate, resampled.
    let startFrame = min(lengthFrames, Int64((options.seekSeconds * Double(fileRate)).rounded()))
    let itemFrames = Int64(
      (Double(lengthFrames - startFrame) / Double(options.rate) * Double(outputRate) / Double(fileRate)).rounded(.up))
    var limit = itemFrames
    if let duration = options.durationSeconds { limit = min(limit, Int64(duration * Double(outputRate))) }

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
