import LeitmotifDecoding
import LeitmotifOutput
import Synchronization

/// One voice of the engine's pool as one owner holds it: the slot and the generation of that
/// ownership.
///
/// Every claim of a slot (a new owner, a steal, a player's new item) gives it a new generation,
/// so a command, an event or a status from an earlier owner names a generation that is no longer
/// current and is dropped: a bare slot number would let one owner's late release, seek or
/// disarm act on another's music (godot's playbacks and miniaudio's sounds are objects with an
/// owner for the same reason; `LeitmotifC.HandleTable` tags C handles the same way).
package struct VoiceHandle: Hashable, Sendable, CustomStringConvertible {
  package let slot: Int
  /// Never 0: the streaming loop marks a slot nobody owns with generation 0.
  let generation: UInt32

  package var description: String { "voice \(slot) (generation \(generation))" }
}

/// An owner's hold on one voice of the pool (see `VoicePool.claim`).
///
/// Exactly one lease is current per slot. A steal revokes it: the pool gives the slot a new
/// generation and tells the old owner's listener `.stolen`; commands the old owner still sends
/// name the old generation and are dropped. `release()`, or the lease's deinit, gives the voice
/// back, and does nothing once the lease is revoked, so a late release can never silence the
/// voice's next owner.
///
/// Thread safety: any thread.
package final class VoiceLease: Sendable, Equatable, CustomStringConvertible {
  package let handle: VoiceHandle
  private let pool: VoicePool

  /// Set by `playOut`: the voice is not given back when the lease goes.
  private let playsOut = Atomic<Bool>(false)

  fileprivate init(handle: VoiceHandle, pool: VoicePool) {
    self.handle = handle
    self.pool = pool
  }

  deinit { if !playsOut.load(ordering: .acquiring) { pool.release(handle) } }

  /// Lets the voice play to its end when this lease goes (a one-shot player released while it
  /// plays): the pool gives it back when it ends or fails, or it is stolen as any voice.
  package func playOut() {
    if pool.playOut(handle) { playsOut.store(true, ordering: .releasing) }
  }

  package var slot: Int { handle.slot }

  /// Whether the slot still belongs to this lease (false after a steal or a release).
  package var isCurrent: Bool { pool.owns(handle) }

  /// Gives the voice back (it fades out over 10 ms if audible). Idempotent; a no-op once stolen.
  package func release() { pool.release(handle) }
  /// Gives the slot back as `release` does, for music taken back before it is heard: the voice
  /// of `keep`, if it has begun to fade out for this one (a late command), fades back up.
  package func callOff(keeping keep: VoiceHandle) { pool.release(handle, keeping: keep) }

  package var description: String { handle.description }

  package static func == (lhs: VoiceLease, rhs: VoiceLease) -> Bool { lhs === rhs }
}

