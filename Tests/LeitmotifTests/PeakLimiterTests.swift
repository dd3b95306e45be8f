import Foundation
import LeitmotifFixtures
import LeitmotifOutput
import Testing

@testable import Leitmotif
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

@Suite("The bus's peak limiter: nothing leaves the mixer above full scale, and music within it is untouched")
struct PeakLimiterTests {
  /// A stereo sine of `amplitude` at 1 kHz, 48 kHz, `frames` long.
  func sine(amplitude: Float, frames: Int, phase: Int = 0) -> [Float] {
    var samples = [Float](repeating: 0, count: 2 * frames)
    for frame in 0..<frames {
      let value = amplitude * Float(sin(2 * Double.pi * 1000 * Double(frame + phase) / 48_000))
      samples[2 * frame] = value
      samples[2 * frame + 1] = -value
    }
    return samples
  }

  func limited(_ input: [Float], blockFrames: Int = 256) -> [Float] {
    var limiter = PeakLimiter(sampleRate: 48_000)
    var output = input
    output.withUnsafeMutableBufferPointer { pointer in
      var start = 0
      while start < input.count / 2 {
        let frames = min(blockFrames, input.count / 2 - start)
        limiter.process(pointer.baseAddress! + 2 * start, frames: frames)
        start += frames
      }
    }
    return output
  }

  @Test("The fast path's scan finds one sample over full scale wherever it is, vector part or tail, and only then")
  func scanFindsEverySampleOver() {
    for count in 0...41 {
      var samples = [Float](repeating: 0.5, count: count)
      if count > 0 {
        samples[0] = -1
        samples[count - 1] = 1
        samples[count / 2] = .nan  // not over: the limiter leaves NaN to the caller, as before
      }
      #expect(!PeakLimiter.anyOver(samples, count: count), "count \(count): nothing over")
      for position in 0..<count {
        for over: Float in [1.0001, -1.0001, .infinity, -.infinity] {
          var copy = samples
          copy[position] = over
          #expect(PeakLimiter.anyOver(copy, count: count), "count \(count): \(over) at \(position)")
        }
      }
    }
  }

  @Test("Samples within full scale, ±1 included, come out bit for bit")
  func withinFullScaleIsUntouched() {
    var random = SplitMix64(seed: 3)
    var input = (0..<96_000).map { _ in Float.random(in: -1...1, using: &random) }
    input[10] = 1
    input[11] = -1
    let output = limited(input)
    let differing = input.indices.filter { output[$0] != input[$0] }.count
    #expect(differing == 0, "\(differing) samples changed")
  }

  @Test("A passage at twice full scale never goes over, stays loud, and the gain comes back to 1 after it")
  func limitsAndReleases() throws {
    let loudFrames = 24_000
    let input = sine(amplitude: 2, frames: loudFrames) + sine(amplitude: 0.5, frames: 72_000, phase: loudFrames)
    let output = limited(input)
    let peak = EngineHarness.peak(output[...])
    #expect(peak <= 1, "peak \(peak)")
    // Turned down, not muted: the loud passage's RMS is near a full-scale sine's (0.707).
    let loud = output[(2 * 4800)..<(2 * loudFrames)]
    let rms = (loud.reduce(0) { $0 + Double($1) * Double($1) } / Double(loud.count)).squareRoot()
    #expect(rms > 0.6, "RMS \(rms)")
    // The first frame that would go over comes out at full scale (to the float's last place).
    let firstOver = try #require((0..<loudFrames).first { abs(input[2 * $0]) > 1 })
    #expect(abs(output[2 * firstOver]) > 0.9999)
    // The gain comes back: a quarter of a second after the loud passage the music is nearly as
    // loud as it came in, and after a second (ten time constants) it is the input bit for bit.
    let quarter = 2 * (loudFrames + 12_000)
    let recovered =
      EngineHarness.peak(output[quarter..<(quarter + 2400)]) / EngineHarness.peak(input[quarter..<(quarter + 2400)])
    #expect(recovered > 0.9 && recovered < 1, "a quarter second after: \(recovered) of the input's level")
    let after = 2 * (loudFrames + 48_000)
    let differing = (after..<input.count).filter { output[$0] != input[$0] }.count
    #expect(differing == 0, "\(differing) samples differ a second after the loud passage")
    // And no step larger than the sine's own between neighbouring samples: a turn-down, not a click.
    #expect(EngineHarness.largestStep(output) <= EngineHarness.largestStep(input))
  }

  @Test("The block size does not change the result")
  func blockSizeIndependent() {
    let input = sine(amplitude: 1.6, frames: 20_000) + sine(amplitude: 0.3, frames: 20_000)
    let small = limited(input, blockFrames: 256)
    let large = limited(input, blockFrames: 1000)
    let differing = input.indices.filter { small[$0] != large[$0] }.count
    #expect(differing == 0, "\(differing) samples differ")
  }

  @Test("Two voices in phase at 0.9 each (1.8 together) render offline within full scale, as loud as a full-scale tone")
  func twoLoudVoicesOffline() throws {
    let directory = try TemporaryDirectory()
    let first = try EngineHarness.vorbisTone(in: directory, name: "a.ogg", seconds: 1.5, frequency: 440, amplitude: 0.9)
    let second = try EngineHarness.vorbisTone(
      in: directory, name: "b.ogg", seconds: 1.5, frequency: 440, amplitude: 0.9)
    let engine = try EngineHarness.offlineEngine()
    let players = try [first, second].map { try Player(engine: engine, item: MediaItem(path: $0)) }
    engine.performing(atMixFrame: 0) { for player in players { player.play() } }
    let output = EngineHarness.render(engine, seconds: 1)
    let peak = EngineHarness.peak(output[...])
    #expect(peak <= 1, "peak \(peak)")
    #expect(peak > 0.99, "the voices were heard together: peak \(peak)")
    let steady = EngineHarness.power(output, frames: 9600..<45_056).squareRoot()
    #expect(steady > 0.6, "RMS \(steady)")

    // One of them alone stays within full scale and is not touched: the same as without a limiter.
    let alone = try EngineHarness.offlineEngine()
    let player = try Player(engine: alone, item: MediaItem(path: first))
    player.play()
    let single = EngineHarness.render(alone, seconds: 1)
    #expect(EngineHarness.peak(single[...]) < 1)
    #expect(EngineHarness.peak(single[...]) > 0.85)
  }

  @Test("A playback device runs without OpenAL's own limiter, as the loopback device does")
  func playbackDeviceHasNoOpenALLimiter() throws {
    let device = try OutputDevice.openPlayback()
    #expect(!device.outputLimiterIsOn)
    let loopback = try OutputDevice.openLoopback(sampleRate: 48_000)
    #expect(!loopback.outputLimiterIsOn)
  }
}
