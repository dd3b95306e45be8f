import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

@Suite("The queue player: gapless joins, crossfades, loops, shuffle, notifications")
struct QueueTests {
  /// Renders the queue gaplessly and compares with the decodes of its files back to back.
  func expectGapless(_ paths: [String], sampleRate: Int, comment: String) throws {
    var expected: [Float] = []
    for path in paths {
      let (samples, format) = try EngineHarness.decodeAll(path)
      #expect(format.sampleRate == sampleRate)
      expected += format.channelCount == 2 ? samples : samples.flatMap { [$0, $0] }
    }
    let engine = try EngineHarness.offlineEngine(sampleRate: sampleRate)
    let player = QueuePlayer(engine: engine)
    player.transition = .gapless
    try player.setQueue(with: paths.map { MediaItem(path: $0) })
    player.play()
    let frames = expected.count / 2
    let rendered = EngineHarness.render(engine, frames: frames + 2 * EngineHarness.renderFrames)
    let mismatch = (0..<expected.count).first { rendered[$0] != expected[$0] }
    #expect(mismatch == nil, "\(comment): first differing sample \(mismatch ?? -1) of \(expected.count)")
    // Nothing after the end: no overlap was added, no sample repeated.
    #expect(EngineHarness.peak(rendered[expected.count...]) == 0, "\(comment): silence after the last sample")
  }

  @Test("Gapless Vorbis to Vorbis: a track split in two files plays sample-identical to both decodes back to back")
  func gaplessVorbis() throws {
    let directory = try TemporaryDirectory()
    let tone = ToneGenerator.sine(frequency: 330, amplitude: 0.5, seconds: 2, format: .stereo48000)
    let cut = 2 * 41_017
    let first = try EngineHarness.vorbis(Array(tone[..<cut]), in: directory, name: "part1.ogg")
    let second = try EngineHarness.vorbis(Array(tone[cut...]), in: directory, name: "part2.ogg")
    try expectGapless([first, second], sampleRate: 48_000, comment: "Vorbis to Vorbis")
  }

  @Test(
    "An entry's own rate multiplies the player's: each entry at its own speed and pitch, a gapless join to another rate a 10 ms crossfade, a rate outside 1/256...4 refused"
  )
  func entryRates() throws {
    let directory = try TemporaryDirectory()
    let a = try EngineHarness.vorbisTone(in: directory, name: "a.ogg", seconds: 1, frequency: 300)
    let b = try EngineHarness.vorbisTone(in: directory, name: "b.ogg", seconds: 1, frequency: 300)
    let engine = try EngineHarness.offlineEngine()
    defer { engine.shutdown() }
    let player = QueuePlayer(engine: engine)
    player.repeatMode = .none
    var second = QueueDescriptor.Entry(item: MediaItem(path: b), transition: .gapless)
    second.rate = 2
    try player.setQueue(with: QueueDescriptor(entries: [.init(item: MediaItem(path: a)), second]))
    try player.setCurrentPlaybackRate(0.75)  // and plays
    let stereo = EngineHarness.render(engine, seconds: 2.5)
    let left = stride(from: 0, to: stereo.count, by: 2).map { stereo[$0] }
    // a.ogg at 0.75: 225 Hz for 1.33 s; then b.ogg at 0.75 x 2: 450 Hz for 0.67 s; then silence.
    let first = Listen.window(left, 0.2, 1.2)
    let next = Listen.window(left, 1.45, 1.9)
    let levels = [
      Listen.level(of: 225, in: first), Listen.level(of: 450, in: first),
      Listen.level(of: 450, in: next), Listen.level(of: 225, in: next), Listen.level(of: 300, in: next),
    ]
    #expect(levels[0] > 0.4 && levels[1] < 0.02, "a.ogg: \(levels)")
    #expect(levels[2] > 0.4 && levels[3] < 0.02 && levels[4] < 0.02, "b.ogg: \(levels)")
    // No gap where they join (a 10 ms crossfade at 1.33 s), and nothing after b.ogg's end.
    let join = stride(from: 1.28, to: 1.38, by: 0.01).map { Listen.rms(Listen.window(left, $0, $0 + 0.01)) }
    #expect(join.min() ?? 0 > 0.25, "a gap at the join: \(join)")
    #expect(Listen.rms(Listen.window(left, 2.05, 2.5)) < 0.001)

    var refused = QueueDescriptor.Entry(item: MediaItem(path: a))
    refused.rate = 5
    let error = #expect(throws: QueueError.self) { try player.setQueue(with: QueueDescriptor(entries: [refused])) }
    #expect(
      error.map { "\($0)" }?.contains("rate 5.0: expected a speed from 1/256 to 4") == true,
      "\(String(describing: error))")
  }

  @Test("Gapless FLAC to FLAC, Opus to Opus and FLAC to Opus: each join plays sample-identical to the decodes")
  func gaplessFLACAndOpus() throws {
    let directory = try TemporaryDirectory()
    let tone = ToneGenerator.sine(frequency: 330, amplitude: 0.5, seconds: 2, format: .stereo48000)
    let cut = 2 * 41_017
    let flac = [directory.file("part1.flac"), directory.file("part2.flac")]
    try FLACEncoder.encode(samples: Array(tone[..<cut]), format: .stereo48000, to: flac[0])
    try FLACEncoder.encode(samples: Array(tone[cut...]), format: .stereo48000, to: flac[1])
    try expectGapless(flac, sampleRate: 48_000, comment: "FLAC to FLAC")
    let opus = [directory.file("part1.opus"), directory.file("part2.opus")]
    try OpusEncoder.encode(samples: Array(tone[..<cut]), channels: 2, to: opus[0])
    try OpusEncoder.encode(samples: Array(tone[cut...]), channels: 2, to: opus[1])
    try expectGapless(opus, sampleRate: 48_000, comment: "Opus to Opus")
    try expectGapless([flac[0], opus[1]], sampleRate: 48_000, comment: "FLAC to Opus")
  }

  @Test("Gapless MP3 (LAME tag) to MP3, and Vorbis to MP3")
  func gaplessMP3() throws {
    let fixtures = Bundle.module.path(forResource: "Fixtures", ofType: nil)!
    let part1 = fixtures + "/gapless-part1.mp3"
    let part2 = fixtures + "/gapless-part2.mp3"
    try expectGapless([part1, part2], sampleRate: 44_100, comment: "MP3 to MP3")
    let directory = try TemporaryDirectory()
    let vorbis = try EngineHarness.vorbis(
      ToneGenerator.sine(frequency: 550, amplitude: 0.4, seconds: 0.7, format: .stereo44100), in: directory,
      name: "intro.ogg", format: .stereo44100)
    try expectGapless([vorbis, part2], sampleRate: 44_100, comment: "Vorbis to MP3")
  }
}

