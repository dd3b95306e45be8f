import COpenAL

/// An open OpenAL device and the one context Leitmotif mixes in. Frees both in `deinit`.
///
/// Three kinds: a real playback device (the default or a named one), the headless null backend
/// (OpenAL Soft's "No Output", which mixes in real time and discards), and a loopback device
/// (ALC_SOFT_loopback) that mixes only when `render` is called: faster than real time and
/// deterministic, for offline renders and tests.
///
/// Thread safety: the methods may be called from any thread; each call makes this device's context
/// current for the calling thread first (`alcSetThreadContext`).
public final class OutputDevice: @unchecked Sendable {
  /// What sort of device it is.
  public enum Kind: String, Sendable, Equatable {
    /// A sound card (or OpenAL's default device), played in real time.
    case playback
    /// No sound card: a device that plays in real time and is heard by nobody.
    case headless
    /// A loopback device: mixes only when asked (`render`), for offline rendering.
    case loopback
  }

  /// What sort of device this is.
  public let kind: Kind
  /// The device's name as OpenAL reports it.
  public let name: String
  /// The mixing rate in frames per second.
  public let sampleRate: Int
  /// How many frames OpenAL mixes at once: the update period of a real device, or the render
  /// size a loopback renderer uses (set by the renderer). Gain changes ramp over one period.
  public var mixPeriodFrames: Int
  /// True for loopback devices: they mix only when `render` is called (by an offline renderer,
  /// or, for the clocked headless fallback, by the engine's streaming thread in real time).
  public let rendersOnDemand: Bool

  let device: OpaquePointer
  let context: OpaquePointer

  private init(
    kind: Kind, device: OpaquePointer, context: OpaquePointer, sampleRate: Int, mixPeriodFrames: Int,
    rendersOnDemand: Bool = false
  ) {
    self.kind = kind
    self.rendersOnDemand = rendersOnDemand
    self.device = device
    self.context = context
    self.sampleRate = sampleRate
    self.mixPeriodFrames = mixPeriodFrames
    self.name = alcGetString(device, ALC_DEVICE_SPECIFIER).map { String(cString: $0) } ?? "unknown"
  }

  deinit {
    let (device, context) = (self.device, self.context)
    OpenALTeardown.free {
      if alcGetThreadContext() == context { alcSetThreadContext(nil) }
      alcDestroyContext(context)
      alcCloseDevice(device)
    }
  }

  /// Opens a real-time device: the default (`name == nil`) or the named one.
  ///
  /// On a machine without a sound system `OpenALRuntime` has already chosen the null backend,
  /// so this gives the headless device; the result's `kind` says which it is.
  /// - Throws: `OutputError.deviceUnavailable` when OpenAL cannot open the device.
  public static func openPlayback(named name: String? = nil) throws(OutputError) -> OutputDevice {
    let setup = OpenALRuntime.prepare()
    guard let device = alcOpenDevice(name) else {
      throw OutputError(.deviceUnavailable, operation: "alcOpenDevice", device: name ?? "default", code: nil)
    }
    // 48 kHz, the rate of the bundled music (and most game audio): the mixer resamples nothing
    // at that rate, and the device converts the one mixed stream if it must. (OpenAL Soft's
    // own choice is the backend's default, 44.1 kHz on its null and wave backends.) A user's
    // alsoft.conf `frequency` still wins.
    // The output limiter off, as on the loopback device: the mixer limits the bus itself, the
    // same live as offline, and OpenAL's limiter costs a `logf` and an `expf` per sample even on
    // quiet music (the engine's `PeakLimiter` says more).
    let attributes: [ALCint] = [ALC_FREQUENCY, 48_000, ALC_OUTPUT_LIMITER_SOFT, ALC_FALSE, 0]
    guard let context = alcCreateContext(device, attributes) else {
      let code = alcGetError(device)
      alcCloseDevice(device)
      throw OutputError(.contextFailed, operation: "alcCreateContext", device: name ?? "default", code: code)
    }
    var frequency: ALCint = 0
    var refresh: ALCint = 0
    alcGetIntegerv(device, ALC_FREQUENCY, 1, &frequency)
    alcGetIntegerv(device, ALC_REFRESH, 1, &refresh)
    let rate = frequency > 0 ? Int(frequency) : 44_100
    let period = refresh > 0 ? rate / Int(refresh) : 1024
    let kind: Kind = setup.choseHeadless ? .headless : .playback
    let output = OutputDevice(kind: kind, device: device, context: context, sampleRate: rate, mixPeriodFrames: period)
    try output.configureSources()
    return output
  }

