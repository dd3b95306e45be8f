import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

/// A cue file, decoded and checked: what the director plays in each state, and what it does when
/// the game posts a cue. Plain data (the director interprets it); made by `CueSheet.load(path:)`
/// or `CueSheet.parse(_:path:)`, which report every problem with its line, column and key path.
///
/// The designers' reference for the file is the "Cue file" article (CueFile.md in the
/// documentation catalogue); the names here follow the file's keys.
public struct CueSheet: Sendable {
  /// The file it came from (nil when parsed from text alone).
  public var path: String?
  /// Where bundled music files are looked up (`assets`, relative to the cue file; default: the
  /// cue file's folder).
  public var assetsDirectory: URL
  /// The state the director plays when it starts (`start`; nil: silence until a rule sets one).
  public var startState: String?
  /// The beat grid for music whose tempo is unknown (`tempo`): user songs without a BPM tag.
  public var grid: BeatGrid
  /// How every item is levelled to one loudness (`loudness`).
  public var loudness: LoudnessLevelling
  /// Seeds shuffles and random cue points (`seed`): offline runs repeat exactly.
  public var seed: UInt64
  /// Game parameters, in file order.
  public var parameters: [ParameterSpec]
  /// Where music comes from, by name.
  public var sources: [String: MusicSource]
  /// The music states, by name.
  public var states: [String: MusicState]
  /// The rules, in file order (the order breaks ties between rules of the same priority).
  public var rules: [CueRule]
  /// Whether a rule or a parameter can change the tempo: then the music's voices are made with
  /// time-stretchers from the start (a tempo then lands on its frame, live as offline).
  public var usesTempo: Bool {
    rules.contains { rule in rule.actions.contains { if case .tempo = $0 { return true } else { return false } } }
      || parameters.contains { $0.drives.contains { $0.target == .tempo } }
  }
  /// Bridges between states (`bridges`), in file order.
  public var bridges: [MusicBridge] = []
  /// What the desktop's media keys do in the game (`mediaKeys`), through MPRIS: every key has an
  /// action, the defaults where the file says nothing (`MediaKeyAction.defaults`).
  public var mediaKeys: [MediaKey: MediaKeyAction] = MediaKeyAction.defaults
  /// What the game does with the player's own music app (another MPRIS player that is
  /// playing) when the game's music starts (`systemMusic`); `leave` where the file says nothing.
  public var systemMusic: SystemMusicPolicy = .leave
  /// The bundled music the file was checked against (nil when the check needed none): the
  /// director plays from it rather than walking and decoding the assets folder a second time.
  public var catalog: BundledCatalog?
  /// The file as parsed, for telling what a reload changed (`CueFileChanges`).
  var fileTree: JSON5Value?

  /// An empty sheet (no start state, parameters, sources, states or rules) whose bundled music is
  /// looked up in `assetsDirectory`. Cue files are read with `load(path:)` or `parse(_:path:)`.
  public init(assetsDirectory: URL) {
    path = nil
    self.assetsDirectory = assetsDirectory
    startState = nil
    grid = BeatGrid()
    loudness = LoudnessLevelling()
    seed = 0
    parameters = []
    sources = [:]
    states = [:]
    rules = []
    catalog = nil
  }

  /// The parameter called `name`, or nil when the sheet has none.
  public func parameter(named name: String) -> ParameterSpec? { parameters.first { $0.name == name } }

  /// The bridge for a change from state `from` to state `to`: the most particular one that
  /// names both (a named state before a wildcard, `from` before `to`), the first in the file
  /// among equals. Nil when none matches (or `from` is nil: nothing played).
  public func bridge(from: String?, to: String) -> MusicBridge? {
    guard let from, from != to else { return nil }
    var best: (rank: Int, bridge: MusicBridge)?
    for bridge in bridges where bridge.matches(from: from, to: to) {
      let rank = (bridge.from.isEmpty ? 0 : 2) + (bridge.to.isEmpty ? 0 : 1)
      if best == nil || rank > best!.rank { best = (rank, bridge) }
    }
    return best?.bridge
  }
}

/// A media key of the desktop (MPRIS's Play, Pause, PlayPause, Stop, Next and Previous), by its
/// name in the cue file's `mediaKeys`.
public enum MediaKey: String, CaseIterable, Sendable, Hashable {
  case play, pause, playPause, stop, next, previous
}

/// What a media key does in the game (`mediaKeys: { next: "skip", playPause: { cue: "menu.pause" } }`).
public enum MediaKeyAction: Sendable, Equatable {
  /// Next and Previous: skip the player's own songs only; while the game's score plays, the key
  /// does nothing (the score is the game's to change). The default for both.
  case skip
  /// Play, Pause, PlayPause and Stop: pause and resume the game's music (Stop pauses too: a
  /// game's score does not end because a key was pressed). The default for all four.
  case pause
  /// The key does nothing (and the desktop shows it disabled where MPRIS can say so).
  case ignore
  /// The key posts this cue on the level-event bus, as if the game had posted it.
  case cue(String)

