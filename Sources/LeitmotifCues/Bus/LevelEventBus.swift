import Dispatch
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers
import Synchronization

/// Carries gameplay events from any number of game threads to one consumer (the music director),
/// in the order they were accepted, without ever making a poster wait.
///
/// ## Posting
/// ``post(_:_:)`` never blocks, never takes a lock and never allocates: it claims a slot with one
/// compare-exchange, stores the event, and publishes it. It makes a system call only when the
/// consumer is asleep in `waitForPost(timeout:)` and this post is the one that wakes it.
///
/// ## Overflow policy: drop the newest
/// The bus holds at most ``capacity`` events that the consumer has not yet taken. A post that finds
/// it full drops *its own* event and returns `false`; events already accepted are never overwritten
/// or reordered, so what the consumer sees is always a gap-free prefix of the accepted stream
/// (``LevelEvent/sequence`` 1, 2, 3, …). Every drop is counted: ``droppedCount`` for the lifetime
/// total, and `takeNewDrops()` for the consumer to report "N events dropped" at the point in the
/// stream where it noticed them. A game that must not lose a cue can check the `Bool` and retry.
///
/// ## Thread safety
/// - `post`, ``droppedCount``, ``postedCount``, `wakeConsumer()`: any thread, any number at once.
/// - `takeNext()`, `drain(into:limit:)`, `takeNewDrops()`, `waitForPost(timeout:)`: exactly one
///   consumer thread at a time. Handing the consumer role to another thread is allowed when the
///   hand-over itself is ordered (for example the old thread finishes before the new one starts);
///   two threads consuming at once is a programming error and stops the program (checked, not hoped for).
///
/// ## Design
/// A bounded ring in the style of Dmitry Vyukov's bounded MPMC queue, with the consumer side
/// simplified for a single consumer. Each slot carries an atomic sequence number that says whose
/// turn it is: for the slot of ticket `t`,
/// - `t`: free, the poster holding ticket `t` may write it;
/// - `t + 1`: written and published, the consumer may read it;
/// - `t + capacity`: read and freed by the consumer, free for ticket `t + capacity` (next lap).
/// A poster only claims a ticket (compare-exchange on `enqueueTicket`) after seeing its slot free,
/// so a full ring is detected without claiming anything, and a dropped event consumes no number.
public final class LevelEventBus: Sendable {
  /// The capacity a bus gets when none is given: several seconds of even a very chatty game.
  public static let defaultCapacity = 4096

  /// How many events the bus holds that the consumer has not taken yet; posts beyond it are dropped.
  /// A power of two, at least 2 (the requested capacity rounded up).
  public let capacity: Int

  /// `capacity - 1`: ticket `t` lives in slot `t & slotMask`.
  private let slotMask: Int
  /// Each slot's turn (see the type's Design notes). Allocated once in init, freed in deinit.
  nonisolated(unsafe) private let turns: UnsafeMutablePointer<Atomic<Int>>
  /// Each slot's event: written only by the poster that holds the slot's turn, read and cleared
  /// only by the consumer; the turn hand-offs (release store, acquire load) order those accesses,
  /// which is what makes sharing the pointer between threads sound.
  ///
  /// A separate array rather than a struct of turn and event per slot: mutating a field through
  /// `pointer.pointee` is a modify access of the whole struct to Swift's exclusivity checking, which
  /// the thread sanitizer then reports as a write racing with the posters' atomic loads of the turn.
  nonisolated(unsafe) private let events: UnsafeMutablePointer<LevelEvent?>

  /// Packed posts (`post(packedSize:_:)`): each slot's own fixed area of ``packedPostBytes``
  /// bytes, and the length of what the poster packed there (0: the slot holds a `LevelEvent`).
  /// Written and read under the slot's turn, like `events`. Empty when the bus takes none.
  public let packedPostBytes: Int
  nonisolated(unsafe) private let packed: UnsafeMutableRawPointer?
  nonisolated(unsafe) private let packedLengths: UnsafeMutablePointer<Int>
  nonisolated(unsafe) private let packedTimes: UnsafeMutablePointer<UInt64>

