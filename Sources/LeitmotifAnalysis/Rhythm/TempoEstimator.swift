import Glibc

/// A song's global tempo, as the beat period in envelope frames, and how clearly the envelope
/// repeats at that period.
struct TempoEstimate: Equatable {
  /// Envelope frames per beat, fractional.
  var period: Double
  /// The envelope's autocorrelation coefficient at `period`, 0...1: near 0 for noise, which does
  /// not repeat, towards 1 for a drum machine.
  var periodicity: Double
}

/// The global tempo of an onset envelope (Ellis 2007, section 3.2): the autocorrelation of the
/// envelope, which peaks at the beat period and its multiples and fractions, weighted by a
/// prior over tempos and summed with its own peaks at 2× or 3× the period, to choose among the
/// metrical levels (eighths, beats, half bars) the one a listener taps.
enum TempoEstimator {
  /// The tempos considered, BPM: everything a listener taps to dance or march; slower is half
  /// time, faster is the subdivision.
  static let slowestBeatsPerMinute = 40.0
  static let fastestBeatsPerMinute = 240.0
  /// The log-Gaussian tempo prior: centred on 100 BPM (a 0.6 s beat), 0.8 octaves wide. Ellis
  /// fitted 120 BPM and 1.4 octaves to listeners' taps; here the subdivision test below already
  /// rules out the eighth-note level that his broad prior lets through at slow tempos, and what
  /// remains for the prior is choosing between a beat and its half-bar, where the
  /// autocorrelation always leans to the longer lag (a bar repeats more exactly than a beat).
  /// Narrower and lower settles that for 70–175 BPM songs; wider ones halve the fast ones.
  static let priorCentreSeconds = 0.6
  static let priorWidthOctaves = 0.8
  /// A period whose fractions (½, ⅓, ⅔) hold less than this share of its own autocorrelation
  /// has nothing between its beats: it is the fastest pulse, the hi-hats' eighths, which
  /// listeners feel as subdivisions of a beat twice as long. Beat periods score 0.3–1 (a
  /// swung eighth at ⅔ counts), eighth periods -0.1–0.1.
  static let leastSubdivision = 0.15
  /// ... but only a pulse faster than this is taken for subdivisions: eighths are 140 to 260 a
  /// minute in songs of 70 to 130 BPM. A slower pulse with nothing between is the beat itself (a
  /// kick on every beat, a metronome): doubled, a plain 90 BPM came out as 45 with full
  /// confidence.
  static let slowestSubdivisionBeatsPerMinute = 130.0
  /// ... and only when every other pulse is stronger (see `alternation`): eighths fall between
  /// beats that carry the kick and the snare as well. An even pulse is the beat itself, however
  /// fast: a 150 BPM metronome, with or without an accent on each bar, came out as 75. The
  /// figure sits between what the analysis measured for even pulses (click tracks at 140 to 170
  /// BPM, plain or accented every fourth click: 0.9995 to 1.003) and for the weakest eighths
  /// (the bundled `explore.ogg`, 96 BPM: 1.018; the synthesized songs 1.03 to 1.3).
  static let leastAlternation = 1.01

  /// The tempo of `envelope` (normalized, `frameRate` values a second); nil when it is too short
  /// to hold two of the slowest beats' worth of repetitions, or has no periodicity at all.
  static func estimate(envelope: [Float], frameRate: Double) -> TempoEstimate? {
    let shortestLag = Int((frameRate * 60 / fastestBeatsPerMinute).rounded(.down))
    let longestLag = Int((frameRate * 60 / slowestBeatsPerMinute).rounded(.up))
    // The duple and triple sums look at 3× the longest lag; a lag needs several repetitions in
    // the envelope to be worth its autocorrelation.
    let lagCount = 3 * longestLag + 2
    guard envelope.count > 2 * lagCount else { return nil }
    let correlation = autocorrelation(envelope, lags: lagCount)
    guard correlation[0] > 0 else { return nil }

    // The prior-weighted autocorrelation ("TPS" in the paper) at every lag.
    var weighted = [Double](repeating: 0, count: lagCount)
    for lag in 1..<lagCount {
      let octaves = log2(Double(lag) / frameRate / priorCentreSeconds) / priorWidthOctaves
      weighted[lag] = exp(-0.5 * octaves * octaves) * correlation[lag] / correlation[0]
    }
    // Ellis's TPS2 and TPS3: a lag scores its own weight plus that of its double (duple meter) or
    // triple (triple meter), three lags wide to allow for rounding. The true beat period is
    // the one whose bar-level multiple is strong too, which an eighth-note or half-bar period
    // is less often.
    var best = (lag: 0, score: -Double.infinity)
    for lag in shortestLag...longestLag {
      let duple =
        weighted[lag] + 0.5 * weighted[2 * lag] + 0.25 * (weighted[2 * lag - 1] + weighted[2 * lag + 1])
      let triple = weighted[lag] + 0.33 * (weighted[3 * lag - 1] + weighted[3 * lag] + weighted[3 * lag + 1])
      let score = max(duple, triple)
      if score > best.score && isPeak(weighted, at: lag) { best = (lag, score) }
    }
    guard best.lag > 0 else { return nil }
    var lag = best.lag
    let pulseBeatsPerMinute = 60 * frameRate / Double(lag)
    if pulseBeatsPerMinute > slowestSubdivisionBeatsPerMinute && subdivision(correlation, lag: lag) < leastSubdivision
      && 2 * lag + 2 <= longestLag && alternation(correlation, lag: lag) >= leastAlternation
    {
      lag = ((2 * lag - 2)...(2 * lag + 2)).max { correlation[$0] < correlation[$1] }!
    }
    let period = refinedPeriod(correlation, near: lag)
    let periodicity = max(0, min(1, interpolatedValue(correlation, at: period) / correlation[0]))
    return TempoEstimate(period: period, periodicity: periodicity)
  }

