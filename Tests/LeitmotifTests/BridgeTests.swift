import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues

/// Bridges: a piece played between two states, chosen by a from-to table with wildcards, on the
/// grid into it and gaplessly out of it.
@Suite("Bridges between states")
struct BridgeTests {
  static let bridgePitch = 440.0

  static func game() throws -> DirectorFixture {
    let game = try DirectorFixture()
    try DirectorFixture.tone(
      game.assets + "/bridge.ogg", pitch: bridgePitch, seconds: 2, tags: [("TITLE", "Bridge"), ("BPM", "120")])
    try DirectorFixture.tone(
      game.assets + "/other.ogg", pitch: 330, seconds: 2, tags: [("TITLE", "Other bridge"), ("BPM", "120")])
    return game
  }

  /// `fight`: what the "fight" cue does; `rules`: more rules.
  static func sheet(
    _ game: DirectorFixture, bridges: String, fight: String = #"{ state: "combat" }"#, rules: String = ""
  ) throws -> CueSheet {
    try game.sheet(
      """
      {
        start: "explore",
        assets: "assets",
        sources: {
          calm: { bundled: "explore.ogg" },
          tense: { bundled: "combat.ogg" },
          bossMusic: { bundled: "boss.ogg" },
          bridging: { bundled: "bridge.ogg" },
          other: { bundled: "other.ogg" },
          mine: { library: { artist: "Me" }, fallback: "calm" },
        },
        states: {
          explore: { music: "calm", transition: { seconds: 0, at: "bar" } },
          combat: { music: "tense", transition: { seconds: 0, at: "bar" } },
          boss: { music: "bossMusic", transition: { seconds: 0, at: "bar" } },
        },
        rules: [
          { on: "fight", do: \(fight) },
          { on: "calm", do: { state: "explore" } },
          { on: "boss", do: { state: "boss" } },
          \(rules)
        ],
        bridges: \(bridges),
      }
      """)
  }