  /// The next ticket to hand out; equals the number of events ever accepted.
  private let enqueueTicket = Atomic<Int>(0)
  private let drops = Atomic<UInt64>(0)

  // Consumer side. Atomics only so the class can be Sendable; each is touched by the one consumer,
  // and the `consumerBusy` guard orders them when the consumer role changes threads.
  private let dequeueTicket = Atomic<Int>(0)
  private let reportedDrops = Atomic<UInt64>(0)
  private let consumerBusy = Atomic<Bool>(false)

  // Waking: see `waitForPost(timeout:)` for the protocol and why no wake-up can be lost.
  private let consumerSleeping = Atomic<Bool>(false)
  private let wakeRequested = Atomic<Bool>(false)
  private let wakeSignal = DispatchSemaphore(value: 0)

  /// Makes an empty bus.
  /// - Parameter capacity: how many untaken events it may hold; rounded up to a power of two
  ///   (so a slot index is a mask, not a division), at least 2.
  ///   `packedPostBytes`: the bytes each slot keeps for packed posts (0: none; see
  ///   `post(packedSize:_:)`). The bus then takes `capacity` times that much memory, once.
  public init(capacity: Int = LevelEventBus.defaultCapacity, packedPostBytes: Int = 0) {
    precondition(capacity <= 1 << 32, "a level event bus of \(capacity) events is surely a mistake")
    precondition(packedPostBytes >= 0 && packedPostBytes <= 1 << 16, "packed posts of \(packedPostBytes) bytes")
    var rounded = 2
    while rounded < capacity { rounded <<= 1 }
    self.capacity = rounded
    slotMask = rounded - 1
    self.packedPostBytes = packedPostBytes
    packed = packedPostBytes > 0 ? .allocate(byteCount: rounded * packedPostBytes, alignment: 16) : nil
    packedLengths = .allocate(capacity: rounded)
    packedLengths.initialize(repeating: 0, count: rounded)
    packedTimes = .allocate(capacity: rounded)
    packedTimes.initialize(repeating: 0, count: rounded)
    turns = .allocate(capacity: rounded)
    events = .allocate(capacity: rounded)
    for index in 0..<rounded {
      (turns + index).initialize(to: Atomic(index))
    }
    events.initialize(repeating: nil, count: rounded)
  }

  deinit {
    // No thread can be posting or consuming any more (they would hold a reference), so whatever
    // events are still waiting are simply released with their slots.
    turns.deinitialize(count: capacity)
    turns.deallocate()
    events.deinitialize(count: capacity)
    events.deallocate()
    packed?.deallocate()
    packedLengths.deallocate()
    packedTimes.deallocate()
  }

  // MARK: Posting (any thread)

  /// Posts an event for the director to act on as soon as it sees it. Never blocks.
  /// - Parameters:
  ///   - cue: the cue's name, e.g. `"combat.start"`.
  ///   - payload: its values, e.g. `["threat": 2]`.
  /// - Returns: `true` when accepted; `false` when the bus was full and this event was dropped
  ///   (and counted in ``droppedCount``).
  ///
  /// Thread safety: any thread, concurrently with other posts and with the consumer.
  @discardableResult
  public func post(_ cue: String, _ payload: CuePayload = [:]) -> Bool {
    enqueue(cue, payload, audioTime: nil)
  }

  /// Posts an event that takes effect at an audio time (offline rendering). Never blocks.
  /// - Parameters:
  ///   - cue: the cue's name, e.g. `"combat.start"`.
  ///   - payload: its values, e.g. `["threat": 2]`.
  ///   - seconds: the audio time, in seconds from the start of the render, at which it takes effect.
  /// - Returns: `true` when accepted; `false` when the bus was full and this event was dropped
  ///   (and counted in ``droppedCount``).
  ///
  /// Thread safety: any thread, concurrently with other posts and with the consumer.
  @discardableResult
  public func post(_ cue: String, _ payload: CuePayload = [:], atAudioTime seconds: Double) -> Bool {
    enqueue(cue, payload, audioTime: seconds)
  }

