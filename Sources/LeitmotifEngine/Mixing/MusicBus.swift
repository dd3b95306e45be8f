import Dispatch
import FoundationEssentials
import LeitmotifDecoding
import LeitmotifOutput

/// The music bus on its way out: one OpenAL streaming source that plays the mix, and copies of
/// the blocks queued on it, so that after a device loss (or a stall the device stopped the source
/// for) playback resumes on the first frame not yet heard.
///
/// Why one source: OpenAL Soft 1.19 starts a source only at a mix boundary and cannot start one
/// at a given time, so voices on sources of their own could never start on an exact frame. The
/// mixer renders every voice into this bus on one sample clock; OpenAL only plays the result
/// (stereo Float32 at the device rate with direct channels: bit for bit what was mixed).
///
/// Buffers, live: blocks of `blockFrames` (256 frames, 5.3 ms at 48 kHz) in a ring of
/// `bufferCount` (16, 85 ms at most). The loop keeps `targetQueuedFrames` queued: one device
/// period (what OpenAL takes per mix, 1024 frames by default) plus some blocks of slack for a
/// late wake-up of the streaming thread: six (32 ms) with `OutputLatency.standard`, two (10.7 ms)
/// with `.low`, where the streaming thread also wakes twice a period; after an underrun `.low`
/// takes two blocks more each time, up to the standard six (`widenSlackAfterUnderrun`). Small blocks
/// keep a command's way to the ear short: a change lands in the next block mixed, at most
/// `targetQueuedFrames` plus one device period before it is heard. On a device that renders on
/// demand (loopback: offline, headless) there is no slack: each render mixes exactly the frames
/// asked for and OpenAL renders them at once.
///
/// The ring has twice as many slots as the source has buffers: the blocks OpenAL has played stay
/// in it (up to `bufferCount` of them) until their slot comes round again. After a device loss
/// they let playback resume where the ear was, not where OpenAL was: what OpenAL had mixed but
/// the device (a sound server's buffer, say) had not yet played is lost with the device, and is
/// played again.
///
/// Streaming-thread only (offline: under the engine's render lock).
package final class MusicBus {
  static let blockFrames = 256
  static let bufferCount = 16

  private(set) var device: OutputDevice
  private var source: StreamingSource
  /// The PCM of each ring slot, kept until OpenAL has played it.
  private let ring: UnsafeMutablePointer<Float>
  private let ringFrames: Int
  /// Ring slots queued on the source, oldest first.
  private var queued: QueuedBlocks
  /// Ring slots OpenAL has played, oldest first, kept until their slot is reused: queued and
  /// played together never fill the ring, so the next slot mixed into is always free.
  private var played: QueuedBlocks
  private static let ringSlots = 2 * bufferCount
  /// Where a requeue gathers the unheard audio before it goes back into the ring.
  private let gathered: UnsafeMutablePointer<Float>
  private let gatheredFrames: Int
  private var nextSlot = 0
  /// Frames into the oldest queued block that OpenAL had played when last looked at.
  private var heardOffset = 0
  /// The last time the source was seen playing, and how much was queued then (to tell a stall of
  /// ours, where OpenAL played everything, from a device that stopped the source), and the
  /// device's clock then (how much OpenAL has mixed: a backend that fell behind mixes several
  /// periods at once to catch up, faster than the wall clock runs).
  private var lastSeenPlayingNanoseconds: UInt64 = 0
  private var queuedFramesWhenSeen = 0
  private var deviceClockWhenSeen: Int64 = 0
  /// What the loop keeps queued: a device period and `slackBlocks` blocks (0 on a device that
  /// renders on demand).
  private(set) var targetQueuedFrames: Int
  /// Blocks of slack beyond a device period (see the type's comment).
  private(set) var slackBlocks: Int
  /// The standard slack, in blocks; also the most `.low` widens to.
  static let standardSlackBlocks = 6
  /// `OutputLatency.low`'s slack to begin with, in blocks.
  static let lowSlackBlocks = 2
  /// The rate the mix is made at (the first device's): a device opened later at another rate
  /// resamples the bus in OpenAL; the mix clock stays the same.
  let mixRate: Int

  init(device: OutputDevice, slackBlocks: Int = MusicBus.standardSlackBlocks) throws(OutputError) {
    self.device = device
    mixRate = device.sampleRate
    source = try StreamingSource(device: device, bufferCount: Self.bufferCount)
    ringFrames = max(Self.blockFrames, 4096)
    ring = .allocate(capacity: Self.ringSlots * ringFrames * 2)
    ring.initialize(repeating: 0, count: Self.ringSlots * ringFrames * 2)
    queued = QueuedBlocks(capacity: Self.bufferCount)
    played = QueuedBlocks(capacity: Self.ringSlots - Self.bufferCount)
    gatheredFrames = Self.ringSlots * Self.blockFrames
    gathered = .allocate(capacity: gatheredFrames * 2)
    gathered.initialize(repeating: 0, count: gatheredFrames * 2)
    self.slackBlocks = slackBlocks
    targetQueuedFrames = Self.target(device: device, slackBlocks: slackBlocks)
  }

  private static func target(device: OutputDevice, slackBlocks: Int) -> Int {
    device.rendersOnDemand
      ? 0 : min(device.mixPeriodFrames + slackBlocks * blockFrames, (bufferCount - 1) * blockFrames)
  }

  /// After an underrun: two blocks more of slack, up to the standard slack. Returns whether the
  /// slack grew. (A machine that could not keep 10.7 ms ahead once will likely fail again: the
  /// next load spike, the next page fault. Each step trades 10.7 ms of latency for that much more
  /// room; the standard slack has ridden out every load seen here.)
  @discardableResult
  func widenSlackAfterUnderrun() -> Bool {
    guard slackBlocks < Self.standardSlackBlocks else { return false }
    slackBlocks = min(Self.standardSlackBlocks, slackBlocks + 2)
    targetQueuedFrames = Self.target(device: device, slackBlocks: slackBlocks)
    return true
  }

  deinit {
    ring.deallocate()
    gathered.deallocate()
    queued.deallocate()
    played.deallocate()
  }

  /// Stops the source as OpenAL does when the device goes (every queued buffer then counts as
  /// processed): for the engine's simulated disconnect and the tests.
  func stopSource() { source.stop() }

  /// Frames queued on the source and not yet played (as far as OpenAL says).
  var queuedFrames: Int { queued.totalFrames - heardOffset }

  /// Hands back what OpenAL has played and notes how far into the next block it is.
  func collectPlayed() {
    // A source the device stopped (OpenAL 1.19 stops every source when a device goes) reports
    // every queued buffer processed, heard or not. Taking them as
    // played here would move the requeue after a loss past all of them: a whole queue of
    // music (16 buffers, 0.34 s) lost, when the pump came before the connection check. So a
    // source that stopped early is left as it is until `requeueUnheard`, which puts it back.
    if stoppedEarly {
      stopLatched = true
      return
    }
    if queued.count > 0 && !device.rendersOnDemand && source.state != .playing && !device.isConnected {
      // The device is gone: OpenAL marks it disconnected, then stops its sources, and a source
      // played on a disconnected device stops at once with every buffer processed. Taken as an
      // underrun, the stop was restarted, stopped again, and so on at every pump until the next
      // connection check: under load, 13 such restarts threw away 0.77 s of music unheard (the
      // late wake-up had made the stop look like a source that played everything). So a stop
      // is checked against the connection before anything is taken as played.
      stopLatched = true
      return
    }
    let played = source.unqueueProcessed()
    var removed = 0
    while removed < played && queued.count > 0 {
      self.played.keep(start: queued.start(at: 0), frames: queued.frames(at: 0))
      queued.removeFirst()
      removed += 1
    }
    if played > 0 { heardOffset = 0 }
    if queued.count > 0 && source.state == .playing {
      heardOffset = min(queued.frames(at: 0), source.sampleOffset)
      lastSeenPlayingNanoseconds = DispatchTime.now().uptimeNanoseconds
      queuedFramesWhenSeen = queuedFrames
      deviceClockWhenSeen = device.clockNanoseconds
    }
  }

  /// A free block of up to `frames` frames to mix into, or nil when the ring is full.
  func nextBlock(frames: Int) -> UnsafeMutablePointer<Float>? {
    guard queued.count < Self.bufferCount - 1, source.freeBufferCount > 0, frames <= ringFrames else { return nil }
    return ring + nextSlot * ringFrames * 2
  }

  /// Queues `frames` frames of silence (in blocks, as far as the ring has room): what the bus
  /// would have held had the mix gone on through an idle spell (see
  /// `StreamingLoop.keepClockPace`). They are no frames of the mix clock.
  func queueSilence(frames: Int) {
    var left = frames
    while left > 0, let block = nextBlock(frames: Self.blockFrames) {
      let count = min(left, Self.blockFrames)
      block.update(repeating: 0, count: 2 * count)
      commit(frames: count)
      left -= count
    }
  }

  /// Queues the block from `nextBlock` (now holding `frames` mixed frames).
  func commit(frames: Int) {
    let slot = nextSlot
    guard source.queue(stereo: ring + slot * ringFrames * 2, frameCount: frames, sampleRate: mixRate) else {
      return
    }
    queued.append(start: slot * ringFrames, frames: frames)
    nextSlot = (nextSlot + 1) % Self.ringSlots
  }

  /// Starts the source if it is not playing. A real underrun (the source played everything it
  /// had) just restarts it; a source the device stopped while it still had audio (a device that
  /// went away, or stalled) is not restarted here, so
  /// nothing unheard is thrown away: the caller checks the connection first, and `requeueUnheard`
  /// puts the unheard audio back. Returns true when the source had run dry (an underrun).
  @discardableResult
  func keepPlaying() -> Bool {
    defer { wasFed = true }
    guard queued.count > 0, source.state != .playing, !stoppedEarly else { return false }
    let ranDry = wasFed && lastSeenPlayingNanoseconds != 0
    source.play()
    return ranDry
  }

  /// The source is not playing (played out, stopped, or never started).
  var sourceStopped: Bool { source.state != .playing }

  /// Nothing plays: the bus is no longer fed and may run out; that is no underrun.
  func idle() {
    wasFed = false
    if queued.count == 0 || source.state != .playing { lastSeenPlayingNanoseconds = 0 }
  }

  /// Whether the bus was being kept topped up at the last pump.
  private var wasFed = false

  /// Whether the source stopped although, by the wall clock, it cannot have played all it had.
  /// Set when the source was seen stopped early, and kept until the unheard audio is requeued:
  /// the wall clock that decides "early" runs on, and after the queue's length it would call the
  /// same stop an underrun (while the connection check waits for the device to say it is gone).
  private var stopLatched = false

  /// The source stopped with audio it cannot have played: since it was last seen playing, neither
  /// the wall clock nor OpenAL's own mixing (the device clock) has got through what was queued
  /// then. A device that went away stops mixing; a backend that fell behind mixes several periods
  /// back to back, and a queue shorter than that runs dry at once: an underrun, though by the wall
  /// clock an early one. (Taken for a stop of the device, it waited two seconds for the
  /// connection check, in silence: seen once with `OutputLatency.low`'s queue.)
  var stoppedEarly: Bool {
    if stopLatched && queued.count > 0 && source.state != .playing { return true }
    guard wasFed, source.state != .playing, lastSeenPlayingNanoseconds != 0, queued.count > 0 else { return false }
    let wall = DispatchTime.now().uptimeNanoseconds - lastSeenPlayingNanoseconds
    let mixed = UInt64(max(0, device.clockNanoseconds - deviceClockWhenSeen))
    let playable = UInt64(queuedFramesWhenSeen) * 1_000_000_000 / UInt64(mixRate)
    return max(wall, mixed) + 20_000_000 < playable
  }

  /// Puts the unheard audio back on a fresh source of `device` (the same device after a stop,
  /// or a new one after a loss), starting at the first frame not heard: `rewindFrames` before
  /// the first frame OpenAL had not played (after a loss, what the lost device still held: its
  /// latency), as far as the played blocks kept in the ring reach.
  /// Returns how many frames it went back: at most `rewindFrames`, as far as the played blocks
  /// kept reach.
  @discardableResult
  func requeueUnheard(on newDevice: OutputDevice, rewindFrames: Int = 0) throws(OutputError) -> Int {
    let fresh = try StreamingSource(device: newDevice, bufferCount: Self.bufferCount)
    // (Runs after a loss, off the steady path: it may take its time.) Gather the unheard audio
    // in order: the end of the played blocks, the heard part of the first queued block, the rest.
    var spans: [(start: Int, frames: Int)] = []
    var rewind = max(0, rewindFrames)
    if queued.count > 0 {
      let heard = min(heardOffset, queued.frames(at: 0))
      let back = min(heard, rewind)
      rewind -= back
      spans.append((queued.start(at: 0) + heard - back, queued.frames(at: 0) - heard + back))
      for index in 1..<max(1, queued.count) { spans.append((queued.start(at: index), queued.frames(at: index))) }
    }
    var index = played.count - 1
    while rewind > 0 && index >= 0 {
      let back = min(rewind, played.frames(at: index))
      spans.insert((played.start(at: index) + played.frames(at: index) - back, back), at: 0)
      rewind -= back
      index -= 1
    }
    var total = 0
    for span in spans {
      let frames = min(span.frames, gatheredFrames - total)
      (gathered + 2 * total).update(from: ring + 2 * span.start, count: 2 * frames)
      total += frames
    }
    source = fresh
    device = newDevice
    targetQueuedFrames = Self.target(device: newDevice, slackBlocks: slackBlocks)
    newDevice.makeCurrent()  // the old source made its device current as it went
    queued.removeAll()
    played.removeAll()
    heardOffset = 0
    lastSeenPlayingNanoseconds = 0
    stopLatched = false
    // Back into the ring, a slot's worth at a time, and onto the fresh source.
    var written = 0
    while written < total && queued.count < Self.bufferCount - 1 {
      let frames = min(ringFrames, total - written)
      let start = nextSlot * ringFrames
      (ring + 2 * start).update(from: gathered + 2 * written, count: 2 * frames)
      guard fresh.queue(stereo: ring + 2 * start, frameCount: frames, sampleRate: mixRate) else { break }
      queued.append(start: start, frames: frames)
      nextSlot = (nextSlot + 1) % Self.ringSlots
      written += frames
    }
    return max(0, rewindFrames) - rewind
  }

  /// A device that renders on demand: queues `frames` just mixed into `block` and renders them
  /// into `output` at once (OpenAL plays them bit for bit).
  func renderNow(_ block: UnsafeMutablePointer<Float>, frames: Int, into output: UnsafeMutablePointer<Float>) {
    collectPlayed()
    commit(frames: frames)
    if source.state != .playing { source.play() }
    device.render(into: output, frameCount: frames)
    collectPlayed()
  }
}

