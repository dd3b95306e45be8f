import LeitmotifFixtures

// The musical vocabulary: instruments (a timbre with its place in the mix), keys and chords,
// the leitmotif, and `Score`, which collects notes in beats. Pieces are written with these.

/// A timbre and where it sits in the mix.
struct Instrument: Sendable {
  var timbre: Timbre
  /// -1 left ... 1 right.
  var pan: Double = 0
  var gain: Double = 1
  /// How much goes to the reverb and to the delay (0 ... 1).
  var reverbSend: Double = 0.2
  var delaySend: Double = 0
  /// Filter brightness, 1 normal.
  var brightness: Double = 1
}

/// One note in a score, timed in beats from the start of its section.
struct Note: Sendable {
  var instrument: Instrument
  var pitch: Double
  var startBeat: Double
  var lengthBeats: Double
  var velocity: Double
  var panOffset: Double
  var seed: UInt64
}

/// A key: a tonic (MIDI pitch) and a scale (semitones above it).
struct Key: Sendable {
  var tonic: Int
  var scale: [Int]

  static let majorScale = [0, 2, 4, 5, 7, 9, 11]
  static let minorScale = [0, 2, 3, 5, 7, 8, 10]

  static func major(_ tonic: Int) -> Key { Key(tonic: tonic, scale: majorScale) }
  static func minor(_ tonic: Int) -> Key { Key(tonic: tonic, scale: minorScale) }

  /// The pitch of scale degree `degree` (0 is the tonic; negative and beyond 6 change octave).
  func pitch(_ degree: Int, octave: Int = 0) -> Int {
    let count = scale.count
    let wrapped = ((degree % count) + count) % count
    let octaves = (degree - wrapped) / count + octave
    return tonic + scale[wrapped] + 12 * octaves
  }

  /// The chord on scale degree `degree`: a triad (or seventh) stacked in thirds from the scale.
  func chord(_ degree: Int, seventh: Bool = false) -> Chord {
    let tones = (seventh ? [0, 2, 4, 6] : [0, 2, 4]).map { pitch(degree + $0) }
    return Chord(pitches: tones)
  }
}

/// Chord tones as MIDI pitches, lowest first; `root` is the first.
struct Chord: Sendable {
  var pitches: [Int]
  var root: Int { pitches[0] }

  /// A chord by root and the semitones above it (for chords outside the key, like V in minor).
  init(root: Int, intervals: [Int]) { pitches = intervals.map { root + $0 } }
  init(pitches: [Int]) { self.pitches = pitches }

  static func major(_ root: Int) -> Chord { Chord(root: root, intervals: [0, 4, 7]) }
  static func minor(_ root: Int) -> Chord { Chord(root: root, intervals: [0, 3, 7]) }

  /// The same chord moved by octaves so that its root lies in `low ..< low + 12`.
  func rooted(near low: Int) -> Chord {
    var shift = 0
    while root + shift < low { shift += 12 }
    while root + shift >= low + 12 { shift -= 12 }
    return Chord(pitches: pitches.map { $0 + shift })
  }

  /// Chord tone `index`, continuing up (or down) in octaves past the chord's own tones.
  func tone(_ index: Int) -> Int {
    let count = pitches.count
    let wrapped = ((index % count) + count) % count
    return pitches[wrapped] + 12 * ((index - wrapped) / count)
  }
}

/// A melody in scale degrees: each step a degree (nil is a rest) and a length in beats.
struct Phrase: Sendable {
  var steps: [(degree: Int?, beats: Double)]

  var lengthBeats: Double { steps.reduce(0) { $0 + $1.beats } }

  /// The degrees moved by `degrees` (a diatonic transposition: harmony a third below is -2).
  func shifted(by degrees: Int) -> Phrase { Phrase(steps: steps.map { ($0.degree.map { $0 + degrees }, $0.beats) }) }

  func followed(by other: Phrase) -> Phrase { Phrase(steps: steps + other.steps) }
}

/// The leitmotif every piece quotes, in some guise: a rising fifth, a turn back down and a
/// stepwise fall home (two bars of 4/4), with an answer that climbs to the sixth.
enum Leitmotif {
  static let call = Phrase(steps: [
    (0, 1), (4, 1), (3, 0.5), (2, 0.5), (3, 1),
    (4, 1.5), (2, 0.5), (1, 1), (0, 1),
  ])
  /// The open answer, ending on the third.
  static let answer = Phrase(steps: [
    (0, 1), (4, 1), (5, 1.5), (4, 0.5),
    (3, 1), (2, 0.5), (1, 0.5), (2, 2),
  ])
  /// The closed answer, ending on the tonic.
  static let cadence = Phrase(steps: [
    (0, 1), (4, 1), (5, 1.5), (4, 0.5),
    (3, 1), (1, 1), (0, 2),
  ])
  /// The first five notes: the motif's head, for fragments.
  static let head = Phrase(steps: [(0, 1), (4, 1), (3, 0.5), (2, 0.5), (3, 1)])
}

