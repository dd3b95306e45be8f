// The C API of include/leitmotif.h: with LibraryCAPI.swift (the music library's calls) and
// DesktopCAPI.swift (MPRIS), the one place that talks to C. Each function checks its
// arguments (NULL, UTF-8, ranges), finds its engine in the handle table, calls the Swift API,
// and turns a thrown `CAPIError` into its code and the thread's last-error message. What each
// function promises (threads, string lifetimes) is written in the header.

import CLeitmotifHeader
import FoundationEssentials
import Leitmotif

// MARK: - Plumbing

/// Runs `body` with the live engine of `handle`, or returns LM_ERROR_INVALID_HANDLE; a thrown
/// error becomes its code, and its message the engine's and the thread's last error.
func withEngine(_ handle: OpaquePointer?, _ body: (EngineSession) throws(CAPIError) -> Void) -> lm_error {
  let bits = UInt(bitPattern: Int(bitPattern: handle))
  guard let session = HandleTable.shared.lookup(bits) else {
    ThreadLastError.set(
      handle == nil ? "the engine handle is NULL" : "the engine handle is not a live engine (destroyed, or never made)")
    return LM_ERROR_INVALID_HANDLE
  }
  do {
    try body(session)
    return LM_OK
  } catch {
    ThreadLastError.set(error.message)
    session.setLastError(error.message)
    return error.code
  }
}

/// For the calls that have no engine: a thrown error becomes its code and the thread's message.
func withoutEngine(_ body: () throws(CAPIError) -> Void) -> lm_error {
  do {
    try body()
    return LM_OK
  } catch {
    ThreadLastError.set(error.message)
    return error.code
  }
}

/// `name` is made only for the error (an interpolated name would allocate on every call).
func required<T>(_ pointer: T?, _ name: @autoclosure () -> String) throws(CAPIError) -> T {
  guard let pointer else { throw .invalidArgument("\(name()) is NULL") }
  return pointer
}

/// The calls that wait for one of the engine's threads cannot run on it: from inside one of the
/// engine's own callbacks they are refused.
func notInCallback(_ handle: OpaquePointer?, _ function: String) throws(CAPIError) {
  guard CallbackThread.engine != UInt(bitPattern: Int(bitPattern: handle)) else {
    throw .wrongMode("\(function) was called from inside the engine's own callback: it would wait for itself")
  }
}

/// The caller's struct, checked for a `struct_size` that covers this version's fields (or, where
/// an older version's struct is still read, `minimum`: that version's size).
func checkedSize(_ size: Int, of type: String, _ expected: Int, minimum: Int? = nil) throws(CAPIError) {
  guard size >= (minimum ?? expected) else {
    throw .invalidArgument(
      "\(type).struct_size is \(UInt(bitPattern: size)): set it to sizeof(\(type)) (\(expected) in this version)")
  }
}

/// A `size_t` from C (a count, a capacity, an offset), which Swift sees as `Int`: one of 2^63 or
/// more is negative here, and is refused, named as C has it, before it reaches a range or a
/// buffer. (Such a capacity or offset stopped the process: a range with a negative end traps.)
func cSize(_ value: Int, _ name: String) throws(CAPIError) -> Int {
  guard value >= 0 else {
    throw .invalidArgument(
      "\(name) is \(UInt(bitPattern: value)): more than any buffer holds (a negative number cast to size_t?)")
  }
  return value
}

// MARK: - Errors and versions

@_cdecl("lm_error_name")
public func lmErrorName(_ error: lm_error) -> UnsafePointer<CChar> {
  switch error {
  case LM_OK: return CString.literal("LM_OK")
  case LM_ERROR_INVALID_HANDLE: return CString.literal("LM_ERROR_INVALID_HANDLE")
  case LM_ERROR_INVALID_ARGUMENT: return CString.literal("LM_ERROR_INVALID_ARGUMENT")
  case LM_ERROR_CUE_FILE: return CString.literal("LM_ERROR_CUE_FILE")
  case LM_ERROR_OUTPUT: return CString.literal("LM_ERROR_OUTPUT")
  case LM_ERROR_LIBRARY: return CString.literal("LM_ERROR_LIBRARY")
  case LM_ERROR_BUS_FULL: return CString.literal("LM_ERROR_BUS_FULL")
  case LM_ERROR_WRONG_MODE: return CString.literal("LM_ERROR_WRONG_MODE")
  case LM_ERROR_TOO_MANY_ENGINES: return CString.literal("LM_ERROR_TOO_MANY_ENGINES")
  case LM_ERROR_VERSION: return CString.literal("LM_ERROR_VERSION")
  case LM_ERROR_UNAVAILABLE: return CString.literal("LM_ERROR_UNAVAILABLE")
  case LM_ERROR_AUDIO_FILE: return CString.literal("LM_ERROR_AUDIO_FILE")
  default: return CString.literal("LM_ERROR_UNKNOWN")
  }
}

