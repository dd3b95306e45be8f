import CSoxr

/// A stream's fixed-ratio resampler, from its file's rate to the mix rate: libsoxr (LGPL-2.1,
/// linked dynamically), high quality (`SOXR_HQ`: 20-bit, linear phase), run by the stream's
/// decode thread so the ring the mixer reads from already holds mix-rate frames. Owns the
/// `soxr_t` and frees it in `deinit`.
///
/// Why here and why soxr: a 44.1 kHz file in a 48 kHz mix is the common case, and resampling it
/// on the streaming thread with libsamplerate's medium sinc cost about ten times what decoding
/// the Vorbis did (0.015 to 0.019 CPU s per audio s against 0.0017). soxr at a fixed ratio costs
/// 0.0021 to 0.0026 (measured here in C, 44.1 to 48 kHz), but it allocates now and then while
/// it runs (every call at 8 kHz) and in `soxr_clear`: allowed on a decode thread, not on the
/// streaming thread. Its output is time-aligned (checked here with an impulse at 8, 22.05, 44.1
/// and 96 kHz, and by `DecodeResamplingTests`): output frame j shows input time
/// j × input rate / output rate, so positions stay exact. A rate other than 1 is still done
/// by the voice's `VoiceResampler`, on mix-rate input.
///
/// Decode thread only.
package final class FixedRateConverter {
  let inputRate: Int
  let outputRate: Int
  private let state: soxr_t

  /// Nil when soxr cannot make a resampler for these rates (or is out of memory): the stream then
  /// hands the mixer file-rate frames, and the voice resamples them itself.
  package init?(inputRate: Int, outputRate: Int) {
    guard inputRate > 0, outputRate > 0, inputRate != outputRate else { return nil }
    self.inputRate = inputRate
    self.outputRate = outputRate
    var error: soxr_error_t?
    var quality = soxr_quality_spec(UInt(SOXR_HQ), 0)
    var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
    var runtime = soxr_runtime_spec(1)
    guard let made = soxr_create(Double(inputRate), Double(outputRate), 2, &error, &io, &quality, &runtime),
      error == nil
    else { return nil }
    state = made
  }

  deinit { soxr_delete(state) }

  /// Forgets the signal (a seek, or the end of a stream that may go on later): the next input is
  /// input frame 0 again, shown by output frame 0.
  package func clear() { _ = soxr_clear(state) }

  /// Resamples up to `frames` stereo input frames into `output` (room for `capacity` frames). soxr
  /// takes only as much input as the room allows and keeps some of what it took (its filter's
  /// reach) until more comes. `input == nil` ends the signal: what soxr still holds comes out,
  /// over as many calls as the room needs (0 frames made: all out). Returns the input frames
  /// taken and the output frames made.
  package func process(
    input: UnsafePointer<Float>?, frames: Int, into output: UnsafeMutablePointer<Float>, capacity: Int
  )
    -> (taken: Int, made: Int)
  {
    var taken = 0
    var made = 0
    let error = soxr_process(
      state, input.map { UnsafeRawPointer($0) }, input == nil ? 0 : frames, &taken, UnsafeMutableRawPointer(output),
      capacity, &made)
    guard error == nil else { return (0, 0) }
    return (taken, made)
  }
}
