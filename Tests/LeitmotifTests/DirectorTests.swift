import Foundation
import LeitmotifFixtures
import Synchronization
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

@Suite("The director: cues change the music")
struct DirectorTests {
  @Test("A cue crossfades to another state; the timeline says which rule did it")
  func stateChange() throws {
    let game = try DirectorFixture()
    let sheet = try game.sheet(
      """
      {
        start: "explore",
      \(DirectorFixture.sources)
        states: {
          explore: { music: "calm" },
          combat: { music: "tense", transition: { seconds: 0.5 } },
        },
        rules: [ { name: "fight", on: "combat.start", do: { state: "combat" } } ],
      }
      """)
    // The check's catalogue of bundled music comes with the sheet: the director reuses it.
    #expect(sheet.catalog?.items.count == 5)
    let (left, timeline) = try game.simulate(sheet, [.cue(3, "combat.start")], seconds: 6)
    let pitches = [DirectorFixture.explorePitch, DirectorFixture.combatPitch]
    #expect(Listen.loudest(left, 0.5, 2.9, among: pitches) == DirectorFixture.explorePitch, "\(timeline.summary)")
    #expect(Listen.loudest(left, 3.6, 5.9, among: pitches) == DirectorFixture.combatPitch, "\(timeline.summary)")
    #expect(timeline.events.map(\.outcome) == ["fired"])
    #expect(timeline.events.first?.rule == "fight")
    #expect(timeline.states.map(\.state) == ["explore", "combat"])
    // Heard one mix (5.3 ms) after the event: the incoming voice pre-rolls one mix of silence.
    let heard = timeline.states.last?.from ?? 0
    #expect(heard >= 3 && heard <= 3.01, "\(heard)")
  }
}

@Suite("The director: rules, conditions, priorities and cooldowns")
struct DirectorRuleTests {
  static let cues = """
    {
      start: "explore",
    \(DirectorFixture.sources)
      parameters: { intensity: { default: 0 } },
      states: {
        explore: { music: "calm" },
        combat: { music: "tense", transition: { seconds: 0.2 } },
        boss: { music: "bossMusic", priority: 10, transition: { seconds: 0.2 } },
      },
      rules: [
        { name: "threat", on: "enemy.*", when: { state: "explore", payload: { threat: { atLeast: 2 } } }, do: { state: "combat" } },
        { name: "boss", on: "boss.appears", priority: 10, do: { state: "boss" } },
        { name: "calm down", on: "combat.end", do: { state: "explore" } },
        { name: "victory", on: "boss.defeated", priority: 10, do: { state: "explore" } },
        { name: "hit", on: "player.hit", cooldown: 1, do: { stinger: "hit" } },
        { name: "hot", on: "heat", when: { parameters: { intensity: { above: 0.5 } } }, do: { state: "combat" } },
        { name: "low", on: "pick", priority: 1, do: { volume: 0.9 } },
        { name: "high", on: "pick", priority: 5, do: { volume: 0.8 } },
        { name: "alarm", on: "alarm", when: { notState: ["combat"] }, do: { state: "combat" } },
      ],
    }
    """

  func run(_ script: [CueScript.Step], seconds: Double = 8) throws -> CueTimeline {
    let game = try DirectorFixture()
    return try game.simulate(try game.sheet(Self.cues), script, seconds: seconds).timeline
  }

  @Test("Payload and state conditions; a wildcard cue")
  func conditions() throws {
    let timeline = try run([.cue(1, "enemy.spotted", ["threat": 1]), .cue(2, "enemy.spotted", ["threat": 3])])
    #expect(timeline.events.map(\.outcome) == ["ignored", "fired"], "\(timeline.summary)")
    #expect(timeline.events[0].reason?.contains("threat") == true, "\(timeline.summary)")
    #expect(timeline.state(at: 1.5) == "explore")
    #expect(timeline.state(at: 2.5) == "combat")
  }

  @Test("A notState condition: the rule fires outside those states; inside, the report says the state is left out")
  func notState() throws {
    let timeline = try run([.cue(1, "alarm"), .cue(2, "alarm")])
    #expect(timeline.events.map(\.outcome) == ["fired", "ignored"], "\(timeline.summary)")
    #expect(
      timeline.events[1].reason?.contains(#"the state is "combat", which its notState leaves out"#) == true,
      "\(timeline.summary)")
  }

  @Test("A game parameter condition")
  func parameter() throws {
    let timeline = try run([.cue(1, "heat"), .set(2, "intensity", 0.8, ramp: 0.5), .cue(3, "heat")])
    #expect(timeline.events.map(\.outcome) == ["ignored", "fired"], "\(timeline.summary)")
    #expect(timeline.events[0].reason?.contains("intensity") == true)
    // The change is printed among the reports, at its time, between the two cues' lines.
    let lines = timeline.lines
    let set = lines.firstIndex { $0.hasSuffix("s set \"intensity\" to 0.8 over 0.500 s") }
    let ignored = lines.firstIndex { $0.contains("[heat] ignored") }
    let fired = lines.firstIndex { $0.contains("[heat] rule \"hot\"") }
    #expect(set != nil && ignored != nil && fired != nil, "\(timeline.summary)")
    if let set, let ignored, let fired { #expect(ignored < set && set < fired, "\(timeline.summary)") }
    #expect(lines.contains("   2.000 s set \"intensity\" to 0.8 over 0.500 s"), "\(timeline.summary)")
  }

  @Test("Boss music is not interrupted by a lesser cue; a rule of its rank ends it")
  func priorities() throws {
    let timeline = try run([.cue(1, "boss.appears"), .cue(2, "combat.end"), .cue(3, "boss.defeated")])
    #expect(timeline.events.map(\.outcome) == ["fired", "ignored", "fired"], "\(timeline.summary)")
    #expect(timeline.events[1].reason?.contains("outranks") == true, "\(timeline.summary)")
    #expect(timeline.state(at: 2.5) == "boss")
    #expect(timeline.state(at: 3.5) == "explore")
  }

  @Test("The highest-priority matching rule fires, and only it")
  func highestWins() throws {
    let timeline = try run([.cue(1, "pick")])
    #expect(timeline.events.first?.rule == "high", "\(timeline.summary)")
    #expect(timeline.events.count == 1)
  }

  @Test("A stinger does not fire twice within its cooldown")
  func cooldown() throws {
    let timeline = try run([.cue(1, "player.hit"), .cue(1.5, "player.hit"), .cue(2.2, "player.hit")])
    #expect(timeline.events.map(\.outcome) == ["fired", "ignored", "fired"], "\(timeline.summary)")
    #expect(timeline.events[1].reason?.contains("cooling down") == true)
    #expect(timeline.stingers.count == 2)
  }

  @Test("A cue no rule answers is reported as such")
  func unanswered() throws {
    let timeline = try run([.cue(1, "door.opened"), .cue(2, "player.hti")])
    #expect(timeline.events.first?.reason == "no rule answers cue \"door.opened\"", "\(timeline.summary)")
    // A misspelt cue names the rule's cue it is closest to.
    #expect(
      timeline.events.last?.reason == "no rule answers cue \"player.hti\"; did you mean \"player.hit\"?",
      "\(timeline.summary)")
  }
}

@Suite("The director: timing on the beat grid")
struct DirectorTimingTests {
  func quietThen(_ transition: String, extra: String = "") -> String {
    """
    {
      start: "quiet",
    \(DirectorFixture.sources)
      \(extra)
      states: {
        quiet: { music: "quiet" },
        combat: { music: "tense" },
      },
      rules: [ { on: "go", do: { crossfade: "combat", \(transition) } } ],
    }
    """
  }

  @Test("Quantized to the next beat: the incoming music's first sample within 1 ms of the beat")
  func beat() throws {
    let game = try DirectorFixture()
    let sheet = try game.sheet(quietThen("seconds: 0.5, curve: \"linear\", at: \"beat\""))
    // 120 BPM from the tag: beats every 0.5 s; the cue at 1.3 s waits for 1.5 s.
    let (left, timeline) = try game.simulate(sheet, [.cue(1.3, "go")], seconds: 3)
    let first = try #require(Listen.firstSound(left, after: 0))
    #expect(
      abs(Double(first) / 48_000 - 1.5) <= 0.001, "first sound at \(Double(first) / 48_000) s\n\(timeline.summary)")
  }

  @Test("Quantized to the next bar")
  func bar() throws {
    let game = try DirectorFixture()
    let sheet = try game.sheet(quietThen("seconds: 0.5, curve: \"linear\", at: \"bar\""))
    // 4/4 at 120 BPM: bars every 2 s; the cue at 0.3 s waits for 2 s.
    let (left, timeline) = try game.simulate(sheet, [.cue(0.3, "go")], seconds: 3)
    let first = try #require(Listen.firstSound(left, after: 0))
    #expect(
      abs(Double(first) / 48_000 - 2.0) <= 0.001, "first sound at \(Double(first) / 48_000) s\n\(timeline.summary)")
  }

  @Test("Every N bars: a change with bars: 2 waits for the next two-bar line (the end of a phrase)")
  func everyTwoBars() throws {
    let game = try DirectorFixture()
    let sheet = try game.sheet(quietThen("seconds: 0.5, curve: \"linear\", at: \"bar\", bars: 2"))
    // 4/4 at 120 BPM: bars every 2 s, two-bar lines every 4 s; the cue at 2.3 s waits for 4 s,
    // and one at 0.3 s (whose next bar is at 2 s) waits for 4 s too.
    for cue in [2.3, 0.3] {
      let (left, timeline) = try game.simulate(sheet, [.cue(cue, "go")], seconds: 5)
      let first = try #require(Listen.firstSound(left, after: 0))
      #expect(
        abs(Double(first) / 48_000 - 4.0) <= 0.001,
        "cue at \(cue) s: first sound at \(Double(first) / 48_000) s\n\(timeline.summary)")
    }
  }

  @Test("A source's tempo with a bpm is its untagged items' grid, over the tempo the analysis detected")
  func sourceTempoOverDetection() throws {
    let game = try DirectorFixture()
    // Drums at 120 BPM without a BPM tag: the analysis finds 120. The designer says 90, in 4.
    let song = RhythmSynthesizer.song(
      bpm: 120, rate: 48_000, style: .rock, seconds: 12, leadIn: 0, pickup: false, harmony: false, seed: 3)
    try VorbisEncoder.encode(
      samples: song.samples, format: .stereo48000, tags: [("TITLE", "Drums")], to: game.assets + "/drums.ogg")
    let text = quietThen("seconds: 0.5, curve: \"linear\", at: \"bar\"")
      .replacingOccurrences(
        of: "quiet: { bundled: \"quiet.ogg\" }", with: "quiet: { bundled: \"drums.ogg\", tempo: { bpm: 90, meter: 4 } }"
      )
    let sheet = try game.sheet(text)
    let item = try #require(
      BundledCatalog(directory: URL(fileURLWithPath: game.assets)).items.first { $0.title == "Drums" })
    #expect(item.isBeatsPerMinuteDetected && abs((item.beatsPerMinute ?? 0) - 120) < 2, "\(item.beatsPerMinute ?? 0)")
    // Bars of 90 BPM in 4 every 2.667 s: the cue at 0.3 s waits for 2.667 s (detected: 2 s).
    let (_, timeline) = try game.simulate(sheet, [.cue(0.3, "go")], seconds: 3)
    #expect(timeline.summary.contains("on the bar scheduled at 2.667 s"), "\(timeline.summary)")
  }

  @Test("A source's pickup places its bars: a one-beat pickup moves the bar lines a beat on; whole bars keep them")
  func pickupPlacesBars() throws {
    let game = try DirectorFixture()
    // Quiet at 120 BPM (tagged): bars every 2 s, from the pickup's end.
    for (pickup, line) in [("{ beats: 1 }", 2.5), ("{ bars: 2 }", 2.0), ("0.25", 2.25)] {
      let text = quietThen("seconds: 0.5, curve: \"linear\", at: \"bar\"")
        .replacingOccurrences(
          of: "quiet: { bundled: \"quiet.ogg\" }", with: "quiet: { bundled: \"quiet.ogg\", pickup: \(pickup) }")
      let (left, timeline) = try game.simulate(try game.sheet(text), [.cue(0.8, "go")], seconds: 3.5)
      let first = try #require(Listen.firstSound(left, after: 0))
      #expect(
        abs(Double(first) / 48_000 - line) <= 0.001,
        "pickup \(pickup): first sound at \(Double(first) / 48_000) s\n\(timeline.summary)")
    }
  }

  @Test("Music with no tempo follows the file's time grid")
  func timeGrid() throws {
    let game = try DirectorFixture()
    // Quiet again, but without a BPM tag: the grid comes from `tempo` (100 BPM, beats every 0.6 s).
    try VorbisEncoder.encode(
      samples: [Float](repeating: 0, count: 2 * 6 * 48_000), format: .stereo48000, tags: [("TITLE", "Untimed")],
      to: game.assets + "/untimed.ogg")
    let text = quietThen("seconds: 0.5, curve: \"linear\", at: \"beat\"", extra: "tempo: { bpm: 100 },")
      .replacingOccurrences(of: "quiet: { bundled: \"quiet.ogg\" }", with: "quiet: { bundled: \"untimed.ogg\" }")
    let (left, timeline) = try game.simulate(try game.sheet(text), [.cue(1.3, "go")], seconds: 3)
    let first = try #require(Listen.firstSound(left, after: 0))
    #expect(
      abs(Double(first) / 48_000 - 1.8) <= 0.001, "first sound at \(Double(first) / 48_000) s\n\(timeline.summary)")
  }

  @Test("An immediate transition is heard within 10 ms of its event")
  func immediate() throws {
    let game = try DirectorFixture()
    let sheet = try game.sheet(quietThen("seconds: 0.5, curve: \"linear\""))
    let (left, timeline) = try game.simulate(sheet, [.cue(2.0, "go")], seconds: 3)
    let first = try #require(Listen.firstSound(left, after: 0))
    let delay = Double(first) / 48_000 - 2.0
    #expect(delay >= 0 && delay <= 0.010, "heard \(delay * 1000) ms after the event\n\(timeline.summary)")
  }

  @Test("At the item's end: the crossfade finishes when the item ends")
  func atEnd() throws {
    let game = try DirectorFixture()
    // The quiet piece is 12 s long and does not loop: a 1 s crossfade starts at 11 s.
    let sheet = try game.sheet(quietThen("seconds: 1, curve: \"linear\", at: \"end\""))
    let (left, timeline) = try game.simulate(sheet, [.cue(2.0, "go")], seconds: 12.5)
    let first = try #require(Listen.firstSound(left, after: 0))
    #expect(
      abs(Double(first) / 48_000 - 11.0) <= 0.001, "first sound at \(Double(first) / 48_000) s\n\(timeline.summary)")
  }

  @Test(
    "A crossfade on the bar line where a bar-long piece ends fades out its repeat: no cut, no dip",
    arguments: ["\"gapless\"", "{ seconds: 0.5 }"])
  func crossfadeWhereTheItemEnds(between: String) throws {
    let game = try DirectorFixture()
    // One bar at 120 BPM (2 s), repeating; the explore tone (220 Hz) comes in on the bar.
    try DirectorFixture.tone(game.assets + "/bar.ogg", pitch: 440, seconds: 2, tags: [("BPM", "120")])
    let text = """
      {
        start: "loop",
        assets: "assets",
        sources: { bar: { bundled: "bar.ogg" }, calm: { bundled: "explore.ogg" } },
        states: {
          loop: { music: "bar", between: \(between) },
          calm: { music: "calm" },
        },
        rules: [ { on: "go", do: { crossfade: "calm", seconds: 1, at: "bar" } } ],
      }
      """
    let (left, timeline) = try game.simulate(try game.sheet(text), [.cue(3.3, "go")], seconds: 7)
    // Gapless, the bar after 3.3 s is at 4 s, where the second pass ends; crossfading 0.5 s
    // between passes, the third pass (from 3 s) ends at 5 s on its bar line. The outgoing item
    // used to stop there, its fade-out silent: 20 ms windows fell to 3 % of the level.
    let before = Listen.rms(Listen.window(left, 2.6, 2.9))
    var lowest = Double.infinity
    var at = 0.0
    for step in 0..<175 {
      let start = 3.3 + Double(step) * 0.02
      let level = Listen.rms(Listen.window(left, start, start + 0.02))
      if level < lowest { (lowest, at) = (level, start) }
    }
    #expect(lowest > 0.8 * before, "between \(between): \(lowest) at \(at) s, \(before) before\n\(timeline.summary)")
    // And the crossfade happened: the new music alone at the end.
    #expect(Listen.loudest(left, 6.5, 7, among: [440, DirectorFixture.explorePitch]) == DirectorFixture.explorePitch)
  }

  @Test("A crossfade longer than what the outgoing item has left fades it out by its end: no cut where it ends")
  func crossfadeLongerThanTheItemLeft() throws {
    let game = try DirectorFixture()
    // A 2 s piece (440 Hz) repeating with 0.5 s crossfades between passes: the pass heard at 4 s
    // began at 3 s and ends at 5 s. A 3 s crossfade to explore (220 Hz) from 4 s: the outgoing
    // pass ends a third of the way in, where it used to stop at 87 % of its level.
    try DirectorFixture.tone(game.assets + "/bar.ogg", pitch: 440, seconds: 2, tags: [])
    let text = """
      {
        start: "loop",
        assets: "assets",
        sources: { bar: { bundled: "bar.ogg" }, calm: { bundled: "explore.ogg" } },
        states: {
          loop: { music: "bar", between: { seconds: 0.5 } },
          calm: { music: "calm" },
        },
        rules: [ { on: "go", do: { crossfade: "calm", seconds: 3 } } ],
      }
      """
    let (left, timeline) = try game.simulate(try game.sheet(text), [.cue(4, "go")], seconds: 8)
    let before = Listen.level(of: 440, in: Listen.window(left, 3.6, 3.9))
    var levels: [Double] = []
    for step in 0..<60 {
      let start = 3.9 + Double(step) * 0.04
      levels.append(Listen.level(of: 440, in: Listen.window(left, start, start + 0.04)))
    }
    let steepest = zip(levels, levels.dropFirst()).map { $0 - $1 }.max() ?? 0
    #expect(
      steepest < 0.2 * before, "440 Hz fell by \(steepest) in 40 ms (level before \(before))\n\(timeline.summary)")
    #expect(levels.suffix(10).allSatisfy { $0 < 0.05 * before }, "the outgoing piece is gone by 6 s")
    #expect(Listen.loudest(left, 7.5, 8, among: [440, DirectorFixture.explorePitch]) == DirectorFixture.explorePitch)
  }

  @Test(
    "Back to the state heard before a change on the bar is heard: the change is called off, the music plays on untouched",
    arguments: [
      ("{ seconds: 1, at: \"bar\" }", 2.35), ("{ seconds: 0, at: \"bar\" }", 2.35),
      // In the change's own step: the call-off removed the change's held report from under the
      // first rule's report, and its insert past the end trapped (two cues in one frame).
      ("{ seconds: 1, at: \"bar\" }", 2.3),
    ])
  func changeCalledOffBeforeItsBar(transition: String, lostAt: Double) throws {
    let game = try DirectorFixture()
    try DirectorFixture.tone(game.assets + "/bar.ogg", pitch: 440, seconds: 8, tags: [("BPM", "120")])
    let text = """
      {
        start: "explore",
        assets: "assets",
        sources: { bar: { bundled: "bar.ogg" }, fight: { bundled: "explore.ogg" } },
        states: {
          explore: { music: "bar" },
          combat: { music: "fight", transition: \(transition) },
        },
        rules: [ { on: "spotted", do: { state: "combat" } }, { on: "lost", do: { state: "explore" } } ],
      }
      """
    let sheet = try game.sheet(text)
    let alone = try game.simulate(sheet, [], seconds: 6).left
    let (left, timeline) = try game.simulate(sheet, [.cue(2.3, "spotted"), .cue(lostAt, "lost")], seconds: 6)
    let mismatch = (0..<min(left.count, alone.count)).first { left[$0] != alone[$0] }
    #expect(mismatch == nil, "differs from explore alone at \(Double(mismatch ?? 0) / 48_000) s\n\(timeline.summary)")
    #expect(!timeline.summary.contains("-> \"combat\""), "\(timeline.summary)")
    #expect(timeline.summary.contains("is called off"), "\(timeline.summary)")
    // The item heard all along is not announced again (it was, as "now playing", at the call-off).
    #expect(timeline.items.count == 1, "\(timeline.summary)")
    let spotted = timeline.lines.firstIndex { $0.contains("[spotted] rule") }
    let lost = timeline.lines.firstIndex { $0.contains("[lost] rule") }
    #expect(spotted != nil && lost != nil && spotted! < lost!, "\(timeline.summary)")
  }

  @Test(
    "The next item of a state's queue is reported now playing at the time it is first heard: a gapless join, a crossfade's start",
    arguments: ["\"gapless\"", "{ seconds: 0.5 }"])
  func nextItemReportedWhenHeard(between: String) throws {
    let game = try DirectorFixture()
    try DirectorFixture.tone(game.assets + "/first.ogg", pitch: 440, seconds: 1.5, tags: [("TITLE", "First")])
    try DirectorFixture.tone(game.assets + "/second.ogg", pitch: 1760, seconds: 1.5, tags: [("TITLE", "Second")])
    let text = """
      { start: "explore", assets: "assets",
        sources: { both: { bundled: ["first.ogg", "second.ogg"] } },
        states: { explore: { music: "both", transition: { seconds: 0 }, between: \(between) } } }
      """
    let (left, timeline) = try game.simulate(try game.sheet(text), [], seconds: 2.5)
    let second = try #require(timeline.items.first { $0.title == "Second" }, "\(timeline.summary)")
    // Director time 0 is the first item's first frame: the second is heard from the first's end
    // (gapless), or from half a second before it (the crossfade's start).
    let start = between == "\"gapless\"" ? 1.5 : 1.0
    #expect(abs(second.at - start) < 0.001, "reported at \(second.at) s, heard from \(start) s\n\(timeline.summary)")
    // The audio agrees: no 1760 Hz before, plenty 0.1 s after (the report said 25 ms late).
    #expect(Listen.level(of: 1760, in: Listen.window(left, start - 0.05, start - 0.01)) < 0.01)
    #expect(Listen.level(of: 1760, in: Listen.window(left, start + 0.1, start + 0.14)) > 0.05)
  }

  /// Explore plays bar.ogg, 440 Hz at 120 BPM from 0 (beats every 0.5 s, bars every 2 s);
  /// "spotted" changes to combat and "boss" to boss, each with the transition given.
  static func spottedThenBoss(_ game: DirectorFixture, combat: String, boss: String) throws -> String {
    try DirectorFixture.tone(game.assets + "/bar.ogg", pitch: 440, seconds: 8, tags: [("BPM", "120")])
    return """
      {
        start: "explore",
        assets: "assets",
        sources: { bar: { bundled: "bar.ogg" }, fight: { bundled: "explore.ogg" }, bossMusic: { bundled: "boss.ogg" } },
        states: {
          explore: { music: "bar" },
          combat: { music: "fight", transition: { \(combat) } },
          boss: { music: "bossMusic", transition: { \(boss) } },
        },
        rules: [ { on: "spotted", do: { state: "combat" } }, { on: "boss", do: { state: "boss" } } ],
      }
      """
  }

  @Test("A change on the bar replaced by another before the bar: never reported, the next goes from the state heard")
  func replacedBeforeItsBar() throws {
    let game = try DirectorFixture()
    let text = try Self.spottedThenBoss(game, combat: "seconds: 1, at: \"bar\"", boss: "seconds: 0")
    let (left, timeline) = try game.simulate(
      try game.sheet(text), [.cue(2.3, "spotted"), .cue(2.35, "boss")], seconds: 5)
    #expect(!timeline.summary.contains("-> \"combat\""), "\(timeline.summary)")
    #expect(timeline.summary.contains("state \"explore\" -> \"boss\""), "\(timeline.summary)")
    // The designer is told the change reported as waiting will not come.
    #expect(
      timeline.summary.contains(
        "[boss] rule \"rule 2\": cut to \"boss\"; the change to \"combat\" waiting for 4 s is called off"),
      "\(timeline.summary)")
    #expect(timeline.state(at: 4.5) == "boss", "\(timeline.summary)")
    let pitches = [DirectorFixture.bossPitch, DirectorFixture.explorePitch, 440]
    #expect(Listen.loudest(left, 4, 4.9, among: pitches) == DirectorFixture.bossPitch, "\(timeline.summary)")
  }

  @Test(
    "A change on the beat or bar while another waits for its bar: it lands on the grid of the music heard, not of the music that was waiting",
    arguments: [("beat", 2.8, 3.0), ("bar", 2.4, 4.0)])
  func replacedOnTheGridHeard(moment: String, cueTime: Double, lands: Double) throws {
    let game = try DirectorFixture()
    let text = try Self.spottedThenBoss(
      game, combat: "seconds: 0, at: \"bar\"", boss: "seconds: 0, at: \"\(moment)\"")
    let (left, timeline) = try game.simulate(
      try game.sheet(text), [.cue(2.3, "spotted"), .cue(cueTime, "boss")], seconds: 5)
    // The grid used to come from the combat music, waiting for its bar: the boss cut in at once,
    // reported on a line of music that never played.
    #expect(timeline.state(at: lands - 0.02) == "explore", "\(timeline.summary)")
    #expect(timeline.state(at: lands + 0.02) == "boss", "\(timeline.summary)")
    let pitches = [DirectorFixture.bossPitch, DirectorFixture.explorePitch, 440]
    #expect(Listen.loudest(left, lands - 0.08, lands - 0.01, among: pitches) == 440, "\(timeline.summary)")
    #expect(Listen.loudest(left, lands + 0.01, lands + 0.08, among: pitches) == DirectorFixture.bossPitch)
  }

  @Test(
    "A change on the bar whose file went bad since the cue file loaded: its fallback lands on that bar, not at once")
  func fallbackOnTheBar() throws {
    let game = try DirectorFixture()
    try DirectorFixture.tone(game.assets + "/bar.ogg", pitch: 440, seconds: 8, tags: [("BPM", "120")])
    try FileManager.default.copyItem(atPath: game.assets + "/explore.ogg", toPath: game.assets + "/fight.ogg")
    let text = """
      {
        start: "explore",
        assets: "assets",
        sources: {
          bar: { bundled: "bar.ogg" }, fight: { bundled: "fight.ogg", fallback: "spare" }, spare: { bundled: "boss.ogg" },
        },
        states: { explore: { music: "bar" }, combat: { music: "fight", transition: { seconds: 0, at: "bar" } } },
        rules: [ { on: "spotted", do: { state: "combat" } } ],
      }
      """
    let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    let director = Director(engine: engine, sheet: try game.sheet(text), library: nil, clocking: .pumped)
    let left = try DirectorFixture.renderPumped(director, engine, seconds: 5) { frame in
      if (48_000..<48_256).contains(frame) {
        // The game's files changed under it (a patch half-applied): not Ogg any more.
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: game.assets + "/fight.ogg"))
      }
      if (110_400..<110_656).contains(frame) { director.post("spotted") }
    }
    director.shutdown()
    // The change was reported for the bar at 4 s; the spare music cut in at once (2.3 s) when the
    // file failed to open.
    let pitches = [DirectorFixture.bossPitch, DirectorFixture.explorePitch, 440]
    #expect(Listen.loudest(left, 2.5, 3.9, among: pitches) == 440)
    #expect(Listen.loudest(left, 4.02, 4.3, among: pitches) == DirectorFixture.bossPitch)
  }

  @Test("Live: a change on the bar posted at once after start() is reported when it is heard, as offline")
  func barChangeAtStartReportedRight() throws {
    let game = try DirectorFixture()
    try DirectorFixture.tone(game.assets + "/bar.ogg", pitch: 440, seconds: 8, tags: [("BPM", "120")])
    let text = """
      { start: "explore", assets: "assets", sources: { bar: { bundled: "bar.ogg" }, fight: { bundled: "explore.ogg" } },
        states: { explore: { music: "bar" }, combat: { music: "fight", transition: { seconds: 0, at: "bar" } } },
        rules: [ { on: "spotted", do: { state: "combat" } } ] }
      """
    let engine = try AudioEngine(output: .defaultDevice)
    defer { engine.shutdown() }
    let director = Director(engine: engine, sheet: try game.sheet(text))
    defer { director.shutdown() }
    let reports = Mutex<[DirectorReport]>([])
    director.addObserver { report in reports.withLock { $0.append(report) } }
    director.start()
    director.post("spotted")
    #expect(
      EngineHarness.wait(seconds: 10) {
        reports.withLock {
          $0.contains { if case .stateChanged(_, "combat", _, _, _) = $0.kind { true } else { false } }
        }
      })
    director.waitForReports()
    // Before the start state's first frame is mixed, the director counted the playing item's
    // position from where the mix was, a quarter second early: the bar was reported at 1.809 s,
    // off the grid. Offline the same script cuts at 0, on the first bar.
    let times = reports.withLock { all in
      all.compactMap { report -> Double? in
        switch report.kind {
        case .scheduled, .stateChanged(_, "combat", _, _, _): return report.time
        default: return nil
        }
      }
    }
    #expect(!times.isEmpty)
    for time in times {
      let offGrid = abs(time - 2 * (time / 2).rounded())
      #expect(offGrid < 0.005, "reported at \(time) s, not on a bar line: \(times)")
    }
  }

  @Test("The same script renders the same samples")
  func deterministic() throws {
    let game = try DirectorFixture()
    let sheet = try game.sheet(quietThen("seconds: 0.3, at: \"beat\""))
    let script: [CueScript.Step] = [.cue(0.7, "go")]
    let first = try game.simulate(sheet, script, seconds: 2).left
    let second = try game.simulate(sheet, script, seconds: 2).left
    #expect(first == second)
    #expect(first.contains { $0 != 0 })
  }
}