/// The library's version, LM_VERSION as the header it was built with computes it.
private let libraryVersion = LM_VERSION_MAJOR * 10_000 + LM_VERSION_MINOR * 100 + LM_VERSION_PATCH

@_cdecl("lm_version")
public func lmVersion() -> Int32 { libraryVersion }

/// "1.2.3" for LM_VERSION's 10203.
private func versionText(_ version: Int32) -> String { "\(version / 10_000).\(version / 100 % 100).\(version % 100)" }

/// A program built against `header` can use this library when the major versions are the same
/// and the library is at least as new: within a major version the library only adds.
private func checkHeader(_ header: Int32) throws(CAPIError) {
  // A negative number is no header's (-1 / 10_000 is major 0: it passed as this major version).
  guard header >= 0 else {
    throw CAPIError(
      LM_ERROR_VERSION,
      "header version \(header) is no leitmotif.h's: call lm_engine_create, which passes the header's LM_VERSION")
  }
  guard header / 10_000 == libraryVersion / 10_000, header <= libraryVersion else {
    throw CAPIError(
      LM_ERROR_VERSION,
      "this program was built against leitmotif.h \(versionText(header)), which libleitmotif.so "
        + "\(versionText(libraryVersion)) cannot serve ("
        + (header / 10_000 != libraryVersion / 10_000 ? "another major version" : "a newer header than the library")
        + "): rebuild the game against the installed leitmotif.h, or install libleitmotif \(versionText(header)) or later "
        + "of major version \(header / 10_000)")
  }
}

@_cdecl("lm_last_error")
public func lmLastError() -> UnsafePointer<CChar> { ThreadLastError.current }

@_cdecl("lm_engine_last_error")
public func lmEngineLastError(_ handle: OpaquePointer?) -> UnsafePointer<CChar> {
  guard let session = HandleTable.shared.lookup(UInt(bitPattern: Int(bitPattern: handle))) else {
    return handle == nil
      ? CString.literal("the engine handle is NULL")
      : CString.literal("the engine handle is not a live engine (destroyed, or never made)")
  }
  return session.lastError
}

// MARK: - Creating and destroying

/// `lm_config`'s size in 0.1 (it ended with `diagnostic_user_data`; 0.2 added `latency`).
private let lmConfigSizeBefore0_2 = MemoryLayout<lm_config>.offset(of: \lm_config.latency)!

@_cdecl("lm_engine_create_versioned")
public func lmEngineCreateVersioned(
  _ config: UnsafePointer<lm_config>?, _ out: UnsafeMutablePointer<OpaquePointer?>?, _ headerVersion: Int32
) -> lm_error {
  out?.pointee = nil
  return withoutEngine { () throws(CAPIError) in
    try checkHeader(headerVersion)
    let config = try required(config, "config")
    let out = try required(out, "out")
    // A game built against an older header of this major version passes a shorter struct: what
    // it covers is read, the fields added since keep their zero defaults (`latency`, 0.2).
    let size = UnsafeRawPointer(config).load(as: Int.self)
    try checkedSize(size, of: "lm_config", MemoryLayout<lm_config>.size, minimum: lmConfigSizeBefore0_2)
    var copy = lm_config()
    withUnsafeMutableBytes(of: &copy) { bytes in
      bytes.copyMemory(
        from: UnsafeRawBufferPointer(start: UnsafeRawPointer(config), count: min(size, MemoryLayout<lm_config>.size)))
    }
    let session = try EngineSession(config: copy)
    let bits: UInt
    do throws(CAPIError) {
      bits = try HandleTable.shared.insert(session)
    } catch {
      session.shutdown()
      throw error
    }
    session.callbacks.engineBits.store(bits, ordering: .releasing)
    out.pointee = OpaquePointer(bitPattern: bits)
  }
}

