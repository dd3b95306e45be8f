import Foundation
import Leitmotif
import LeitmotifFixtures

#if canImport(Glibc)
  import Glibc
#endif

/// The audio files the bench measures, made on the spot from `ToneGenerator.musicLike` (a
/// plucked arpeggio over a bass line: it costs a codec about what real music does, unlike a sine
/// or silence) at 44.1 kHz stereo.
///
/// Every file is generated block by block and handed straight to its encoder, so making a
/// 60-minute file never holds more than one block of samples in memory.
///
/// Caching: encoding an hour of audio takes a while, so by default the files are kept in
/// `$TMPDIR/leitmotif-bench-cache/<cacheVersion>/`, named after what is in them (codec, quality,
/// length). Bump `cacheVersion` whenever the signal or the encoding changes, so stale files are
/// never measured. A file is written under a temporary name and renamed into place only when
/// complete, so an interrupted run never leaves a truncated file to be reused. With `--no-cache`
/// the files go to a fresh temporary directory that is deleted at the end.
final class BenchFiles {
  static let cacheVersion = "v1"
  static let format = PCMFormat.stereo44100
  static let seed: UInt64 = 0x4C4D_5446
  /// Frames generated and encoded per step: 1.5 s, small next to any file.
  static let blockFrames = 65_536

  let directory: String
  /// Keeps a `--no-cache` directory alive (and deletes it when the bench is done).
  private let temporary: TemporaryDirectory?

  struct Failure: Error, CustomStringConvertible {
    var description: String
  }

  init(useCache: Bool) throws {
    if useCache {
      let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
      directory = "\(base)/leitmotif-bench-cache/\(Self.cacheVersion)"
      try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
      temporary = nil
    } else {
      let made = try TemporaryDirectory(prefix: "leitmotif-bench-files")
      directory = made.path
      temporary = made
    }
  }

  static func minutesLabel(_ minutes: Double) -> String {
    minutes == minutes.rounded() ? "\(Int(minutes))min" : String(format: "%gmin", minutes)
  }

  // MARK: - Ogg Vorbis

  /// The path of an Ogg Vorbis file of `minutes` at libvorbisenc `quality`, made if missing.
  func vorbis(minutes: Double, quality: Float) throws -> String {
    let path = "\(directory)/music-\(Self.minutesLabel(minutes))-q\(String(format: "%.1f", quality)).ogg"
    if FileManager.default.fileExists(atPath: path) { return path }
    let partial = path + ".partial"
    let encoder = try VorbisEncoder(path: partial, format: Self.format, quality: quality)
    try Self.generate(minutes: minutes, label: (path as NSString).lastPathComponent) { block in
      try encoder.write(frames: block)
    }
    try encoder.finish()
    try Self.commit(partial, to: path)
    return path
  }

  /// An Ogg Vorbis file of `minutes` at 48 kHz (the mix rate, so no player resamples it), its own
  /// arpeggio chosen by `seed`, made if missing.
  func vorbis48k(minutes: Double, quality: Float, seed: UInt64) throws -> String {
    let path =
      "\(directory)/music48k-\(Self.minutesLabel(minutes))-q\(String(format: "%.1f", quality))-seed\(seed).ogg"
    if FileManager.default.fileExists(atPath: path) { return path }
    let partial = path + ".partial"
    let encoder = try VorbisEncoder(path: partial, format: .stereo48000, quality: quality)
    try Self.generate(
      minutes: minutes, label: (path as NSString).lastPathComponent, format: .stereo48000, seed: seed
    ) { block in
      try encoder.write(frames: block)
    }
    try encoder.finish()
    try Self.commit(partial, to: path)
    return path
  }

  // MARK: - MP3

  /// An MP3 being made: `lame` runs in its own process while the bench goes on (it uses the second
  /// core while the Vorbis files are encoded). `wait()` gives the path once it is done.
  final class PendingMP3 {
    let path: String
    private let process: Process?
    private let wavPath: String?

    fileprivate init(path: String, process: Process?, wavPath: String?) {
      self.path = path
      self.process = process
      self.wavPath = wavPath
    }

    func wait() throws -> String {
      guard let process, let wavPath else { return path }
      process.waitUntilExit()
      unlink(wavPath)
      guard process.terminationReason == .exit, process.terminationStatus == 0 else {
        let why =
          process.terminationStatus == 127
          ? "the lame command was not found (apt-get install lame)"
          : "lame failed with status \(process.terminationStatus)"
        throw Failure(description: "cannot make \(path): \(why)")
      }
      try BenchFiles.commit(path + ".partial.mp3", to: path)
      return path
    }
  }

  /// Starts making an MP3 of `minutes` at a constant `kilobitsPerSecond`, if it is not cached:
  /// writes the signal to a 16-bit WAV (lame's usual input) and runs `lame` on it.
  func startMP3(minutes: Double, kilobitsPerSecond: Int) throws -> PendingMP3 {
    let path = "\(directory)/music-\(Self.minutesLabel(minutes))-\(kilobitsPerSecond)k.mp3"
    if FileManager.default.fileExists(atPath: path) { return PendingMP3(path: path, process: nil, wavPath: nil) }
    let wavPath = path + ".source.wav"
    let writer = try WAVWriter(
      path: wavPath, sampleRate: Self.format.sampleRate, channelCount: Self.format.channelCount, sampleFormat: .int16)
    try Self.generate(minutes: minutes, label: (wavPath as NSString).lastPathComponent) { block in
      try writer.write(block, frameCount: block.count / Self.format.channelCount)
    }
    try writer.finish()
    progress("encoding \((path as NSString).lastPathComponent) with lame (in the background)")
    let process = Process()
    // Through env, so lame is found on PATH; env exits with 127 when it is not there.
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["lame", "--quiet", "-b", "\(kilobitsPerSecond)", wavPath, path + ".partial.mp3"]
    try process.run()
    return PendingMP3(path: path, process: process, wavPath: wavPath)
  }

  // MARK: - Helpers

  /// Generates `minutes` of the signal block by block, handing each block to `consume`, with a
  /// progress line on stderr every tenth of the way for files long enough to make one wait.
  private static func generate(
    minutes: Double, label: String, format: PCMFormat = BenchFiles.format, seed: UInt64 = BenchFiles.seed,
    _ consume: (UnsafeBufferPointer<Float>) throws -> Void
  ) throws {
    let totalFrames = format.frames(seconds: minutes * 60)
    let started = Stopwatch()
    let reportEvery = max(totalFrames / 10, 1)
    var nextReport = reportEvery
    var start = 0
    progress("making \(label) (\(String(format: "%g", minutes)) min)")
    while start < totalFrames {
      let count = min(blockFrames, totalFrames - start)
      let samples = ToneGenerator.musicLike(seed: seed, frameCount: count, format: format, startFrame: start)
      try samples.withUnsafeBufferPointer { try consume($0) }
      start += count
      if minutes >= 5 && start >= nextReport && start < totalFrames {
        progress(
          String(
            format: "  %@: %.0f%% (%.1f of %g min) after %.0f s", label, 100 * Double(start) / Double(totalFrames),
            Double(start) / Double(format.sampleRate) / 60, minutes, started.seconds))
        nextReport += reportEvery
      }
    }
    progress(String(format: "  %@: done in %.1f s", label, started.seconds))
  }

  /// Moves a finished file into its cached name (atomic within one directory).
  fileprivate static func commit(_ partial: String, to path: String) throws {
    guard rename(partial, path) == 0 else {
      throw Failure(description: "cannot rename \(partial) to \(path): errno \(errno)")
    }
  }
}