@Suite("The director: every action")
struct DirectorActionTests {
  /// Explore (220 Hz) plays from the start; `rules` act on it.
  func run(
    rules: String, _ script: [CueScript.Step], seconds: Double, extra: String = "", states: String = "",
    game: DirectorFixture? = nil
  ) throws -> (left: [Float], timeline: CueTimeline) {
    let game = try game ?? DirectorFixture()
    let sheet = try game.sheet(
      """
      {
        start: "explore",
      \(DirectorFixture.sources)
        \(extra)
        states: {
          explore: { music: "calm", transition: { seconds: 0 } },
          combat: { music: "tense" },
          \(states)
        },
        rules: [ \(rules) ],
      }
      """)
    return try game.simulate(sheet, script, seconds: seconds)
  }

  let explore = DirectorFixture.explorePitch

  @Test("stinger: a one-shot over the music, on the beat when asked")
  func stinger() throws {
    let (left, timeline) = try run(
      rules: #"{ on: "hit", do: { stinger: "hit", at: "beat" } }"#, [.cue(1.2, "hit")], seconds: 3)
    // On the beat (1.5 s), for half a second; the music goes on under it.
    #expect(Listen.level(of: DirectorFixture.stingerPitch, in: Listen.window(left, 1.2, 1.49)) < 0.01)
    #expect(
      Listen.level(of: DirectorFixture.stingerPitch, in: Listen.window(left, 1.55, 1.95)) > 0.2, "\(timeline.summary)")
    #expect(Listen.level(of: explore, in: Listen.window(left, 1.55, 1.95)) > 0.2)
    #expect(timeline.stingers.map(\.file) == ["hit.ogg"])
    #expect(abs((timeline.stingers.first?.at ?? 0) - 1.5) < 0.001)
  }

