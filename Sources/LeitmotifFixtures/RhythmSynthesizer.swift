import LeitmotifDecoding

#if canImport(Glibc)
  import Glibc
#endif

/// Drum-and-bass songs at known tempos, with the time of every beat: the ground truth the tempo
/// and beat analysis is tested and benchmarked against (`leitmotif-bench tempo`).
///
/// Each song is 4/4 in one of five styles (four on the floor, rock, swing with the off-beat at
/// two thirds, funk with syncopated kicks and sixteenth hats, a soft ballad), mostly with bass and
/// chords, a lead-in before the first beat (silence, or a two-snare pickup), a little human timing
/// (±3 ms, ±6 ms for the ballad) and white noise 45 dB down. Stereo, at any rate.
///
/// Thread safety: pure functions of their arguments (the seed included).
public enum RhythmSynthesizer {
  /// The drum pattern.
  public enum Style: String, Sendable, CaseIterable {
    case fourOnFloor = "four-on-floor"
    case rock, swing, funk, ballad
  }

  /// A synthesized song and where its beats are.
  public struct Song: Sendable {
    public var name: String
    public var format: AudioFormat
    /// Interleaved stereo frames.
    public var samples: [Float]
    public var beatsPerMinute: Double
    /// Every beat, seconds from the start.
    public var beats: [Double]

    public init(name: String, format: AudioFormat, samples: [Float], beatsPerMinute: Double, beats: [Double]) {
      self.name = name
      self.format = format
      self.samples = samples
      self.beatsPerMinute = beatsPerMinute
      self.beats = beats
    }
  }

  /// A song at `bpm` in 4/4: drums by style, bass and chords for most, `leadIn` seconds before the
  /// first beat (silence, or a pickup fill when `pickup`), white noise 45 dB under.
  public static func song(
    bpm: Double, rate: Int, style: Style, seconds: Double, leadIn: Double, pickup: Bool, harmony: Bool, seed: UInt64
  ) -> Song {
    var synth = Synth(rate: rate, seconds: seconds, seed: seed)
    let beat = 60 / bpm
    let swingOffset = style == .swing ? beat / 6 : 0  // off-beat eighth at 2/3 of the beat
    var beats: [Double] = []
    let progression = [[48, 55, 64, 67], [45, 52, 60, 64], [41, 48, 57, 60], [43, 50, 59, 62]]
    if pickup {
      synth.snare(leadIn - beat / 2, 0.25)
      synth.snare(leadIn - beat / 4, 0.3)
    }
    var k = 0
    while true {
      let time = leadIn + Double(k) * beat
      if time > seconds - 1.0 { break }
      beats.append(time)
      let position = k % 4
      let bar = k / 4
      var human = Double(synth.random.unit() - 0.5) * 0.006
      if style == .ballad { human *= 2 }
      let t = time + human
      let off = t + beat / 2 + swingOffset
      switch style {
      case .fourOnFloor:
        synth.kick(t, 0.8)
        if position == 1 || position == 3 { synth.snare(t, 0.5) }
        synth.hat(t, 0.15)
        synth.hat(off, 0.25)
      case .rock:
        if position == 0 || position == 2 { synth.kick(t, 0.8) }
        if position == 2 { synth.kick(off, 0.6) }
        if position == 1 || position == 3 { synth.snare(t, 0.6) }
        synth.hat(t, 0.2)
        synth.hat(off, 0.15)
      case .swing:
        synth.kick(t, 0.45)
        if position == 1 || position == 3 { synth.snare(t, 0.35); synth.hat(t, 0.2) }
        synth.hat(t, 0.25)
        if position == 1 || position == 3 { synth.hat(off, 0.15) }
      case .funk:
        if position == 0 { synth.kick(t, 0.8) }
        if position == 1 { synth.kick(off, 0.6) }
        if position == 2 { synth.kick(t + beat * 0.75, 0.5) }
        if position == 1 || position == 3 { synth.snare(t, 0.6) }
        for sixteenth in 0..<4 { synth.hat(t + Double(sixteenth) * beat / 4, sixteenth == 0 ? 0.15 : 0.07) }
      case .ballad:
        synth.kick(t, 0.6)
        if position == 1 || position == 3 { synth.snare(t, 0.4) }
        synth.hat(t, 0.1)
        synth.hat(off, 0.08)
      }
      if harmony {
        let chord = progression[bar % 4]
        if position == 0 {
          for note in chord.dropFirst() {
            synth.tone(t + 0.01, beat * 4 - 0.05, Self.midiHertz(note), 0.06, attack: 0.03, pan: -0.3)
          }
        }
        let root = chord[0] - 12
        switch style {
        case .swing:  // walking bass on the beats
          synth.tone(t, beat * 0.9, Self.midiHertz(root + [0, 4, 7, 9][position]), 0.3, attack: 0.005, pan: 0)
        case .funk:  // syncopated: anticipations of the next beat
          synth.tone(t, beat * 0.4, Self.midiHertz(root), 0.3, attack: 0.005, pan: 0)
          if position == 1 || position == 3 {
            synth.tone(t + beat * 0.75, beat * 0.2, Self.midiHertz(root + 12), 0.25, attack: 0.005, pan: 0)
          }
        default:
          synth.tone(t, beat * 0.45, Self.midiHertz(root), 0.3, attack: 0.005, pan: 0)
          synth.tone(off, beat * 0.45, Self.midiHertz(root + (position == 3 ? 7 : 0)), 0.2, attack: 0.005, pan: 0)
        }
      }
      k += 1
    }
    synth.noiseFloor(0.005)
    return Song(
      name: "\(Int(bpm)) BPM \(style.rawValue)\(pickup ? " pickup" : "") @\(rate)",
      format: AudioFormat(sampleRate: rate, channelCount: 2), samples: synth.interleaved(), beatsPerMinute: bpm,
      beats: beats)
  }

