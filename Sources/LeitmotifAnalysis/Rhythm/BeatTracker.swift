import Glibc

/// Beat times from an onset envelope and a tempo (Ellis 2007, section 3.3): the sequence of
/// beats that best trades landing on strong onsets against keeping the beat period, found
/// exactly by dynamic programming over every frame.
enum BeatTracker {
  /// How much a gap between beats that strays from the period costs, against onset strength
  /// gained: Ellis's tightness. At 100 a gap 10 % off the period costs about one standard
  /// deviation of the envelope, so the tracker follows a real change of pace but not every
  /// early hi-hat.
  static let tightness = 100.0

  /// The frames of the tracked beats in `envelope` (normalized) at `period` frames a beat, in
  /// order. Beats in the silence or near-silence before the music starts and after it ends are
  /// trimmed off; `bass` (the bass bands' onsets) settles beat against off-beat.
  static func beatFrames(envelope: [Float], bass: [Float], period: Double) -> [Int] {
    let count = envelope.count
    let score = localScore(envelope, period: period)
    let shortestGap = max(1, Int((period / 2).rounded()))
    let longestGap = Int((2 * period).rounded())
    // The transition cost, -tightness·log(gap/period)², for every allowed gap.
    let transitionCost = (0...longestGap).map { gap -> Double in
      let ratio = log(Double(max(gap, 1)) / period)
      return -tightness * ratio * ratio
    }
    // cumulative[t]: the best total score of a beat sequence ending with a beat at t.
    var cumulative = [Double](repeating: 0, count: count)
    var previousBeat = [Int](repeating: -1, count: count)
    cumulative.withUnsafeMutableBufferPointer { cumulative in
      previousBeat.withUnsafeMutableBufferPointer { previousBeat in
        for frame in 0..<count {
          var best = -Double.infinity
          var bestFrame = -1
          let earliest = max(0, frame - longestGap)
          let latest = frame - shortestGap
          if latest >= earliest {
            for candidate in earliest...latest {
              let value = cumulative[candidate] + transitionCost[frame - candidate]
              if value > best {
                best = value
                bestFrame = candidate
              }
            }
          }
          // Every beat links back while there is room, so the sequence runs from the start; the
          // beats over the silence are trimmed afterwards.
          cumulative[frame] = score[frame] + (bestFrame >= 0 ? best : 0)
          previousBeat[frame] = bestFrame
        }
      }
    }
    guard count > 0 else { return [] }
    // The last beat is the best-scoring frame within a period of the end.
    let lastRegion = max(0, count - Int(period.rounded()))..<count
    var frame = lastRegion.max { cumulative[$0] < cumulative[$1] }!
    var beats: [Int] = []
    while frame >= 0 {
      beats.append(frame)
      frame = previousBeat[frame]
    }
    beats.reverse()
    return trimmed(onTheBeat(beats, bass: bass, count: count), score: score)
  }

  /// `beats`, or the points halfway between them when the bass (kick drum, bass notes) hits
  /// much harder there. The tracker follows the sharpest onsets, and in syncopated music those
  /// can be rims on the off-beats while the accented bass marks the beat. Only a large margin
  /// (1.8×, set between the bundled pieces: 2.2× where rims lead the off-beat, 1.3–1.5× where
  /// syncopated kicks fall off the beat but the snare holds it) overrules the tracker, since a
  /// syncopated kick pattern alone can put more bass between the beats than on them.
  private static func onTheBeat(_ beats: [Int], bass: [Float], count: Int) -> [Int] {
    guard beats.count >= 4 else { return beats }
    func strength(at frame: Int) -> Float {
      var strongest: Float = 0
      for index in max(0, frame - 3)...min(count - 1, frame + 3) { strongest = max(strongest, bass[index]) }
      return strongest
    }
    let midpoints = zip(beats, beats.dropFirst()).map { ($0 + $1) / 2 }
    let onBeat = beats.dropFirst().reduce(Float(0)) { $0 + strength(at: $1) }
    let offBeat = midpoints.reduce(Float(0)) { $0 + strength(at: $1) }
    guard offBeat > 1.8 * onBeat else { return beats }
    let next = beats[beats.count - 1] + (beats[beats.count - 1] - beats[beats.count - 2]) / 2
    return next < count ? midpoints + [next] : midpoints
  }

  /// The envelope smoothed by a Gaussian a 32nd of the period wide, as Ellis does, so a beat
  /// slightly off an onset's peak still collects most of it.
  private static func localScore(_ envelope: [Float], period: Double) -> [Double] {
    let sigma = max(period / 32, 0.5)
    let reach = Int((3 * sigma).rounded(.up))
    let kernel = (-reach...reach).map { exp(-0.5 * Double($0 * $0) / (sigma * sigma)) }
    let count = envelope.count
    return envelope.withUnsafeBufferPointer { envelope in
      (0..<count).map { index in
        var sum = 0.0
        for offset in -reach...reach {
          let source = index + offset
          if source >= 0 && source < count { sum += kernel[offset + reach] * Double(envelope[source]) }
        }
        return sum
      }
    }
  }