  /// Σ x[n]·x[n+lag] / (count - lag) for lag < `lags`: dividing by the overlap keeps long lags
  /// from being penalized for having fewer terms.
  static func autocorrelation(_ values: [Float], lags: Int) -> [Double] {
    let count = values.count
    return values.withUnsafeBufferPointer { values in
      (0..<lags).map { lag in
        var sum: Float = 0
        for index in 0..<(count - lag) { sum += values[index] * values[index + lag] }
        return Double(sum) / Double(count - lag)
      }
    }
  }

  /// How much of the autocorrelation at `lag` recurs at a half, a third or two thirds of it
  /// (the best within a frame of each): whether anything happens between beats of that period.
  static func subdivision(_ correlation: [Double], lag: Int) -> Double {
    guard correlation[lag] > 0 else { return 0 }
    var strongest = -Double.infinity
    for fraction in [1.0 / 2, 1.0 / 3, 2.0 / 3] {
      let centre = Double(lag) * fraction
      for offset in -1...1 { strongest = max(strongest, interpolatedValue(correlation, at: centre + Double(offset))) }
    }
    return strongest / correlation[lag]
  }

  /// How much more the envelope repeats at two and four pulses of `lag` than at one and three:
  /// (r(2p) + r(4p)) / (r(p) + r(3p)), each r the autocorrelation's peak near that multiple,
  /// placed and valued by a parabola (whole lags alone miss a sharp peak by more than the
  /// difference looked for). A pulse of equal strokes repeats alike at every multiple (1); one
  /// whose every other stroke is stronger (beats among eighths) repeats better at the even
  /// ones. A pulse accented once a bar (every fourth) adds as much to r(2p) as to r(p) and
  /// r(3p), so it stays an even pulse.
  static func alternation(_ correlation: [Double], lag: Int) -> Double {
    func peak(near multiple: Int) -> Double {
      let centre = multiple * lag
      let index = ((centre - multiple)...(centre + multiple)).max { correlation[$0] < correlation[$1] }!
      let offset = parabolicOffset(correlation, at: index)
      // The parabola's value at its vertex.
      return correlation[index] - 0.25 * (correlation[index - 1] - correlation[index + 1]) * offset
    }
    let odd = peak(near: 1) + peak(near: 3)
    guard odd > 0 else { return .infinity }
    return (peak(near: 2) + peak(near: 4)) / odd
  }

  private static func isPeak(_ values: [Double], at index: Int) -> Bool {
    values[index] >= values[index - 1] && values[index] >= values[index + 1]
  }

  /// The beat period to a fraction of a frame: the autocorrelation's peaks near each multiple
  /// k·`lag` that fits, each placed by a parabola through its three highest points, fitted by
  /// least squares to k·period. A one-frame error in lag is 1 % at 120 BPM; spread over the
  /// multiples it becomes a small fraction of that.
  static func refinedPeriod(_ correlation: [Double], near lag: Int) -> Double {
    var weightedSum = 0.0
    var weightSum = 0.0
    var multiple = 1
    var period = Double(lag)
    while true {
      let expected = Double(multiple) * period
      let reach = max(1, Int((expected * 0.02).rounded()))
      let centre = Int(expected.rounded())
      guard centre + reach + 1 < correlation.count else { break }
      var peak = centre
      for candidate in (centre - reach)...(centre + reach) where correlation[candidate] > correlation[peak] {
        peak = candidate
      }
      guard peak > centre - reach, peak < centre + reach, correlation[peak] > 0 else { break }
      let location = Double(peak) + parabolicOffset(correlation, at: peak)
      weightedSum += Double(multiple) * location
      weightSum += Double(multiple * multiple)
      // Later multiples are looked for where the fit so far puts them.
      period = weightedSum / weightSum
      multiple += 1
    }
    return weightSum > 0 ? weightedSum / weightSum : Double(lag)
  }

  /// Where, within half a sample of `index`, the parabola through the three values around it
  /// peaks.
  static func parabolicOffset(_ values: [Double], at index: Int) -> Double {
    let left = values[index - 1], centre = values[index], right = values[index + 1]
    let curvature = left - 2 * centre + right
    guard curvature < 0 else { return 0 }
    return max(-0.5, min(0.5, 0.5 * (left - right) / curvature))
  }

  private static func interpolatedValue(_ values: [Double], at position: Double) -> Double {
    let index = Int(position.rounded(.down))
    let fraction = position - Double(index)
    return values[index] * (1 - fraction) + values[index + 1] * fraction
  }
}