@Suite("Crossfades, loops and clicks on the loopback device")
struct TransitionTests {
  @Test("An equal-power crossfade of two uncorrelated noise tracks keeps the summed power within ±0.5 dB")
  func equalPowerCrossfade() throws {
    #expect(QueuePlayer(engine: try EngineHarness.offlineEngine()).transition == .defaultCrossfade)
    let (worst, rendered) = try EngineHarness.noiseCrossfadeDeviation(curve: .equalPower)
    #expect(worst < 0.5, "largest deviation of the summed power: \(worst) dB")

    // And the crossfade really overlapped: the output lasts 6 + 6 − 3 = 9 s (within one mix).
    let lastSound = (0..<(rendered.count / 2)).last { rendered[2 * $0] != 0 } ?? 0
    #expect(abs(lastSound - 9 * 48_000) <= EngineHarness.renderFrames, "the output ends at frame \(lastSound)")
  }

  @Test("A linear crossfade of the same noise dips about 3 dB mid-way: the power measure can fail")
  func linearCrossfadeDips() throws {
    let directory = try TemporaryDirectory()
    let a = try EngineHarness.vorbis(EngineHarness.noise(seed: 1, seconds: 6), in: directory, name: "a.ogg")
    let b = try EngineHarness.vorbis(EngineHarness.noise(seed: 2, seconds: 6), in: directory, name: "b.ogg")
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    player.transition = try Transition(duration: 3, curve: .linear)
    try player.setQueue(with: [MediaItem(path: a), MediaItem(path: b)])
    player.play()
    let rendered = EngineHarness.render(engine, seconds: 10)
    let reference = EngineHarness.power(rendered, frames: 0..<(2 * 48_000))
    let middle = Int(4.5 * 48_000)
    let dip = 10 * log10(EngineHarness.power(rendered, frames: middle..<(middle + 4096)) / reference)
    #expect(dip < -2.5 && dip > -3.5, "linear fade mid-way: \(dip) dB")
  }

