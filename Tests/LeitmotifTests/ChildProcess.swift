import Foundation
import LeitmotifDecoding

#if canImport(Glibc)
  import Glibc
#endif

struct SpawnFailure: Error, CustomStringConvertible {
  var description: String
}

/// A child process started with posix_spawn, its stderr collected in a file (stdout to a file,
/// or discarded), for tests that start servers (PulseAudio, tmux). Not Foundation's `Process`:
/// it starts children with the calling thread's signal mask (a test's worker thread blocks most
/// signals, so SIGINT and SIGTERM would never reach them), and on Linux its monitor thread can
/// block in wait4 on one long-lived child and never reap another, so `waitUntilExit` hangs.
final class ChildProcess {
  private var pid: pid_t = 0
  private let errorsPath: String
  private var collected: String?
  private var status: Int32 = -1

  convenience init(_ executable: URL?, _ arguments: [String], environment: [String: String], output: String? = nil)
    throws
  {
    guard let executable else { throw LeitmotifCommand.NotBuilt() }
    try self.init(executable.path, arguments, environment: environment, output: output)
  }

  init(_ executable: String?, _ arguments: [String], environment: [String: String], output: String? = nil) throws {
    guard let executable else { throw SpawnFailure(description: "no executable for \(arguments)") }
    errorsPath = NSTemporaryDirectory() + "/leitmotif-child-\(UUID().uuidString).err"
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, output ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_addopen(&actions, 2, errorsPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    // The arguments' own bytes (`FileSystemPath`): a test may name a file that is not UTF-8.
    let argv = ([executable] + arguments).map { FileSystemPath.withCString($0) { strdup($0) } } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
      argv.forEach { free($0) }
      envp.forEach { free($0) }
    }
    // The test's threads block signals; a child must start with none blocked and default handlers,
    // or SIGINT and SIGTERM never reach it.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t()
    sigemptyset(&none)
    var all = sigset_t()
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setsigdefault(&attributes, &all)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
    guard result == 0 else { throw SpawnFailure(description: "cannot start \(executable): errno \(result)") }
  }

  deinit {
    kill()
    finish()
    unlink(errorsPath)
  }

  private func signal(_ number: Int32) { if collected == nil && pid > 0 { Glibc.kill(pid, number) } }
  func kill() { signal(SIGKILL) }
  func terminate() { signal(SIGTERM) }
  func interrupt() { signal(SIGINT) }
  func hangUp() { signal(SIGHUP) }

  /// Waits for the end and returns what it wrote to stderr (or, with `status`, its exit status).
  @discardableResult
  func finish(status asStatus: Bool = false) -> String {
    if collected == nil {
      var raw: Int32 = 0
      while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
      status = (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
      collected = (try? String(contentsOfFile: errorsPath, encoding: .utf8)) ?? ""
    }
    return asStatus ? String(status) : collected!
  }
}
