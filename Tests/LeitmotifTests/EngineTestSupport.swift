import Foundation
import LeitmotifFixtures
import Synchronization
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// Small helpers for driving an offline engine by hand, the way Godot's dummy driver lets tests
/// pump audio: every render call has the same size, so every run is the same.
enum EngineHarness {
  static let renderFrames = 1024

  /// A Vorbis file of `seconds` of a sine per channel (stereo), made in code.
  static func vorbisTone(
    in directory: TemporaryDirectory, name: String = "tone.ogg", seconds: Double, frequency: Double = 440,
    amplitude: Float = 0.5, format: PCMFormat = .stereo48000
  ) throws -> String {
    let path = directory.file(name)
    let samples = ToneGenerator.sine(frequency: frequency, amplitude: amplitude, seconds: seconds, format: format)
    try VorbisEncoder.encode(samples: samples, format: format, quality: 0.4, to: path)
    return path
  }

  /// Seeded white noise: it compresses badly, so the file has many pages to damage or cut.
  static func vorbisNoise(in directory: TemporaryDirectory, name: String = "noise.ogg", seconds: Double) throws
    -> String
  {
    let path = directory.file(name)
    let format = PCMFormat.stereo48000
    let samples = ToneGenerator.whiteNoise(
      seed: 7, amplitude: 0.5, frameCount: format.frames(seconds: seconds), channelCount: format.channelCount)
    try VorbisEncoder.encode(samples: samples, format: format, quality: 0.4, to: path)
    return path
  }

  static func decodeAll(_ path: String) throws -> (samples: [Float], format: AudioFormat) {
    let decoder = try AudioFile.openDecoder(path: path)
    return (try AudioFile.decodeAll(decoder), decoder.format)
  }

  /// Reads `decoder` in blocks of 4096 frames until it ends, fails, or `limit` frames are read:
  /// the frames read and the failure, if one ended it (damaged and cut-off files).
  static func readUntilFailure(_ decoder: any AudioDecoder, limit: Int = .max) -> (frames: Int, failure: DecodeError?) {
    var frames = 0
    var block = [Float](repeating: 0, count: 4096 * decoder.format.channelCount)
    while frames < limit {
      do {
        let got = try block.withUnsafeMutableBufferPointer { (pointer) throws(DecodeError) -> Int in
          try decoder.readFrames(into: pointer.baseAddress!, frameCapacity: 4096)
        }
        if got == 0 { break }
        frames += got
      } catch {
        return (frames, error)
      }
    }
    return (frames, nil)
  }

  static func offlineEngine(sampleRate: Int = 48_000) throws -> AudioEngine {
    try AudioEngine(output: .offline(sampleRate: sampleRate, renderFrames: renderFrames))
  }

  /// Renders `frames` (rounded up to whole render calls) and returns the stereo samples.
  static func render(_ engine: AudioEngine, frames: Int) -> [Float] {
    let calls = (frames + renderFrames - 1) / renderFrames
    var output = [Float](repeating: 0, count: calls * renderFrames * 2)
    output.withUnsafeMutableBufferPointer { pointer in
      for call in 0..<calls {
        engine.render(into: pointer.baseAddress! + call * renderFrames * 2, frameCount: renderFrames)
      }
    }
    return output
  }

  static func render(_ engine: AudioEngine, seconds: Double) -> [Float] {
    render(engine, frames: Int(seconds * Double(engine.sampleRate)))
  }

  /// The largest jump between neighbouring samples of either channel.
  static func largestStep(_ stereo: [Float]) -> Float {
    var largest: Float = 0
    var index = 2
    while index < stereo.count {
      largest = max(largest, abs(stereo[index] - stereo[index - 2]))
      index += 1
    }
    return largest
  }

  static func peak(_ samples: ArraySlice<Float>) -> Float { samples.reduce(0) { max($0, abs($1)) } }

  /// Waits (bounded) until `condition` holds; for real-time engines.
  static func wait(seconds: Double, until condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
      if condition() { return true }
      usleep(10_000)
    }
    return condition()
  }
}

/// Collects a player's events for assertions.
final class EventLog: Sendable {
  private let events = Mutex<[PlayerEvent]>([])
  init(_ player: Player) { player.addObserver { [self] event in events.withLock { $0.append(event) } } }
  var all: [PlayerEvent] { events.withLock { $0 } }
  var states: [PlaybackState] {
    all.compactMap { if case .playbackStateChanged(let state) = $0 { return state } else { return nil } }
  }
}

/// Collects diagnostics.
final class DiagnosticLog: Sendable {
  private let entries = Mutex<[Diagnostic]>([])
  var handler: DiagnosticsHandler { { [self] diagnostic in entries.withLock { $0.append(diagnostic) } } }
  var all: [Diagnostic] { entries.withLock { $0 } }
}

extension Trait where Self == TimeLimitTrait {
  /// The time limit of a test that guards against a hang: 10 minutes, twice what the whole suite
  /// takes on CI. A limit of 1 minute failed a test whose work takes 0.1 s: run beside a hundred
  /// suites on 2 cores it was reported as running for 218 s (its own timing of its render said
  /// under 20 s), so Swift Testing's clock counts the wait for a turn too.
  static var hangGuard: Self { .timeLimit(.minutes(10)) }
}
