import CEbur128

/// EBU R128 loudness of a stream of frames: integrated loudness, loudness range and true peak,
/// measured by libebur128 as the audio goes by (the scan's own decode feeds it; nothing is read
/// twice).
///
/// Owns one `ebur128_state`, freed in `deinit`. Histogram mode keeps its memory constant however
/// long the song (without it libebur128 keeps every 400 ms block: 9,000 blocks an hour).
///
/// The true peak is measured beside it by `TruePeakMeter`, with libebur128's interpolator: with
/// libebur128's own true-peak mode the whole analysis ran at 88 times real time, with this one
/// at 250 (`leitmotif-bench tempo`).
///
/// Mono is measured as dual mono: the mixer plays a mono file on both speakers at the same level,
/// which R128 hears 3 dB louder than one channel alone; measuring it as one channel would make
/// every mono file 3 dB too loud after normalisation.
package final class LoudnessMeter {
  private var state: UnsafeMutablePointer<ebur128_state>?
  private var peakMeter: TruePeakMeter

  /// A meter for `channels` interleaved channels (1 or 2; more are measured as libebur128's
  /// default layout: left, right, centre, LFE (unweighted), surrounds) at `sampleRate`. Nil when
  /// libebur128 refuses the format (0 channels, a rate it cannot filter).
  package init?(channels: Int, sampleRate: Int) {
    let mode = Int32(EBUR128_MODE_I.rawValue | EBUR128_MODE_LRA.rawValue | EBUR128_MODE_HISTOGRAM.rawValue)
    guard channels > 0, sampleRate > 0, let state = ebur128_init(UInt32(channels), UInt(sampleRate), mode) else {
      return nil
    }
    self.state = state
    peakMeter = TruePeakMeter(channels: channels, sampleRate: sampleRate)
    if channels == 1 { _ = ebur128_set_channel(state, 0, Int32(EBUR128_DUAL_MONO.rawValue)) }
  }

  deinit { ebur128_destroy(&state) }

  /// Measures `frames` interleaved frames.
  package func add(_ samples: UnsafePointer<Float>, frames: Int) {
    guard frames > 0 else { return }
    _ = ebur128_add_frames_float(state, samples, frames)
    peakMeter.add(samples, frames: frames)
  }

  /// Integrated loudness in LUFS (gated, as R128 defines it); nil for silence (everything below
  /// the absolute gate of -70 LUFS) or a file shorter than one 400 ms block.
  package var integratedLoudness: Double? {
    var value = 0.0
    guard ebur128_loudness_global(state, &value) == EBUR128_SUCCESS.rawValue, value.isFinite, value > -70 else {
      return nil
    }
    return value
  }

  /// Loudness range in LU (EBU Tech 3342); nil when too short to have one (3 s).
  package var loudnessRange: Double? {
    var value = 0.0
    guard ebur128_loudness_range(state, &value) == EBUR128_SUCCESS.rawValue, value.isFinite else { return nil }
    return value
  }

  /// The highest true peak of any channel, in dBTP (4 times oversampled below 96 kHz); nil for
  /// digital silence.
  package var truePeak: Double? { peakMeter.decibels }
}