@_cdecl("lm_engine_destroy")
public func lmEngineDestroy(_ handle: OpaquePointer?) -> lm_error {
  let bits = UInt(bitPattern: Int(bitPattern: handle))
  if bits != 0 && CallbackThread.engine == bits {
    let message = "lm_engine_destroy was called from inside one of the engine's own callbacks"
    ThreadLastError.set(message)
    if let session = HandleTable.shared.lookup(bits) { session.setLastError(message) }
    return LM_ERROR_WRONG_MODE
  }
  guard let session = HandleTable.shared.remove(bits) else {
    ThreadLastError.set(
      handle == nil ? "the engine handle is NULL" : "the engine handle is not a live engine (destroyed, or never made)")
    return LM_ERROR_INVALID_HANDLE
  }
  session.shutdown()
  return LM_OK
}

// MARK: - The game's side

@_cdecl("lm_start")
public func lmStart(_ handle: OpaquePointer?, _ state: UnsafePointer<CChar>?) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    let state = try CString.optional(state, "state")
    if let state, session.director.sheet.states[state] == nil {
      throw .invalidArgument("the cue file has no state \"\(state)\"")
    }
    session.start(state: state)
  }
}

@_cdecl("lm_post")
public func lmPost(
  _ handle: OpaquePointer?, _ cue: UnsafePointer<CChar>?, _ payload: UnsafePointer<lm_value>?, _ count: Int
) -> lm_error {
  // Allocation-free when it succeeds (a game may post from its audio callback): the strings
  // are checked in place, then copied into the bus slot's own bytes (`PackedEvent`).
  withEngine(handle) { session throws(CAPIError) in
    let cueBytes = try CString.utf8(cue, "cue")
    _ = try cSize(count, "payload count")
    var size = PackedEvent.size(cueLength: cueBytes.count)
    if count > 0 {
      let payload = try required(payload, "payload (with a count of \(count))")
      var index = 0
      while index < count {
        let value = payload[index]
        let key = try CString.utf8(value.key, "payload[\(index)].key").count
        switch value.type {
        case LM_VALUE_NUMBER:
          guard value.number.isFinite else {
            throw .invalidArgument("payload \"\(String(cString: value.key))\" is not a finite number")
          }
          size += PackedEvent.numberSize(keyLength: key)
        case LM_VALUE_STRING:
          let string = try CString.utf8(
            value.string, "payload \"\(String(cString: value.key))\" string", allowsEmpty: true)
          size += PackedEvent.stringSize(keyLength: key, stringLength: string.count)
        case LM_VALUE_BOOL: size += PackedEvent.boolSize(keyLength: key)
        default:
          throw .invalidArgument(
            "payload \"\(String(cString: value.key))\" has type \(value.type.rawValue): not an lm_value_type")
        }
        index += 1
      }
    }
    let bus = session.director.bus
    guard size <= bus.packedPostBytes else {
      throw .invalidArgument(
        "the post \"\(String(cString: cue!))\" with its payload takes \(size) bytes: one post carries at most "
          + "LM_POST_CAPACITY (\(bus.packedPostBytes)): shorten the strings or send fewer values")
    }
    let posted = bus.post(packedSize: size) { writer in
      writer.begin(cue: cueBytes, valueCount: count)
      var index = 0
      while index < count {
        let value = payload![index]
        let key = UnsafeRawBufferPointer(start: value.key, count: strlen(value.key))
        switch value.type {
        case LM_VALUE_NUMBER: writer.number(key: key, value.number)
        case LM_VALUE_STRING:
          writer.string(key: key, UnsafeRawBufferPointer(start: value.string, count: strlen(value.string)))
        default: writer.bool(key: key, value.boolean != 0)
        }
        index += 1
      }
    }
    guard posted else {
      throw CAPIError(LM_ERROR_BUS_FULL, "the event bus is full: \"\(String(cString: cue!))\" was dropped")
    }
  }
}