  /// `beats` without the leading and trailing ones whose local score is under half the RMS of
  /// all beats' scores: the tracker keeps the grid going through silence, which is no beat.
  private static func trimmed(_ beats: [Int], score: [Double]) -> [Int] {
    guard !beats.isEmpty else { return beats }
    let meanSquare = beats.reduce(0.0) { $0 + score[$1] * score[$1] } / Double(beats.count)
    let threshold = 0.5 * meanSquare.squareRoot()
    guard let first = beats.firstIndex(where: { score[$0] >= threshold }),
      let last = beats.lastIndex(where: { score[$0] >= threshold })
    else { return [] }
    return Array(beats[first...last])
  }
}

/// The rhythm of a song: its tempo, where its beats fall, how sure that is, and two figures of
/// how busy and how bright it sounds. Everything a game needs to cut, cue or crossfade on the
/// beat, or to pick music by energy.
public struct RhythmAnalysis: Sendable, Equatable {
  /// The detected tempo, BPM, at the level a listener taps (quarter notes in 4/4 pop, not
  /// eighths or half bars), fitted to the tracked beats, so it holds over the whole song to well
  /// under 1 %.
  public var beatsPerMinute: Double
  /// The time of the first tracked beat, seconds, on the grid fitted to all of them: so
  /// `firstBeatSeconds` mod (60 / `beatsPerMinute`) is the beat grid's phase, and a beat at
  /// `firstBeatSeconds + k·60 / beatsPerMinute` lines up with the music throughout a song at a
  /// steady tempo.
  public var firstBeatSeconds: Double
  /// Every tracked beat, seconds from the start, in order. Follows the music where its tempo
  /// wanders, unlike the fitted grid; none in the silence before and after it.
  public var beatTimes: [Double]
  /// How clearly the song has a beat, 0...1: the onset envelope's autocorrelation coefficient at
  /// the beat period (its value there over its value at zero lag), so how much of the onset
  /// pattern repeats every beat. Noise scores near 0 (and gets no analysis at all, see
  /// `RhythmAnalyzer.leastConfidence`), a drum machine near 1; the bundled pieces score
  /// 0.4–0.9. Under about 0.2, treat the tempo as a guess.
  public var confidence: Double
  /// Onsets per second: the envelope's peaks above its own local mean plus half its standard
  /// deviation, at least 50 ms apart. How busy the music is, about twice the beat rate for
  /// eighth-note hi-hats.
  public var onsetsPerSecond: Double
  /// The mean spectral centroid of the non-silent frames, weighted by their amplitude, Hz, as
  /// measured at the analysis rate (up to 6 kHz, half of 8–12 kHz): how bright the song is;
  /// comparable between songs, not with centroids measured at full bandwidth.
  public var spectralCentroidHertz: Double
}

/// Finds a song's rhythm as it is decoded: fed the decoder's blocks in order, any channel count,
/// it keeps the onset envelopes and frame powers (about 3 KB a second) and no PCM, and does the tempo and beat search in
/// `finish`. About 1.5 ms of CPU per second of audio on one core, 400–600× real time.
public struct RhythmAnalyzer {
  /// Under this many seconds there are too few beats to tell a tempo from a coincidence.
  public static let shortestSeconds = 4.0
  /// Below this `confidence` the envelope does not repeat: noise, speech, a drone. `finish`
  /// returns nil rather than a made-up tempo.
  public static let leastConfidence = 0.05

  private var envelope: OnsetEnvelope

  /// An analyser for audio at `sampleRate` Hz (8 kHz and up).
  public init(sampleRate: Int) {
    envelope = OnsetEnvelope(sampleRate: max(sampleRate, 1))
  }

  /// Takes the next block of interleaved samples, `channels` a frame; channels are averaged.
  public mutating func add(interleaved: UnsafeBufferPointer<Float>, channels: Int) {
    envelope.add(interleaved: interleaved, channels: channels)
  }

  /// The rhythm of everything added so far; nil when that is shorter than `shortestSeconds`,
  /// silent, or without a beat (see `leastConfidence`).
  public func finish() -> RhythmAnalysis? {
    let frameRate = envelope.frameRate
    guard Double(envelope.values.count) / frameRate >= Self.shortestSeconds, envelope.soundingFrames > 0,
      let normalized = envelope.normalized(),
      let tempo = TempoEstimator.estimate(envelope: normalized, frameRate: frameRate),
      tempo.periodicity >= Self.leastConfidence
    else { return nil }
    let frames = BeatTracker.beatFrames(envelope: normalized, bass: envelope.bassValues, period: tempo.period)
    // Beats over less than half the song are a few strong onsets, not a pulse (a drone's attack,
    // a lone hit): no tempo rather than a made-up one.
    let expectedBeats = Double(normalized.count) / tempo.period
    guard frames.count >= 2, Double(frames.count) >= 0.5 * expectedBeats else { return nil }
    let beatTimes = frames.map { envelope.seconds(ofFrame: $0) }
    var grid = FittedBeatGrid(fitting: beatTimes, period: tempo.period / frameRate)
    // Where the music begins: its first onset as strong as a beat's (a third of the median
    // beat's), or its first frame within 20 dB of its median power, whichever comes first (music
    // that starts at once has no onset in the envelope's first frame). Not its first sound: a
    // noise floor or hiss before the first beat would reach back.
    let strengths = frames.map { normalized[$0] }.sorted()
    let typical = strengths[strengths.count / 2]
    let powers = envelope.powers.sorted()
    let loud = powers.isEmpty ? Float.infinity : powers[powers.count / 2] / 100
    let firstOnset = typical > 0 ? normalized.firstIndex { $0 >= typical / 3 } : nil
    let firstLoud = envelope.powers.firstIndex { $0 >= loud }
    if let first = [firstOnset, firstLoud].compactMap({ $0 }).min() {
      grid.extend(backTo: envelope.seconds(ofFrame: first))
    }
    return RhythmAnalysis(
      beatsPerMinute: 60 / grid.period, firstBeatSeconds: grid.firstBeat, beatTimes: beatTimes,
      confidence: tempo.periodicity,
      onsetsPerSecond: OnsetDensity.onsetsPerSecond(normalized, frameRate: frameRate),
      spectralCentroidHertz: envelope.spectralCentroidHertz)
  }
}

