import COpenAL

/// One OpenAL source and the ring of buffers it streams through. Deletes both in `deinit`.
///
/// The streaming pattern is openal-soft's examples/alstream.c: a few buffers per source; each
/// update unqueues the processed ones, refills and requeues them; a source that stopped while
/// buffers were still queued has underrun and is started again.
///
/// Thread safety: owned by the engine's streaming thread; not for concurrent use.
public final class StreamingSource {
  /// The device the source and its buffers belong to.
  public let device: OutputDevice
  private var source: ALuint = 0
  /// Buffers not queued on the source, ready to be filled.
  private var freeBuffers: [ALuint]
  private var allBuffers: [ALuint]

  /// Creates a source with `bufferCount` buffers. Sources play stereo with direct channels (no
  /// virtual-speaker panning, so the output equals the input bit for bit) and no attenuation.
  public init(device: OutputDevice, bufferCount: Int) throws(OutputError) {
    self.device = device
    device.makeCurrent()
    _ = OpenAL.takeError()
    alGenSources(1, &source)
    try OpenAL.check("alGenSources", device: device.name)
    var buffers = [ALuint](repeating: 0, count: bufferCount)
    alGenBuffers(ALsizei(bufferCount), &buffers)
    do throws(OutputError) {
      try OpenAL.check("alGenBuffers", device: device.name)
    } catch {
      alDeleteSources(1, &source)
      throw error
    }
    allBuffers = buffers
    freeBuffers = buffers
    freeBuffers.reserveCapacity(bufferCount)
    alSourcei(source, AL_DIRECT_CHANNELS_SOFT, AL_TRUE)
    alSourcei(source, AL_SOURCE_RELATIVE, AL_TRUE)
    alSourcef(source, AL_ROLLOFF_FACTOR, 0)
    alSource3f(source, AL_POSITION, 0, 0, 0)
    try OpenAL.check("alSourcei(AL_DIRECT_CHANNELS_SOFT)", device: device.name)
  }

  deinit {
    OpenALTeardown.free {
      device.makeCurrent()
      alSourceStop(source)
      alSourcei(source, AL_BUFFER, 0)
      alDeleteSources(1, &source)
      alDeleteBuffers(ALsizei(allBuffers.count), allBuffers)
      _ = OpenAL.takeError()
    }
  }

  /// OpenAL's source states: initial (never played), playing, paused, stopped (played out, stopped or
  /// underrun).
  public enum State: Equatable {
    /// `initial`: never played; `playing`; `paused`; `stopped`: played out, stopped or underrun.
    case initial, playing, paused, stopped
  }

  /// The source's OpenAL state (`AL_SOURCE_STATE`).
  public var state: State {
    var value: ALint = 0
    alGetSourcei(source, AL_SOURCE_STATE, &value)
    switch value {
    case AL_PLAYING: return .playing
    case AL_PAUSED: return .paused
    case AL_STOPPED: return .stopped
    default: return .initial
    }
  }

  /// Buffers queued on the source, played or not (`AL_BUFFERS_QUEUED`).
  public var queuedBufferCount: Int {
    var value: ALint = 0
    alGetSourcei(source, AL_BUFFERS_QUEUED, &value)
    return Int(value)
  }

  /// Buffers ready to be filled and queued.
  public var freeBufferCount: Int { freeBuffers.count }

  /// Unqueues every processed buffer; returns how many (each is free for refilling).
  public func unqueueProcessed() -> Int {
    var processed: ALint = 0
    alGetSourcei(source, AL_BUFFERS_PROCESSED, &processed)
    var count = 0
    while count < Int(processed) {
      var buffer: ALuint = 0
      alSourceUnqueueBuffers(source, 1, &buffer)
      freeBuffers.append(buffer)
      count += 1
    }
    return count
  }

  /// Copies `frameCount` interleaved stereo Float32 frames into a free buffer and queues it.
  /// Returns false when no buffer is free or OpenAL refused.
  public func queue(stereo samples: UnsafePointer<Float>, frameCount: Int, sampleRate: Int) -> Bool {
    guard let buffer = freeBuffers.popLast() else { return false }
    alBufferData(buffer, AL_FORMAT_STEREO_FLOAT32, samples, ALsizei(frameCount * 8), ALsizei(sampleRate))
    var name = buffer
    alSourceQueueBuffers(source, 1, &name)
    if OpenAL.takeError() != AL_NO_ERROR {
      freeBuffers.append(buffer)
      return false
    }
    return true
  }

  /// Stops the source and takes every buffer back (for seeks and stops; silent by then).
  public func flush() {
    alSourceStop(source)
    alSourceRewind(source)
    _ = unqueueProcessed()
    // After a stop every queued buffer is processed; this catches any left by an AL error.
    if queuedBufferCount > 0 {
      alSourcei(source, AL_BUFFER, 0)
      freeBuffers = allBuffers
    }
    _ = OpenAL.takeError()
  }

  /// Starts or resumes the source (`alSourcePlay`).
  public func play() { alSourcePlay(source) }
  /// Pauses the source (`alSourcePause`).
  public func pause() { alSourcePause(source) }
  /// Stops the source (`alSourceStop`); its queued buffers become processed.
  public func stop() { alSourceStop(source) }

  /// Linear gain; OpenAL 1.19 ramps a change over the next mix period.
  public func setGain(_ gain: Float) { alSourcef(source, AL_GAIN, max(0, min(1, gain))) }

  /// Playback speed; resamples (speed and pitch change together). Must be finite and > 0.
  public func setPitch(_ pitch: Float) { alSourcef(source, AL_PITCH, pitch) }

  /// The play position within the queued buffers (AL_SAMPLE_OFFSET): frames into the first
  /// queued buffer and beyond.
  public var sampleOffset: Int {
    var value: ALint = 0
    alGetSourcei(source, AL_SAMPLE_OFFSET, &value)
    return Int(value)
  }
}