  @Test(
    "A seek while the bridge waits for its bar moves where the state's music starts after it: the bridge plays whole")
  func seekWhileTheBridgeWaits() throws {
    let game = try Self.game()
    // Combat's file: 880 Hz for 4 s, then 660 Hz: a start at 5 s is heard as 660 Hz.
    let first = ToneGenerator.sine(
      frequency: DirectorFixture.combatPitch, amplitude: 0.4, seconds: 4, format: .stereo48000)
    let second = ToneGenerator.sine(frequency: 660, amplitude: 0.4, seconds: 8, format: .stereo48000)
    try VorbisEncoder.encode(
      samples: first + second, format: .stereo48000, tags: [("TITLE", "Combat"), ("MOOD", "tense"), ("BPM", "120")],
      to: game.assets + "/combat.ogg")
    let sheet = try Self.sheet(
      game, bridges: #"[{ from: "explore", to: "combat", music: "bridging" }]"#,
      rules: #"{ on: "jump", do: { seek: 5 } },"#)
    // The fight at 2.1 s waits for the bar at 4 s; the seek comes at 3 s. It used to move the
    // bridge's 2 s piece, not begun, to 5 s: nothing of it was heard, and combat cut in on
    // the bar from its start.
    let run = try game.simulate(sheet, [.cue(2.1, "fight"), .cue(3, "jump")], seconds: 8.5)
    let pitches = [DirectorFixture.explorePitch, Self.bridgePitch, DirectorFixture.combatPitch, 660]
    #expect(
      Listen.loudest(run.left, 4.2, 5.8, among: pitches) == Self.bridgePitch, "the bridge: \(run.timeline.summary)")
    #expect(Listen.loudest(run.left, 6.2, 8.3, among: pitches) == 660, "combat from 5 s: \(run.timeline.summary)")
    #expect(
      run.timeline.summary.contains("seek to 5 s: where \"combat\"'s music starts, after the bridge"),
      "\(run.timeline.summary)")
  }

  @Test("The bridge plays on the bar, then the state's music joins it on its last frame")
  func bridgeThenState() throws {
    let game = try Self.game()
    let sheet = try Self.sheet(game, bridges: #"[{ from: "explore", to: "combat", music: "bridging" }]"#)
    let run = try game.simulate(sheet, [.cue(2.1, "fight")], seconds: 9)
    let pitches = [DirectorFixture.explorePitch, Self.bridgePitch, DirectorFixture.combatPitch]
    let states = run.timeline.states
    #expect(states.map(\.state) == ["explore", "combat"], "\(run.timeline.summary)")
    let bar = try #require(states.last?.from)
    #expect(abs(bar - 4) < 0.02, "on the bar after 2.1 s: \(bar)")
    #expect(Listen.loudest(run.left, bar + 0.2, bar + 1.8, among: pitches) == Self.bridgePitch, "the bridge")
    #expect(Listen.loudest(run.left, bar + 2.2, bar + 4, among: pitches) == DirectorFixture.combatPitch, "then combat")
    // The join: the combat music is reported as it starts, the bridge's two seconds after it.
    let items = run.timeline.items.map { ($0.title, $0.at) }
    let bridgeItem = try #require(items.first { $0.0 == "Bridge" }, "\(items)")
    let combatItem = try #require(items.first { $0.0 == "Combat" }, "\(items)")
    #expect(abs(combatItem.1 - bridgeItem.1 - 2) < 0.01, "\(items)")
    // No gap at the join: every 10 ms around it has sound.
    for step in 0..<20 {
      let from = bar + 1.9 + Double(step) * 0.01
      #expect(Listen.rms(Listen.window(run.left, from, from + 0.01)) > 0.05, "silent at \(from) s")
    }
    #expect(
      Listen.level(of: Self.bridgePitch, in: Listen.window(run.left, bar + 2.1, bar + 3)) < 0.01, "the bridge ended")
  }

  @Test(
    "A crossfade into a bridge longer than half the bridge is shortened to that: the bridge is whole before it ends")
  func longCrossfadeIntoAShortBridge() throws {
    let game = try Self.game()
    let sheet = try Self.sheet(game, bridges: #"[{ from: "explore", to: "combat", music: "bridging" }]"#)
    _ = sheet
    // A 3 s crossfade into the 2 s bridge, on the bar at 4 s.
    let long = try game.sheet(
      try String(contentsOfFile: game.cuePath, encoding: .utf8).replacingOccurrences(
        of: #"combat: { music: "tense", transition: { seconds: 0, at: "bar" } }"#,
        with: #"combat: { music: "tense", transition: { seconds: 3, at: "bar" } }"#))
    let run = try game.simulate(long, [.cue(2.1, "fight")], seconds: 9)
    let cut = try game.simulate(sheet, [.cue(2.1, "fight")], seconds: 9)
    // The bridge (4 s to 6 s) is at its full level from 5 s, as with no crossfade: faded in
    // over 1 s, not still fading in (to 3 s) when it ends at 6 s.
    let heard = Listen.level(of: Self.bridgePitch, in: Listen.window(run.left, 5.2, 5.9))
    let full = Listen.level(of: Self.bridgePitch, in: Listen.window(cut.left, 5.2, 5.9))
    #expect(heard > 0.97 * full, "the bridge at \(heard) of \(full)\n\(run.timeline.summary)")
    #expect(run.timeline.summary.contains("crossfade 1 s"), "\(run.timeline.summary)")
  }

  @Test("The most particular bridge wins: a named state before a wildcard, from before to, the first of equals")
  func precedence() throws {
    let game = try Self.game()
    let sheet = try Self.sheet(
      game,
      bridges: """
        [
          { from: "*", to: "*", music: "other" },
          { from: "*", to: "combat", music: "other" },
          { from: ["explore", "boss"], to: "*", music: "bridging" },
          { from: "explore", to: "combat", music: "bridging", seconds: 0.5 },
          { from: "explore", to: "combat", music: "other" },
        ]
        """)
    #expect(sheet.bridge(from: "explore", to: "combat")?.seconds == 0.5)
    #expect(sheet.bridge(from: "boss", to: "combat")?.music == "bridging", "from before to")
    #expect(sheet.bridge(from: "combat", to: "explore")?.music == "other", "the catch-all")
    #expect(sheet.bridge(from: "combat", to: "combat") == nil, "no bridge into the state playing")
    #expect(sheet.bridge(from: nil, to: "combat") == nil, "nor from silence")
  }

  @Test("Another change while the bridge plays replaces what it led to")
  func changeDuringTheBridge() throws {
    let game = try Self.game()
    let sheet = try Self.sheet(game, bridges: #"[{ from: "explore", to: "combat", music: "bridging" }]"#)
    let run = try game.simulate(sheet, [.cue(2.1, "fight"), .cue(4.5, "boss")], seconds: 10)
    let pitches = [
      DirectorFixture.explorePitch, Self.bridgePitch, DirectorFixture.combatPitch, DirectorFixture.bossPitch,
    ]
    #expect(run.timeline.states.map(\.state) == ["explore", "combat", "boss"], "\(run.timeline.summary)")
    // Out of the bridge on its next bar (its end, at 6 s), into the boss: reckoned on the
    // bridge, not on the combat music waiting behind it (not begun: the boss cut in at once,
    // at 4.5 s, reported at 6.48 s).
    let bossAt = try #require(run.timeline.states.last?.from)
    #expect(abs(bossAt - 6) < 0.02, "the boss reported at \(bossAt) s\n\(run.timeline.summary)")
    #expect(Listen.loudest(run.left, 4.6, 5.9, among: pitches) == Self.bridgePitch, "the bridge plays to its end")
    // The bridge has no bar after its end, and nothing follows it: the boss comes at its end.
    #expect(run.timeline.summary.contains("\"Bridge\" ends before its next bar: at its end"), "\(run.timeline.summary)")
    #expect(Listen.loudest(run.left, 6, 9, among: pitches) == DirectorFixture.bossPitch, "\(run.timeline.summary)")
    #expect(
      Listen.level(of: DirectorFixture.combatPitch, in: Listen.window(run.left, 4, 10)) < 0.01, "combat never came")
  }

  @Test(
    "A change to another state while the bridge waits for its bar calls the bridge off and goes from the music heard, on its grid"
  )
  func changeWhileTheBridgeWaits() throws {
    let game = try Self.game()
    let sheet = try Self.sheet(game, bridges: #"[{ from: "explore", to: "combat", music: "bridging" }]"#)
    // Fight at 2.1 s: the bridge waits for explore's bar at 4 s. Boss at 2.5 s: from explore,
    // which plays on, on that same bar. It used to take the bridge's piece, not begun, for the
    // music playing: its "bar" came at once, and the boss cut in at 2.5 s over explore.
    let run = try game.simulate(sheet, [.cue(2.1, "fight"), .cue(2.5, "boss")], seconds: 7)
    let pitches = [
      DirectorFixture.explorePitch, Self.bridgePitch, DirectorFixture.combatPitch, DirectorFixture.bossPitch,
    ]
    #expect(run.timeline.states.map(\.state) == ["explore", "boss"], "\(run.timeline.summary)")
    let bar = try #require(run.timeline.states.last?.from)
    #expect(abs(bar - 4) < 0.02, "the boss on explore's bar: \(bar)\n\(run.timeline.summary)")
    #expect(Listen.loudest(run.left, 2.6, 3.9, among: pitches) == DirectorFixture.explorePitch, "explore plays on")
    #expect(Listen.loudest(run.left, 4.2, 6.5, among: pitches) == DirectorFixture.bossPitch, "then the boss")
    #expect(Listen.level(of: Self.bridgePitch, in: Listen.window(run.left, 0, 7)) < 0.01, "the bridge never came")
  }

  @Test(
    "A tempo set by the rule that changes state counts for the bar: the bridge plays whole on it, then the state's music"
  )
  func tempoInTheSameRule() throws {
    let game = try Self.game()
    let sheet = try Self.sheet(
      game, bridges: #"[{ from: "explore", to: "combat", music: "bridging", seconds: 0.5 }]"#,
      fight: #"[{ state: "combat" }, { tempo: 1 }]"#, rules: #"{ on: "rage", do: { tempo: 1.25 } },"#)
    // Explore (a bar every 2 s of its file) hurries from 0.5 s: at 2.1 s it is 2.5 s into its
    // file, and the rule puts it back to tempo 1 as it cues the fight, so its bar at 4 s of the
    // file comes at 3.6 s. Reckoned at the speed before the rule, it was announced at 3.3 s; the
    // combat music, handed on behind the bridge from then, cut in at once over the bridge that
    // was still waiting for its bar, and the bridge was never heard.
    let run = try game.simulate(sheet, [.cue(0.5, "rage"), .cue(2.1, "fight")], seconds: 9)
    let pitches = [DirectorFixture.explorePitch, Self.bridgePitch, DirectorFixture.combatPitch]
    #expect(run.timeline.states.map(\.state) == ["explore", "combat"], "\(run.timeline.summary)")
    let bar = try #require(run.timeline.states.last?.from)
    #expect(abs(bar - 3.6) < 0.02, "the bridge on the bar at the new tempo: \(bar)\n\(run.timeline.summary)")
    #expect(
      Listen.level(of: DirectorFixture.combatPitch, in: Listen.window(run.left, 2.1, 5.0)) < 0.01,
      "no combat music before the bridge's last half second\n\(run.timeline.summary)")
    #expect(Listen.loudest(run.left, 3.7, 5.0, among: pitches) == Self.bridgePitch, "the bridge")
    #expect(Listen.loudest(run.left, 5.7, 8.5, among: pitches) == DirectorFixture.combatPitch, "then combat")
    let items = run.timeline.items.map { ($0.title, $0.at) }
    let combatItem = try #require(items.first { $0.0 == "Combat" }, "\(items)")
    #expect(abs(combatItem.1 - 5.1) < 0.02, "combat fades in over the bridge's last half second: \(items)")

    // Eased back over half a second instead: 0.5625 s of the file during the ramp, the other
    // 0.9375 s at tempo 1, so the bar comes at 3.5375 s.
    let eased = try game.sheet(
      try String(contentsOfFile: game.cuePath, encoding: .utf8).replacingOccurrences(
        of: "{ tempo: 1 }", with: "{ tempo: 1, ramp: 0.5 }"))
    let easedRun = try game.simulate(eased, [.cue(0.5, "rage"), .cue(2.1, "fight")], seconds: 9)
    let easedBar = try #require(easedRun.timeline.states.last?.from)
    #expect(abs(easedBar - 3.5375) < 0.02, "on the bar through the ramp: \(easedBar)\n\(easedRun.timeline.summary)")
    #expect(
      Listen.level(of: DirectorFixture.combatPitch, in: Listen.window(easedRun.left, 2.1, 4.95)) < 0.01,
      "no combat music before the bridge's last half second\n\(easedRun.timeline.summary)")
  }

  @Test(
    "Paused while the bridge waits for its bar: the music heard pauses, and the bridge comes on its bar after the resume"
  )
  func pauseWhileTheBridgeWaits() throws {
    let game = try Self.game()
    let sheet = try Self.sheet(
      game, bridges: #"[{ from: "explore", to: "combat", music: "bridging" }]"#,
      rules: #"{ on: "menu", do: { pause: true, fade: 0.1 } }, { on: "back", do: { resume: true, fade: 0.1 } },"#)
    // The bridge waits for explore's bar at 4 s; the game pauses at 2.5 s (explore stops at 2.6 s
    // of its file) and resumes at 5 s: the bar comes 1.4 s later, at 6.4 s. The music heard
    // was let go at the pause and the bridge began at the resume, cut short by the combat music
    // handed on behind it at the time reckoned before the pause (the reports said so, too).
    let run = try game.simulate(sheet, [.cue(2.1, "fight"), .cue(2.5, "menu"), .cue(5, "back")], seconds: 11)
    let pitches = [DirectorFixture.explorePitch, Self.bridgePitch, DirectorFixture.combatPitch]
    let bar = try #require(run.timeline.states.last?.from)
    #expect(abs(bar - 6.4) < 0.03, "the bridge heard from \(bar) s\n\(run.timeline.summary)")
    #expect(Listen.loudest(run.left, 5.2, 6.3, among: pitches) == DirectorFixture.explorePitch, "explore goes on")
    #expect(Listen.loudest(run.left, 6.5, 8.3, among: pitches) == Self.bridgePitch, "\(run.timeline.summary)")
    #expect(Listen.loudest(run.left, 8.6, 10.5, among: pitches) == DirectorFixture.combatPitch, "then combat")
    let combat = try #require(run.timeline.items.first { $0.title == "Combat" }?.at, "\(run.timeline.summary)")
    #expect(abs(combat - 8.4) < 0.03, "combat reported at \(combat) s\n\(run.timeline.summary)")
  }

  @Test("Bridge mistakes are errors naming the key")
  func mistakes() throws {
    let game = try Self.game()
    for (bridges, expected) in [
      (#"[{ from: "explor", to: "combat", music: "bridging" }]"#, "bridges[0].from: no state named \"explor\""),
      (#"[{ from: "explore", to: "combat", music: "mine" }]"#, "a bridge plays bundled music"),
      (#"[{ from: "explore", music: "bridging" }]"#, "a bridge needs \"to\""),
      (#"[{ from: "explore", to: "combat" }]"#, "a bridge needs \"music\""),
      (#"[{ from: "explore", to: "combat", music: "nothing" }]"#, "bridges[0].music"),
      (#"{ from: "explore" }"#, "a list of bridges"),
    ] {
      let error = #expect(throws: CueFileError.self, "\(bridges)") { _ = try Self.sheet(game, bridges: bridges) }
      #expect(error?.description.contains(expected) == true, "\(bridges): \(String(describing: error))")
    }
  }
}
