import COpenAL
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The one place Leitmotif talks to OpenAL Soft (1.19.1 on Debian 12: see shared/NOTES.md).
///
/// Every `al*`/`alc*` call in the package is made by a type in this module; each reads the error
/// state right after its group of calls and turns it into an `OutputError` here, once.
///
/// Contexts: Leitmotif never makes a context process-current. Each thread that makes AL calls sets
/// its own with `alcSetThreadContext` (ALC_EXT_thread_local_context), so several engines (a game's
/// and a test's loopback renders) can run in one process at once.
enum OpenAL {
  /// Clears and returns the AL error state of the calling thread's context.
  @inline(__always)
  static func takeError() -> ALenum { alGetError() }

  /// Throws if the last group of AL calls set an error.
  static func check(_ operation: @autoclosure () -> String, device: String? = nil) throws(OutputError) {
    let code = alGetError()
    if code != AL_NO_ERROR {
      throw OutputError(.callFailed, operation: operation(), device: device, code: code)
    }
  }

  static func errorName(_ code: Int32) -> String {
    switch code {
    case AL_INVALID_NAME: return "AL_INVALID_NAME"
    case AL_INVALID_ENUM: return "AL_INVALID_ENUM"
    case AL_INVALID_VALUE: return "AL_INVALID_VALUE"
    case AL_INVALID_OPERATION: return "AL_INVALID_OPERATION"
    case AL_OUT_OF_MEMORY: return "AL_OUT_OF_MEMORY"
    case ALC_INVALID_DEVICE: return "ALC_INVALID_DEVICE"
    case ALC_INVALID_CONTEXT: return "ALC_INVALID_CONTEXT"
    default: return "OpenAL error 0x\(String(code, radix: 16))"
    }
  }
}

/// Decides, once per process and before the first OpenAL call, which backend OpenAL Soft may use.
///
/// OpenAL Soft 1.19 picks its playback backend when it first initialises and never again: if that
/// backend (ALSA, usually) cannot open a device, `alcOpenDevice(NULL)` fails for the rest of the
/// process, and ALSA prints its complaints on stderr. So on a machine with no sign of a sound
/// system (no /dev/snd playback node, no PulseAudio or PipeWire socket) Leitmotif asks for the
/// null backend ("No Output") up front, which still runs in real time. A user's own
/// `ALSOFT_DRIVERS` is always respected. The library never prints, so OpenAL Soft's own logging is
/// silenced unless `ALSOFT_LOGLEVEL` is set.
public enum OpenALRuntime {
  /// What the process-wide OpenAL setup chose before the first device was opened.
  public struct Setup: Sendable {
    /// True when no sound system was found and the null backend was chosen.
    public var choseHeadless: Bool
    /// What was found, for the one-line notice the engine reports.
    public var reason: String
  }

  private static let setup: Setup = {
    if getenv("ALSOFT_LOGLEVEL") == nil { setenv("ALSOFT_LOGLEVEL", "0", 1) }
    if let drivers = getenv("ALSOFT_DRIVERS") {
      let value = String(cString: drivers)
      return Setup(choseHeadless: value == "null", reason: "ALSOFT_DRIVERS=\(value)")
    }
    if soundSystemPresent() { return Setup(choseHeadless: false, reason: "a sound system is present") }
    setenv("ALSOFT_DRIVERS", "null", 1)
    return Setup(choseHeadless: true, reason: "no sound card or sound server found")
  }()

  /// Whether OpenAL Soft was told to write a WAV file instead of playing (its `wave` backend
  /// first in `ALSOFT_DRIVERS`, or in the `drivers` line of the `ALSOFT_CONF` file): every device
  /// is then called "OpenAL Soft" like any other, so this is how the wave writer is told apart.
  public static let writesWaveFile: Bool = {
    func firstIsWave(_ list: Substring) -> Bool {
      list.split(separator: ",").first.map { $0.trimmingWhitespace() == "wave" } ?? false
    }
    if let drivers = getenv("ALSOFT_DRIVERS") { return firstIsWave(Substring(String(cString: drivers))) }
    guard let path = getenv("ALSOFT_CONF").map({ String(cString: $0) }),
      let text = try? String(contentsOfFile: path, encoding: .utf8)
    else { return false }
    for line in text.split(separator: "\n") {
      let parts = line.split(separator: "=", maxSplits: 1)
      if parts.count == 2, parts[0].trimmingWhitespace() == "drivers" { return firstIsWave(parts[1]) }
    }
    return false
  }()

  /// Runs the one-time set-up (idempotent) and says what it decided.
  @discardableResult
  public static func prepare() -> Setup {
    _ = OpenALTeardown.installed
    return setup
  }

  private static func soundSystemPresent() -> Bool {
    if let entries = try? directoryEntries("/dev/snd"),
      entries.contains(where: { $0.hasPrefix("pcmC") && $0.hasSuffix("p") })
    {
      return true
    }
    var sockets: [String] = []
    if let runtime = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }) {
      sockets += ["\(runtime)/pulse/native", "\(runtime)/pipewire-0"]
    }
    if let server = getenv("PULSE_SERVER").map({ String(cString: $0) }), !server.isEmpty { return true }
    return sockets.contains { access($0, F_OK) == 0 }
  }

  private static func directoryEntries(_ path: String) throws -> [String] {
    guard let directory = opendir(path) else { return [] }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
      }
      names.append(name)
    }
    return names
  }
}

/// Keeps Leitmotif's OpenAL frees (a source's, a device's) out of OpenAL Soft's own teardown at
/// process exit.
///
/// OpenAL Soft 1.19's library destructor (`alc_deinit`, run by the dynamic linker after the
/// `atexit` handlers) destroys the lock every device and context call takes; a call after it
/// aborts the process (`ALc.c:800: LockLists: Assertion 'ret == althrd_success' failed`). The
/// engines' threads are stopped before that (`RunningEngines`), but the objects holding OpenAL
/// handles are freed whenever their last reference goes, on whatever thread holds it: `leitmotif
/// play` aborted so, 9 times in 30 on a loaded machine, when its desktop service's thread let go
/// of the engine while `main` returned.
///
/// So a free runs inside `free(_:)`: it counts itself in, unless the process is exiting. This
/// type's `atexit` handler, installed with the first device (after the dynamic linker's, so it
/// runs before OpenAL's destructor), closes the gate and waits for the frees under way (2 s at
/// most). A free that finds the gate closed does nothing: the process is ending, and its memory
/// goes with it.
enum OpenALTeardown {
  /// The frees under way, plus `closedBit` once the process exits.
  private static let state = Atomic<Int>(0)
  private static let closedBit = 1 << 40

  static let installed: Void = { atexit { OpenALTeardown.processExits() } }()

  /// Runs `body` (OpenAL calls that free something) unless the process is exiting.
  static func free(_ body: () -> Void) {
    var current = state.load(ordering: .acquiring)
    while true {
      if current & closedBit != 0 { return }
      let (exchanged, original) = state.compareExchange(
        expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
      if exchanged { break }
      current = original
    }
    body()
    state.subtract(1, ordering: .releasing)
  }

  private static func processExits() {
    state.bitwiseOr(closedBit, ordering: .acquiringAndReleasing)
    var waited = 0
    while state.load(ordering: .acquiring) & (closedBit - 1) != 0, waited < 2000 {
      usleep(1000)
      waited += 1
    }
  }
}
