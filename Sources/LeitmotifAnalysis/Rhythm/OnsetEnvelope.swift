import Glibc

/// The onset-strength envelope of a stream of audio (Ellis 2007, section 3.1): how much new sound
/// starts at each instant, 4 ms apart, which is all the tempo estimator and the beat tracker look
/// at. Fed block by block, it keeps a window's worth of samples and the envelope (250 values a
/// second), never the song's PCM.
///
/// The steps, and why:
/// - Downmix and decimate by an integer factor to 8–12 kHz, averaging each group of samples (a
///   box low-pass). Rhythm lives in note starts, which are broadband; what lies above 6 kHz adds
///   cost, not information, and an integer factor keeps the decimator a running sum.
/// - A short-time spectrum of 32 ms Hann windows every 4 ms: long enough to resolve a bass note,
///   short enough that onsets stay sharp.
/// - 40 mel bands in dB: the ear's resolution and loudness scale, so a quiet hi-hat and a loud
///   kick both count as onsets.
/// - Per band, the first-order difference, half-wave rectified (only rises are onsets), summed
///   over the bands.
/// - A high-pass at 0.4 Hz, so the envelope is locally zero-mean: a crescendo is not a beat.
/// On `finish`, the envelope is smoothed with a 20 ms Gaussian and scaled to unit deviation
/// (`normalized`).
///
/// Along the way it sums the spectral centroid of the non-silent frames, which costs nothing
/// extra here.
struct OnsetEnvelope {
  /// Input frames averaged into one analysis sample.
  let decimation: Int
  /// The analysis sample rate, Hz: the input rate over `decimation`, 8–12 kHz.
  let analysisRate: Double
  /// Analysis samples per envelope value (about 4 ms).
  let hop: Int
  /// Analysis samples per spectrum window (about 32 ms).
  let windowLength: Int
  /// Envelope values per second (about 250).
  var frameRate: Double { analysisRate / Double(hop) }

  /// The onset strength of each frame, high-passed, not yet smoothed or normalized.
  private(set) var values: [Float] = []
  /// The rise in power (not dB) of the bands below `bassTopHertz`, summed: where the kick drum
  /// and the bass start, and how hard. That tells the beat from the off-beat when syncopated
  /// snares or rims make the off-beats the sharper onsets (see `BeatTracker`); in power, unlike
  /// in dB, an accented note counts for more than a soft one.
  private(set) var bassValues: [Float] = []
  /// Frames louder than `silentFramePower`; zero means the stream was silence.
  private(set) var soundingFrames = 0
  /// Each frame's total power (as `values`): where the music begins, against a noise floor.
  private(set) var powers: [Float] = []
  private var centroidSum = 0.0
  private var centroidWeight = 0.0

  private var fft: RealFFT
  private let window: [Float]
  /// Makes a full-scale sine's spectral peak 1 (0 dB), so the dB floor means the same at any
  /// window length.
  private let powerScale: Float
  private let bands: [MelBand]

  /// Decimated samples waiting for the next window, `pendingCount` of `windowLength`.
  private var pending: [Float]
  private var pendingCount = 0
  private var decimationSum: Float = 0
  private var decimationCount = 0
  private var windowed: [Float]
  private var power: [Float]
  private var previousDecibels: [Float]
  private var havePreviousFrame = false
  private var previousBassEnergy: Float = 0
  private var previousOnsetSum: Float = 0
  private var previousHighPassed: Float = 0
  private let highPassPole: Float

  /// The quietest band energy told apart from silence, -80 dB: below it, dither and reverb tails
  /// would make huge dB swings out of nothing.
  private static let decibelFloor: Float = 1e-8
  /// A frame whose total power is under -60 dB (of a full-scale sine) counts as silent.
  private static let silentFramePower: Float = 1e-6
  private static let bandCount = 40
  private static let bassTopHertz = 250.0
  /// How many of the lowest bands lie under `bassTopHertz`.
  private let bassBandCount: Int

  /// An envelope for audio at `sampleRate` Hz (any rate from 8 kHz up).
  init(sampleRate: Int) {
    decimation = max(1, Int((Double(sampleRate) / 12_000).rounded(.up)))
    analysisRate = Double(sampleRate) / Double(decimation)
    hop = max(1, Int((analysisRate * 0.004).rounded()))
    windowLength = Int((analysisRate * 0.032).rounded())
    var fftSize = 4
    while fftSize < windowLength { fftSize *= 2 }
    fft = RealFFT(size: fftSize)
    let length = windowLength
    window = (0..<length).map { Float(0.5 - 0.5 * cos(2 * Double.pi * (Double($0) + 0.5) / Double(length))) }
    let windowSum = window.reduce(0, +)
    powerScale = 1 / ((windowSum / 2) * (windowSum / 2))
    bands = MelBand.bank(count: Self.bandCount, binCount: fftSize / 2 + 1, fftSize: fftSize, sampleRate: analysisRate)
    let binHertz = analysisRate / Double(fftSize)
    bassBandCount = max(
      1, bands.filter { Double($0.firstBin + $0.weights.count) * binHertz <= Self.bassTopHertz }.count)
    pending = [Float](repeating: 0, count: length)
    windowed = [Float](repeating: 0, count: fftSize)
    power = [Float](repeating: 0, count: fftSize / 2 + 1)
    previousDecibels = [Float](repeating: 0, count: Self.bandCount)
    let frameRate = analysisRate / Double(hop)
    highPassPole = Float(exp(-2 * Double.pi * 0.4 / frameRate))
  }