@_cdecl("lm_set_parameter")
public func lmSetParameter(
  _ handle: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ value: Double, _ rampSeconds: Double
) -> lm_error {
  // Allocation-free when it succeeds: the name is matched in place against the cue file's.
  withEngine(handle) { session throws(CAPIError) in
    let bytes = try CString.utf8(name, "name")
    guard value.isFinite else {
      throw .invalidArgument("parameter \"\(String(cString: name!))\": the value \(value) is not finite")
    }
    guard rampSeconds.isFinite, rampSeconds >= 0, rampSeconds <= FrameMath.maximumSeconds else {
      throw .invalidArgument(
        "parameter \"\(String(cString: name!))\": ramp_seconds \(rampSeconds) must be 0 to \(Int(FrameMath.maximumSeconds)) (one day)"
      )
    }
    guard session.director.setParameter(utf8: bytes, value, rampSeconds: rampSeconds) else {
      throw .invalidArgument("the cue file has no parameter \"\(String(cString: name!))\"")
    }
  }
}

@_cdecl("lm_get_parameter")
public func lmGetParameter(
  _ handle: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<Double>?
) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    let name = try CString.nonEmpty(name, "name")
    let out = try required(out, "out_value")
    guard let value = session.director.parameter(name) else {
      throw .invalidArgument("the cue file has no parameter \"\(name)\"")
    }
    out.pointee = value
  }
}

@_cdecl("lm_update")
public func lmUpdate(_ handle: OpaquePointer?) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    if session.engine.isOffline {
      throw .wrongMode("lm_update on an offline engine: lm_render advances it")
    }
    guard session.director.clocking == .pumped else {
      throw .wrongMode("lm_update on an engine with its own director thread (LM_CLOCKING_OWN_THREAD)")
    }
    session.director.update()
  }
}

@_cdecl("lm_render")
public func lmRender(_ handle: OpaquePointer?, _ buffer: UnsafeMutablePointer<Float>?, _ frames: Int) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    guard session.engine.isOffline else {
      throw .wrongMode("lm_render on a real-time engine: only LM_OUTPUT_OFFLINE engines render on demand")
    }
    // 2^31 frames (12 hours at 48 kHz) per call is far beyond any buffer; above it, a bad size.
    guard try cSize(frames, "frames") <= Int(Int32.max) else {
      throw .invalidArgument("frames \(frames) is out of range: at most \(Int32.max) a call")
    }
    // 0 frames renders nothing and needs no buffer (the header says so): NULL is fine then.
    guard frames > 0 else { return }
    let buffer = try required(buffer, "buffer")
    session.render(into: buffer, frames: frames)
  }
}

@_cdecl("lm_get_sample_rate")
public func lmGetSampleRate(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    try required(out, "out_sample_rate").pointee = Int32(session.engine.sampleRate)
  }
}

// MARK: - What is playing

@_cdecl("lm_now_playing")
public func lmNowPlaying(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<lm_now_playing_info>?) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    let out = try required(out, "out")
    let size = UnsafeRawPointer(out).load(as: Int.self)
    try checkedSize(size, of: "lm_now_playing_info", MemoryLayout<lm_now_playing_info>.size)
    let player = session.director.player
    let now = session.director.nowPlaying
    // Written in place: the struct is about 5 KB of arrays, and the caller's memory is where
    // the strings must end up anyway.
    let info = out
    info.pointee.struct_size = MemoryLayout<lm_now_playing_info>.size
    info.pointee.has_item = now == nil ? 0 : 1
    var cut = false
    cut = CString.copy(now.map { $0.item.displayName }, into: &info.pointee.title) || cut
    cut = CString.copy(now?.item.artist, into: &info.pointee.artist) || cut
    cut = CString.copy(path: now?.item.assetURL.path, into: &info.pointee.path) || cut
    cut = CString.copy(now?.source, into: &info.pointee.source) || cut
    cut = CString.copy(session.director.audibleState, into: &info.pointee.audible_state) || cut
    info.pointee.truncated = cut ? 1 : 0
    info.pointee.is_user_music = now?.isUserMusic == true ? 1 : 0
    info.pointee.playback_state = playbackState(player.playbackState)
    info.pointee.position_seconds = session.director.nowPlayingPosition
    info.pointee.duration_seconds = now?.item.playbackDuration ?? -1
    info.pointee.rate = player.currentPlaybackRate
    info.pointee.volume = player.volume
  }
}

private func playbackState(_ state: PlaybackState) -> lm_playback_state {
  switch state {
  case .stopped: return LM_PLAYBACK_STOPPED
  case .playing: return LM_PLAYBACK_PLAYING
  case .paused: return LM_PLAYBACK_PAUSED
  case .interrupted: return LM_PLAYBACK_INTERRUPTED
  case .seekingForward: return LM_PLAYBACK_SEEKING_FORWARD
  case .seekingBackward: return LM_PLAYBACK_SEEKING_BACKWARD
  }
}