  /// What a key does when the cue file does not say.
  public static let defaults: [MediaKey: MediaKeyAction] = [
    .play: .pause, .pause: .pause, .playPause: .pause, .stop: .pause, .next: .skip, .previous: .skip,
  ]
}

/// What the game does with the player's own music app when the game's music starts
/// (`systemMusic: "leave" | "pause" | "duck" | { duck: -12, seconds: 1 }`). Carried out by
/// `SystemMusicCoordinator` (LeitmotifDesktop) where the game runs one.
public enum SystemMusicPolicy: Sendable, Equatable {
  /// Both play (the default: Leitmotif touches another program only when the file says so).
  case leave
  /// The app is paused when the game's music starts, and resumed when the game's music stops
  /// or the game ends (only an app the game paused, and only if it is still paused).
  case pause
  /// The game's music is held down by `decibels` (< 0) over `seconds` while the app plays,
  /// and comes back up over `seconds` when it stops: the player's music leads.
  case duck(decibels: Double, seconds: Double)

  /// `"duck"` without numbers.
  public static let defaultDuck = SystemMusicPolicy.duck(decibels: -15, seconds: 1)
}

/// A piece played between two states (`bridges: [{ from, to, music }]`): the change into `to`
/// plays it first, on the grid as `to`'s transition says, and `to`'s music follows when it ends.
/// As Wwise's transition segments and FMOD's transition timelines are.
public struct MusicBridge: Sendable, Equatable {
  /// The states it leaves (empty: any, `"*"`).
  public var from: [String]
  /// The states it goes to (empty: any).
  public var to: [String]
  /// The source of bundled music it plays (its first item).
  public var music: String
  /// The crossfade from the bridge's end into the state's music (0: a gapless join on the
  /// bridge's last frame).
  public var seconds: Double
  /// Its curve.
  public var curve: FadeCurve
  /// Where it starts in the file, for reports.
  public var line: Int?

  public init(from: [String], to: [String], music: String, seconds: Double = 0, curve: FadeCurve = .equalPower) {
    self.from = from
    self.to = to
    self.music = music
    self.seconds = seconds
    self.curve = curve
  }

  /// Whether it bridges `from` to `to`.
  public func matches(from state: String, to target: String) -> Bool {
    (from.isEmpty || from.contains(state)) && (to.isEmpty || to.contains(target))
  }
}

/// Tempo and meter: where beats and bars fall.
public struct BeatGrid: Sendable, Equatable {
  /// The tempo (`bpm`), in beats per minute.
  public var beatsPerMinute: Double
  /// Beats in a bar (`meter`).
  public var beatsPerBar: Int
  /// Where the first beat falls, in seconds of the item (a pickup or a silent lead-in).
  public var offsetSeconds: Double

  /// A grid of `beatsPerMinute` (default 120) in bars of `beatsPerBar` beats (default 4), the first
  /// beat `offsetSeconds` into the item.
  public init(beatsPerMinute: Double = 120, beatsPerBar: Int = 4, offsetSeconds: Double = 0) {
    self.beatsPerMinute = beatsPerMinute
    self.beatsPerBar = beatsPerBar
    self.offsetSeconds = offsetSeconds
  }

  /// The length of one beat, in seconds.
  public var secondsPerBeat: Double { 60 / beatsPerMinute }
  /// The length of one bar, in seconds.
  public var secondsPerBar: Double { secondsPerBeat * Double(beatsPerBar) }
}

/// How the director levels its music (`loudness`), so a quiet bundled piece and a loud song of
/// the player's sound alike when one follows the other.
///
/// Each item plays at `target - its loudness` dB: its measured integrated loudness (EBU R128,
/// from the library scan or the catalogue's analysis), or the one its ReplayGain tag implies
/// (ReplayGain 2.0's reference, -18 LUFS, minus the tag's gain) when it was not measured or the
/// source asks for album gain. A boost stops where the item's true peak would pass
/// `truePeakCeiling`, and at `maximumBoostDecibels` (a near-silent track is not raised into its
/// noise floor); an item with no known peak is never boosted. A source's own `gain` is added
/// after, as the designer's deliberate offset.
public struct LoudnessLevelling: Sendable, Equatable {
  /// The most an item is raised, in dB.
  public static let maximumBoostDecibels = 20.0

