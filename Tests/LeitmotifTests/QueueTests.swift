import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif

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