@_cdecl("lm_get_state")
public func lmGetState(
  _ handle: OpaquePointer?, _ current: UnsafeMutablePointer<CChar>?, _ currentSize: Int,
  _ audible: UnsafeMutablePointer<CChar>?, _ audibleSize: Int
) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    for (buffer, size, name) in [(current, currentSize, "current"), (audible, audibleSize, "audible")] {
      _ = try cSize(size, "\(name)_size")
      guard (buffer == nil) == (size == 0) else {
        throw .invalidArgument("\(name) is \(buffer == nil ? "NULL with a size of \(size)" : "a buffer of size 0")")
      }
    }
    if let current { CString.copy(session.director.currentState, into: current, capacity: currentSize) }
    if let audible { CString.copy(session.director.audibleState, into: audible, capacity: audibleSize) }
  }
}

// MARK: - The player

@_cdecl("lm_player_play")
public func lmPlayerPlay(_ handle: OpaquePointer?) -> lm_error {
  withEngine(handle) { $0.director.player.play() }
}

@_cdecl("lm_player_pause")
public func lmPlayerPause(_ handle: OpaquePointer?) -> lm_error {
  withEngine(handle) { $0.director.player.pause() }
}

@_cdecl("lm_player_set_rate")
public func lmPlayerSetRate(_ handle: OpaquePointer?, _ rate: Float) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    do {
      try session.director.player.setCurrentPlaybackRate(rate)
    } catch {
      throw .invalidArgument("rate \(rate): \(error)")
    }
  }
}

@_cdecl("lm_player_set_tempo")
public func lmPlayerSetTempo(_ handle: OpaquePointer?, _ tempo: Float) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    do {
      try session.director.player.setTempo(tempo)
    } catch {
      throw .invalidArgument("tempo \(tempo): \(error)")
    }
  }
}

@_cdecl("lm_player_seek")
public func lmPlayerSeek(_ handle: OpaquePointer?, _ seconds: Double) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    guard seconds.isFinite, seconds >= 0 else {
      throw .invalidArgument("seek to \(seconds) s: expected a finite time of 0 s or more")
    }
    session.director.player.currentPlaybackTime = seconds
  }
}

@_cdecl("lm_player_set_volume")
public func lmPlayerSetVolume(_ handle: OpaquePointer?, _ volume: Float) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    session.director.player.volume = try checkedVolume(volume)
  }
}

// MARK: - The game's commands

/// Seconds from C for a fade, a crossfade or a ramp: 0 to one day (`FrameMath.maximumSeconds`),
/// as the cue file allows. Longer is a slip (1e308 for 1.308) that would fade in forever.
func checkedSeconds(_ seconds: Double, _ name: String) throws(CAPIError) -> Double {
  guard seconds.isFinite, seconds >= 0, seconds <= FrameMath.maximumSeconds else {
    throw .invalidArgument(
      "\(name) \(seconds): expected 0 to \(Int(FrameMath.maximumSeconds)) seconds (one day)")
  }
  return seconds
}

/// A volume from C: 0 to 1.
func checkedVolume(_ volume: Float) throws(CAPIError) -> Float {
  guard volume.isFinite, (0...1).contains(volume) else { throw .invalidArgument("volume \(volume): expected 0 to 1") }
  return volume
}

/// A state or source name from C that the cue file has (`kind` names the argument and the list).
private func known(_ pointer: UnsafePointer<CChar>?, _ kind: String, in names: [String]) throws(CAPIError) -> String {
  let name = try CString.nonEmpty(pointer, kind)
  guard names.contains(name) else {
    throw .invalidArgument(
      "the cue file has no \(kind) \"\(name)\""
        + (names.isEmpty ? " (it has none)" : " (it has: \(names.sorted().joined(separator: ", ")))"))
  }
  return name
}

func moment(_ at: lm_moment) throws(CAPIError) -> TransitionSpec.Moment {
  switch at {
  case LM_AT_NOW: return .now
  case LM_AT_BEAT: return .beat
  case LM_AT_BAR: return .bar
  case LM_AT_END: return .end
  default: throw .invalidArgument("at \(at.rawValue): expected LM_AT_NOW, LM_AT_BEAT, LM_AT_BAR or LM_AT_END")
  }
}

