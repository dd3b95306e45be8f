import Foundation

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
/// period (what OpenAL takes per mix, 1024 frames by default) plus six blocks (32 ms) of slack for a
/// late wake-up of the streaming thread. Small blocks keep a command's way to the ear short:
/// a change lands in the next block mixed, at most `targetQueuedFrames` plus one device period
/// before it is heard. On a device that renders on demand (loopback: offline, headless) there is
/// no slack: each render mixes exactly the frames asked for and OpenAL renders them at once.
///
/// Streaming-thread only (offline: under the engine's render lock).
final class MusicBus {
  static let blockFrames = 256
  static let bufferCount = 16

  private(set) var device: OutputDevice
  private var source: StreamingSource
  /// The PCM of each ring slot, kept until OpenAL has played it.
  private let ring: UnsafeMutablePointer<Float>
  private let ringFrames: Int
  /// Ring slots queued on the source, oldest first: (slot, frames).
  private var queued: [(slot: Int, frames: Int)]
  private var nextSlot = 0
  /// Frames into the oldest queued block that OpenAL had played when last looked at.
  private var heardOffset = 0
  /// The last time the source was seen playing, and how much was queued then (to tell a stall of
  /// ours, where OpenAL played everything, from a device that stopped the source).
  private var lastSeenPlayingNanoseconds: UInt64 = 0
  private var queuedFramesWhenSeen = 0
  private(set) var underruns = 0
  let targetQueuedFrames: Int

  init(device: OutputDevice) throws(OutputError) {
    self.device = device
    source = try StreamingSource(device: device, bufferCount: Self.bufferCount)
    ringFrames = max(Self.blockFrames, 4096)
    ring = .allocate(capacity: Self.bufferCount * ringFrames * 2)
    ring.initialize(repeating: 0, count: Self.bufferCount * ringFrames * 2)
    queued = []
    queued.reserveCapacity(Self.bufferCount)
    targetQueuedFrames =
      device.rendersOnDemand
      ? 0 : min(device.mixPeriodFrames + 6 * Self.blockFrames, (Self.bufferCount - 1) * Self.blockFrames)
  }

  deinit { ring.deallocate() }

  /// Frames queued on the source and not yet played (as far as OpenAL says).
  var queuedFrames: Int { queued.reduce(0) { $0 + $1.frames } - heardOffset }

  /// Hands back what OpenAL has played and notes how far into the next block it is.
  func collectPlayed() {
    let played = source.unqueueProcessed()
    for _ in 0..<min(played, queued.count) { queued.removeFirst() }
    if played > 0 { heardOffset = 0 }
    if !queued.isEmpty && source.state == .playing {
      heardOffset = min(queued[0].frames, source.sampleOffset)
      lastSeenPlayingNanoseconds = DispatchTime.now().uptimeNanoseconds
      queuedFramesWhenSeen = queuedFrames
    }
  }

  /// A free block of up to `frames` frames to mix into, or nil when the ring is full.
  func nextBlock(frames: Int) -> UnsafeMutablePointer<Float>? {
    guard queued.count < Self.bufferCount - 1, source.freeBufferCount > 0, frames <= ringFrames else { return nil }
    return ring + nextSlot * ringFrames * 2
  }

  /// Queues the block from `nextBlock` (now holding `frames` mixed frames).
  func commit(frames: Int) {
    let slot = nextSlot
    guard source.queue(stereo: ring + slot * ringFrames * 2, frameCount: frames, sampleRate: device.sampleRate) else {
      return
    }
    queued.append((slot, frames))
    nextSlot = (nextSlot + 1) % Self.bufferCount
  }

  /// Starts the source if it is not playing. A real underrun (the source played everything it
  /// had) just restarts it; a source the device stopped while it still had audio (a sound server
  /// going away stops sources before it reports the device gone) is not restarted here, so
  /// nothing unheard is thrown away: the caller checks the connection first, and `requeueUnheard`
  /// puts the unheard audio back. Returns true when the source had run dry (an underrun).
  @discardableResult
  func keepPlaying() -> Bool {
    defer { wasFed = true }
    guard !queued.isEmpty, source.state != .playing else { return false }
    let ranDry = wasFed && lastSeenPlayingNanoseconds != 0
    source.play()
    if ranDry { underruns += 1 }
    return ranDry
  }

  /// Nothing plays: the bus is no longer fed and may run out; that is no underrun.
  func idle() {
    wasFed = false
    if queued.isEmpty || source.state != .playing { lastSeenPlayingNanoseconds = 0 }
  }

  /// Whether the bus was being kept topped up at the last pump.
  private var wasFed = false

  /// Whether the source stopped although, by the wall clock, it cannot have played all it had.
  var stoppedEarly: Bool {
    guard wasFed, source.state != .playing, lastSeenPlayingNanoseconds != 0, !queued.isEmpty else { return false }
    let elapsed = DispatchTime.now().uptimeNanoseconds - lastSeenPlayingNanoseconds
    let playable = UInt64(queuedFramesWhenSeen) * 1_000_000_000 / UInt64(device.sampleRate)
    return elapsed + 20_000_000 < playable
  }

  /// Puts the unheard audio back on a fresh source of `device` (the same device after a stop,
  /// or a new one after a loss), starting at the first frame not heard.
  func requeueUnheard(on newDevice: OutputDevice) throws(OutputError) {
    let fresh = try StreamingSource(device: newDevice, bufferCount: Self.bufferCount)
    let blocks = queued
    let skip = heardOffset
    source = fresh
    device = newDevice
    newDevice.makeCurrent()  // the old source made its device current as it went
    queued.removeAll(keepingCapacity: true)
    heardOffset = 0
    lastSeenPlayingNanoseconds = 0
    for (index, block) in blocks.enumerated() {
      let offset = index == 0 ? min(skip, block.frames) : 0
      guard block.frames - offset > 0 else { continue }
      if fresh.queue(
        stereo: ring + block.slot * ringFrames * 2 + 2 * offset, frameCount: block.frames - offset,
        sampleRate: newDevice.sampleRate)
      {
        queued.append((block.slot, block.frames - offset))
      }
    }
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
