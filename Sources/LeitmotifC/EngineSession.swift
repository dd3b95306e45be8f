import CLeitmotifHeader
import Dispatch
import FoundationEssentials
import Leitmotif
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// One C engine: the audio engine, the director for its cue file, the player's library, the
/// callbacks the game set, and the strings handed out to C (kept per calling thread, so that a
/// string one thread holds is not freed by another thread's call).
final class EngineSession: @unchecked Sendable {
  let engine: AudioEngine
  let director: Director
  /// The director's observer that calls the game's report callback, and its timing.
  private let reportObserver: Mutex<(token: UInt64, timing: ReportTiming)>

  /// Reports to the game's callback when decided or when heard (`lm_set_report_timing`): only
  /// before `lm_start`, so that no report is lost or given twice in the change.
  func setReportTiming(_ timing: ReportTiming) throws(CAPIError) {
    guard !director.hasStarted else {
      throw CAPIError(LM_ERROR_WRONG_MODE, "lm_set_report_timing: call it before lm_start (the music has started)")
    }
    let callbacks = self.callbacks
    reportObserver.withLock { observer in
      guard observer.timing != timing else { return }
      director.removeObserver(observer.token)
      observer = (director.addObserver(timing: timing) { callbacks.deliver($0) }, timing)
    }
  }
  let library: MediaLibrary
  let callbacks: Callbacks
  /// The desktop's parts (`lm_desktop_publish`, `lm_system_music_start`).
  let desktop = DesktopSession()
  /// Where an offline engine's beats wait for the game's callback (see `init`).
  let beatQueue = DispatchQueue(label: "leitmotif.c.beats")
  let prompt: ForwardingPrompt
  /// Offline engines: frames rendered so far (the audio clock), under the render lock.
  private let rendered = Mutex<Int64>(0)
  let renderFrames: Int
  /// Who `lm_library_request_authorization` is asking now (one request at a time).
  private let requesting = Mutex<Void>(())

  /// Each calling thread's last error message on this engine, the one string the engine hands
  /// to C and keeps. (What describes the music, lm_now_playing and lm_get_state, is copied into
  /// the caller's buffers instead.)
  private let lastErrors = Mutex<[UInt: OwnedCString]>([:])

