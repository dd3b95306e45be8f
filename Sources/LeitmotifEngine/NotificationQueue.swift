import Dispatch
import Synchronization

/// The serial queue a player (or the director) hands its events to observers on, in the order
/// they happened, off the caller's and the mixer's threads.
///
/// Why a type of its own: `waitUntilDelivered` is `DispatchQueue.sync {}`, and an observer that
/// calls it on its own queue (a handler that calls `player.waitForNotifications()`) made
/// libdispatch stop the process ("dispatch_sync called on queue already owned by current
/// thread"). The queue knows itself by a queue-specific key, and from inside a delivery waits
/// for nothing: every earlier event has reached the observers by then, the later ones come after
/// the handler returns.
package final class NotificationQueue: @unchecked Sendable {
  private let queue: DispatchQueue
  /// Set on `queue` only. (`DispatchSpecificKey` is not `Sendable`; it is only read.)
  private let key = DispatchSpecificKey<Bool>()

  package init(label: String) {
    queue = DispatchQueue(label: label)
    queue.setSpecific(key: key, value: true)
  }

  /// Whether the calling code runs on this queue (inside a delivery).
  package var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }

  package func async(_ work: @escaping @Sendable () -> Void) { queue.async(execute: work) }

  /// Returns when everything handed over so far has run; at once when called from a delivery.
  package func waitUntilDelivered() {
    guard !isCurrent else { return }
    queue.sync {}
  }
}

/// Values kept until the registry closes: an engine's shutdown hooks, an owner's event streams.
/// `add` after `close` gives nil, so the caller acts at once instead (runs the hook, ends the
/// stream), and nothing registered late waits for a close that has passed.
package final class ClosingRegistry<Value: Sendable>: Sendable {
  private let state = Mutex<(next: UInt64, values: [UInt64: Value], closed: Bool)>((0, [:], false))

  package init() {}

  /// Keeps `value`; its key (from 1), or nil once closed.
  package func add(_ value: Value) -> UInt64? {
    state.withLock { state in
      guard !state.closed else { return nil }
      state.next += 1
      state.values[state.next] = value
      return state.next
    }
  }

  /// Forgets the value of `key` (0 and unknown keys: nothing).
  package func remove(_ key: UInt64) { _ = state.withLock { $0.values.removeValue(forKey: key) } }

  /// Closes the registry and gives what it held, in the order it was added.
  package func close() -> [Value] {
    state.withLock { state in
      state.closed = true
      defer { state.values.removeAll() }
      return state.values.sorted { $0.key < $1.key }.map(\.value)
    }
  }
}

/// The `AsyncStream`s an owner (a player, the director) hands out for its events, so that they
/// can end: when the owner is done (its engine shut down, the director shut down), each stream
/// finishes after the events before, and a `for await` over it returns. Before, they ran on for
/// ever, and a game that awaited its logging task at quit hung.
package final class EventStreams<Element: Sendable>: Sendable {
  private let continuations = ClosingRegistry<AsyncStream<Element>.Continuation>()

  package init() {}

  /// A stream fed by `subscribe` (which registers an observer yielding to it and returns its
  /// token) and unsubscribed with `unsubscribe` when the stream is dropped. After `finish` the
  /// stream it gives is already over.
  package func make(
    subscribe: (@escaping @Sendable (Element) -> Void) -> UInt64, unsubscribe: @escaping @Sendable (UInt64) -> Void
  ) -> AsyncStream<Element> {
    let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .unbounded)
    guard let key = continuations.add(continuation) else {
      continuation.finish()
      return stream
    }
    let token = subscribe { continuation.yield($0) }
    continuation.onTermination = { [weak self] _ in
      unsubscribe(token)
      self?.continuations.remove(key)
    }
    return stream
  }

  /// Ends every stream (those made later end at once). Call it on the owner's notification
  /// queue, so that the events handed over before reach the streams first.
  package func finish() {
    for continuation in continuations.close() { continuation.finish() }
  }
}
