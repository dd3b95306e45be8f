import Foundation
import LeitmotifFixtures
import Synchronization
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

@Suite("Rendering a queue (QueueRenderer, `leitmotif render` with queue options)")
struct CLIQueueTests {
  static let rate = 48_000

  /// Renders `paths` and returns the result, the WAV read back and the events heard.
  func render(
    _ paths: [String], in directory: TemporaryDirectory, options: QueueRenderer.Options = QueueRenderer.Options()
  ) throws -> (QueueRenderer.Result, WAVFile, [QueuePlayerEvent]) {
    let events = RenderedEvents()
    let out = directory.file("queue.wav")
    let result = try QueueRenderer.render(paths: paths, to: out, options: options, onEvent: events.append)
    return (result, try WAVFile(path: out), events.all)
  }

  @Test("Two files with a 0.5 s crossfade render len1 + len2 - 0.5 s, within one render call")
  func crossfadeLength() throws {
    let directory = try TemporaryDirectory()
    let first = try EngineHarness.vorbisTone(in: directory, name: "first.ogg", seconds: 1.5, frequency: 440)
    let second = try EngineHarness.vorbisTone(in: directory, name: "second.ogg", seconds: 2, frequency: 660)
    var options = QueueRenderer.Options()
    options.transition = try Transition(duration: 0.5, curve: .equalPower)
    let (result, wav, events) = try render([first, second], in: directory, options: options)

    let expected = Int64(72_000 + 96_000 - 24_000)
    #expect(result.sampleRate == Self.rate)
    #expect(result.failures.isEmpty)
    #expect(Int64(wav.frameCount) == result.framesWritten)
    // The hand-over starts on a mix boundary, early rather than late (so the outgoing item is
    // silent before its audio runs out): up to one render call shorter than the ideal.
    #expect(
      abs(result.framesWritten - expected) < Int64(EngineHarness.renderFrames),
      "wrote \(result.framesWritten) frames, expected \(expected) (within one render call)")
    #expect(nowPlayingNames(events) == ["first.ogg", "second.ogg"])
    let transitions = events.compactMap { event -> Transition? in
      if case .transitionStarted(_, _, let transition) = event { return transition } else { return nil }
    }
    #expect(transitions == [try Transition(duration: 0.5, curve: .equalPower)])
  }

  @Test("A gapless queue (crossfade 0) renders exactly len1 + len2 frames")
  func gaplessLength() throws {
    let directory = try TemporaryDirectory()
    let first = try EngineHarness.vorbisTone(in: directory, name: "first.ogg", seconds: 1.5, frequency: 440)
    let second = try EngineHarness.vorbisTone(in: directory, name: "second.ogg", seconds: 2, frequency: 660)
    var options = QueueRenderer.Options()
    options.transition = .gapless
    let (result, _, _) = try render([first, second], in: directory, options: options)
    #expect(result.framesWritten == 72_000 + 96_000)
  }

  @Test("Loops N times: an item with LOOPSTART/LOOPLENGTH tags plays its loop body N more times")
  func loopsTimes() throws {
    let directory = try TemporaryDirectory()
    let samples = ToneGenerator.sine(frequency: 440, amplitude: 0.5, seconds: 1.5, format: .stereo48000)
    let looped = try EngineHarness.vorbis(
      samples, in: directory, name: "loop.ogg", tags: [("LOOPSTART", "24000"), ("LOOPLENGTH", "24000")])
    var options = QueueRenderer.Options()
    options.loopRepeat = .times(2)
    #expect(try render([looped], in: directory, options: options).0.framesWritten == 72_000 + 2 * 24_000)
    options.loopRepeat = .off
    #expect(try render([looped], in: directory, options: options).0.framesWritten == 72_000)
  }

  @Test("render --help and info --help print their own command's usage, not every command's")
  func commandHelp() throws {
    let render = try LeitmotifCommand.run(["render", "--help"])
    #expect(render.status == 0)
    #expect(render.output.contains("leitmotif render --out OUT.wav") && render.output.contains("--crossfade SECONDS"))
    #expect(!render.output.contains("leitmotif scan") && !render.output.contains("leitmotif info"), "\(render.output)")
    let info = try LeitmotifCommand.run(["info", "--help"])
    #expect(info.status == 0)
    #expect(info.output.contains("leitmotif info [--analyze] FILE..."))
    #expect(!info.output.contains("--crossfade") && !info.output.contains("leitmotif render"), "\(info.output)")
  }

  @Test("A render that could never end is refused before any file is written; with a duration it renders")
  func neverEndingRenderIsRefused() throws {
    let directory = try TemporaryDirectory()
    let samples = ToneGenerator.sine(frequency: 440, amplitude: 0.5, seconds: 0.5, format: .stereo48000)
    let tone = try EngineHarness.vorbis(
      samples, in: directory, name: "loop.ogg", tags: [("LOOPSTART", "6000"), ("LOOPLENGTH", "12000")])
    let changes: [(inout QueueRenderer.Options) -> Void] = [
      { $0.loopRepeat = .untilReleased }, { $0.repeatMode = .all }, { $0.repeatMode = .one },
    ]
    for (index, change) in changes.enumerated() {
      let out = directory.file("never\(index).wav")
      var options = QueueRenderer.Options()
      change(&options)
      let error = #expect(throws: OfflineRenderer.RenderError.self) {
        try QueueRenderer.render(paths: [tone], to: out, options: options)
      }
      guard case .invalidOptions(let message)? = error else {
        Issue.record("expected invalidOptions, got \(String(describing: error))")
        continue
      }
      #expect(message.contains("never end") && message.contains("duration"), "\(message)")
      #expect(!FileManager.default.fileExists(atPath: out))

      options.durationSeconds = 1.25
      let result = try QueueRenderer.render(paths: [tone], to: out, options: options)
      #expect(result.framesWritten == 60_000)
    }
  }

  @Test("A start past the end of the queue's first item is refused, as for one file")
  func startPastTheFirstItem() throws {
    let directory = try TemporaryDirectory()
    let samples = ToneGenerator.sine(frequency: 440, amplitude: 0.5, seconds: 0.5, format: .stereo48000)
    let first = try EngineHarness.vorbis(samples, in: directory, name: "first.ogg", tags: [("TITLE", "First")])
    let second = try EngineHarness.vorbis(samples, in: directory, name: "second.ogg", tags: [])
    var options = QueueRenderer.Options()
    options.startSeconds = 2
    let out = directory.file("out.wav")
    // It was accepted: the first item silent, the second played.
    #expect(throws: OfflineRenderer.RenderError.self) {
      try QueueRenderer.render(paths: [first, second], to: out, options: options)
    }
    options.startSeconds = 0.25
    #expect(try QueueRenderer.render(paths: [first, second], to: out, options: options).framesWritten > 0)
  }

  @Test("Bad options are refused with an error that names them")
  func badOptions() throws {
    #expect(throws: QueueError.invalidCrossfade(-1)) { try Transition(duration: -1) }
    #expect(throws: QueueError.self) { try Transition(duration: .infinity) }

    func refusal(_ change: (inout QueueRenderer.Options) -> Void, paths: [String] = ["/nonexistent.ogg"]) -> String {
      var options = QueueRenderer.Options()
      change(&options)
      do {
        _ = try QueueRenderer.render(paths: paths, to: "/nonexistent/out.wav", options: options)
        return "(accepted)"
      } catch {
        return error.description
      }
    }
    #expect(refusal { $0.durationSeconds = -1 }.contains("duration -1.0 s"))
    #expect(refusal { $0.startSeconds = .nan }.contains("start time"))
    #expect(refusal { $0.renderFrames = 0 }.contains("render size 0"))
    #expect(refusal { $0.rate = 5 }.contains("playback rate 5.0 is out of range"))
    #expect(refusal { $0.loopRepeat = .times(-1) }.contains("loop count -1"))
    #expect(refusal({ _ in }, paths: []).contains("no files"))
    // Nothing opens and no rate was given: the file's own error.
    #expect(refusal { _ in }.contains("/nonexistent.ogg: no such file"))
  }

  @Test("A file that fails is reported and skipped; the rest of the queue renders")
  func failingItemIsSkipped() throws {
    let directory = try TemporaryDirectory()
    let first = try EngineHarness.vorbisTone(in: directory, name: "first.ogg", seconds: 1, frequency: 440)
    let second = try EngineHarness.vorbisTone(in: directory, name: "second.ogg", seconds: 1, frequency: 660)
    let missing = directory.file("missing.ogg")
    var options = QueueRenderer.Options()
    options.transition = .gapless
    let (result, _, events) = try render([first, missing, second], in: directory, options: options)
    #expect(result.failures.map(\.item.assetURL.path) == [missing])
    #expect(result.failures.first?.error.reason == .fileNotFound)
    #expect(result.framesWritten == 96_000)
    #expect(nowPlayingNames(events).contains("second.ogg"))
  }

  @Test("The same seed shuffles the same way; every item plays once")
  func seededShuffle() throws {
    let directory = try TemporaryDirectory()
    let paths = try (0..<5).map { index in
      try EngineHarness.vorbisTone(
        in: directory, name: "track\(index).ogg", seconds: 0.25, frequency: 220 + 110 * Double(index))
    }
    var options = QueueRenderer.Options()
    options.transition = .gapless
    options.shuffleMode = .songs
    options.seed = 42
    let order = nowPlayingNames(try render(paths, in: directory, options: options).2)
    let again = nowPlayingNames(try render(paths, in: directory, options: options).2)
    #expect(order == again)
    #expect(order.sorted() == (0..<5).map { "track\($0).ogg" })
  }

  /// The names of the items that started playing, in order (the end of the queue, which moves
  /// back to the first item while stopping, left out).
  func nowPlayingNames(_ events: [QueuePlayerEvent]) -> [String] {
    var names: [String] = []
    for (index, event) in events.enumerated() {
      guard case .nowPlayingItemChanged(let item?, _, _) = event else { continue }
      if index + 1 < events.count, case .playbackStateChanged(.stopped) = events[index + 1] { continue }
      names.append(item.title ?? item.assetURL.lastPathComponent)
    }
    return names
  }
}