  /// A file of distinct noise with loop tags: intro, a loop body, an outro.
  func loopFile(in directory: TemporaryDirectory) throws -> (path: String, decoded: [Float], start: Int, length: Int) {
    let start = 30_011
    let length = 50_021
    let samples = EngineHarness.noise(seed: 9, seconds: 2.5, amplitude: 0.3)
    let path = try EngineHarness.vorbis(
      samples, in: directory, name: "loop.ogg", tags: [("LOOPSTART", "\(start)"), ("LOOPLENGTH", "\(length)")])
    return (path, try EngineHarness.decodeAll(path).samples, start, length)
  }

  @Test("Loop seams are exact over three loops, then the outro plays to the end")
  func loopSeamsExact() throws {
    let directory = try TemporaryDirectory()
    let (path, decoded, start, length) = try loopFile(in: directory)
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    player.loopRepeat = .times(3)
    try player.setQueue(with: [MediaItem(path: path)])
    player.play()
    let body = Array(decoded[(2 * start)..<(2 * (start + length))])
    let expected =
      Array(decoded[..<(2 * (start + length))]) + body + body + body + Array(decoded[(2 * (start + length))...])
    let rendered = EngineHarness.render(engine, frames: expected.count / 2 + 2048)
    let mismatch = (0..<expected.count).first { rendered[$0] != expected[$0] }
    #expect(
      mismatch == nil,
      "first differing sample \(mismatch ?? -1) of \(expected.count) (seams at frames \(start + length), \(start + 2 * length), \(start + 3 * length))"
    )
    #expect(EngineHarness.peak(rendered[expected.count...]) == 0, "it ends after the outro")
    player.waitForNotifications()
    #expect(player.playbackState == .stopped)
  }

  @Test("A loop until released keeps looping; releaseLoop() lets it play its outro and end")
  func loopUntilReleased() throws {
    let directory = try TemporaryDirectory()
    let (path, decoded, start, length) = try loopFile(in: directory)
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    #expect(player.loopRepeat == .untilReleased)
    try player.setQueue(with: [MediaItem(path: path)])
    player.play()
    var rendered = EngineHarness.render(engine, seconds: 8)
    #expect(player.playbackState == .playing, "still looping after 8 s of a 2.5 s file")
    player.releaseLoop()
    rendered += EngineHarness.render(engine, seconds: 4)
    let total = (0..<(rendered.count / 2)).last { rendered[2 * $0] != 0 }.map { $0 + 1 } ?? 0
    let fileFrames = decoded.count / 2
    let loops = (total - fileFrames) / length
    #expect((total - fileFrames) % length == 0, "the output is the file plus whole loop bodies: \(total) frames")
    #expect(loops >= 7, "looped \(loops) times before the release")

    let body = Array(decoded[(2 * start)..<(2 * (start + length))])
    var expected = Array(decoded[..<(2 * (start + length))])
    for _ in 0..<loops { expected += body }
    expected += decoded[(2 * (start + length))...]
    let mismatch = (0..<expected.count).first { rendered[$0] != expected[$0] }
    #expect(mismatch == nil, "first differing sample \(mismatch ?? -1)")
    player.waitForNotifications()
    #expect(player.playbackState == .stopped)
  }

  @Test(
    "A seek near, to or past an item's end: the next item plays and is reported, once; repeat one plays the item again; past the last item the queue ends",
    arguments: [2.99, 2.995, 2.9995, 3.0, 4.5, 10.0, 1e9])
  func seekPastTheEnd(target: Double) throws {
    let directory = try TemporaryDirectory()
    // 3 s each, 200 and 400 Hz: told apart by their zero crossings.
    let paths = try [200.0, 400.0].enumerated().map { index, frequency in
      try EngineHarness.vorbisTone(
        in: directory, name: "tone\(index).ogg", seconds: 3, frequency: frequency, amplitude: 0.5)
    }
    func pitch(_ samples: [Float]) -> Double {
      var crossings = 0
      for index in stride(from: 2, to: samples.count, by: 2) where (samples[index - 2] < 0) != (samples[index] < 0) {
        crossings += 1
      }
      return Double(crossings) / 2 / (Double(samples.count) / 2 / 48_000)
    }
    // Gapless: the next item joined on the same voice, where the seek raced its preparation.
    var engine = try EngineHarness.offlineEngine()
    var player = QueuePlayer(engine: engine)
    player.transition = try Transition(duration: 0, curve: .linear)
    try player.setQueue(with: paths.map { MediaItem(path: $0) })
    player.play()
    _ = EngineHarness.render(engine, seconds: 1)
    player.currentPlaybackTime = target
    let after = EngineHarness.render(engine, seconds: 0.5)
    player.waitForNotifications()
    #expect(abs(pitch(Array(after[9600...])) - 400) < 20, "the next item is heard")
    #expect(player.nowPlayingItem?.assetURL.path == paths[1], "and reported")
    #expect(player.currentPlaybackTime < 0.6, "from its start: \(player.currentPlaybackTime)")
    // It plays to its end, once: then the queue is over.
    let rest = EngineHarness.render(engine, seconds: 3)
    player.waitForNotifications()
    #expect(Listen.rms(rest[(2 * 48_000 * 27 / 10)...]) < 1e-4, "the next item played once")
    #expect(player.playbackState == .stopped)

    // Repeat one: the same item from its start.
    engine = try EngineHarness.offlineEngine()
    player = QueuePlayer(engine: engine)
    try player.setQueue(with: paths.map { MediaItem(path: $0) })
    player.repeatMode = .one
    player.play()
    _ = EngineHarness.render(engine, seconds: 1)
    player.currentPlaybackTime = target
    let again = EngineHarness.render(engine, seconds: 0.5)
    player.waitForNotifications()
    #expect(abs(pitch(Array(again[9600...])) - 200) < 20)
    #expect(player.nowPlayingItem?.assetURL.path == paths[0] && player.currentPlaybackTime < 0.6)

    // Past the last item's end: the queue ends.
    engine = try EngineHarness.offlineEngine()
    player = QueuePlayer(engine: engine)
    try player.setQueue(with: [MediaItem(path: paths[0])])
    player.play()
    _ = EngineHarness.render(engine, seconds: 1)
    player.currentPlaybackTime = target
    _ = EngineHarness.render(engine, seconds: 0.5)
    player.waitForNotifications()
    #expect(player.playbackState == .stopped)
  }

  @Test("No step larger than the music's own at crossfades, a skip during a crossfade, pause, resume and seek")
  func clickFree() throws {
    let directory = try TemporaryDirectory()
    let paths = try (0..<3).map { index in
      try EngineHarness.vorbisTone(
        in: directory, name: "tone\(index).ogg", seconds: 5, frequency: 200 + 50 * Double(index), amplitude: 0.5)
    }
    let own = try paths.map { EngineHarness.largestStep(try EngineHarness.decodeAll($0).samples) }.max()!
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    player.transition = try Transition(duration: 2, curve: .equalPower)
    try player.setQueue(with: paths.map { MediaItem(path: $0) })
    player.play()
    var rendered = EngineHarness.render(engine, seconds: 3.5)  // into the crossfade of 0 into 1
    try player.skipToNextItem()  // from the middle of it to item 2
    rendered += EngineHarness.render(engine, seconds: 0.7)
    player.pause()
    rendered += EngineHarness.render(engine, seconds: 0.3)
    player.play()
    rendered += EngineHarness.render(engine, seconds: 0.5)
    player.currentPlaybackTime = 1.234
    rendered += EngineHarness.render(engine, seconds: 0.5)
    try player.skipToPreviousItem()  // more than 3 s in? no: 1.7 s in, so back to item 1
    rendered += EngineHarness.render(engine, seconds: 3)
    let largest = EngineHarness.largestStep(rendered)
    // An equal-power sum of unrelated tones can move up to √2 (two voices) or about 1.7 (three,
    // after a skip mid-fade) times one tone's step; a cut would jump by up to the full amplitude.
    #expect(largest < 2 * own, "largest step \(largest), the music's own \(own)")

    player.waitForNotifications()
  }

  @Test(
    "Paused during a crossfade, then given a new queue, skipped or stopped: no voice is held for ever, and the resume plays the new music alone"
  )
  func pausedCrossfadeLeavesNoVoice() throws {
    let directory = try TemporaryDirectory()
    let paths = try (0..<3).map { index in
      try EngineHarness.vorbisTone(
        in: directory, name: "tone\(index).ogg", seconds: 5, frequency: 200 + 50 * Double(index), amplitude: 0.5)
    }
    // A pause during a crossfade holds both sides, their fades held until the resume: a side that
    // the owner lets go while paused must still end (it waited, paused, for ever).
    for change in ["queue", "skip", "stop"] {
      let engine = try EngineHarness.offlineEngine()
      let player = QueuePlayer(engine: engine)
      player.transition = try Transition(duration: 2, curve: .equalPower)
      try player.setQueue(with: paths.prefix(2).map { MediaItem(path: $0) })
      player.play()
      _ = EngineHarness.render(engine, seconds: 3.5)  // 0.5 s into the crossfade of item 0 into 1
      player.pause()
      _ = EngineHarness.render(engine, seconds: 0.2)
      switch change {
      case "queue": try player.setQueue(with: [MediaItem(path: paths[2])])
      case "skip": try player.skipToPreviousItem()
      default: player.stop()
      }
      _ = EngineHarness.render(engine, seconds: 0.2)
      player.play()
      let after = EngineHarness.render(engine, seconds: 2)
      // To the end of the queue (at most two 5 s items): every voice is given back there.
      for _ in 0..<100 where player.playbackState != .stopped {
        _ = EngineHarness.render(engine, seconds: 0.1)
        player.waitForNotifications()
      }
      _ = EngineHarness.render(engine, seconds: 0.1)
      player.waitForNotifications()
      #expect(player.playbackState == .stopped, "\(change): the queue ends")
      #expect(engine.pool.ownedCount == 0, "\(change): \(engine.pool.ownedCount) voices held after the queue ended")
      #expect(EngineHarness.largestStep(after) < 0.2, "\(change): no cut")
      engine.shutdown()
    }
  }

  @Test(
    "A crossfade loses nothing: the incoming item's first frames fade in, the outgoing one is silent before it ends")
  func crossfadeEdges() throws {
    let directory = try TemporaryDirectory()
    let silence = try EngineHarness.vorbis(
      [Float](repeating: 0, count: 2 * 96_000), in: directory, name: "silence.ogg")
    let tone = try EngineHarness.vorbisTone(in: directory, name: "tone.ogg", seconds: 2, frequency: 440)
    // (Quieter than the default 0.5: coded noise at 0.5 peaks above full scale, where the bus's
    // limiter turns it down, and this compares the render with the decoded file sample for sample.)
    let noise = try EngineHarness.vorbis(
      EngineHarness.noise(seed: 5, seconds: 2, amplitude: 0.3), in: directory, name: "noise.ogg")
    let decodedNoise = try EngineHarness.decodeAll(noise).samples
    for seconds in [0.05, 0.5] {
      // Silence into noise: where the noise's frame 0 lands, its fade has just begun.
      var engine = try EngineHarness.offlineEngine()
      var player = QueuePlayer(engine: engine)
      player.transition = try Transition(duration: seconds, curve: .linear)
      try player.setQueue(with: [MediaItem(path: silence), MediaItem(path: noise)])
      player.play()
      var rendered = EngineHarness.render(engine, seconds: 4.5)
      let settled = (0..<(rendered.count / 2)).first {
        rendered[2 * $0] == decodedNoise[2 * 48_000] && rendered[2 * $0 + 1] == decodedNoise[2 * 48_000 + 1]
      }
      let start = (settled ?? 48_000) - 48_000  // where the noise's frame 0 plays
      let firstSound = (0..<(rendered.count / 2)).first { rendered[2 * $0] != 0 } ?? 0
      #expect(
        settled != nil && firstSound - start <= 2,
        "\(seconds) s: noise starts at \(start), first sound at \(firstSound)")
      // Tone into silence: the tone's last frames, as its audio ends, are at (almost) no gain.
      engine = try EngineHarness.offlineEngine()
      player = QueuePlayer(engine: engine)
      player.transition = try Transition(duration: seconds, curve: .linear)
      try player.setQueue(with: [MediaItem(path: tone), MediaItem(path: silence)])
      player.play()
      rendered = EngineHarness.render(engine, seconds: 4.5)
      let lastSound = (0..<(rendered.count / 2)).last { rendered[2 * $0] != 0 } ?? 0
      let tail = EngineHarness.peak(rendered[(2 * max(0, lastSound - 48))..<(2 * lastSound + 2)])
      // A linear fade of the 0.5 tone is down to 0.5 × 1 ms / duration in its last millisecond
      // (allow 3 ms); a cut one mix (21 ms) early would leave 0.5 × 21 ms / duration.
      #expect(Double(tail) < 0.5 * 0.003 / seconds, "\(seconds) s: the tone's last millisecond peaks at \(tail)")
    }
  }

  @Test("The step measure catches a cut: two tones joined without a fade")
  func stepMeasureCanFail() throws {
    let a = ToneGenerator.sine(frequency: 200, amplitude: 0.5, seconds: 0.5, format: .stereo48000)
    let b = ToneGenerator.sine(frequency: 250, amplitude: 0.5, seconds: 0.5, format: .stereo48000)
    let own = max(EngineHarness.largestStep(a), EngineHarness.largestStep(b))
    let cut = Array(a[..<(2 * 12_345)]) + Array(b[(2 * 7_000)...])
    #expect(EngineHarness.largestStep(cut) > 2 * own)
  }
}