@_cdecl("lm_stop")
public func lmStop(_ handle: OpaquePointer?, _ fadeSeconds: Double) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    session.director.perform([.stop(fadeSeconds: try checkedSeconds(fadeSeconds, "fade_seconds"))])
  }
}

@_cdecl("lm_resume")
public func lmResume(_ handle: OpaquePointer?, _ fadeSeconds: Double) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    session.director.perform([.resume(fadeSeconds: try checkedSeconds(fadeSeconds, "fade_seconds"))])
  }
}

@_cdecl("lm_set_state")
public func lmSetState(_ handle: OpaquePointer?, _ state: UnsafePointer<CChar>?, _ seconds: Double, _ at: lm_moment)
  -> lm_error
{
  withEngine(handle) { session throws(CAPIError) in
    let state = try known(state, "state", in: Array(session.director.sheet.states.keys))
    let transition = TransitionSpec(seconds: try checkedSeconds(seconds, "seconds"), moment: try moment(at))
    session.director.perform([.changeState(state, transition: transition)])
  }
}

@_cdecl("lm_play_stinger")
public func lmPlayStinger(_ handle: OpaquePointer?, _ source: UnsafePointer<CChar>?, _ at: lm_moment, _ volume: Float)
  -> lm_error
{
  withEngine(handle) { session throws(CAPIError) in
    let source = try known(source, "source", in: Array(session.director.sheet.sources.keys))
    let when = try moment(at)
    // As in the cue file: a stinger plays now or on the grid; "the end of the item" is a time
    // for music changes, and a stinger given it played at once, silently.
    guard when != .end else {
      throw .invalidArgument("at LM_AT_END: a stinger plays at LM_AT_NOW, LM_AT_BEAT or LM_AT_BAR")
    }
    let stinger = StingerAction(sound: source, isSource: true, moment: when, volume: try checkedVolume(volume))
    session.director.perform([.stinger(stinger)])
  }
}

/// A music file's path as lm_preload and lm_unload take it: a relative one names a file of the
/// cue file's assets folder, as its sources give it, when there is one there (on disk or in a
/// mount); else it is as given. ("stinger-victory.ogg" was looked for in the working folder.)
private func musicPath(_ path: String, _ session: EngineSession) -> String {
  guard !path.hasPrefix("/") else { return path }
  let inAssets = session.director.sheet.assetsDirectory.appendingPathComponent(path).path
  return FileManager.default.fileExists(atPath: inAssets) || MountedFiles.kind(of: inAssets) != nil ? inAssets : path
}

@_cdecl("lm_preload")
public func lmPreload(_ handle: OpaquePointer?, _ path: UnsafePointer<CChar>?) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    let path = musicPath(try CString.nonEmpty(path, "path"), session)
    do throws(PreloadError) {
      try session.engine.preload(path)
    } catch {
      throw CAPIError(LM_ERROR_AUDIO_FILE, error.description)
    }
  }
}

@_cdecl("lm_unload")
public func lmUnload(_ handle: OpaquePointer?, _ path: UnsafePointer<CChar>?) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    let path = musicPath(try CString.nonEmpty(path, "path"), session)
    guard session.engine.unload(path) else {
      throw .invalidArgument("\(FileSystemPath.displayed(path)) is not preloaded")
    }
  }
}

@_cdecl("lm_set_preload_budget")
public func lmSetPreloadBudget(_ handle: OpaquePointer?, _ bytes: Int) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    // size_t arrives as Int: a value past Int.max (a negative one from a signed mistake) is refused.
    guard bytes >= 0 else {
      throw .invalidArgument("bytes \(UInt(bitPattern: bytes)) is beyond what an engine can hold")
    }
    session.engine.preloadBudgetBytes = bytes
  }
}

@_cdecl("lm_skip")
public func lmSkip(_ handle: OpaquePointer?, _ direction: lm_skip_direction) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    let skip: SkipDirection
    switch direction {
    case LM_SKIP_NEXT: skip = .next
    case LM_SKIP_PREVIOUS: skip = .previous
    case LM_SKIP_BEGINNING: skip = .beginning
    default:
      throw .invalidArgument(
        "direction \(direction.rawValue): expected LM_SKIP_NEXT, LM_SKIP_PREVIOUS or LM_SKIP_BEGINNING")
    }
    session.director.perform([.skip(skip, transition: nil)])
  }
}