  /// Events dropped since the bus was made, because it was full.
  ///
  /// Thread safety: any thread; a snapshot that posts in progress may change at once.
  public var droppedCount: UInt64 { drops.load(ordering: .relaxed) }

  /// Events accepted since the bus was made (taken or still waiting).
  ///
  /// Thread safety: any thread; a snapshot that posts in progress may change at once.
  public var postedCount: UInt64 { UInt64(enqueueTicket.load(ordering: .relaxed)) }

  /// Posts an event packed into the slot's own bytes by `write` (a ``PackedEventWriter`` over
  /// exactly `size` bytes, at most ``packedPostBytes``): the poster copies its strings, and
  /// nothing is allocated, on either side of the call, until the consumer unpacks it. Never
  /// blocks. `write` runs only when the event is accepted.
  /// - Returns: `true` when accepted; `false` when the bus was full (the event is dropped and
  ///   counted, as `post` does).
  ///
  /// Thread safety: any thread, concurrently with other posts and with the consumer.
  public func post(packedSize size: Int, _ write: (inout PackedEventWriter) -> Void) -> Bool {
    precondition(
      packed != nil && size > 0 && size <= packedPostBytes,
      "a packed post of \(size) bytes on a bus that takes \(packedPostBytes)")
    let postedNanoseconds = DispatchTime.now().uptimeNanoseconds
    guard let ticket = claimTicket() else { return false }
    let slot = ticket & slotMask
    var writer = PackedEventWriter(
      UnsafeMutableRawBufferPointer(start: packed! + slot * packedPostBytes, count: size))
    write(&writer)
    packedLengths[slot] = size
    packedTimes[slot] = postedNanoseconds
    publish(ticket)
    return true
  }

  /// Claims the next ticket when its slot is free; nil when the bus is full (counted as a drop).
  private func claimTicket() -> Int? {
    // Relaxed: the ticket is only a guess at which slot to try; the slot's own turn (acquired
    // below) is what proves the slot free, and the compare-exchange makes the ticket ours alone.
    var ticket = enqueueTicket.load(ordering: .relaxed)
    while true {
      // Acquiring: pairs with the consumer's releasing store that freed the slot, so its read and
      // clearing of the previous lap's event happen before our write.
      let turn = turns[ticket & slotMask].load(ordering: .acquiring)
      let lag = turn &- ticket
      if lag == 0 {
        let (claimed, current) = enqueueTicket.compareExchange(
          expected: ticket, desired: ticket &+ 1, ordering: .relaxed)
        if claimed { return ticket }
        ticket = current  // another poster took this ticket; try the next one
      } else if lag < 0 {
        // The slot still holds (or is about to hold) the event from one lap ago that the consumer
        // has not taken: `capacity` events are waiting. Drop this one; claim nothing.
        drops.add(1, ordering: .relaxed)
        return nil
      } else {
        // Another poster claimed this ticket and moved on since we read it; read the current one.
        ticket = enqueueTicket.load(ordering: .relaxed)
      }
    }
  }

  /// Hands the slot of `ticket`, written, to the consumer, and wakes it if it sleeps.
  private func publish(_ ticket: Int) {
    // Releasing publishes the event to the consumer's acquiring load. Sequentially consistent on
    // top of that because of the wake-up protocol (see `waitForPost`): this store and the load of
    // `consumerSleeping` after it must not be reordered, or a sleeping consumer could miss it.
    turns[ticket & slotMask].store(ticket &+ 1, ordering: .sequentiallyConsistent)
    wakeConsumerIfSleeping()
  }

