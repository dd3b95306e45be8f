import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A thread of its own (a detached pthread) for one of Leitmotif's long-lived loops: the engine's
/// streaming, notification, loader and decode threads, the library's and the director's.
///
/// Why not Foundation's `Thread`: the library targets import only FoundationEssentials, which has
/// no `Thread` (full Foundation on Linux brings CoreFoundation and ICU, about 40 MB, into a
/// statically linked libLeitmotifC). This is the part of `Thread` Leitmotif used: start a closure
/// on a new detached thread with the default stack, ask whether it has finished, and whether the
/// calling thread is it. It lives here, beside `nameCurrentThread`, as the lowest layer the
/// thread-starting layers (Engine, Library, Cues) all see; its body names the thread itself.
///
/// `isFinished` turns true only after the body has been released, with everything it captured:
/// whoever waits for the thread to finish can count on the thread holding nothing more (a
/// service thread that held the last reference to an engine has freed its OpenAL objects by
/// then, and a program that exits next does not free them while OpenAL tears itself down).
///
/// Thread safety: `start` once, from one thread; `isFinished` and `isCurrent` from any thread.
package final class NativeThread: Sendable {
  /// Taken by the thread when it starts, so that it is released on the thread before `finished`.
  private let body: Mutex<(@Sendable () -> Void)?>
  private let finished = Atomic<Bool>(false)
  /// The thread's `pthread_t`, stored by the thread itself before `body` runs (0 until then), so
  /// `isCurrent` is right from the body's first line, before `pthread_create` has returned.
  private let id = Atomic<UInt>(0)

  /// A thread that will run `body` once `start()` is called.
  package init(_ body: @escaping @Sendable () -> Void) { self.body = Mutex(body) }

  /// Whether `body` has returned and been released.
  package var isFinished: Bool { finished.load(ordering: .acquiring) }

  /// Whether the calling thread is this one. A `pthread_t` is unique only among live threads
  /// (the kernel reuses it after a detached thread ends), so an ended thread is never current.
  package var isCurrent: Bool { !isFinished && pthread_equal(id.load(ordering: .acquiring), pthread_self()) != 0 }

  /// Starts the thread. It holds this object until `body` returns, so the caller need not.
  package func start() {
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    let context = Unmanaged.passRetained(self).toOpaque()
    var thread = pthread_t()
    let result = pthread_create(
      &thread, &attributes,
      { context in
        let thread = Unmanaged<NativeThread>.fromOpaque(context!).takeRetainedValue()
        thread.id.store(pthread_self(), ordering: .releasing)
        do {
          let body = thread.body.withLock { body in
            defer { body = nil }
            return body
          }
          body?()
        }  // The body and its captures are released here, on this thread.
        thread.finished.store(true, ordering: .releasing)
        return nil
      }, context)
    // Out of threads (EAGAIN) or memory: the engine cannot run without the loop it asked for.
    guard result == 0 else {
      Unmanaged<NativeThread>.fromOpaque(context).release()
      fatalError("cannot start a thread: \(String(cString: strerror(result)))")
    }
  }
}
