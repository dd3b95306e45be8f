import Foundation
import LeitmotifFixtures

// The sound sources: band-limited oscillators, envelopes, a filter, the instrument voices (each
// renders one note into a mono buffer) and the two effects (a ping-pong delay and a Freeverb-style
// reverb). Everything is a pure function of the note and its seed: the same note renders the same
// samples wherever it sits, which is what lets a loop body rendered twice come out identical.

/// The rate of everything the composer makes.
let sampleRateHz = 48_000
let sampleRate = Double(sampleRateHz)

/// Two channels of samples, not interleaved.
struct StereoBuffer {
  var left: [Float]
  var right: [Float]

  init(frameCount: Int) {
    left = [Float](repeating: 0, count: frameCount)
    right = [Float](repeating: 0, count: frameCount)
  }

  var frameCount: Int { left.count }

  /// Adds `samples` starting at `startFrame`, panned with equal power (`pan` -1 left ... 1 right).
  mutating func add(_ samples: [Float], at startFrame: Int, gain: Double, pan: Double) {
    let angle = (min(max(pan, -1), 1) + 1) * Double.pi / 4
    let leftGain = Float(cos(angle) * gain * 2.squareRoot())
    let rightGain = Float(sin(angle) * gain * 2.squareRoot())
    let end = min(frameCount, startFrame + samples.count)
    guard startFrame < end else { return }
    for frame in max(0, startFrame)..<end {
      let sample = samples[frame - startFrame]
      left[frame] += sample * leftGain
      right[frame] += sample * rightGain
    }
  }
}

// MARK: - Building blocks

func frequency(ofMIDIPitch pitch: Double) -> Double { 440 * pow(2, (pitch - 69) / 12) }

/// The correction that removes a naive sawtooth's aliasing around its jump (polyBLEP).
@inline(__always)
private func polyBLEP(_ phase: Double, _ increment: Double) -> Double {
  if phase < increment {
    let x = phase / increment
    return x + x - x * x - 1
  }
  if phase > 1 - increment {
    let x = (phase - 1) / increment
    return x * x + x + x + 1
  }
  return 0
}

/// A band-limited sawtooth (and, as the difference of two, a square).
struct Oscillator {
  var phase: Double

  init(phase: Double = 0) { self.phase = phase }

  mutating func saw(_ frequency: Double) -> Double {
    let increment = frequency / sampleRate
    let value = 2 * phase - 1 - polyBLEP(phase, increment)
    advance(increment)
    return value
  }

  mutating func square(_ frequency: Double) -> Double {
    let increment = frequency / sampleRate
    let half = (phase + 0.5).truncatingRemainder(dividingBy: 1)
    let value = (2 * phase - 1 - polyBLEP(phase, increment)) - (2 * half - 1 - polyBLEP(half, increment))
    advance(increment)
    return value
  }

  mutating func sine(_ frequency: Double) -> Double {
    let value = sin(2 * Double.pi * phase)
    advance(frequency / sampleRate)
    return value
  }

  mutating func advance(_ increment: Double) {
    phase += increment
    if phase >= 1 { phase -= 1 }
  }
}

/// Attack, decay (a time constant), sustain level and release (time to -60 dB), all in seconds.
struct Envelope {
  var attackSeconds: Double
  var decaySeconds: Double
  var sustainLevel: Double
  var releaseSeconds: Double

  func level(atSeconds time: Double, gateSeconds gate: Double) -> Double {
    func held(_ time: Double) -> Double {
      if time < attackSeconds { return time / attackSeconds }
      return sustainLevel + (1 - sustainLevel) * exp(-(time - attackSeconds) / decaySeconds)
    }
    if time < gate { return held(time) }
    return held(gate) * exp(-(time - gate) * 6.9 / releaseSeconds)
  }
}

/// Topology-preserving state-variable filter (Zavalishin, Simper): stable at any cutoff, so it
/// can sweep per sample.
struct StateVariableFilter {
  private var state1 = 0.0
  private var state2 = 0.0
  private var a1 = 0.0
  private var a2 = 0.0
  private var a3 = 0.0
  private var damping = 1.0

  init(cutoffHz: Double = 1000, resonance: Double = 0.7) { setCutoff(cutoffHz, resonance: resonance) }