  /// False (`loudness: "off"`): items play at their own level, or their ReplayGain tags' (as a
  /// source's `replayGain` says), never boosted.
  public var isEnabled: Bool
  /// The loudness every item is brought to, in LUFS (`target`); nil: the bundled music's median.
  public var targetLUFS: Double?
  /// No item is boosted past this true peak, in dBTP (`truePeak`; default -1).
  public var truePeakCeiling: Double

  /// Levelling on, to `targetLUFS` (nil: the bundled music's median), boosts up to `truePeakCeiling`.
  public init(isEnabled: Bool = true, targetLUFS: Double? = nil, truePeakCeiling: Double = -1) {
    self.isEnabled = isEnabled
    self.targetLUFS = targetLUFS
    self.truePeakCeiling = truePeakCeiling
  }

  /// The target with `catalog`'s music: the given one, else the catalogue's median loudness; nil
  /// when levelling is off or nothing is known to level to.
  public func target(catalog: BundledCatalog?) -> Double? {
    isEnabled ? (targetLUFS ?? catalog?.medianLoudness) : nil
  }
}

// MARK: - Parameters

/// A game parameter (intensity, health, underwater) that the game sets and rules test, driving
/// the music's volume, rate or low-pass filter through curves.
public struct ParameterSpec: Sendable {
  /// The parameter's name, as rules and `Director.setParameter(_:_:rampSeconds:)` give it.
  public var name: String
  /// The value before the game sets one (`default`).
  public var defaultValue: Double
  /// The lowest value (`min`); values set below it are clamped.
  public var minimum: Double
  /// The highest value (`max`); values set above it are clamped.
  public var maximum: Double
  /// What the parameter drives (`drives`), each through its curve.
  public var drives: [ParameterDrive]

  /// A parameter `name` in [`minimum`, `maximum`], starting at `defaultValue`, driving `drives`.
  public init(
    name: String, defaultValue: Double = 0, minimum: Double = 0, maximum: Double = 1, drives: [ParameterDrive] = []
  ) {
    self.name = name
    self.defaultValue = defaultValue
    self.minimum = minimum
    self.maximum = maximum
    self.drives = drives
  }
}

/// What a parameter drives, and how (a curve from the parameter's value to the target's).
public struct ParameterDrive: Sendable {
  /// What a parameter can drive (`target`).
  public enum Target: String, Sendable, CaseIterable {
    /// Multiplies the music's volume (0...1).
    case volume
    /// Multiplies the music's rate (the product stays in [1/256, 4]).
    case rate
    /// Multiplies the music's tempo: speed without pitch (the product stays in 0.5...2).
    case tempo
    /// The low-pass filter's high-frequency gain (0...1; 1 is unfiltered): muffled music.
    case lowpass
  }
  /// What the curve's output drives.
  public var target: Target
  /// Maps the parameter's value to the target's value.
  public var curve: ResponseCurve
  /// The layer it drives (`layer`), in whichever state plays one of that name; nil: the music
  /// as a whole. A layer takes `volume` and `lowpass` only.
  public var layer: String?

  /// A drive of `target` through `curve`, of `layer` when given (else of the whole music).
  public init(target: Target, curve: ResponseCurve, layer: String? = nil) {
    self.target = target
    self.curve = curve
    self.layer = layer
  }
}

/// A curve through points (parameter value → target value), straight or smoothed between them,
/// flat beyond the first and last point.
public struct ResponseCurve: Sendable, Equatable {
  /// How the curve runs between its points (`shape`).
  public enum Shape: String, Sendable, CaseIterable {
    /// Straight lines between points.
    case linear
    /// Eases in and out between points (smoothstep).
    case smooth
  }
  /// One point of the curve: parameter value `x`, target value `y`.
  public struct Point: Sendable, Equatable {
    /// The parameter's value.
    public var x: Double
    /// The target's value at `x`.
    public var y: Double
    /// The point (`x`, `y`).
    public init(_ x: Double, _ y: Double) {
      self.x = x
      self.y = y
    }
  }
  /// Sorted by `x`, at least one.
  public var points: [Point]
  /// Straight or smoothed between points.
  public var shape: Shape

  /// A curve through `points` (sorted by `x` here; give at least one).
  public init(points: [Point], shape: Shape = .linear) {
    self.points = points.sorted { $0.x < $1.x }
    self.shape = shape
  }

  /// The target's value for the parameter value `x`: flat before the first and after the last point.
  /// - Returns: 0 when the curve has no points.
  public func value(at x: Double) -> Double {
    guard let first = points.first, let last = points.last else { return 0 }
    if x <= first.x { return first.y }
    if x >= last.x { return last.y }
    for index in 1..<points.count where x <= points[index].x {
      let left = points[index - 1]
      let right = points[index]
      guard right.x > left.x else { return right.y }
      var t = (x - left.x) / (right.x - left.x)
      if shape == .smooth { t = t * t * (3 - 2 * t) }
      return left.y + (right.y - left.y) * t
    }
    return last.y
  }
}

