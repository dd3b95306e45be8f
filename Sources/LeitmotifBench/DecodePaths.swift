import CMPG123
import CVorbisFile
import Foundation
import Leitmotif

#if canImport(Glibc)
  import Glibc
#endif

/// The three ways a file is decoded in the speed comparison. Each opens the file, decodes all of
/// it and closes it, and returns the number of frames it produced: opening is part of the cost in
/// all three, so none of them is favoured by leaving it out.
enum DecodePath: CaseIterable {
  /// The C library alone, in the plainest loop its documentation shows: the ceiling.
  case raw
  /// Leitmotif's decoder (`AudioFile.openDecoder` + `readFrames`), as the engine's streaming
  /// thread uses it: interleaved Float32 out.
  case engine
  /// A whole offline render: decoder, streaming loop, OpenAL loopback mix and the WAV written
  /// to a file.
  case render
  /// The same render with its WAV written to /dev/null: every step of the render (the writer's
  /// conversion and its `write` calls included) but the kernel's copy into the page cache. On the
  /// virtual machines here that copy costs whatever the host makes it cost: `dd` of 216 MB (a
  /// 10-minute float WAV) into a new file took 0.36 s of system time once and 0.05 s right after,
  /// when the freed pages were reused, so the file path's figure swings with the host's memory
  /// and not with Leitmotif.
  case renderDiscarded

  /// The path named `raw`, `engine`, `render` or `render-null`.
  init?(name: String) {
    switch name {
    case "raw": self = .raw
    case "engine": self = .engine
    case "render": self = .render
    case "render-null": self = .renderDiscarded
    default: return nil
    }
  }

  struct Failure: Error, CustomStringConvertible {
    var description: String
  }

  func label(for container: ContainerFormat) -> String {
    switch (self, container) {
    case (.raw, .vorbis): return "raw libvorbisfile"
    case (.raw, .mp3): return "raw libmpg123"
    case (.raw, .flac): return "raw libFLAC"
    case (.raw, .opus): return "raw opusfile"
    case (.raw, .wav), (.raw, .aiff): return "raw libsndfile"
    case (.engine, _): return "engine decode"
    case (.render, _): return "offline render, WAV file"
    case (.renderDiscarded, _): return "offline render, WAV to /dev/null"
    }
  }

  /// Decodes `path` once this way. `scratchDirectory` receives the render's WAV, deleted after.
  /// `renderOptions` are the benchmark's defaults but for `decode-once` experiments.
  func run(
    path: String, container: ContainerFormat, scratchDirectory: String,
    renderOptions: OfflineRenderer.Options = OfflineRenderer.Options()
  ) throws -> Int64 {
    switch self {
    case .raw:
      switch container {
      case .vorbis: return try RawDecoders.vorbis(path: path)
      case .mp3: return try RawDecoders.mp3(path: path)
      case .flac, .opus, .wav, .aiff:
        throw Failure(description: "the decode benchmark has raw paths for Vorbis and MP3 only (its files)")
      }
    case .engine: return try Self.engineDecode(path: path)
    case .render: return try Self.offlineRender(path: path, scratchDirectory: scratchDirectory, options: renderOptions)
    case .renderDiscarded: return try Self.offlineRender(path: path, output: "/dev/null", options: renderOptions)
    }
  }

  /// 4096 frames per call: the size of one of the engine's OpenAL buffers (`Voice.framesPerBuffer`),
  /// so this is exactly the read pattern of the streaming thread.
  static let engineFramesPerRead = 4096

  static func engineDecode(path: String) throws -> Int64 {
    let decoder = try AudioFile.openDecoder(path: path)
    let channels = decoder.format.channelCount
    let buffer = UnsafeMutablePointer<Float>.allocate(capacity: engineFramesPerRead * channels)
    defer { buffer.deallocate() }
    var frames: Int64 = 0
    while true {
      let got = try decoder.readFrames(into: buffer, frameCapacity: engineFramesPerRead)
      if got == 0 { break }
      frames += Int64(got)
    }
    return frames
  }

  /// `OfflineRenderer.render` with its defaults: Float32 WAV at the file's own rate (so OpenAL
  /// does not resample), 1024-frame mixes. The WAV goes to the scratch directory and is deleted
  /// at once, so a long run does not fill the disk.
  static func offlineRender(path: String, scratchDirectory: String, options: OfflineRenderer.Options) throws -> Int64 {
    let output = "\(scratchDirectory)/render-\(getpid()).wav"
    defer { unlink(output) }
    return try offlineRender(path: path, output: output, options: options)
  }

  static func offlineRender(path: String, output: String, options: OfflineRenderer.Options) throws -> Int64 {
    let result = try OfflineRenderer.render(path: path, to: output, options: options)
    if let failure = result.failure { throw Failure(description: "render of \(path) failed: \(failure)") }
    return result.framesWritten
  }
}

/// The C decoders driven directly, with none of Leitmotif in between: the reference the engine is
/// measured against. Each loop is the one the library's own documentation shows, with the output
/// asked for in the form the engine asks for it (Float32), so the difference between this and the
/// engine is exactly what the engine adds (its I/O callbacks, interleaving, bookkeeping).
enum RawDecoders {
  /// libvorbisfile: `ov_fopen` (stdio I/O), then `ov_read_float` until it returns 0. It hands back
  /// pointers into its own planar buffers, at most one packet per call; nothing is copied.
  static func vorbis(path: String) throws -> Int64 {
    try withVorbisFile(path) { file in try readAll(file, path) }
  }

