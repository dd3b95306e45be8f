import CSoundTouch

/// A voice's time-stretcher: SoundTouch (LGPL-2.1, linked dynamically, through its C API), which
/// changes tempo and keeps pitch by WSOLA (it cuts the signal into overlapping sequences of about
/// 40 to 125 ms and lays them out closer or further apart, each placed where it matches the
/// last). Owns the SoundTouch instance and frees it in `deinit`.
///
/// Why SoundTouch: it is the Debian library made for the job whose licence fits the project's
/// (Rubber Band, the other, is GPL), it is light (about 0.002 s of CPU per second of stereo at
/// 48 kHz, measured here), and its C API (`SoundTouchDLL.h`) ships in `libsoundtouch-dev`.
///
/// Real time: SoundTouch grows its buffers as it needs them (`new`), so `init` runs it at both
/// ends of the tempo range, in the blocks the voice feeds it, until they are as large as they
/// will get (measured here: 0 allocations after that over a minute of tempo changes between 0.5
/// and 2; 12 without); `clear` keeps them. Its own `flush` allocates: the voice pushes the last
/// frames out with silence instead (`silence`). Streaming-thread only once made (made on the
/// loader, with its voice).
package final class TimeStretcher {
  /// The tempo range SoundTouch is made for (-50 % to +100 %).
  package static let tempoRange: ClosedRange<Float> = 0.5...2

  /// The frames put in at most at once (the voice feeds it in pieces no larger).
  static let maximumPut = 1024

  private let handle: UnsafeMutableRawPointer
  private let sampleRate: Int
  /// `maximumPut` frames of silence, for the tail.
  let silence: UnsafeMutablePointer<Float>
  private(set) var tempo: Float = 1

  /// Nil when SoundTouch cannot make an instance (out of memory): the voice then plays at tempo 1.
  init?(sampleRate: Int) {
    guard sampleRate > 0, let made = soundtouch_createInstance() else { return nil }
    handle = made
    self.sampleRate = sampleRate
    soundtouch_setChannels(handle, 2)
    soundtouch_setSampleRate(handle, UInt32(sampleRate))
    silence = .allocate(capacity: 2 * Self.maximumPut)
    silence.initialize(repeating: 0, count: 2 * Self.maximumPut)
    // Grow every buffer to its largest: four blocks at each end of the range (see above).
    let sink = UnsafeMutablePointer<Float>.allocate(capacity: 2 * 8 * Self.maximumPut)
    defer { sink.deallocate() }
    for warmTempo in [Self.tempoRange.lowerBound, Self.tempoRange.upperBound] {
      soundtouch_setTempo(handle, warmTempo)
      for _ in 0..<16 {
        _ = soundtouch_putSamples(handle, silence, UInt32(Self.maximumPut))
        while soundtouch_receiveSamples(handle, sink, UInt32(8 * Self.maximumPut)) > 0 {}
      }
    }
    soundtouch_clear(handle)
    soundtouch_setTempo(handle, 1)
    _ = Self.alignmentTable.count
  }

  deinit {
    soundtouch_destroyInstance(handle)
    silence.deallocate()
  }

  /// Sets the tempo (clamped to `tempoRange`); it applies from the next sequence SoundTouch cuts.
  func setTempo(_ newTempo: Float) {
    tempo = min(max(newTempo, Self.tempoRange.lowerBound), Self.tempoRange.upperBound)
    soundtouch_setTempo(handle, tempo)
  }

  /// The input frames one processing sequence of SoundTouch reads at the tempo set
  /// (`SETTING_NOMINAL_INPUT_SEQUENCE`, 6 in SoundTouch.h, which the C API does not include):
  /// once what it holds is used up, it reads about that much before it gives more out.
  var sequenceInputFrames: Int { Int(max(0, soundtouch_getSetting(handle, 6))) }

  /// Forgets everything held (a seek): the next input starts a new signal.
  func clear() { soundtouch_clear(handle) }

  /// Takes `frames` stereo frames (at most `maximumPut`).
  func put(_ samples: UnsafePointer<Float>, frames: Int) {
    guard frames > 0 else { return }
    _ = soundtouch_putSamples(handle, samples, UInt32(min(frames, Self.maximumPut)))
  }

  /// Up to `maximumFrames` stretched frames into `output`; 0 when it needs more input.
  func receive(into output: UnsafeMutablePointer<Float>, maximumFrames: Int) -> Int {
    Int(soundtouch_receiveSamples(handle, output, UInt32(max(0, maximumFrames))))
  }

  /// How far, on average, the input position integrated at `tempo` is ahead of what comes out, in
  /// seconds of the input (negative: behind it): WSOLA lays each sequence out at its own speed
  /// (1), not at the tempo, and places the first one with an offset of its own. What is heard is
  /// the integrated position less this.
  /// Measured here with short tone bursts through SoundTouch 2.3.2 at 44.1 and 48 kHz (it scales
  /// with time, not frames; the bursts scatter about ±(|1 − tempo| × 40 ms + 15 ms) around it,
  /// which is WSOLA's own imprecision); interpolated between the measured tempos.
  static func alignmentSeconds(tempo: Float) -> Double {
    let t = Double(min(max(tempo, tempoRange.lowerBound), tempoRange.upperBound))
    let table = alignmentTable
    for index in 1..<table.count where t <= table[index].0 {
      let (t0, a0) = table[index - 1]
      let (t1, a1) = table[index]
      return a0 + (a1 - a0) * (t - t0) / (t1 - t0)
    }
    return table[table.count - 1].1
  }

  /// (tempo, seconds), as measured. A stored constant, made once (by `init`, on the loader): the
  /// streaming thread only reads it.
  private static let alignmentTable: [(Double, Double)] = [
    (0.5, -0.0280), (0.6, -0.0242), (0.7, -0.0162), (0.8, -0.0096), (0.9, -0.0046), (1.0, 0),
    (1.1, 0.0036), (1.2, 0.0065), (1.35, 0.0102), (1.5, 0.0131), (1.75, 0.0159), (2.0, 0.0177),
  ]
}