// MARK: - Sources and states

/// Where a state's music comes from: bundled tracks, a library query, the player's picks or a
/// library playlist, with an order and a fallback.
public struct MusicSource: Sendable {
  /// What kind of music a source gives.
  public enum Kind: Sendable {
    /// The game's own music (always available): files by name, or every bundled file whose tags
    /// match (`mood`, `genre`, `title`).
    case bundled(BundledSelection)
    /// The player's library: a media query (needs the player's consent).
    case library(MediaQuery)
    /// What the player picked in the media picker (`Director.setPicks`).
    case picks
    /// A playlist of the player's library, by name.
    case playlist(String)

    /// Music from the player (needs consent) rather than the game.
    public var isUserMusic: Bool {
      if case .bundled = self { return false }
      return true
    }
  }
  /// In which order a source's items play (`order`).
  public enum Order: String, Sendable, CaseIterable {
    /// `sequence`: in file (or query) order; `shuffle`: shuffled with the sheet's seed (each item
    /// once, then a new shuffle); `random`: each item drawn anew, by `weights`, never one of the
    /// last `avoidRepeat` drawn.
    case sequence, shuffle, random
  }
  /// Which ReplayGain tag levels the items (`replayGain`): none, the track's, or the album's.
  public enum ReplayGainMode: String, Sendable, CaseIterable {
    /// `off`: no levelling; `track`: each item by its track gain; `album`: by its album gain.
    case off, track, album
  }

  /// The source's name, as states and `fallback` name it.
  public var name: String
  /// Where its music comes from.
  public var kind: Kind
  /// In file order (`sequence`, the default) or shuffled with the sheet's seed (`shuffle`).
  public var order: Order
  /// The source played instead when this one gives nothing (no access, an empty query, no picks).
  public var fallback: String?
  /// Added to every item's level, in decibels.
  public var gainDecibels: Double
  /// Levels items by their ReplayGain tags where present (never boosting past the file's level).
  public var replayGain: ReplayGainMode
  /// Places in each item (seconds) where music may enter with `enter: "cuePoint"`.
  public var cuePointsSeconds: [Double]
  /// The time from each item's first frame to its first downbeat (`pickup`), for transitions
  /// with `pickup: true`; nil: where the item's bars begin (its grid's offset).
  public var pickup: Pickup?
  /// Named cue points of every item of the source (`cues: { exit: 32.5, phrase: [8, 16],
  /// drop: { bar: 17 } }`), for `at: { cue }` and `enter: { cue }`; they win over the files' own
  /// `CUE_<NAME>` tags of the same name.
  public var namedCues: [String: [CuePosition]] = [:]
  /// Tempo and meter for its items when their tags give none.
  public var grid: BeatGrid?
  /// The keys its `tempo` gives (`bpm`, `meter`, `offset`): a `bpm` makes its grid win over the
  /// tempo the analysis detected, an `offset` places its bars over a `pickup`.
  package var tempoKeys: Set<String> = []
  /// With `order: "random"`: how many of the items drawn last are not drawn again (nil: 1, so
  /// never the same twice in a row; at most one less than the items there are).
  public var avoidRepeat: Int?

  /// A source `name` of `kind`, in sequence, without fallback or gain, levelled by track ReplayGain.
  public init(name: String, kind: Kind) {
    self.name = name
    self.kind = kind
    order = .sequence
    fallback = nil
    gainDecibels = 0
    replayGain = .track
    cuePointsSeconds = []
    grid = nil
  }

  /// A pickup's length, as the cue file gives it.
  public enum Pickup: Sendable, Equatable {
    /// `pickup: SECONDS`.
    case seconds(Double)
    /// `pickup: { beats: N }`: beats of the item's grid.
    case beats(Double)
    /// `pickup: { bars: N }`: bars of the item's grid (its beats per bar each).
    case bars(Double)

    /// Its length in seconds on `grid`.
    func seconds(on grid: BeatGrid) -> Double {
      switch self {
      case .seconds(let seconds): return seconds
      case .beats(let beats): return beats * grid.secondsPerBeat
      case .bars(let bars): return bars * grid.secondsPerBar
      }
    }
  }
}

/// A named cue point as the cue file gives it: seconds into the item, or a bar of its grid.
public enum CuePosition: Sendable, Equatable {
  /// Seconds from the item's first frame.
  case seconds(Double)
  /// The start of bar N (from 1) of the item's grid: its offset plus N - 1 bars.
  case bar(Double)
}

