#if canImport(Glibc)
  import Glibc
#endif

/// Names the calling thread for the kernel, so `top -H`, `perf` and `/proc/PID/task/*/comm` tell
/// the engine's threads apart (Foundation's `Thread.name` does not reach the kernel on Linux).
/// At most 15 bytes.
package func nameCurrentThread(_ name: String) {
  name.utf8CString.withUnsafeBufferPointer { ThreadName.write($0.baseAddress!, count: min(15, $0.count - 1)) }
}

/// The calling thread's kernel name, through /proc/thread-self/comm: `pthread_setname_np` and
/// `prctl` are not visible from Swift's Glibc module. A read or write there goes to the kernel,
/// not to a disk.
package enum ThreadName {
  /// Runs `body` with the calling thread named `name`, then gives the thread its own name back.
  /// For calls that start threads of their own (a new thread inherits its creator's name).
  /// Allocates nothing.
  package static func whileNamed(_ name: StaticString, _ body: () -> Void) {
    var saved = (UInt64(0), UInt64(0))
    let length = withUnsafeMutableBytes(of: &saved) { read(into: $0) }
    write(name.utf8Start, count: name.utf8CodeUnitCount)
    body()
    if length > 0 { withUnsafeBytes(of: &saved) { write($0.baseAddress!, count: length) } }
  }

  /// Reads the name into `buffer`; its length without the trailing newline (0 if unreadable).
  private static func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
    let descriptor = open("/proc/thread-self/comm", O_RDONLY)
    guard descriptor >= 0 else { return 0 }
    defer { close(descriptor) }
    let count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
    return count > 1 ? count - 1 : 0
  }

  fileprivate static func write(_ bytes: UnsafeRawPointer, count: Int) {
    let descriptor = open("/proc/thread-self/comm", O_WRONLY)
    guard descriptor >= 0 else { return }
    _ = Glibc.write(descriptor, bytes, count)
    close(descriptor)
  }
}
