import Foundation

/// Sample encodings a WAV file can be written in.
public enum WAVSampleFormat: String, Sendable, CaseIterable {
  /// IEEE 32-bit float (format tag 3): what OpenAL renders, bit for bit.
  case float32 = "f32"
  /// 16-bit signed integer (format tag 1), rounded and clamped from float.
  case int16 = "s16"
}

/// Writes interleaved Float32 frames to a RIFF/WAVE file, streaming: the header's sizes are
/// patched when the writer is finished, so a 60-minute render never sits in memory.
///
/// Owns one `FileHandle`. Thread safety: one thread at a time.
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
  private let handle: FileHandle
  private var scratch: [UInt8] = []
  private var finished = false

  /// Creates (or truncates) the file at `path` and writes a provisional header.
  /// - Throws: `CocoaError` from Foundation when the file cannot be created.
  public init(path: String, sampleRate: Int, channelCount: Int, sampleFormat: WAVSampleFormat) throws {
    self.path = path
    self.sampleRate = sampleRate
    self.channelCount = channelCount
    self.sampleFormat = sampleFormat
    guard FileManager.default.createFile(atPath: path, contents: nil) else {
      throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path])
    }
    handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    try handle.write(contentsOf: header(dataBytes: 0))
  }

  deinit { try? finish() }

  private var bytesPerSample: Int { sampleFormat == .float32 ? 4 : 2 }

  /// Appends `frameCount` interleaved frames.
  public func write(_ samples: UnsafeBufferPointer<Float>, frameCount: Int) throws {
    let sampleCount = frameCount * channelCount
    switch sampleFormat {
    case .float32:
      #if _endian(little)
        // Float32 little-endian is the file's layout already: written straight from the caller.
        let bytes = UnsafeMutableRawPointer(mutating: samples.baseAddress!)
        try handle.write(contentsOf: Data(bytesNoCopy: bytes, count: sampleCount * 4, deallocator: .none))
      #else
        try writeConverted(sampleCount) { UInt32($0.bitPattern).littleEndian }
      #endif
    case .int16:
      try writeConverted(sampleCount) {
        UInt16(bitPattern: Int16((max(-1, min(1, $0)) * 32767).rounded())).littleEndian
      }
    }
    framesWritten += Int64(frameCount)

    func writeConverted<Word: FixedWidthInteger>(_ count: Int, _ convert: (Float) -> Word) throws {
      let byteCount = count * MemoryLayout<Word>.size
      if scratch.count < byteCount { scratch = [UInt8](repeating: 0, count: byteCount) }
      scratch.withUnsafeMutableBytes { raw in
        let output = raw.bindMemory(to: Word.self)
        for index in 0..<count { output[index] = convert(samples[index]) }
      }
      try scratch.withUnsafeBytes { raw in
        try handle.write(
          contentsOf: Data(
            bytesNoCopy: UnsafeMutableRawPointer(mutating: raw.baseAddress!), count: byteCount, deallocator: .none))
      }
    }
  }

  /// Patches the header with the final sizes and closes the file. Called by `deinit` if forgotten.
  public func finish() throws {
    guard !finished else { return }
    finished = true
    try handle.seek(toOffset: 0)
    try handle.write(contentsOf: header(dataBytes: Int(framesWritten) * channelCount * bytesPerSample))
    try handle.close()
  }

  /// The RIFF header. Float files carry the 18-byte fmt chunk and the fact chunk that
  /// WAVE_FORMAT_IEEE_FLOAT requires (tools such as sox warn without them).
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