/// Which bundled files a bundled source plays.
public struct BundledSelection: Sendable, Equatable {
  /// Files relative to the assets folder, in this order; empty: select by tags.
  public var files: [String]
  /// How likely each file is drawn with `order: "random"`, by file (`{ file, weight }` in the
  /// list); files not named weigh 1.
  public var weights: [String: Double] = [:]
  /// Tag filters (case-insensitive equality); every one given must match.
  public var mood: String?
  /// The genre tag to match.
  public var genre: String?
  /// The title tag to match.
  public var title: String?

  /// Bundled files by name (`files`, in this order), or, when `files` is empty, every bundled file
  /// whose tags match the filters given.
  public init(files: [String] = [], mood: String? = nil, genre: String? = nil, title: String? = nil) {
    self.files = files
    self.mood = mood
    self.genre = genre
    self.title = title
  }
}

/// A music state (explore, combat, boss, menu): what plays, how user songs and bundled tracks mix,
/// and how music enters it.
public struct MusicState: Sendable {
  /// How a state blends the player's songs with the game's.
  public enum Mix: Sendable, Equatable {
    /// The user source's songs; the bundled source when it gives nothing or access is refused.
    case userFirst
    /// The bundled source only (the user source is ignored).
    case bundledOnly
    /// `userSongs` of the user source, then one bundled track, and again.
    case interleave(userSongs: Int)
  }

  /// The state's name, as rules name it.
  public var name: String
  /// The source of the player's songs, if the state uses any.
  public var userSource: String?
  /// The source of the game's music (or the only source).
  public var bundledSource: String?
  /// How the player's songs and the game's music alternate.
  public var mix: Mix
  /// Whether the state's queue repeats (`repeat`; default `.all`).
  public var repeatMode: RepeatMode
  /// How often items with loop points loop (`loop`; default until released).
  public var loop: LoopRepeat
  /// The music's rate in this state (`rate`, [1/256, 4]; default 1).
  public var rate: Float
  /// The music's volume in this state (`volume`, 0...1; default 1).
  public var volume: Float
  /// Rules of lower priority cannot act while this state plays (boss music is not interrupted by
  /// a lesser cue).
  public var priority: Int
  /// How music enters this state when a rule does not say.
  public var transition: TransitionSpec
  /// How one item of the state's queue hands over to the next.
  public var itemTransition: Transition
  /// The time grid for quantized transitions when the playing item's tempo is unknown.
  public var grid: BeatGrid?
  /// Whether the player's songs go on where they were left when the state is entered again
  /// (`resume`, default true): the same song, from the same place, then the rest in the same
  /// order. False: they start again from the first. Bundled music always starts as the
  /// transition's `enter` says.
  public var resumesPlayerMusic: Bool
  /// Stems played with the state's music, sample-locked to it (`layers`), in file order.
  public var layers: [MusicLayer] = []
  /// How the state goes through its music (`playlist`).
  public var playlist: Playlist = .continuous

  /// `continuous`: the queue plays on, item after item; `step`: each entry into the state plays
  /// one item of each source (the next in its order), again and again until the state is left.
  public enum Playlist: String, Sendable, CaseIterable {
    case continuous, step
  }

  /// A state `name` with the defaults: user songs first, repeating, looping until released, rate
  /// and volume 1, priority 0, a 2 s equal-power transition and the default item crossfade.
  public init(name: String) {
    self.name = name
    userSource = nil
    bundledSource = nil
    mix = .userFirst
    repeatMode = .all
    loop = .untilReleased
    rate = 1
    volume = 1
    priority = 0
    transition = TransitionSpec()
    itemTransition = .defaultCrossfade
    grid = nil
    resumesPlayerMusic = true
  }
}

/// One stem of a state's music (a state's `layers`): drums, bass, a lead, each its own file,
/// started on the music's frame and kept sample-locked with it, its level set by rules' `layer`
/// actions and parameters' drives.
public struct MusicLayer: Sendable, Equatable {
  /// The layer's name, as `layer` actions and drives give it.
  public var name: String
  /// The bundled source of its files: the music's n-th file plays with this source's n-th
  /// (counting round when it has fewer).
  public var source: String
  /// Its level each time the state is entered (`volume`, 0...1; default 1).
  public var volume: Float

  /// A layer `name` playing `source`'s files, entering at `volume`.
  public init(name: String, source: String, volume: Float = 1) {
    self.name = name
    self.source = source
    self.volume = volume
  }
}

/// Brings a layer of the playing state in or out (`{ layer: "drums", volume, seconds, curve, at }`).
public struct LayerAction: Sendable, Equatable {
  /// The layer's name.
  public var layer: String
  /// The level to go to, 0...1.
  public var volume: Float
  /// The fade's length (0: at once).
  public var seconds: Double
  /// The fade's shape.
  public var curve: FadeCurve
  /// When it starts: now, on the next beat or on the next bar (`end` is not allowed).
  public var moment: TransitionSpec.Moment

