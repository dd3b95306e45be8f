import Foundation
import LeitmotifCues
import LeitmotifDecoding
import LeitmotifLibrary

#if canImport(Glibc)
  import Glibc
#endif

/// What the fuzzers feed with untrusted bytes, one entry point each: libFuzzer's driver in Fuzz/
/// (built with `make fuzz`) and the replay of the committed corpus in the tests call the same
/// code, so every input a fuzzer kept or crashed on stays a regression test.
///
/// Each run returns normally for any input: a thrown error is the expected answer to bad input;
/// a trap, a hang or a leak is what the fuzzers look for.
public enum FuzzTarget: String, CaseIterable, Sendable {
  /// The JSON5 parser and the cue file checker.
  case cueFile = "cue-file"
  /// The level script parser (`cues simulate --events`).
  case levelScript = "level-script"
  /// The Ogg Vorbis decoder: open, read, seek to the middle, read.
  case vorbis
  /// The MP3 decoder, the same way.
  case mp3
  /// The FLAC decoder, the same way.
  case flac
  /// The Ogg Opus decoder, the same way.
  case opus
  /// The WAV and AIFF decoder (libsndfile), the same way.
  case wav
  /// Tags: Vorbis-comment-style `NAME=VALUE` lines into the tag collector (loop points, track
  /// numbers, ReplayGain, BPM), then the rest of the input as an ID3v2 tag in front of MP3 audio.
  case tags
  /// Playlist lines, as M3U and as PLS, and their paths resolved.
  case playlist
  /// The consent answers file and the administrator's policy file.
  case consent

  /// Runs the target on `bytes`.
  public func run(_ bytes: UnsafeRawBufferPointer) {
    switch self {
    case .cueFile:
      _ = CueSheet.check(String(decoding: bytes, as: UTF8.self), path: "/nonexistent/fuzz/cues.json5")
    case .levelScript:
      _ = try? CueScript.parse(String(decoding: bytes, as: UTF8.self), path: "/nonexistent/fuzz/level.json5")
    case .vorbis, .mp3, .flac, .opus, .wav:
      Self.decode(bytes)
    case .tags:
      Self.tags(bytes)
    case .playlist:
      let text = String(decoding: bytes, as: UTF8.self)
      for isPLS in [false, true] {
        var name = ""
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
          if let entry = PlaylistImporter.entry(in: String(line), isPLS: isPLS, name: &name) {
            _ = PlaylistImporter.resolve(entry, relativeTo: "/nonexistent/fuzz/music")
          }
        }
      }
    case .consent:
      let data = Data(bytes)
      _ = LibraryAccessStore.decode(data)
      _ = AccessPolicy.file("/nonexistent/fuzz/policy.json", read: .success(data))
    }
  }

  /// Decodes the bytes as a file: from memory (a memfd, which `fstat` calls a regular file).
  /// Reads at most `frameBudget` frames, so a tiny input that claims hours of audio still ends.
  static let frameBudget = 1 << 20

  private static func decode(_ bytes: UnsafeRawBufferPointer) {
    withMemoryFile(bytes) { path in
      guard let decoder = try? AudioFile.openDecoder(path: path) else { return }
      let channels = decoder.format.channelCount
      var block = [Float](repeating: 0, count: 4096 * channels)
      func read(limit: Int) {
        var got = 0
        while got < limit {
          let frames =
            (try? block.withUnsafeMutableBufferPointer { (pointer) throws(DecodeError) -> Int in
              try decoder.readFrames(into: pointer.baseAddress!, frameCapacity: 4096)
            }) ?? 0
          if frames == 0 { return }
          got += frames
        }
      }
      read(limit: min(frameBudget / 2, 65_536))
      try? decoder.seek(toFrame: decoder.lengthFrames / 2)
      read(limit: frameBudget / 2)
      _ = decoder.tags
      _ = decoder.warnings
    }
  }

  private static func tags(_ bytes: UnsafeRawBufferPointer) {
    // Up to the first zero byte: NAME=VALUE lines.
    let split = bytes.firstIndex(of: 0) ?? bytes.count
    var collector = TagCollector()
    // Pictures too: METADATA_BLOCK_PICTURE's base64 and the FLAC picture block inside it.
    collector.keepsArtwork = true
    _ = Artwork.flacPictureBlock(Array(bytes[0..<split]))
    let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0..<split]), as: UTF8.self)
    // Each line as the decoders hand a Vorbis comment over (Vorbis, Opus and FLAC alike).
    for line in text.split(whereSeparator: \.isNewline) {
      var bytes = Array(line.utf8)
      bytes.withUnsafeMutableBytes { collector.add(comment: UnsafeRawBufferPointer($0)) }
    }
    for length in [Int64(0), 1, 44_100, Int64.max] { _ = collector.finished(lengthFrames: length) }
    // The rest: an ID3v2.3 tag's frames (the header is made here, so the size always fits) in
    // front of ten silent MPEG-1 layer III frames (128 kbit/s, 44.1 kHz: 417 bytes each).
    let body = split < bytes.count ? Array(bytes[(split + 1)...]) : []
    let size = min(body.count, (1 << 28) - 1)
    var file: [UInt8] = Array("ID3".utf8) + [3, 0, 0]
    file += [UInt8((size >> 21) & 0x7F), UInt8((size >> 14) & 0x7F), UInt8((size >> 7) & 0x7F), UInt8(size & 0x7F)]
    file += body[0..<size]
    for _ in 0..<10 { file += [0xFF, 0xFB, 0x90, 0x00] + [UInt8](repeating: 0, count: 413) }
    file.withUnsafeBytes { decode($0) }
  }

  /// Runs `body` with a path to a file holding `bytes`: a file on /dev/shm (memory), unlinked at
  /// once and reached through /proc/self/fd, so nothing is left behind by a crash.
  private static func withMemoryFile(_ bytes: UnsafeRawBufferPointer, _ body: (String) -> Void) {
    let folder = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
    let name = "\(folder)/leitmotif-fuzz-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
    let descriptor = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { return }
    unlink(name)
    defer { close(descriptor) }
    var offset = 0
    while offset < bytes.count {
      let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
      if written <= 0 { return }
      offset += written
    }
    body("/proc/self/fd/\(descriptor)")
  }
}
