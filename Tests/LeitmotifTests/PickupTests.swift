import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine

/// Pre-entry and post-exit: an incoming piece's pickup starts before the grid line so that its
/// downbeat lands on it, and the outgoing piece plays a tail past it; both to the frame offline.
@Suite("Transitions: pickups and tails")
struct PickupTests {
  static let leadPitch = 440.0

  /// The fixture's tones plus "lead.ogg", a 440 Hz piece whose first downbeat is 0.5 s in.
  static func game() throws -> DirectorFixture {
    let game = try DirectorFixture()
    try DirectorFixture.tone(
      game.assets + "/lead.ogg", pitch: leadPitch, seconds: 8, tags: [("TITLE", "Lead"), ("BPM", "120")])
    return game
  }

  static func sheet(_ game: DirectorFixture, from start: String, transition: String) throws -> CueSheet {
    try game.sheet(
      """
      {
        start: "\(start)",
        assets: "assets",
        sources: {
          quiet: { bundled: "quiet.ogg" },
          calm: { bundled: "explore.ogg" },
          lead: { bundled: "lead.ogg", pickup: 0.5 },
          tense: { bundled: "combat.ogg" },
        },
        states: {
          silence: { music: "quiet" },
          explore: { music: "calm" },
          arrive: { music: "lead", transition: \(transition) },
          combat: { music: "tense", transition: \(transition) },
        },
        rules: [
          { on: "go", do: { state: "arrive" } },
          { on: "fight", do: { state: "combat" } },
          { on: "menu", do: { pause: true, fade: 0.2 } },
          { on: "back", do: { resume: true, fade: 0.2 } },
          { on: "home", do: { state: "explore" } },
          { on: "died", do: { stop: true, fade: 0.5 } },
          { on: "slow", do: { rate: 0.8 } },
        ],
      }
      """)
  }