  /// A move of `layer` to `volume` over `seconds` along `curve`, starting at `moment`.
  public init(
    layer: String, volume: Float, seconds: Double = 0, curve: FadeCurve = .equalPower,
    moment: TransitionSpec.Moment = .now
  ) {
    self.layer = layer
    self.volume = volume
    self.seconds = seconds
    self.curve = curve
    self.moment = moment
  }
}

/// How music changes: the crossfade, when it starts, and where the new music enters. Plain data,
/// as Godot's interactive music transitions are.
public struct TransitionSpec: Sendable, Equatable {
  /// When the change happens.
  public enum Moment: String, Sendable, CaseIterable {
    /// At once (on the frame the director's step lands on).
    case now
    /// On the next beat of the playing music.
    case beat
    /// On the next bar.
    case bar
    /// When the playing item (or its loop pass) ends; the crossfade finishes there.
    case end
  }
  /// Where the incoming music starts.
  public enum Entry: String, Sendable, CaseIterable {
    /// Its beginning.
    case start
    /// Its loop start (LOOPSTART), or its beginning if it has none.
    case loopStart = "loop-start"
    /// The outgoing item's position (stems of one piece stay in step).
    case samePosition = "same-position"
    /// A random one of the source's cue points (or a random bar when it lists none).
    case cuePoint = "cue-point"
  }

  /// The crossfade's length in seconds (0: a cut at the moment).
  public var seconds: Double
  /// The crossfade's curve.
  public var curve: FadeCurve
  /// When the change happens (`at`).
  public var moment: Moment
  /// Where the incoming music starts (`enter`).
  public var entry: Entry
  /// With `moment` `.bar`: only every this many bars, counted from the playing item's first bar
  /// (`bars`: 4 waits for the end of a four-bar phrase). 1: the next bar.
  public var bars: Int = 1
  /// Leave at the playing item's next cue point of this name (`at: { cue: "exit" }`, or `at:
  /// "exit"`): its source's `cues`, else its file's `CUE_<NAME>` tags. None ahead: when the item
  /// (or its loop pass) ends, as `at: "end"`. Nil: `moment` says when.
  public var exitCue: String?
  /// Enter at the incoming item's first cue point of this name (`enter: { cue: "chorus" }`);
  /// none: its start. Nil: `entry` says where.
  public var entryCue: String?
  /// Pre-entry (`pickup: true`): the incoming piece starts early by its pickup (the time from its
  /// first frame to its first downbeat: its source's `pickup`, else where its bars begin), so
  /// that its downbeat lands on the moment; the music playing holds its level until then.
  public var pickup: Bool = false
  /// Post-exit (`tail`): seconds the outgoing music plays on at its level past the moment (past
  /// the incoming downbeat, with a pickup) before its fade begins.
  public var tailSeconds: Double = 0

  /// A transition of `seconds` (default 2) with `curve`, at `moment`, entering at `entry`.
  public init(seconds: Double = 2, curve: FadeCurve = .equalPower, moment: Moment = .now, entry: Entry = .start) {
    self.seconds = seconds
    self.curve = curve
    self.moment = moment
    self.entry = entry
  }
}

// MARK: - Rules

/// On a cue, when its conditions hold: a list of actions.
public struct CueRule: Sendable {
  /// The rule's name (`name`, or "rule N" by its place in the file): reports say which rule fired.
  public var name: String
  /// Cue names it answers; a name ending in ".*" matches every cue with that prefix.
  public var cues: [String]
  /// What must hold for the rule to fire (`when`).
  public var conditions: RuleConditions
  /// Higher priorities win when several rules answer a cue; a state's priority holds lower ones off.
  public var priority: Int
  /// It does not fire again within this many seconds of firing.
  public var cooldownSeconds: Double
  /// What the rule does, in order (`do`).
  public var actions: [CueAction]
  /// Where the rule starts in the file, for reports.
  public var line: Int?

  /// A rule `name` answering `cues` with `actions`, without conditions, priority or cooldown.
  public init(name: String, cues: [String], actions: [CueAction]) {
    self.name = name
    self.cues = cues
    conditions = RuleConditions()
    priority = 0
    cooldownSeconds = 0
    self.actions = actions
    line = nil
  }

  /// Whether the rule answers `cue`: an exact name, a prefix pattern ending in ".*", or "*".
  public func answers(_ cue: String) -> Bool {
    cues.contains { pattern in
      if pattern == "*" { return true }
      if pattern.hasSuffix(".*") { return cue.hasPrefix(pattern.dropLast()) }
      return pattern == cue
    }
  }
}

