import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine

/// A line in the next gapless repeat of an item is its first bar: heard when the output reaches
/// the join, which the resampler and the stretcher read ahead of (up to a tenth of a second).
@Suite("A line in an item's next repeat, at any rate or tempo")
struct RepeatLineTests {
  static let rate = DirectorFixture.rate

  @Test(
    "A stinger on a bar of the item's next gapless repeat lands on that bar as heard (it was 40 to 54 ms early at another rate or tempo)",
    arguments: [
      // (the state's rate, a rule setting the tempo, when it comes, when the cue comes, when its bar is heard)
      ("", "", 0.0, 3.7, 4.0),
      ("", "", 0.0, 4.5, 6.0),
      ("rate: 0.8,", "", 0.0, 4.6, 5.0),
      ("rate: 0.8,", "", 0.0, 5.6, 7.5),
      ("", #"{ on: "hurry", do: { tempo: 1.25, ramp: 0 } },"#, 0.0, 2.9, 3.2),
      ("", #"{ on: "hurry", do: { tempo: 1.25, ramp: 0 } },"#, 0.0, 3.5, 4.8),
      // A tempo set at 1 s while the state's rate is 0.8 (the stretcher starts on a voice already
      // resampled): the music trailed the grid by about 38 ms from then on. Speed 1 from 1 s: the
      // file's 6 s (its second pass's bar 2) is heard at 1 + 5.2 = 6.2 s.
      ("rate: 0.8,", #"{ on: "hurry", do: { tempo: 1.25, ramp: 0 } },"#, 1.0, 5.5, 6.2),
    ])
  func stingerOnTheRepeat(stateRate: String, tempoRule: String, hurry: Double, cue: Double, line: Double) throws {
    let game = try DirectorFixture()
    // Two bars at 120 BPM, at 0.1 then 0.05, repeated gaplessly: the level steps on every bar
    // line. The stinger (0.25) is told from the music by rendering without it too.
    let frames = 4 * Self.rate
    let music = (0..<(2 * frames)).map { $0 < 2 * Self.rate * 2 ? Float(0.1) : Float(0.05) }
    try FLACEncoder.encode(
      samples: music, format: .stereo48000, tags: [("BPM", "120")], to: game.assets + "/steps.flac")
    try FLACEncoder.encode(
      samples: [Float](repeating: 0.25, count: Self.rate), format: .stereo48000, to: game.assets + "/sting.flac")
    let sheet = try game.sheet(
      """
      {
        assets: "assets", loudness: "off", start: "loop",
        sources: { steps: { bundled: "steps.flac" } },
        states: { loop: { music: "steps", \(stateRate) between: "gapless", transition: { seconds: 0 } } },
        rules: [ \(tempoRule) { on: "hit", do: { stinger: "sting.flac", at: "bar" } } ],
      }
      """)
    let (alone, _) = try game.simulate(sheet, [.cue(hurry, "hurry")], seconds: line + 0.5)
    let (left, timeline) = try game.simulate(sheet, [.cue(hurry, "hurry"), .cue(cue, "hit")], seconds: line + 0.5)
    let from = Int(cue * Double(Self.rate))
    // The bar heard: the music's first step after the cue, half way (0.075).
    let before = alone[from] > 0.075
    let bar = try #require(
      alone[from...].firstIndex { before ? $0 < 0.075 : $0 > 0.075 }, "no bar line heard\n\(timeline.summary)")
    // The stinger: where what it adds to the music reaches half its level.
    let stung = try #require(
      (from..<left.count).first { left[$0] - alone[$0] > 0.125 }, "no stinger\n\(timeline.summary)")
    // (Stretched, the music is where SoundTouch puts it, within about 25 ms of the tempo's reckoning.)
    // (A stretcher started on a resampled voice also takes about 40 ms to get going: the sanity
    // check allows 50 ms there. What matters is the stinger against the bar heard, below.)
    let sanity = hurry > 0 ? 2_400 : 1_200
    #expect(abs(bar - Int(line * Double(Self.rate))) <= sanity, "the bar is heard at frame \(bar)")
    // Within 1 ms (48 frames). Stretched, within 10 ms: SoundTouch places each stretch of music
    // up to about 25 ms from where the tempo puts it on average (`TimeStretcher.alignmentSeconds`),
    // and the step is a ramp of about 8 ms, measured at its middle.
    let tolerance = tempoRule.isEmpty ? 48 : 480
    #expect(
      abs(stung - bar) <= tolerance,
      "the bar is heard at frame \(bar), the stinger at \(stung) (\(stung - bar) frames)\n\(timeline.summary)")
  }
}
