import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifLibrary

/// The player's picked songs as a state's music.
@Suite("Picks: every picked song plays, and a state re-entered goes on where they left off")
struct PicksTests {
  static let pitches = [330.0, 440.0, 550.0]

  func run(
    _ state: String, music: String = #""picked""#, picked: String = "{ picks: true }", bridges: String = "[]",
    script: [CueScript.Step], seconds: Double
  ) throws -> [Float] {
    let game = try DirectorFixture()
    let items = try Self.picks(in: game)
    let sheet = try game.sheet(
      """
      { start: "mine", assets: "assets", seed: 5,
        sources: { picked: \(picked), calm: { bundled: "explore.ogg" }, fanfare: { bundled: "hit.ogg" } },
        states: { mine: { music: \(music), transition: { seconds: 0 }, between: "gapless" \(state) },
                  other: { music: "calm", transition: { seconds: 0 } } },
        rules: [ { on: "away", do: { crossfade: "other", seconds: 0 } }, { on: "back", do: { crossfade: "mine", seconds: 0 } } ],
        bridges: \(bridges) }
      """)
    var options = CueSimulation.Options()
    options.picks = MediaItemCollection(items: items, name: "Picks")
    return try game.simulate(sheet, script, seconds: seconds, options: options).left
  }

  /// Three 2 s songs, one at each of `pitches`, as the player's picks.
  static func picks(in game: DirectorFixture) throws -> [MediaItem] {
    try pitches.enumerated().map { index, pitch in
      let path = game.directory.file("pick\(index).ogg")
      try DirectorFixture.tone(path, pitch: pitch, seconds: 2, tags: [("TITLE", "Pick \(index)")])
      return try MediaItem.load(path: path)
    }
  }

  func heard(_ left: [Float], _ from: Double) -> Double? {
    Listen.loudest(left, from, from + 0.4, among: Self.pitches + [DirectorFixture.explorePitch])
  }

  @Test("Three picked songs play one after the other")
  func allPlay() throws {
    let left = try run("", script: [], seconds: 6.5)
    #expect(heard(left, 0.5) == 330 && heard(left, 2.5) == 440 && heard(left, 4.5) == 550)
  }

  @Test("Back in the state, the picks go on from where they were left, not from the first song")
  func resume() throws {
    // Away at 2.9 s (the second song, 0.9 s in), back at 4 s: the second song goes on from 0.9 s,
    // so the third starts at 4 + 1.1 s.
    let left = try run("", script: [.cue(2.9, "away"), .cue(4, "back")], seconds: 7.5)
    #expect(heard(left, 3.2) == DirectorFixture.explorePitch)
    #expect(heard(left, 4.2) == 440, "the second song again, where it was")
    #expect(heard(left, 5.4) == 550, "then the third")
  }