/// What must hold for a rule to fire: all of it.
public struct RuleConditions: Sendable {
  /// The current state is one of these (nil: any).
  public var states: [String]?
  /// The current state is none of these.
  public var notStates: [String]
  /// Tests on the event's payload, by key.
  public var payload: [(key: String, test: ValueTest)]
  /// Tests on game parameters, by name.
  public var parameters: [(name: String, test: ValueTest)]

  /// Conditions that always hold.
  public init() {
    states = nil
    notStates = []
    payload = []
    parameters = []
  }
}

/// A test on one value; every comparison given must hold.
public struct ValueTest: Sendable, Equatable {
  /// One comparison of a value.
  public enum Comparison: Sendable, Equatable {
    /// Equal to this value (numbers by value, strings case-sensitively).
    case equals(CueValue)
    /// Not equal to this value (an absent value passes).
    case not(CueValue)
    /// Equal to one of these values.
    case oneOf([CueValue])
    /// A number greater than this.
    case above(Double)
    /// A number less than this.
    case below(Double)
    /// A number greater than or equal to this.
    case atLeast(Double)
    /// A number less than or equal to this.
    case atMost(Double)
    /// The key is present (true) or absent (false).
    case exists(Bool)
  }
  /// The comparisons; all must hold.
  public var comparisons: [Comparison]

  /// A test of `comparisons`, all of which must hold.
  public init(_ comparisons: [Comparison]) { self.comparisons = comparisons }

  /// Whether `value` (nil: absent) passes. A number comparison fails on a string or a boolean.
  public func passes(_ value: CueValue?) -> Bool {
    comparisons.allSatisfy { comparison in
      switch comparison {
      case .exists(let present): return (value != nil) == present
      case .equals(let expected): return value.map { $0.matches(expected) } ?? false
      case .not(let unwanted): return !(value.map { $0.matches(unwanted) } ?? false)
      case .oneOf(let options): return value.map { value in options.contains { value.matches($0) } } ?? false
      case .above(let bound): return value?.numberValue.map { $0 > bound } ?? false
      case .below(let bound): return value?.numberValue.map { $0 < bound } ?? false
      case .atLeast(let bound): return value?.numberValue.map { $0 >= bound } ?? false
      case .atMost(let bound): return value?.numberValue.map { $0 <= bound } ?? false
      }
    }
  }
}

extension CueValue {
  /// Equality for conditions: numbers by value, strings case-sensitively, booleans exactly.
  func matches(_ other: CueValue) -> Bool {
    switch (self, other) {
    case (.number(let a), .number(let b)): return a == b
    case (.string(let a), .string(let b)): return a == b
    case (.bool(let a), .bool(let b)): return a == b
    default: return false
    }
  }
}

/// One thing a rule does. Times are seconds; gains are decibels where the name says so.
public enum CueAction: Sendable, Equatable {
  /// Moves to a state. `transition` overrides the state's own (`{ crossfade: "combat", ... }`).
  case changeState(String, transition: TransitionSpec?)
  /// A one-shot over the music.
  case stinger(StingerAction)
  /// Lowers the music for a while: down by `decibels` over `attack`, held, back up over `release`.
  case duck(DuckAction)
  /// Changes the music's rate (speed and pitch) to `value` over `rampSeconds`.
  case rate(Float, rampSeconds: Double)
  /// Changes the music's tempo (speed, keeping pitch) to `value` (0.5...2) over `rampSeconds`.
  case tempo(Float, rampSeconds: Double)
  /// Changes the music's volume (0...1) over `rampSeconds`.
  case volume(Float, rampSeconds: Double)
  /// Moves within the playing item, dipping over `fadeSeconds` around the jump.
  case seek(SeekTarget, fadeSeconds: Double)
  /// Pauses the music, fading out over `fadeSeconds`.
  case pause(fadeSeconds: Double)
  /// Resumes the music, fading in over `fadeSeconds` (after `stop`, the current state starts again).
  case resume(fadeSeconds: Double)
  /// Stops the music, fading out over `fadeSeconds`.
  case stop(fadeSeconds: Double)
  /// Moves through the state's queue with a crossfade (nil: the state's item transition).
  case skip(SkipDirection, transition: TransitionSpec?)
  /// Sets a game parameter, over `rampSeconds`.
  case setParameter(String, value: Double, rampSeconds: Double)
  /// Ends the playing item's loop: its outro plays.
  case releaseLoop
  /// Brings a layer of the playing state in or out.
  case layer(LayerAction)
  /// The game's own queue (`Director.setQueue`): these items play in place of the state's music
  /// until the next state change. Not a cue file action: the game's command only.
  case playQueue(GameQueue)
  /// Holds the music down by `decibels` (<= 0; 0 lets it back up), moving there over
  /// `seconds`, until told otherwise: a duck with no end of its own, for what the game knows
  /// and the cue file cannot (the player's own music app plays: `systemMusic: { duck }`). It
  /// multiplies with the cue file's ducks. Not a cue file action: the game's command only.
  case holdDuck(decibels: Double, seconds: Double)

