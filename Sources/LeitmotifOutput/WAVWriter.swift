import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// Sample encodings a WAV file can be written in.
public enum WAVSampleFormat: String, Sendable, CaseIterable {
  /// IEEE 32-bit float (format tag 3): what OpenAL renders, bit for bit.
  case float32 = "f32"
  /// 16-bit signed integer (format tag 1), rounded and clamped from float.
  case int16 = "s16"
}

/// A WAV file that could not be created or written: the system's reason (its description is
/// the reason alone; callers name the file).
public struct WAVWriteError: Error, CustomStringConvertible, Sendable {
  public var path: String
  public var reason: String
  /// The `errno` value.
  public var code: Int32
  public var description: String { reason }
}

/// Writes interleaved Float32 frames to a RIFF/WAVE file, streaming: the header's sizes are
/// patched when the writer is finished, so a 60-minute render never sits in memory.
///
/// Writes go through a buffer of its own (256 KB) straight to the file descriptor: a render hands
/// over a mix of 1,024 frames at a time, and a `FileHandle` write per mix (5,000 for two minutes,
/// each wrapped in `Data`) made writing the WAV 17 % of an offline render's CPU, measured with
/// perf; in 256 KB writes it is the kernel's copy and little else.
///
/// Owns the file descriptor and closes it in `finish` (or `deinit`). Thread safety: one thread
/// at a time.
public final class WAVWriter {
  /// The file being written.
  public let path: String
  /// Frames per second.
  public let sampleRate: Int
  /// Samples per frame (2 for stereo).
  public let channelCount: Int
  /// How each sample is stored.
  public let sampleFormat: WAVSampleFormat
  /// Frames written so far.
  public private(set) var framesWritten: Int64 = 0
  private var descriptor: Int32
  private let buffer: UnsafeMutableRawPointer
  private static let bufferBytes = 256 * 1024
  private var buffered = 0
  private var finished = false

  /// Creates (or truncates) the file at `path` (its UTF-8) and writes a provisional header.
  /// - Throws: `WAVWriteError` when the file cannot be created or written.
  public convenience init(path: String, sampleRate: Int, channelCount: Int, sampleFormat: WAVSampleFormat) throws {
    try self.init(
      path: path, sampleRate: sampleRate, channelCount: channelCount, sampleFormat: sampleFormat,
      withCPath: { path, body in path.withCString(body) })
  }