  @Test("Shuffled picks on a repeating queue: each pass plays every song once, in a new order, none twice in a row")
  func shufflePasses() throws {
    // Three 2 s picks, gapless: 12 songs in 24 s, four passes.
    let left = try run("", picked: #"{ picks: true, order: "shuffle" }"#, script: [], seconds: 24.5)
    let heard = (0..<12).map { Listen.loudest(left, Double($0) * 2 + 0.5, Double($0) * 2 + 1.5, among: Self.pitches) }
    let passes = (0..<4).map { Array(heard[($0 * 3)..<($0 * 3 + 3)]) }
    for pass in passes { #expect(Set(pass.compactMap { $0 }) == Set(Self.pitches), "every song once a pass: \(heard)") }
    #expect(zip(heard, heard.dropFirst()).allSatisfy { $0 != $1 }, "no song twice in a row: \(heard)")
    #expect(Set(passes.map { $0.map { $0 ?? 0 } }).count > 1, "a new order in later passes: \(heard)")
  }

  @Test("The media keys skip none of the player's songs while a change waits for its bar, and say they cannot")
  func mediaKeyWhileAChangeWaits() throws {
    let game = try DirectorFixture()
    let items = try Self.picks(in: game)
    // The picks have no tempo: the cue file's 120 BPM, a bar every 2 s. The fight at 2.1 s waits
    // for the bar at 4 s; "next" is pressed at 2.5 s, while the second song plays.
    let sheet = try game.sheet(
      """
      { start: "mine", assets: "assets",
        sources: { picked: { picks: true }, tense: { bundled: "combat.ogg" } },
        states: { mine: { music: "picked", transition: { seconds: 0 }, between: "gapless" },
                  fight: { music: "tense", transition: { seconds: 0, at: "bar" } } },
        rules: [ { on: "fight", do: { state: "fight" } } ] }
      """)
    let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    let director = Director(engine: engine, sheet: sheet, library: nil, clocking: .pumped)
    director.setPicks(MediaItemCollection(items: items, name: "Picks"))
    let keys = RemoteCommandHandler.director(director)
    var pressed: (waits: Bool, enabled: Bool, done: Bool)?
    let left = DirectorFixture.renderPumped(director, engine, seconds: 5.5) { frame in
      if (100_800..<101_056).contains(frame) { _ = director.post("fight") }
      if (120_000..<120_256).contains(frame) {
        pressed = (director.changeWaits, keys.isEnabled(.nextTrack), keys.perform(.nextTrack))
      }
    }
    director.shutdown()
    let press = try #require(pressed)
    #expect(press.waits && !press.enabled && !press.done, "\(press)")
    #expect(!director.changeWaits)
    // The second song plays on to the bar, and the fight music comes on it. (The key skipped in
    // the fight's queue, not heard yet: a queue that does not repeat, as a bridge's, ended there.)
    #expect(heard(left, 2.6) == 440 && heard(left, 3.4) == 440)
    #expect(
      Listen.loudest(left, 4.2, 5.3, among: Self.pitches + [DirectorFixture.combatPitch]) == DirectorFixture.combatPitch
    )
  }

  @Test("Back in the state through a bridge, the picks go on from where they were left after it")
  func resumeAfterABridge() throws {
    // Away at 2.9 s (the second song, 0.9 s in), back at 4 s through the half-second fanfare:
    // the second song goes on from 0.9 s at 4.5 s, so the third starts at 5.6 s. It used to
    // start the picks over from the first song.
    let left = try run(
      "", bridges: #"[{ from: "other", to: "mine", music: "fanfare" }]"#,
      script: [.cue(2.9, "away"), .cue(4, "back")], seconds: 7.5)
    #expect(Listen.loudest(left, 4.05, 4.45, among: Self.pitches + [DirectorFixture.stingerPitch]) == 1_760)
    #expect(heard(left, 4.6) == 440, "the second song again, where it was")
    #expect(heard(left, 5.75) == 550, "then the third")
  }

  @Test("Interleaved with bundled music and left during a bundled track: back, the player's next song plays")
  func resumeAfterBundledSlot() throws {
    let left = try run(
      "", music: #"{ user: "picked", bundled: "calm", mix: "interleave", ratio: 1 }"#,
      script: [.cue(3, "away"), .cue(4, "back")], seconds: 5)
    // Pick 0 (330 Hz) from 0 s, then the bundled explore track from 2 s; away at 3 s, back at 4 s.
    #expect(heard(left, 0.5) == 330)
    #expect(heard(left, 2.5) == DirectorFixture.explorePitch)
    #expect(heard(left, 4.2) == 440, "the next picked song, not the first again")
  }

  @Test("resume: false starts the picks again from the first song")
  func restart() throws {
    let left = try run(", resume: false", script: [.cue(2.9, "away"), .cue(4, "back")], seconds: 6.5)
    #expect(heard(left, 4.2) == 330 && heard(left, 6.05) == 440)
  }

  @Test("The remembered order is kept (shuffled songs stay in their order), and new songs go last")
  func order() throws {
    func entry(_ name: String) -> QueueDescriptor.Entry { QueueDescriptor.Entry(item: MediaItem(path: "/m/" + name)) }
    let fresh = ["c", "a", "new", "b"].map(entry)
    let (resumed, seconds) = DirectorCore.resumed(
      fresh, at: (order: ["/m/a", "/m/b", "/m/c"], path: "/m/b", seconds: 12), repeating: true)
    #expect(resumed.map { $0.item.assetURL.lastPathComponent } == ["b", "c", "new", "a"] && seconds == 12)
    let once = DirectorCore.resumed(
      fresh, at: (order: ["/m/a", "/m/b", "/m/c"], path: "/m/b", seconds: 12), repeating: false)
    #expect(once.0.map { $0.item.assetURL.lastPathComponent } == ["b", "c", "new"])
    // Interleaved (two songs, then the game's piece): each copy of the piece keeps its place,
    // so after the song resumed the rotation goes on as it was.
    let rotation = ["p3", "p0", "calm", "p2", "p1", "calm"].map(entry)
    let remembered = ["/m/p0", "/m/p1", "/m/calm", "/m/p2", "/m/p3", "/m/calm"]
    let interleaved = DirectorCore.resumed(
      rotation, at: (order: remembered, path: "/m/p2", seconds: 5), repeating: true)
    #expect(
      interleaved.0.map { $0.item.assetURL.lastPathComponent } == ["p2", "p3", "calm", "p0", "p1", "calm"],
      "\(interleaved.0.map { $0.item.assetURL.lastPathComponent })")
    // Left as it was about to fade into the next song (a 12 s song, a 4 s crossfade between
    // songs): the next song, from its start.
    var long = entry("long")
    long.endTime = 12
    let queue = [long, entry("next"), entry("after")]
    let between = try Transition(duration: 4, curve: .equalPower)
    let finished = DirectorCore.pastFinishedSong(queue, at: 7.5, between: between)
    #expect(finished.0.map { $0.item.assetURL.lastPathComponent } == ["next", "after"] && finished.1 == nil)
    let playing = DirectorCore.pastFinishedSong(queue, at: 6.5, between: between)
    #expect(playing.0.count == 3 && playing.1 == 6.5, "more than a second before its crossfade: resumed")
    let alone = DirectorCore.pastFinishedSong([long], at: 11, between: between)
    #expect(alone.0.count == 1 && alone.1 == 11, "nothing after it: resumed as it was")
    // A shuffle's second pass: resumed at that pass's copy of the song, not the first pass's.
    let twoPasses = ["a", "b", "c", "b", "a", "c"].map(entry)
    let second = DirectorCore.resumed(
      twoPasses, at: (order: twoPasses.map { $0.item.assetURL.path }, path: "/m/a", seconds: 2), place: 4,
      repeating: false)
    #expect(second.0.map { $0.item.assetURL.lastPathComponent } == ["a", "c"], "\(second.0.map(\.item.title))")
    let gone = DirectorCore.resumed(fresh, at: (order: ["/m/x"], path: "/m/x", seconds: 3), repeating: true)
    #expect(gone.1 == nil && gone.0.count == 4, "the song is gone: from the start")
  }
}