  private func enqueue(_ cue: String, _ payload: CuePayload, audioTime: Double?) -> Bool {
    let postedNanoseconds = DispatchTime.now().uptimeNanoseconds
    guard let ticket = claimTicket() else { return false }
    let slot = ticket & slotMask
    events[slot] = LevelEvent(
      sequence: UInt64(ticket) &+ 1, cue: cue, payload: payload, postedNanoseconds: postedNanoseconds,
      audioTime: audioTime)
    packedLengths[slot] = 0
    publish(ticket)
    return true
  }

  /// Signals the consumer only if it is asleep, and only once per sleep: the poster that flips
  /// `consumerSleeping` from true to false owns the one signal. A plain load first, so the common
  /// case (consumer busy) costs no read-modify-write on a shared line and no system call.
  private func wakeConsumerIfSleeping() {
    guard consumerSleeping.load(ordering: .sequentiallyConsistent) else { return }
    if consumerSleeping.compareExchange(expected: true, desired: false, ordering: .sequentiallyConsistent).exchanged {
      wakeSignal.signal()
    }
  }

  /// Wakes the consumer if it is in `waitForPost(timeout:)`; if it is not, its next
  /// `waitForPost` returns at once. Used to stop the director's thread: set your own stop flag
  /// first, then call this; the consumer sees the flag when `waitForPost` returns.
  ///
  /// Thread safety: any thread. Never blocks.
  public func wakeConsumer() {
    wakeRequested.store(true, ordering: .sequentiallyConsistent)
    wakeConsumerIfSleeping()
  }

  // MARK: Consuming (one consumer thread at a time)

  /// Takes the oldest waiting event, or nil when none is waiting.
  ///
  /// Thread safety: the consumer thread only (see the type's notes).
  func takeNext() -> LevelEvent? {
    beginConsuming()
    defer { endConsuming() }
    return dequeue()
  }

  /// Moves up to `limit` waiting events, oldest first, onto the end of `batch`.
  /// - Returns: how many were moved.
  ///
  /// Thread safety: the consumer thread only (see the type's notes).
  func drain(into batch: inout [LevelEvent], limit: Int = .max) -> Int {
    beginConsuming()
    defer { endConsuming() }
    var moved = 0
    while moved < limit, let event = dequeue() {
      batch.append(event)
      moved += 1
    }
    return moved
  }

  /// The drops counted since the consumer last asked (0 when none), so the director can report
  /// "N events dropped" once, at the place in the stream where it noticed them.
  ///
  /// Thread safety: the consumer thread only (see the type's notes).
  func takeNewDrops() -> UInt64 {
    beginConsuming()
    defer { endConsuming() }
    let total = drops.load(ordering: .relaxed)
    let reported = reportedDrops.load(ordering: .relaxed)
    reportedDrops.store(total, ordering: .relaxed)
    return total &- reported
  }

  /// Sleeps until an event is waiting, ``wakeConsumer()`` is called, or `timeout` passes. Returns
  /// at once if an event is already waiting. It may also return when a post is published that
  /// the consumer cannot take yet (an earlier ticket is still being written): callers loop.
  ///
  /// Thread safety: the consumer thread only (see the type's notes).
  ///
  /// Why no wake-up is lost. The two sides each store, then load the other's variable:
  ///
  ///     consumer: consumerSleeping = true   then  load the turn of the next slot to take
  ///     poster:   store the slot's turn      then  load consumerSleeping
  ///
  /// All four are sequentially consistent, so they fall in one total order that respects each
  /// thread's program order. If the consumer's load missed the poster's publish, that load came
  /// before the publish, so the poster's load of `consumerSleeping` comes after the consumer set it
  /// and sees `true`: the poster wakes it. (With only acquire/release both loads could see the old
  /// values, the classic store-buffer reordering, and the consumer would sleep through the post.)
  /// `wakeConsumer()` plays the poster's part with `wakeRequested` in place of the slot.
  ///
  /// Exactly one signal per sleep: only the thread that flips `consumerSleeping` from true to false
  /// signals. When the consumer stops sleeping on its own (it found work on the re-check, or timed
  /// out) it flips the flag back itself; if it finds a poster got there first, that poster is
  /// committed to signalling, so the consumer takes that signal (a wait of at most an instant)
  /// and the semaphore never holds a stale count that would cut a later sleep short.
  func waitForPost(timeout: Duration) {
    beginConsuming()
    defer { endConsuming() }
    if readyOrWoken() { return }
    guard let deadline = Self.deadline(after: timeout) else { return }

    consumerSleeping.store(true, ordering: .sequentiallyConsistent)
    if readyOrWoken() {
      stopSleepingOnOurOwn()
      return
    }
    if wakeSignal.wait(timeout: deadline) == .timedOut {
      stopSleepingOnOurOwn()
    }
    // Woken or not, a pending wake request has now been answered by this return.
    _ = wakeRequested.exchange(false, ordering: .sequentiallyConsistent)
  }