@Suite("The leitmotif executable: queue options")
struct CLIQueueExecutableTests {
  static var executable: URL? { LeitmotifCommand.executable }

  func run(_ arguments: [String]) throws -> LeitmotifCommand.Run { try LeitmotifCommand.run(arguments) }

  @Test(
    "render --crossfade renders a queue; bad values are usage errors (status 2) naming the option",
    .enabled(if: executable != nil, "the leitmotif executable is not next to the test bundle"))
  func renderQueue() throws {
    let directory = try TemporaryDirectory()
    let first = try EngineHarness.vorbisTone(in: directory, name: "first.ogg", seconds: 1, frequency: 440)
    let second = try EngineHarness.vorbisTone(in: directory, name: "second.ogg", seconds: 1, frequency: 660)
    let out = directory.file("out.wav")

    let good = try run(["render", "--out", out, "--crossfade", "0.5", "--curve", "s-curve", first, second])
    #expect(good.status == 0, "\(good.errors)")
    #expect(good.output.contains("▶ 1/2 first.ogg (start)"))
    #expect(good.output.contains("▶ 2/2 second.ogg (next)"))
    #expect(good.output.contains("⇄ s-curve crossfade of 0.5 s: first.ogg → second.ogg"))
    #expect(good.output.contains("wrote \(out): "))
    let frames = try WAVFile(path: out).frameCount
    #expect(abs(frames - 72_000) < EngineHarness.renderFrames, "\(frames) frames")

    let refusals: [([String], String)] = [
      (["--crossfade", "-1"], "--crossfade: expected a duration from 0 to 86400 s"),
      (["--curve", "foo"], "--curve: expected linear, equal-power, s-curve or exponential, got \"foo\""),
      (["--loops", "x"], "--loops: expected a whole number of 0 or more, or \"forever\", got \"x\""),
      (["--repeat", "twice"], "--repeat: expected none, one or all"),
      (["--shuffle", "on"], "--shuffle: expected off, songs or albums"),
      (["--loops", "forever"], "--loops forever never ends: render needs --duration"),
      (["--repeat", "all"], "--repeat all never ends: render needs --duration"),
    ]
    for (options, message) in refusals {
      let refused = try run(["render", "--out", directory.file("refused.wav")] + options + [first, second])
      #expect(refused.status == 2, "\(options)")
      #expect(refused.errors.contains(message), "\(options): \(refused.errors)")
      #expect(!FileManager.default.fileExists(atPath: directory.file("refused.wav")))
    }
  }
}

/// Events collected from `QueueRenderer`'s `onEvent` (called on the player's notification queue).
private final class RenderedEvents: Sendable {
  private let events = Mutex<[QueuePlayerEvent]>([])
  func append(_ event: QueuePlayerEvent) { events.withLock { $0.append(event) } }
  var all: [QueuePlayerEvent] { events.withLock { $0 } }
}