  /// Makes an engine from a C configuration (already copied and checked for size).
  init(config: lm_config) throws(CAPIError) {
    let applicationID = try CString.nonEmpty(config.application_id, "application_id")
    let usage = try CString.optional(config.usage_description, "usage_description")
    let cueFile = try CString.nonEmpty(config.cue_file, "cue_file")
    let folder = CString.optionalPath(config.library_folder)
    let capacity = config.bus_capacity == 0 ? LevelEventBus.defaultCapacity : Int(config.bus_capacity)
    guard (2...(1 << 20)).contains(capacity) else {
      throw .invalidArgument("bus_capacity \(config.bus_capacity): expected 2 to 1048576 (0: 4096)")
    }
    let clocking: Director.Clocking
    switch config.clocking {
    case LM_CLOCKING_OWN_THREAD: clocking = .ownThread
    case LM_CLOCKING_PUMPED: clocking = .pumped
    default: throw .invalidArgument("clocking \(config.clocking.rawValue): not an lm_clocking value")
    }
    var renderFrames = 1024
    let output: OutputChoice
    switch config.output {
    case LM_OUTPUT_DEFAULT_DEVICE: output = .defaultDevice
    case LM_OUTPUT_HEADLESS: output = .headless
    case LM_OUTPUT_NAMED_DEVICE:
      output = .namedDevice(try CString.nonEmpty(config.device_name, "device_name"))
    case LM_OUTPUT_OFFLINE:
      let rate = config.sample_rate == 0 ? 48_000 : Int(config.sample_rate)
      renderFrames = config.render_frames == 0 ? 256 : Int(config.render_frames)
      guard (8_000...192_000).contains(rate) else {
        throw .invalidArgument("sample_rate \(config.sample_rate) Hz: expected 8000 to 192000 (0: 48000)")
      }
      guard (16...8_192).contains(renderFrames) else {
        throw .invalidArgument("render_frames \(config.render_frames): expected 16 to 8192 (0: 256)")
      }
      output = .offline(sampleRate: rate, renderFrames: renderFrames)
    default: throw .invalidArgument("output \(config.output.rawValue): not an lm_output_kind value")
    }
    self.renderFrames = renderFrames
    let latency: OutputLatency
    switch config.latency {
    case LM_LATENCY_STANDARD: latency = .standard
    case LM_LATENCY_LOW: latency = .low
    default: throw .invalidArgument("latency \(config.latency.rawValue): not an lm_latency value")
    }

    callbacks = Callbacks()
    callbacks.setDiagnostic(config.diagnostic_callback, config.diagnostic_user_data)
    let callbacks = self.callbacks
    let diagnostics: DiagnosticsHandler = { callbacks.deliver($0) }
    do {
      engine = try AudioEngine(output: output, latency: latency, diagnostics: diagnostics)
    } catch {
      throw CAPIError(LM_ERROR_OUTPUT, "the output could not be opened: \(error)")
    }
    prompt = ForwardingPrompt()
    var configuration = MediaLibrary.Configuration(
      applicationID: applicationID, usageDescription: usage, folders: folder.map { [URL(fileURLWithPath: $0)] })
    configuration.applicationName = applicationID
    library = MediaLibrary(configuration: configuration, prompt: prompt, diagnostics: diagnostics)
    do {
      director = try Director(
        engine: engine, cueFile: cueFile, library: library, clocking: clocking, busCapacity: capacity,
        watchesFile: config.watch_cue_file != 0, packedPostBytes: Int(LM_POST_CAPACITY))
    } catch {
      engine.shutdown()
      throw CAPIError(LM_ERROR_CUE_FILE, "the cue file \(cueFile) cannot be used:\n\(error)")
    }
    reportObserver = Mutex((director.addObserver { callbacks.deliver($0) }, .whenDecided))
    // An offline engine's beats come out of the lm_render call (which may run in the game's own
    // audio callback): they go on to the game from a queue of Leitmotif's, in order.
    let beats = beatQueue
    let offline = engine.isOffline
    director.addBeatObserver { beat in
      if offline { beats.async { callbacks.deliver(beat) } } else { callbacks.deliver(beat) }
    }
    director.addMarkerObserver { marker in
      if offline { beats.async { callbacks.deliver(marker) } } else { callbacks.deliver(marker) }
    }
  }

  deinit {
    lastErrors.withLock { byThread in for message in byThread.values { message.free() } }
  }

  /// Stops everything; after it returns no callback of this engine runs or starts.
  func shutdown() {
    // The player's music apps the game paused are resumed while the bus is still there.
    desktop.shutdown()
    callbacks.close()
    consentObservation.withLock { observation in
      observation?.cancel()
      observation = nil
    }
    director.shutdown()
    director.player.stop()
    director.waitForReports()
    engine.shutdown()
  }

  // MARK: Strings for C

  /// Keeps `message` as the calling thread's last error on this engine (freeing the one before).
  func setLastError(_ message: String) {
    let thread = UInt(pthread_self())
    let owned = OwnedCString(message)
    lastErrors.withLock { byThread in
      byThread[thread]?.free()
      byThread[thread] = owned
    }
  }

  var lastError: UnsafePointer<CChar> {
    let thread = UInt(pthread_self())
    let message = lastErrors.withLock { $0[thread] }
    return message.map { UnsafePointer($0.pointer) } ?? CString.literal("")
  }

  // MARK: Offline rendering

  /// Renders `frames` stereo frames, advancing the director to the audio time of each mix's
  /// first frame, and ending a mix early where a scheduled change is due (as `CueSimulation`).
  func render(into buffer: UnsafeMutablePointer<Float>, frames: Int) {
    let rate = Double(engine.sampleRate)
    rendered.withLock { rendered in
      var done = 0
      while done < frames {
        let deadline = director.advance(toAudioTime: Double(rendered) / rate)
        var count = min(renderFrames, frames - done)
        if let deadline {
          let deadlineFrame = FrameMath.frames(seconds: deadline, rate: rate)
          if deadlineFrame > rendered { count = min(count, Int(deadlineFrame - rendered)) }
        }
        engine.render(into: buffer + 2 * done, frameCount: count)
        done += count
        rendered += Int64(count)
      }
    }
  }

