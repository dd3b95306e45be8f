import LeitmotifDecoding

/// A whole file decoded once into memory: its frames at the file's own rate and channel count
/// (mono stays mono), its tags and what its decoder warned about. Immutable once made, so any
/// number of voices read it at once, each through a `MemoryDecoder` of its own.
///
/// Why: a stinger or a short loop fires again and again. Streamed, every shot opens the file and
/// runs the decoder; preloaded, a shot copies frames that are already there, opens nothing, and
/// cannot be held up by a slow disk (FMOD's "sample" against "stream", Godot's imported WAV against
/// its streamed Ogg).
///
/// The frames live in pages of their own (`PageMemory`), given back to the system when the last
/// reader lets go, so preloading and unloading between levels does not fragment malloc's heap.
package final class DecodedAudio: @unchecked Sendable {
  package let path: String
  package let containerFormat: ContainerFormat
  package let format: AudioFormat
  /// The frames that decoded: exact, also for a stream whose header only estimated its length.
  package let lengthFrames: Int64
  package let tags: AudioTags
  package let warnings: [String]
  private let pages: PageMemory
  /// Interleaved, `format.channelCount` floats per frame.
  var samples: UnsafePointer<Float> { UnsafePointer(pages.floats) }

  /// The memory it holds, in bytes.
  package var sizeBytes: Int { Int(lengthFrames) * format.channelCount * MemoryLayout<Float>.stride }

  /// The bytes `frames` frames of `channels` channels take.
  package static func bytes(frames: Int64, channels: Int) -> Int {
    Int(clamping: frames) &* channels &* MemoryLayout<Float>.stride
  }

  private init(
    path: String, containerFormat: ContainerFormat, format: AudioFormat, lengthFrames: Int64, tags: AudioTags,
    warnings: [String], pages: PageMemory
  ) {
    self.path = path
    self.containerFormat = containerFormat
    self.format = format
    self.lengthFrames = lengthFrames
    self.tags = tags
    self.warnings = warnings
    self.pages = pages
  }

  /// Decodes all of `decoder` from its start. `limitBytes` caps the memory: a stream that turns
  /// out longer than that (its header may have said less) stops being read there.
  /// - Throws: `PreloadError`: `.decode` as the decoder fails (a file damaged part of the way is
  ///   refused, not kept in part: streamed, it still plays up to the damage and says so), or
  ///   `.overBudget` past `limitBytes` (`preloadedBytes` and `budgetBytes` go into that error).
  package static func decode(
    _ decoder: any AudioDecoder, limitBytes: Int, preloadedBytes: Int, budgetBytes: Int
  ) throws(PreloadError) -> DecodedAudio {
    let path = decoder.path
    func overBudget(_ frames: Int64) -> PreloadError {
      PreloadError(
        path: path,
        reason: .overBudget(
          neededBytes: bytes(frames: frames, channels: decoder.format.channelCount), preloadedBytes: preloadedBytes,
          budgetBytes: budgetBytes))
    }
    let channels = decoder.format.channelCount
    let block = 4096
    guard bytes(frames: decoder.lengthFrames, channels: channels) <= limitBytes else {
      throw overBudget(decoder.lengthFrames)
    }
    var capacityFrames = max(1, decoder.lengthFrames)
    var pages = PageMemory(floatCount: Int(capacityFrames) * channels)
    var frames: Int64 = 0
    var exceeded: Int64?
    // Where a read past the header's length lands, to see whether there is more at all.
    var probe = [Float](repeating: 0, count: block * channels)
    do throws(DecodeError) {
      if decoder.cursorFrames != 0 { try decoder.seek(toFrame: 0) }
      while true {
        if frames < capacityFrames {
          let room = Int(min(Int64(block), capacityFrames - frames))
          let read = try decoder.readFrames(into: pages.floats + Int(frames) * channels, frameCapacity: room)
          if read == 0 { break }
          frames += Int64(read)
          continue
        }
        // Full at the header's length: usually the end. A stream longer than its header said (an
        // MP3 without a LAME tag estimates it) grows by half.
        let read = try probe.withUnsafeMutableBufferPointer { (buffer) throws(DecodeError) -> Int in
          try decoder.readFrames(into: buffer.baseAddress!, frameCapacity: block)
        }
        if read == 0 { break }
        let grown = capacityFrames + max(Int64(block), capacityFrames / 2)
        guard bytes(frames: frames + Int64(read), channels: channels) <= limitBytes else {
          exceeded = frames + Int64(read)
          break
        }
        let larger = PageMemory(floatCount: Int(grown) * channels)
        larger.floats.update(from: pages.floats, count: Int(frames) * channels)
        (larger.floats + Int(frames) * channels).update(from: probe, count: read * channels)
        pages = larger
        capacityFrames = grown
        frames += Int64(read)
      }
    } catch {
      throw PreloadError(path: path, reason: .decode(error))
    }
    if let exceeded { throw overBudget(exceeded) }
    guard frames > 0 else {
      throw PreloadError(
        path: path, reason: .decode(DecodeError(path: path, reason: .corrupt("no audio frames decoded"))))
    }
    // Streamed, a stream that ends before its header's length plays what it has and then reports
    // the loss; kept whole it would pass for a shorter file. Refused, it streams and says so.
    guard frames >= decoder.lengthFrames else {
      throw PreloadError(
        path: path,
        reason: .decode(
          DecodeError(
            path: path,
            reason: .truncated(
              "the stream ended at frame \(frames), \(decoder.lengthFrames - frames) frames before its end"))))
    }
    if capacityFrames > frames {
      // Grown past the end: keep only what it holds.
      let exact = PageMemory(floatCount: Int(frames) * channels)
      exact.floats.update(from: pages.floats, count: Int(frames) * channels)
      pages = exact
    }
    return DecodedAudio(
      path: path, containerFormat: decoder.containerFormat, format: decoder.format, lengthFrames: frames,
      tags: decoder.tags, warnings: decoder.warnings, pages: pages)
  }
}

/// Reads a `DecodedAudio` as if it were the file: the same format, length, tags and frames, with
/// exact seeks. One per voice (each has its own cursor); the audio is shared.
final class MemoryDecoder: AudioDecoder {
  let audio: DecodedAudio
  private(set) var cursorFrames: Int64 = 0

  init(_ audio: DecodedAudio) { self.audio = audio }

  var path: String { audio.path }
  var containerFormat: ContainerFormat { audio.containerFormat }
  var format: AudioFormat { audio.format }
  var lengthFrames: Int64 { audio.lengthFrames }
  var tags: AudioTags { audio.tags }
  var artwork: Artwork? { nil }
  var warnings: [String] { audio.warnings }

  func readFrames(into buffer: UnsafeMutablePointer<Float>, frameCapacity: Int) throws(DecodeError) -> Int {
    let frames = Int(max(0, min(Int64(max(0, frameCapacity)), audio.lengthFrames - cursorFrames)))
    guard frames > 0 else { return 0 }
    let channels = audio.format.channelCount
    buffer.update(from: audio.samples + Int(cursorFrames) * channels, count: frames * channels)
    cursorFrames += Int64(frames)
    return frames
  }

  func seek(toFrame frame: Int64) throws(DecodeError) {
    guard frame >= 0, frame <= audio.lengthFrames else {
      throw DecodeError(path: path, reason: .seekOutOfRange(frame: frame, lengthFrames: audio.lengthFrames))
    }
    cursorFrames = frame
  }
}