@Suite("Queue descriptors: trim points and per-item transitions")
struct DescriptorTests {
  @Test("Trim points play exactly their stretch of each file, joined gaplessly")
  func trimPoints() throws {
    let directory = try TemporaryDirectory()
    // (At 0.3: coded noise at the default 0.5 peaks above full scale, where the bus's limiter
    // would turn it down; this compares with the decoded files sample for sample.)
    let a = try EngineHarness.vorbis(
      EngineHarness.noise(seed: 3, seconds: 2, amplitude: 0.3), in: directory, name: "a.ogg")
    let b = try EngineHarness.vorbis(
      EngineHarness.noise(seed: 4, seconds: 2, amplitude: 0.3), in: directory, name: "b.ogg")
    let decodedA = try EngineHarness.decodeAll(a).samples
    let decodedB = try EngineHarness.decodeAll(b).samples
    var descriptor = QueueDescriptor(entries: [
      .init(item: MediaItem(path: a), startTime: 0.5, endTime: 1.25, transition: .gapless),
      .init(item: MediaItem(path: b), startTime: 0.25, transition: .gapless),
    ])
    descriptor.startItem = MediaItem(path: a)
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    try player.setQueue(with: descriptor)
    player.play()
    let expected = Array(decodedA[(2 * 24_000)..<(2 * 60_000)]) + Array(decodedB[(2 * 12_000)...])
    let rendered = EngineHarness.render(engine, frames: expected.count / 2 + 2048)
    // The first item starts mid-file, so it fades in over 10 ms like any start from a position.
    let settled = 2 * 3 * EngineHarness.renderFrames
    let mismatch = (settled..<expected.count).first { rendered[$0] != expected[$0] }
    #expect(mismatch == nil, "first differing sample \(mismatch ?? -1) of \(expected.count)")
    #expect(EngineHarness.peak(rendered[expected.count...]) == 0)
  }