  mutating func setCutoff(_ cutoffHz: Double, resonance: Double = 0.7) {
    let g = tan(Double.pi * min(max(cutoffHz, 10), sampleRate * 0.45) / sampleRate)
    damping = 1 / resonance
    a1 = 1 / (1 + g * (g + damping))
    a2 = g * a1
    a3 = g * a2
  }

  /// Filters one sample: (lowpass, bandpass, highpass).
  mutating func process(_ input: Double) -> (low: Double, band: Double, high: Double) {
    let v3 = input - state2
    let v1 = a1 * state1 + a2 * v3
    let v2 = state2 + a2 * state1 + a3 * v3
    state1 = 2 * v1 - state1
    state2 = 2 * v2 - state2
    return (v2, v1, input - damping * v1 - v2)
  }
}

/// White noise in [-1, 1) from SplitMix64, so a note's noise depends only on its seed.
struct Noise {
  private var generator: SplitMix64
  init(seed: UInt64) { generator = SplitMix64(seed: seed) }
  mutating func next() -> Double { Double(generator.next() >> 11) * (2.0 / 9_007_199_254_740_992.0) - 1 }
}

// MARK: - Voices

/// The sound of an instrument. Pitched timbres use the note's pitch; drums mostly ignore it.
enum Timbre: Sendable {
  case pad, strings, pluck, bell, flute, lead, brass, bass, subBass
  case kick, snare, closedHat, openHat, shaker, rim, tom, taiko, crash

  var isDrum: Bool {
    switch self {
    case .kick, .snare, .closedHat, .openHat, .shaker, .rim, .tom, .taiko, .crash: true
    default: false
    }
  }
}

/// One note for a voice to render: pitch (MIDI, fractional allowed), how long the key is held,
/// how hard, the instrument's brightness (1 normal), and the seed for its noise and detune.
struct VoiceNote {
  var timbre: Timbre
  var pitch: Double
  var gateSeconds: Double
  var velocity: Double
  var brightness: Double
  var seed: UInt64
}