  /// Opens a loopback device mixing stereo Float32 at `sampleRate`, with the output limiter and
  /// HRTF off so that a stereo source at the device's rate comes out bit-exact.
  /// - Throws: `OutputError.formatUnsupported` if OpenAL cannot render that rate.
  public static func openLoopback(sampleRate: Int, renderFrames: Int = 1024) throws(OutputError) -> OutputDevice {
    try openLoopback(sampleRate: sampleRate, renderFrames: renderFrames, kind: .loopback)
  }

  /// A headless output for when OpenAL's own backend cannot open any device even though a sound
  /// system seemed present (OpenAL Soft 1.19 cannot switch to its null backend after it has
  /// started): a loopback device that the engine's streaming thread renders in real time and
  /// discards.
  ///
  /// The period is 2048 frames (43 ms at 48 kHz): nobody listens, so latency does not matter, and
  /// half as many mixes and pumps halve what a headless engine costs (a server running a game's
  /// logic pays for every wake-up).
  public static func openClockedHeadless(sampleRate: Int = 48_000, periodFrames: Int = 2048) throws(OutputError)
    -> OutputDevice
  {
    try openLoopback(sampleRate: sampleRate, renderFrames: periodFrames, kind: .headless)
  }

  private static func openLoopback(sampleRate: Int, renderFrames: Int, kind: Kind) throws(OutputError) -> OutputDevice {
    OpenALRuntime.prepare()
    guard let device = alcLoopbackOpenDeviceSOFT(nil) else {
      throw OutputError(.deviceUnavailable, operation: "alcLoopbackOpenDeviceSOFT", device: "loopback")
    }
    guard alcIsRenderFormatSupportedSOFT(device, ALCsizei(sampleRate), ALC_STEREO_SOFT, ALC_FLOAT_SOFT) != 0 else {
      alcCloseDevice(device)
      throw OutputError(
        .formatUnsupported, operation: "alcIsRenderFormatSupportedSOFT(\(sampleRate) Hz)", device: "loopback")
    }
    let attributes: [ALCint] = [
      ALC_FORMAT_CHANNELS_SOFT, ALC_STEREO_SOFT,
      ALC_FORMAT_TYPE_SOFT, ALC_FLOAT_SOFT,
      ALC_FREQUENCY, ALCint(sampleRate),
      ALC_OUTPUT_LIMITER_SOFT, ALC_FALSE,
      ALC_HRTF_SOFT, ALC_FALSE,
      0,
    ]
    guard let context = alcCreateContext(device, attributes) else {
      let code = alcGetError(device)
      alcCloseDevice(device)
      throw OutputError(.contextFailed, operation: "alcCreateContext", device: "loopback", code: code)
    }
    let output = OutputDevice(
      kind: kind, device: device, context: context, sampleRate: sampleRate, mixPeriodFrames: renderFrames,
      rendersOnDemand: true)
    try output.configureSources()
    return output
  }

  private func configureSources() throws(OutputError) {
    makeCurrent()
    // Music is not placed in space: distance attenuation off for every source.
    alDistanceModel(AL_NONE)
    try OpenAL.check("alDistanceModel", device: name)
  }

  /// The listener gain: a master gain over every source, 0 to 1 (OpenAL clamps above 1).
  @inline(__always)
  public func setMasterGain(_ gain: Float) { alListenerf(AL_GAIN, max(0, min(1, gain))) }