  /// Starts the music; offline, at the render position.
  func start(state: String?) {
    if engine.isOffline {
      let rate = Double(engine.sampleRate)
      rendered.withLock { rendered in
        _ = director.advance(toAudioTime: Double(rendered) / rate, startState: state)
      }
    } else {
      director.start(state: state)
    }
  }

  // MARK: The library

  /// The library's observation while the game has a consent callback (it polls twice a second,
  /// so it runs only while someone listens).
  private let consentObservation = Mutex<AuthorizationObservation?>(nil)

  /// Sets (or, with nil, removes) the game's consent-change callback.
  func observeConsent(_ function: lm_authorization_fn?, _ userData: UnsafeMutableRawPointer?) {
    callbacks.setAuthorization(function, userData)
    let callbacks = self.callbacks
    consentObservation.withLock { observation in
      if function == nil {
        observation?.cancel()
        observation = nil
      } else if observation == nil {
        observation = library.observeAuthorization { callbacks.deliver(authorization($0)) }
      }
    }
  }

  func requestAuthorization(_ function: lm_prompt_fn?, _ userData: UnsafeMutableRawPointer?) throws(CAPIError)
    -> AuthorizationStatus
  {
    try requesting.withLock { _ throws(CAPIError) -> AuthorizationStatus in
      let engine = callbacks.engineBits.load(ordering: .acquiring)
      prompt.set(function.map { CPrompt(function: $0, userData: userData, engine: engine) })
      defer { prompt.set(nil) }
      let status: AuthorizationStatus
      do {
        status = try library.requestAuthorization()
      } catch {
        throw CAPIError(LM_ERROR_LIBRARY, "\(error)")
      }
      director.refreshSources()
      return status
    }
  }
}

/// A C prompt function with its user data, and the engine whose request calls it.
struct CPrompt: @unchecked Sendable {
  var function: lm_prompt_fn
  var userData: UnsafeMutableRawPointer?
  /// The handle's bits: inside the prompt it is one of the engine's callbacks (see `CallbackThread`).
  var engine: UInt
}

/// The library's prompt: the game's C function while a request runs, else the terminal.
final class ForwardingPrompt: AuthorizationPrompt {
  private let current = Mutex<CPrompt?>(nil)

  func set(_ prompt: CPrompt?) { current.withLock { $0 = prompt } }

  func askForLibraryAccess(applicationName: String, usageDescription: String) -> Bool? {
    guard let prompt = current.withLock({ $0 }) else {
      return TerminalPrompt().askForLibraryAccess(applicationName: applicationName, usageDescription: usageDescription)
    }
    // One of the engine's callbacks: destroying the engine from it is refused (the request
    // went on with a destroyed engine and said all was well).
    let answer = CallbackThread.running(engine: prompt.engine) {
      applicationName.withCString { name in
        usageDescription.withCString { usage in prompt.function(name, usage, prompt.userData) }
      }
    }
    switch answer {
    case 1: return true
    case 0: return false
    default: return nil
    }
  }
}

/// The game's callbacks, and the gate that lets `lm_engine_destroy` promise none runs after it.
final class Callbacks: @unchecked Sendable {
  private struct Report: @unchecked Sendable {
    var function: lm_report_fn
    var userData: UnsafeMutableRawPointer?
  }
  private struct DiagnosticCallback: @unchecked Sendable {
    var function: lm_diagnostic_fn
    var userData: UnsafeMutableRawPointer?
  }

