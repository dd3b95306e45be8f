import Foundation
import LeitmotifOutput
import Synchronization
import Testing

@Suite("NativeThread: a finished thread holds nothing")
struct NativeThreadTests {
  /// Something a thread's body captures, whose release takes a while (as an engine's does).
  final class SlowToRelease: Sendable {
    let released: Box
    init(_ released: Box) { self.released = released }
    deinit {
      usleep(50_000)
      released.flag.store(true, ordering: .releasing)
    }
  }

  @Test("A thread counts as finished only after its body, and what the body captured, has been released")
  func releasesBeforeFinished() {
    let released = Box()
    let thread: NativeThread
    do {
      let captured = SlowToRelease(released)
      thread = NativeThread { _ = captured }
    }
    thread.start()
    let deadline = Date().addingTimeInterval(5)
    while !thread.isFinished, Date() < deadline { usleep(1000) }
    #expect(thread.isFinished)
    let wasReleased = released.flag.load(ordering: .acquiring)
    #expect(wasReleased, "finished while its body's captures were still held")
  }

  final class Box: Sendable {
    let flag = Atomic<Bool>(false)
  }
}
