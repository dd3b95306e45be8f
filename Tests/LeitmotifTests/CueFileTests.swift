import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// A cue file's folder: `music/` holds tiny real Ogg Vorbis files with tags (a sine each) and one
/// text file named like audio, so bundled references can be checked against the disk.
private struct CueFolder {
  let temporary: TemporaryDirectory
  /// Where the tests' cue file would be (the text is passed to `check`, or written here).
  let cuePath: String

  init() throws {
    temporary = try TemporaryDirectory(prefix: "leitmotif-cues")
    cuePath = temporary.file("cues.json5")
    let music = temporary.file("music")
    try FileManager.default.createDirectory(atPath: music + "/sub", withIntermediateDirectories: true)
    let format = PCMFormat.mono22050
    let songs: [(String, Double, [(String, String)])] = [
      ("explore.ogg", 330, [("TITLE", "Explore"), ("MOOD", "Calm"), ("GENRE", "Ambient")]),
      ("battle.ogg", 440, [("TITLE", "Battle"), ("MOOD", "Tense")]),
      ("hit.ogg", 880, [("TITLE", "Hit")]),
      ("sub/deep.ogg", 220, [("TITLE", "Deep"), ("MOOD", "Calm")]),
    ]
    for (name, frequency, tags) in songs {
      try VorbisEncoder.encode(
        samples: ToneGenerator.sine(frequency: frequency, seconds: 0.2, format: format), format: format, tags: tags,
        to: music + "/" + name)
    }
    try Data("not audio at all\n".utf8).write(to: URL(fileURLWithPath: music + "/broken.ogg"))
  }

  func check(_ text: String) -> (sheet: CueSheet?, problems: [CueProblem]) { CueSheet.check(text, path: cuePath) }

  func errors(_ text: String) -> [CueProblem] { check(text).problems.filter { $0.severity == .error } }

  func write(_ text: String) throws { try Data(text.utf8).write(to: URL(fileURLWithPath: cuePath)) }
}

/// "LINE:COLUMN KEYPATH", what a problem is pinned to.
private func place(_ problem: CueProblem) -> String {
  "\(problem.location.line):\(problem.location.column) \(problem.keyPath)"
}

/// Every action kind, a sheet that uses every section, and no warning.
private let completeFile = """
  // Every section of a cue file.
  {
    version: 1,
    assets: "music",
    start: "explore",
    seed: 42,
    tempo: { bpm: 96, meter: 3, offset: 0.25 },
    parameters: {
      intensity: { default: 0.2, drives: [{ target: "lowpass", curve: [[1, 1], [0, 0.3]], shape: "smooth" }] },
      health: { min: 0, max: 100, default: 100 },
    },
    sources: {
      calm: { bundled: { mood: "calm" }, cuePoints: [0, 0.1] },
      battle: { bundled: ["battle.ogg", "sub/deep.ogg"], fallback: "calm", gain: -3, replayGain: "album" },
      mine: { library: { genre: "Rock", beatsPerMinute: { atLeast: 120, below: 160 } }, order: "shuffle", fallback: "calm" },
      picked: { picks: true, fallback: "calm" },
      road: { playlist: "Road Trip" },
    },
    states: {
      explore: { music: "calm", between: "gapless", loop: "off", repeat: "one" },
      combat: {
        music: { user: "mine", bundled: "battle", mix: "interleave", ratio: 2 },
        priority: 5,
        transition: { seconds: 1, at: "bar", enter: "same-position" },
        tempo: { bpm: 140 },
      },
      travel: { music: "road", rate: 1.5, volume: 0.5, loop: 2, between: { seconds: 4, curve: "s-curve" } },
      menu: { music: { user: "picked", bundled: "calm", mix: "user-first" } },
    },
    rules: [
      { on: "combat.start", do: { crossfade: "combat", seconds: 0.5 } },
      {
        name: "calm down",
        on: ["combat.end", "menu.*"],
        priority: 2,
        cooldown: 1.5,
        when: {
          state: "combat",
          notState: ["menu"],
          payload: { won: true, threat: { atLeast: 2, not: 5 } },
          parameters: { intensity: { below: 0.5 } },
        },
        do: [{ state: "explore" }, { stinger: "hit.ogg", at: "beat", duck: { db: -6, hold: 2 } }, { stinger: "calm", volume: 0.5 }],
      },
      { on: "travel", do: { state: "travel" } },
      {
        on: "menu.open",
        do: [
          { state: "menu" }, { duck: -12, attack: 0.2 }, { rate: 0.8, ramp: 1 }, { volume: 0.3 }, { seek: "loop-start" },
          { pause: true }, { resume: true, fade: 0.5 }, { stop: true }, { skip: "next", seconds: 1 }, { skip: "previous" },
          { set: "health", value: 50, ramp: 2 }, { releaseLoop: true }, { seek: 12.5 },
        ],
      },
    ],
  }
  """