  @Test("A seek before an entry's trim start lands on the start: the part trimmed away is not played")
  func seekBeforeTheTrim() throws {
    let directory = try TemporaryDirectory()
    let a = try EngineHarness.vorbis(
      EngineHarness.noise(seed: 5, seconds: 2, amplitude: 0.3), in: directory, name: "a.ogg")
    let decoded = try EngineHarness.decodeAll(a).samples
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    try player.setQueue(with: QueueDescriptor(entries: [.init(item: MediaItem(path: a), startTime: 0.5)]))
    player.play()
    _ = EngineHarness.render(engine, seconds: 0.2)
    // Back to 0.1 s (a "restart" that asks for 0): the trim's start, 0.5 s, frame 24,000.
    player.currentPlaybackTime = 0.1
    #expect(player.currentPlaybackTime == 0.5)
    let output = EngineHarness.render(engine, frames: 8 * EngineHarness.renderFrames)
    // The seek fades the music out over 10 ms (480 frames), jumps, and fades in over 480 more;
    // from then on the output is the decode from the trim's start on, sample for sample.
    let fade = 480
    let mismatch = (2 * fade..<(8 * EngineHarness.renderFrames)).first {
      output[2 * $0] != decoded[2 * (24_000 + $0 - fade)]
    }
    #expect(mismatch == nil, "first differing frame \(mismatch ?? -1)")
    let heard = Double(8 * EngineHarness.renderFrames - fade) / 48_000
    #expect(abs(player.currentPlaybackTime - (0.5 + heard)) < 1e-9, "\(player.currentPlaybackTime)")
  }

