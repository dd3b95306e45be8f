#if canImport(Glibc)
  import Glibc
#endif

/// A higher scheduling priority for the thread that keeps the sound card fed.
///
/// Why: at the default priority the streaming thread shares the CPU evenly with everything the
/// machine runs; on a loaded machine (a level loading, a build, a sound server starting up) it
/// can be held off long enough for OpenAL to play everything it had, and the music drops out.
/// A negative nice value (-15) makes the kernel's fair scheduler run it first when it wakes and
/// give it many times a normal thread's share: it sleeps most of the time (a device period is
/// mixed in well under a millisecond), so it takes little from anyone. PulseAudio asks for the
/// same when it cannot have real-time scheduling (nice -11).
///
/// Why not real-time scheduling (SCHED_FIFO), as OpenAL Soft's own `rt-prio` gives its mixer:
/// OpenAL Soft 1.19 makes a caller that asks a source's offset (`AL_SAMPLE_OFFSET`, which the
/// music bus asks at every pump) or the device clock wait for the mix in progress by spinning on
/// `sched_yield` (alSource.c, `GetSourceSampleOffset`). A real-time thread that woke on the CPU
/// where OpenAL's mixer (a normal thread unless `rt-prio` is set) was mid-mix would yield only to
/// other real-time threads: it would spin, and the mixer it waits for would not run there, until
/// the kernel moved one of them. A fair-scheduled thread's yield lets the mixer run.
///
/// The kernel grants a negative nice value to a process with CAP_SYS_NICE (root, on most
/// machines) or an RLIMIT_NICE that allows it (limits.conf's `nice`, often given to the audio
/// group); the lowest the limit allows is taken when -15 is not, and elsewhere the thread runs
/// at the normal 0. (On Linux the nice value belongs to a thread, not to the whole process.)
package enum ThreadPriority {
  /// The streaming thread's nice value, where allowed.
  package static let streamingNice: Int32 = -15

  /// Lowers the calling thread's nice value to `nice`, or as near to it as the process may go;
  /// returns the nice value it runs at after (0 when the kernel refused any change). Allocates
  /// nothing.
  package static func raiseCurrent(toNice nice: Int32) -> Int32 {
    if setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice) == 0 { return currentNice }
    // RLIMIT_NICE lets an unprivileged process go down to 20 - the limit.
    var limit = rlimit()
    guard getrlimit(__rlimit_resource_t(__RLIMIT_NICE.rawValue), &limit) == 0, limit.rlim_cur > 20 else {
      return currentNice
    }
    let lowest = max(nice, 20 - Int32(min(limit.rlim_cur, 40)))
    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, lowest)
    return currentNice
  }

  /// The calling thread's nice value.
  package static var currentNice: Int32 {
    getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
  }

  /// Runs `body` with the calling thread at the normal nice value 0, then lowers it again to
  /// what it was. For calls that start threads of their own (a thread inherits its creator's
  /// nice value): OpenAL Soft's threads for a device reopened after a loss run as they did when
  /// the game opened the first device.
  package static func whileNormal<Result>(_ body: () -> Result) -> Result {
    let nice = currentNice
    guard nice != 0 else { return body() }
    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 0)
    defer { _ = raiseCurrent(toNice: nice) }
    return body()
  }
}