  @Test("A stinger on the bar fired while the music is paused plays at once; the music resumes as it was")
  func stingerWhilePaused() throws {
    let rules = #"""
      { on: "hit", do: { stinger: "hit", at: "bar", duck: { db: -12, hold: 0.2, release: 0.1 } } },
      { on: "menu", do: { pause: true, fade: 0.1 } }, { on: "back", do: { resume: true, fade: 0.1 } }
      """#
    let (left, timeline) = try run(
      rules: rules, [.cue(1.2, "menu"), .cue(1.6, "hit"), .cue(2.6, "back")], seconds: 3.5)
    let hit = DirectorFixture.stingerPitch
    // Paused from 1.3 s: the hit from 1.6 s, over silence (the bar of paused music never comes).
    #expect(Listen.level(of: hit, in: Listen.window(left, 1.62, 2.05)) > 0.2, "\(timeline.summary)")
    #expect(Listen.level(of: explore, in: Listen.window(left, 1.4, 2.5)) < 0.001, "\(timeline.summary)")
    #expect(abs((timeline.stingers.first?.at ?? 0) - 1.6) < 0.01, "\(timeline.summary)")
    // Its duck is over by the resume: the music comes back at its level.
    let before = Listen.level(of: explore, in: Listen.window(left, 0.5, 1.1))
    let after = Listen.level(of: explore, in: Listen.window(left, 2.8, 3.4))
    #expect(abs(after / before - 1) < 0.02, "\(after) after the resume, \(before) before")
    // The report names the duck the designer tuned (it used to give the stinger's name alone).
    #expect(
      timeline.lines.contains {
        $0.hasSuffix(#"stinger "hit", duck -12 dB (attack 0.1 s, hold 0.2 s, release 0.1 s)"#)
      }, "\(timeline.summary)")
    let (_, loud) = try run(
      rules: #"{ on: "hit", do: { stinger: "hit", volume: 0.5 } }"#, [.cue(1.2, "hit")], seconds: 2)
    #expect(loud.lines.contains { $0.hasSuffix(#"stinger "hit", volume 0.5"#) }, "\(loud.summary)")
  }

  @Test("The same stinger twice on one frame plays once: cued twice before its beat, or twice in one update")
  func stingerOnceAFrame() throws {
    let rules = #"{ on: "tick", do: { stinger: "hit", at: "beat" } }, { on: "now", do: { stinger: "hit" } }"#
    let (once, _) = try run(rules: rules, [.cue(1.2, "tick"), .cue(2.6, "now")], seconds: 3.2)
    let (twice, timeline) = try run(
      rules: rules, [.cue(1.2, "tick"), .cue(1.3, "tick"), .cue(2.6, "now"), .cue(2.6, "now")], seconds: 3.2)
    #expect(timeline.stingers.map(\.at).count == 2, "\(timeline.summary)")
    #expect(timeline.lines.filter { $0.contains("plays once") }.count == 2, "\(timeline.summary)")
    // Heard as loud as one: a copy on the same frame used to double it.
    let hit = DirectorFixture.stingerPitch
    for at in [1.5, 2.6] {
      let single = Listen.level(of: hit, in: Listen.window(once, at + 0.05, at + 0.4))
      let heard = Listen.level(of: hit, in: Listen.window(twice, at + 0.05, at + 0.4))
      #expect(single > 0.15 && abs(heard / single - 1) < 0.01, "at \(at) s: \(heard) against one stinger's \(single)")
    }
  }

  @Test(
    "A stinger on the grid while a change waits for its line: on the music heard, the outgoing music's line before the change, the incoming music's after"
  )
  func stingerWhileAChangeWaits() throws {
    // Explore (120 BPM: beats 0.5 s, bars 2 s) changes to the boss (90 BPM: beats 2/3 s, bars
    // 8/3 s) two bars on, at 4 s; the boss changes to combat (120 BPM) on its beat at 16/3 s,
    // entering at the boss's position (4/3 s), so combat's next bar comes 2/3 s later, at 6 s.
    let (left, timeline) = try run(
      rules: """
        { on: "boss", do: { state: "bossy" } }, { on: "fight", do: { state: "fight" } },
        { on: "tick", do: { stinger: "hit", at: "beat" } }, { on: "bang", do: { stinger: "hit", at: "bar", duck: -6 } }
        """,
      [.cue(0.3, "boss"), .cue(1.2, "tick"), .cue(2.5, "bang"), .cue(5.0, "fight"), .cue(5.1, "bang")],
      seconds: 7,
      states: """
        bossy: { music: "bossMusic", transition: { seconds: 0, at: "bar", bars: 2 } },
        fight: { music: "tense", transition: { seconds: 0, at: "beat", enter: "same-position" } },
        """)
    // 1.5 s: explore's next beat, before the change; 4 s: the change's own line; 6 s: combat's bar.
    let expected = [1.5, 4.0, 6.0]
    #expect(timeline.stingers.map(\.at).count == 3, "\(timeline.summary)")
    for (heard, at) in zip(timeline.stingers.map(\.at), expected) {
      #expect(abs(heard - at) < 0.001, "reported at \(heard) s, expected \(at) s\n\(timeline.summary)")
    }
    // Heard there, within 3 ms (a mix block is 5 ms; the stinger used to start at once).
    let hit = DirectorFixture.stingerPitch
    for at in expected {
      #expect(Listen.level(of: hit, in: Listen.window(left, at - 0.1, at - 0.003)) < 0.01, "no hit before \(at) s")
      #expect(Listen.level(of: hit, in: Listen.window(left, at + 0.003, at + 0.05)) > 0.15, "a hit from \(at) s")
    }
  }

  @Test(
    "A seek while a change waits for its line: the music heard plays on to the line, the new music starts from the seek"
  )
  func seekWhileAChangeWaits() throws {
    // Explore changes to the boss two bars on, at 4 s; the seek at 1 s is the boss's: it starts
    // 1.5 s into its file. It used to let explore go at once: silence from 1 s to 4 s.
    let (left, timeline) = try run(
      rules: #"{ on: "boss", do: { state: "bossy" } }, { on: "jump", do: { seek: 1.5 } }"#,
      [.cue(0.3, "boss"), .cue(1.0, "jump")], seconds: 5,
      states: #"bossy: { music: "bossMusic", transition: { seconds: 0, at: "bar", bars: 2 } },"#)
    let before = Listen.level(of: explore, in: Listen.window(left, 0.5, 0.95))
    let waiting = Listen.level(of: explore, in: Listen.window(left, 1.1, 3.95))
    #expect(
      abs(waiting / before - 1) < 0.05,
      "explore at \(waiting) while the change waits (\(before) before)\n\(timeline.summary)")
    let boss = Listen.level(of: DirectorFixture.bossPitch, in: Listen.window(left, 4.05, 4.9))
    #expect(boss > 0.2, "the boss after the line: \(boss)")
    #expect(timeline.state(at: 4.5) == "bossy")
  }

  @Test("A seek during a crossfade: the new music jumps, the music before it goes on fading out")
  func seekDuringACrossfade() throws {
    let (left, timeline) = try run(
      rules: #"{ on: "fight", do: { crossfade: "combat", seconds: 2 } }, { on: "jump", do: { seek: 3 } }"#,
      [.cue(1.0, "fight"), .cue(1.5, "jump")], seconds: 3.5)
    // Equal-power from 1 s to 3 s: explore is still at more than half its level until 2.3 s. It
    // used to be let go at the seek, 10 ms later silent.
    let before = Listen.level(of: explore, in: Listen.window(left, 0.5, 0.95))
    let fading = Listen.level(of: explore, in: Listen.window(left, 1.6, 2.0))
    #expect(fading > 0.5 * before, "explore at \(fading) after the seek (\(before) before)\n\(timeline.summary)")
    #expect(Listen.level(of: explore, in: Listen.window(left, 3.1, 3.4)) < 0.01, "explore gone after the crossfade")
  }

  @Test(
    "A stinger on the bar of music that a skip fades out before that bar: it comes on the bar's frame had the music gone on, whatever the render size"
  )
  func stingerOnTheBarOfMusicSkippedAway() throws {
    let game = try DirectorFixture()
    let sheet = try game.sheet(
      """
      {
        start: "both",
      \(DirectorFixture.sources)
        states: { both: { music: "pair", transition: { seconds: 0 } } },
        rules: [
          { on: "bang", do: { stinger: "hit", at: "bar" } },
          { on: "next", do: { skip: "next", seconds: 0.5 } },
        ],
      }
      """)
    // Explore (120 BPM: bars of 2 s) is skipped at 1 s and gone by 1.5 s; the hit waited for its
    // bar at 2 s. It used to start when the mixer noticed explore had ended: on whichever mix
    // block came next, so renders in blocks of other sizes put it elsewhere.
    let script: [CueScript.Step] = [.cue(0.8, "bang"), .cue(1.0, "next")]
    var options = CueSimulation.Options()
    let (left, timeline) = try game.simulate(sheet, script, seconds: 3, options: options)
    options.renderFrames = 1000
    let (other, _) = try game.simulate(sheet, script, seconds: 3, options: options)
    #expect(abs((timeline.stingers.first?.at ?? 0) - 2) < 0.001, "\(timeline.summary)")
    let hit = DirectorFixture.stingerPitch
    #expect(Listen.level(of: hit, in: Listen.window(left, 1.4, 1.997)) < 0.01, "no hit before the bar")
    #expect(Listen.level(of: hit, in: Listen.window(left, 2.003, 2.05)) > 0.15, "the hit from the bar on")
    let worst = zip(left, other).map { abs($0 - $1) }.max() ?? 1
    #expect(worst < 1e-6, "renders in blocks of 256 and 1,000 frames differ by \(worst)")
  }

  @Test(
    "A stinger on the beat cued during a dip's fade down: on the first beat after the jump, forward and back, whatever the render size"
  )
  func stingerOnTheBeatDuringADip() throws {
    // Explore at 120 BPM: beats every 0.5 s of its file. The jump at 1 s goes down for 0.1 s and
    // lands on 5.25 s of the file at 1.11 s (after the seek's 10 ms fade), so the next beat
    // heard is 5.5 s of the file, at 1.36 s. The hit used to go on the beat before the jump
    // (1.5 s of the file), which the music never reached: it started when the mixer noticed,
    // on whichever block came next. Back at 2 s, down for 0.2 s: lands on 0.4 s of the file at
    // 2.21 s, the beat is at 2.31 s. It used to wait for 6.5 s of the file, which came 6 s
    // later; and the start, put on 0.5 s of the file when the cue came, found the music past it
    // (at 6.2 s, before the jump) and came at once.
    try stingerOnTheBeatAcrossJumps(
      fades: ", fade: 0.2", ", fade: 0.4",
      script: [.cue(1.0, "jump"), .cue(1.05, "bang"), .cue(2.0, "back"), .cue(2.05, "bang")],
      beats: (1.36, 2.31), quietFrom: (1.11, 1.9))
  }

  @Test(
    "A stinger waiting for its beat when the music is moved at once (a seek without a fade): the first beat after the jump, forward and back"
  )
  func stingerOnTheBeatAcrossAMove() throws {
    // The hit cued at 1.05 s waits for 1.5 s of the file; at 1.2 s the music is moved to 5.25 s
    // (heard from 1.21 s, after the seek's 10 ms fade), so the first beat after the jump is
    // 5.5 s, heard at 1.46 s. The hit started at once, on whichever block came after the jump:
    // the music was past its line. The hit cued at 2.05 s (6.09 s of the file) waits for 6.5 s;
    // at 2.2 s the music goes back to 0.4 s (from 2.21 s): the first beat after the jump is
    // 0.5 s, at 2.31 s. The hit waited for 6.5 s to come round again, 6 s later. Both stayed
    // reported (and ducked) on the lines before the jumps. (The first hit lasts 0.5 s, to 1.96 s.)
    try stingerOnTheBeatAcrossJumps(
      fades: "", "", script: [.cue(1.05, "bang"), .cue(1.2, "jump"), .cue(2.05, "bang"), .cue(2.2, "back")],
      beats: (1.46, 2.31), quietFrom: (1.0, 1.97))
  }

  /// The music jumps forward to 5.25 s of its file on "jump" and back to 0.4 s on "back" (with
  /// the seek's `fades`), stingers on the beat on "bang": the hits are reported at `beats` and
  /// heard from there, not in the time before (from `quietFrom`), and renders in blocks of 256
  /// and 1,000 frames are the same.
  private func stingerOnTheBeatAcrossJumps(
    fades forward: String, _ back: String, script: [CueScript.Step], beats: (Double, Double),
    quietFrom: (Double, Double)
  ) throws {
    let game = try DirectorFixture()
    let sheet = try game.sheet(
      """
      {
        start: "explore",
      \(DirectorFixture.sources)
        states: { explore: { music: "calm", transition: { seconds: 0 } } },
        rules: [
          { on: "bang", do: { stinger: "hit", at: "beat" } },
          { on: "jump", do: { seek: 5.25\(forward) } },
          { on: "back", do: { seek: 0.4\(back) } },
        ],
      }
      """)
    var options = CueSimulation.Options()
    let (left, timeline) = try game.simulate(sheet, script, seconds: 2.8, options: options)
    options.renderFrames = 1000
    let (other, _) = try game.simulate(sheet, script, seconds: 2.8, options: options)
    let times = timeline.stingers.map(\.at)
    #expect(
      times.count == 2 && abs(times[0] - beats.0) < 0.001 && abs(times[1] - beats.1) < 0.001, "\(timeline.summary)")
    let hit = DirectorFixture.stingerPitch
    #expect(
      Listen.level(of: hit, in: Listen.window(left, quietFrom.0, beats.0 - 0.003)) < 0.01,
      "no hit before the beat after the jump")
    #expect(
      Listen.level(of: hit, in: Listen.window(left, beats.0 + 0.003, beats.0 + 0.05)) > 0.15,
      "the hit from that beat on")
    #expect(
      Listen.level(of: hit, in: Listen.window(left, quietFrom.1, beats.1 - 0.003)) < 0.01,
      "no hit before the beat after the jump back")
    #expect(
      Listen.level(of: hit, in: Listen.window(left, beats.1 + 0.003, beats.1 + 0.05)) > 0.15,
      "the hit on the beat after the jump back")
    let worst = zip(left, other).map { abs($0 - $1) }.max() ?? 1
    #expect(worst < 1e-6, "renders in blocks of 256 and 1,000 frames differ by \(worst)")
  }

  @Test("duck: down by its decibels during the hold, back after the release")
  func duck() throws {
    let (left, timeline) = try run(
      rules: #"{ on: "talk", do: { duck: -12, attack: 0.1, hold: 1, release: 0.2 } }"#, [.cue(1, "talk")], seconds: 3.5)
    let before = Listen.level(of: explore, in: Listen.window(left, 0.5, 0.95))
    let held = Listen.level(of: explore, in: Listen.window(left, 1.2, 2.0))
    let after = Listen.level(of: explore, in: Listen.window(left, 2.5, 3.4))
    let decibels = 20 * log10(held / before)
    #expect(abs(decibels + 12) < 1, "ducked by \(decibels) dB\n\(timeline.summary)")
    #expect(abs(after / before - 1) < 0.05)
  }

  @Test("duck: music that starts during the duck (a crossfade to another state) is ducked as deep, until the release")
  func duckTakesMusicStartedDuringIt() throws {
    let (left, timeline) = try run(
      rules: #"{ on: "talk", do: { duck: -12, attack: 0.05, hold: 2, release: 0.05 } }, "#
        + #"{ on: "fight", do: { crossfade: "combat", seconds: 0.3 } }"#,
      [.cue(1, "talk"), .cue(1.5, "fight")], seconds: 4)
    let combat = DirectorFixture.combatPitch
    let ducked = Listen.level(of: combat, in: Listen.window(left, 2.2, 2.95))
    let after = Listen.level(of: combat, in: Listen.window(left, 3.3, 3.9))
    let decibels = 20 * log10(ducked / after)
    #expect(abs(decibels + 12) < 1, "the new music ducked by \(decibels) dB\n\(timeline.summary)")
  }

  @Test("rate: speed and pitch change together, after the ramp")
  func rate() throws {
    let (left, timeline) = try run(rules: #"{ on: "fast", do: { rate: 2, ramp: 0.5 } }"#, [.cue(1, "fast")], seconds: 3)
    #expect(Listen.loudest(left, 0.2, 0.9, among: [explore, 2 * explore]) == explore)
    #expect(Listen.loudest(left, 1.7, 2.9, among: [explore, 2 * explore]) == 2 * explore, "\(timeline.summary)")
  }

  @Test("volume: the music's level, ramped")
  func volume() throws {
    let (left, _) = try run(rules: #"{ on: "soft", do: { volume: 0.5, ramp: 0.2 } }"#, [.cue(1, "soft")], seconds: 2.5)
    let ratio = Listen.rms(Listen.window(left, 1.5, 2.4)) / Listen.rms(Listen.window(left, 0.3, 0.9))
    #expect(abs(ratio - 0.5) < 0.03, "ratio \(ratio)")
  }

  @Test("pause and resume, each with a fade")
  func pauseResume() throws {
    let (left, timeline) = try run(
      rules: #"{ on: "menu", do: { pause: true, fade: 0.3 } }, { on: "back", do: { resume: true, fade: 0.3 } }"#,
      [.cue(1, "menu"), .cue(2, "back")], seconds: 3)
    #expect(Listen.rms(Listen.window(left, 1.4, 1.95)) == 0, "\(timeline.summary)")
    #expect(Listen.rms(Listen.window(left, 2.4, 2.9)) > 0.2)
    // The fade is gradual: mid-way through it the level is between the two.
    let midFade = Listen.rms(Listen.window(left, 1.12, 1.18)) / Listen.rms(Listen.window(left, 0.5, 0.9))
    #expect(midFade > 0.2 && midFade < 0.8, "mid-fade level \(midFade)")
  }

  @Test(
    "A pause menu during a crossfade: both sides pause and go on together on the resume, as if the game had not paused")
  func pauseDuringACrossfade() throws {
    let rules =
      #"{ on: "fight", do: { crossfade: "combat", seconds: 2 } }, "#
      + #"{ on: "menu", do: { pause: true, fade: 0.1 } }, { on: "back", do: { resume: true, fade: 0.1 } }"#
    // The crossfade from 1 s to 3 s; the menu at 1.8 s pauses the music at 1.9 s, mid-fade,
    // "back" at 2.6 s. The outgoing explore music was let go at the pause, and the combat music
    // came back at full level, alone.
    let (straight, _) = try run(rules: rules, [.cue(1, "fight")], seconds: 4)
    let (paused, timeline) = try run(
      rules: rules, [.cue(1, "fight"), .cue(1.8, "menu"), .cue(2.6, "back")], seconds: 4.7)
    let shift = Int((0.7 * 48_000).rounded())
    var largest: Float = 0
    for frame in Int(2.75 * 48_000)..<Int(4.6 * 48_000) {
      largest = max(largest, abs(paused[frame] - straight[frame - shift]))
    }
    #expect(largest < 1e-6, "after the resume, \(largest) from the level that did not pause\n\(timeline.summary)")
    #expect(
      Listen.level(of: explore, in: Listen.window(paused, 2.8, 3.1)) > 0.05, "explore still fading out after the resume"
    )
  }

  @Test(
    "A pause menu while a change waits for its bar: the music heard resumes alone, as if the game had not paused, and the change comes on its line"
  )
  func pauseWhileAChangeWaits() throws {
    let rules =
      #"{ on: "fight", do: { crossfade: "combat", seconds: 0.5, at: "bar", bars: 4 } }, "#
      + #"{ on: "menu", do: { pause: true, fade: 0.3 } }, { on: "back", do: { resume: true, fade: 0.3 } }"#
    // "fight" at 1 s waits for the phrase at 8 s; the menu at 1.5 s pauses the music at 1.8 s,
    // "back" at 4 s. Explore's repeat, lined up behind it, was started too by the resume: a
    // second copy of the music played along until the change (+6 dB).
    let (straight, _) = try run(rules: rules, [.cue(1, "fight")], seconds: 9)
    let (paused, timeline) = try run(
      rules: rules, [.cue(1, "fight"), .cue(1.5, "menu"), .cue(4, "back")], seconds: 11.5)
    let before = Listen.level(of: explore, in: Listen.window(paused, 0.3, 0.9))
    let after = Listen.level(of: explore, in: Listen.window(paused, 5, 7))
    #expect(
      abs(after / before - 1) < 0.02, "explore at \(after) after the resume, \(before) before\n\(timeline.summary)")
    // From the end of the resume's fade, the paused level is the straight one 2.2 s later (the
    // music paused at 1.8 s, after its fade, and goes on from there at 4 s).
    let shift = Int((2.2 * 48_000).rounded())
    var largest: Float = 0
    for frame in Int(4.35 * 48_000)..<Int(8.9 * 48_000) {
      largest = max(largest, abs(paused[frame] - straight[frame - shift]))
    }
    #expect(largest < 1e-6, "after the resume, \(largest) from the level that did not pause\n\(timeline.summary)")
  }

  @Test(
    "A stinger on the bar waiting when the game pauses plays on that bar of the music after the resume, and is reported then"
  )
  func stingerThroughAPause() throws {
    let rules =
      #"{ on: "hit", do: { stinger: "hit.ogg", at: "bar" } }, "#
      + #"{ on: "menu", do: { pause: true, fade: 0 } }, { on: "back", do: { resume: true, fade: 0 } }"#
    // The hit at 0.3 s waits for the bar at 2 s; the music pauses at 1 s and goes on at 3 s, so
    // it reaches that bar at 4 s. The report came at 2 s, under the pause menu.
    let (left, timeline) = try run(rules: rules, [.cue(0.3, "hit"), .cue(1, "menu"), .cue(3, "back")], seconds: 5)
    let sting = DirectorFixture.stingerPitch
    #expect(Listen.level(of: sting, in: Listen.window(left, 1.1, 3.9)) < 0.005, "\(timeline.summary)")
    #expect(Listen.level(of: sting, in: Listen.window(left, 4.05, 4.4)) > 0.1, "\(timeline.summary)")
    let played = try #require(timeline.stingers.first, "no stinger played\n\(timeline.summary)")
    #expect(abs(played.at - 4) < 0.02, "the stinger is reported at \(played.at) s\n\(timeline.summary)")
  }

  @Test("A state change while paused: the new state's music waits for the resume, which starts it")
  func changeWhilePaused() throws {
    let (left, timeline) = try run(
      rules: #"{ on: "menu", do: { pause: true, fade: 0.3 } }, { on: "back", do: { resume: true, fade: 0.3 } }, "#
        + #"{ on: "fight", do: { crossfade: "combat", seconds: 1, at: "bar" } }"#,
      [.cue(1, "menu"), .cue(2, "fight"), .cue(3, "back")], seconds: 4)
    // It used to start at once, under the pause menu, and the resume found it playing.
    #expect(Listen.rms(Listen.window(left, 1.4, 2.95)) == 0, "\(timeline.summary)")
    #expect(timeline.summary.contains("paused: it plays when the music resumes"), "\(timeline.summary)")
    #expect(
      Listen.loudest(left, 3.4, 3.9, among: [explore, DirectorFixture.combatPitch]) == DirectorFixture.combatPitch,
      "\(timeline.summary)")
    #expect(timeline.state(at: 3.5) == "combat")
  }

  @Test("stop: fades out and stays silent; a state change starts music again")
  func stop() throws {
    let (left, timeline) = try run(
      rules: #"{ on: "quit", do: { stop: true, fade: 0.5 } }, { on: "fight", do: { state: "combat" } }"#,
      [.cue(1, "quit"), .cue(3, "fight")], seconds: 4)
    #expect(Listen.rms(Listen.window(left, 1.6, 2.9)) == 0, "\(timeline.summary)")
    #expect(
      Listen.loudest(left, 3.3, 3.9, among: [explore, DirectorFixture.combatPitch]) == DirectorFixture.combatPitch)
  }

  /// A fight of priority 5 the player's death stops (fade 1 s, from 1 s to 2 s), and the rules of
  /// priority 0 after it.
  static let stoppedFight =
    #"{ on: "fight", do: { state: "boss" } }, { on: "died", priority: 100, do: { stop: true, fade: 1 } }, "#
    + #"{ on: "restart", do: { state: "explore" } }, { on: "won", when: { state: "boss" }, do: { state: "explore" } }, "#
    + #"{ on: "back", priority: 100, do: { resume: true } }"#

  @Test(
    "stop while a change waits for its bar, past the stop's end or within its fade: the change never comes, nor its report"
  )
  func stopCallsOffAWaitingChange() throws {
    let states = #"boss: { music: "tense", priority: 5, transition: { seconds: 0, at: "bar" } },"#
    // The boss waits for explore's bar at 4 s; the death at 2.5 s stops the music by 3.5 s; the
    // level starts again at 5 s. "explore -> boss" used to be reported at 4 s, after the stop,
    // and the timeline had the boss playing over the restarted level.
    let (left, timeline) = try run(
      rules: Self.stoppedFight, [.cue(2.1, "fight"), .cue(2.5, "died"), .cue(5, "restart")], seconds: 7,
      states: states)
    #expect(timeline.summary.contains("the change to \"boss\" waiting for 4 s is called off"), "\(timeline.summary)")
    #expect(!timeline.states.contains { $0.state == "boss" }, "\(timeline.summary)")
    #expect(timeline.state(at: 6) == "explore", "\(timeline.summary)")
    #expect(Listen.rms(Listen.window(left, 3.6, 4.9)) < 0.001, "silence after the stop")
    #expect(
      Listen.loudest(left, 5.3, 6.8, among: [explore, DirectorFixture.combatPitch]) == explore, "\(timeline.summary)")

    // The bar at 4 s within the stop's fade (3.5 to 4.5 s): the boss's music began under the
    // fade and "explore -> boss" was reported at 4 s, after the stop had left every state. Now
    // explore fades out alone, and `resume` starts it again, the state heard.
    let (inFade, inFadeTimeline) = try run(
      rules: Self.stoppedFight, [.cue(2.1, "fight"), .cue(3.5, "died"), .cue(5.5, "back")], seconds: 7.5,
      states: states)
    #expect(
      inFadeTimeline.summary.contains("the change to \"boss\" waiting for 4 s is called off"),
      "\(inFadeTimeline.summary)")
    #expect(!inFadeTimeline.states.contains { $0.state == "boss" }, "\(inFadeTimeline.summary)")
    let fading = Listen.window(inFade, 4.02, 4.4)
    #expect(
      Listen.level(of: DirectorFixture.combatPitch, in: fading) < 0.1 * Listen.level(of: explore, in: fading),
      "\(inFadeTimeline.summary)")
    #expect(Listen.rms(Listen.window(inFade, 4.6, 5.4)) < 0.001, "silence after the stop")
    #expect(inFadeTimeline.state(at: 7) == "explore", "\(inFadeTimeline.summary)")
    #expect(
      Listen.loudest(inFade, 6, 7.4, among: [explore, DirectorFixture.combatPitch]) == explore,
      "\(inFadeTimeline.summary)")
  }

  @Test(
    "A stinger on the beat of music started from silence: with the music's first beat, its report and duck on that frame"
  )
  func stingerOnTheBeatFromSilence() throws {
    // The music stopped, then a fight starts its music at once with a hit on the beat: the
    // music's first frame is on its beat. The director reckoned where the music was as if it
    // had played since the last frame mixed (a director's lead, 21 ms offline, more live): the
    // beat after that, 0.5 s later, for the hit, and its duck and report 21 ms before the mixer
    // played it, and live and offline apart.
    func level(hitVolume: Double) throws -> (left: [Float], timeline: CueTimeline) {
      try run(
        rules: #"{ on: "died", do: { stop: true, fade: 0.2 } }, "#
          + #"{ on: "fight", do: [ { state: "battle" }, { stinger: "hit", at: "beat", volume: \#(hitVolume), duck: -12 } ] }"#,
        [.cue(0.5, "died"), .cue(1.37, "fight")], seconds: 2.5,
        states: #"battle: { music: "tense", transition: { seconds: 0, at: "beat" } },"#)
    }
    let (left, timeline) = try level(hitVolume: 1)
    let (quiet, _) = try level(hitVolume: 0.0001)
    let onset = try #require(left.indices.first { $0 > 48_000 && abs(left[$0] - quiet[$0]) > 1e-6 }, "the hit is heard")
    let reported = try #require(timeline.stingers.first?.at, "\(timeline.summary)")
    #expect(
      abs(reported * 48_000 - Double(onset)) <= 1,
      "the hit heard from frame \(onset) (\(Double(onset) / 48_000) s), reported at \(reported) s: \(timeline.summary)")
    let musicStart = try #require(Listen.firstSound(quiet, after: 1.0))
    #expect(abs(onset - musicStart) <= 1, "the hit at \(onset), the music's first beat at \(musicStart)")
  }

  @Test(
    "A stinger on the beat during a tempo ramp ducks the music from the hit's first frame, each frame on the duck's line"
  )
  func stingerDuckStartsWithTheHit() throws {
    // The duck was the director's envelope, started on the director's step after the beat it
    // reckoned (during a ramp up to a millisecond from where the mixer found it, and live and
    // offline apart), and stepped every 5 ms. The mixer now starts it with the hit.
    func level(hit: String) throws -> [Float] {
      try run(
        rules: #"{ on: "hurry", do: { tempo: 1.4, ramp: 2 } }, { on: "hit", do: \#(hit) }"#,
        [.cue(0.5, "hurry"), .cue(1.23, "hit")], seconds: 2.5
      ).left
    }
    let heard = try level(
      hit: #"{ stinger: "hit", at: "beat", duck: { db: -12, attack: 0.1, hold: 0.3, release: 0.2 } }"#)
    let silentHit = try level(
      hit: #"{ stinger: "hit", at: "beat", volume: 0, duck: { db: -12, attack: 0.1, hold: 0.3, release: 0.2 } }"#)
    let undisturbed = try level(hit: #"{ stinger: "hit", at: "beat", volume: 0 }"#)
    let onset = try #require(heard.indices.first { $0 > 59_000 && abs(heard[$0] - silentHit[$0]) > 1e-6 }, "the hit")
    let ducked = try #require(
      silentHit.indices.first { $0 > 59_000 && abs(silentHit[$0] - undisturbed[$0]) > 1e-6 }, "the duck")
    // The duck's first frame is at gain 1: the music moves from the frame after it.
    #expect((1...3).contains(ducked - onset), "the hit from frame \(onset), the duck from frame \(ducked)")
    // Held: every frame exactly 12 dB down (the director's steps glided there).
    let depth = Float(pow(10, -12.0 / 20))
    let held = (onset + 4_800 + 10)..<(onset + 4_800 + 14_000)
    let worst = held.filter { abs(undisturbed[$0]) > 0.05 }.map { abs(silentHit[$0] / undisturbed[$0] - depth) }.max()
    #expect((worst ?? 1) < 1e-4, "held at \(String(describing: worst)) from the depth")
    // Mid-attack: half-way down, on its line.
    let midAttack = (onset + 2_390)..<(onset + 2_410)
    let mid = midAttack.filter { abs(undisturbed[$0]) > 0.05 }.map { silentHit[$0] / undisturbed[$0] }
    #expect(mid.allSatisfy { abs($0 - (1 + depth) / 2) < 2e-3 }, "mid-attack gains \(mid)")
  }

  @Test(
    "Two changes asked for during a stop's fade: the later one starts after the stop, and says it replaced the first")
  func secondChangeAfterTheStop() throws {
    let (left, timeline) = try run(
      rules: Self.stoppedFight, [.cue(1, "died"), .cue(1.3, "restart"), .cue(1.6, "fight")], seconds: 4,
      states: #"boss: { music: "tense", priority: 5, transition: { seconds: 0 } },"#)
    #expect(
      timeline.summary.contains("after the stop (2 s); the change to \"explore\" after the stop is called off"),
      "\(timeline.summary)")
    #expect(timeline.state(at: 3) == "boss", "\(timeline.summary)")
    #expect(
      Listen.loudest(left, 2.3, 3.8, among: [explore, DirectorFixture.combatPitch]) == DirectorFixture.combatPitch,
      "\(timeline.summary)")
  }

  @Test("stop: the rules see no state from it on; music asked for while it fades starts after it")
  func stopEndsTheState() throws {
    let states = #"boss: { music: "tense", priority: 5, transition: { seconds: 0 } },"#
    // The level starts again after the stop: the stopped fight neither outranks it nor is matched.
    // It used to: "state boss (priority 5) outranks the rule", and silence to the end.
    let (after, afterTimeline) = try run(
      rules: Self.stoppedFight, [.cue(0.5, "fight"), .cue(1, "died"), .cue(2.2, "won"), .cue(2.5, "restart")],
      seconds: 3.5, states: states)
    #expect(afterTimeline.events.map(\.outcome) == ["fired", "fired", "ignored", "fired"], "\(afterTimeline.summary)")
    #expect(afterTimeline.events[2].reason?.contains("the state is none") == true, "\(afterTimeline.summary)")
    #expect(Listen.rms(Listen.window(after, 2.05, 2.45)) == 0, "\(afterTimeline.summary)")
    #expect(
      Listen.loudest(after, 2.8, 3.4, among: [explore, DirectorFixture.combatPitch]) == explore,
      "\(afterTimeline.summary)")

    // Asked for while the stop fades: the stop ends as asked, and the new state starts from the
    // silence after it. It used to cancel the stop but not its fade: silence to the end.
    let (during, duringTimeline) = try run(
      rules: Self.stoppedFight, [.cue(0.5, "fight"), .cue(1, "died"), .cue(1.5, "restart")], seconds: 3.5,
      states: states)
    #expect(duringTimeline.summary.contains("cut to \"explore\" after the stop (2 s)"), "\(duringTimeline.summary)")
    #expect(
      Listen.loudest(during, 1.1, 1.4, among: [explore, DirectorFixture.combatPitch]) == DirectorFixture.combatPitch)
    #expect(Listen.rms(Listen.window(during, 1.1, 1.4)) < Listen.rms(Listen.window(during, 0.6, 0.9)))
    #expect(Listen.rms(Listen.window(during, 1.97, 1.99)) < 0.01, "\(duringTimeline.summary)")
    #expect(
      Listen.loudest(during, 2.2, 3.4, among: [explore, DirectorFixture.combatPitch]) == explore,
      "\(duringTimeline.summary)")
    #expect(Listen.rms(Listen.window(during, 3.0, 3.4)) > 0.1, "\(duringTimeline.summary)")
    #expect(duringTimeline.state(at: 2.5) == "explore")
  }

  @Test("resume while a stop fades: the state and its priority are the rules' again")
  func resumeCallsOffTheStop() throws {
    let (left, timeline) = try run(
      rules: Self.stoppedFight, [.cue(0.5, "fight"), .cue(1, "died"), .cue(1.5, "back"), .cue(2.5, "restart")],
      seconds: 3.5, states: #"boss: { music: "tense", priority: 5, transition: { seconds: 0 } },"#)
    #expect(timeline.events.map(\.outcome) == ["fired", "fired", "fired", "ignored"], "\(timeline.summary)")
    #expect(timeline.events[3].reason?.contains("outranks") == true, "\(timeline.summary)")
    // Said as what it did: not "already playing" (the music was fading out).
    #expect(timeline.summary.contains("resume: the stop is called off"), "\(timeline.summary)")
    #expect(
      Listen.loudest(left, 2.6, 3.4, among: [explore, DirectorFixture.combatPitch]) == DirectorFixture.combatPitch,
      "\(timeline.summary)")
    #expect(Listen.rms(Listen.window(left, 3.0, 3.4)) > 0.1, "\(timeline.summary)")
  }

  @Test("A state asked for again while its change waits for its bar: the report says it waits, not that it plays")
  func askedAgainWhileItWaits() throws {
    let (_, timeline) = try run(
      rules: #"{ on: "fight", do: { crossfade: "combat", seconds: 0, at: "bar" } }"#,
      [.cue(2.1, "fight"), .cue(2.5, "fight"), .cue(5, "fight")], seconds: 6)
    #expect(timeline.summary.contains("stay in \"combat\": the change to it waits for 4 s"), "\(timeline.summary)")
    #expect(timeline.summary.contains("stay in \"combat\" (already playing)"), "\(timeline.summary)")
  }

  @Test("skip while a change waits for its bar: nothing is skipped, and the change comes on its bar")
  func skipWhileAChangeWaits() throws {
    // A queue that does not repeat (as a bridge's): a skip in it ended it before it began.
    let (left, timeline) = try run(
      rules:
        #"{ on: "fight", do: { crossfade: "once", seconds: 0, at: "bar" } }, { on: "next", do: { skip: "next" } }"#,
      [.cue(2.1, "fight"), .cue(2.5, "next")], seconds: 6, states: #"once: { music: "tense", repeat: "none" },"#)
    #expect(
      timeline.summary.contains("skip next: the change to \"once\" waits for 4 s; nothing is skipped"),
      "\(timeline.summary)")
    #expect(
      Listen.loudest(left, 2.6, 3.9, among: [explore, DirectorFixture.combatPitch]) == explore, "\(timeline.summary)")
    #expect(
      Listen.loudest(left, 4.2, 5.8, among: [explore, DirectorFixture.combatPitch]) == DirectorFixture.combatPitch,
      "\(timeline.summary)")
  }

  @Test("skip previous: the item before within an item's first 3 s, else the item again; the report says which")
  func skipPrevious() throws {
    // A queue that does not repeat: explore, then combat. Back 4 s into combat starts combat
    // again; back 0.5 s into that goes to explore; back right away on explore, the first item,
    // starts it again.
    let (left, timeline) = try run(
      rules:
        #"{ on: "next", do: { skip: "next", seconds: 0.1 } }, { on: "back", do: { skip: "previous", seconds: 0.1 } }, { on: "go", do: { state: "both" } }"#,
      [.cue(0.5, "go"), .cue(1.5, "next"), .cue(5.5, "back"), .cue(6, "back"), .cue(7, "back")], seconds: 8,
      states: #"both: { music: "pair", repeat: "none" },"#)
    let pitches = [explore, DirectorFixture.combatPitch]
    #expect(Listen.loudest(left, 1.8, 5.4, among: pitches) == DirectorFixture.combatPitch, "\(timeline.summary)")
    #expect(Listen.loudest(left, 5.7, 5.9, among: pitches) == DirectorFixture.combatPitch, "\(timeline.summary)")
    #expect(Listen.loudest(left, 6.3, 7.9, among: pitches) == explore, "\(timeline.summary)")
    #expect(
      timeline.summary.contains(
        "skip previous; \"Combat\" starts again: it had played 4 s, and previous goes to the item before only within an item's first 3 s"
      ), "\(timeline.summary)")
    #expect(
      timeline.summary.contains("skip previous; \"Explore\" starts again: no item comes before it"),
      "\(timeline.summary)")
    #expect(timeline.summary.components(separatedBy: "starts again").count == 3, "\(timeline.summary)")
  }

  @Test(
    "While paused: the state heard asked for again stays, where it was; another state replaces a waiting change, and its report never comes"
  )
  func stateChangesWhilePaused() throws {
    let rules =
      #"{ on: "fight", do: { state: "boss" } }, { on: "calm", do: { state: "explore" } }, "#
      + #"{ on: "menu", do: { pause: true, fade: 0.1 } }, { on: "back", do: { resume: true, fade: 0.1 } }"#
    let states = #"boss: { music: "bossMusic", transition: { seconds: 0, at: "bar" } },"#
    // Explore asked for while it is paused: it used to be put on the player again, and the
    // resume started it from its start ("explore -> explore").
    let (_, same) = try run(
      rules: rules, [.cue(1, "menu"), .cue(1.5, "calm"), .cue(2, "back")], seconds: 3, states: states)
    #expect(same.summary.contains("stay in \"explore\" (paused: it goes on when the music resumes)"), "\(same.summary)")
    #expect(!same.summary.contains("\"explore\" -> \"explore\""), "\(same.summary)")
    // The boss waits for the bar at 4 s; the menu opens at 2.5 s; explore is asked for while
    // paused. The boss's held report came out after the resume: "explore -> boss" for music
    // never heard.
    let (_, replaced) = try run(
      rules: rules, [.cue(2.1, "fight"), .cue(2.5, "menu"), .cue(3, "calm"), .cue(3.5, "back")], seconds: 7,
      states: states)
    #expect(
      replaced.summary.contains("the change to \"boss\" waiting for its line is called off"), "\(replaced.summary)")
    #expect(!replaced.states.contains { $0.state == "boss" }, "\(replaced.summary)")
    #expect(replaced.state(at: 6.5) == "explore", "\(replaced.summary)")
  }

  @Test("releaseLoop while a change waits for its bar: the report names whose loop it ended")
  func releaseWhileAChangeWaits() throws {
    let (_, timeline) = try run(
      rules: #"{ on: "fight", do: { state: "boss" } }, { on: "release", do: { releaseLoop: true } }"#,
      [.cue(2.1, "fight"), .cue(2.5, "release")], seconds: 5,
      states: #"boss: { music: "bossMusic", transition: { seconds: 0, at: "bar" } },"#)
    #expect(
      timeline.summary.contains(
        "release the loop of \"Boss\", the music the change to \"boss\" brings at 4 s (the music heard until then loops on)"
      ),
      "\(timeline.summary)")
  }

  @Test("seek: jumps within the item")
  func seek() throws {
    let game = try DirectorFixture()
    // A piece whose second half has another pitch: a seek into it is heard.
    let first = ToneGenerator.sine(frequency: 220, amplitude: 0.4, seconds: 4, format: .stereo48000)
    let second = ToneGenerator.sine(frequency: 440, amplitude: 0.4, seconds: 4, format: .stereo48000)
    try VorbisEncoder.encode(samples: first + second, format: .stereo48000, tags: [], to: game.assets + "/explore.ogg")
    let (left, timeline) = try run(
      rules: #"{ on: "jump", do: { seek: 5, fade: 0.1 } }"#, [.cue(1, "jump")], seconds: 2, game: game)
    #expect(Listen.loudest(left, 0.3, 0.9, among: [220, 440]) == 220)
    #expect(Listen.loudest(left, 1.3, 1.9, among: [220, 440]) == 440, "\(timeline.summary)")
  }

  @Test("skip: the next item of the state's queue")
  func skip() throws {
    let (left, timeline) = try run(
      rules: #"{ on: "next", do: { skip: "next", seconds: 0.1 } }, { on: "go", do: { state: "both" } }"#,
      [.cue(0.5, "go"), .cue(2, "next")], seconds: 3, states: #"both: { music: "pair" },"#)
    #expect(
      Listen.loudest(left, 1.0, 1.9, among: [explore, DirectorFixture.combatPitch]) == explore, "\(timeline.summary)")
    #expect(
      Listen.loudest(left, 2.3, 2.9, among: [explore, DirectorFixture.combatPitch]) == DirectorFixture.combatPitch)
    #expect(!timeline.summary.contains("the only item"), "\(timeline.summary)")
    // A queue of one item: the skip starts it again, and says so.
    let (_, single) = try run(rules: #"{ on: "next", do: { skip: "next" } }"#, [.cue(1, "next")], seconds: 2)
    #expect(
      single.summary.contains("skip next; \"Explore\" is the only item of the queue: it starts again"),
      "\(single.summary)")
  }

  @Test("set: a parameter drives the volume through its curve, and the low-pass filter")
  func setParameter() throws {
    let game = try DirectorFixture()
    try DirectorFixture.tone(game.assets + "/bright.ogg", pitch: 8_000, seconds: 6, tags: [("TITLE", "Bright")])
    let text = """
      {
        start: "bright",
        assets: "assets",
        sources: { shine: { bundled: "bright.ogg" } },
        parameters: {
          danger: { drives: [ { target: "volume", curve: [[0, 1], [1, 0.25]] } ] },
          underwater: { drives: [ { target: "lowpass", curve: [[0, 1], [1, 0.05]] } ] },
        },
        states: { bright: { music: "shine", transition: { seconds: 0 } } },
        rules: [
          { on: "danger", do: { set: "danger", value: 1 } },
          { on: "dive", do: [ { set: "danger", value: 0 }, { set: "underwater", value: 1, ramp: 0.1 } ] },
        ],
      }
      """
    let (left, timeline) = try game.simulate(try game.sheet(text), [.cue(1, "danger"), .cue(2, "dive")], seconds: 3)
    let open = Listen.rms(Listen.window(left, 0.3, 0.9))
    let quiet = Listen.rms(Listen.window(left, 1.2, 1.9)) / open
    let muffled = Listen.rms(Listen.window(left, 2.3, 2.9)) / open
    #expect(abs(quiet - 0.25) < 0.02, "volume curve: \(quiet)\n\(timeline.summary)")
    #expect(muffled < 0.15, "low-pass: \(muffled)")
  }

  @Test(
    "A crossfade between states of different volumes: each music keeps its own state's volume, the outgoing never swells; a reload still moves the volume of the state that plays, up or down"
  )
  func stateVolumesAcrossACrossfade() throws {
    let game = try DirectorFixture()
    func cues(exploreVolume: Double, combatVolume: Double) -> String {
      """
      {
        start: "explore",
        \(DirectorFixture.sources)
        states: {
          explore: { music: "calm", volume: \(exploreVolume), transition: { seconds: 0 } },
          combat: { music: "tense", volume: \(combatVolume), transition: { seconds: 2, curve: "linear" } },
        },
        rules: [ { on: "fight", do: { state: "combat" } }, { on: "calm", do: { state: "explore" } } ],
      }
      """
    }
    let explore = DirectorFixture.explorePitch
    let combat = DirectorFixture.combatPitch
    // Each piece's level at volume 1 differs (levelling weighs pitches differently): measured
    // first, with both states at 1.
    func run(_ from: Double, _ to: Double) throws -> (levels: [Double], summary: String) {
      let (left, timeline) = try game.simulate(
        try game.sheet(cues(exploreVolume: from, combatVolume: to)), [.cue(1, "fight")], seconds: 4)
      return (
        [
          Listen.level(of: explore, in: Listen.window(left, 0.3, 0.9)),
          Listen.level(of: explore, in: Listen.window(left, 1.95, 2.05)),
          Listen.level(of: combat, in: Listen.window(left, 1.95, 2.05)),
          Listen.level(of: combat, in: Listen.window(left, 3.3, 3.9)),
        ], timeline.summary
      )
    }
    let reference = try run(1, 1).levels
    let combatOverExplore = reference[3] / reference[0]
    // Up: from 0.5 to 1 at 1 s; down: from 1 to 0.25. At each fade's middle (2 s) the outgoing
    // music is at half its own level before the fade, the incoming at half its own after it.
    for (from, to) in [(0.5, 1.0), (1.0, 0.25)] {
      let (levels, summary) = try run(from, to)
      let outgoing = levels[1] / levels[0]
      let incoming = levels[2] / levels[3]
      let volumes = levels[3] / levels[0] / combatOverExplore
      #expect(abs(outgoing - 0.5) < 0.03, "outgoing \(from) -> \(to): \(outgoing)\n\(summary)")
      #expect(abs(incoming - 0.5) < 0.03, "incoming \(from) -> \(to): \(incoming)")
      #expect(abs(volumes - to / from) < 0.05 * to / from, "volumes \(from) -> \(to): \(volumes)")
    }
    // A reload while combat (0.25) plays: to 1, louder than its queue was made at, then to 0.5.
    let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    _ = try game.sheet(cues(exploreVolume: 1, combatVolume: 0.25))
    let director = try Director(engine: engine, cueFile: game.cuePath, clocking: .pumped)
    var left = [Float]()
    var buffer = [Float](repeating: 0, count: 2 * 256)
    while left.count < 6 * 48_000 {
      let time = Double(left.count) / 48_000
      if (24_000..<24_256).contains(left.count) { director.post("fight") }
      if (3 * 48_000..<3 * 48_000 + 256).contains(left.count) {
        _ = try game.sheet(cues(exploreVolume: 1, combatVolume: 1))
        #expect(director.reload().allSatisfy { $0.severity != .error })
      }
      if (4 * 48_000 + 24_000..<4 * 48_000 + 24_256).contains(left.count) {
        _ = try game.sheet(cues(exploreVolume: 1, combatVolume: 0.5))
        #expect(director.reload().allSatisfy { $0.severity != .error })
      }
      director.advance(toAudioTime: time)
      buffer.withUnsafeMutableBufferPointer { engine.render(into: $0.baseAddress!, frameCount: 256) }
      for frame in 0..<256 { left.append(buffer[2 * frame]) }
    }
    director.shutdown()
    // The combat music at 0.25, then 1 (four times as loud), then 0.5 (twice).
    let levels = [(2.6, 2.95), (3.6, 4.4), (5.0, 5.9)].map {
      Listen.level(of: combat, in: Listen.window(left, $0.0, $0.1))
    }
    #expect(abs(levels[1] / levels[0] - 4) < 0.2 && abs(levels[2] / levels[0] - 2) < 0.1, "\(levels)")
  }

  @Test(
    "A reload that moves the volume of the state playing: through the next crossfade the outgoing music keeps the reloaded level, the incoming plays at its own"
  )
  func reloadedVolumeAcrossAChange() throws {
    let game = try DirectorFixture()
    func cues(exploreVolume: Double) -> String {
      """
      {
        start: "explore",
        \(DirectorFixture.sources)
        states: {
          explore: { music: "calm", volume: \(exploreVolume), transition: { seconds: 0 } },
          combat: { music: "tense", transition: { seconds: 2, curve: "linear" } },
        },
        rules: [ { on: "fight", do: { state: "combat" } } ],
      }
      """
    }
    // Explore at 1; the reload at 1 s sets it to 0.5 (over 0.25 s); "fight" at 2 s crossfades
    // linearly to combat until 4 s. With no reload, the same levels at volume 1.
    func run(reloading: Bool) throws -> [Double] {
      let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
      _ = try game.sheet(cues(exploreVolume: 1))
      let director = try Director(engine: engine, cueFile: game.cuePath, clocking: .pumped)
      var left = [Float]()
      var buffer = [Float](repeating: 0, count: 2 * 256)
      while left.count < 5 * 48_000 {
        if reloading, (48_000..<48_256).contains(left.count) {
          _ = try game.sheet(cues(exploreVolume: 0.5))
          #expect(director.reload().allSatisfy { $0.severity != .error })
        }
        if (96_000..<96_256).contains(left.count) { director.post("fight") }
        director.advance(toAudioTime: Double(left.count) / 48_000)
        buffer.withUnsafeMutableBufferPointer { engine.render(into: $0.baseAddress!, frameCount: 256) }
        for frame in 0..<256 { left.append(buffer[2 * frame]) }
      }
      director.shutdown()
      return [
        Listen.level(of: DirectorFixture.explorePitch, in: Listen.window(left, 1.5, 1.9)),
        Listen.level(of: DirectorFixture.explorePitch, in: Listen.window(left, 2.95, 3.05)),
        Listen.level(of: DirectorFixture.combatPitch, in: Listen.window(left, 2.95, 3.05)),
        Listen.level(of: DirectorFixture.combatPitch, in: Listen.window(left, 4.3, 4.9)),
      ]
    }
    let plain = try run(reloading: false)
    let reloaded = try run(reloading: true)
    let ratios = zip(reloaded, plain).map { $0 / $1 }
    // Explore at half before the change and through it (half of the fade's half in the middle);
    // combat at its own level, in the fade's middle too.
    #expect(abs(ratios[0] - 0.5) < 0.02, "explore after the reload: \(ratios)")
    #expect(abs(ratios[1] - 0.5) < 0.03, "explore in the fade's middle: \(ratios)")
    #expect(abs(ratios[2] - 1) < 0.03, "combat in the fade's middle: \(ratios)")
    #expect(abs(ratios[3] - 1) < 0.02, "combat after: \(ratios)")
  }

  @Test(
    "A crossfade between states of different rates: the outgoing music keeps its own speed and pitch, while the change waits for its bar and through the fade; the incoming plays at its own from its first frame"
  )
  func stateRatesAcrossACrossfade() throws {
    let game = try DirectorFixture()
    let text = """
      {
        start: "explore",
        \(DirectorFixture.sources)
        states: {
          explore: { music: "calm", transition: { seconds: 0 } },
          combat: { music: "tense", rate: 1.25, transition: { seconds: 2, curve: "linear", at: "bar" } },
        },
        rules: [ { on: "fight", do: { state: "combat" } } ],
      }
      """
    let (left, timeline) = try game.simulate(try game.sheet(text), [.cue(0.9, "fight")], seconds: 6)
    let explore = DirectorFixture.explorePitch
    let combat = DirectorFixture.combatPitch
    let landing = try #require(timeline.states.first { $0.state == "combat" }?.from, "\(timeline.summary)")
    #expect(landing > 0.95, "the change should wait for its bar: \(timeline.summary)")
    let before = Listen.level(of: explore, in: Listen.window(left, 0.3, 0.8))
    // Waiting for the bar, then the fade's middle: explore at its own pitch, at full and at half
    // its level (a linear fade).
    let waiting = Listen.level(of: explore, in: Listen.window(left, landing - 0.1, landing - 0.02)) / before
    let middle = Listen.level(of: explore, in: Listen.window(left, landing + 0.95, landing + 1.05)) / before
    let shifted = Listen.level(of: explore * 1.25, in: Listen.window(left, landing - 0.1, landing + 1.05)) / before
    #expect(abs(waiting - 1) < 0.05, "explore while the change waits: \(waiting)\n\(timeline.summary)")
    #expect(abs(middle - 0.5) < 0.05, "explore at mid-fade: \(middle)")
    #expect(shifted < 0.05, "explore sped up on its way out: \(shifted)")
    // The combat music: 1.25 times its written pitch from its start, never its written one.
    let after = Listen.window(left, landing + 2.3, landing + 2.9)
    let fast = Listen.level(of: combat * 1.25, in: after)
    let written = Listen.level(of: combat, in: after)
    let firstHeard = Listen.level(of: combat * 1.25, in: Listen.window(left, landing + 0.3, landing + 0.5))
    #expect(written < 0.05 * fast, "combat at its written pitch: \(written) against \(fast)")
    #expect(firstHeard > 0.1 * fast, "combat not at its own rate from the start: \(firstHeard) against \(fast)")
  }

  @Test("A crossfade at the end asked for when the item has less left than the fade begins now, and says so")
  func endTooCloseIsSaid() throws {
    let game = try DirectorFixture()
    try DirectorFixture.tone(game.assets + "/short.ogg", pitch: 440, seconds: 4, tags: [])
    let text = """
      {
        start: "a",
        assets: "assets",
        sources: { short: { bundled: "short.ogg" }, calm: { bundled: "explore.ogg" } },
        states: { a: { music: "short", repeat: "none" }, b: { music: "calm" } },
        rules: [ { on: "go", do: { crossfade: "b", seconds: 3, at: "end" } } ],
      }
      """
    let (_, timeline) = try game.simulate(try game.sheet(text), [.cue(3, "go")], seconds: 5)
    #expect(
      timeline.summary.contains("\"short.ogg\" ends in 1 s, less than the crossfade: it begins now"),
      "\(timeline.summary)")
  }

  @Test("releaseLoop, then a crossfade at the end: it waits for the item's end, after the outro, not the loop's")
  func releasedLoopEndsAtTheItemsEnd() throws {
    let game = try DirectorFixture()
    // 3 s: 1 s intro, a loop from 1 s to 2 s, 1 s outro.
    try DirectorFixture.tone(
      game.assets + "/boss.ogg", pitch: 440, seconds: 3, tags: [("LOOPSTART", "48000"), ("LOOPLENGTH", "48000")])
    let text = """
      {
        start: "boss",
        assets: "assets",
        sources: { boss: { bundled: "boss.ogg" }, calm: { bundled: "explore.ogg" } },
        states: { boss: { music: "boss", repeat: "none" }, explore: { music: "calm" } },
        rules: [ { on: "defeated", do: [{ releaseLoop: true }, { crossfade: "explore", at: "end", seconds: 1 }] } ],
      }
      """
    // Released at 4.3 s, in the pass from 4 s to 5 s: the outro plays from 5 s to 6 s, and the
    // crossfade lands so that it ends with it.
    let (left, timeline) = try game.simulate(try game.sheet(text), [.cue(4.3, "defeated")], seconds: 7)
    let explore = Listen.level(of: DirectorFixture.explorePitch, in: Listen.window(left, 4.5, 4.95))
    let boss = Listen.level(of: 440, in: Listen.window(left, 4.5, 4.95))
    #expect(explore < 0.02, "explore before the outro: \(explore)\n\(timeline.summary)")
    #expect(boss > 0.2, "the boss music at full before its outro: \(boss)")
    #expect(Listen.loudest(left, 6.2, 6.9, among: [440, DirectorFixture.explorePitch]) == DirectorFixture.explorePitch)
  }

  @Test(
    "releaseLoop too near its seam, then a crossfade at the end: the loop plays once more, and the change comes at the end of the outro after it, as reported"
  )
  func releasedNearItsSeamEndsAfterOneMorePass() throws {
    let game = try DirectorFixture()
    // 3 s: 1 s intro, a loop from 1 s to 2 s (440 Hz), 1 s outro at 550 Hz.
    let loop = ToneGenerator.sine(frequency: 440, amplitude: 0.4, seconds: 2, format: .stereo48000)
    let outro = ToneGenerator.sine(frequency: 550, amplitude: 0.4, seconds: 1, format: .stereo48000)
    try VorbisEncoder.encode(
      samples: loop + outro, format: .stereo48000, tags: [("LOOPSTART", "48000"), ("LOOPLENGTH", "48000")],
      to: game.assets + "/boss.ogg")
    let text = """
      {
        start: "boss",
        assets: "assets",
        loudness: "off",
        sources: { boss: { bundled: "boss.ogg" }, calm: { bundled: "explore.ogg" } },
        states: { boss: { music: "boss", repeat: "none" }, explore: { music: "calm" } },
        rules: [ { on: "defeated", do: [{ releaseLoop: true }, { crossfade: "explore", at: "end", seconds: 0.5 }] } ],
      }
      """
    // Released at 4.9 s, 0.1 s before the seam that ends the pass from 4 s: within the reach the
    // decode thread has read past (0.17 s), so the loop plays 5 s to 6 s once more, the outro
    // 6 s to 7 s, and the crossfade ends with it. It used to come at 5.5 s, into the loop's last
    // pass: the outro was never heard.
    let (left, timeline) = try game.simulate(try game.sheet(text), [.cue(4.9, "defeated")], seconds: 8)
    #expect(Listen.level(of: 440, in: Listen.window(left, 5.1, 5.9)) > 0.3, "\(timeline.summary)")
    #expect(Listen.level(of: DirectorFixture.explorePitch, in: Listen.window(left, 5.1, 6.4)) < 0.01)
    #expect(Listen.level(of: 550, in: Listen.window(left, 6.05, 6.45)) > 0.3, "the outro, whole")
    #expect(Listen.level(of: DirectorFixture.explorePitch, in: Listen.window(left, 7.05, 7.9)) > 0.2)
    #expect(timeline.summary.contains("at item's end (6.5 s)"), "\(timeline.summary)")
  }

  @Test("releaseLoop: the loop ends and the outro plays")
  func releaseLoop() throws {
    let game = try DirectorFixture()
    // 3 s: 1 s intro, a loop from 1 s to 2 s, 1 s outro.
    try DirectorFixture.tone(
      game.assets + "/looped.ogg", pitch: 220, seconds: 3, tags: [("LOOPSTART", "48000"), ("LOOPLENGTH", "48000")])
    let text = """
      {
        start: "loop",
        assets: "assets",
        sources: { looped: { bundled: "looped.ogg" } },
        states: { loop: { music: "looped", repeat: "none" } },
        rules: [ { on: "done", do: { releaseLoop: true } } ],
      }
      """
    let held = try game.simulate(try game.sheet(text), [], seconds: 8)
    #expect(Listen.rms(Listen.window(held.left, 7, 8)) > 0.1, "without a release it loops on")
    let released = try game.simulate(try game.sheet(text), [.cue(4, "done")], seconds: 8)
    #expect(Listen.rms(Listen.window(released.left, 6.5, 8)) == 0, "\(released.timeline.summary)")
  }
}

@Suite("The director: the player's songs, and bundled music when they are off limits")
struct DirectorLibraryTests {
  /// A library with one user song (330 Hz, genre Rock) in `game`'s folder, answered `status`.
  /// The player's library, their answer `status`, holding one song ("My Song", a 330 Hz tone of
  /// 10 s), or what `songs` writes into the folder it is given.
  func library(
    _ game: DirectorFixture, status: AuthorizationStatus, songs: ((String) throws -> Void)? = nil
  ) throws -> MediaLibrary {
    let music = game.directory.file("Music")
    try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
    if let songs {
      try songs(music)
    } else {
      try DirectorFixture.tone(
        music + "/song.ogg", pitch: DirectorFixture.userPitch, seconds: 10,
        tags: [("TITLE", "My Song"), ("ARTIST", "Me"), ("GENRE", "Rock")])
    }
    var configuration = MediaLibrary.Configuration.sandboxed(
      applicationID: "director-tests", root: game.directory.path, music: music)
    if status == .restricted {
      configuration.environment["LEITMOTIF_LIBRARY_ACCESS"] = "restricted"
    } else if status != .notDetermined {
      try LibraryAccessStore(configuration: configuration).remember(status, for: "director-tests")
    }
    let library = MediaLibrary(configuration: configuration)
    if status == .authorized { _ = try library.scan() }
    return library
  }

  func cues(query: String = #"{ genre: "rock" }"#) -> String {
    """
    {
      start: "explore",
    \(DirectorFixture.sources.replacingOccurrences(of: "sources: {", with: "sources: {\n    mine: { library: \(query), fallback: \"calm\" },"))
      states: { explore: { music: "mine", transition: { seconds: 0 } } },
    }
    """
  }

  func run(status: AuthorizationStatus, query: String = #"{ genre: "rock" }"#) throws -> (
    left: [Float], timeline: CueTimeline
  ) {
    let game = try DirectorFixture()
    var options = CueSimulation.Options()
    options.library = try library(game, status: status)
    return try game.simulate(try game.sheet(cues(query: query)), [], seconds: 1.5, options: options)
  }

  let pitches = [DirectorFixture.userPitch, DirectorFixture.explorePitch]

  @Test("With consent the player's song plays, and the timeline says it is theirs")
  func authorized() throws {
    let (left, timeline) = try run(status: .authorized)
    #expect(Listen.loudest(left, 0.2, 1.4, among: pitches) == DirectorFixture.userPitch, "\(timeline.summary)")
    #expect(timeline.items.first?.userMusic == true)
    #expect(timeline.items.first?.title == "My Song")
  }

  @Test("A library source selects the player's songs by their MOOD tag, as a bundled source does")
  func moodSelectsPlayersSongs() throws {
    let game = try DirectorFixture()
    var options = CueSimulation.Options()
    options.library = try library(game, status: .authorized) { music in
      try DirectorFixture.tone(
        music + "/a-tense.ogg", pitch: DirectorFixture.combatPitch, seconds: 10,
        tags: [("TITLE", "Tense Song"), ("MOOD", "Tense")])
      try DirectorFixture.tone(
        music + "/b-calm.ogg", pitch: DirectorFixture.userPitch, seconds: 10,
        tags: [("TITLE", "Calm Song"), ("MOOD", "Calm")])
    }
    let (left, timeline) = try game.simulate(
      try game.sheet(cues(query: #"{ mood: "calm" }"#)), [], seconds: 1.5, options: options)
    let pitches = [DirectorFixture.userPitch, DirectorFixture.combatPitch, DirectorFixture.explorePitch]
    #expect(Listen.loudest(left, 0.2, 1.4, among: pitches) == DirectorFixture.userPitch, "\(timeline.summary)")
    #expect(timeline.items.map(\.title) == ["Calm Song"], "\(timeline.summary)")
  }

  @Test(
    "Denied, restricted or not asked: bundled music from the first sample, and the reason",
    arguments: [AuthorizationStatus.denied, .restricted, .notDetermined])
  func refused(status: AuthorizationStatus) throws {
    let (left, timeline) = try run(status: status)
    #expect(Listen.loudest(left, 0.05, 1.4, among: pitches) == DirectorFixture.explorePitch, "\(timeline.summary)")
    #expect(Listen.rms(Listen.window(left, 0.01, 0.05)) > 0.1, "no gap before the fallback")
    let reason = try #require(timeline.lines.first { $0.contains("gives nothing") }, "\(timeline.summary)")
    let word = status == .restricted ? "restricted" : status == .denied ? "denied" : "not been granted"
    #expect(reason.contains(word), "\(reason)")
    #expect(reason.contains("playing \"calm\" instead"))
    #expect(timeline.items.first?.userMusic == false)
  }

  @Test(
    "A director made from a sheet (no cue file watched) hears the player withdraw consent: no song of theirs is opened after",
    .hangGuard)
  func withdrawnWithoutWatching() throws {
    let game = try DirectorFixture()
    let library = try library(game, status: .authorized)
    let text = cues().replacingOccurrences(
      of: #"states: { explore: { music: "mine", transition: { seconds: 0 } } },"#,
      with: #"""
        states: { explore: { music: "calm", transition: { seconds: 0 } }, road: { music: "mine", transition: { seconds: 0 } } },
        rules: [ { on: "drive", do: { state: "road" } } ],
        """#)
    let engine = try AudioEngine(output: .defaultDevice)
    defer { engine.shutdown() }
    let director = Director(engine: engine, sheet: try game.sheet(text), library: library)
    let reports = Mutex<[String]>([])
    _ = director.addObserver { report in reports.withLock { $0.append(report.description) } }
    director.start()
    let configuration = MediaLibrary.Configuration.sandboxed(
      applicationID: "director-tests", root: game.directory.path, music: game.directory.file("Music"))
    try LibraryAccessStore(configuration: configuration).remember(.denied, for: "director-tests")
    #expect(library.authorizationStatus == .denied)
    // The consent is polled twice a second; on a loaded machine re-resolving takes longer.
    #expect(
      EngineHarness.wait(seconds: 10) { director.unavailableReason(ofSource: "mine")?.contains("denied") == true },
      "the director heard the no")
    director.post("drive")
    usleep(500_000)
    director.waitForReports()
    director.shutdown()
    let lines = reports.withLock { $0 }.joined(separator: "\n")
    #expect(!lines.contains("(user song)"), "\(lines)")
    #expect(lines.contains("denied"), "\(lines)")
  }

  @Test(
    "Consent withdrawn while the player's song plays: it stops now, the state's fallback takes over, no song of theirs follows",
    .hangGuard)
  func withdrawnWhilePlaying() throws {
    let game = try DirectorFixture()
    let library = try library(game, status: .authorized)
    let engine = try AudioEngine(output: .defaultDevice)
    defer { engine.shutdown() }
    let director = Director(engine: engine, sheet: try game.sheet(cues()), library: library)
    let reports = Mutex<[String]>([])
    _ = director.addObserver { report in reports.withLock { $0.append(report.description) } }
    director.start()
    #expect(
      EngineHarness.wait(seconds: 10) { director.nowPlaying?.isUserMusic == true }, "the player's song plays first")
    let configuration = MediaLibrary.Configuration.sandboxed(
      applicationID: "director-tests", root: game.directory.path, music: game.directory.file("Music"))
    try LibraryAccessStore(configuration: configuration).remember(.denied, for: "director-tests")
    // Polled twice a second; then a one-second crossfade to the fallback. Their 10 s song went
    // on to its end, and started again, before.
    #expect(
      EngineHarness.wait(seconds: 10) {
        director.nowPlaying.map { !$0.isUserMusic && $0.item.assetURL.lastPathComponent == "explore.ogg" } == true
      },
      "the fallback plays: \(String(describing: director.nowPlaying))")
    director.waitForReports()
    director.shutdown()
    let lines = reports.withLock { $0 }.joined(separator: "\n")
    #expect(lines.contains("the player's songs stop (access to their music library is denied)"), "\(lines)")
    let afterStop = lines.components(separatedBy: "the player's songs stop").last ?? ""
    #expect(!afterStop.contains("(user song)"), "\(lines)")
  }

  @Test("A query that finds nothing falls back too")
  func emptyQuery() throws {
    let (left, timeline) = try run(status: .authorized, query: #"{ genre: "polka" }"#)
    #expect(Listen.loudest(left, 0.2, 1.4, among: pitches) == DirectorFixture.explorePitch)
    #expect(timeline.lines.contains { $0.contains("the query finds no songs") }, "\(timeline.summary)")
  }

  @Test("A named playlist of the player's, and the player's picks, are sources too")
  func playlistAndPicks() throws {
    let game = try DirectorFixture()
    let library = try library(game, status: .authorized)
    try "#EXTM3U\nsong.ogg\n".write(
      toFile: game.directory.file("Music/Road Trip.m3u"), atomically: true, encoding: .utf8)
    _ = try library.scan()
    let pitches = [DirectorFixture.userPitch, DirectorFixture.explorePitch]
    for source in [#"{ playlist: "road trip", fallback: "calm" }"#, #"{ picks: true, fallback: "calm" }"#] {
      let text = cues().replacingOccurrences(of: #"{ library: { genre: "rock" }, fallback: "calm" }"#, with: source)
      var options = CueSimulation.Options()
      options.library = library
      let picked = try library.items(matching: .songs())
      options.picks = MediaItemCollection(items: picked)
      let (left, timeline) = try game.simulate(try game.sheet(text), [], seconds: 1, options: options)
      #expect(
        Listen.loudest(left, 0.2, 0.9, among: pitches) == DirectorFixture.userPitch, "\(source)\n\(timeline.summary)")
      // Without picks (or with the playlist gone) the bundled music plays.
      options.picks = nil
      let empty = text.replacingOccurrences(of: "road trip", with: "no such list")
      let (fallback, _) = try game.simulate(try game.sheet(empty), [], seconds: 1, options: options)
      #expect(Listen.loudest(fallback, 0.2, 0.9, among: pitches) == DirectorFixture.explorePitch, "\(source)")
    }
  }

  @Test("Interleaved: N user songs, then one bundled track")
  func interleave() throws {
    let game = try DirectorFixture()
    let library = try library(game, status: .authorized)
    let music = game.directory.file("Music")
    for index in 2...4 {
      try DirectorFixture.tone(
        music + "/song\(index).ogg", pitch: DirectorFixture.userPitch, seconds: 2,
        tags: [("TITLE", "Song \(index)"), ("GENRE", "Rock")])
    }
    _ = try library.scan()
    let text = cues().replacingOccurrences(
      of: #"explore: { music: "mine", transition: { seconds: 0 } }"#,
      with:
        #"explore: { music: { user: "mine", bundled: "calm", mix: "interleave", ratio: 2 }, transition: { seconds: 0 } }"#
    )
    let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    let director = Director(engine: engine, sheet: try game.sheet(text), library: library, clocking: .pumped)
    director.start(at: 0, state: nil)
    let kinds = director.player.queue.map { director.nowPlayingOrigin($0) }
    #expect(kinds == ["mine", "mine", "calm", "mine", "mine", "calm"], "\(director.player.queue.map(\.title))")
  }

  @Test(
    "Interleaved with a bundled piece that has loop points: it plays through once and the player's songs come back; their own loop tags are not followed"
  )
  func interleaveAroundALoop() throws {
    let game = try DirectorFixture()
    let library = try library(game, status: .authorized)
    let music = game.directory.file("Music")
    // The player's songs: 1.5 s, one with loop tags of its own (a game soundtrack in their library).
    for index in 1...2 {
      try DirectorFixture.tone(
        music + "/chip\(index).ogg", pitch: DirectorFixture.userPitch, seconds: 1.5,
        tags: [("TITLE", "Chip \(index)"), ("GENRE", "Chip")]
          + (index == 1 ? [("LOOPSTART", "0"), ("LOOPLENGTH", "48000")] : []))
    }
    _ = try library.scan()
    // The game's piece: 2 s with a 1 s loop in the middle.
    try DirectorFixture.tone(
      game.directory.file("assets/loopy.ogg"), pitch: DirectorFixture.explorePitch, seconds: 2,
      tags: [("TITLE", "Loopy"), ("LOOPSTART", "24000"), ("LOOPLENGTH", "48000")])
    let text = """
      {
        start: "explore",
        assets: "assets",
        sources: { mine: { library: { genre: "chip" } }, loopy: { bundled: "loopy.ogg" } },
        states: {
          explore: {
            music: { user: "mine", bundled: "loopy", mix: "interleave", ratio: 1 },
            between: "gapless", transition: { seconds: 0 },
          },
        },
      }
      """
    var options = CueSimulation.Options()
    options.library = library
    let (left, timeline) = try game.simulate(try game.sheet(text), [], seconds: 6.5, options: options)
    // Chip 1 (0-1.5 s, its loop not followed), Loopy once (1.5-3.5 s), Chip 2 (3.5-5 s), Loopy.
    // Looped until released, Loopy held the rotation from 1.5 s on for good; Chip 1 looped.
    let pitches = [DirectorFixture.userPitch, DirectorFixture.explorePitch]
    #expect(Listen.loudest(left, 0.2, 1.3, among: pitches) == DirectorFixture.userPitch, "\(timeline.summary)")
    #expect(Listen.loudest(left, 1.7, 3.3, among: pitches) == DirectorFixture.explorePitch, "\(timeline.summary)")
    #expect(Listen.loudest(left, 3.7, 4.8, among: pitches) == DirectorFixture.userPitch, "\(timeline.summary)")
    #expect(Listen.loudest(left, 5.2, 6.3, among: pitches) == DirectorFixture.explorePitch, "\(timeline.summary)")
  }

  @Test(
    "A player's song with a BPM tag whose beats start after 0: its grid starts where the analysis heard the first beat"
  )
  func taggedSongGridFromAnalysis() throws {
    let game = try DirectorFixture()
    let library = try library(game, status: .authorized)
    // 120 BPM, the first beat at 0.3 s, tagged TBPM 120 as DJ software writes it.
    let song = RhythmSynthesizer.song(
      bpm: 120, rate: 48_000, style: .rock, seconds: 12, leadIn: 0.3, pickup: false, harmony: true, seed: 7)
    try VorbisEncoder.encode(
      samples: song.samples, format: .stereo48000, tags: [("TITLE", "Tagged"), ("GENRE", "Beat"), ("BPM", "120")],
      to: game.directory.file("Music/tagged.ogg"))
    _ = try library.scan()
    let item = try #require(try library.items(matching: MediaQuery.songs()).first { $0.title == "Tagged" })
    let first = try #require(item.firstBeatSeconds, "the scan analysed the song")
    let text = """
      { start: "explore", assets: "assets",
        sources: { mine: { library: { genre: "beat" } } },
        states: { explore: { music: "mine", transition: { seconds: 0 } } } }
      """
    let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    let director = Director(engine: engine, sheet: try game.sheet(text), library: library, clocking: .pumped)
    let log = BeatLog()
    director.addBeatObserver { log.add($0) }
    var buffer = [Float](repeating: 0, count: 2 * 256)
    var frame = 0
    while frame < 3 * 48_000 {
      director.advance(toAudioTime: Double(frame) / 48_000)
      buffer.withUnsafeMutableBufferPointer { engine.render(into: $0.baseAddress!, frameCount: 256) }
      frame += 256
    }
    let beats = log.all.map(\.seconds)
    // On the song's beats (0.3, 0.8, ...), within the analysis's accuracy; anchored at 0 they
    // fell 0.3 s early, between two beats.
    #expect(beats.count >= 4, "\(beats)")
    for beat in beats {
      let distance = abs((beat - 0.3).truncatingRemainder(dividingBy: 0.5))
      #expect(min(distance, 0.5 - distance) < 0.02, "a beat at \(beat) s (first beat heard at \(first) s): \(beats)")
    }
  }

  @Test(
    "A player's song with silence around its sound plays from where its sound begins to where it ends: no dead air between its repeats"
  )
  func silenceAroundASong() throws {
    let game = try DirectorFixture()
    let library = try library(game, status: .authorized)
    // 2 s of silence, 2 s of tone, 3 s of silence (a hidden intro and a gap before the end).
    let tone = ToneGenerator.sine(
      frequency: DirectorFixture.userPitch, amplitude: 0.4, seconds: 2, format: .stereo48000)
    var samples = [Float](repeating: 0, count: 2 * 48_000 * 7)
    for frame in 0..<(tone.count / 2) {
      samples[2 * (2 * 48_000 + frame)] = tone[2 * frame]
      samples[2 * (2 * 48_000 + frame) + 1] = tone[2 * frame]
    }
    try VorbisEncoder.encode(
      samples: samples, format: .stereo48000, tags: [("TITLE", "Hidden"), ("GENRE", "Quiet")],
      to: game.directory.file("Music/hidden.ogg"))
    _ = try library.scan()
    let item = try #require(try library.items(matching: MediaQuery.songs()).first { $0.title == "Hidden" })
    let start = try #require(item.soundStartSeconds, "the scan measured where the sound begins")
    let end = try #require(item.soundEndSeconds)
    // Vorbis spreads the tone's edges over a few milliseconds.
    #expect(abs(start - 2) < 0.02 && abs(end - 4) < 0.03, "sound from \(start) to \(end) s")
    let text = """
      { start: "explore", assets: "assets",
        sources: { mine: { library: { genre: "quiet" } } },
        states: { explore: { music: "mine", between: "gapless", transition: { seconds: 0 } } } }
      """
    var options = CueSimulation.Options()
    options.library = library
    let (left, timeline) = try game.simulate(try game.sheet(text), [], seconds: 7, options: options)
    // Played from 1.98 s to 4.1 s of the file, again and again: the tone is heard from the start,
    // and heard again after each 2.12 s pass. Played whole, the first 2 s and 4 to 9 s were silent.
    let first = try #require(Listen.firstSound(left, after: 0), "\(timeline.summary)")
    #expect(Double(first) / 48_000 < 0.05, "the first sound at \(Double(first) / 48_000) s: \(timeline.summary)")
    for window in [(0.2, 1.8), (2.4, 3.9), (4.6, 6.1)] {
      let level = Listen.rms(Listen.window(left, window.0, window.1))
      #expect(level > 0.05, "\(window.0) to \(window.1) s: level \(level): \(timeline.summary)")
    }

    // "Restart the level" (`seek: "start"`) goes back to where the song starts, its sound: it
    // went back to 0 s of the file, 2 s of silence, and a change on its beat cued there waited
    // in them for the music's first beat, 2 s after the time it was reported for.
    let restart = """
      { start: "explore", assets: "assets", tempo: { bpm: 120 },
        sources: { mine: { library: { genre: "quiet" } }, calm: { bundled: "explore.ogg" } },
        states: { explore: { music: "mine", transition: { seconds: 0 } }, town: { music: "calm", transition: { seconds: 0, at: "beat" } } },
        rules: [ { on: "back", do: { seek: "start" } }, { on: "town", do: { state: "town" } } ] }
      """
    let (again, restarted) = try game.simulate(
      try game.sheet(restart), [.cue(1, "back"), .cue(1.6, "town")], seconds: 3, options: options)
    #expect(
      restarted.summary.contains("seek to 1.97") || restarted.summary.contains("seek to 1.98"), "\(restarted.summary)")
    #expect(Listen.rms(Listen.window(again, 1.05, 1.5)) > 0.05, "heard again after the seek: \(restarted.summary)")
    let town = try #require(restarted.states.last { $0.state == "town" }?.from, "\(restarted.summary)")
    #expect(town < 2.2, "the town on the beat at \(town) s: \(restarted.summary)")
    #expect(
      Listen.loudest(again, town + 0.1, town + 0.5, among: [DirectorFixture.explorePitch, DirectorFixture.userPitch])
        == DirectorFixture.explorePitch, "\(restarted.summary)")
  }

  @Test("A change at the item's end replaces the item's own transition into its repeat: no second copy before it")
  func changeAtTheEndReplacesTheRepeat() throws {
    let game = try DirectorFixture()
    // 6 s: 440 Hz for its first second, then 660 Hz; a repeat starting would be heard as 440.
    let format = PCMFormat.stereo48000
    let samples =
      ToneGenerator.sine(frequency: 440, amplitude: 0.4, seconds: 1, format: format)
      + ToneGenerator.sine(frequency: 660, amplitude: 0.4, seconds: 5, format: format)
    try VorbisEncoder.encode(
      samples: samples, format: format, tags: [("TITLE", "Two Parts")], to: game.assets + "/parts.ogg")
    let sheet = try game.sheet(
      """
      { start: "play", assets: "assets",
        sources: { parts: { bundled: "parts.ogg" }, tense: { bundled: "combat.ogg" } },
        states: { play: { music: "parts", between: { seconds: 3 } }, combat: { music: "tense" } },
        rules: [ { on: "done", do: { crossfade: "combat", seconds: 1, at: "end" } } ] }
      """)
    // "done" at 1.5 s: combat from 5 s, crossfading until the item ends at 6 s. The item's own
    // 3 s crossfade into its repeat would begin at 3 s.
    let (left, timeline) = try game.simulate(sheet, [.cue(1.5, "done")], seconds: 7)
    #expect(timeline.summary.contains("(5 s)"), "\(timeline.summary)")
    let repeatHeard = Listen.level(of: 440, in: Listen.window(left, 3.2, 5.8))
    #expect(repeatHeard < 0.01, "the item's repeat began under it: \(repeatHeard)\n\(timeline.summary)")
    #expect(Listen.level(of: 660, in: Listen.window(left, 3.2, 4.8)) > 0.2, "\(timeline.summary)")
    #expect(
      Listen.loudest(left, 6.1, 6.9, among: [440, 660, DirectorFixture.combatPitch]) == DirectorFixture.combatPitch,
      "\(timeline.summary)")
  }

  @Test(
    "An item the queue moves on to again after a skip back is reported when it is heard again, not when it was first")
  func nowPlayingAgainAfterASkipBack() throws {
    let game = try DirectorFixture()
    let sheet = try game.sheet(
      """
      { start: "play", assets: "assets",
        sources: { two: { bundled: ["explore.ogg", "combat.ogg"] } },
        states: { play: { music: "two", between: "gapless" } },
        rules: [ { on: "near.end", do: { seek: 11.9 } }, { on: "past.end", do: { seek: 86400 } }, { on: "back", do: { skip: "previous" } } ] }
      """)
    // Explore's end at about 1.1 s: combat; back to explore at 1.5 s; at 2.5 s a seek past its
    // end: combat again, at once. That report said 1.11 s, when combat was first heard.
    let (_, timeline) = try game.simulate(
      sheet, [.cue(1, "near.end"), .cue(1.5, "back"), .cue(2.5, "past.end")], seconds: 4)
    let combat = timeline.lines.filter { $0.contains(#"now playing "Combat""#) }
    let times = combat.compactMap { Double($0.trimmingCharacters(in: .whitespaces).split(separator: " ")[0]) }
    #expect(times.count == 2, "\(timeline.summary)")
    if times.count == 2 {
      #expect(abs(times[0] - 1.1) < 0.02 && abs(times[1] - 2.5) < 0.02, "\(times)\n\(timeline.summary)")
    }
  }

  @Test("A seek cued with a change while a stop fades moves where the new music starts, not the music fading out")
  func seekAfterTheStop() throws {
    let game = try DirectorFixture()
    let sheet = try game.sheet(
      """
      { start: "explore", assets: "assets",
        sources: { calm: { bundled: "explore.ogg" }, tense: { bundled: "combat.ogg" } },
        states: { explore: { music: "calm" }, combat: { music: "tense", transition: { seconds: 0 } } },
        rules: [
          { on: "died", do: { stop: true, fade: 1 } },
          { on: "restart", do: [{ state: "combat" }, { seek: 4 }] },
          { on: "restart.plain", do: { state: "combat" } },
        ] }
      """)
    func run(_ restart: String) throws -> (left: [Float], timeline: CueTimeline, firstBar: Int?) {
      let beats = Mutex<[MusicBeat]>([])
      var options = CueSimulation.Options()
      options.onBeat = { beat in beats.withLock { $0.append(beat) } }
      let (left, timeline) = try game.simulate(
        sheet, [.cue(1, "died"), .cue(1.5, restart)], seconds: 3, options: options)
      let firstBar = beats.withLock { $0 }.first { $0.item.title == "Combat" }?.bar
      return (left, timeline, firstBar)
    }
    // The stop fades the explore music out until 2 s; combat comes in from there, 4 s into its
    // file (120 BPM: bar 3), where the seek asked.
    let seeking = try run("restart")
    let plain = try run("restart.plain")
    #expect(seeking.firstBar == 3, "combat from 4 s: \(seeking.timeline.summary)")
    #expect(plain.firstBar == 1, "\(plain.timeline.summary)")
    // The music fading out is untouched by the seek (it jumped to 4 s of the explore music).
    let stopFrame = 2 * 48_000
    let untouched = seeking.left[..<stopFrame].elementsEqual(plain.left[..<stopFrame])
    #expect(untouched, "\(seeking.timeline.summary)")
    #expect(
      seeking.timeline.summary.contains("seek to 4 s: where the music after the stop starts"),
      "\(seeking.timeline.summary)")
  }

  @Test("The game's queue set while a stop fades plays after the stop, at full volume")
  func gameQueueAfterAStop() throws {
    let (game, library, song) = try librarySong()
    let text = """
      { start: "explore", assets: "assets", sources: { calm: { bundled: "explore.ogg" } },
        states: { explore: { music: "calm" } }, rules: [ { on: "died", do: { stop: true, fade: 1 } } ] }
      """
    let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    let director = Director(engine: engine, sheet: try game.sheet(text), library: library, clocking: .pumped)
    let left = DirectorFixture.renderPumped(director, engine, seconds: 4) { frame in
      if (48_000..<48_256).contains(frame) { director.post("died") }
      if (72_000..<72_256).contains(frame) {
        director.setQueue([song], transition: TransitionSpec(seconds: 0.5), repeatMode: .none)
      }
    }
    director.shutdown()
    #expect(director.player.nowPlayingItem == song)
    // The stop fades the state's music out until 2 s; the song fades in from there. It used to
    // call the stop off but not its fade: the song played on at a gain of 0.
    #expect(Listen.rms(Listen.window(left, 1.97, 1.99)) < 0.01)
    let full = Listen.rms(Listen.window(left, 0.5, 0.9))
    let after = Listen.rms(Listen.window(left, 3, 3.9))
    #expect(after > 0.5 * full, "the song at \(after) rms, the music before at \(full)")
  }

  /// The songs of `shuffledGameQueue`: five tones, three on album "X" and two on "Y".
  static let shuffleSongs: [(title: String, album: String, pitch: Double)] = [
    ("One", "X", 330), ("Two", "X", 440), ("Three", "X", 550), ("Four", "Y", 770), ("Five", "Y", 990),
  ]

  /// Plays the five songs as the game's queue, repeating, shuffled as `mode` says with the cue
  /// file's `seed`, for three laps and a bit; returns the songs in the order the player played
  /// them (by title) and which tone was heard in the middle of each (by title, nil: none).
  func playShuffled(_ mode: ShuffleMode, seed: Int) throws -> (played: [String], heard: [String?], given: [String]) {
    let game = try DirectorFixture()
    let library = try library(game, status: .authorized) { music in
      for (number, song) in Self.shuffleSongs.enumerated() {
        try DirectorFixture.tone(
          music + "/\(song.title.lowercased()).ogg", pitch: song.pitch, seconds: 1.5,
          tags: [("TITLE", song.title), ("ALBUM", song.album), ("TRACKNUMBER", "\(number + 1)")])
      }
    }
    let byTitle = Dictionary(
      uniqueKeysWithValues: try library.items(matching: MediaQuery.songs()).map { ($0.title ?? "", $0) })
    let given = Self.shuffleSongs.map(\.title)
    let songs = try given.map { try #require(byTitle[$0]) }
    let text = """
      { start: "explore", assets: "assets", seed: \(seed), sources: { calm: { bundled: "explore.ogg" } },
        states: { explore: { music: "calm", between: "gapless" } } }
      """
    let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    let director = Director(engine: engine, sheet: try game.sheet(text), library: library, clocking: .pumped)
    var played: [(title: String, frame: Int)] = []
    let left = DirectorFixture.renderPumped(director, engine, seconds: 25) { frame in
      if (24_000..<24_256).contains(frame) {
        director.setQueue(songs, transition: TransitionSpec(seconds: 0), repeatMode: .all, shuffleMode: mode)
      }
      guard frame > 24_256, let title = director.player.nowPlayingItem?.title, played.last?.title != title else {
        return
      }
      played.append((title, frame))
    }
    director.shutdown()
    let pitches = Self.shuffleSongs.map(\.pitch)
    let heard = played.indices.dropLast().map { index -> String? in
      let from = Double(played[index].frame) / 48_000
      let to = Double(played[index + 1].frame) / 48_000
      let pitch = Listen.loudest(left, from + 0.3, to - 0.3, among: pitches)
      return Self.shuffleSongs.first { $0.pitch == pitch }?.title
    }
    return (played.map(\.title), heard, given)
  }

  @Test("The game's queue shuffled: each lap a new order, never the last song twice; the songs heard as played")
  func shuffledGameQueue() throws {
    let (played, heard, given) = try playShuffled(.songs, seed: 3)
    // 7.5 s a lap from 0.5 s: three laps and the start of a fourth.
    try #require(played.count >= 15, "\(played)")
    let laps = (0..<3).map { Array(played[(5 * $0)..<(5 * $0 + 5)]) }
    for lap in laps { #expect(lap.sorted() == given.sorted(), "each song once a lap: \(played)") }
    #expect(laps[0] != given, "shuffled: \(played)")
    #expect(Set(laps).count > 1, "the laps differ: \(played)")
    #expect(laps[1][0] != laps[0][4] && laps[2][0] != laps[1][4], "no song twice in a row: \(played)")
    for (index, title) in heard.enumerated() { #expect(title == played[index], "heard \(heard), played \(played)") }
    // The same seed, the same music; another, another order.
    #expect(try playShuffled(.songs, seed: 3).played == played)
    #expect(try playShuffled(.songs, seed: 4).played != played)
    // Off: as given.
    #expect(Array(try playShuffled(.off, seed: 3).played.prefix(10)) == given + given)
  }

  @Test("The game's queue shuffled by album: each album's songs together, in their order")
  func shuffledGameQueueByAlbum() throws {
    let (played, heard, given) = try playShuffled(.albums, seed: 3)
    try #require(played.count >= 15, "\(played)")
    let x = Array(given.prefix(3))
    let y = Array(given.suffix(2))
    let laps = (0..<3).map { Array(played[(5 * $0)..<(5 * $0 + 5)]) }
    for lap in laps { #expect(lap == x + y || lap == y + x, "\(played)") }
    #expect(laps[0] == y + x, "the album the queue gives first did not start it (seed 3): \(played)")
    // Two albums: a lap never begins with the album that ended the lap before, so they keep
    // their order.
    #expect(laps[1] == laps[0] && laps[2] == laps[0], "\(played)")
    for (index, title) in heard.enumerated() { #expect(title == played[index], "heard \(heard), played \(played)") }
  }

  /// A game whose player has said yes, and the first song of their library.
  func librarySong() throws -> (DirectorFixture, MediaLibrary, MediaItem) {
    let game = try DirectorFixture()
    let library = try library(game, status: .authorized)
    return (game, library, try #require(try library.items(matching: MediaQuery.songs()).first))
  }

  @Test("The game's queue replaces the state's music; an empty one, or the next state, brings the state's back")
  func gameQueue() throws {
    let (game, library, song) = try librarySong()
    let text = """
      { start: "explore", assets: "assets",
        sources: { calm: { bundled: "explore.ogg" }, bossMusic: { bundled: "boss.ogg" } },
        states: { explore: { music: "calm" }, combat: { music: "bossMusic" } },
        rules: [ { on: "fight", do: { crossfade: "combat", seconds: 0 } } ] }
      """
    let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    let director = Director(engine: engine, sheet: try game.sheet(text), library: library, clocking: .pumped)
    director.start(at: 0, state: nil)
    func origin() -> String? { director.player.nowPlayingItem.flatMap { director.nowPlayingOrigin($0) } }
    #expect(origin() == "calm")
    var time = 0.0
    func step() {
      time += 0.1
      director.step(to: time)
    }

    director.setQueue([song, song], transition: TransitionSpec(seconds: 0), repeatMode: .none)
    step()
    #expect(director.player.nowPlayingItem == song && origin() == "(game)")
    #expect(director.player.queue.count == 2 && director.player.repeatMode == .none)
    #expect(director.currentState == "explore", "the rules still see the state")
    director.setQueue([], transition: TransitionSpec(seconds: 0))
    step()
    #expect(origin() == "calm", "an empty queue hands the music back to the state")
    director.setQueue([], transition: TransitionSpec(seconds: 0))
    step()
    #expect(origin() == "calm", "and again changes nothing")

    director.setQueue([song], transition: TransitionSpec(seconds: 0))
    step()
    #expect(origin() == "(game)")
    director.post("fight")
    step()
    #expect(origin() == "bossMusic", "the next state brings its own music")
  }
}

@Suite("The director in real time: live reload, and events from many threads")
struct DirectorLiveTests {
  /// Collects reports from the notification queue.
  final class Reports: Sendable {
    private let list = Mutex<[DirectorReport]>([])
    func append(_ report: DirectorReport) { list.withLock { $0.append(report) } }
    var all: [DirectorReport] { list.withLock { $0 } }
    func clear() { list.withLock { $0.removeAll() } }
    /// Waits up to `seconds` for a report that `matches`; returns it and how long it took.
    func wait(seconds: Double, for matches: (DirectorReport) -> Bool) -> (DirectorReport, Double)? {
      let start = Date()
      while Date().timeIntervalSince(start) < seconds {
        if let report = all.first(where: matches) { return (report, Date().timeIntervalSince(start)) }
        usleep(5_000)
      }
      return nil
    }
  }

  func cues(rule: String) -> String {
    """
    {
      start: "explore",
    \(DirectorFixture.sources)
      states: { explore: { music: "calm" }, combat: { music: "tense", transition: { seconds: 0.2 } } },
      rules: [ \(rule) ],
    }
    """
  }

  /// A real-time director watching its cue file (one rule, "old"), started and playing.
  private func watchedDirector() throws -> (DirectorFixture, Director, Reports) {
    let game = try DirectorFixture()
    _ = try game.sheet(cues(rule: #"{ name: "old", on: "go", do: { volume: 0.9 } }"#))
    let engine = try AudioEngine(output: .headless)
    let director = try Director(engine: engine, cueFile: game.cuePath)
    let reports = Reports()
    director.addObserver { reports.append($0) }
    director.start()
    _ = try #require(
      reports.wait(seconds: 5) { if case .stateChanged = $0.kind { return true } else { return false } })
    return (game, director, reports)
  }

  @Test(
    "A reload during a parameter's ramp: the ramp goes on to its target in the time it had left; a narrower range clamps it"
  )
  func reloadDuringAParameterRamp() throws {
    let game = try DirectorFixture()
    func cues(minimum: Double, comment: String = "") -> String {
      """
      { start: "explore", assets: "assets",
        sources: { calm: { bundled: "explore.ogg" } },
        parameters: { health: { min: \(minimum), max: 1, default: 1,
          drives: [ { target: "volume", curve: [[0, 0.2], [1, 1]] } ] } },
        states: { explore: { music: "calm" } },
        rules: [] } \(comment)
      """
    }
    try cues(minimum: 0).write(toFile: game.cuePath, atomically: true, encoding: .utf8)
    let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    let director = try Director(engine: engine, cueFile: game.cuePath, clocking: .pumped)
    var buffer = [Float](repeating: 0, count: 2 * 256)
    var values: [Double: Double] = [:]
    var frame = 0
    while frame < 7 * 48_000 {
      let time = Double(frame) / 48_000
      // The game glides health from 1 to 0.2 over 4 s from 1 s; the designer saves at 2.5 s (a
      // comment only), and at 4 s with health's range cut to [0.3, 1].
      if frame == 47_872 { director.setParameter("health", 0.2, rampSeconds: 4) }  // 0.997 s
      if frame == 120_064 || frame == 192_000 {
        let text = frame == 120_064 ? cues(minimum: 0, comment: "// saved") : cues(minimum: 0.3)
        try text.write(toFile: game.cuePath, atomically: true, encoding: .utf8)
        #expect(director.reload().allSatisfy { $0.severity != .error })
      }
      director.advance(toAudioTime: time)
      for probe in [2.0, 3.0, 4.5, 6.0] where (frame..<frame + 256).contains(Int(probe * 48_000)) {
        values[probe] = director.parameter("health")
      }
      buffer.withUnsafeMutableBufferPointer { engine.render(into: $0.baseAddress!, frameCount: 256) }
      frame += 256
    }
    // Linear from 1 at 1 s towards 0.2 at 5 s: 0.8 at 2 s, 0.6 at 3 s; from 0.4 at 4 s to the
    // new minimum, 0.3, at 5 s: 0.35 at 4.5 s. It used to stay at 0.7 from the first save on.
    #expect(abs((values[2.0] ?? 0) - 0.8) < 0.02, "\(values)")
    #expect(abs((values[3.0] ?? 0) - 0.6) < 0.02, "after the reload at 2.5 s: \(values)")
    #expect(abs((values[4.5] ?? 0) - 0.35) < 0.02, "after the reload at 4 s: \(values)")
    #expect(abs((values[6.0] ?? 0) - 0.3) < 1e-9, "the ramp reached its clamped target: \(values)")
  }

  @Test("A reload says what the save changed: values, keys and rules added or removed; a comment-only save says so")
  func reloadSaysWhatChanged() throws {
    let game = try DirectorFixture()
    func cues(volume: String, rules: String, comment: String = "") -> String {
      """
      { start: "explore", assets: "assets",
        sources: { calm: { bundled: "explore.ogg" } },
        states: { explore: { music: "calm"\(volume) } },
        \(comment)
        rules: [ \(rules) ] }
      """
    }
    let fight = #"{ name: "fight", on: "enemy", priority: 1, do: { duck: -6 } }"#
    let calm = #"{ name: "calm", on: "quiet", do: { volume: 0.5 } }"#
    try cues(volume: ", volume: 0.8", rules: "\(fight), \(calm)").write(
      toFile: game.cuePath, atomically: true, encoding: .utf8)
    let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    let director = try Director(engine: engine, cueFile: game.cuePath, clocking: .pumped)
    let reports = Mutex<[String]>([])
    _ = director.addObserver { report in
      if case .reloaded(_, _, let changes) = report.kind {
        reports.withLock { $0.append(changes.joined(separator: "|")) }
      }
    }
    func save(_ text: String) throws {
      try text.write(toFile: game.cuePath, atomically: true, encoding: .utf8)
      #expect(director.reload().allSatisfy { $0.severity != .error })
      director.advance(toAudioTime: 0)
    }
    // The volume tuned, a rule inserted before the others and one's priority changed.
    let ambush = #"{ name: "ambush", on: "ambush", do: { state: "explore" } }"#
    try save(
      cues(
        volume: ", volume: 0.6",
        rules: "\(ambush), \(fight.replacingOccurrences(of: "priority: 1", with: "priority: 2")), \(calm)"))
    // Only a comment and the layout.
    try save(
      cues(
        volume: ",   volume: 0.6",
        rules: "\(ambush),\n \(fight.replacingOccurrences(of: "priority: 1", with: "priority: 2")), \(calm)",
        comment: "// tuned"))
    // A key removed and a rule removed.
    try save(cues(volume: "", rules: "\(ambush), \(calm)"))
    // Reports reach observers on the director's notification queue: wait for the last one.
    director.waitForReports()
    #expect(
      reports.withLock { $0 } == [
        #"states.explore.volume: 0.8 → 0.6|rules "ambush" added|rules "fight".priority: 1 → 2"#,
        "",
        #"states.explore.volume removed|rules "fight" removed"#,
      ])
    let report = DirectorReport(
      time: 1, event: nil, kind: .reloaded(path: "cues.json5", warnings: [], changes: ["a: 1 → 2", "b added"]))
    #expect(report.kind.description == "reloaded cues.json5: 2 changes\n  a: 1 → 2\n  b added")
  }

  @Test(
    "A state renamed while a change waits for its bar to enter it: the change enters the new name, whose rules then match; the playing state renamed plays on under its new name"
  )
  func stateRenamedWhileAChangeWaits() throws {
    let game = try DirectorFixture()
    func cues(_ combat: String, _ explore: String = "explore") -> String {
      """
      { start: "\(explore)", \(DirectorFixture.sources)
        states: { \(explore): { music: "calm", volume: 0.9 },
                  \(combat): { music: "tense", transition: { seconds: 0, at: "bar" } } },
        rules: [ { name: "fight", on: "enemy", do: { state: "\(combat)" } },
                 { name: "calm down", on: "quiet", when: { state: "\(combat)" }, do: { state: "\(explore)" } } ] }
      """
    }
    try cues("combat").write(toFile: game.cuePath, atomically: true, encoding: .utf8)
    let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    let director = try Director(engine: engine, cueFile: game.cuePath, clocking: .pumped)
    let reports = Mutex<[String]>([])
    _ = director.addObserver { report in reports.withLock { $0.append(report.description) } }
    var states: [Double: String] = [:]
    let left = try DirectorFixture.renderPumped(director, engine, seconds: 6) { frame in
      let time = Double(frame) / 48_000
      // Combat on the bar at 2 s, asked at 0.5 s; at 1 s the designer renames it "battle".
      if frame == 24_064 { director.post("enemy") }
      if frame == 48_128 {
        try cues("battle").write(toFile: game.cuePath, atomically: true, encoding: .utf8)
        #expect(director.reload().allSatisfy { $0.severity != .error })
      }
      // At 3 s the rule written for the new name takes the music back to explore; at 4.5 s the
      // playing state itself is renamed.
      if frame == 144_128 { director.post("quiet") }
      if frame == 216_064 {
        try cues("battle", "wander").write(toFile: game.cuePath, atomically: true, encoding: .utf8)
        #expect(director.reload().allSatisfy { $0.severity != .error })
      }
      for probe in [1.5, 2.5, 4.0, 5.5] where (frame..<frame + 256).contains(Int(probe * 48_000)) {
        states[probe] = director.currentState
      }
      _ = time
    }
    #expect(states == [1.5: "battle", 2.5: "battle", 4.0: "explore", 5.5: "wander"], "\(reports.withLock { $0 })")
    // The music: combat's tone from the bar at 2 s, explore's again after the rule at 3 s.
    #expect(Listen.level(of: DirectorFixture.combatPitch, in: Listen.window(left, 2.1, 2.9)) > 0.2)
    #expect(Listen.level(of: DirectorFixture.explorePitch, in: Listen.window(left, 4.6, 5.9)) > 0.2)
    director.waitForReports()
    let lines = reports.withLock { $0 }
    #expect(lines.contains { $0.contains(#"states "combat" renamed "battle""#) }, "\(lines)")
    #expect(lines.contains { $0.contains(#"rule "calm down""#) }, "the rule for the new name fired: \(lines)")
    #expect(!lines.contains { $0.contains("is gone from the cue file") }, "\(lines)")
  }

  @Test(
    "A state's music that does not repeat says when it has ended; the state stays current, nothing is heard, a rule moves on"
  )
  func musicEndedIsReported() throws {
    let game = try DirectorFixture()
    try """
    { start: "explore", \(DirectorFixture.sources)
      states: { explore: { music: "calm", repeat: "none" }, combat: { music: "tense" } },
      rules: [ { name: "fight", on: "enemy", when: { state: "explore" }, do: { state: "combat" } } ] }
    """.write(toFile: game.cuePath, atomically: true, encoding: .utf8)
    let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    let director = try Director(engine: engine, cueFile: game.cuePath, clocking: .pumped)
    let reports = Mutex<[DirectorReport]>([])
    _ = director.addObserver { report in reports.withLock { $0.append(report) } }
    var states: (current: String?, audible: String?) = (nil, nil)
    var heardTitles: [String?] = []
    // The 12 s piece ends at 12 s; the rule for the state that stays current moves on at 14 s.
    let left = DirectorFixture.renderPumped(director, engine, seconds: 16) { frame in
      if frame == 614_400 { states = (director.currentState, director.audibleState) }  // 12.8 s
      if frame == 491_520 || frame == 614_400 || frame == 737_280 {  // 10.24, 12.8 and 15.36 s
        heardTitles.append(director.nowPlaying?.item.title)
      }
      if frame == 14 * 48_000 { director.post("enemy") }
    }
    director.waitForReports()
    let ended = reports.withLock { $0 }.filter {
      if case .musicEnded = $0.kind { return true } else { return false }
    }
    // Said once, when it ended (at the director's first step that sees it).
    #expect(ended.count == 1, "\(reports.withLock { $0.map(\.description) })")
    if case .musicEnded(let state, let item)? = ended.first?.kind {
      #expect(state == "explore" && item?.title == "Explore")
    }
    #expect(abs((ended.first?.time ?? 0) - 12) < 0.05, "\(ended.map(\.description))")
    #expect(
      states.current == "explore" && states.audible == nil, "\(states) \(reports.withLock { $0.map(\.description) })")
    #expect(Listen.rms(Listen.window(left, 12.1, 13.9)) == 0)
    #expect(Listen.level(of: DirectorFixture.combatPitch, in: Listen.window(left, 14.2, 15.8)) > 0.2)
    // What is heard: the piece, nothing after its end (not the queue's first item again), then combat.
    #expect(heardTitles.count == 3 && heardTitles[0] == "Explore" && heardTitles[1] == nil, "\(heardTitles)")
    #expect(heardTitles.last != nil && heardTitles.last != "Explore", "\(heardTitles)")
  }

  @Test(
    "Live, a .whenHeard observer gets each report when its time is heard, in order; a .whenDecided one gets it ahead",
    .hangGuard)
  func reportsWhenHeard() throws {
    let game = try DirectorFixture()
    try """
    { start: "explore", \(DirectorFixture.sources)
      states: { explore: { music: "calm" }, combat: { music: "tense", transition: { seconds: 0.2 } } },
      rules: [ { name: "fight", on: "enemy", do: { state: "combat" } } ] }
    """.write(toFile: game.cuePath, atomically: true, encoding: .utf8)
    let engine = try AudioEngine(output: .defaultDevice)
    defer { engine.shutdown() }
    let director = try Director(engine: engine, cueFile: game.cuePath)
    // Each report as each observer got it, with the director time heard then.
    let decided = Mutex<[(report: DirectorReport, heard: Double)]>([])
    let heard = Mutex<[(report: DirectorReport, heard: Double)]>([])
    _ = director.addObserver { report in decided.withLock { $0.append((report, director.heardTime)) } }
    let token = director.addObserver(timing: .whenHeard) { report in
      heard.withLock { $0.append((report, director.heardTime)) }
    }
    director.start()
    usleep(700_000)
    director.post("enemy")
    usleep(700_000)
    director.waitForReports()
    director.removeObserver(token)
    director.post("enemy")
    usleep(300_000)
    director.shutdown()
    let early = decided.withLock { $0 }
    let late = heard.withLock { $0 }
    let lines = late.map { "\($0.report.description) heard at \($0.heard)" }.joined(separator: "\n")
    // The same reports, in the same order (the last "enemy" came after the heard observer went).
    #expect(late.map(\.report.description) == early.dropLast().map(\.report.description), "\(lines)")
    // Each when its time was heard: not before (the playback position moves in blocks of 256
    // frames), and not long after.
    for entry in late {
      #expect(entry.heard >= entry.report.time - 256.0 / 48_000 - 0.002, "\(lines)")
      #expect(entry.heard < entry.report.time + 0.15, "\(lines)")
    }
    let change = try #require(
      early.first { if case .stateChanged(_, "combat", _, _, _) = $0.report.kind { true } else { false } })
    #expect(
      change.heard < change.report.time - 0.05, "decided ahead of what is heard: \(change.heard), \(change.report.time)"
    )
    #expect(late.contains { if case .stateChanged(_, "combat", _, _, _) = $0.report.kind { true } else { false } })
  }

  @Test(
    "Started on an empty cue file (caught mid-save), nothing plays and it says so; the first reload with states starts the level"
  )
  func startOnAnEmptyFile() throws {
    let game = try DirectorFixture()
    try "".write(toFile: game.cuePath, atomically: true, encoding: .utf8)
    let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    let director = try Director(engine: engine, cueFile: game.cuePath, clocking: .pumped)
    let problems = Mutex<[String]>([])
    _ = director.addObserver { report in
      if case .problem(let text) = report.kind { problems.withLock { $0.append(text) } }
    }
    director.start()
    var buffer = [Float](repeating: 0, count: 2 * 256)
    var left = [Float]()
    while left.count < 2 * 48_000 {
      if left.count == 48_128 {
        try """
        { start: "explore", assets: "assets", sources: { calm: { bundled: "explore.ogg" } },
          states: { explore: { music: "calm" } }, rules: [] }
        """.write(toFile: game.cuePath, atomically: true, encoding: .utf8)
        #expect(director.reload().allSatisfy { $0.severity != .error })
      }
      director.advance(toAudioTime: Double(left.count) / 48_000)
      buffer.withUnsafeMutableBufferPointer { engine.render(into: $0.baseAddress!, frameCount: 256) }
      for frame in 0..<256 { left.append(buffer[2 * frame]) }
    }
    #expect(Listen.rms(Listen.window(left, 0, 1)) == 0)
    #expect(
      Listen.level(of: DirectorFixture.explorePitch, in: Listen.window(left, 1.3, 1.9)) > 0.05,
      "the level never started after the reload")
    #expect(director.player.playbackState == .playing)
    #expect(
      problems.withLock { $0.contains { $0.contains("defines no states: nothing plays") } },
      "\(problems.withLock { $0 })")
  }

  @Test("A valid change applies within a second, music playing on; an invalid one keeps the last good file")
  func reload() throws {
    let (game, director, reports) = try watchedDirector()
    defer { director.shutdown() }
    let item = director.player.nowPlayingItem
    usleep(300_000)  // a different modification time, even on coarse clocks
    try cues(rule: #"{ name: "new", on: "go", do: { state: "combat" } }"#).write(
      toFile: game.cuePath, atomically: true, encoding: .utf8)
    let reloaded = try #require(
      reports.wait(seconds: 3) { if case .reloaded = $0.kind { return true } else { return false } })
    #expect(reloaded.1 < 1.0, "reloaded after \(reloaded.1) s")
    #expect(director.player.playbackState == .playing)
    #expect(director.player.nowPlayingItem == item, "the music that played keeps playing")
    director.post("go")
    let fired = try #require(
      reports.wait(seconds: 2) { if case .fired(let rule, _) = $0.kind { return rule == "new" } else { return false } })
    _ = fired
    // Now a broken file: reported with its position, the last good rules stay.
    usleep(300_000)
    try "{ rules: [ { on: \"go\", do: { crosfade: 1 } } ] }".write(
      toFile: game.cuePath, atomically: true, encoding: .utf8)
    let refused = try #require(
      reports.wait(seconds: 3) { if case .reloadFailed = $0.kind { return true } else { return false } })
    guard case .reloadFailed(let error) = refused.0.kind else { return }
    #expect(error.description.contains("cues.json5:1:"), "\(error)")
    #expect(error.description.contains("did you mean \"crossfade\""), "\(error)")
    #expect(director.sheet.rules.first?.name == "new")
    #expect(director.player.playbackState == .playing)
    // An editor's in-place save caught half-way: the file cut to 0 bytes is valid JSON5 for an
    // empty sheet, but it would drop every state and rule. Refused; the music plays on.
    usleep(300_000)
    reports.clear()
    let truncate = open(game.cuePath, O_WRONLY | O_TRUNC)
    close(truncate)
    let emptied = try #require(
      reports.wait(seconds: 3) { if case .reloadFailed = $0.kind { return true } else { return false } })
    guard case .reloadFailed(let empty) = emptied.0.kind else { return }
    #expect(empty.description.contains("defines no states"), "\(empty)")
    #expect(director.sheet.rules.first?.name == "new")
    #expect(!director.sheet.states.isEmpty)
    #expect(director.player.playbackState == .playing)
  }

  @Test("A file missing for a moment (git checkout) reloads once, with no refusal; one that stays gone is refused once")
  func reloadSettles() throws {
    let (game, director, reports) = try watchedDirector()
    defer { director.shutdown() }
    usleep(300_000)
    reports.clear()
    // What `git checkout` does to a tracked file: unlink it, then write the other version.
    unlink(game.cuePath)
    usleep(400_000)
    try cues(rule: #"{ name: "new", on: "go", do: { state: "combat" } }"#).write(
      toFile: game.cuePath, atomically: false, encoding: .utf8)
    _ = try #require(
      reports.wait(seconds: 3) { if case .reloaded = $0.kind { return true } else { return false } })
    usleep(500_000)
    let kinds = reports.all.map(\.kind.description)
    #expect(!kinds.contains { $0.hasPrefix("reload refused") }, "\(kinds)")
    #expect(kinds.filter { $0.hasPrefix("reloaded") }.count == 1, "\(kinds)")
    #expect(director.sheet.rules.first?.name == "new")

    // Gone for good: refused once, after the grace period, and the last good file stays.
    reports.clear()
    unlink(game.cuePath)
    usleep(UInt32(Director.missingGraceSeconds * 1_000_000) / 2)
    #expect(!reports.all.contains { if case .reloadFailed = $0.kind { return true } else { return false } })
    let refused = try #require(
      reports.wait(seconds: 4) { if case .reloadFailed = $0.kind { return true } else { return false } })
    _ = refused
    usleep(500_000)
    #expect(reports.all.filter { if case .reloadFailed = $0.kind { return true } else { return false } }.count == 1)
    #expect(director.sheet.rules.first?.name == "new")
    #expect(director.player.playbackState == .playing)
  }

  @Test("Live: a file replaced by text after the check is a problem report, and the source's fallback plays")
  func liveFallbackAfterFailure() throws {
    let game = try DirectorFixture()
    _ = try game.sheet(
      """
      {
        start: "explore", assets: "assets",
        sources: { calm: { bundled: "explore.ogg" }, tense: { bundled: "combat.ogg", fallback: "big" },
                   big: { bundled: "boss.ogg" } },
        states: { explore: { music: "calm" }, combat: { music: "tense", transition: { seconds: 0.1 } } },
        rules: [ { on: "go", do: { state: "combat" } } ],
      }
      """)
    let engine = try AudioEngine(output: .headless)
    let director = try Director(engine: engine, cueFile: game.cuePath, watchesFile: false)
    defer { director.shutdown() }
    let reports = Reports()
    director.addObserver { reports.append($0) }
    director.start()
    _ = try #require(
      reports.wait(seconds: 5) { if case .stateChanged = $0.kind { return true } else { return false } })
    try Data("this was music once\n".utf8).write(to: URL(fileURLWithPath: game.assets + "/combat.ogg"))
    director.post("go")
    let problem = reports.wait(seconds: 5) {
      if case .problem(let text) = $0.kind { return text.contains("\"Combat\"") && text.contains("cannot be played") }
      return false
    }
    #expect(problem != nil, "\(reports.all.map(\.kind.description))")
    let fallback = reports.wait(seconds: 5) {
      if case .fallback(_, let source, let replacement, let reason) = $0.kind {
        return source == "tense" && replacement == "big" && reason == "its files failed to play"
      }
      return false
    }
    #expect(fallback != nil, "\(reports.all.map(\.kind.description))")
    #expect(EngineHarness.wait(seconds: 3) { director.player.nowPlayingItem?.title == "Boss" })
    #expect(director.player.playbackState == .playing)
  }

  @Test("Thousands of events from several threads: none lost below the bound, drops counted above it")
  func manyThreads() throws {
    let game = try DirectorFixture()
    let sheet = try game.sheet(cues(rule: #"{ name: "count", on: "tick", do: { volume: 1 } }"#))
    for (capacity, threads, perThread) in [(8192, 4, 1_500), (64, 4, 1_500)] {
      let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
      let director = Director(engine: engine, sheet: sheet, clocking: .pumped, busCapacity: capacity)
      let reports = Reports()
      director.addObserver { reports.append($0) }
      director.start(at: 0, state: nil)
      let done = Atomic<Int>(0)
      let consumer = Thread {
        var time = 0.0
        while done.load(ordering: .acquiring) < threads {
          time += 0.001
          director.step(to: time)
        }
        director.step(to: time + 0.001)
      }
      consumer.start()
      DispatchQueue.concurrentPerform(iterations: threads) { thread in
        for index in 0..<perThread {
          director.post("tick", ["thread": .number(Double(thread)), "index": .number(Double(index))])
        }
        done.add(1, ordering: .releasing)
      }
      while !consumer.isFinished { usleep(1_000) }
      director.waitForReports()
      let fired = reports.all.filter { if case .fired = $0.kind { return true } else { return false } }
      let dropped = reports.all.reduce(UInt64(0)) { total, report in
        if case .dropped(let count) = report.kind { return total + count } else { return total }
      }
      let posted = threads * perThread
      #expect(UInt64(fired.count) + dropped == UInt64(posted), "capacity \(capacity)")
      #expect(dropped == director.bus.droppedCount)
      if capacity >= posted { #expect(dropped == 0) }
      // Each thread's events were applied in the order it posted them.
      for thread in 0..<threads {
        let indices = fired.compactMap { report -> Double? in
          guard report.event?.payload["thread"] == .number(Double(thread)) else { return nil }
          return report.event?.payload["index"]?.numberValue
        }
        #expect(indices == indices.sorted(), "thread \(thread)'s events kept their order")
      }
    }
  }
}

@Suite("leitmotif cues simulate")
struct CuesSimulateCommandTests {
  @Test("Renders a scripted level to a WAV file and a timeline, and prints what each event did")
  func simulate() throws {
    let game = try DirectorFixture()
    _ = try game.sheet(
      """
      {
        start: "explore",
      \(DirectorFixture.sources)
        states: { explore: { music: "calm" }, combat: { music: "tense", transition: { seconds: 0.5, at: "beat" } } },
        rules: [ { name: "fight", on: "enemy.spotted", when: { payload: { threat: { atLeast: 2 } } }, do: { state: "combat" } } ],
      }
      """)
    let script = game.directory.file("level.json5")
    try """
    [
      { at: 1, cue: "enemy.spotted", payload: { threat: 1 } },  // too weak to matter
      { at: 2.2, cue: "enemy.spotted", payload: { threat: 2 } },
    ]
    """.write(toFile: script, atomically: true, encoding: .utf8)
    let wav = game.directory.file("out.wav")
    let json = game.directory.file("timeline.json")
    let run = try LeitmotifCommand.run([
      "cues", "simulate", game.cuePath, "--events", script, "--out", wav, "--timeline", json, "--duration", "4",
    ])
    #expect(run.status == 0, "\(run.errors)")
    #expect(run.output.contains("rule \"fight\""), "\(run.output)")
    #expect(run.output.contains("ignored"), "\(run.output)")
    // 4 s of 48 kHz stereo float: the data, plus a header of less than 100 bytes.
    let size = try FileManager.default.attributesOfItem(atPath: wav)[.size] as? Int ?? 0
    #expect(size >= 4 * 48_000 * 2 * 4 && size < 4 * 48_000 * 2 * 4 + 100, "\(size) bytes")
    let timeline = try JSONDecoder().decode(CueTimeline.self, from: Data(contentsOf: URL(fileURLWithPath: json)))
    #expect(timeline.states.map(\.state) == ["explore", "combat"])
    // --timeline means what it means in the demo: the picture is written beside the data.
    let picture = try String(contentsOfFile: game.directory.file("timeline.svg"), encoding: .utf8)
    #expect(picture.hasPrefix("<svg") || picture.hasPrefix("<?xml"), "\(picture.prefix(80))")
    #expect(run.output.contains("timeline: \(game.directory.file("timeline.svg"))"), "\(run.output)")
    // Heard on the beat after the event: 2.5 s.
    #expect(abs((timeline.states.last?.from ?? 0) - 2.5) < 0.001, "\(timeline.states)")
  }

  @Test("--live watches the cue file: an edit saved while it plays answers the next cue, and --record says so")
  func liveReloads() throws {
    let game = try DirectorFixture()
    let before =
      "{ start: \"explore\", \(DirectorFixture.sources) states: { explore: { music: \"calm\" }, combat: { music: \"tense\" } } }"
    _ = try game.sheet(before)
    let script = game.directory.file("level.json5")
    try #"[ { at: 3.5, cue: "fight" } ]"#.write(toFile: script, atomically: true, encoding: .utf8)
    // The designer adds the rule a second into the run (an atomic save, as editors make).
    let edit = Thread {
      Thread.sleep(forTimeInterval: 1)
      let after = before.dropLast() + #", rules: [ { name: "added", on: "fight", do: { state: "combat" } } ] }"#
      try? String(after).write(toFile: game.cuePath, atomically: true, encoding: .utf8)
    }
    edit.start()
    var environment = ProcessInfo.processInfo.environment
    environment["ALSOFT_DRIVERS"] = "null"
    let run = try LeitmotifCommand.run(
      [
        "cues", "simulate", game.cuePath, "--events", script, "--live", "--duration", "5", "--record",
        game.directory.file("recorded.json5"),
      ],
      environment: environment)
    #expect(run.status == 0, "\(run.errors)")
    // It used to play the file as it was at the start: "no rule answers cue fight".
    #expect(run.output.contains("reloaded"), "\(run.output)")
    #expect(run.output.contains("[fight] rule \"added\""), "\(run.output)")
    #expect(run.output.contains("note: the cue file was reloaded 1 time while it played"), "\(run.output)")
  }

  @Test("A broken script: every problem with its line and column, exit status 2")
  func brokenScript() throws {
    let game = try DirectorFixture()
    _ = try game.sheet("{ \(DirectorFixture.sources) states: { a: { music: \"calm\" } } }")
    let script = game.directory.file("bad.json5")
    try "[\n  { at: -1, cue: \"x\" },\n  { at: 2, cue: \"y\", paylod: {} },\n]".write(
      toFile: script, atomically: true, encoding: .utf8)
    let run = try LeitmotifCommand.run([
      "cues", "simulate", game.cuePath, "--events", script, "--out", game.directory.file("out.wav"),
    ])
    #expect(run.status == 2)
    #expect(
      run.errors.contains("bad.json5:2:9: error: [0].at: expected a time from 0 to 86400 s (one day)"), "\(run.errors)")
    #expect(
      run.errors.contains("bad.json5:3:22: error: [1].paylod: unknown key \"paylod\"; did you mean \"payload\"?"),
      "\(run.errors)")
    #expect(!FileManager.default.fileExists(atPath: game.directory.file("out.wav")))
  }

  @Test(
    "A script's parameter changes are checked against the cue file: an unknown name is an error, a value out of range a warning"
  )
  func scriptParameters() throws {
    let game = try DirectorFixture()
    _ = try game.sheet(
      "{ \(DirectorFixture.sources) parameters: { danger: { min: 0, max: 1 } }, states: { a: { music: \"calm\" } } }")
    let script = game.directory.file("sets.json5")
    try "[\n  { at: 1, set: \"danger\", value: 5 },\n]".write(toFile: script, atomically: true, encoding: .utf8)
    let out = game.directory.file("out.wav")
    let warned = try LeitmotifCommand.run(["cues", "simulate", game.cuePath, "--events", script, "--out", out])
    #expect(warned.status == 0, "\(warned.errors)")
    #expect(
      warned.errors.contains(
        "sets.json5:2:1: warning: value: set \"danger\" to 5: its range is 0 to 1 (min, max); it is held at 1"),
      "\(warned.errors)")
    try "[\n  { at: 1, set: \"dangr\", value: 1 },\n]".write(toFile: script, atomically: true, encoding: .utf8)
    try? FileManager.default.removeItem(atPath: out)
    let refused = try LeitmotifCommand.run(["cues", "simulate", game.cuePath, "--events", script, "--out", out])
    #expect(refused.status == 2)
    #expect(
      refused.errors.contains(
        "sets.json5:2:1: error: set: no parameter named \"dangr\" in the cue file; did you mean \"danger\"?"),
      "\(refused.errors)")
    #expect(!FileManager.default.fileExists(atPath: out))
  }
}

@Suite("The director: where incoming music enters, levels, and the game's own clock")
struct DirectorEntryTests {
  /// A piece of two halves at two pitches (3 s each), so a test hears where it entered.
  static func twoPart(_ path: String, _ first: Double, _ second: Double, tags: [(String, String)] = []) throws {
    var samples = ToneGenerator.sine(frequency: first, amplitude: 0.4, seconds: 3, format: .stereo48000)
    samples += ToneGenerator.sine(frequency: second, amplitude: 0.4, seconds: 3, format: .stereo48000)
    try VorbisEncoder.encode(samples: samples, format: .stereo48000, tags: tags, to: path)
  }

  func run(enter: String, cueAt: Double, extraSource: String = "") throws -> [Float] {
    let game = try DirectorFixture()
    try Self.twoPart(game.assets + "/a.ogg", 220, 330)
    try Self.twoPart(game.assets + "/b.ogg", 440, 550, tags: [("LOOPSTART", "144000")])
    let sheet = try game.sheet(
      """
      {
        start: "a",
        assets: "assets",
        sources: { first: { bundled: "a.ogg" }, second: { bundled: "b.ogg" \(extraSource) } },
        states: { a: { music: "first", transition: { seconds: 0 }, between: "gapless" }, b: { music: "second" } },
        rules: [ { on: "go", do: { crossfade: "b", seconds: 0.1, enter: "\(enter)" } } ],
      }
      """)
    return try game.simulate(sheet, [.cue(cueAt, "go")], seconds: cueAt + 1).left
  }

  @Test("enter: start, loop-start, same-position and cue-point")
  func entries() throws {
    let pitches = [440.0, 550.0]
    let start = try run(enter: "start", cueAt: 4)
    #expect(Listen.loudest(start, 4.3, 4.9, among: pitches) == 440)
    let loop = try run(enter: "loop-start", cueAt: 1)
    #expect(Listen.loudest(loop, 1.3, 1.9, among: pitches) == 550)
    let same = try run(enter: "same-position", cueAt: 1)
    #expect(Listen.loudest(same, 1.3, 1.9, among: pitches) == 440)
    let later = try run(enter: "same-position", cueAt: 4)
    #expect(Listen.loudest(later, 4.3, 4.9, among: pitches) == 550)
    let cue = try run(enter: "cue-point", cueAt: 1, extraSource: ", cuePoints: [3.5]")
    #expect(Listen.loudest(cue, 1.3, 1.9, among: pitches) == 550)
  }

  @Test("With loudness levelling off, a source's gain and ReplayGain level its items")
  func levels() throws {
    let game = try DirectorFixture()
    try DirectorFixture.tone(
      game.assets + "/loud.ogg", pitch: 440, seconds: 3, tags: [("REPLAYGAIN_TRACK_GAIN", "-6.02 dB")])
    func level(_ source: String) throws -> Double {
      let sheet = try game.sheet(
        """
        { start: "s", assets: "assets", loudness: "off", sources: { music: \(source) },
          states: { s: { music: "music", transition: { seconds: 0 } } } }
        """)
      return Listen.rms(Listen.window(try game.simulate(sheet, [], seconds: 1).left, 0.2, 0.9))
    }
    let plain = try level(#"{ bundled: "loud.ogg", replayGain: "off" }"#)
    let replayGain = try level(#"{ bundled: "loud.ogg" }"#)
    let gain = try level(#"{ bundled: "loud.ogg", replayGain: "off", gain: -12 }"#)
    #expect(abs(replayGain / plain - 0.5) < 0.02, "ReplayGain: \(replayGain / plain)")
    #expect(abs(gain / plain - 0.251) < 0.02, "gain: \(gain / plain)")
  }

  @Test("A parameter drives the rate through its curve")
  func rateDrive() throws {
    let game = try DirectorFixture()
    let sheet = try game.sheet(
      """
      {
        start: "explore",
      \(DirectorFixture.sources)
        parameters: { speed: { drives: [ { target: "rate", curve: [[0, 1], [1, 1.5]] } ] } },
        states: { explore: { music: "calm", transition: { seconds: 0 } } },
      }
      """)
    let left = try game.simulate(sheet, [.set(1, "speed", 1)], seconds: 2).left
    let pitches = [DirectorFixture.explorePitch, 1.5 * DirectorFixture.explorePitch]
    #expect(Listen.loudest(left, 0.3, 0.9, among: pitches) == pitches[0])
    #expect(Listen.loudest(left, 1.3, 1.9, among: pitches) == pitches[1])
  }

  @Test("Pumped by the game: update() applies what was posted, on the game's thread")
  func pumped() throws {
    let game = try DirectorFixture()
    let sheet = try game.sheet(
      """
      { start: "explore", \(DirectorFixture.sources)
        states: { explore: { music: "calm" }, combat: { music: "tense", transition: { seconds: 0.1 } } },
        rules: [ { on: "go", do: { state: "combat" } } ] }
      """)
    let engine = try AudioEngine(output: .headless)
    let director = Director(engine: engine, sheet: sheet, clocking: .pumped)
    director.update()
    #expect(director.currentState == "explore")
    director.post("go")
    #expect(director.currentState == "explore", "nothing happens until the game's next update")
    director.update()
    #expect(director.currentState == "combat")
    director.player.stop()
  }
}