/// The blocks queued on the bus source, oldest first, in a fixed ring: where each starts in the
/// bus's PCM ring (in frames) and how long it is. Plain integers and pointers, so the streaming
/// thread's bookkeeping calls no generic code that could allocate (it would in a debug build).
private struct QueuedBlocks {
  private let starts: UnsafeMutablePointer<Int>
  private let lengths: UnsafeMutablePointer<Int>
  private let capacity: Int
  private var head = 0
  private(set) var count = 0

  init(capacity: Int) {
    self.capacity = capacity
    starts = .allocate(capacity: capacity)
    starts.initialize(repeating: 0, count: capacity)
    lengths = .allocate(capacity: capacity)
    lengths.initialize(repeating: 0, count: capacity)
  }

  func deallocate() {
    starts.deallocate()
    lengths.deallocate()
  }

  func start(at index: Int) -> Int { starts[(head + index) % capacity] }
  func frames(at index: Int) -> Int { lengths[(head + index) % capacity] }

  var totalFrames: Int {
    var total = 0
    var index = 0
    while index < count {
      total += lengths[(head + index) % capacity]
      index += 1
    }
    return total
  }

  mutating func append(start: Int, frames: Int) {
    guard count < capacity else { return }
    let slot = (head + count) % capacity
    starts[slot] = start
    lengths[slot] = frames
    count += 1
  }

  /// Appends, dropping the oldest when full.
  mutating func keep(start: Int, frames: Int) {
    if count == capacity { removeFirst() }
    append(start: start, frames: frames)
  }

  mutating func removeFirst() {
    guard count > 0 else { return }
    head = (head + 1) % capacity
    count -= 1
  }

  mutating func removeAll() {
    head = 0
    count = 0
  }
}