/// The straight line through the tracked beats: beat k of the grid at `firstBeat + k·period`.
/// Each beat's k is its distance from the middle beat in estimated periods, rounded, so a beat
/// the tracker skipped or doubled costs one point of the fit, not the whole line, and a stray
/// first beat (a pickup) cannot shift the numbering.
struct FittedBeatGrid {
  var firstBeat: Double
  var period: Double

  init(fitting times: [Double], period estimate: Double) {
    period = estimate
    let reference = times[times.count / 2]
    var intercept = reference
    // Three times: each fit's period numbers the beats of a long song more surely than the
    // estimate did, and from the second on, beats more than an eighth of a period off the line
    // (a pickup, a beat pulled onto a fill) are left out.
    for pass in 0..<3 {
      var points: [(index: Double, time: Double)] = []
      for time in times {
        let index = ((time - reference) / period).rounded()
        if pass == 0 || abs(time - (intercept + index * period)) < period / 8 { points.append((index, time)) }
      }
      guard points.count >= 2 else { break }
      let count = Double(points.count)
      let meanIndex = points.reduce(0) { $0 + $1.index } / count
      let meanTime = points.reduce(0) { $0 + $1.time } / count
      var covariance = 0.0
      var variance = 0.0
      for (index, time) in points {
        covariance += (index - meanIndex) * (time - meanTime)
        variance += (index - meanIndex) * (index - meanIndex)
      }
      guard variance > 0 else { break }
      let slope = covariance / variance
      // A fit far from the autocorrelation's period has numbered the beats wrongly: keep the
      // estimate.
      guard abs(slope / estimate - 1) < 0.03 else { break }
      period = slope
      intercept = meanTime - slope * meanIndex
    }
    firstBeat = intercept + ((times[0] - intercept) / period).rounded() * period
  }

  /// Moves the first beat back along the grid to the music's first onset, at `soundSeconds`
  /// (within a quarter of a period): most music starts on a downbeat, and the tracker takes up
  /// the pulse a beat in when the music starts at once, which counted the bars from beat 2 (a
  /// change `at: "bar"` out of such a song landed on its beat 2). A pickup (a fill half a beat or
  /// less before the first beat) is too late to move it.
  mutating func extend(backTo soundSeconds: Double) {
    // Not to a line before the file's start (the fit's few milliseconds of jitter aside): the
    // grid's first beat is one the song plays.
    while firstBeat - period >= max(soundSeconds - period / 4, -0.01) { firstBeat -= period }
  }
}

/// How many onsets a second the envelope holds.
enum OnsetDensity {
  /// Peaks of `envelope` (normalized) that are the highest within 50 ms either side and stand
  /// half a standard deviation above the mean of the surrounding second: a fixed threshold
  /// would count every wiggle in a quiet passage and miss onsets in a dense one.
  static func onsetsPerSecond(_ envelope: [Float], frameRate: Double) -> Double {
    let count = envelope.count
    guard count > 0 else { return 0 }
    let neighbourhood = max(1, Int((0.05 * frameRate).rounded()))
    let context = max(1, Int((0.5 * frameRate).rounded()))
    var prefix = [Double](repeating: 0, count: count + 1)
    for index in 0..<count { prefix[index + 1] = prefix[index] + Double(envelope[index]) }
    var onsets = 0
    var lastOnset = Int.min / 2
    for index in 0..<count {
      let value = envelope[index]
      let low = max(0, index - context), high = min(count, index + context + 1)
      let localMean = (prefix[high] - prefix[low]) / Double(high - low)
      guard Double(value) > localMean + 0.5, index - lastOnset > neighbourhood else { continue }
      let windowLow = max(0, index - neighbourhood), windowHigh = min(count - 1, index + neighbourhood)
      var isMaximum = true
      for other in windowLow...windowHigh where envelope[other] > value { isMaximum = false; break }
      if isMaximum {
        onsets += 1
        lastOnset = index
      }
    }
    return Double(onsets) / (Double(count) / frameRate)
  }
}