  /// Opens `path` with `ov_fopen`, runs `body` on it, and clears it.
  private static func withVorbisFile<Result>(
    _ path: String, _ body: (UnsafeMutablePointer<OggVorbis_File>) throws -> Result
  ) throws -> Result {
    // OggVorbis_File points into itself: it lives on the heap and is never copied.
    let file = UnsafeMutablePointer<OggVorbis_File>.allocate(capacity: 1)
    defer { file.deallocate() }
    let opened = ov_fopen(path, file)
    guard opened == 0 else { throw DecodePath.Failure(description: "ov_fopen(\(path)) failed: \(opened)") }
    defer { ov_clear(file) }
    return try body(file)
  }

  private static func readAll(_ file: UnsafeMutablePointer<OggVorbis_File>, _ path: String) throws -> Int64 {
    var planar: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>? = nil
    var link: Int32 = 0
    var frames: Int64 = 0
    while true {
      let got = ov_read_float(file, &planar, 4096, &link)
      if got == 0 { break }
      if got == OV_HOLE { continue }
      guard got > 0 else { throw DecodePath.Failure(description: "ov_read_float(\(path)) failed: \(got)") }
      frames += Int64(got)
    }
    return frames
  }

  /// libvorbisfile as a stream's decode thread runs it in real time: `burstFrames` decoded
  /// (`ov_read_float`, looping the file), then a sleep as long as they play, for `seconds` of
  /// wall time. Returns this thread's CPU over the window (user + kernel, so waking counts) and
  /// the frames decoded.
  static func vorbisPaced(path: String, seconds: Double, burstFrames: Int, sampleRate: Int) throws -> (
    cpuSeconds: Double, frames: Int64
  ) {
    try withVorbisFile(path) { file in
      try readPaced(file, path, seconds: seconds, burstFrames: burstFrames, sampleRate: sampleRate)
    }
  }

  private static func readPaced(
    _ file: UnsafeMutablePointer<OggVorbis_File>, _ path: String, seconds: Double, burstFrames: Int, sampleRate: Int
  ) throws -> (cpuSeconds: Double, frames: Int64) {
    var planar: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>? = nil
    var link: Int32 = 0
    var frames: Int64 = 0
    let before = CPUUsage.now()
    let start = DispatchTime.now().uptimeNanoseconds
    while Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 < seconds {
      var burst = 0
      while burst < burstFrames {
        let got = ov_read_float(file, &planar, Int32(min(4096, burstFrames - burst)), &link)
        if got == 0 {
          guard ov_pcm_seek(file, 0) == 0 else { throw DecodePath.Failure(description: "ov_pcm_seek(\(path)) failed") }
          continue
        }
        if got == OV_HOLE { continue }
        guard got > 0 else { throw DecodePath.Failure(description: "ov_read_float(\(path)) failed: \(got)") }
        burst += Int(got)
      }
      frames += Int64(burst)
      usleep(UInt32(Double(burstFrames) / Double(sampleRate) * 1e6))
    }
    return (CPUUsage.now().since(before).threadSeconds, frames)
  }

  /// The output buffer of the libmpg123 loop: 64 KB, as in libmpg123's examples.
  static let mp3BufferBytes = 65_536

  /// libmpg123: `mpg123_open` (its own file reader), Float32 output exactly as the engine sets it
  /// up (`mpg123_format_none` + `mpg123_format2(..., MPG123_ENC_FLOAT_32)`), then `mpg123_read`
  /// into a 64 KB buffer until `MPG123_DONE`. Gapless is on by default, as in the engine, so both
  /// produce the same number of frames.
  static func mp3(path: String) throws -> Int64 {
    var code: Int32 = 0
    guard let handle = mpg123_new(nil, &code) else {
      throw DecodePath.Failure(description: "mpg123_new failed: \(code)")
    }
    defer { mpg123_delete(handle) }
    func check(_ result: Int32, _ call: String) throws {
      guard result == MPG123_OK.rawValue else {
        throw DecodePath.Failure(description: "\(call)(\(path)) failed: \(result)")
      }
    }
    // Swift cannot see the macro `mpg123_param`; `mpg123_param2` is the function behind it.
    try check(mpg123_param2(handle, Int32(MPG123_ADD_FLAGS.rawValue), Int(MPG123_QUIET.rawValue), 0), "mpg123_param2")
    try check(mpg123_format_none(handle), "mpg123_format_none")
    try check(
      mpg123_format2(
        handle, 0, Int32(MPG123_MONO.rawValue | MPG123_STEREO.rawValue), Int32(MPG123_ENC_FLOAT_32.rawValue)),
      "mpg123_format2")
    try check(mpg123_open(handle, path), "mpg123_open")
    defer { mpg123_close(handle) }
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: mp3BufferBytes, alignment: 16)
    defer { buffer.deallocate() }
    var channels = 2
    var bytes: Int64 = 0
    while true {
      var done = 0
      let result = mpg123_read(handle, buffer, mp3BufferBytes, &done)
      bytes += Int64(done)
      if result == MPG123_OK.rawValue { continue }
      if result == MPG123_DONE.rawValue { break }
      if result == MPG123_NEW_FORMAT.rawValue {
        var rate = 0
        var count: Int32 = 0
        var encoding: Int32 = 0
        try check(mpg123_getformat(handle, &rate, &count, &encoding), "mpg123_getformat")
        channels = Int(count)
        continue
      }
      throw DecodePath.Failure(description: "mpg123_read(\(path)) failed: \(result)")
    }
    return bytes / Int64(4 * channels)
  }
}
