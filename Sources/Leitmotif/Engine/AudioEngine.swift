import Foundation
import Synchronization

/// Where the engine's sound goes.
public enum OutputChoice: Sendable, Equatable {
  /// The system's default device; headless (OpenAL Soft's null backend, real time) where there
  /// is no sound card.
  case defaultDevice
  /// A device by its OpenAL name (see `OutputDevice.playbackDeviceNames()`).
  case namedDevice(String)
  /// No sound, in real time, even where a sound card exists (servers, tests): a loopback device
  /// the streaming thread renders on the wall clock and discards.
  case headless
  /// Offline: nothing plays by itself; `render` mixes on demand through the loopback device,
  /// faster than real time and deterministically. `renderFrames` is the size of every mix.
  case offline(sampleRate: Int, renderFrames: Int)
}

/// Leitmotif's audio engine: one output device, the streaming thread that feeds it, a loader
/// that opens files, and the notification thread that reports back.
///
/// Create one per game. Players are made on it (`Player(engine:)`).
///
/// Threads: a real-time engine runs three of its own: streaming (feeds OpenAL; never waits on
/// the game), loading (opens and pre-buffers files: all file opening happens there), and
/// notifications (runs the host's callbacks). An offline engine has none: loading happens
/// in the calling thread and `render` pumps, mixes and delivers callbacks, in that order.
///
/// Thread safety: every method may be called from any thread.
public final class AudioEngine: @unchecked Sendable {
  /// The device in use when the engine started (after a disconnect the engine opens a new one).
  public let initialDevice: OutputDevice
  public let isOffline: Bool
  /// The mixing rate of the output.
  public var sampleRate: Int { initialDevice.sampleRate }

  let commands = CommandQueue<EngineCommand>()
  private let events = CommandQueue<EngineEvent>()
  private let loop: StreamingLoop
  let statuses: [VoiceStatus]
  private let freeSlots: Mutex<[Int]>
  private let listeners = Mutex<[Int: @Sendable (EngineEvent) -> Void]>([:])
  private let diagnostics = Mutex<DiagnosticsHandler?>(nil)
  private let running = RunFlag()
  private let loader = DispatchQueue(label: "leitmotif.loader")
  private let eventSignal = DispatchSemaphore(value: 0)
  private var streamingThread: Thread?
  private var notificationThread: Thread?
  private let renderLock = Mutex<Void>(())
  private let startupNotice: String?
  /// Underruns across all voices since the engine started.
  public var underrunCount: Int { statuses.reduce(0) { $0 + $1.underruns.load(ordering: .relaxed) } }

  /// Opens the output and starts the engine's threads.
  /// - Parameters:
  ///   - output: where the sound goes.
  ///   - diagnostics: receives notices, warnings and errors (the library never prints).
  /// - Throws: `OutputError` when no output at all can be opened (a named device that does not
  ///   exist, or a loopback format OpenAL cannot render). The default device never throws for
  ///   lack of a sound card: it falls back to the headless null output and says so.
  public init(output: OutputChoice = .defaultDevice, diagnostics: DiagnosticsHandler? = nil) throws(OutputError) {
    self.diagnostics.withLock { $0 = diagnostics }
    var notice: String?
    switch output {
    case .offline(let sampleRate, let renderFrames):
      initialDevice = try OutputDevice.openLoopback(sampleRate: sampleRate, renderFrames: renderFrames)
      isOffline = true
    case .headless:
      initialDevice = try OutputDevice.openClockedHeadless()
      isOffline = false
    case .namedDevice(let name):
      initialDevice = try OutputDevice.openPlayback(named: name)
      isOffline = false
    case .defaultDevice:
      do {
        initialDevice = try AudioEngine.openDefaultOutput()
        if initialDevice.kind == .headless {
          notice = "no sound device (\(OpenALRuntime.prepare().reason)): playing headless in real time"
        }
      } catch {
        initialDevice = try OutputDevice.openClockedHeadless()
        notice = "the default sound device could not be opened (\(error)): playing headless in real time"
      }
      isOffline = false
    }
    startupNotice = notice
    statuses = (0..<StreamingLoop.maximumVoices).map { _ in VoiceStatus() }
    freeSlots = Mutex(Array((0..<StreamingLoop.maximumVoices).reversed()))
    let isOffline = self.isOffline
    loop = StreamingLoop(
      device: initialDevice, statuses: statuses, commands: commands, events: events,
      reopenDevice: { isOffline ? nil : try? AudioEngine.openDefaultOutput() }, isOffline: isOffline)
    if let notice { report(Diagnostic(.notice, notice)) }
    if !isOffline { startThreads() }
  }

  deinit {
    running.value.store(false, ordering: .releasing)
    eventSignal.signal()
  }

  /// Stops the engine's threads. Called automatically when the engine is released; call it to
  /// stop sooner (the CLI does on Ctrl-C). Idempotent.
  public func shutdown() {
    guard running.value.exchange(false, ordering: .acquiringAndReleasing) else { return }
    eventSignal.signal()
    while let thread = streamingThread, !thread.isFinished { usleep(1000) }
  }

  /// Sets or replaces the diagnostics handler.
  public func setDiagnosticsHandler(_ handler: DiagnosticsHandler?) { diagnostics.withLock { $0 = handler } }

  private static func openDefaultOutput() throws(OutputError) -> OutputDevice {
    try OutputDevice.openPlayback(named: nil)
  }

