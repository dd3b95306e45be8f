import Foundation
import LeitmotifFixtures
import Synchronization
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifDecoding

/// Exit and entry at named cue points: from the cue file (`cues`, in seconds or bars) or from the
/// file's own `CUE_<NAME>` tags; to the frame offline.
@Suite("Transitions: named exit and entry cues")
struct CueNameTests {
  /// The pitch of "marked.ogg" in its second `n` (from 0): a staircase, so where it plays from
  /// can be heard.
  static func pitch(second: Int) -> Double { 300 + 100 * Double(second) }

  /// The fixture's tones plus "marked.ogg" (10 s, 120 BPM, a new pitch each second) whose tags
  /// mark CUE_EXIT at 3.25 s and CUE_CHORUS at 5 and 7 s.
  static func game() throws -> DirectorFixture {
    let game = try DirectorFixture()
    var samples: [Float] = []
    for second in 0..<10 {
      let tone = ToneGenerator.sine(frequency: pitch(second: second), amplitude: 0.4, seconds: 1, format: .stereo48000)
      for frame in 0..<(tone.count / 2) { samples += [tone[2 * frame], tone[2 * frame]] }
    }
    try VorbisEncoder.encode(
      samples: samples, format: .stereo48000,
      tags: [("TITLE", "Marked"), ("BPM", "120"), ("CUE_EXIT", "3.25"), ("CUE_CHORUS", "7, 5")],
      to: game.assets + "/marked.ogg")
    return game
  }

  static func sheet(_ game: DirectorFixture, marked: String = "", transition: String) throws -> CueSheet {
    try game.sheet(
      """
      {
        start: "first",
        assets: "assets",
        sources: {
          quiet: { bundled: "quiet.ogg", cues: { exit: [1.5, 3.75], drop: { bar: 3 } } },
          marked: { bundled: "marked.ogg" \(marked) },
          calm: { bundled: "explore.ogg" },
        },
        states: {
          first: { music: "quiet" },
          second: { music: "marked", transition: \(transition) },
          third: { music: "calm", transition: \(transition) },
        },
        rules: [
          { on: "go", do: { state: "second" } },
          { on: "on", do: { state: "third" } },
        ],
      }
      """)
  }

  @Test("The tags are read: CUE_EXIT and CUE_CHORUS, sorted, in seconds")
  func tagsAreRead() throws {
    let game = try Self.game()
    let item = try MediaItem.load(path: game.assets + "/marked.ogg")
    #expect(item.cuePoints == ["exit": [3.25], "chorus": [5, 7]])
  }