  private struct AuthorizationCallback: @unchecked Sendable {
    var function: lm_authorization_fn
    var userData: UnsafeMutableRawPointer?
  }
  private struct BeatCallback: @unchecked Sendable {
    var function: lm_beat_fn
    var userData: UnsafeMutableRawPointer?
  }
  private let beat = Mutex<BeatCallback?>(nil)
  private struct MarkerCallback: @unchecked Sendable {
    var function: lm_marker_fn
    var userData: UnsafeMutableRawPointer?
  }
  private let marker = Mutex<MarkerCallback?>(nil)
  private struct SystemMusicCallback: @unchecked Sendable {
    var function: lm_system_music_fn
    var userData: UnsafeMutableRawPointer?
  }
  private let systemMusic = Mutex<SystemMusicCallback?>(nil)
  private let report = Mutex<Report?>(nil)
  private let diagnostic = Mutex<DiagnosticCallback?>(nil)
  private let authorization = Mutex<AuthorizationCallback?>(nil)
  private let open = Atomic<Bool>(true)
  private let running = Atomic<Int>(0)
  /// The handle's bits, for `CallbackThread` (set once the handle exists).
  let engineBits = Atomic<UInt>(0)

  func setReport(_ function: lm_report_fn?, _ userData: UnsafeMutableRawPointer?) {
    report.withLock { $0 = function.map { Report(function: $0, userData: userData) } }
  }

  func setBeat(_ function: lm_beat_fn?, _ userData: UnsafeMutableRawPointer?) {
    beat.withLock { $0 = function.map { BeatCallback(function: $0, userData: userData) } }
  }

  func deliver(_ musicBeat: MusicBeat) {
    guard let callback = beat.withLock({ $0 }) else { return }
    gated {
      musicBeat.item.displayName.withCString { title in
        var value = lm_beat(
          struct_size: MemoryLayout<lm_beat>.size, time_seconds: musicBeat.seconds, mix_frame: musicBeat.mixFrame,
          bar: Int32(clamping: musicBeat.bar), beat: Int32(clamping: musicBeat.beat),
          beats_per_bar: Int32(clamping: musicBeat.beatsPerBar), title: title)
        callback.function(&value, callback.userData)
      }
    }
  }

  func setMarker(_ function: lm_marker_fn?, _ userData: UnsafeMutableRawPointer?) {
    marker.withLock { $0 = function.map { MarkerCallback(function: $0, userData: userData) } }
  }

  func deliver(_ musicMarker: MusicMarker) {
    guard let callback = marker.withLock({ $0 }) else { return }
    gated {
      musicMarker.item.displayName.withCString { title in
        musicMarker.name.withCString { name in
          var value = lm_marker(
            struct_size: MemoryLayout<lm_marker>.size, time_seconds: musicMarker.seconds,
            mix_frame: musicMarker.mixFrame, file_seconds: musicMarker.fileSeconds, name: name, title: title)
          callback.function(&value, callback.userData)
        }
      }
    }
  }

  func setSystemMusic(_ function: lm_system_music_fn?, _ userData: UnsafeMutableRawPointer?) {
    systemMusic.withLock { $0 = function.map { SystemMusicCallback(function: $0, userData: userData) } }
  }

  func deliver(_ event: SystemMusicEvent) {
    guard let callback = systemMusic.withLock({ $0 }) else { return }
    var app = lm_system_music_app()
    let kind: lm_system_music_event
    var message = ""
    switch event {
    case .appeared(let seen):
      kind = LM_SYSTEM_MUSIC_APPEARED
      fill(&app, with: seen)
    case .changed(let seen):
      kind = LM_SYSTEM_MUSIC_CHANGED
      fill(&app, with: seen)
    case .disappeared(let busName, let identity):
      kind = LM_SYSTEM_MUSIC_DISAPPEARED
      fill(&app, with: nil, busName: busName)
      _ = CString.copy(identity, into: &app.identity)
    case .commandFailed(let busName, let error):
      kind = LM_SYSTEM_MUSIC_COMMAND_FAILED
      fill(&app, with: nil, busName: busName)
      message = "\(error)"
    }
    gated { message.withCString { callback.function(kind, &app, $0, callback.userData) } }
  }

  func setDiagnostic(_ function: lm_diagnostic_fn?, _ userData: UnsafeMutableRawPointer?) {
    diagnostic.withLock { $0 = function.map { DiagnosticCallback(function: $0, userData: userData) } }
  }