@Suite("CueFile: decoding and checking the cue file")
struct CueFileTests {
  private let folder: CueFolder

  init() throws { folder = try CueFolder() }

  @Test("A complete file decodes into the model, every section as written, with no problem")
  func completeFileDecodes() throws {
    let (sheet, problems) = folder.check(completeFile)
    #expect(problems.map(\.description) == [])
    let cues = try #require(sheet)

    #expect(cues.path == folder.cuePath)
    #expect(cues.assetsDirectory.path == folder.temporary.file("music"))
    #expect(cues.startState == "explore")
    #expect(cues.seed == 42)
    #expect(cues.grid == BeatGrid(beatsPerMinute: 96, beatsPerBar: 3, offsetSeconds: 0.25))

    #expect(cues.parameters.map(\.name) == ["intensity", "health"])
    let intensity = try #require(cues.parameter(named: "intensity"))
    #expect(intensity.defaultValue == 0.2 && intensity.minimum == 0 && intensity.maximum == 1)
    #expect(intensity.drives.count == 1)
    #expect(intensity.drives[0].target == .lowpass)
    #expect(intensity.drives[0].curve == ResponseCurve(points: [.init(0, 0.3), .init(1, 1)], shape: .smooth))
    let health = try #require(cues.parameter(named: "health"))
    #expect(health.minimum == 0 && health.maximum == 100 && health.defaultValue == 100 && health.drives.isEmpty)

    #expect(Set(cues.sources.keys) == ["calm", "battle", "mine", "picked", "road"])
    let calm = try #require(cues.sources["calm"])
    guard case .bundled(let calmSelection) = calm.kind else { Issue.record("calm: \(calm.kind)"); return }
    #expect(calmSelection == BundledSelection(mood: "calm"))
    #expect(calm.cuePointsSeconds == [0, 0.1])
    #expect(calm.order == .sequence && calm.replayGain == .track && calm.gainDecibels == 0 && calm.fallback == nil)
    let battle = try #require(cues.sources["battle"])
    guard case .bundled(let battleSelection) = battle.kind else { Issue.record("battle: \(battle.kind)"); return }
    #expect(battleSelection.files == ["battle.ogg", "sub/deep.ogg"])
    #expect(battle.fallback == "calm" && battle.gainDecibels == -3 && battle.replayGain == .album)
    let mine = try #require(cues.sources["mine"])
    guard case .library(let query) = mine.kind else { Issue.record("mine: \(mine.kind)"); return }
    #expect(
      query.filterPredicates == [
        MediaPropertyPredicate(value: "Rock", forProperty: .genre),
        MediaPropertyPredicate(value: 120.0, forProperty: .beatsPerMinute, comparisonType: .greaterThanOrEqualTo),
        MediaPropertyPredicate(value: 160.0, forProperty: .beatsPerMinute, comparisonType: .lessThan),
      ])
    #expect(mine.order == .shuffle)
    guard case .picks = cues.sources["picked"]?.kind else { Issue.record("picked is not picks"); return }
    guard case .playlist("Road Trip") = cues.sources["road"]?.kind else {
      Issue.record("road is not the playlist"); return
    }