  /// The time, in seconds of the stream, that envelope value `index` stands for: the middle of its
  /// window, where an onset that raises this frame above the one before falls on average.
  func seconds(ofFrame index: Int) -> Double {
    (Double(index * hop) + Double(windowLength) / 2) / analysisRate + Self.latencySeconds
  }

  /// How much later than the middle of its window an onset's envelope peak reads, on average:
  /// 7 ms, measured on synthesized drums (the rise is steepest once the onset is well inside
  /// the window, and the smoothing is symmetric).
  private static let latencySeconds = 0.007

  /// The loudness-weighted mean spectral centroid of the non-silent frames, Hz; 0 for silence.
  var spectralCentroidHertz: Double { centroidWeight > 0 ? centroidSum / centroidWeight : 0 }

  /// Takes `samples`, `channels` interleaved per frame (a trailing partial frame is ignored).
  mutating func add(interleaved samples: UnsafeBufferPointer<Float>, channels: Int) {
    guard channels > 0, let base = samples.baseAddress else { return }
    let frames = samples.count / channels
    var frame = 0
    while frame < frames {
      frame = fillWindow(from: base, frame: frame, frames: frames, channels: channels)
      if pendingCount == windowLength { analyzeWindow() }
    }
  }

  /// Downmixes and decimates input frames from `frame` on into `pending` until the window is
  /// full or the input runs out; returns the next unread frame.
  private mutating func fillWindow(
    from base: UnsafePointer<Float>, frame start: Int, frames: Int, channels: Int
  ) -> Int {
    var frame = start
    var sum = decimationSum
    var count = decimationCount
    var filled = pendingCount
    let decimation = self.decimation
    let windowLength = self.windowLength
    let scale = 1 / Float(decimation * channels)
    pending.withUnsafeMutableBufferPointer { pending in
      while frame < frames && filled < windowLength {
        let first = frame * channels
        for channel in 0..<channels { sum += base[first + channel] }
        frame += 1
        count += 1
        if count == decimation {
          pending[filled] = sum * scale
          filled += 1
          sum = 0
          count = 0
        }
      }
    }
    decimationSum = sum
    decimationCount = count
    pendingCount = filled
    return frame
  }

  /// One spectrum frame: its onset strength joins `values`, its centroid the running mean, and
  /// the window slides on by one hop.
  private mutating func analyzeWindow() {
    let length = windowLength
    pending.withUnsafeBufferPointer { pending in
      window.withUnsafeBufferPointer { window in
        windowed.withUnsafeMutableBufferPointer { windowed in
          for index in 0..<length { windowed[index] = pending[index] * window[index] }
        }
      }
    }
    windowed.withUnsafeBufferPointer { windowed in
      power.withUnsafeMutableBufferPointer { power in
        fft.powerSpectrum(of: windowed.baseAddress!, into: power.baseAddress!)
      }
    }
    // The spectrum leaves `self` while the helpers below update the running sums (an empty
    // array in its place costs no allocation).
    var spectrum: [Float] = []
    swap(&spectrum, &power)
    let (onset, bassOnset) = spectrum.withUnsafeMutableBufferPointer { spectrum in
      measureCentroid(spectrum)
      return bandRises(spectrum)
    }
    swap(&spectrum, &power)
    bassValues.append(bassOnset)
    // Ellis's high-pass, y[n] = x[n] - x[n-1] + p·y[n-1], with its pole at 0.4 Hz; it starts
    // from the first difference, as if that had always been the level, or a noise's steady
    // mean would enter as a step and ring for seconds.
    if values.count == 1 { previousOnsetSum = onset }
    let highPassed = onset - previousOnsetSum + highPassPole * previousHighPassed
    previousOnsetSum = onset
    previousHighPassed = highPassed
    values.append(highPassed)

    pending.withUnsafeMutableBufferPointer { pending in
      let kept = length - hop
      for index in 0..<kept { pending[index] = pending[index + hop] }
    }
    pendingCount = length - hop
  }

  /// Adds the frame's centroid to the running mean, weighted by its amplitude (the square root
  /// of its power), so the loud parts of a song decide what it sounds like; silent frames are
  /// left out, as they have no meaningful centroid.
  private mutating func measureCentroid(_ power: UnsafeMutableBufferPointer<Float>) {
    var total: Float = 0
    var magnitudeSum: Float = 0
    var weightedSum: Float = 0
    for bin in 0..<power.count {
      power[bin] *= powerScale
      total += power[bin]
      let magnitude = power[bin].squareRoot()
      magnitudeSum += magnitude
      weightedSum += magnitude * Float(bin)
    }
    powers.append(total)
    guard total > Self.silentFramePower, magnitudeSum > 0 else { return }
    soundingFrames += 1
    let binHertz = analysisRate / Double(2 * (power.count - 1))
    let weight = Double(total.squareRoot())
    centroidSum += weight * Double(weightedSum / magnitudeSum) * binHertz
    centroidWeight += weight
  }