  @Test("A new queue set while paused is opened at once, so play() starts it on its frame without waiting for the file")
  func newQueueWhilePausedIsPrepared() throws {
    let directory = try TemporaryDirectory()
    let a = try EngineHarness.vorbis(
      EngineHarness.noise(seed: 6, seconds: 2, amplitude: 0.3), in: directory, name: "a.ogg")
    let b = try EngineHarness.vorbis(
      EngineHarness.noise(seed: 7, seconds: 2, amplitude: 0.3), in: directory, name: "b.ogg")
    let decodedB = try EngineHarness.decodeAll(b).samples
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    try player.setQueue(with: [MediaItem(path: a)])
    player.play()
    _ = EngineHarness.render(engine, seconds: 0.3)
    player.pause()
    _ = EngineHarness.render(engine, seconds: 0.1)
    // The game changes its music behind the pause menu: it was opened only by the resume (a
    // live resume then waited for the file, where an offline render waits for nothing).
    try player.setQueue(with: [MediaItem(path: b)])
    #expect(player.playbackState == .paused)
    // (An offline engine takes what its loader opened when it renders: blocks, paused.)
    let prepared = EngineHarness.wait(seconds: 4) {
      _ = EngineHarness.render(engine, frames: EngineHarness.renderFrames)
      return player.isPreparedToPlay
    }
    #expect(prepared, "b.ogg is open and buffered before the resume")
    player.play()
    let output = EngineHarness.render(engine, frames: 4 * EngineHarness.renderFrames)
    // From its start, on the first frame mixed after play().
    let mismatch = (0..<(4 * EngineHarness.renderFrames)).first { output[2 * $0] != decodedB[2 * $0] }
    #expect(mismatch == nil, "first differing frame \(mismatch ?? -1)")
  }