  /// Creates (or truncates) the file at `path` and writes a provisional header.
  /// `withCPath`: gives the bytes the kernel knows `path` by (the decoding layer's
  /// `FileSystemPath.withCString`, for a name that is not UTF-8).
  /// - Throws: `WAVWriteError` when the file cannot be created or written.
  public init(
    path: String, sampleRate: Int, channelCount: Int, sampleFormat: WAVSampleFormat,
    withCPath: (String, (UnsafePointer<CChar>) -> Int32) -> Int32
  ) throws {
    self.path = path
    self.sampleRate = sampleRate
    self.channelCount = channelCount
    self.sampleFormat = sampleFormat
    descriptor = withCPath(path) { open($0, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
    guard descriptor >= 0 else { throw Self.error(path: path, errno: errno) }
    buffer = .allocate(byteCount: Self.bufferBytes, alignment: 16)
    let header = header(dataBytes: 0)
    do {
      try header.withUnsafeBytes { try append($0) }
    } catch {
      close(descriptor)
      buffer.deallocate()
      throw error
    }
  }

  deinit {
    try? finish()
    buffer.deallocate()
  }

  private var bytesPerSample: Int { sampleFormat == .float32 ? 4 : 2 }

  /// Appends `frameCount` interleaved frames from `samples`.
  public func write(_ samples: UnsafeBufferPointer<Float>, frameCount: Int) throws {
    let sampleCount = frameCount * channelCount
    switch sampleFormat {
    case .float32:
      #if _endian(little)
        // Float32 little-endian is the file's layout already: copied as it is.
        try append(UnsafeRawBufferPointer(start: samples.baseAddress, count: sampleCount * 4))
      #else
        try appendConverted(sampleCount, as: UInt32.self) { UInt32($0.bitPattern).littleEndian }
      #endif
    case .int16:
      try appendInt16(sampleCount)
    }
    framesWritten += Int64(frameCount)

    /// Clamped to ±1, scaled by 32767 and rounded half away from zero, straight into the buffer,
    /// in vector code (`convertToInt16`); it was a quarter of an MP3 render's instructions one
    /// sample at a time.
    func appendInt16(_ count: Int) throws {
      var done = 0
      while done < count {
        if buffered + 2 > Self.bufferBytes { try flush() }
        let chunk = min((Self.bufferBytes - buffered) / 2, count - done)
        let output = (buffer + buffered).bindMemory(to: Int16.self, capacity: chunk)
        WAVWriter.convertToInt16(samples.baseAddress! + done, output, count: chunk)
        buffered += chunk * 2
        done += chunk
      }
    }

    /// Converts straight into the buffer, a buffer's worth at a time.
    func appendConverted<Word: FixedWidthInteger>(_ count: Int, as: Word.Type, _ convert: (Float) -> Word) throws {
      var done = 0
      while done < count {
        if buffered + MemoryLayout<Word>.size > Self.bufferBytes { try flush() }
        let room = (Self.bufferBytes - buffered) / MemoryLayout<Word>.size
        let chunk = min(room, count - done)
        let output = (buffer + buffered).bindMemory(to: Word.self, capacity: chunk)
        for index in 0..<chunk { output[index] = convert(samples[done + index]) }
        buffered += chunk * MemoryLayout<Word>.size
        done += chunk
      }
    }
  }

  /// One sample as 16 bits: `max(-1, min(1, x))` (NaN clamps to 1, as those two do), times
  /// 32767 in Float, rounded half away from zero. Every step is a select or an exact float
  /// operation, with no libm call (`truncf`, as `rounded` compiles for the baseline x86-64) and
  /// no trapping conversion, so a loop of it vectorizes:
  /// - `|scaled| + 0.5` is exact: `scaled` is a multiple of 2^-8 below 2^15 in size, so is the sum;
  /// - adding and taking away 1.5 × 2^23 rounds a number below 2^22 to the nearest whole one
  ///   (ties to even), and one less where that went up is the floor: the rounding half away from
  ///   zero of `|scaled|`;
  /// - adding 1.5 × 2^23 to the signed whole number puts it in the low bits of the float's
  ///   pattern, whose low 16 bits are then its two's complement.
  /// The files come out byte for byte as the earlier per-sample conversion in Double made them
  /// (tested against it).
  @inline(__always)
  package static func int16Sample(_ x: Float) -> Int16 {
    let magic: Float = 12_582_912
    let upper = x < 1 ? x : 1
    let clamped = upper >= -1 ? upper : -1
    let scaled = clamped * 32767
    let shifted = scaled.magnitude + 0.5
    let nearest = (shifted + magic) - magic
    let whole = nearest > shifted ? nearest - 1 : nearest
    let signed = scaled < 0 ? -whole : whole
    return Int16(truncatingIfNeeded: (signed + magic).bitPattern)
  }

  /// Completes the header's sizes and closes the file.
  public func finish() throws {
    guard !finished else { return }
    finished = true
    defer {
      close(descriptor)
      descriptor = -1
    }
    try flush()
    let header = header(dataBytes: Int(framesWritten) * channelCount * bytesPerSample)
    try header.withUnsafeBytes { raw in
      var done = 0
      while done < raw.count {
        let wrote = pwrite(descriptor, raw.baseAddress! + done, raw.count - done, off_t(done))
        if wrote < 0 && errno == EINTR { continue }
        guard wrote > 0 else { throw Self.error(path: path, errno: errno) }
        done += wrote
      }
    }
  }

  private func append(_ bytes: UnsafeRawBufferPointer) throws {
    var done = 0
    while done < bytes.count {
      if buffered == Self.bufferBytes { try flush() }
      let chunk = min(Self.bufferBytes - buffered, bytes.count - done)
      (buffer + buffered).copyMemory(from: bytes.baseAddress! + done, byteCount: chunk)
      buffered += chunk
      done += chunk
    }
  }

  private func flush() throws {
    var done = 0
    while done < buffered {
      let wrote = Glibc.write(descriptor, buffer + done, buffered - done)
      if wrote < 0 && errno == EINTR { continue }
      guard wrote > 0 else { throw Self.error(path: path, errno: errno) }
      done += wrote
    }
    buffered = 0
  }

  private static func error(path: String, errno code: Int32) -> WAVWriteError {
    WAVWriteError(path: path, reason: String(cString: strerror(code)), code: code)
  }

  private func header(dataBytes: Int) -> Data {
    var data = Data()
    func append<T: FixedWidthInteger>(_ value: T) {
      withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
    }
    let isFloat = sampleFormat == .float32
    let blockAlign = channelCount * bytesPerSample
    let formatChunkBytes = isFloat ? 18 : 16
    let factChunkBytes = isFloat ? 12 : 0
    data.append(contentsOf: Array("RIFF".utf8))
    append(UInt32(truncatingIfNeeded: 4 + (8 + formatChunkBytes) + factChunkBytes + 8 + dataBytes))
    data.append(contentsOf: Array("WAVEfmt ".utf8))
    append(UInt32(formatChunkBytes))
    append(UInt16(isFloat ? 3 : 1))
    append(UInt16(channelCount))
    append(UInt32(sampleRate))
    append(UInt32(sampleRate * blockAlign))
    append(UInt16(blockAlign))
    append(UInt16(bytesPerSample * 8))
    if isFloat {
      append(UInt16(0))  // cbSize: no extension
      data.append(contentsOf: Array("fact".utf8))
      append(UInt32(4))
      append(UInt32(truncatingIfNeeded: dataBytes / max(blockAlign, 1)))
    }
    data.append(contentsOf: Array("data".utf8))
    append(UInt32(truncatingIfNeeded: dataBytes))
    return data
  }
}

/// A WAV file read back whole: for tests and tools that check what was rendered.
public struct WAVFile: Sendable {
  /// Frames per second.
  public var sampleRate: Int
  /// Samples per frame (2 for stereo).
  public var channelCount: Int
  /// Interleaved samples, converted to Float.
  public var samples: [Float]
  /// The file's length in frames.
  public var frameCount: Int { samples.count / max(channelCount, 1) }

  /// Why a file could not be read as a PCM 16-bit or float 32-bit WAV file.
  public struct FormatError: Error, CustomStringConvertible {
    /// The file.
    public var path: String
    /// What is wrong with it.
    public var reason: String
    /// "PATH: REASON".
    public var description: String { "\(path): \(reason)" }
  }

  /// Reads a PCM 16-bit or float 32-bit WAV file.
  public init(path: String) throws {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    let bytes = [UInt8](data)
    func u32(_ at: Int) -> Int {
      Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24
    }
    func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
    guard bytes.count >= 12, bytes.starts(with: Array("RIFF".utf8)), Array(bytes[8..<12]) == Array("WAVE".utf8) else {
      throw FormatError(path: path, reason: "not a RIFF/WAVE file")
    }
    var offset = 12
    var formatTag = 0, channels = 0, rate = 0, bits = 0
    var samples: [Float] = []
    while offset + 8 <= bytes.count {
      let id = String(decoding: bytes[offset..<(offset + 4)], as: UTF8.self)
      let size = u32(offset + 4)
      let body = offset + 8
      if id == "fmt " {
        formatTag = u16(body)
        channels = u16(body + 2)
        rate = u32(body + 4)
        bits = u16(body + 14)
      } else if id == "data" {
        let end = min(bytes.count, body + size)
        if formatTag == 3 && bits == 32 {
          samples.reserveCapacity((end - body) / 4)
          var at = body
          while at + 4 <= end {
            samples.append(Float(bitPattern: UInt32(u32(at))))
            at += 4
          }
        } else if formatTag == 1 && bits == 16 {
          samples.reserveCapacity((end - body) / 2)
          var at = body
          while at + 2 <= end {
            samples.append(Float(Int16(bitPattern: UInt16(u16(at)))) / 32767)
            at += 2
          }
        } else {
          throw FormatError(path: path, reason: "unsupported WAV encoding (tag \(formatTag), \(bits) bits)")
        }
      }
      offset = body + size + (size & 1)
    }
    guard channels > 0, rate > 0 else { throw FormatError(path: path, reason: "no fmt chunk") }
    self.sampleRate = rate
    self.channelCount = channels
    self.samples = samples
  }
}
