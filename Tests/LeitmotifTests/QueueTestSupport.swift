import Foundation
import LeitmotifFixtures
import Synchronization

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

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
  /// Two 6 s items of uncorrelated noise crossfading over 3 s with `curve` (offline, 10 s), and
  /// the largest deviation of the summed power from its level before the fade, in dB, over 4096-frame
  /// windows from 2.5 s to 8.5 s (the fade runs from about 3 s to 6 s).
  static func noiseCrossfadeDeviation(curve: FadeCurve) throws -> (decibels: Double, rendered: [Float]) {
    let directory = try TemporaryDirectory()
    let a = try vorbis(noise(seed: 1, seconds: 6), in: directory, name: "a.ogg")
    let b = try vorbis(noise(seed: 2, seconds: 6), in: directory, name: "b.ogg")
    let engine = try offlineEngine()
    let player = QueuePlayer(engine: engine)
    player.transition = try Transition(duration: 3, curve: curve)
    try player.setQueue(with: [MediaItem(path: a), MediaItem(path: b)])
    player.play()
    let rendered = render(engine, seconds: 10)
    player.waitForNotifications()
    let window = 4096
    let reference = power(rendered, frames: 0..<(2 * 48_000))
    var worst = 0.0
    var frame = 120_000
    while frame + window <= 408_000 {
      worst = max(worst, abs(10 * log10(power(rendered, frames: frame..<(frame + window)) / reference)))
      frame += window
    }
    return (worst, rendered)
  }

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