  @Test("Each entry's transition overrides the player's: here a gapless join, then a 1 s linear crossfade")
  func perEntryTransitions() throws {
    let directory = try TemporaryDirectory()
    let paths = try (0..<3).map { index in
      try EngineHarness.vorbis(
        EngineHarness.noise(seed: 10 + UInt64(index), seconds: 3), in: directory, name: "n\(index).ogg")
    }
    let descriptor = QueueDescriptor(entries: [
      .init(item: MediaItem(path: paths[0])),
      .init(item: MediaItem(path: paths[1]), transition: .gapless),
      .init(item: MediaItem(path: paths[2]), transition: try Transition(duration: 1, curve: .linear)),
    ])
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    let log = QueueLog(player)
    try player.setQueue(with: descriptor)
    player.play()
    let rendered = EngineHarness.render(engine, seconds: 9)
    player.waitForNotifications()
    let transitions = log.all.compactMap { event -> Transition? in
      if case .transitionStarted(_, _, let transition) = event { return transition }
      return nil
    }
    #expect(transitions == [.gapless, try Transition(duration: 1, curve: .linear)])
    let lastSound = (0..<(rendered.count / 2)).last { rendered[2 * $0] != 0 } ?? 0
    #expect(abs(lastSound - 8 * 48_000) <= EngineHarness.renderFrames, "3 + 3 + 3 − 1 s: ends at \(lastSound)")
  }

  @Test("A crossfade longer than half the outgoing item is reported as the length heard")
  func cappedCrossfadeIsReported() throws {
    let directory = try TemporaryDirectory()
    let paths = try (0..<2).map { index in
      try EngineHarness.vorbis(
        EngineHarness.noise(seed: 20 + UInt64(index), seconds: 2), in: directory, name: "short\(index).ogg")
    }
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    let log = QueueLog(player)
    player.transition = try Transition(duration: 3, curve: .equalPower)
    try player.setQueue(with: paths.map { MediaItem(path: $0) })
    player.play()
    _ = EngineHarness.render(engine, seconds: 4)
    player.waitForNotifications()
    let used = log.all.compactMap { event -> Transition? in
      if case .transitionStarted(_, _, let transition) = event { return transition }
      return nil
    }
    // The 2 s item fades out over 1 s, not 3: the event said "crossfade of 3.0 s".
    #expect(used == [try Transition(duration: 1, curve: .equalPower)])
  }

  @Test(
    "A file that failed is passed over when a repeating queue comes round to it again, not opened and announced each pass"
  )
  func failedFileIsPassedOver() throws {
    let directory = try TemporaryDirectory()
    let first = try EngineHarness.vorbisTone(in: directory, name: "first.ogg", seconds: 1, frequency: 440)
    let last = try EngineHarness.vorbisTone(in: directory, name: "last.ogg", seconds: 1, frequency: 660)
    // Damaged after it was queued (as after a library scan): bytes that are no audio.
    let damaged = directory.file("damaged.ogg")
    try Data((0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }).write(
      to: URL(fileURLWithPath: damaged))
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    let log = QueueLog(player)
    player.transition = try Transition(duration: 0.2, curve: .equalPower)
    player.repeatMode = .all
    try player.setQueue(with: [first, damaged, last].map { MediaItem(path: $0) })
    player.play()
    _ = EngineHarness.render(engine, seconds: 8)
    player.waitForNotifications()
    // Four passes: the damaged file failed once, in the first; it used to be opened, and said
    // to play, again on every pass.
    #expect(log.failures.count == 1, "\(log.failures.map(\.1))")
    let announced = log.nowPlaying.map { $0.0 ?? "" }
    #expect(announced.filter { $0 == "damaged.ogg" }.count <= 1, "\(announced)")
    #expect(announced.filter { $0 == "last.ogg" }.count >= 3, "\(announced)")
  }