  private func stopSleepingOnOurOwn() {
    if !consumerSleeping.exchange(false, ordering: .sequentiallyConsistent) {
      wakeSignal.wait()  // a poster flipped the flag and is about to signal: take that signal
    }
  }

  private func readyOrWoken() -> Bool {
    if nextEventIsPublished() { return true }
    return wakeRequested.exchange(false, ordering: .sequentiallyConsistent)
  }

  /// Sequentially consistent: the consumer's half of the wake-up protocol (see `waitForPost`).
  private func nextEventIsPublished() -> Bool {
    let ticket = dequeueTicket.load(ordering: .relaxed)
    return turns[ticket & slotMask].load(ordering: .sequentiallyConsistent) == ticket &+ 1
  }

  private func dequeue() -> LevelEvent? {
    let ticket = dequeueTicket.load(ordering: .relaxed)
    let slot = ticket & slotMask
    // Acquiring: pairs with the poster's publishing store, so the event it wrote is visible here.
    guard turns[slot].load(ordering: .acquiring) == ticket &+ 1 else { return nil }
    var event = events[slot].take()
    if packedLengths[slot] > 0, let packed {
      // A packed post: unpacked here, on the consumer's thread, where allocating is fine. A
      // poster that packs by `PackedEventWriter` always unpacks; an empty cue marks one that
      // does not, which the director then ignores as an unknown cue.
      let bytes = UnsafeRawBufferPointer(start: packed + slot * packedPostBytes, count: packedLengths[slot])
      let unpacked = PackedEvent.unpack(bytes)
      event = LevelEvent(
        sequence: UInt64(ticket) &+ 1, cue: unpacked?.cue ?? "", payload: unpacked?.payload ?? [:],
        postedNanoseconds: packedTimes[slot])
      packedLengths[slot] = 0
    }
    dequeueTicket.store(ticket &+ 1, ordering: .relaxed)
    // Releasing: our read and clearing of the event happen before the next lap's poster (which
    // acquires this turn) writes the slot.
    turns[slot].store(ticket &+ capacity, ordering: .releasing)
    return event
  }

  /// Makes a second concurrent consumer a crash instead of a corrupted ring. Acquiring/releasing
  /// so a consumer role handed from one thread to another sees the consumer state as left.
  private func beginConsuming() {
    let alreadyBusy = consumerBusy.exchange(true, ordering: .acquiring)
    precondition(!alreadyBusy, "LevelEventBus: two threads are consuming at once; only one consumer is allowed")
  }

  private func endConsuming() {
    consumerBusy.store(false, ordering: .releasing)
  }

  /// nil for a timeout of zero or less; `.distantFuture` for one too long to add to the clock.
  private static func deadline(after timeout: Duration) -> DispatchTime? {
    let (seconds, attoseconds) = timeout.components
    if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return nil }
    if seconds >= 1_000_000_000 { return .distantFuture }  // 31 years: forever, without overflow
    let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
    return DispatchTime.now() + .nanoseconds(max(nanoseconds, 1))
  }
}