  @Test("at: { cue } leaves on the playing item's next cue point of that name, to the frame")
  func exitAtNamedCue() throws {
    let game = try Self.game()
    let sheet = try Self.sheet(game, transition: #"{ seconds: 0, at: { cue: "exit" } }"#)
    // The quiet piece's exits are at 1.5 and 3.75 s: after 2 s, the one at 3.75 s.
    let run = try game.simulate(sheet, [.cue(2, "go")], seconds: 6)
    let start = try #require(Listen.firstSound(run.left, after: 0), "\(run.timeline.summary)")
    // The same piece entered at once, for the pre-roll of the start state's first mix.
    let now = try game.simulate(
      try Self.sheet(game, transition: #"{ seconds: 0, at: "now" }"#), [.cue(3.75, "go")], seconds: 6)
    let reference = try #require(Listen.firstSound(now.left, after: 0))
    #expect(abs(start - reference) <= 256, "at \(start), the reference \(reference)")
    #expect(abs(Double(start) / 48_000 - 3.75) < 0.01, "\(start)")
    #expect(run.timeline.lines.contains { $0.contains("at cue \"exit\" (3.75") }, "\(run.timeline.summary)")
    // A bar cue (`{ bar: 3 }`: 4 s at 120 BPM in 4/4).
    let bar = try game.simulate(
      try Self.sheet(game, transition: #"{ seconds: 0, at: { cue: "drop" } }"#), [.cue(1, "go")], seconds: 6)
    let barStart = try #require(Listen.firstSound(bar.left, after: 0))
    #expect(abs(Double(barStart) / 48_000 - 4) < 0.01, "\(barStart)")
  }

  @Test("With no cue of that name ahead, the change waits for the item's end and says so")
  func noCueAhead() throws {
    let game = try Self.game()
    let sheet = try Self.sheet(game, transition: #"{ seconds: 0, at: { cue: "exit" } }"#)
    let run = try game.simulate(sheet, [.cue(4, "go")], seconds: 14)
    #expect(run.timeline.lines.contains { $0.contains("no cue \"exit\" ahead") }, "\(run.timeline.summary)")
    let start = try #require(Listen.firstSound(run.left, after: 0))
    #expect(abs(Double(start) / 48_000 - 12) < 0.02, "the quiet piece ends at 12 s: \(start)")
  }

  @Test("A looping piece's exit cue past its loop end is never reached: the next pass's exit cue is taken")
  func exitCueOfALoop() throws {
    let game = try Self.game()
    // 8 s of silence looping from 1 s to 5 s, with exit cues at 2 s (in the loop) and 6.5 s (in
    // its outro, heard only once the loop is released).
    try DirectorFixture.tone(
      game.assets + "/loop.ogg", pitch: 440, seconds: 8, amplitude: 0,
      tags: [("TITLE", "Loop"), ("BPM", "120"), ("LOOPSTART", "48000"), ("LOOPLENGTH", "192000")])
    let sheet = try game.sheet(
      """
      {
        start: "first",
        assets: "assets",
        sources: { loop: { bundled: "loop.ogg", cues: { exit: [2, 6.5] } }, marked: { bundled: "marked.ogg" } },
        states: {
          first: { music: "loop" },
          second: { music: "marked", transition: { seconds: 0, at: { cue: "exit" } } },
        },
        rules: [ { on: "go", do: { state: "second" } } ],
      }
      """)
    // Cued at 3 s: this pass's exit at 2 s is gone, the one at 6.5 s lies past the loop's end.
    // The next pass's exit at 2 s is heard at 5 + 1 = 6 s. The change waited for 6.5 s of the
    // file, which the loop never reached: it never happened.
    let run = try game.simulate(sheet, [.cue(3, "go")], seconds: 7)
    let start = Listen.firstSound(run.left, after: 0) ?? -1
    #expect(abs(Double(start) / 48_000 - 6) < 0.001, "the marked piece starts on frame \(start) (-1: never)")
    #expect(run.timeline.states.last?.state == "second", "\(run.timeline.summary)")
    #expect(run.timeline.lines.contains { $0.contains("at cue \"exit\" (6 s)") }, "\(run.timeline.summary)")
  }

  @Test("at: \"exit\" is the outgoing piece's exit cue, from its file's tags")
  func exitFromTags() throws {
    let game = try Self.game()
    let sheet = try Self.sheet(game, transition: #"{ seconds: 0, at: "exit" }"#)
    // Into the marked piece on quiet's next exit (3.75 s), then out of it on its own tagged exit.
    let run = try game.simulate(sheet, [.cue(1.6, "go"), .cue(5, "on")], seconds: 9)
    let states = run.timeline.states
    #expect(states.map(\.state) == ["first", "second", "third"], "\(run.timeline.summary)")
    let second = try #require(states.first { $0.state == "second" }), third = try #require(states.last)
    // Marked entered at 3.75 s (quiet's next exit); its own CUE_EXIT is 3.25 s into it.
    #expect(abs(second.from - 3.75) < 0.01, "\(second.from)")
    #expect(abs(third.from - (second.from + 3.25)) < 0.01, "\(third.from)")
  }

  @Test("enter: { cue } starts the incoming piece at its first cue point of that name")
  func entryAtNamedCue() throws {
    let game = try Self.game()
    let fromTags = try Self.sheet(game, transition: #"{ seconds: 0, enter: { cue: "chorus" } }"#)
    let fromSheet = try Self.sheet(
      game, marked: #", cues: { chorus: 2.5 }"#, transition: #"{ seconds: 0, enter: { cue: "chorus" } }"#)
    let atStart = try Self.sheet(game, transition: #"{ seconds: 0 }"#)
    let script: [CueScript.Step] = [.cue(1, "go")]
    let plain = try game.simulate(atStart, script, seconds: 3)
    let tagged = try game.simulate(fromTags, script, seconds: 3)
    let given = try game.simulate(fromSheet, script, seconds: 3)
    let start = try #require(Listen.firstSound(plain.left, after: 0))
    let from = Double(start) / 48_000 + 0.05
    let pitches = (0..<10).map { Self.pitch(second: $0) }
    #expect(Listen.loudest(plain.left, from, from + 0.4, among: pitches) == Self.pitch(second: 0))
    // The tags' first chorus is at 5 s; the cue file's, which wins over the tags, at 2.5 s.
    #expect(Listen.loudest(tagged.left, from, from + 0.4, among: pitches) == Self.pitch(second: 5))
    #expect(Listen.loudest(given.left, from, from + 0.4, among: pitches) == Self.pitch(second: 2))
    #expect(Listen.firstSound(tagged.left, after: 0) == start, "entered on the same frame")
    // A cue the piece does not have: its start, and a report naming it.
    let missing = try game.simulate(
      try Self.sheet(game, transition: #"{ seconds: 0, enter: { cue: "bridge" } }"#), script, seconds: 3)
    #expect(missing.timeline.lines.contains { $0.contains("has no cue \"bridge\"") }, "\(missing.timeline.summary)")
  }

  @Test("Markers: every named cue point of the playing item is heard on its own frame, by name")
  func markers() throws {
    let game = try Self.game()
    let sheet = try Self.sheet(game, transition: #"{ seconds: 0, at: { cue: "exit" } }"#)
    let beats = Mutex<[MusicBeat]>([]), markers = Mutex<[MusicMarker]>([])
    var options = CueSimulation.Options()
    options.onBeat = { beat in beats.withLock { $0.append(beat) } }
    options.onMarker = { marker in markers.withLock { $0.append(marker) } }
    // The quiet piece's cues are the cue file's (exit at 1.5 and 3.75 s, drop at bar 3 = 4 s);
    // "go" at 2 s leaves it on its exit at 3.75 s for the marked piece, whose own tags mark exit
    // 3.25 s and chorus 5 and 7 s into it. A marker on the frame its music is left is not heard
    // (the game hears the incoming music then), nor one after: so 1.5 s of quiet, then 3.25 s
    // and 5 s of marked (its 7 s is past the 10.5 s rendered).
    _ = try game.simulate(sheet, [.cue(2, "go")], seconds: 10.5, options: options)
    let heard = markers.withLock { $0 }
    #expect(heard.map(\.name) == ["exit", "exit", "chorus"], "\(heard.map { ($0.name, $0.fileSeconds, $0.seconds) })")
    #expect(heard.map(\.fileSeconds) == [1.5, 3.25, 5], "\(heard.map(\.fileSeconds))")
    #expect(heard.map(\.item.title) == ["Quiet", "Marked", "Marked"])
    // Each on its own frame: quiet's frame 0 is its first downbeat; marked starts 3.75 s after it.
    let first = try #require(beats.withLock { $0 }.first { $0.bar == 1 && $0.beat == 1 }, "the first downbeat")
    let expected = [first.mixFrame + 72_000, first.mixFrame + 180_000 + 156_000, first.mixFrame + 180_000 + 240_000]
    #expect(heard.map(\.mixFrame) == expected, "\(heard.map(\.mixFrame)) against \(expected)")
    #expect(heard.allSatisfy { abs($0.seconds - Double($0.mixFrame - first.mixFrame) / 48_000 - first.seconds) < 1e-9 })
  }

  @Test("Named cues in the cue file are checked: the shape, the numbers, a pickup with an entry cue")
  func mistakes() throws {
    let game = try Self.game()
    for (marked, transition, expected) in [
      (#", cues: [1, 2]"#, #"{ at: "bar" }"#, "an object of named cue points"),
      (#", cues: { exit: -1 }"#, #"{ at: "bar" }"#, "sources.marked.cues.exit"),
      (#", cues: { exit: { beat: 2 } }"#, #"{ at: "bar" }"#, "beat"),
      ("", #"{ at: { cue: 3 } }"#, "transition.at.cue"),
      ("", #"{ at: { name: "x" } }"#, "name"),
      ("", #"{ enter: { cue: "x" }, pickup: true }"#, "does not go with enter: { cue"),
    ] {
      let error = #expect(throws: CueFileError.self, "\(transition)") {
        _ = try Self.sheet(game, marked: marked, transition: transition)
      }
      #expect(error?.description.contains(expected) == true, "\(transition): \(String(describing: error))")
    }
  }
}