  /// The sum over the mel bands of each band's rise in dB since the previous frame (falls count
  /// as zero), and the bass bands' summed rise in power.
  private mutating func bandRises(_ power: UnsafeMutableBufferPointer<Float>) -> (all: Float, bass: Float) {
    var rises: Float = 0
    var bassRises: Float = 0
    let bassBandCount = self.bassBandCount
    let first = !havePreviousFrame
    previousDecibels.withUnsafeMutableBufferPointer { previous in
      var bassEnergy: Float = 0
      for (index, band) in bands.enumerated() {
        var energy: Float = 0
        band.weights.withUnsafeBufferPointer { weights in
          for offset in 0..<weights.count { energy += weights[offset] * power[band.firstBin + offset] }
        }
        let decibels = 10 * log10f(max(energy, Self.decibelFloor))
        if !first {
          let rise = max(0, decibels - previous[index])
          rises += rise
        }
        if index < bassBandCount { bassEnergy += energy }
        previous[index] = decibels
      }
      if !first { bassRises = max(0, bassEnergy - previousBassEnergy) }
      previousBassEnergy = bassEnergy
    }
    havePreviousFrame = true
    return (rises, bassRises)
  }

  /// The least standard deviation (summed dB rises a frame, after smoothing) of an envelope that
  /// has onsets to find. Measured: 21 to 36 for the synthesized drum songs, 3.1 for steady white
  /// noise, 0.27 for a steady sine, whose envelope is only the ripple of the analysis frames
  /// against its period; normalised, such ripple would look like a strong beat.
  static let leastDeviation = 6.0

  /// The envelope the tempo estimator and beat tracker use: `values` smoothed with a Gaussian of
  /// 20 ms full width at half maximum (so an onset smeared over two frames still makes one
  /// peak) and divided by its standard deviation (so the beat tracker's tightness means the same
  /// for quiet and loud songs). Nil when it is flat: silence or a constant tone.
  func normalized() -> [Float]? {
    let sigma = 0.020 / 2.355 * frameRate
    let reach = Int((3 * sigma).rounded(.up))
    let kernel = (-reach...reach).map { Float(exp(-0.5 * Double($0 * $0) / (sigma * sigma))) }
    let kernelSum = kernel.reduce(0, +)
    let count = values.count
    var smoothed = [Float](repeating: 0, count: count)
    values.withUnsafeBufferPointer { values in
      for index in 0..<count {
        var sum: Float = 0
        for offset in -reach...reach {
          let source = index + offset
          if source >= 0 && source < count { sum += kernel[offset + reach] * values[source] }
        }
        smoothed[index] = sum / kernelSum
      }
    }
    var mean = 0.0
    for value in smoothed { mean += Double(value) }
    mean /= Double(max(count, 1))
    var variance = 0.0
    for value in smoothed { variance += (Double(value) - mean) * (Double(value) - mean) }
    let deviation = (variance / Double(max(count, 1))).squareRoot()
    guard deviation >= Self.leastDeviation else { return nil }
    let scale = Float(1 / deviation)
    let offset = Float(mean)
    return smoothed.map { ($0 - offset) * scale }
  }
}

/// One triangular mel band over a run of spectrum bins.
struct MelBand {
  var firstBin: Int
  var weights: [Float]

  /// `count` bands from 0 Hz to the Nyquist frequency, equally spaced in mel (HTK's
  /// 2595·log10(1 + f/700)) and overlapping by half. A band too narrow to cover a bin gets its
  /// nearest bin, so no band is silent at coarse resolutions.
  static func bank(count: Int, binCount: Int, fftSize: Int, sampleRate: Double) -> [MelBand] {
    func mel(_ hertz: Double) -> Double { 2595 * log10(1 + hertz / 700) }
    func hertz(_ mel: Double) -> Double { 700 * (pow(10, mel / 2595) - 1) }
    let top = mel(sampleRate / 2)
    let edges = (0...(count + 1)).map { hertz(top * Double($0) / Double(count + 1)) }
    let binHertz = sampleRate / Double(fftSize)
    return (0..<count).map { band in
      let low = edges[band], centre = edges[band + 1], high = edges[band + 2]
      let firstBin = Int((low / binHertz).rounded(.up))
      let lastBin = min(binCount - 1, Int((high / binHertz).rounded(.down)))
      var weights: [Float] = []
      if firstBin <= lastBin {
        for bin in firstBin...lastBin {
          let frequency = Double(bin) * binHertz
          let weight = frequency <= centre ? (frequency - low) / (centre - low) : (high - frequency) / (high - centre)
          weights.append(Float(max(0, weight)))
        }
      }
      if weights.allSatisfy({ $0 == 0 }) {
        return MelBand(firstBin: min(binCount - 1, Int((centre / binHertz).rounded())), weights: [1])
      }
      return MelBand(firstBin: firstBin, weights: weights)
    }
  }
}