    let explore = try #require(cues.states["explore"])
    #expect(explore.bundledSource == "calm" && explore.userSource == nil && explore.mix == .userFirst)
    #expect(explore.itemTransition == .gapless && explore.loop == .off && explore.repeatMode == .one)
    #expect(explore.transition == TransitionSpec() && explore.rate == 1 && explore.volume == 1 && explore.grid == nil)
    let combat = try #require(cues.states["combat"])
    #expect(combat.userSource == "mine" && combat.bundledSource == "battle" && combat.mix == .interleave(userSongs: 2))
    #expect(combat.priority == 5)
    #expect(combat.transition == TransitionSpec(seconds: 1, curve: .equalPower, moment: .bar, entry: .samePosition))
    #expect(combat.grid == BeatGrid(beatsPerMinute: 140, beatsPerBar: 4, offsetSeconds: 0))
    #expect(combat.loop == .untilReleased && combat.repeatMode == .all && combat.itemTransition == .defaultCrossfade)
    let travel = try #require(cues.states["travel"])
    #expect(travel.userSource == "road" && travel.bundledSource == nil)
    #expect(travel.rate == 1.5 && travel.volume == 0.5 && travel.loop == .times(2))
    #expect(travel.itemTransition == (try Transition(duration: 4, curve: .sCurve)))
    let menu = try #require(cues.states["menu"])
    #expect(menu.userSource == "picked" && menu.bundledSource == "calm" && menu.mix == .userFirst)