  @Test(
    "A crossfade longer than half the incoming item is cut to that: the short item comes in whole before it goes, two voices at most"
  )
  func crossfadeIntoAShortItem() throws {
    let directory = try TemporaryDirectory()
    let paths = try [(6.0, 440.0), (2.0, 660.0), (6.0, 550.0)].enumerated().map { index, item in
      try EngineHarness.vorbisTone(in: directory, name: "item\(index).ogg", seconds: item.0, frequency: item.1)
    }
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    let log = QueueLog(player)
    player.transition = try Transition(duration: 3, curve: .equalPower)
    try player.setQueue(with: paths.map { MediaItem(path: $0) })
    player.play()
    let rendered = EngineHarness.render(engine, seconds: 13)
    player.waitForNotifications()
    let left = (0..<(rendered.count / 2)).map { rendered[2 * $0] }
    let used = log.all.compactMap { event -> Transition? in
      if case .transitionStarted(_, _, let transition) = event { return transition }
      return nil
    }
    // Both crossfades 1 s (half the 2 s item), so the queue is 6 + 2 + 6 − 2 = 12 s long. The
    // 3 s crossfade into it used to fade the 2 s item out again from 1 s in, under the first
    // item still fading out: it peaked at 0.24 (6 dB down), three tones at once.
    #expect(used == [try Transition(duration: 1, curve: .equalPower), try Transition(duration: 1, curve: .equalPower)])
    let lastSound = left.lastIndex { $0 != 0 } ?? 0
    #expect(abs(lastSound - 12 * 48_000) <= EngineHarness.renderFrames, "ends at \(lastSound)")
    // Full level where the two crossfades meet (6 s): the first gone, the third not yet come.
    let middle = Listen.level(of: 660, in: Listen.window(left, 5.95, 6.05), rate: 48_000)
    #expect(middle > 0.45, "the short item at \(middle)")
    for at in stride(from: 0.0, to: 12, by: 0.1) {
      let window = Listen.window(left, at, at + 0.1)
      let heard = [440.0, 660, 550].filter { Listen.level(of: $0, in: window, rate: 48_000) > 0.05 }
      #expect(heard.count <= 2, "at \(at) s: \(heard) at once")
    }
  }
}

extension DescriptorTests {
  @Test("A gapless join between files of different sample rates becomes a 10 ms crossfade, and says so")
  func rateMismatchJoin() throws {
    let directory = try TemporaryDirectory()
    let first = try EngineHarness.vorbisTone(in: directory, name: "48k.ogg", seconds: 1)
    let fixtures = Bundle.module.path(forResource: "Fixtures", ofType: nil)!
    let second = fixtures + "/lame-44100-stereo.mp3"
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    let log = QueueLog(player)
    player.transition = .gapless
    try player.setQueue(with: [MediaItem(path: first), MediaItem(path: second)])
    player.play()
    let rendered = EngineHarness.render(engine, seconds: 3)
    player.waitForNotifications()
    let used = log.all.compactMap { event -> Transition? in
      if case .transitionStarted(_, _, let transition) = event { return transition }
      return nil
    }
    #expect(used == [try Transition(duration: Voice.transportFadeSeconds, curve: .equalPower)])
    #expect(log.nowPlaying.map(\.0) == ["48k.ogg", "lame-44100-stereo.mp3", "48k.ogg"])
    // 1 s, then 57331 frames at 44.1 kHz (1.3 s) resampled to 48 kHz, overlapping by 10 ms.
    let lastSound = (0..<(rendered.count / 2)).last { rendered[2 * $0] != 0 } ?? 0
    let expected = 48_000 + Int(57_331.0 * 48_000 / 44_100) - 480
    #expect(abs(lastSound - expected) <= EngineHarness.renderFrames, "ends at \(lastSound), expected \(expected)")
  }
}
