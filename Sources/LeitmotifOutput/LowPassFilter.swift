import COpenAL

/// One OpenAL EFX filter object of type `AL_FILTER_LOWPASS` (ALC_EXT_EFX). Deletes it in `deinit`.
///
/// What OpenAL Soft calls a low-pass is a high shelf: `gainHF` scales what lies above its
/// reference frequency (5 kHz) and leaves the bass as it is, which is the "muffled" sound games
/// use for music heard under water or behind a pause menu. OpenAL Soft limits the shelf to -60 dB
/// (a `gainHF` of 0 acts as 0.001).
///
/// A filter is a set of parameters, not a processor: `alSourcei(AL_DIRECT_FILTER)` copies them into
/// the source when it is attached, so after a change the owner must attach it again (checked on
/// 1.19.1: changing `AL_LOWPASS_GAINHF` of an attached filter changes nothing that is heard).
///
/// Thread safety: owned by one `StreamingSource`, used on the thread that uses it.
final class LowPassFilter {
  let device: OutputDevice
  /// The OpenAL filter name, for `AL_DIRECT_FILTER`.
  private(set) var name: ALuint = 0
  private(set) var gain: Float = 1
  private(set) var gainHF: Float = 1

  /// Makes a low-pass filter that passes everything (gain 1, high-frequency gain 1).
  /// Wraps `alGenFilters` and `alFilteri(AL_FILTER_TYPE, AL_FILTER_LOWPASS)`.
  /// - Throws: `OutputError.callFailed` when OpenAL cannot make the filter.
  /// Call with `device`'s context current on this thread.
  init(device: OutputDevice) throws(OutputError) {
    self.device = device
    _ = OpenAL.takeError()
    alGenFilters(1, &name)
    try OpenAL.check("alGenFilters", device: device.name)
    alFilteri(name, AL_FILTER_TYPE, AL_FILTER_LOWPASS)
    do throws(OutputError) {
      try OpenAL.check("alFilteri(AL_FILTER_TYPE, AL_FILTER_LOWPASS)", device: device.name)
    } catch {
      alDeleteFilters(1, &name)
      throw error
    }
  }

  deinit {
    device.makeCurrent()
    alDeleteFilters(1, &name)
    _ = OpenAL.takeError()
  }

  /// Sets the overall gain and the high-frequency gain, each clamped to 0...1 (`AL_LOWPASS_GAIN`,
  /// `AL_LOWPASS_GAINHF`). Sources that have the filter attached hear it only once it is attached
  /// again. Call with the device's context current on this thread.
  /// - Throws: `OutputError.callFailed` when OpenAL refuses a value.
  func set(gain: Float, gainHF: Float) throws(OutputError) {
    let gain = max(0, min(1, gain))
    let gainHF = max(0, min(1, gainHF))
    _ = OpenAL.takeError()
    alFilterf(name, AL_LOWPASS_GAIN, gain)
    alFilterf(name, AL_LOWPASS_GAINHF, gainHF)
    try OpenAL.check("alFilterf(AL_LOWPASS_GAIN \(gain), AL_LOWPASS_GAINHF \(gainHF))", device: device.name)
    self.gain = gain
    self.gainHF = gainHF
  }
}
