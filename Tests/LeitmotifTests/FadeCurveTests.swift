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
  @Test("A fade set for a later frame lets the fade in progress go on until then, and starts from where it got")
  func followingAFade() {
    // Rising from 0 over frames 0 ..< 1000; at frame 100 a fade-out is set for frame 600.
    let rising = FadeEnvelope(from: 0, to: 1, startFrame: 0, durationFrames: 1000, curve: .equalPower)
    let falling = FadeEnvelope.following(
      rising, to: 0, startFrame: 600, durationFrames: 200, curve: .equalPower, now: 100)
    for frame in stride(from: Int64(100), through: 600, by: 50) {
      #expect(falling.gain(at: frame) == rising.gain(at: frame), "frame \(frame)")
    }
    #expect(falling.gain(at: 700) < rising.gain(at: 600) && falling.gain(at: 700) > 0)
    #expect(falling.gain(at: 800) == 0)
    #expect(!falling.isFinished(at: 500) && !falling.isConstant(from: 300, count: 10))
    #expect(!falling.isConstant(from: 590, count: 20) && falling.isFinished(at: 800))
    // Replaced before it began by one that starts sooner: the first fade goes on until then.
    let sooner = FadeEnvelope.following(falling, to: 0.5, startFrame: 400, durationFrames: 0, curve: .linear, now: 200)
    #expect(sooner.gain(at: 300) == rising.gain(at: 300) && sooner.gain(at: 400) == 0.5)
    // Set for a frame already being mixed: a plain fade from the level there.
    let now = FadeEnvelope.following(rising, to: 0, startFrame: 300, durationFrames: 100, curve: .linear, now: 300)
    #expect(now.from == rising.gain(at: 300) && now.gain(at: 299) == now.from)
  }
}
