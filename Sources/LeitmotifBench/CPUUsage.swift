import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// CPU time used so far, from getrusage(2): the whole process (every thread, those that have
/// already exited included) and the calling thread alone (Linux's RUSAGE_THREAD). Subtract two
/// snapshots taken on the same thread to get the CPU time of what happened between them.
struct CPUUsage {
  /// Seconds in user mode and in the kernel, all threads of the process.
  var processUserSeconds: Double
  var processSystemSeconds: Double
  /// User + kernel seconds of the thread that took the snapshot.
  var threadSeconds: Double

  var processSeconds: Double { processUserSeconds + processSystemSeconds }

  /// Linux's RUSAGE_THREAD (sys/resource.h): Swift's Glibc module does not show it (it is
  /// declared only under _GNU_SOURCE).
  private static let rusageThread: Int32 = 1

  static func now() -> CPUUsage {
    var process = rusage()
    var thread = rusage()
    getrusage(RUSAGE_SELF.rawValue, &process)
    getrusage(rusageThread, &thread)
    return CPUUsage(
      processUserSeconds: seconds(process.ru_utime), processSystemSeconds: seconds(process.ru_stime),
      threadSeconds: seconds(thread.ru_utime) + seconds(thread.ru_stime))
  }

  /// What was used between `earlier` and this snapshot.
  func since(_ earlier: CPUUsage) -> CPUUsage {
    CPUUsage(
      processUserSeconds: processUserSeconds - earlier.processUserSeconds,
      processSystemSeconds: processSystemSeconds - earlier.processSystemSeconds,
      threadSeconds: threadSeconds - earlier.threadSeconds)
  }

  private static func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
}

/// /proc/loadavg's first three fields (1, 5 and 15 minutes): how busy the machine was.
func loadAverage() -> String {
  guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "?" }
  return text.split(separator: " ").prefix(3).joined(separator: " ")
}