  /// Makes this device's context current for the calling thread (`alcSetThreadContext`), if it is not.
  public func makeCurrent() {
    if alcGetThreadContext() != context { alcSetThreadContext(context) }
  }

  /// Stops OpenAL's own mixer on this device (ALC_SOFT_pause_device) until `resumeMixing()`:
  /// an idle OpenAL device still wakes once a period to mix silence, and that costs about as
  /// much as everything else an idle engine does. Sources keep their state. Playback devices
  /// only (OpenAL refuses it for loopback devices, which mix only when asked anyway).
  public func pauseMixing() {
    guard canPauseMixing else { return }
    alcDevicePauseSOFT(device)
  }

  /// Whether `pauseMixing()` works here: a playback device, but not OpenAL Soft 1.19's wave
  /// writer (its stop seeks back to the header to write the sizes, and a restart then writes
  /// the audio over the header: the capture would be lost).
  public var canPauseMixing: Bool { !rendersOnDemand && !OpenALRuntime.writesWaveFile }

  /// Starts OpenAL's mixer again after `pauseMixing()`. A backend that cannot start again marks
  /// the device disconnected (`isConnected` turns false), as a lost device does.
  public func resumeMixing() {
    guard canPauseMixing else { return }
    // OpenAL starts its mixer thread here, and a new thread inherits the caller's name and nice
    // value: without this the mixer would go by the engine's "lm.streaming" until OpenAL closes
    // the device, and run at the streaming thread's raised priority.
    ThreadPriority.whileNormal { ThreadName.whileNamed("alsoft-mixer") { alcDeviceResumeSOFT(device) } }
  }

  /// Whether OpenAL's own output limiter runs on this device (it should not: the engine limits its
  /// bus itself, live as offline; a user's alsoft.conf can still turn it on).
  public var outputLimiterIsOn: Bool {
    var value: ALCint = 0
    alcGetIntegerv(device, ALC_OUTPUT_LIMITER_SOFT, 1, &value)
    return value == ALC_TRUE
  }

  /// False once OpenAL reports the device gone (ALC_EXT_disconnect). Loopback devices never go.
  public var isConnected: Bool {
    var connected: ALCint = 1
    alcGetIntegerv(device, ALC_CONNECTED, 1, &connected)
    return connected != 0
  }

  /// The device clock in nanoseconds (ALC_SOFT_device_clock): how much audio has been mixed.
  /// On a loopback device it is exactly frames rendered / rate.
  public var clockNanoseconds: Int64 {
    var value: ALCint64SOFT = 0
    alcGetInteger64vSOFT(device, ALC_DEVICE_CLOCK_SOFT, 1, &value)
    return value
  }

  /// How far the device's output runs behind what OpenAL has mixed, in nanoseconds
  /// (ALC_SOFT_device_clock's ALC_DEVICE_LATENCY_SOFT): what the backend and the sound server
  /// still hold. 0 on loopback. Takes the backend's lock: ask now and then, not every mix.
  public var latencyNanoseconds: Int64 {
    var value: ALCint64SOFT = 0
    alcGetInteger64vSOFT(device, ALC_DEVICE_LATENCY_SOFT, 1, &value)
    return max(0, value)
  }

  /// Mixes `frameCount` stereo Float32 frames into `buffer` (loopback devices only).
  public func render(into buffer: UnsafeMutablePointer<Float>, frameCount: Int) {
    precondition(rendersOnDemand, "render(into:frameCount:) needs a loopback device")
    alcRenderSamplesSOFT(device, buffer, ALCsizei(frameCount))
  }

  /// The names of the playback devices OpenAL can open.
  public static func playbackDeviceNames() -> [String] {
    OpenALRuntime.prepare()
    guard let list = alcGetString(nil, ALC_ALL_DEVICES_SPECIFIER) ?? alcGetString(nil, ALC_DEVICE_SPECIFIER) else {
      return []
    }
    var names: [String] = []
    var cursor = list
    while cursor.pointee != 0 {
      let name = String(cString: cursor)
      names.append(name)
      cursor += name.utf8.count + 1
    }
    return names
  }
}
