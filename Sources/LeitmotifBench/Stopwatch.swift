#if canImport(Glibc)
  import Glibc
#endif

/// Wall-clock time since creation (CLOCK_MONOTONIC: never steps with the date), and the CPU time
/// the process used meanwhile (CLOCK_PROCESS_CPUTIME_ID, all threads).
///
/// Wall time is what "× real time" means to a game or a render job, so the figures and goals use
/// it. CPU time counts every thread of the process: the raw and engine decoders run on the
/// calling thread alone, while an offline engine also decodes on a thread per voice (its render
/// waits for that decoding, so the two mostly take turns). CPU time is shown beside wall time so
/// a slow run can be told from a descheduled one, and a run that used a second core from one
/// that did not. (It is no cure for a busy machine: a core shared with a build next door also
/// runs slower.)
struct Stopwatch {
  private let startWall: timespec
  private let startCPU: timespec

  init() {
    startWall = Self.now(CLOCK_MONOTONIC)
    startCPU = Self.now(CLOCK_PROCESS_CPUTIME_ID)
  }

  /// Wall seconds since creation.
  var seconds: Double { Self.elapsed(from: startWall, to: Self.now(CLOCK_MONOTONIC)) }
  /// CPU seconds of this process since creation.
  var cpuSeconds: Double { Self.elapsed(from: startCPU, to: Self.now(CLOCK_PROCESS_CPUTIME_ID)) }

  private static func now(_ clock: clockid_t) -> timespec {
    var time = timespec()
    clock_gettime(clock, &time)
    return time
  }

  private static func elapsed(from start: timespec, to end: timespec) -> Double {
    Double(end.tv_sec - start.tv_sec) + Double(end.tv_nsec - start.tv_nsec) / 1e9
  }
}

extension Array where Element == Double {
  /// The median (the mean of the middle two for an even count); nil when empty.
  var median: Double? {
    guard !isEmpty else { return nil }
    let sorted = self.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
  }
}
