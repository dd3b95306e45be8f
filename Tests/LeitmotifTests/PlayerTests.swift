import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

@Suite("Offline rendering and the player on the loopback device")
struct PlayerTests {
  @Test("A stereo Vorbis file renders sample-identical to its decode at its own rate, rate 1, f32")
  func vorbisRenderIsIdenticalToDecode() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 2.3)
    try assertRenderIdentical(path, directory: directory)
  }

  @Test("A stereo MP3 (LAME tag) renders sample-identical to its decode")
  func mp3RenderIsIdenticalToDecode() throws {
    let directory = try TemporaryDirectory()
    let fixtures = try #require(Bundle.module.url(forResource: "Fixtures", withExtension: nil))
    try assertRenderIdentical(fixtures.appendingPathComponent("lame-44100-stereo.mp3").path, directory: directory)
  }

  private func assertRenderIdentical(_ path: String, directory: TemporaryDirectory) throws {
    let (decoded, format) = try EngineHarness.decodeAll(path)
    let out = directory.file("render.wav")
    let result = try OfflineRenderer.render(path: path, to: out)
    let rendered = try WAVFile(path: out)
    #expect(rendered.sampleRate == format.sampleRate)
    #expect(Int(result.framesWritten) == decoded.count / 2)
    #expect(rendered.samples.count == decoded.count)
    let mismatch = rendered.samples.indices.first { rendered.samples[$0] != decoded[$0] }
    #expect(mismatch == nil, "first differing sample at \(mismatch ?? -1)")
  }

  @Test("render with a start position opens the file there and fades in: no sound from before it")
  func renderFromAPosition() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 3)
    let (decoded, _) = try EngineHarness.decodeAll(path)
    var options = OfflineRenderer.Options()
    options.seekSeconds = 1.5
    let out = directory.file("seek.wav")
    let result = try OfflineRenderer.render(path: path, to: out, options: options)
    let rendered = try WAVFile(path: out).samples
    #expect(result.framesWritten == 72_000)
    // After the 10 ms fade-in (and the silent first mix) the output is the decode from 1.5 s on.
    let start = 72_000
    let settled = 3 * EngineHarness.renderFrames
    let offset = (settled..<(settled + 4096)).first { rendered[2 * $0] != decoded[2 * (start + $0)] }
    #expect(offset == nil, "differs at frame \(offset ?? -1)")
    #expect(EngineHarness.largestStep(rendered) < 0.05, "no click at the start")
  }

  @Test("File names in any script play: the path goes to the C libraries as UTF-8")
  func unicodeFileName() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, name: "Thème — ボス戦 🎵.ogg", seconds: 0.5)
    let info = try AudioFile.openDecoder(path: path)
    #expect(info.lengthFrames == 24_000)
    let result = try OfflineRenderer.render(path: path, to: directory.file("übersicht.wav"))
    #expect(result.framesWritten == 24_000)
    #expect(EngineHarness.peak(try WAVFile(path: directory.file("übersicht.wav")).samples[...]) > 0.3)
  }

  @Test("Loopback rendering is deterministic: same input, same bytes")
  func loopbackIsDeterministic() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 1.5)
    var options = OfflineRenderer.Options()
    options.sampleRate = 44_100  // resampled by OpenAL: still deterministic
    options.rate = 1.3
    options.sampleFormat = .int16
    _ = try OfflineRenderer.render(path: path, to: directory.file("a.wav"), options: options)
    _ = try OfflineRenderer.render(path: path, to: directory.file("b.wav"), options: options)
    let first = try Data(contentsOf: URL(fileURLWithPath: directory.file("a.wav")))
    let second = try Data(contentsOf: URL(fileURLWithPath: directory.file("b.wav")))
    #expect(first.count > 44_100)
    #expect(first == second)
  }

  @Test("Rate 2.0 plays a 10 s file in 5 s, within one block")
  func doubleRateHalvesTheDuration() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 10, frequency: 220)
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine, item: MediaItem(path: path))
    try player.setCurrentPlaybackRate(2)
    #expect(player.currentPlaybackRate == 2)
    var framesUntilEnd = 0
    var output: [Float] = []
    while player.playbackState == .playing && framesUntilEnd < 48_000 * 8 {
      output += EngineHarness.render(engine, frames: EngineHarness.renderFrames)
      framesUntilEnd += EngineHarness.renderFrames
    }
    #expect(player.playbackState == .stopped)
    let lastSound = (output.lastIndex { abs($0) > 1e-4 } ?? 0) / 2
    #expect(abs(lastSound - 240_000) <= Voice.framesPerBuffer, "sound ended at frame \(lastSound)")
    #expect(abs(framesUntilEnd - 240_000) <= Voice.framesPerBuffer + EngineHarness.renderFrames)
  }

  @Test("Pause, resume, stop and seek leave no step louder than -40 dBFS")
  func transportIsClickFree() throws {
    let directory = try TemporaryDirectory()
    // 30 Hz at half scale: its own largest step is 0.002, so any click stands out against 0.01.
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 6, frequency: 30)
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine, item: MediaItem(path: path))
    player.play()
    var output = EngineHarness.render(engine, seconds: 0.77)
    player.pause()
    output += EngineHarness.render(engine, seconds: 0.3)
    let pausedTail = EngineHarness.render(engine, seconds: 0.2)
    #expect(EngineHarness.peak(pausedTail[...]) == 0, "silent while paused")
    output += pausedTail
    let pausedAt = player.currentPlaybackTime
    player.play()
    output += EngineHarness.render(engine, seconds: 0.41)
    player.currentPlaybackTime = 3.123
    output += EngineHarness.render(engine, seconds: 0.5)
    player.stop()
    output += EngineHarness.render(engine, seconds: 0.3)
    #expect(player.currentPlaybackTime == 0)
    player.play()
    output += EngineHarness.render(engine, seconds: 0.5)

    let minus40dBFS: Float = 0.01
    let step = EngineHarness.largestStep(output)
    #expect(step < minus40dBFS, "largest step \(step)")
    #expect(pausedAt > 0.7 && pausedAt < 0.85, "paused at \(pausedAt)")
    #expect(EngineHarness.peak(output[...]) > 0.4, "the music was heard")
  }

  @Test(
    "The first change of rate away from 1 is click-free: the resampler that takes over starts with what was just played",
    arguments: [1.5, 0.75, 4])
  func firstRateChangeIsClickFree(rate: Float) throws {
    let directory = try TemporaryDirectory()
    // 30 Hz at half scale (its largest step 0.002, at rate 4 0.008); the change at a crest.
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 4, frequency: 30)
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine, item: MediaItem(path: path))
    player.play()
    var output = EngineHarness.render(engine, frames: 48_000)
    try engine.performing(atMixFrame: 48_400) { try player.setCurrentPlaybackRate(rate) }
    output += EngineHarness.render(engine, seconds: 0.5)
    let step = EngineHarness.largestStep(output)
    // Reset, the resampler's filter held silence before its first frame: a dip over its reach,
    // a step of about 0.2 here.
    #expect(step < 0.015, "largest step \(step) at rate \(rate)")
    #expect(EngineHarness.peak(output[(2 * 60_000)...]) > 0.4, "the music plays on")
  }

  @Test("The same transport without the fades would click: the measure can fail")
  func hardCutIsDetected() {
    var signal = ToneGenerator.sine(frequency: 30, amplitude: 0.5, frameCount: 48_000, format: .stereo48000)
    for index in 30_000..<signal.count { signal[index] = 0 }
    #expect(EngineHarness.largestStep(signal) > 0.01)
  }

  @Test("currentPlaybackTime is exact: frames rendered while playing, and a seek lands on its frame")
  func positionIsExact() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 4)
    let (decoded, _) = try EngineHarness.decodeAll(path)
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine, item: MediaItem(path: path))
    player.play()
    _ = EngineHarness.render(engine, frames: 10 * EngineHarness.renderFrames)
    #expect(player.currentPlaybackTime == Double(10 * EngineHarness.renderFrames) / 48_000)

    // Seek while paused to frame 77_777, then play: after the fade-in the output is the decode
    // from that frame on, sample for sample.
    player.pause()
    _ = EngineHarness.render(engine, frames: 4 * EngineHarness.renderFrames)
    let target = 77_777
    player.currentPlaybackTime = Double(target) / 48_000
    #expect(player.currentPlaybackTime == Double(target) / 48_000)
    _ = EngineHarness.render(engine, frames: EngineHarness.renderFrames)
    #expect(player.currentPlaybackTime == Double(target) / 48_000)
    player.play()
    let output = EngineHarness.render(engine, frames: 8 * EngineHarness.renderFrames)
    // The voice starts on the first frame mixed after play, at gain 0, and fades in over 10 ms
    // (480 frames); from then on the output is the decode, sample for sample.
    #expect(output[0] == 0 && output[1] == 0)
    #expect(EngineHarness.peak(output[0..<(2 * 480)]) > 0, "the target frame is heard at once, fading in")
    for frame in 480..<(8 * EngineHarness.renderFrames) {
      let sourceFrame = target + frame
      if output[2 * frame] != decoded[2 * sourceFrame] {
        Issue.record("frame \(frame): \(output[2 * frame]) != decode[\(sourceFrame)] \(decoded[2 * sourceFrame])")
        break
      }
    }
  }

  @Test("After an item played to its end, play() starts it again from the beginning")
  func playAgainAfterTheEnd() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 0.5)
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine, item: MediaItem(path: path))
    player.play()
    _ = EngineHarness.render(engine, seconds: 0.7)
    #expect(player.playbackState == .stopped)
    player.play()
    let again = EngineHarness.render(engine, seconds: 0.2)
    #expect(EngineHarness.peak(again[...]) > 0.3)
    #expect(player.currentPlaybackTime > 0.15 && player.currentPlaybackTime < 0.25)
  }

  @Test("Rates outside (0, 4] are refused with a clear error; 0 pauses")
  func rateValidation() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 1)
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine, item: MediaItem(path: path))
    for bad: Float in [-1, 4.01, .nan, .infinity] {
      #expect(throws: PlayerError.self) { try player.setCurrentPlaybackRate(bad) }
    }
    #expect(PlayerError.rateOutOfRange(5).description.contains("from 1/256 (0.0039) to 4"))
    try player.setCurrentPlaybackRate(4)
    #expect(player.playbackState == .playing)
    try player.setCurrentPlaybackRate(0)
    #expect(player.playbackState == .paused)
  }

  @Test("Playback-state notifications arrive in order, as callbacks and as an AsyncStream")
  func notificationsInOrder() async throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 0.5)
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine, item: MediaItem(path: path))
    let log = EventLog(player)
    let stream = player.events
    player.play()
    _ = EngineHarness.render(engine, seconds: 0.1)
    player.pause()
    player.play()
    _ = EngineHarness.render(engine, seconds: 1)  // plays to the end
    player.waitForNotifications()
    #expect(log.states == [.playing, .paused, .playing, .stopped])
    #expect(log.all.contains { if case .itemEnded = $0 { true } else { false } })
    var streamed: [PlaybackState] = []
    for await event in stream {
      if case .playbackStateChanged(let state) = event { streamed.append(state) }
      if streamed.count == 4 { break }
    }
    #expect(streamed == log.states)
  }

  @Test("Scanning forward moves faster than real time; endSeeking restores the state before")
  func scanning() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 20, frequency: 30)
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine, item: MediaItem(path: path))
    player.play()
    _ = EngineHarness.render(engine, seconds: 0.5)
    player.beginSeekingForward()
    #expect(player.playbackState == .seekingForward)
    var output = EngineHarness.render(engine, seconds: 2)
    let scanned = player.currentPlaybackTime
    #expect(scanned > 4, "after 2 s of scanning from 0.5 s the position is \(scanned)")
    player.endSeeking()
    #expect(player.playbackState == .playing)
    player.beginSeekingBackward()
    output += EngineHarness.render(engine, seconds: 1.5)
    #expect(player.currentPlaybackTime < scanned)
    player.endSeeking()
    output += EngineHarness.render(engine, seconds: 0.3)
    #expect(EngineHarness.largestStep(output) < 0.01, "scans jump with fades too")
  }

  @Test("A file that cannot be opened fails its item with a typed error; the engine goes on")
  func failingItemDoesNotStopTheEngine() throws {
    let directory = try TemporaryDirectory()
    let engine = try EngineHarness.offlineEngine()
    let broken = try Player(engine: engine, item: MediaItem(path: directory.file("missing.ogg")))
    let log = EventLog(broken)
    broken.play()
    _ = EngineHarness.render(engine, seconds: 0.1)
    broken.waitForNotifications()
    let failure = log.all.compactMap { if case .itemFailed(let error) = $0 { error } else { nil } }.first
    #expect(failure?.reason == .fileNotFound)
    #expect(failure?.path == directory.file("missing.ogg"))
    #expect(broken.playbackState == .stopped)

    let path = try EngineHarness.vorbisTone(in: directory, seconds: 0.5)
    let good = try Player(engine: engine, item: MediaItem(path: path))
    good.play()
    let output = EngineHarness.render(engine, seconds: 0.3)
    #expect(EngineHarness.peak(output[...]) > 0.3)
  }

  @Test("A file cut off in the middle ends its item early with an error notification; the process goes on")
  func truncatedMidway() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisNoise(in: directory, seconds: 3)
    let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
    try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: path))
    let (player, engine, log, rendered) = try playToEnd(path)
    #expect(rendered > 48_000 / 2 && rendered < 48_000 * 2, "played what is there and ended early: \(rendered) frames")
    let failure = log.all.compactMap { if case .itemFailed(let error) = $0 { error } else { nil } }.first
    #expect(failure?.path == path, "an error notification names the file")
    if case .truncated = failure?.reason {
    } else {
      Issue.record("expected .truncated, got \(String(describing: failure))")
    }

    // The engine goes on: the next item plays.
    let next = try EngineHarness.vorbisTone(in: directory, name: "next.ogg", seconds: 0.5)
    player.item = MediaItem(path: next)
    player.play()
    #expect(EngineHarness.peak(EngineHarness.render(engine, seconds: 0.3)[...]) > 0.3)
  }

  @Test("Damage in the middle is played through, and reported when the item ends")
  func damagedMidway() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisNoise(in: directory, seconds: 3)
    var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
    let middle = bytes.count / 2
    for index in middle..<(middle + 3000) { bytes[index] = UInt8(truncatingIfNeeded: index &* 31) }
    try bytes.write(to: URL(fileURLWithPath: path))
    let (_, _, log, rendered) = try playToEnd(path)
    #expect(rendered > 48_000 * 2 && rendered < 48_000 * 4, "played on past the damage: \(rendered) frames")
    let failure = log.all.compactMap { if case .itemFailed(let error) = $0 { error } else { nil } }.first
    #expect(failure?.path == path, "the lost frames are reported, naming the file")
  }

  private func playToEnd(_ path: String) throws -> (Player, AudioEngine, EventLog, Int) {
    let engine = try EngineHarness.offlineEngine()
    let player = try Player(engine: engine, item: MediaItem(path: path))
    let log = EventLog(player)
    player.play()
    var rendered = 0
    while player.playbackState == .playing && rendered < 48_000 * 5 {
      _ = EngineHarness.render(engine, frames: EngineHarness.renderFrames)
      rendered += EngineHarness.renderFrames
    }
    #expect(player.playbackState == .stopped)
    player.waitForNotifications()
    return (player, engine, log, rendered)
  }
}