/// Notes collected in beats, with seeded humanisation: every random choice comes from the score's
/// own SplitMix64, so a seed fixes the piece.
struct Score {
  let beatsPerBar: Int
  private(set) var notes: [Note] = []
  private var random: SplitMix64

  init(beatsPerBar: Int = 4, seed: UInt64) {
    self.beatsPerBar = beatsPerBar
    random = SplitMix64(seed: seed)
  }

  /// A uniform random number in `range`.
  mutating func randomValue(in range: ClosedRange<Double>) -> Double {
    range.lowerBound + Double(random.next() >> 11) / 9_007_199_254_740_992.0 * (range.upperBound - range.lowerBound)
  }

  /// The beat at which bar `bar` (0-based) starts.
  func beat(bar: Int, _ beat: Double = 0) -> Double { Double(bar * beatsPerBar) + beat }

  /// One note. Velocity gets a little random variation; pitched notes a touch of late timing,
  /// except at beat 0, so that a piece's first downbeat is exactly frame 0.
  mutating func play(
    _ instrument: Instrument, _ pitch: Int, at startBeat: Double, for lengthBeats: Double,
    velocity: Double = 0.8, pan: Double = 0
  ) {
    let human = instrument.timbre.isDrum ? 0 : randomValue(in: 0...0.012)
    let velocity = velocity * randomValue(in: 0.92...1.0)
    notes.append(
      Note(
        instrument: instrument, pitch: Double(pitch), startBeat: startBeat + (startBeat == 0 ? 0 : human),
        lengthBeats: lengthBeats, velocity: velocity, panOffset: pan, seed: random.next()))
  }

  /// All tones of `chord` at once, spread across the stereo field by `spread`.
  mutating func chord(
    _ instrument: Instrument, _ chord: Chord, at startBeat: Double, for lengthBeats: Double,
    velocity: Double = 0.7, spread: Double = 0.5
  ) {
    let count = chord.pitches.count
    for (index, pitch) in chord.pitches.enumerated() {
      let pan = count > 1 ? spread * (Double(index) / Double(count - 1) * 2 - 1) : 0
      play(instrument, pitch, at: startBeat, for: lengthBeats, velocity: velocity, pan: pan)
    }
  }

  /// A rhythm for one bar (or more), one character per step: `x` accent, `o` normal, `-` ghost,
  /// anything else a rest.
  mutating func pattern(
    _ instrument: Instrument, _ steps: String, at startBeat: Double, pitch: Int = 60, stepBeats: Double = 0.25,
    velocity: Double = 0.9, lengthBeats: Double = 0.25
  ) {
    for (index, step) in steps.enumerated() {
      let level: Double
      switch step {
      case "x": level = 1
      case "o": level = 0.7
      case "-": level = 0.4
      default: continue
      }
      play(instrument, pitch, at: startBeat + Double(index) * stepBeats, for: lengthBeats, velocity: velocity * level)
    }
  }

  /// A phrase in `key`, starting at `startBeat`, its rhythm stretched by `timeScale`; `legato` is the
  /// fraction of each step the note is held.
  mutating func melody(
    _ instrument: Instrument, _ phrase: Phrase, in key: Key, at startBeat: Double, octave: Int = 0,
    timeScale: Double = 1, velocity: Double = 0.8, legato: Double = 0.92
  ) {
    var beat = startBeat
    for (index, step) in phrase.steps.enumerated() {
      let length = step.beats * timeScale
      if let degree = step.degree {
        // The first note of a phrase and notes on the beat speak a little louder.
        let accent = index == 0 || beat.truncatingRemainder(dividingBy: 1) == 0 ? 1.0 : 0.85
        play(instrument, key.pitch(degree, octave: octave), at: beat, for: length * legato, velocity: velocity * accent)
      }
      beat += length
    }
  }

  /// An arpeggio over `chord`: `indices` are chord tones (see `Chord.tone`), one per step, repeated
  /// for `steps` steps; pan alternates by `spread`.
  mutating func arpeggio(
    _ instrument: Instrument, _ chord: Chord, indices: [Int], at startBeat: Double, steps: Int,
    stepBeats: Double, velocity: Double = 0.6, spread: Double = 0.4, gateBeats: Double? = nil
  ) {
    for step in 0..<steps {
      let pitch = chord.tone(indices[step % indices.count])
      let accent = step % 4 == 0 ? 1.0 : 0.8
      play(
        instrument, pitch, at: startBeat + Double(step) * stepBeats, for: gateBeats ?? stepBeats * 0.9,
        velocity: velocity * accent, pan: step % 2 == 0 ? -spread : spread)
    }
  }
}