  @Test(
    "A pause menu during a pickup: the lead-in and the music held under it both go on after the resume, as if the game had not paused, the downbeat that much later"
  )
  func pauseDuringThePickup() throws {
    let game = try Self.game()
    let sheet = try Self.sheet(game, from: "explore", transition: #"{ seconds: 0.25, at: "bar", pickup: true }"#)
    // "go" at 2.1 s: the lead's pickup from 3.5 s, its downbeat on the bar at 4 s. The menu at
    // 3.7 s pauses the music at 3.9 s (after its 0.2 s fade), mid-pickup; "back" at 4.6 s. The
    // explore music held under the pickup was let go at the pause: after the resume the lead-in
    // played alone.
    let straight = try game.simulate(sheet, [.cue(2.1, "go")], seconds: 7)
    let paused = try game.simulate(sheet, [.cue(2.1, "go"), .cue(3.7, "menu"), .cue(4.6, "back")], seconds: 7.7)
    let shift = Int((0.7 * 48_000).rounded())
    // From the end of the resume's fade on (on the director's step after 4.8 s), the paused
    // level is the straight one 0.7 s later, sample for sample.
    let from = Int(4.85 * 48_000)
    var largest: Float = 0
    for frame in from..<min(paused.left.count, straight.left.count + shift) {
      largest = max(largest, abs(paused.left[frame] - straight.left[frame - shift]))
    }
    #expect(
      largest < 1e-6, "after the resume, \(largest) from the level that did not pause\n\(paused.timeline.summary)")
    let explore = DirectorFixture.explorePitch
    #expect(
      Listen.level(of: explore, in: Listen.window(paused.left, 4.8, 4.88)) > 0.5
        * Listen.level(of: explore, in: Listen.window(paused.left, 2.5, 3.4)),
      "the music held goes on under the lead-in")
    let arrived = try #require(paused.timeline.states.last { $0.state == "arrive" }?.from, "\(paused.timeline.summary)")
    #expect(abs(arrived - 4.7) < 0.002, "the downbeat at \(arrived) s\n\(paused.timeline.summary)")
  }

  @Test(
    "Paused during a pickup: the state heard asked for again calls the change off and goes on where it paused; the state waiting asked for again waits on; a stop calls the change off, and the resume starts the state heard"
  )
  func stateChangesWhilePausedDuringThePickup() throws {
    let game = try Self.game()
    let sheet = try Self.sheet(game, from: "explore", transition: #"{ seconds: 0.25, at: "bar", pickup: true }"#)
    // "go" at 2.1 s: the pickup from 3.5 s for the bar at 4 s; the menu at 3.7 s pauses at 3.9 s,
    // mid-pickup; every cue below comes at 4.4 s, while paused, past the downbeat's time.
    let alone = try game.simulate(sheet, [], seconds: 8)
    let home = try game.simulate(
      sheet, [.cue(2.1, "go"), .cue(3.7, "menu"), .cue(4.4, "home"), .cue(4.6, "back")], seconds: 7.5)
    // The explore music goes on from 3.9 s after the resume, alone: it was started again from
    // its start, its change made again at once (with the state's fade-in), while paused.
    let shift = Int((0.7 * 48_000).rounded())
    var largest: Float = 0
    for frame in Int(4.85 * 48_000)..<Int(7.4 * 48_000) {
      largest = max(largest, abs(home.left[frame] - alone.left[frame - shift]))
    }
    #expect(largest < 1e-6, "\(largest) from the explore music moved on by the pause\n\(home.timeline.summary)")
    #expect(!home.timeline.states.contains { $0.state == "arrive" }, "\(home.timeline.summary)")
    #expect(
      home.timeline.summary.contains(
        #"stay in "explore" (paused: it goes on when the music resumes); the change to "arrive" waiting for its line is called off"#
      ), "\(home.timeline.summary)")

    // The state that waits asked for again: it waits on, as if it had not been asked (it was made
    // again at once, reported twice, its music from its start).
    let again = try game.simulate(
      sheet, [.cue(2.1, "go"), .cue(3.7, "menu"), .cue(4.4, "go"), .cue(4.6, "back")], seconds: 7.5)
    let paused = try game.simulate(sheet, [.cue(2.1, "go"), .cue(3.7, "menu"), .cue(4.6, "back")], seconds: 7.5)
    #expect(again.left == paused.left, "the same as without the second cue")
    #expect(again.timeline.states.filter { $0.state == "arrive" }.count == 1, "\(again.timeline.summary)")

    // A stop while paused calls the change off: the resume starts the state heard (it started
    // the lead, a state never heard).
    let stopped = try game.simulate(
      sheet, [.cue(2.1, "go"), .cue(3.7, "menu"), .cue(4.4, "died"), .cue(5.5, "back")], seconds: 7)
    #expect(stopped.timeline.state(at: 6.5) == "explore", "\(stopped.timeline.summary)")
    #expect(
      Listen.loudest(stopped.left, 6.0, 6.9, among: [DirectorFixture.explorePitch, Self.leadPitch])
        == DirectorFixture.explorePitch, "\(stopped.timeline.summary)")
  }

  @Test(
    "Paused after a change was heard: nothing waits for a line; the state heard asked for again stays, another state changes from it, the state before it is a change too"
  )
  func stateChangesWhilePausedAfterTheChange() throws {
    let game = try Self.game()
    let sheet = try Self.sheet(game, from: "explore", transition: #"{ seconds: 0.25, at: "bar", pickup: true }"#)
    // "go" at 2.1 s: the lead's downbeat on the bar at 4 s, heard from then on. The menu at 5 s
    // pauses at 5.2 s; each cue below comes at 5.6 s, while paused. The change heard before the
    // pause was taken for one still waiting for its line: the state asked for again was said to
    // wait for it, another state was said to call it off and to change from the state before it.
    let script: (String) -> [CueScript.Step] = { [.cue(2.1, "go"), .cue(5, "menu"), .cue(5.6, $0), .cue(6.2, "back")] }
    let again = try game.simulate(sheet, script("go"), seconds: 8)
    #expect(
      again.timeline.summary.contains(#"stay in "arrive" (paused: it goes on when the music resumes)"#),
      "\(again.timeline.summary)")
    #expect(!again.timeline.summary.contains("waits for its line"), "\(again.timeline.summary)")
    let paused = try game.simulate(sheet, [.cue(2.1, "go"), .cue(5, "menu"), .cue(6.2, "back")], seconds: 8)
    #expect(again.left == paused.left, "the same as without the cue")

    for (cue, state) in [("fight", "combat"), ("home", "explore")] {
      let run = try game.simulate(sheet, script(cue), seconds: 9)
      #expect(!run.timeline.summary.contains("called off"), "\(cue): \(run.timeline.summary)")
      #expect(
        run.timeline.summary.contains(#"state "arrive" -> "\#(state)""#), "\(cue): \(run.timeline.summary)")
      #expect(run.timeline.state(at: 8.5) == state, "\(cue): \(run.timeline.summary)")
      // The lead heard before the pause fades out after the resume (into the new state's music).
      #expect(
        Listen.loudest(
          run.left, 8.2, 8.9, among: [DirectorFixture.explorePitch, DirectorFixture.combatPitch, Self.leadPitch])
          != Self.leadPitch, "\(cue): \(run.timeline.summary)")
    }
  }

  @Test("A pickup starts its piece exactly its length before the bar, and the downbeat lands on the bar")
  func pickupLandsTheDownbeat() throws {
    let game = try Self.game()
    // From digital silence, so the first sample that is not zero is the incoming piece's.
    let plain = try Self.sheet(game, from: "silence", transition: #"{ seconds: 0, at: "bar" }"#)
    let withPickup = try Self.sheet(game, from: "silence", transition: #"{ seconds: 0, at: "bar", pickup: true }"#)
    let script: [CueScript.Step] = [.cue(2.1, "go")]
    let onTheBar = try game.simulate(plain, script, seconds: 6)
    let early = try game.simulate(withPickup, script, seconds: 6)
    let barFrame = try #require(Listen.firstSound(onTheBar.left, after: 0), "\(onTheBar.timeline.summary)")
    let pickupFrame = try #require(Listen.firstSound(early.left, after: 0), "\(early.timeline.summary)")
    // The bar (120 BPM: 2 s) after 2.1 s with room for 0.5 s is the one at 4 s of the quiet piece.
    #expect(abs(Double(barFrame) / 48_000 - 4) < 0.02, "the plain entry at \(barFrame)")
    #expect(barFrame - pickupFrame == 24_000, "the pickup starts \(barFrame - pickupFrame) frames before the bar")
    // The state is heard from the downbeat in both: the reports name the same time.
    let plainBand = try #require(onTheBar.timeline.states.last), pickupBand = try #require(early.timeline.states.last)
    #expect(plainBand.state == "arrive" && pickupBand.state == "arrive")
    #expect(abs(plainBand.from - pickupBand.from) < 1e-6, "\(plainBand.from) and \(pickupBand.from)")
    #expect(early.timeline.lines.contains { $0.contains("its pickup from 3.5") }, "\(early.timeline.summary)")

    // Too close to the next bar for the pickup (3.7 s: 0.3 s before the bar at 4 s): the bar after.
    let late = try game.simulate(withPickup, [.cue(3.7, "go")], seconds: 8)
    let lateFrame = try #require(Listen.firstSound(late.left, after: 0))
    #expect(lateFrame - pickupFrame == 96_000, "the next bar, 2 s later: \(lateFrame - pickupFrame) frames")
  }

  @Test("At rate 0.8 a pickup starts its piece its length at that rate before the bar: the downbeat on the bar")
  func pickupAtAnotherRate() throws {
    let game = try Self.game()
    let plain = try Self.sheet(game, from: "silence", transition: #"{ seconds: 0, at: "bar" }"#)
    let withPickup = try Self.sheet(game, from: "silence", transition: #"{ seconds: 0, at: "bar", pickup: true }"#)
    // From 0.2 s at 0.8, the quiet piece's bars (2 s of file) are heard 2.5 s apart: at 2.45 s
    // and 4.95 s. "go" at 2.6 s takes the one at 4.95 s, with room for the pickup's 0.5 s of
    // file, heard over 0.625 s.
    let script: [CueScript.Step] = [.cue(0.2, "slow"), .cue(2.6, "go")]
    let onTheBar = try game.simulate(plain, script, seconds: 7)
    let early = try game.simulate(withPickup, script, seconds: 7)
    let barFrame = try #require(Listen.firstSound(onTheBar.left, after: 0), "\(onTheBar.timeline.summary)")
    let pickupFrame = try #require(Listen.firstSound(early.left, after: 0), "\(early.timeline.summary)")
    #expect(abs(Double(barFrame) / 48_000 - 4.95) < 0.02, "the plain entry at \(barFrame)")
    // It started 0.5 s before the bar, as at rate 1: the downbeat came 0.125 s after the bar.
    #expect(barFrame - pickupFrame == 30_000, "the pickup starts \(barFrame - pickupFrame) frames before the bar")
    #expect(early.timeline.lines.contains { $0.contains("its pickup from 4.32") }, "\(early.timeline.summary)")
  }

  @Test("A stinger on the beat during a pickup lands on the beat of the music heard, not of the pickup's piece")
  func stingerDuringThePickup() throws {
    let game = try Self.game()
    let sheet = try game.sheet(
      """
      { start: "explore", assets: "assets",
        sources: { calm: { bundled: "explore.ogg" }, big: { bundled: "boss.ogg", pickup: 1 } },
        states: { explore: { music: "calm" }, boss: { music: "big", transition: { seconds: 0.25, at: "bar", pickup: true } } },
        rules: [
          { on: "boss", do: { state: "boss" } },
          { on: "hit", do: { stinger: "hit.ogg", at: "beat" } },
        ] }
      """)
    // "boss" at 2.5 s: explore's bar at 4 s, the boss piece's pickup (1 s) from 3 s. "hit" at
    // 3.2 s: explore's next beat (120 BPM) is at 3.5 s; the boss piece's (90 BPM, its bars from
    // 1 s in) at 3.33 s, which the hit took.
    let (left, timeline) = try game.simulate(sheet, [.cue(2.5, "boss"), .cue(3.2, "hit")], seconds: 5)
    #expect(timeline.summary.contains("on the beat (3.5 s)"), "\(timeline.summary)")
    let hit = DirectorFixture.stingerPitch
    #expect(Listen.level(of: hit, in: Listen.window(left, 3.36, 3.49)) < 0.01, "\(timeline.summary)")
    #expect(Listen.level(of: hit, in: Listen.window(left, 3.51, 3.7)) > 0.1, "\(timeline.summary)")
  }

  @Test(
    "During a pickup the beats reported are the music heard's, held to the downbeat; the new piece's count starts on it, also under a tail",
    arguments: ["", "tail: 1,"])
  func beatsDuringThePickup(tail: String) throws {
    let game = try Self.game()
    let text = """
      { start: "explore", assets: "assets",
        sources: { calm: { bundled: "explore.ogg" }, big: { bundled: "boss.ogg", pickup: 1 } },
        states: { explore: { music: "calm" }, boss: { music: "big", transition: { seconds: 0.25, at: "bar", pickup: true, \(tail) } } },
        rules: [ { on: "boss", do: { state: "boss" } } ] }
      """
    let engine = try AudioEngine(output: .offline(sampleRate: 48_000, renderFrames: 256))
    let director = Director(engine: engine, sheet: try game.sheet(text), library: nil, clocking: .pumped)
    let log = BeatLog()
    director.addBeatObserver { log.add($0) }
    var buffer = [Float](repeating: 0, count: 2 * 256)
    var frame = 0
    while frame < 5 * 48_000 {
      director.advance(toAudioTime: Double(frame) / 48_000)
      if frame <= 120_000 && frame + 256 > 120_000 { director.post("boss") }  // 2.5 s
      buffer.withUnsafeMutableBufferPointer { engine.render(into: $0.baseAddress!, frameCount: 256) }
      frame += 256
    }
    // Explore (120 BPM) to its bar at 4 s; the boss piece (90 BPM, its pickup from 3 s) from its
    // downbeat there. Its pickup's beats (3 s, 3.33 s, 3.67 s) are not the music the game hears.
    let beats = log.all
    let expected: [Int64] = (0..<8).map { Int64($0 * 24_000) } + [192_000, 224_000]
    #expect(
      beats.map(\.mixFrame) == expected,
      "\(beats.map { "\($0.item.title ?? "?") \($0.bar).\($0.beat) @\($0.mixFrame)" })")
    #expect(beats.prefix(8).allSatisfy { $0.item.title == "Explore" }, "\(beats.map { $0.item.title ?? "?" })")
    #expect(beats.map { "\($0.bar).\($0.beat)" }.suffix(2) == ["1.1", "1.2"])
  }

  @Test("During a pickup the music playing holds its level; it fades from the downbeat on")
  func outgoingHoldsThroughThePickup() throws {
    let game = try Self.game()
    let sheet = try Self.sheet(game, from: "explore", transition: #"{ seconds: 0.25, at: "bar", pickup: true }"#)
    let run = try game.simulate(sheet, [.cue(2.1, "go")], seconds: 6)
    let downbeat = try #require(run.timeline.states.last?.from)
    let explore = DirectorFixture.explorePitch
    let before = Listen.level(of: explore, in: Listen.window(run.left, downbeat - 1.5, downbeat - 0.6))
    let duringPickup = Listen.level(
      of: explore, in: Listen.window(run.left, downbeat - 0.45, downbeat - 0.05))
    let lead = Listen.level(of: Self.leadPitch, in: Listen.window(run.left, downbeat - 0.45, downbeat - 0.05))
    let after = Listen.level(of: explore, in: Listen.window(run.left, downbeat + 0.35, downbeat + 1))
    #expect(abs(duringPickup / before - 1) < 0.02, "held through the pickup: \(duringPickup) against \(before)")
    #expect(lead > 0.05, "the pickup sounds over it: \(lead)")
    #expect(after < before * 0.01, "gone after its fade: \(after)")
  }

  @Test("A change to another state during a pickup calls it off: the pickup stops, the music held goes on, unfaded")
  func changeDuringThePickup() throws {
    let game = try Self.game()
    let sheet = try Self.sheet(game, from: "explore", transition: #"{ seconds: 0.25, at: "bar", pickup: true }"#)
    // "go" at 2.1 s: the lead's pickup from 3.5 s, its downbeat on the bar at 4 s. "fight" at
    // 3.7 s, mid-pickup. The explore music had been let go when the pickup began (it fades from
    // the downbeat), so the change could not be taken back: the reports said it was called off
    // while the lead played on and took the bar, and the fight was reckoned on the lead's grid.
    let run = try game.simulate(sheet, [.cue(2.1, "go"), .cue(3.7, "fight")], seconds: 6)
    let explore = DirectorFixture.explorePitch
    let before = Listen.level(of: explore, in: Listen.window(run.left, 2.5, 3.4))
    let held = Listen.level(of: explore, in: Listen.window(run.left, 3.75, 3.98))
    #expect(Listen.level(of: Self.leadPitch, in: Listen.window(run.left, 3.55, 3.68)) > 0.05, "the pickup began")
    #expect(
      Listen.level(of: Self.leadPitch, in: Listen.window(run.left, 3.75, 3.98)) < 0.005,
      "the pickup stops: \(run.timeline.summary)")
    #expect(abs(held / before - 1) < 0.02, "explore held, unfaded: \(held) against \(before)")
    #expect(
      Listen.loudest(run.left, 4.4, 5.8, among: [explore, Self.leadPitch, DirectorFixture.combatPitch])
        == DirectorFixture.combatPitch, "\(run.timeline.summary)")
    #expect(
      run.timeline.summary.contains("the change to \"arrive\" waiting for 4 s is called off"), "\(run.timeline.summary)"
    )
    #expect(!run.timeline.states.contains { $0.state == "arrive" }, "\(run.timeline.summary)")
  }

  @Test("A tail plays the outgoing music on past the bar at its level, then fades it")
  func tailPlaysPastTheBar() throws {
    let game = try Self.game()
    let plain = try Self.sheet(game, from: "explore", transition: #"{ seconds: 0.25, at: "bar" }"#)
    let tailed = try Self.sheet(game, from: "explore", transition: #"{ seconds: 0.25, at: "bar", tail: 1 }"#)
    let script: [CueScript.Step] = [.cue(2.1, "fight")]
    let cut = try game.simulate(plain, script, seconds: 6)
    let long = try game.simulate(tailed, script, seconds: 6)
    let bar = try #require(long.timeline.states.last?.from)
    #expect(abs(bar - (try #require(cut.timeline.states.last?.from))) < 1e-6)
    let explore = DirectorFixture.explorePitch
    func level(_ left: [Float], _ from: Double, _ to: Double) -> Double {
      Listen.level(of: explore, in: Listen.window(left, bar + from, bar + to))
    }
    let before = level(long.left, -1, -0.2)
    #expect(abs(level(long.left, 0.3, 0.95) / before - 1) < 0.02, "the tail at full level")
    #expect(level(cut.left, 0.3, 0.95) < before * 0.01, "without a tail it is gone by then")
    #expect(level(long.left, 1.3, 2) < before * 0.01, "after the tail and its fade it is gone")
    // The incoming music starts on the bar in both.
    #expect(Listen.loudest(long.left, bar + 0.3, bar + 0.95, among: [DirectorFixture.combatPitch]) != nil)
    let combatCut = Listen.level(
      of: DirectorFixture.combatPitch, in: Listen.window(cut.left, bar + 0.3, bar + 0.95))
    let combatLong = Listen.level(
      of: DirectorFixture.combatPitch, in: Listen.window(long.left, bar + 0.3, bar + 0.95))
    #expect(abs(combatLong / combatCut - 1) < 0.02, "\(combatLong) and \(combatCut)")
  }

  /// "loop.ogg": 8 s of silence at 120 BPM (2 s bars), looping from 0.5 s to 3.2 s (not on a
  /// bar), so the first sound is the pickup's; played at `rate` in state "looping". "go" changes
  /// to "lead.ogg" (a 0.5 s pickup) at `moment` with its pickup; "free" releases the loop.
  static func silentLoop(rate: Double, at moment: String) throws -> (DirectorFixture, CueSheet) {
    let game = try Self.game()
    try DirectorFixture.tone(
      game.assets + "/loop.ogg", pitch: DirectorFixture.explorePitch, seconds: 8, amplitude: 0,
      tags: [("TITLE", "Loop"), ("BPM", "120"), ("LOOPSTART", "24000"), ("LOOPLENGTH", "129600")])
    let sheet = try game.sheet(
      """
      {
        start: "looping",
        assets: "assets",
        sources: { loop: { bundled: "loop.ogg" }, lead: { bundled: "lead.ogg", pickup: 0.5 } },
        states: {
          looping: { music: "loop", rate: \(rate) },
          arrive: { music: "lead", transition: { seconds: 0, at: "\(moment)", pickup: true } },
        },
        rules: [ { on: "free", do: { releaseLoop: true } }, { on: "go", do: { state: "arrive" } } ],
      }
      """)
    return (game, sheet)
  }

  @Test(
    "A pickup whose bar lies past the loop end of the music playing lands on the next pass's bar, read or resampled",
    arguments: [1.0, 1.1])
  func pickupAcrossTheLoopSeam(rate: Double) throws {
    let (game, sheet) = try Self.silentLoop(rate: rate, at: "bar")
    // Cued at 2.7 s: the file is at 2.7 * rate s, and the pickup (0.5 s) reaches past the loop
    // end (3.2 s). The bar is the next pass's first after the pickup: from the loop start (0.5 s)
    // on, the one at 2 s, 1.5 s into the pass; heard as if the loop went on, at 3.2 + 1.5 = 4.7 s
    // of the file. Before, the change waited on 3.5 s of the file (the bar at 4 s less the
    // pickup), past the loop end: the music never got there, and the change never happened.
    let cue = 2.7
    let downbeat = cue + (4.7 - cue * rate) / rate
    let run = try game.simulate(sheet, [.cue(cue, "go")], seconds: 7)
    let band = try #require(run.timeline.states.last)
    #expect(band.state == "arrive", "\(run.timeline.summary)")
    #expect(abs(band.from - downbeat) < 1e-3, "heard from \(band.from) s, the bar at \(downbeat) s")
    // The pickup starts its length before that, within 2.5 frames: the first sample that is not
    // zero is the start's or the next, and resampled, the seam and the way past it are each
    // rounded to a frame (measured: 1 frame off read, 2.1 resampled).
    let expected = (downbeat - 0.5) * Double(DirectorFixture.rate)
    let first = Listen.firstSound(run.left, after: 0) ?? -1
    #expect(
      abs(Double(first) - expected) <= 2.5, "the pickup starts on frame \(first) (-1: never), expected \(expected)")
    #expect(Listen.level(of: Self.leadPitch, in: Listen.window(run.left, downbeat, downbeat + 1)) > 0.05)
  }

  @Test("A loop released just before its seam plays one more pass: a pickup timed past the seam still starts on time")
  func pickupAfterALateRelease() throws {
    // The silent loop, released 50 ms before its seam: too near it to end there
    // (`Voice.releaseLoop`), so it plays one more pass.
    let (game, sheet) = try Self.silentLoop(rate: 1, at: "beat")
    // Cued at 3.17 s: the director, told the loop is released, puts the downbeat on the beat at
    // 4 s of the file and the pickup's start on 3.5 s, past the seam. The music jumps back at
    // 3.2 s once more, so that position came only at the end of the next pass (6.2 s); it is
    // now the next pass's, as far past the seam: heard at 3.5 s, as reported.
    let run = try game.simulate(sheet, [.cue(3.15, "free"), .cue(3.17, "go")], seconds: 7)
    let first = Listen.firstSound(run.left, after: 0) ?? -1
    #expect(abs(Double(first) - 3.5 * 48_000) <= 2.5, "the pickup starts on frame \(first) (-1: never)")
    #expect(run.timeline.lines.contains { $0.contains("its pickup from 3.5 s") }, "\(run.timeline.summary)")
  }

  @Test("A bar line on the loop end of a resampled, looping piece is reached: the change happens on the seam")
  func barOnTheLoopSeam() throws {
    let game = try Self.game()
    // 8 s at 120 BPM (2 s bars), looping from 2 s to 6 s, played at rate 1.1 (so resampled).
    try DirectorFixture.tone(
      game.assets + "/loop.ogg", pitch: DirectorFixture.explorePitch, seconds: 8,
      tags: [("TITLE", "Loop"), ("BPM", "120"), ("LOOPSTART", "96000"), ("LOOPLENGTH", "192000")])
    let sheet = try game.sheet(
      """
      {
        start: "looping",
        assets: "assets",
        sources: { loop: { bundled: "loop.ogg" }, tense: { bundled: "combat.ogg" } },
        states: {
          looping: { music: "loop", rate: 1.1 },
          combat: { music: "tense", transition: { seconds: 0, at: "bar" } },
        },
        rules: [ { on: "fight", do: { state: "combat" } } ],
      }
      """)
    // At 4.5 s the file is at 4.95 s: its next bar line is 6 s, the loop end, heard at 5.45 s.
    let run = try game.simulate(sheet, [.cue(4.5, "fight")], seconds: 8)
    let band = try #require(run.timeline.states.last)
    #expect(band.state == "combat", "\(run.timeline.summary)")
    #expect(abs(band.from - 6 / 1.1) < 0.02, "heard from \(band.from) s\n\(run.timeline.summary)")
    let pitches = [DirectorFixture.explorePitch, DirectorFixture.combatPitch]
    #expect(Listen.loudest(run.left, 6, 7.5, among: pitches) == DirectorFixture.combatPitch, "the change was heard")
    // Until the change the looping piece plays on at its own rate (a change to a state at rate
    // 1 used to slow it down as soon as it was decided, a bar early).
    #expect(
      Listen.loudest(run.left, 4.6, 5.3, among: pitches.map { $0 * 1.1 }) == DirectorFixture.explorePitch * 1.1)
  }

  @Test(
    "A change while the playing music still fades in: its fade goes on rising until the hold ends, the same in renders of any size"
  )
  func holdGoesOnAlongAFadeIn() throws {
    let game = try Self.game()
    let sheet = try game.sheet(
      """
      {
        start: "explore",
        assets: "assets",
        sources: { calm: { bundled: "explore.ogg" }, tense: { bundled: "combat.ogg" }, lead: { bundled: "lead.ogg", pickup: 0.5 } },
        states: {
          explore: { music: "calm" },
          combat: { music: "tense", transition: { seconds: 3 } },
          arrive: { music: "lead", transition: { seconds: 0.25, at: "bar", pickup: true } },
        },
        rules: [ { on: "fight", do: { state: "combat" } }, { on: "go", do: { state: "arrive" } } ],
      }
      """)
    // The combat music fades in from 1 s over 3 s; at 2.1 s, mid-fade, the change to "arrive" is
    // taken, its pickup half a second before the combat music's next bar.
    let script: [CueScript.Step] = [.cue(1, "fight"), .cue(2.1, "go")]
    var options = CueSimulation.Options()
    let run = try game.simulate(sheet, script, seconds: 4.5, options: options)
    let downbeat = try #require(run.timeline.states.last?.from)
    #expect(run.timeline.states.last?.state == "arrive", "\(run.timeline.summary)")
    #expect(downbeat > 2.9 && downbeat < 3.2, "\(run.timeline.summary)")
    // Until the pickup starts the mix is what it would be without the change: the combat music
    // goes on fading in. Its level used to jump to where the fade would be at the bar, from the
    // first frame of the block in which the pickup started.
    let fightOnly = try game.simulate(sheet, [.cue(1, "fight")], seconds: 4.5, options: options)
    let pickup = Int(((downbeat - 0.5) * 48_000).rounded())
    let beforePickup = zip(run.left[..<pickup], fightOnly.left[..<pickup]).map { abs($0 - $1) }.max() ?? 0
    #expect(beforePickup == 0, "before the pickup at frame \(pickup) the mix differs by up to \(beforePickup)")
    // Where the mix is cut into blocks changes nothing (live, the device's periods cut it): the
    // jump fell on the first frame of another block, 0.06 of full scale apart. (Within 1e-5, not bit for bit: the
    // combat music's first volume is the start fade's level at the director step that took the
    // cue, and in renders of 100 frames that is a step earlier: 1.7e-6 apart at most.)
    options.renderFrames = 100
    let other = try game.simulate(sheet, script, seconds: 4.5, options: options)
    let worst = zip(run.left, other.left).map { abs($0 - $1) }.max() ?? 0
    #expect(worst < 1e-5, "renders of 256 and of 100 frames differ by up to \(worst)")
  }

  @Test("A pickup where it cannot work, and a bad tail, are errors naming the key")
  func mistakes() throws {
    let game = try Self.game()
    for (transition, expected) in [
      (#"{ at: "end", pickup: true }"#, "goes with at: \"now\", \"beat\" or \"bar\""),
      (#"{ at: "bar", enter: "loop-start", pickup: true }"#, "goes with enter: \"start\""),
      (#"{ at: "bar", tail: -1 }"#, "tail"),
      (#"{ at: "bar", pickup: 1 }"#, "true or false"),
    ] {
      let error = #expect(throws: CueFileError.self, "\(transition)") {
        _ = try Self.sheet(game, from: "explore", transition: transition)
      }
      #expect(error?.description.contains(expected) == true, "\(transition): \(String(describing: error))")
      #expect(error?.description.contains("states.arrive.transition") == true, "\(String(describing: error))")
    }
  }
}