  /// The action's key in the file, for reports.
  public var verb: String {
    switch self {
    case .changeState(_, let transition): return transition == nil ? "state" : "crossfade"
    case .stinger: return "stinger"
    case .duck: return "duck"
    case .rate: return "rate"
    case .tempo: return "tempo"
    case .volume: return "volume"
    case .seek: return "seek"
    case .pause: return "pause"
    case .resume: return "resume"
    case .stop: return "stop"
    case .skip: return "skip"
    case .setParameter: return "set"
    case .releaseLoop: return "releaseLoop"
    case .layer: return "layer"
    case .playQueue: return "queue"
    case .holdDuck: return "hold duck"
    }
  }
}

/// Songs the game chose to play now (a playlist the player picked in its menu): they play in
/// place of the current state's music, which the rules still see as the state, until the next
/// state change brings that state's own music.
public struct GameQueue: Sendable, Equatable {
  /// The items, in the order they play (never empty).
  public var items: [MediaItem]
  /// How the queue takes over: crossfade length, curve and where on the grid.
  public var transition: TransitionSpec
  /// Whether it repeats: `.all` (the default) starts over after the last item, `.none` stops
  /// the music after it (`resume` then starts the state's own music), `.one` repeats each.
  public var repeatMode: RepeatMode
  /// Whether it is shuffled, as `QueuePlayer.shuffleMode` shuffles: `.off` (the default) plays
  /// `items` in order; `.songs` starts at a random song and plays each once, `.albums` keeps each
  /// album's songs together in their order. With `repeatMode` `.all`, each lap is shuffled
  /// afresh and never begins with the song (or album) that ended the lap before. The order is
  /// drawn from the cue file's `seed` and the queues shuffled before, so an offline run repeats.
  public var shuffleMode: ShuffleMode

  /// A queue of `items` taking over with `transition`, repeating as `repeatMode` says, shuffled
  /// as `shuffleMode` says.
  public init(
    items: [MediaItem], transition: TransitionSpec, repeatMode: RepeatMode = .all, shuffleMode: ShuffleMode = .off
  ) {
    self.items = items
    self.transition = transition
    self.repeatMode = repeatMode
    self.shuffleMode = shuffleMode
  }
}

/// A one-shot played over the music (`{ stinger: "name", at, volume, duck }`).
public struct StingerAction: Sendable, Equatable {
  /// A source name or a bundled file (relative to the assets folder).
  public var sound: String
  /// Whether `sound` names a source (false: a file).
  public var isSource: Bool
  /// When it plays: now, on the next beat or the next bar (`end` is not allowed).
  public var moment: TransitionSpec.Moment
  /// The stinger's volume, 0...1.
  public var volume: Float
  /// Ducks the music under it, if given.
  public var duck: DuckAction?

  /// A stinger of `sound` (a source when `isSource`, else a bundled file) at `moment`, at `volume`,
  /// ducking the music by `duck` if given.
  public init(
    sound: String, isSource: Bool, moment: TransitionSpec.Moment = .now, volume: Float = 1, duck: DuckAction? = nil
  ) {
    self.sound = sound
    self.isSource = isSource
    self.moment = moment
    self.volume = volume
    self.duck = duck
  }
}

/// Lowers the music for a while (`{ duck: dB, attack, hold, release }`); when ducks overlap, the
/// deepest applies.
public struct DuckAction: Sendable, Equatable {
  /// How far down, in decibels (<= 0).
  public var decibels: Double
  /// Seconds to go down (`attack`).
  public var attackSeconds: Double
  /// Seconds held down (`hold`).
  public var holdSeconds: Double
  /// Seconds to come back (`release`).
  public var releaseSeconds: Double

  /// A duck of `decibels` (<= 0) with `attackSeconds`, `holdSeconds` and `releaseSeconds`.
  public init(decibels: Double, attackSeconds: Double = 0.1, holdSeconds: Double = 1, releaseSeconds: Double = 0.5) {
    self.decibels = decibels
    self.attackSeconds = attackSeconds
    self.holdSeconds = holdSeconds
    self.releaseSeconds = releaseSeconds
  }
}

/// Where a `seek` action goes in the playing item.
public enum SeekTarget: Sendable, Equatable {
  /// A position in seconds.
  case seconds(Double)
  /// The item's beginning.
  case start
  /// The item's loop start (its beginning when it has none).
  case loopStart
}