/// Renders one note to mono samples, including its release tail.
func renderVoice(_ note: VoiceNote) -> [Float] {
  let hertz = frequency(ofMIDIPitch: note.pitch)
  let gate = note.gateSeconds
  var noise = Noise(seed: note.seed)
  var detune = Noise(seed: note.seed ^ 0x5DEE_CE66)

  func render(seconds: Double, _ sample: (Double) -> Double) -> [Float] {
    let count = Int(seconds * sampleRate)
    var output = [Float](repeating: 0, count: count)
    for index in 0..<count { output[index] = Float(sample(Double(index) / sampleRate) * note.velocity) }
    return output
  }

  switch note.timbre {
  case .pad:
    // Three detuned saws and a sub an octave down through a soft lowpass: a warm, slow pad.
    let envelope = Envelope(attackSeconds: 0.45, decaySeconds: 1, sustainLevel: 1, releaseSeconds: 1.4)
    var oscillators = (0..<3).map { _ in Oscillator(phase: (detune.next() + 1) / 2) }
    var sub = Oscillator()
    let cents = [-9.0, 0.3, 8.0]
    var filter = StateVariableFilter(cutoffHz: 1400 * note.brightness, resonance: 0.6)
    return render(seconds: gate + 1.4) { time in
      var value = 0.0
      for index in 0..<3 { value += oscillators[index].saw(hertz * pow(2, cents[index] / 1200)) }
      value = value / 3 + 0.35 * sub.sine(hertz / 2)
      return filter.process(value).low * envelope.level(atSeconds: time, gateSeconds: gate) * 0.5
    }
  case .strings:
    // Two saws with delayed vibrato, brighter than the pad and quicker to speak.
    let envelope = Envelope(attackSeconds: 0.06, decaySeconds: 0.4, sustainLevel: 0.85, releaseSeconds: 0.35)
    var first = Oscillator(phase: (detune.next() + 1) / 2)
    var second = Oscillator(phase: (detune.next() + 1) / 2)
    var vibrato = Oscillator(phase: (detune.next() + 1) / 2)
    var filter = StateVariableFilter(cutoffHz: 2800 * note.brightness, resonance: 0.7)
    return render(seconds: gate + 0.35) { time in
      let depth = min(time / 0.4, 1) * 0.004
      let wobble = 1 + depth * vibrato.sine(5.2)
      let value = 0.5 * (first.saw(hertz * wobble * 1.003) + second.saw(hertz * wobble * 0.997))
      return filter.process(value).low * envelope.level(atSeconds: time, gateSeconds: gate) * 0.5
    }
  case .pluck:
    // Saw plus square, the filter snapping shut: a short synth pluck for arpeggios.
    var oscillator = Oscillator()
    var filter = StateVariableFilter()
    return render(seconds: min(gate, 0.6) + 0.5) { time in
      if Int(time * sampleRate) % 16 == 0 {
        filter.setCutoff((hertz * 2 + 5000 * exp(-time / 0.07)) * note.brightness, resonance: 1.1)
      }
      let value = 0.6 * oscillator.saw(hertz) + 0.4 * oscillator.square(hertz)
      let amplitude = min(time / 0.003, 1) * exp(-time / 0.28) * (time < gate ? 1 : exp(-(time - gate) / 0.05))
      return filter.process(value).low * amplitude * 0.5
    }
  case .bell:
    // Two-operator FM (ratio 2, index falling): a glassy celesta/electric-piano bell.
    var carrier = Oscillator()
    var modulator = Oscillator()
    return render(seconds: gate + 1.6) { time in
      let index = (0.4 + 2.6 * exp(-time / 0.25)) * note.brightness
      let modulation = index * modulator.sine(hertz * 2)
      let value = sin(2 * Double.pi * carrier.phase + modulation)
      carrier.advance(hertz / sampleRate)
      let amplitude = min(time / 0.002, 1) * exp(-time / 0.9) * (time < gate ? 1 : exp(-(time - gate) / 0.5))
      return value * amplitude * 0.45
    }
  case .flute:
    // Sine with a little second and third harmonic, vibrato and a breath of band-passed noise.
    let envelope = Envelope(attackSeconds: 0.07, decaySeconds: 0.5, sustainLevel: 0.8, releaseSeconds: 0.3)
    var tone = Oscillator()
    var vibrato = Oscillator()
    var breath = StateVariableFilter(cutoffHz: hertz * 2, resonance: 2)
    return render(seconds: gate + 0.3) { time in
      let wobble = 1 + min(time / 0.5, 1) * 0.005 * vibrato.sine(5)
      let phase = tone.phase
      let base = tone.sine(hertz * wobble)
      let value = base + 0.18 * sin(4 * Double.pi * phase) + 0.06 * sin(6 * Double.pi * phase)
      let air = breath.process(noise.next()).band * 0.25
      return (value + air) * envelope.level(atSeconds: time, gateSeconds: gate) * 0.45
    }
  case .lead:
    // A pulse-and-saw lead with vibrato: the melody in the fights.
    let envelope = Envelope(attackSeconds: 0.008, decaySeconds: 0.3, sustainLevel: 0.7, releaseSeconds: 0.18)
    var oscillator = Oscillator()
    var second = Oscillator(phase: 0.3)
    var vibrato = Oscillator()
    var filter = StateVariableFilter()
    return render(seconds: gate + 0.18) { time in
      if Int(time * sampleRate) % 16 == 0 {
        filter.setCutoff((hertz * 3 + 2500 * exp(-time / 0.15)) * note.brightness, resonance: 0.9)
      }
      let wobble = 1 + (time > 0.15 ? 0.006 : 0) * vibrato.sine(5.5)
      let value = 0.5 * oscillator.square(hertz * wobble) + 0.5 * second.saw(hertz * wobble * 1.004)
      return filter.process(value).low * envelope.level(atSeconds: time, gateSeconds: gate) * 0.4
    }
  case .brass:
    // Detuned saws whose filter opens with the attack: a synth brass section.
    let envelope = Envelope(attackSeconds: 0.05, decaySeconds: 0.5, sustainLevel: 0.75, releaseSeconds: 0.3)
    var first = Oscillator(phase: (detune.next() + 1) / 2)
    var second = Oscillator(phase: (detune.next() + 1) / 2)
    var filter = StateVariableFilter()
    return render(seconds: gate + 0.3) { time in
      if Int(time * sampleRate) % 16 == 0 {
        let swell = 1 - exp(-time / 0.06)
        filter.setCutoff(hertz * (1.5 + 5 * swell * exp(-time / 0.8) + 2) * note.brightness, resonance: 0.8)
      }
      let value = 0.5 * (first.saw(hertz * 1.004) + second.saw(hertz * 0.996))
      return filter.process(value).low * envelope.level(atSeconds: time, gateSeconds: gate) * 0.5
    }
  case .bass:
    // Saw plus a sine at the fundamental, the filter plucked: a round synth bass.
    let envelope = Envelope(attackSeconds: 0.004, decaySeconds: 0.4, sustainLevel: 0.7, releaseSeconds: 0.08)
    var saw = Oscillator()
    var sine = Oscillator()
    var filter = StateVariableFilter()
    return render(seconds: gate + 0.08) { time in
      if Int(time * sampleRate) % 16 == 0 {
        filter.setCutoff((hertz * 2 + 900 * exp(-time / 0.09)) * note.brightness, resonance: 1.2)
      }
      let value = filter.process(saw.saw(hertz)).low * 0.6 + sine.sine(hertz) * 0.6
      return value * envelope.level(atSeconds: time, gateSeconds: gate) * 0.55
    }
  case .subBass:
    let envelope = Envelope(attackSeconds: 0.006, decaySeconds: 0.25, sustainLevel: 0.6, releaseSeconds: 0.1)
    var sine = Oscillator()
    return render(seconds: gate + 0.1) { time in
      let phase = sine.phase
      let value = sine.sine(hertz) + 0.25 * sin(4 * Double.pi * phase)
      return value * envelope.level(atSeconds: time, gateSeconds: gate) * 0.6
    }
  case .kick:
    var body = Oscillator()
    return render(seconds: 0.5) { time in
      let sweep = 48 + 110 * exp(-time / 0.035)
      let click = time < 0.004 ? noise.next() * 0.3 * (1 - time / 0.004) : 0
      return (body.sine(sweep) * exp(-time / 0.22) + click) * min(time / 0.0008, 1)
    }
  case .snare:
    var tone = Oscillator()
    var filter = StateVariableFilter(cutoffHz: 1800, resonance: 0.6)
    return render(seconds: 0.4) { time in
      let crack = filter.process(noise.next()).high * exp(-time / 0.11)
      let body = tone.sine(190 - 30 * min(time / 0.05, 1)) * exp(-time / 0.045)
      return (0.75 * crack + 0.5 * body) * min(time / 0.0008, 1)
    }
  case .closedHat, .openHat:
    let decay = note.timbre == .openHat ? 0.22 : 0.028
    var filter = StateVariableFilter(cutoffHz: 7500, resonance: 0.8)
    return render(seconds: decay * 6) { time in
      filter.process(noise.next()).high * exp(-time / decay) * 0.55
    }
  case .shaker:
    var filter = StateVariableFilter(cutoffHz: 6000, resonance: 1.2)
    return render(seconds: 0.18) { time in
      filter.process(noise.next()).band * min(time / 0.012, 1) * exp(-time / 0.04) * 0.9
    }
  case .rim:
    var tone = Oscillator()
    var filter = StateVariableFilter(cutoffHz: 2200, resonance: 3)
    return render(seconds: 0.1) { time in
      (tone.sine(1650) * 0.5 + filter.process(noise.next()).band * 0.6) * exp(-time / 0.014)
    }
  case .tom:
    var body = Oscillator()
    return render(seconds: 0.7) { time in
      let sweep = hertz * (1 + 0.6 * exp(-time / 0.04))
      let thud = noise.next() * 0.15 * exp(-time / 0.01)
      return (body.sine(sweep) * exp(-time / 0.25) + thud) * min(time / 0.001, 1) * 0.9
    }
  case .taiko:
    var body = Oscillator()
    var skin = StateVariableFilter(cutoffHz: 380, resonance: 0.8)
    return render(seconds: 1.3) { time in
      let sweep = 58 + 45 * exp(-time / 0.05)
      let boom = body.sine(sweep) * exp(-time / 0.45)
      let slap = skin.process(noise.next()).low * exp(-time / 0.06) * 1.6
      return (boom + slap) * min(time / 0.002, 1)
    }
  case .crash:
    var filter = StateVariableFilter(cutoffHz: 4200, resonance: 0.5)
    var shimmer = StateVariableFilter(cutoffHz: 9000, resonance: 1.5)
    return render(seconds: 2.6) { time in
      let raw = noise.next()
      let value = filter.process(raw).high * 0.6 + shimmer.process(raw).band * 0.4
      return value * min(time / 0.003, 1) * exp(-time / 0.7) * 0.5
    }
  }
}