/// Who owns which voice: the engine's pool of `limit` slots, their generations, owners'
/// priorities and listeners, behind one lock that game threads take briefly (never the streaming
/// thread: it learns of claims and releases through the command queue, in the order they were
/// made, because they are posted under this lock).
package final class VoicePool: Sendable {
  let limit: Int
  private let statuses: [VoiceStatus]
  private let commands: CommandQueue<EngineCommand>
  private let events: CommandQueue<EngineEvent>
  private let table: Mutex<Table>

  private struct Owner {
    var generation: UInt32
    var priority: Int
    var listener: @Sendable (EngineEvent) -> Void
  }

  private struct Table {
    var owners: [Owner?]
    /// The last generation handed out per slot.
    var generations: [UInt32]
    var free: [Int]
  }

  init(
    limit: Int, statuses: [VoiceStatus], commands: CommandQueue<EngineCommand>, events: CommandQueue<EngineEvent>
  ) {
    self.limit = limit
    self.statuses = statuses
    self.commands = commands
    self.events = events
    table = Mutex(
      Table(
        owners: [Owner?](repeating: nil, count: limit), generations: [UInt32](repeating: 0, count: limit),
        free: Array(0..<limit)))
  }

  /// Takes a voice for a new owner, or steals one when all `limit` are in use; `listener` gets
  /// the voice's events (those of this claim's generation only) on the notification thread.
  ///
  /// The stealing policy, in order: (1) a voice that is being let go (the outgoing side of a
  /// crossfade), quietest first; (2) a voice of lower priority than the one asked for, quietest
  /// first. A voice of the same or higher priority that is still heard is never stolen: the
  /// request fails (nil) instead. A voice whose claim the streaming thread has not taken up yet
  /// (an offline engine's until the next render; live, for a moment) is silent, the quietest
  /// there is: it can be stolen by rule (2), never by (1) (its status still describes the
  /// previous owner, whose letting go says nothing of this one). A game that starts its sound
  /// effects and its music in one step of an offline engine got silent music that said it
  /// played: the effects' claims were not taken up, so none could be stolen. A stolen voice
  /// fades out over 10 ms (never a cut), and its owner is told (`.stolen`).
  /// With `stealsHeld: false` (a voice prepared ahead of need) only (1) applies: a voice another
  /// owner still holds for playing is never taken for something that is not heard yet.
  func claim(
    priority: Int, stealsHeld: Bool = true, listener: @escaping @Sendable (EngineEvent) -> Void
  ) -> VoiceLease? {
    let outcome = table.withLock { table -> (VoiceHandle, stolen: (VoiceHandle, @Sendable (EngineEvent) -> Void)?)? in
      // The slot given back longest ago: a release stamped for a later frame (the director's
      // lead) lets its voice play on until then, and a claim of that slot before it would cut it.
      var slot = table.free.isEmpty ? nil : table.free.removeFirst()
      var stolen: (VoiceHandle, @Sendable (EngineEvent) -> Void)?
      if slot == nil {
        var best: (slot: Int, rank: Int, gain: Float)?
        for candidate in 0..<limit {
          guard let owner = table.owners[candidate] else { continue }
          let status = statuses[candidate]
          let takenUp = status.generation.load(ordering: .acquiring) == owner.generation
          let rank: Int
          if takenUp && status.isLetGo.load(ordering: .acquiring) {
            rank = 0
          } else if stealsHeld && owner.priority < priority {
            rank = 1
          } else {
            continue
          }
          let gain = takenUp ? status.gain : 0
          if best == nil || rank < best!.rank || (rank == best!.rank && gain < best!.gain) {
            best = (candidate, rank, gain)
          }
        }
        guard let best, let victim = table.owners[best.slot] else { return nil }
        slot = best.slot
        stolen = (VoiceHandle(slot: best.slot, generation: victim.generation), victim.listener)
      }
      guard let slot else { return nil }
      let handle = Self.nextHandle(slot: slot, &table)
      table.owners[slot] = Owner(generation: handle.generation, priority: priority, listener: listener)
      // Posted under the lock: claims, renewals and releases reach the streaming thread in the
      // order their generations were made.
      commands.post(.claim(handle))
      return (handle, stolen)
    }
    guard let (handle, stolen) = outcome else { return nil }
    if let (victim, listener) = stolen {
      events.post(.stolen(victim, listener))
      events.wakeUp()
    }
    return VoiceLease(handle: handle, pool: self)
  }

  /// The same slot under a new generation, for an owner that starts over on it (a player given a
  /// new item): whatever the old generation still has on its way (a file being opened, a seek)
  /// is dropped. Nil when the lease was revoked; the owner must claim a voice again.
  package func renew(_ lease: VoiceLease) -> VoiceLease? {
    let renewed = table.withLock { table -> VoiceHandle? in
      let slot = lease.handle.slot
      guard var owner = table.owners[slot], owner.generation == lease.handle.generation else { return nil }
      let handle = Self.nextHandle(slot: slot, &table)
      owner.generation = handle.generation
      table.owners[slot] = owner
      commands.post(.claim(handle))
      return handle
    }
    return renewed.map { VoiceLease(handle: $0, pool: self) }
  }

  /// Gives the slot back if `handle` still owns it; otherwise (stolen, renewed, released) does
  /// nothing.
  /// Gives `handle`'s slot back; with `keep`, as a change's music taken back before it is heard
  /// (see `EngineCommand.callOff`).
  func release(_ handle: VoiceHandle, keeping keep: VoiceHandle? = nil) {
    table.withLock { table in
      guard table.owners[handle.slot]?.generation == handle.generation else { return }
      table.owners[handle.slot] = nil
      table.free.append(handle.slot)
      commands.post(keep.map { .callOff(incoming: handle, keep: $0) } ?? .release(handle))
    }
  }

  /// The voice of `handle` plays to its end on its own: its owner's listener is replaced by one
  /// that gives the slot back when the voice ends or fails. False when `handle` no longer owns
  /// its slot.
  func playOut(_ handle: VoiceHandle) -> Bool {
    table.withLock { table in
      guard var owner = table.owners[handle.slot], owner.generation == handle.generation else { return false }
      owner.listener = { [weak self] event in
        switch event {
        case .ended, .failed: self?.release(handle)
        default: break
        }
      }
      table.owners[handle.slot] = owner
      return true
    }
  }

  func owns(_ handle: VoiceHandle) -> Bool {
    table.withLock { $0.owners[handle.slot]?.generation == handle.generation }
  }

  /// The listener of the owner `handle` names, if it still owns its slot.
  func listener(for handle: VoiceHandle) -> (@Sendable (EngineEvent) -> Void)? {
    table.withLock { table in
      guard handle.slot < limit, let owner = table.owners[handle.slot], owner.generation == handle.generation
      else { return nil }
      return owner.listener
    }
  }

  /// The status of `handle`'s voice, once the streaming thread has taken up its claim (before
  /// that, and after the voice changed hands, the status describes another owner's voice: nil).
  func status(of handle: VoiceHandle) -> VoiceStatus? {
    guard handle.slot < limit else { return nil }
    let status = statuses[handle.slot]
    return status.generation.load(ordering: .acquiring) == handle.generation ? status : nil
  }

  var ownedCount: Int { table.withLock { $0.owners.reduce(0) { $0 + ($1 == nil ? 0 : 1) } } }

  private static func nextHandle(slot: Int, _ table: inout Table) -> VoiceHandle {
    var generation = table.generations[slot] &+ 1
    if generation == 0 { generation = 1 }
    table.generations[slot] = generation
    return VoiceHandle(slot: slot, generation: generation)
  }
}
