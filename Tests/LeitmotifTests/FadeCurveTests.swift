import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

@Suite("Fade curves: their formulas, and the summed power of a crossfade")
struct FadeCurveTests {
  /// The summed power of two unrelated pieces crossfading with `curve`, in dB, at `progress`.
  func summedPower(_ curve: FadeCurve, _ progress: Double) -> Double {
    let rising = curve.fadeInGain(progress)
    let falling = curve.fadeOutGain(progress)
    return 10 * log10(rising * rising + falling * falling)
  }

  @Test(
    "Every curve goes from silence to full and back, and never dips the summed power by more than 3 dB",
    arguments: FadeCurve.allCases)
  func shapes(curve: FadeCurve) {
    #expect(curve.fadeInGain(0) == 0 && curve.fadeInGain(1) == 1)
    #expect(curve.fadeOutGain(0) == 1 && curve.fadeOutGain(1) == 0)
    var worst = 0.0
    var previous = (rising: -1.0, falling: 2.0)
    for step in 0...1000 {
      let progress = Double(step) / 1000
      let now = (rising: curve.fadeInGain(progress), falling: curve.fadeOutGain(progress))
      #expect(now.rising >= previous.rising && now.falling <= previous.falling, "monotonic at \(progress)")
      previous = now
      worst = min(worst, summedPower(curve, progress))
    }
    // Linear and s-curve meet at 0.5 each: 10·log10(0.5) = −3.0103 dB.
    #expect(worst >= -3.0103 - 1e-9, "\(curve): \(worst) dB")
    if curve == .equalPower || curve == .exponential {
      #expect(worst > -0.1, "\(curve) keeps the summed power constant: \(worst) dB")
    }
  }

  @Test("The exponential fade-in is even in decibels: 60 dB over the fade, 6 dB per tenth")
  func exponentialIsEvenInDecibels() {
    for step in 1...10 {
      let progress = Double(step) / 10
      let decibels = 20 * log10(FadeCurve.exponential.fadeInGain(progress))
      #expect(abs(decibels - (-60 * (1 - progress))) < 1e-9)
    }
  }

  @Test(
    "An exponential crossfade of two uncorrelated noise tracks keeps the summed power within 1 dB (it dipped 27 dB)")
  func exponentialCrossfadeOnTheEngine() throws {
    let worst = try EngineHarness.noiseCrossfadeDeviation(curve: .exponential).decibels
    #expect(worst < 1, "largest deviation of the summed power: \(worst) dB")
  }

  @Test(
    "The start state's fade-in follows its transition's curve", arguments: [FadeCurve.linear, .exponential, .sCurve])
  func startFadeFollowsItsCurve(curve: FadeCurve) throws {
    let game = try DirectorFixture()
    let sheet = try game.sheet(
      """
      {
        start: "explore",
      \(DirectorFixture.sources)
        states: { explore: { music: "calm", transition: { seconds: 2, curve: "\(curve.rawValue)" } } },
        rules: [],
      }
      """)
    let (left, timeline) = try game.simulate(sheet, [], seconds: 3)
    let full = Listen.level(of: DirectorFixture.explorePitch, in: Listen.window(left, 2.4, 2.9))
    // A window around 1 s, mid-way through the 2 s fade-in.
    let middle = Listen.level(of: DirectorFixture.explorePitch, in: Listen.window(left, 0.95, 1.05))
    let expected = curve.fadeInGain(0.5)
    #expect(
      abs(middle / full - expected) < 0.05,
      "\(curve): \(middle / full) of full mid-fade, expected \(expected); \(timeline.summary)")
  }
}
