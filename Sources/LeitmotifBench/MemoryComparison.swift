import Foundation
import Leitmotif

#if canImport(Glibc)
  import Glibc
#endif

/// Peak resident memory of an offline render of a long and of a short file.
///
/// Why child processes: a process's peak RSS never goes down, so measured in the bench itself the
/// second render would inherit the first one's peak (and the file generation's). Each render runs
/// in a fresh process instead: the bench re-executes itself with the hidden `render-child`
/// subcommand.
///
/// Which figure: the child prints its VmHWM from /proc/self/status, the peak of its own address
/// space since the exec, and that is the figure compared. `wait4`'s per-child `ru_maxrss` (not
/// `getrusage(RUSAGE_CHILDREN)`, the maximum over every child ever waited for, `lame` included)
/// is shown too but cannot be used: glibc's `posix_spawn` runs the child in the parent's memory
/// until the exec (clone with CLONE_VM | CLONE_VFORK), and Linux carries the high-water mark of
/// the memory it leaves at exec into the child's `ru_maxrss`. So `ru_maxrss` shows about the
/// bench's own peak at the spawn (printed beside it) whenever the child stays below it. (A plain
/// `fork` would not help: the copy starts with the parent's resident pages counted.)
///
/// What it shows: both children carry the same fixed cost (the Swift runtime, Foundation, OpenAL),
/// so the difference is what the render holds in proportion to the file's length. A streaming
/// render holds a few 4096-frame buffers whatever the length; one that loaded the file would need
/// about 600 MiB more for an hour of stereo Float32.
struct MemoryComparison {
  let shortFile: String
  let shortMinutes: Double
  let longFile: String
  let longMinutes: Double
  let scratchDirectory: String

  struct ChildResult {
    /// wait4's ru_maxrss: max(the bench's peak at the spawn, the child's peak).
    var maxRSSKiB: Int
    /// The bench's own VmHWM just before the spawn: the floor under `maxRSSKiB`.
    var parentPeakKiB: Int?
    /// The child's own peak since the exec: the figure compared.
    var vmHWMKiB: Int?
    var frames: Int64
    var wallSeconds: Double
  }

  func run() throws -> Report {
    progress("rendering the \(String(format: "%g", shortMinutes))-minute file in a child process")
    let short = try Self.renderInChild(file: shortFile, output: "\(scratchDirectory)/memory-short.wav")
    progress("rendering the \(String(format: "%g", longMinutes))-minute file in a child process")
    let long = try Self.renderInChild(file: longFile, output: "\(scratchDirectory)/memory-long.wav")
    return Report(shortMinutes: shortMinutes, short: short, longMinutes: longMinutes, long: long)
  }

