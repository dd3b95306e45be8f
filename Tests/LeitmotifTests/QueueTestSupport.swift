import Foundation
import LeitmotifFixtures
import Synchronization

@testable import Leitmotif

/// Collects a queue player's events for assertions.
final class QueueLog: Sendable {
  private let events = Mutex<[QueuePlayerEvent]>([])
  init(_ player: QueuePlayer) { player.addObserver { [self] event in events.withLock { $0.append(event) } } }
  var all: [QueuePlayerEvent] { events.withLock { $0 } }
  var states: [PlaybackState] {
    all.compactMap { if case .playbackStateChanged(let state) = $0 { return state } else { return nil } }
  }
  /// Now-playing changes: (title or file name, reason).
  var nowPlaying: [(String?, NowPlayingChangeReason)] {
    all.compactMap {
      if case .nowPlayingItemChanged(let item, _, let reason) = $0 {
        return (item.map { $0.title ?? $0.assetURL.lastPathComponent }, reason)
      }
      return nil
    }
  }
  var failures: [(MediaItem, DecodeError)] {
    all.compactMap { if case .itemFailed(let item, let error) = $0 { return (item, error) } else { return nil } }
  }
}

extension EngineHarness {
  /// Encodes `samples` (stereo, interleaved) as a Vorbis file and returns its path.
  static func vorbis(
    _ samples: [Float], in directory: TemporaryDirectory, name: String, format: PCMFormat = .stereo48000,
    tags: [(String, String)] = []
  ) throws -> String {
    let path = directory.file(name)
    try VorbisEncoder.encode(samples: samples, format: format, tags: tags, quality: 0.4, to: path)
    return path
  }

  /// Seeded stereo white noise samples.
  static func noise(seed: UInt64, seconds: Double, amplitude: Float = 0.5, format: PCMFormat = .stereo48000) -> [Float]
  {
    ToneGenerator.whiteNoise(
      seed: seed, amplitude: amplitude, frameCount: format.frames(seconds: seconds), channelCount: format.channelCount)
  }

  /// Power (mean square over both channels) of a window of stereo frames.
  static func power(_ stereo: [Float], frames: Range<Int>) -> Double {
    var sum = 0.0
    for frame in frames {
      let left = Double(stereo[2 * frame])
      let right = Double(stereo[2 * frame + 1])
      sum += left * left + right * right
    }
    return sum / Double(2 * frames.count)
  }
}