// MARK: - Effects

/// A ping-pong delay: the input goes left, each repeat crosses over and loses its top end.
struct PingPongDelay {
  let delayFrames: Int
  let feedback: Float

  func process(_ input: StereoBuffer) -> StereoBuffer {
    var output = StereoBuffer(frameCount: input.frameCount)
    var left = [Float](repeating: 0, count: delayFrames)
    var right = [Float](repeating: 0, count: delayFrames)
    var dampLeft: Float = 0
    var dampRight: Float = 0
    var index = 0
    for frame in 0..<input.frameCount {
      let outLeft = left[index]
      let outRight = right[index]
      output.left[frame] = outLeft
      output.right[frame] = outRight
      dampLeft += 0.45 * (outRight - dampLeft)
      dampRight += 0.45 * (outLeft - dampRight)
      left[index] = 0.5 * (input.left[frame] + input.right[frame]) + dampLeft * feedback
      right[index] = dampRight * feedback
      index += 1
      if index == delayFrames { index = 0 }
    }
    return output
  }
}

/// Freeverb (Jezar at Dreampoint): eight damped combs and four allpasses per channel, the right
/// channel's delays a little longer for width. Tunings are Freeverb's, scaled from 44.1 to 48 kHz.
struct Reverb {
  /// 0 ... 1: how long the room rings.
  var roomSize: Double
  /// 0 ... 1: how quickly the high frequencies die.
  var damping: Double