  /// The running executable: /proc/self/exe, because `CommandLine.arguments[0]` may be a bare
  /// name found on PATH or relative to a directory the bench has since left.
  static func executablePath() -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard length > 0 else { return CommandLine.arguments[0] }
    return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// Runs `render-child file output` and returns its peak memory. The child's stdout comes back
  /// through a pipe (one short line), so it does not mix into the tables.
  static func renderInChild(file: String, output: String) throws -> ChildResult {
    defer { unlink(output) }
    let executable = executablePath()
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { throw DecodePath.Failure(description: "pipe failed: errno \(errno)") }
    // Close-on-exec, so no other child started meanwhile keeps the pipe open.
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    // dup2 clears close-on-exec on the child's stdout; the originals close with the exec.
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
    let words: [String] = [executable, RenderChild.subcommand, file, output]
    let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let parentPeak = RenderChild.peakResidentKiB()
    let stopwatch = Stopwatch()
    let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
    close(fds[1])
    guard spawned == 0 else {
      close(fds[0])
      throw DecodePath.Failure(description: "cannot start \(executable): errno \(spawned)")
    }
    var text: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = read(fds[0], &chunk, chunk.count)
      if count > 0 { text += chunk[0..<count] } else if count < 0 && errno == EINTR { continue } else { break }
    }
    close(fds[0])
    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
    let seconds = stopwatch.seconds
    // WIFEXITED / WEXITSTATUS are macros Swift cannot see: exited normally when the low 7 bits
    // are 0, with the status in the next 8.
    let exited = status & 0x7f == 0
    let exitStatus = (status >> 8) & 0xff
    let line = String(decoding: text, as: UTF8.self)
    guard exited, exitStatus == 0 else {
      throw DecodePath.Failure(
        description: "render-child \(file) "
          + (exited ? "exited with status \(exitStatus)" : "was killed by signal \(status & 0x7f)")
          + (line.isEmpty ? "" : ": \(line)"))
    }
    let fields = RenderChild.parse(line)
    return ChildResult(
      maxRSSKiB: usage.ru_maxrss,  // Linux: kilobytes
      parentPeakKiB: parentPeak,
      vmHWMKiB: fields["vmhwm_kib"].flatMap { Int($0) },
      frames: fields["frames"].flatMap { Int64($0) } ?? 0,
      wallSeconds: seconds)
  }

  struct Report {
    var shortMinutes: Double
    var short: ChildResult
    var longMinutes: Double
    var long: ChildResult

    func report() -> String {
      func mib(_ kib: Int?) -> String { kib.map { String(format: "%.1f MiB (%d KiB)", Double($0) / 1024, $0) } ?? "?" }
      var table = TextTable(
        ["file", "peak RSS (child's VmHWM)", "wait4 ru_maxrss", "bench's peak at spawn", "render time", "× real time"],
        rightAligned: [1, 2, 3, 4, 5])
      for (minutes, result) in [(shortMinutes, short), (longMinutes, long)] {
        let audioSeconds = Double(result.frames) / Double(BenchFiles.format.sampleRate)
        table.add([
          "Ogg Vorbis q\(String(format: "%.1f", DecodeBenchmark.memoryTestQuality)), \(String(format: "%g", minutes)) min",
          mib(result.vmHWMKiB), mib(result.maxRSSKiB), mib(result.parentPeakKiB),
          String(format: "%.2f s", result.wallSeconds),
          String(format: "%.0f×", audioSeconds / result.wallSeconds),
        ])
      }
      var verdictLine = "difference: ? (a child did not report its VmHWM)"
      if let longPeak = long.vmHWMKiB, let shortPeak = short.vmHWMKiB {
        let difference = longPeak - shortPeak
        let verdict = abs(difference) < DecodeBenchmark.memoryGoalKiB ? "PASS" : "BELOW GOAL"
        verdictLine = String(
          format: "difference in peak RSS (%g min − %g min): %+.1f MiB (%+d KiB)   goal: under %d MiB   %@",
          longMinutes, shortMinutes, Double(difference) / 1024, difference, DecodeBenchmark.memoryGoalKiB / 1024,
          verdict)
      }
      return [
        "Peak resident memory of an offline render (OfflineRenderer to a Float32 WAV), each in its own child process.",
        "Compared: the child's VmHWM (its own memory since exec). wait4's ru_maxrss is shown, but it inherits the bench's",
        "own high-water mark at the spawn (posix_spawn runs the child in the parent's memory until exec): it cannot tell them apart.",
        "Render time includes the child's start-up.",
        "",
        table.render(),
        "",
        verdictLine,
      ].joined(separator: "\n")
    }
  }
}

/// The hidden `render-child FILE OUT` subcommand: one offline render, then one line on stdout,
/// `frames=N vmhwm_kib=K`, for `MemoryComparison` to read.
enum RenderChild {
  static let subcommand = "render-child"

  static func main(_ arguments: [String]) -> Int32 {
    guard arguments.count == 2 else {
      FileHandle.standardError.write(Data("usage: leitmotif-bench \(subcommand) FILE OUT.wav\n".utf8))
      return 2
    }
    do {
      let result = try OfflineRenderer.render(path: arguments[0], to: arguments[1], options: OfflineRenderer.Options())
      if let failure = result.failure {
        print("error=\(failure)")
        return 1
      }
      print("frames=\(result.framesWritten) vmhwm_kib=\(peakResidentKiB().map(String.init) ?? "?")")
      return 0
    } catch {
      print("error=\(error)")
      return 1
    }
  }

  /// VmHWM ("high water mark" of the resident set) from /proc/self/status, in kB.
  static func peakResidentKiB() -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
      // "VmHWM:\t   34448 kB": a tab, padding, the number, the unit.
      return line.dropFirst("VmHWM:".count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { Int($0) }
    }
    return nil
  }

  /// `key=value key=value` into a dictionary.
  static func parse(_ line: String) -> [String: String] {
    var fields: [String: String] = [:]
    for pair in line.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
      guard let equals = pair.firstIndex(of: "=") else { continue }
      fields[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
    }
    return fields
  }
}