  /// The test set of `leitmotif-bench tempo`: eleven songs from 72 to 174 BPM, every style, at
  /// 44.1 and 48 kHz in turn, 30 to 60 s long, first beats at 0.37, 0.6 or 1 s.
  public static func testSet() -> [Song] {
    let tempos: [(Double, Style, Bool)] = [
      (72, .ballad, true), (85, .rock, true), (96, .swing, true), (100, .funk, true), (110, .fourOnFloor, false),
      (120, .rock, true), (128, .fourOnFloor, true), (140, .swing, true), (150, .funk, false), (165, .rock, true),
      (174, .funk, true),
    ]
    return tempos.enumerated().map { index, entry in
      song(
        bpm: entry.0, rate: index % 2 == 0 ? 44_100 : 48_000, style: entry.1, seconds: 30 + Double(index % 4) * 10,
        leadIn: index % 3 == 0 ? 0.37 : (index % 3 == 1 ? 1.0 : 0.6), pickup: index % 3 == 1, harmony: entry.2,
        seed: UInt64(index + 1))
    }
  }

  /// Precision and recall of `detected` against `truth`, each true beat matched at most once, within ±`window`.
  public static func fMeasure(detected: [Double], truth: [Double], window: Double = 0.07) -> Double {
    guard !detected.isEmpty, !truth.isEmpty else { return 0 }
    var used = [Bool](repeating: false, count: truth.count)
    var matches = 0
    var cursor = 0
    for time in detected {
      while cursor < truth.count && truth[cursor] < time - window { cursor += 1 }
      var index = cursor
      var best = -1
      var bestDistance = window
      while index < truth.count && truth[index] <= time + window {
        if !used[index] && abs(truth[index] - time) <= bestDistance {
          best = index; bestDistance = abs(truth[index] - time)
        }
        index += 1
      }
      if best >= 0 { used[best] = true; matches += 1 }
    }
    let precision = Double(matches) / Double(detected.count)
    let recall = Double(matches) / Double(truth.count)
    return precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0
  }

  static func midiHertz(_ note: Int) -> Double { 440 * pow(2, Double(note - 69) / 12) }
}

private struct Synth {
  let rate: Int
  var left: [Float]
  var right: [Float]
  var random: SplitMix64

  init(rate: Int, seconds: Double, seed: UInt64) {
    self.rate = rate
    left = [Float](repeating: 0, count: Int(seconds * Double(rate)))
    right = left
    random = SplitMix64(seed: seed)
  }

  mutating func add(_ start: Double, _ seconds: Double, pan: Float, _ sample: (Double, inout SplitMix64) -> Float) {
    let first = Int(start * Double(rate))
    let count = Int(seconds * Double(rate))
    for offset in 0..<count {
      let index = first + offset
      guard index >= 0, index < left.count else { continue }
      let value = sample(Double(offset) / Double(rate), &random)
      left[index] += value * (1 - pan)
      right[index] += value * (1 + pan)
    }
  }

  mutating func kick(_ time: Double, _ amp: Float) {
    var phase = 0.0
    let step = 1 / Double(rate)
    add(time, 0.3, pan: 0) { t, _ in
      let frequency = 50 + 100 * exp(-t / 0.03)
      phase += 2 * Double.pi * frequency * step
      return amp * Float(sin(phase) * exp(-t / 0.15))
    }
  }

  mutating func snare(_ time: Double, _ amp: Float) {
    add(time, 0.25, pan: -0.1) { t, random in
      amp * (0.6 * random.noise() * Float(exp(-t / 0.06)) + 0.4 * Float(sin(2 * Double.pi * 190 * t) * exp(-t / 0.05)))
    }
  }

  mutating func hat(_ time: Double, _ amp: Float) {
    var previous: Float = 0
    add(time, 0.07, pan: 0.3) { t, random in
      let white = random.noise()
      let high = white - previous
      previous = white
      return amp * high * Float(exp(-t / 0.015))
    }
  }

  mutating func tone(_ time: Double, _ seconds: Double, _ frequency: Double, _ amp: Float, attack: Double, pan: Float) {
    add(time, seconds + 0.1, pan: pan) { t, _ in
      let envelope =
        min(1, t / attack)
        * (t < seconds ? exp(-t / (seconds * 2)) : exp(-seconds / (seconds * 2)) * exp(-(t - seconds) / 0.03))
      return amp * Float(envelope * (sin(2 * Double.pi * frequency * t) + 0.3 * sin(4 * Double.pi * frequency * t)))
    }
  }

  mutating func noiseFloor(_ amp: Float) {
    for index in 0..<left.count {
      left[index] += amp * random.noise()
      right[index] += amp * random.noise()
    }
  }

  func interleaved() -> [Float] {
    var out = [Float](repeating: 0, count: left.count * 2)
    for index in 0..<left.count {
      out[2 * index] = left[index]
      out[2 * index + 1] = right[index]
    }
    return out
  }
}

extension SplitMix64 {
  /// Uniform in -1...1.
  mutating func noise() -> Float { Float(Double(next() >> 11) / Double(1 << 53)) * 2 - 1 }
  /// Uniform in 0..<1.
  mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