  private func startThreads() {
    // The threads hold the loop and queues, not the engine, so releasing the engine stops them.
    let loop = self.loop
    let running = self.running
    let streaming = Thread {
      // Pump every few milliseconds: a tenth of the queued audio, well inside a device period.
      while running.value.load(ordering: .acquiring) {
        loop.pump()
        usleep(4000)
      }
    }
    streaming.name = "leitmotif.streaming"
    streaming.qualityOfService = .userInteractive
    streamingThread = streaming
    let events = self.events
    let signal = self.eventSignal
    let notifications = Thread { [weak self] in
      var batch: [EngineEvent] = []
      while running.value.load(ordering: .acquiring) {
        _ = signal.wait(timeout: .now() + .milliseconds(20))
        events.takeAllWaiting(into: &batch)
        guard let engine = self else { return }
        for event in batch { engine.deliver(event) }
        batch.removeAll(keepingCapacity: true)
      }
    }
    notifications.name = "leitmotif.notifications"
    notificationThread = notifications
    streaming.start()
    notifications.start()
  }

  // MARK: - Offline rendering

  /// Offline engines: pumps the streaming loop, mixes `frameCount` stereo Float32 frames into
  /// `buffer`, then delivers the events of this step on the calling thread.
  /// Keep `frameCount` equal to the `renderFrames` the engine was made with for exact timing.
  public func render(into buffer: UnsafeMutablePointer<Float>, frameCount: Int) {
    precondition(isOffline, "render(into:frameCount:) is for offline engines")
    renderLock.withLock { _ in
      loop.pump()
      loop.device.render(into: buffer, frameCount: frameCount)
      loop.publishPositions()
    }
    deliverPendingEvents()
  }

  private func deliverPendingEvents() {
    var batch: [EngineEvent] = []
    events.takeAllWaiting(into: &batch)
    for event in batch { deliver(event) }
  }

  // MARK: - Voices (used by players)

  func allocateSlot() -> Int? { freeSlots.withLock { $0.popLast() } }

  func releaseSlot(_ slot: Int) {
    commands.post(.release(slot: slot))
    listeners.withLock { $0[slot] = nil }
    freeSlots.withLock { $0.append(slot) }
  }

  func setListener(slot: Int, _ listener: @escaping @Sendable (EngineEvent) -> Void) {
    listeners.withLock { $0[slot] = listener }
  }

  /// Opens `path` (on the loader thread, or right here for an offline engine), seeks to
  /// `startSeconds`, decodes the first buffers, and hands the stream to the streaming thread.
  func load(path: String, startSeconds: Double, slot: Int) {
    let commands = self.commands
    let work: @Sendable () -> Void = {
      commands.post(AudioEngine.openAndPrebuffer(path: path, startSeconds: startSeconds, slot: slot))
    }
    if isOffline { work() } else { loader.async(execute: work) }
  }

  private static func openAndPrebuffer(path: String, startSeconds: Double, slot: Int) -> EngineCommand {
    do {
      let decoder = try AudioFile.openDecoder(path: path)
      let startFrame = Int64((max(0, startSeconds) * Double(decoder.format.sampleRate)).rounded())
      let start = min(startFrame, decoder.lengthFrames)
      if start > 0 { try decoder.seek(toFrame: start) }
      let stream = DecodeAheadStream(decoder: decoder, startFrame: start)
      // Pre-buffer: wait (here, on the loader thread) until the ring holds what the OpenAL
      // buffers will take, so that attaching never waits.
      let deadline = Date().addingTimeInterval(5)
      while stream.availableBlocks < Voice.bufferCount && !stream.initialGenerationEnded && Date() < deadline {
        usleep(500)
      }
      return .attach(slot: slot, LoadedStream(stream: stream, startFrame: start))
    } catch {
      return .loadFailed(slot: slot, error)
    }
  }

  // MARK: - Events

  func report(_ diagnostic: Diagnostic) {
    let handler = diagnostics.withLock { $0 }
    handler?(diagnostic)
  }

  private func deliver(_ event: EngineEvent) {
    switch event {
    case .reclaim: return  // dropping the reference here frees it, off the streaming thread
    case .diagnostic(let diagnostic): report(diagnostic)
    case .deviceLost(let name):
      report(Diagnostic(.warning, "audio device \"\(name)\" disconnected; reopening the default device"))
    case .deviceRestored(let kind, let name):
      report(Diagnostic(.notice, "audio resumed on \"\(name)\"" + (kind == .headless ? " (headless)" : "")))
    case .underrun(let slot):
      report(Diagnostic(.warning, "stream underrun on voice \(slot): restarted"))
      notify(slot: slot, event)
    case .prepared(let slot), .ended(let slot), .failed(let slot, _), .interrupted(let slot, _):
      notify(slot: slot, event)
    }
  }

  private func notify(slot: Int, _ event: EngineEvent) {
    let listener = listeners.withLock { $0[slot] }
    listener?(event)
  }

  /// For tests: behaves as if OpenAL reported the device disconnected (ALC_EXT_disconnect), so
  /// the recovery path (new device, sources refilled at their positions) runs on a machine whose
  /// device cannot really be unplugged.
  func simulateDeviceDisconnect() { commands.post(.simulateDeviceDisconnect) }

  /// For tests: stalls the streaming thread, so that the underrun path runs for real.
  func stallStreamingThread(milliseconds: Int) { commands.post(.stallForTesting(milliseconds: milliseconds)) }
}

/// The engine's threads run while this is true; shared by reference so the threads need not hold
/// the engine itself.
final class RunFlag: Sendable {
  let value = Atomic<Bool>(true)
}