    #expect(cues.rules.map(\.name) == ["rule 1", "calm down", "rule 3", "rule 4"])
    #expect(cues.rules.map(\.line) == [31, 32, 45, 46])
    let first = cues.rules[0]
    #expect(first.cues == ["combat.start"] && first.priority == 0 && first.cooldownSeconds == 0)
    // Keys the crossfade leaves out come from the target state's transition.
    #expect(
      first.actions == [
        .changeState(
          "combat", transition: TransitionSpec(seconds: 0.5, curve: .equalPower, moment: .bar, entry: .samePosition))
      ])
    let calmDown = cues.rules[1]
    #expect(calmDown.cues == ["combat.end", "menu.*"] && calmDown.priority == 2 && calmDown.cooldownSeconds == 1.5)
    #expect(calmDown.answers("menu.close") && !calmDown.answers("combat.start"))
    #expect(calmDown.conditions.states == ["combat"] && calmDown.conditions.notStates == ["menu"])
    #expect(calmDown.conditions.payload.map(\.key) == ["won", "threat"])
    #expect(
      calmDown.conditions.payload.map(\.test) == [ValueTest([.equals(true)]), ValueTest([.atLeast(2), .not(5)])])
    #expect(calmDown.conditions.parameters.map(\.name) == ["intensity"])
    #expect(calmDown.conditions.parameters.map(\.test) == [ValueTest([.below(0.5)])])
    #expect(
      calmDown.actions == [
        .changeState("explore", transition: nil),
        .stinger(
          StingerAction(
            sound: "hit.ogg", isSource: false, moment: .beat, volume: 1,
            duck: DuckAction(decibels: -6, attackSeconds: 0.1, holdSeconds: 2, releaseSeconds: 0.5))),
        .stinger(StingerAction(sound: "calm", isSource: true, moment: .now, volume: 0.5, duck: nil)),
      ])
    #expect(cues.rules[2].actions == [.changeState("travel", transition: nil)])
    #expect(
      cues.rules[3].actions == [
        .changeState("menu", transition: nil),
        .duck(DuckAction(decibels: -12, attackSeconds: 0.2, holdSeconds: 1, releaseSeconds: 0.5)),
        .rate(0.8, rampSeconds: 1), .volume(0.3, rampSeconds: 0), .seek(.loopStart, fadeSeconds: 0.01),
        .pause(fadeSeconds: 0.01), .resume(fadeSeconds: 0.5), .stop(fadeSeconds: 1),
        .skip(.next, transition: TransitionSpec(seconds: 1)), .skip(.previous, transition: nil),
        .setParameter("health", value: 50, rampSeconds: 2), .releaseLoop, .seek(.seconds(12.5), fadeSeconds: 0.01),
      ])
  }

  @Test("load reads the file from disk; an empty file (comments only) is valid and has no states")
  func loadAndEmptyFile() throws {
    try folder.write(completeFile)
    let loaded = try CueSheet.load(path: folder.cuePath)
    #expect(loaded.states.count == 4 && loaded.rules.count == 4)

    let (empty, problems) = folder.check("// Nothing yet.\n\n")
    #expect(problems.isEmpty)
    #expect(try #require(empty).states.isEmpty)
    #expect(folder.check("{}").sheet?.states.isEmpty == true)

    // The same from a mount (a game's pak): an empty cue file was "the file is empty (0 bytes)".
    let mounted = "/leitmotif-tests-empty-cues/cues.json5"
    try MountedFiles.mount(contents: [], at: mounted)
    defer { try? MountedFiles.unmount(mounted) }
    #expect(try CueSheet.load(path: mounted).states.isEmpty)
  }

  @Test("An unreadable file is one problem at 1:1 naming the operating system's reason")
  func unreadableFile() {
    let missing = folder.temporary.file("missing.json5")
    #expect {
      _ = try CueSheet.load(path: missing)
    } throws: { error in
      guard let error = error as? CueFileError else { return false }
      return error.problems.map(\.description) == [
        "\(missing):1:1: error: cannot read the cue file: No such file or directory"
      ]
    }
  }

  @Test("A JSON5 syntax error is the one problem, at its position, without a key path")
  func syntaxError() {
    let text = """
      {
        states: {
          a: { music: "x" }
        }
        rules: []
      }
      """
    let problems = folder.check(text).problems
    #expect(problems.count == 1)
    #expect(problems.first.map(place) == "5:3 ")
    #expect(problems.first?.description.hasPrefix("\(folder.cuePath):5:3: error: expected ',' or '}'") == true)
    #expect(throws: CueFileError.self) { try CueSheet.parse(text, path: folder.cuePath) }
  }

  @Test("An unknown key or word is reported where it is, with a suggestion")
  func unknownKeysAndWords() {
    let text = """
      {
        tempo: { bpm: 100, metre: 3 },
        parameters: { p: { drives: [{ target: "volume", curve: [[0, 1]], shape: "smoth" }] } },
        colour: "red",
      }
      """
    let errors = folder.errors(text)
    #expect(errors.map(place) == ["2:22 tempo.metre", "3:75 parameters.p.drives[0].shape", "4:3 colour"])
    #expect(
      errors.map(\.message) == [
        "unknown key \"metre\"; did you mean \"meter\"?",
        "\"smoth\" is not one of linear or smooth; did you mean \"smooth\"?",
        "unknown key \"colour\" (expected version, assets, start, seed, tempo, loudness, parameters, sources, states, rules, bridges, mediaKeys or systemMusic)",
      ])
  }

  @Test("A wrong `at` lists every word it takes and the cue form, with a suggestion")
  func unknownMoment() {
    let text = """
      {
        states: { a: { transition: { at: "bra" } }, b: { transition: { at: 3 } } },
      }
      """
    let messages = folder.errors(text).map(\.message).filter { !$0.hasPrefix("missing \"music\"") }
    // It used to list now, beat, bar or end only, though "exit" and { cue: NAME } are taken too.
    #expect(
      messages == [
        "\"bra\" is not one of now, beat, bar, end or exit, or { cue: \"NAME\" }; did you mean \"bar\"?",
        "expected a string (\"now\", \"beat\", \"bar\", \"end\" or \"exit\") or { cue: \"NAME\" }, found a number",
      ], "\(messages)")
  }

  @Test(
    "One mistake, one error: bars next to a wrong at, references to a layer whose music is wrong; avoidRepeat over the files is a warning"
  )
  func oneMistakeOneError() {
    let text = """
      {
        start: "a",
        assets: "music",
        parameters: { danger: { drives: [{ target: "volume", layer: "drums", curve: [[0, 0], [1, 1]] }] } },
        sources: {
          calm: { bundled: ["explore.ogg", "battle.ogg"], order: "random", avoidRepeat: 2 },
          theirs: { library: { genre: "Rock" } },
        },
        states: {
          a: { music: "calm", layers: { drums: { music: "theirs" } } },
          b: { music: "calm" },
        },
        rules: [{ on: "go", do: { crossfade: "b", at: "bars", bars: 2 } }, { on: "in", do: { layer: "drums", volume: 1 } }],
      }
      """
    let problems = folder.check(text).problems
    let errors = problems.filter { $0.severity == .error }.map(\.message)
    // Each used to bring a second error: "bars counts bar lines: it goes with at: \"bar\" (here
    // at is \"end\")", and "no state has a layer named \"drums\"" at the drive and the action.
    #expect(
      errors == [
        "\"theirs\" is a source of the player's music; a layer plays a bundled source (the game's own stems)",
        "\"bars\" is not one of now, beat, bar, end or exit, or { cue: \"NAME\" }; did you mean \"bar\"?",
      ], "\(errors)")
    let warnings = problems.filter { $0.severity == .warning }.map(\.message)
    #expect(
      warnings.contains(
        "avoidRepeat 2 with 2 files: at most 1 can be kept from playing again, and then the draws make one fixed cycle; it acts as 1"
      ), "\(warnings)")
  }

  @Test("Cue points past the end of a source's file are warnings: the music never reaches them")
  func cuePointsPastTheEnd() {
    // explore.ogg lasts 0.2 s.
    let text = """
      {
        start: "a", assets: "music",
        sources: { calm: { bundled: "explore.ogg", cuePoints: [0.1, 5], cues: { exit: 3, drop: 0.15 } } },
        states: { a: { music: "calm" } },
      }
      """
    let warnings = folder.check(text).problems.filter { $0.severity == .warning }.map(\.message)
    #expect(
      warnings == [
        "cue point at 5 s is past the end of \"explore.ogg\" (0.2 s): it is never reached there",
        "cue \"exit\" at 3 s is past the end of \"explore.ogg\" (0.2 s): it is never reached there",
      ], "\(warnings)")
  }

  @Test("A value of the wrong type says what was expected and what was found")
  func wrongTypes() {
    let text = """
      {
        seed: "42",
        states: [],
        rules: [{ on: 3, do: { stop: "yes" } }],
      }
      """
    let errors = folder.errors(text)
    #expect(errors.map(place) == ["2:9 seed", "3:11 states", "4:17 rules[0].on", "4:32 rules[0].do.stop"])
    #expect(
      errors.map(\.message) == [
        "expected a whole number, found a string", "expected an object, found a list",
        "expected a string or a list of strings, found a number", "expected true, found a string",
      ])
  }

  /// A file whose one rule does `action` (which starts at 7:20).
  private func ruleFile(_ action: String) -> String {
    """
    {
      assets: "music",
      sources: { calm: { bundled: "explore.ogg" } },
      states: { a: { music: "calm" } },
      start: "a",
      rules: [
        { on: "x", do: \(action) },
      ],
    }
    """
  }

  @Test(
    "An out-of-range value says its range, at the value",
    arguments: [
      ("{ pause: true, fade: -1 }", "7:41 rules[0].do.fade", "fade -1 is outside [0, 86400]"),
      ("{ rate: 0 }", "7:28 rules[0].do.rate", "rate 0 is outside [0.00390625, 4]"),
      ("{ rate: 5 }", "7:28 rules[0].do.rate", "rate 5 is outside [0.00390625, 4]"),
      ("{ volume: 2 }", "7:30 rules[0].do.volume", "volume 2 is outside [0, 1]"),
      ("{ duck: +3 }", "7:28 rules[0].do.duck", "duck 3 is outside [-60, 0]"),
      ("{ rate: NaN }", "7:28 rules[0].do.rate", "rate NaN is outside [0.00390625, 4]"),
      ("{ crossfade: \"a\", seconds: -2 }", "7:47 rules[0].do.seconds", "seconds -2 is outside [0, 86400]"),
      ("{ stinger: \"calm\", volume: Infinity }", "7:47 rules[0].do.volume", "volume Infinity is outside [0, 1]"),
    ])
  func outOfRange(action: String, expectedPlace: String, expectedMessage: String) {
    let errors = folder.errors(ruleFile(action))
    #expect(errors.map(place) == [expectedPlace])
    #expect(errors.map(\.message) == [expectedMessage])
  }

  @Test("References to states, sources, parameters and bundled files that do not exist are errors")
  func missingReferences() {
    let text = """
      {
        assets: "music",
        sources: {
          calm: { bundled: "explore.ogg" },
          lost: { bundled: "missing.ogg" },
          sad: { bundled: { mood: "sad" } },
          bad: { bundled: "broken.ogg" },
        },
        states: {
          a: { music: "calmm" },
          b: { music: { user: "calm" } },
        },
        start: "a",
        rules: [
          { on: "x", do: [{ state: "boss" }, { set: "volume", value: 1 }, { stinger: "boom.ogg" }] },
        ],
      }
      """
    let errors = folder.errors(text)
    #expect(
      errors.map(place) == [
        "5:22 sources.lost.bundled", "6:21 sources.sad.bundled", "7:21 sources.bad.bundled", "10:17 states.a.music",
        "11:25 states.b.music.user", "15:30 rules[0].do[0].state", "15:47 rules[0].do[1].set",
        "15:80 rules[0].do[2].stinger",
      ])
    let music = folder.temporary.file("music")
    #expect(
      errors.map(\.message) == [
        "no file \"missing.ogg\" in the assets folder \(music)",
        "no bundled file has mood \"sad\" (in \(music)); the mood tags there: \"Tense\", \"Calm\"",
        "bundled file \"broken.ogg\" cannot be played: not Ogg Vorbis, Opus, MP3, FLAC, WAV or AIFF: it looks like text",
        "no source named \"calmm\"; did you mean \"calm\"?",
        "\"calm\" is a bundled source; expected a source of the player's music (library, picks or playlist)",
        "no state named \"boss\" (the states: \"a\" and \"b\")",
        "no parameter named \"volume\"",
        "no source and no bundled file named \"boom.ogg\" (in \(music))",
      ])
  }

  @Test("Without assets, bundled files are relative to the cue file's folder; an assets folder must exist")
  func assetsFolder() {
    let relative = folder.check(
      #"{ sources: { hit: { bundled: "music/hit.ogg" } }, states: { a: { music: "hit" } }, start: "a" }"#)
    #expect(relative.problems.isEmpty)
    #expect(relative.sheet?.assetsDirectory.path == folder.temporary.path)

    let errors = folder.errors("{\n  assets: \"sounds\",\n  sources: { hit: { bundled: \"hit.ogg\" } },\n}\n")
    #expect(errors.map(place) == ["2:11 assets"])
    #expect(errors.map(\.message) == ["no folder \"sounds\" (looked for \(folder.temporary.file("sounds")))"])
  }

  @Test("A fallback cycle is reported once, at the first source of the cycle")
  func fallbackCycle() {
    let text = """
      {
        assets: "music",
        sources: {
          four: { bundled: "hit.ogg", fallback: "two" },
          one: { bundled: "explore.ogg", fallback: "two" },
          two: { bundled: "battle.ogg", fallback: "three" },
          three: { bundled: "hit.ogg", fallback: "one" },
        },
      }
      """
    let errors = folder.errors(text)
    #expect(errors.map(place) == ["5:46 sources.one.fallback"])
    #expect(errors.map(\.message) == ["fallback cycle: one → two → three → one"])
    #expect(
      folder.errors(#"{ assets: "music", sources: { me: { bundled: "hit.ogg", fallback: "me" } } }"#).map(\.message)
        == ["source \"me\" falls back to itself"])
  }

  @Test("A duplicate key is an error at its second occurrence")
  func duplicateKey() {
    let errors = folder.errors("{\n  tempo: { bpm: 100, bpm: 120 },\n}\n")
    #expect(errors.map(place) == ["2:22 tempo.bpm"])
    #expect(errors.map(\.message) == ["duplicate key \"bpm\" (first at 2:12)"])
  }

  @Test("An action needs exactly one verb; an unknown key gets a verb suggested")
  func actionVerbs() {
    let text = """
      {
        assets: "music",
        sources: { calm: { bundled: "explore.ogg" } },
        states: { a: { music: "calm" } },
        start: "a",
        rules: [
          { on: "x", do: { seconds: 2 } },
          { on: "y", do: { state: "a", stop: true } },
          { on: "z", do: [{ releaseLoop: true }, { crosfade: "a" }] },
          { on: "w", do: { state: "a", seconds: 1 } },
        ],
      }
      """
    let errors = folder.errors(text)
    #expect(
      errors.map(place) == [
        "7:20 rules[0].do", "8:34 rules[1].do", "9:46 rules[2].do[1].crosfade", "10:34 rules[3].do.seconds",
      ])
    #expect(errors[0].message.hasPrefix("an action needs a verb: one of state, crossfade, stinger,"))
    #expect(errors[0].message.hasSuffix("; found only \"seconds\""))
    #expect(errors[1].message.hasPrefix("an action has one verb; found \"state\" and \"stop\""))
    #expect(errors[2].message == "unknown key \"crosfade\"; did you mean \"crossfade\"?")
    // A transition on a state change: the verb that takes one is named.
    #expect(
      errors.count > 3
        && errors[3].message
          == "unknown key \"seconds\"; \"state\" takes the state's own transition: to give one here, write { crossfade: ..., seconds: ... }"
    )
  }

  @Test("Every problem of a file is reported at once, errors and warnings, in file order")
  func everyProblemAtOnce() throws {
    let text = """
      {
        version: 2,
        tempo: { bpm: -1 },
        states: { a: { music: "nowhere", volume: 1.5 } },
        rules: [{ on: "x", do: { stat: "a" } }],
        extra: true,
      }
      """
    let (sheet, problems) = folder.check(text)
    #expect(sheet == nil)
    #expect(
      problems.map { "\(place($0)) \($0.severity)" } == [
        "2:12 version error", "3:17 tempo.bpm error", "4:13 states.a warning", "4:25 states.a.music error",
        "4:44 states.a.volume error", "5:28 rules[0].do.stat error", "6:3 extra error",
      ])
    #expect(problems[0].description == "\(folder.cuePath):2:12: error: version: version 2 is not supported (only 1)")
    let thrown = try #require(throws: CueFileError.self) { try CueSheet.parse(text, path: folder.cuePath) }
    #expect(thrown.problems == problems)
    #expect(thrown.description.split(separator: "\n").count == problems.count)
  }

  @Test(
    "A misspelt section (stats:) is one error, and the rest of the file is checked against it as if it were spelt right"
  )
  func misspeltSection() throws {
    let text = """
      {
        assets: "music",
        sources: { calm: { bundled: "explore.ogg" }, fight: { bundled: "battle.ogg" } },
        stats: {
          explore: { music: "calm" },
          combat: { music: "fight", volume: 3 },
        },
        start: "explore",
        rules: [
          { on: "a", do: { state: "combat" } },
          { on: "b", when: { state: "combat" }, do: { state: "explore" } },
          { on: "c", do: { state: "nowhere" } },
        ],
      }
      """
    let (sheet, problems) = folder.check(text)
    #expect(sheet == nil)
    // The misspelling, the bad volume inside it (named by the key as written), and the one rule
    // that names a state the file really lacks: it used to be 6 errors and 2 warnings, one for
    // each reference to a state and each source no state used.
    #expect(
      problems.map { "\(place($0)) \($0.severity)" } == [
        "4:3 stats error", "6:39 stats.combat.volume error", "12:29 rules[2].do.state error",
      ], "\(problems.map(\.description))")
    #expect(
      problems.first?.message
        == "unknown key \"stats\"; did you mean \"states\"? (read as \"states\" to check the rest of the file)")
    // Spelt right elsewhere too: the misspelt one is only an error.
    let both = folder.check(text.replacingOccurrences(of: "start: \"explore\",", with: "states: {},"))
    #expect(both.problems.contains { $0.message == "unknown key \"stats\"; did you mean \"states\"?" })
  }

  @Test(
    "Warnings: an unused source, a state nothing enters, a rule an earlier one always beats, a rule name used twice; the sheet still loads"
  )
  func warnings() throws {
    let text = """
      {
        assets: "music",
        sources: {
          calm: { bundled: "explore.ogg" },
          spare: { bundled: "hit.ogg" },
        },
        states: {
          a: { music: "calm" },
          b: { music: "calm" },
        },
        start: "a",
        rules: [
          { on: "x", do: { stop: true } },
          { on: "x", when: { state: "a" }, do: { pause: true } },
          { on: "x", priority: 1, do: { pause: true } },
          { name: "rule 1", on: "y", do: { stop: true } },
        ],
      }
      """
    let (sheet, problems) = folder.check(text)
    #expect(sheet != nil)
    #expect(problems.allSatisfy { $0.severity == .warning })
    #expect(problems.map(place) == ["5:5 sources.spare", "9:5 states.b", "14:11 rules[1].on", "16:13 rules[3].name"])
    #expect(problems[2].message.hasPrefix("rule \"rule 2\" never fires: rule \"rule 1\" (line 13)"))
    #expect(problems[3].message.hasPrefix("another rule is named \"rule 1\" (line 13)"))
  }

  @Test("The bundled catalogue: every decodable file by relative path, failures listed, selections by file or tag")
  func bundledCatalog() {
    let catalog = BundledCatalog(directory: URL(fileURLWithPath: folder.temporary.file("music")))
    #expect(catalog.relativePaths == ["battle.ogg", "explore.ogg", "hit.ogg", "sub/deep.ogg"])
    #expect(catalog.items.map(\.title) == ["Battle", "Explore", "Hit", "Deep"])
    #expect(catalog.failures.map(\.relativePath) == ["broken.ogg"])
    #expect(catalog.item(relativePath: "./sub//deep.ogg")?.title == "Deep")
    #expect(catalog.item(relativePath: "broken.ogg") == nil && catalog.item(relativePath: "none.ogg") == nil)
    #expect(catalog.items(matching: BundledSelection(mood: "CALM")).map(\.title) == ["Explore", "Deep"])
    #expect(catalog.items(matching: BundledSelection(mood: "calm", genre: "ambient")).map(\.title) == ["Explore"])
    #expect(
      catalog.items(matching: BundledSelection(files: ["hit.ogg", "nope.ogg", "battle.ogg"])).map(\.title) == [
        "Hit", "Battle",
      ])
    #expect(catalog.items(matching: BundledSelection(title: "Silence")).isEmpty)

    let nowhere = BundledCatalog(directory: URL(fileURLWithPath: folder.temporary.file("nowhere")))
    #expect(nowhere.items.isEmpty)
    #expect(
      nowhere.failures.map(\.description) == [
        "cannot read the folder \(folder.temporary.file("nowhere")): No such file or directory"
      ])
  }

  // MARK: The command

  @Test("leitmotif cues check: 0 and a summary for a valid file, with its warnings on stderr")
  func commandValid() throws {
    try folder.write(completeFile)
    let run = try LeitmotifCommand.run(["cues", "check", folder.cuePath])
    #expect(run.status == 0)
    #expect(run.output == "\(folder.cuePath): valid (4 states, 5 sources, 4 rules)\n")
    #expect(run.errors == "")

    try folder.write(
      "{\n  assets: \"music\",\n  sources: { hit: { bundled: \"hit.ogg\" }, spare: { bundled: \"hit.ogg\" } },\n"
        + "  states: { a: { music: \"hit\" } },\n  start: \"a\",\n}\n")
    let warned = try LeitmotifCommand.run(["cues", "check", folder.cuePath])
    #expect(warned.status == 0)
    #expect(warned.output == "\(folder.cuePath): valid (1 state, 2 sources, 0 rules), 1 warning\n")
    #expect(
      warned.errors
        == "\(folder.cuePath):3:43: warning: sources.spare: source \"spare\" is not used by any state or stinger\n")
  }

  @Test("leitmotif cues check: 2 and FILE:LINE:COLUMN lines for an invalid or missing file")
  func commandInvalid() throws {
    try folder.write("{\n  version: 2,\n  tempo: { bpm: 500 },\n}\n")
    let run = try LeitmotifCommand.run(["cues", "check", folder.cuePath])
    #expect(run.status == 2)
    #expect(
      run.errors.split(separator: "\n") == [
        "\(folder.cuePath):2:12: error: version: version 2 is not supported (only 1)",
        "\(folder.cuePath):3:17: error: tempo.bpm: bpm 500 is outside (0, 400]",
      ])
    #expect(run.output == "2 errors in \(folder.cuePath)\n")

    let missing = folder.temporary.file("none.json5")
    let absent = try LeitmotifCommand.run(["cues", "check", missing])
    #expect(absent.status == 2)
    #expect(absent.errors.hasPrefix("\(missing):1:1: error: cannot read the cue file: No such file or directory\n"))
  }

  @Test(
    "leitmotif cues: 2 and the usage for a missing FILE, an unknown option or subcommand",
    arguments: [["cues"], ["cues", "check"], ["cues", "check", "--strict", "a.json5"], ["cues", "lint", "a.json5"]])
  func commandUsage(arguments: [String]) throws {
    let run = try LeitmotifCommand.run(arguments)
    #expect(run.status == 2)
    #expect(run.errors.contains("usage:\n  leitmotif cues check FILE"))
  }
}