  private static let combTunings = [1116, 1188, 1277, 1356, 1422, 1491, 1557, 1617]
  private static let allpassTunings = [556, 441, 341, 225]
  private static let stereoSpread = 23

  func process(_ input: StereoBuffer) -> StereoBuffer {
    var output = StereoBuffer(frameCount: input.frameCount)
    output.left = channel(input, spread: 0)
    output.right = channel(input, spread: Self.stereoSpread)
    return output
  }

  private func channel(_ input: StereoBuffer, spread: Int) -> [Float] {
    let scale = sampleRate / 44_100
    let feedback = Float(0.7 + 0.28 * roomSize)
    let damp = Float(damping * 0.4)
    var combs = Self.combTunings.map { [Float](repeating: 0, count: Int(Double($0 + spread) * scale)) }
    var combIndex = [Int](repeating: 0, count: combs.count)
    var combStore = [Float](repeating: 0, count: combs.count)
    var allpasses = Self.allpassTunings.map { [Float](repeating: 0, count: Int(Double($0 + spread) * scale)) }
    var allpassIndex = [Int](repeating: 0, count: allpasses.count)
    var output = [Float](repeating: 0, count: input.frameCount)
    for frame in 0..<input.frameCount {
      let dry = (input.left[frame] + input.right[frame]) * 0.015
      var sum: Float = 0
      for comb in 0..<combs.count {
        let index = combIndex[comb]
        let delayed = combs[comb][index]
        combStore[comb] = delayed * (1 - damp) + combStore[comb] * damp
        combs[comb][index] = dry + combStore[comb] * feedback
        sum += delayed
        combIndex[comb] = index + 1 == combs[comb].count ? 0 : index + 1
      }
      for allpass in 0..<allpasses.count {
        let index = allpassIndex[allpass]
        let delayed = allpasses[allpass][index]
        allpasses[allpass][index] = sum + delayed * 0.5
        sum = delayed - sum
        allpassIndex[allpass] = index + 1 == allpasses[allpass].count ? 0 : index + 1
      }
      output[frame] = sum
    }
    return output
  }
}