  func setAuthorization(_ function: lm_authorization_fn?, _ userData: UnsafeMutableRawPointer?) {
    authorization.withLock { $0 = function.map { AuthorizationCallback(function: $0, userData: userData) } }
  }

  func deliver(_ status: lm_authorization) {
    guard let callback = authorization.withLock({ $0 }) else { return }
    gated { callback.function(status, callback.userData) }
  }

  /// No callback starts after this returns, and none is still running.
  func close() {
    open.store(false, ordering: .sequentiallyConsistent)
    while running.load(ordering: .sequentiallyConsistent) > 0 { usleep(1_000) }
  }

  /// Runs `body` unless closed, counted so that `close` can wait for it.
  private func gated(_ body: () -> Void) {
    running.add(1, ordering: .sequentiallyConsistent)
    defer { running.subtract(1, ordering: .sequentiallyConsistent) }
    guard open.load(ordering: .sequentiallyConsistent) else { return }
    CallbackThread.running(engine: engineBits.load(ordering: .acquiring), body)
  }

  func deliver(_ diagnostic: Diagnostic) {
    guard let callback = self.diagnostic.withLock({ $0 }) else { return }
    let severity: lm_diagnostic_severity
    switch diagnostic.severity {
    case .notice: severity = LM_DIAGNOSTIC_NOTICE
    case .warning: severity = LM_DIAGNOSTIC_WARNING
    case .error: severity = LM_DIAGNOSTIC_ERROR
    }
    gated { diagnostic.message.withCString { callback.function(severity, $0, callback.userData) } }
  }

  func deliver(_ report: DirectorReport) {
    guard let callback = self.report.withLock({ $0 }) else { return }
    let fields = Self.describe(report.kind)
    gated {
      withOptionalCString(report.event?.cue) { cue in
        withOptionalCString(fields.state) { state in
          withOptionalCString(fields.rule) { rule in
            withOptionalCString(fields.title) { title in
              report.description.withCString { text in
                var value = lm_report(
                  struct_size: MemoryLayout<lm_report>.size, time_seconds: report.time, kind: fields.kind, cue: cue,
                  sequence: report.event?.sequence ?? 0, state: state, text: text, rule: rule, title: title,
                  decided_seconds: report.decidedAt, sounding_seconds: report.soundingTime)
                callback.function(&value, callback.userData)
              }
            }
          }
        }
      }
    }
  }

  /// A report's kind and the fields C reads apart from the text.
  private static func describe(_ kind: DirectorReport.Kind)
    -> (kind: lm_report_kind, state: String?, rule: String?, title: String?)
  {
    switch kind {
    case .fired(let rule, _): return (LM_REPORT_FIRED, nil, rule, nil)
    case .ignored: return (LM_REPORT_IGNORED, nil, nil, nil)
    case .stateChanged(_, let to, let item, _, _): return (LM_REPORT_STATE_CHANGED, to, nil, item?.displayName)
    case .scheduled: return (LM_REPORT_SCHEDULED, nil, nil, nil)
    case .fallback(let state, _, _, _): return (LM_REPORT_FALLBACK, state, nil, nil)
    case .stinger(_, let item): return (LM_REPORT_STINGER, nil, nil, item.displayName)
    case .nowPlaying(let item, _, _): return (LM_REPORT_NOW_PLAYING, nil, nil, item.displayName)
    case .musicEnded(let state, let item): return (LM_REPORT_MUSIC_ENDED, state, nil, item?.displayName)
    case .dropped: return (LM_REPORT_DROPPED, nil, nil, nil)
    case .reloaded: return (LM_REPORT_RELOADED, nil, nil, nil)
    case .reloadFailed: return (LM_REPORT_RELOAD_FAILED, nil, nil, nil)
    case .problem: return (LM_REPORT_PROBLEM, nil, nil, nil)
    }
  }
}

func withOptionalCString<T>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> T) -> T {
  guard let string else { return body(nil) }
  return string.withCString { body($0) }
}
