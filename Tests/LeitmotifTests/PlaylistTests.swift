import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

@Suite("Playlists: weights, avoid-repeat, step and continuous")
struct PlaylistTests {
  static let assets = URL(fileURLWithPath: "/music")
  static let items = ["a.ogg", "b.ogg", "c.ogg"].map { MediaItem(path: "/music/\($0)") }

  static func source(_ order: MusicSource.Order, weights: [String: Double] = [:], avoid: Int? = nil) -> MusicSource {
    var selection = BundledSelection(files: ["a.ogg", "b.ogg", "c.ogg"])
    selection.weights = weights
    var source = MusicSource(name: "s", kind: .bundled(selection))
    source.order = order
    source.avoidRepeat = avoid
    return source
  }

  static func names(_ items: [MediaItem]) -> [String] { items.map(\.assetURL.lastPathComponent) }

  @Test("random: drawn by weight (a weighs 3, b and c 1 each: 3/5 of the draws are a)")
  func weights() {
    var memory = PlaylistMemory()
    var generator = SeededGenerator(seed: 7)
    var draws: [String] = []
    for _ in 0..<100 {
      draws += Self.names(
        StateMusic.ordered(
          Self.items, source: Self.source(.random, weights: ["a.ogg": 3], avoid: 0), step: false, assets: Self.assets,
          memory: &memory, generator: &generator))
    }
    let share = Double(draws.filter { $0 == "a.ogg" }.count) / Double(draws.count)
    #expect(draws.count == 1_600)
    #expect(abs(share - 0.6) < 0.04, "a drawn \(share) of the time")
  }

  @Test("random: none of the last N drawn comes again (avoidRepeat), across entries too")
  func avoidRepeat() {
    var memory = PlaylistMemory()
    var generator = SeededGenerator(seed: 3)
    var draws: [String] = []
    for _ in 0..<10 {
      draws += Self.names(
        StateMusic.ordered(
          Self.items, source: Self.source(.random, avoid: 2), step: false, assets: Self.assets, memory: &memory,
          generator: &generator))
    }
    for start in 0..<(draws.count - 2) {
      #expect(Set(draws[start..<(start + 3)]).count == 3, "draws \(start)... repeat: \(draws[start..<(start + 3)])")
    }
    // The default keeps only the same item twice in a row away.
    var plain = PlaylistMemory()
    let run = Self.names(
      StateMusic.ordered(
        Self.items, source: Self.source(.random), step: false, assets: Self.assets, memory: &plain,
        generator: &generator))
    #expect(zip(run, run.dropFirst()).allSatisfy { $0 != $1 }, "\(run)")
  }

  @Test("step: one item per entry: the next of a sequence, each of a shuffle once per round, a fresh draw")
  func step() {
    var generator = SeededGenerator(seed: 1)
    func entries(_ order: MusicSource.Order, _ count: Int) -> [String] {
      var memory = PlaylistMemory()
      return (0..<count).flatMap { _ in
        Self.names(
          StateMusic.ordered(
            Self.items, source: Self.source(order), step: true, assets: Self.assets, memory: &memory,
            generator: &generator))
      }
    }
    #expect(entries(.sequence, 4) == ["a.ogg", "b.ogg", "c.ogg", "a.ogg"])
    let shuffled = entries(.shuffle, 6)
    #expect(Set(shuffled.prefix(3)).count == 3 && Set(shuffled.suffix(3)).count == 3, "\(shuffled)")
    let drawn = entries(.random, 12)
    #expect(drawn.count == 12 && zip(drawn, drawn.dropFirst()).allSatisfy { $0 != $1 }, "\(drawn)")
  }

  @Test("A step playlist in a cue file: each visit to the state plays the source's next piece")
  func stepInACueFile() throws {
    let game = try DirectorFixture()
    let sheet = try game.sheet(
      """
      {
        start: "roam",
        \(DirectorFixture.sources)
        states: {
          roam: { music: "pair", playlist: "step", transition: { seconds: 0 } },
          rest: { music: "quiet", transition: { seconds: 0 } },
        },
        rules: [ { on: "rest", do: { state: "rest" } }, { on: "roam", do: { state: "roam" } } ],
      }
      """)
    let script: [CueScript.Step] = [.cue(1, "rest"), .cue(2, "roam"), .cue(3, "rest"), .cue(4, "roam")]
    let (left, timeline) = try game.simulate(sheet, script, seconds: 5)
    let pitches = [DirectorFixture.explorePitch, DirectorFixture.combatPitch]
    #expect(Listen.loudest(left, 0.2, 0.9, among: pitches) == DirectorFixture.explorePitch, "\(timeline.summary)")
    #expect(Listen.loudest(left, 2.2, 2.9, among: pitches) == DirectorFixture.combatPitch, "\(timeline.summary)")
    #expect(Listen.loudest(left, 4.2, 4.9, among: pitches) == DirectorFixture.explorePitch, "\(timeline.summary)")
  }

  @Test("The check refuses a weight of 0, a negative avoidRepeat and an unknown playlist word")
  func refused() throws {
    let game = try DirectorFixture()
    let text = """
      {
        assets: "assets",
        start: "a",
        sources: {
          w: { bundled: [{ file: "explore.ogg", weight: 0 }, "combat.ogg"], order: "random", avoidRepeat: -1 },
          x: { bundled: [{ weight: 2 }] },
        },
        states: { a: { music: "w", playlist: "loop" }, b: { music: "x" } },
        rules: [ { on: "b", do: { state: "b" } } ],
      }
      """
    try text.write(toFile: game.cuePath, atomically: true, encoding: .utf8)
    let problems = CueSheet.check(text, path: game.cuePath).problems.filter { $0.severity == .error }
    let all = problems.map(\.description).joined(separator: "\n")
    #expect(all.contains("sources.w.bundled[0].weight"), "\(all)")
    #expect(all.contains("sources.w.avoidRepeat"), "\(all)")
    #expect(all.contains("sources.x.bundled[0]") && all.contains("file"), "\(all)")
    #expect(all.contains("states.a.playlist: \"loop\" is not one of continuous or step"), "\(all)")
  }
}
