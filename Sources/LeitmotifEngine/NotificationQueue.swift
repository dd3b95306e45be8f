import Dispatch

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