@_cdecl("lm_set_music_volume")
public func lmSetMusicVolume(_ handle: OpaquePointer?, _ volume: Float, _ rampSeconds: Double) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    session.director.perform([
      .volume(try checkedVolume(volume), rampSeconds: try checkedSeconds(rampSeconds, "ramp_seconds"))
    ])
  }
}

@_cdecl("lm_set_master_volume")
public func lmSetMasterVolume(_ handle: OpaquePointer?, _ volume: Float, _ rampSeconds: Double) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    session.engine.setMasterGain(
      try checkedVolume(volume), rampSeconds: try checkedSeconds(rampSeconds, "ramp_seconds"))
  }
}

// MARK: - The library

func authorization(_ status: AuthorizationStatus) -> lm_authorization {
  switch status {
  case .notDetermined: return LM_AUTHORIZATION_NOT_DETERMINED
  case .denied: return LM_AUTHORIZATION_DENIED
  case .restricted: return LM_AUTHORIZATION_RESTRICTED
  case .authorized: return LM_AUTHORIZATION_AUTHORIZED
  }
}

@_cdecl("lm_library_authorization_status")
public func lmLibraryAuthorizationStatus(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<lm_authorization>?)
  -> lm_error
{
  withEngine(handle) { session throws(CAPIError) in
    try required(out, "out_status").pointee = authorization(session.library.authorizationStatus)
  }
}

@_cdecl("lm_library_request_authorization")
public func lmLibraryRequestAuthorization(
  _ handle: OpaquePointer?, _ prompt: lm_prompt_fn?, _ userData: UnsafeMutableRawPointer?,
  _ out: UnsafeMutablePointer<lm_authorization>?
) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    let status = try session.requestAuthorization(prompt, userData)
    out?.pointee = authorization(status)
  }
}

// MARK: - Notifications

@_cdecl("lm_set_report_callback")
public func lmSetReportCallback(
  _ handle: OpaquePointer?, _ callback: lm_report_fn?, _ userData: UnsafeMutableRawPointer?
)
  -> lm_error
{
  withEngine(handle) { $0.callbacks.setReport(callback, userData) }
}

@_cdecl("lm_set_report_timing")
public func lmSetReportTiming(_ handle: OpaquePointer?, _ timing: lm_report_timing) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    switch timing {
    case LM_REPORTS_WHEN_DECIDED: try session.setReportTiming(.whenDecided)
    case LM_REPORTS_WHEN_HEARD: try session.setReportTiming(.whenHeard)
    default:
      throw .invalidArgument("timing \(timing.rawValue): not an lm_report_timing value")
    }
  }
}

@_cdecl("lm_set_authorization_callback")
public func lmSetAuthorizationCallback(
  _ handle: OpaquePointer?, _ callback: lm_authorization_fn?, _ userData: UnsafeMutableRawPointer?
) -> lm_error {
  withEngine(handle) { $0.observeConsent(callback, userData) }
}

@_cdecl("lm_set_beat_callback")
public func lmSetBeatCallback(
  _ handle: OpaquePointer?, _ callback: lm_beat_fn?, _ userData: UnsafeMutableRawPointer?
) -> lm_error {
  withEngine(handle) { $0.callbacks.setBeat(callback, userData) }
}

@_cdecl("lm_set_marker_callback")
public func lmSetMarkerCallback(
  _ handle: OpaquePointer?, _ callback: lm_marker_fn?, _ userData: UnsafeMutableRawPointer?
) -> lm_error {
  withEngine(handle) { $0.callbacks.setMarker(callback, userData) }
}

@_cdecl("lm_set_diagnostic_callback")
public func lmSetDiagnosticCallback(
  _ handle: OpaquePointer?, _ callback: lm_diagnostic_fn?, _ userData: UnsafeMutableRawPointer?
) -> lm_error {
  withEngine(handle) { $0.callbacks.setDiagnostic(callback, userData) }
}

@_cdecl("lm_flush_reports")
public func lmFlushReports(_ handle: OpaquePointer?) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    try notInCallback(handle, "lm_flush_reports")
    session.director.waitForReports()
    session.beatQueue.sync {}
  }
}
