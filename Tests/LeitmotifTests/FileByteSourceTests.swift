import Foundation
import LeitmotifFixtures
import Testing

@testable import LeitmotifDecoding

#if canImport(Glibc)
  import Glibc
#endif

/// `FileByteSource` reads a file on disk through a read-ahead buffer and seeks by moving its
/// position only. Whatever the decoders ask for, in whatever order, must be exactly the file's
/// bytes: checked here against the file's contents held in memory, over thousands of reads and
/// seeks of every kind (small reads served by the buffer, reads that straddle its end, reads
/// larger than it, seeks back into it and far away, reads at and past the end).
@Suite("FileByteSource: the read-ahead gives exactly the file's bytes")
struct FileByteSourceTests {
  /// A file of `count` seeded random bytes, and those bytes.
  static func randomFile(in directory: TemporaryDirectory, count: Int, seed: UInt64) throws -> (String, [UInt8]) {
    var generator = SplitMix64(seed: seed)
    let bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
    let path = directory.file("bytes-\(seed).bin")
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return (path, bytes)
  }

  @Test("Random reads and seeks give the file's bytes and the positions lseek would", arguments: [1, 2, 3] as [UInt64])
  func randomReadsAndSeeks(seed: UInt64) throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-bytesource")
    let size = 3 * FileByteSource.readAheadBytes + 1_234
    let (path, bytes) = try Self.randomFile(in: directory, count: size, seed: seed)
    let source = try FileByteSource(path: path)
    #expect(source.sizeBytes == Int64(size))
    var generator = SplitMix64(seed: seed &+ 100)
    var position = 0
    let scratch = UnsafeMutableRawPointer.allocate(byteCount: 2 * FileByteSource.readAheadBytes + 64, alignment: 16)
    defer { scratch.deallocate() }
    for step in 0..<3_000 {
      let choice = generator.next() % 10
      if choice < 6 {
        // Mostly small reads (as libmpg123's frame headers and bodies), some larger than the buffer.
        let count: Int
        switch generator.next() % 4 {
        case 0: count = Int(generator.next() % 8) + 1
        case 1: count = Int(generator.next() % 600) + 1
        case 2: count = Int(generator.next() % UInt64(FileByteSource.readAheadBytes)) + 1
        default: count = Int(generator.next() % UInt64(2 * FileByteSource.readAheadBytes)) + 1
        }
        let got = source.read(into: scratch, count: count)
        let expected = max(0, min(count, size - position))
        try #require(got == expected, "step \(step): read \(count) at \(position) gave \(got), not \(expected)")
        let read = [UInt8](UnsafeRawBufferPointer(start: scratch, count: got))
        try #require(
          read == Array(bytes[min(position, size)..<min(position, size) + got]),
          "step \(step): the \(got) bytes read at \(position) differ from the file's")
        position += got
      } else {
        let target: Int
        let result: Int64
        switch generator.next() % 4 {
        case 0:
          // Back into what was just read (decoders resync this way).
          target = max(0, position - Int(generator.next() % 700))
          result = source.seek(offset: Int64(target - position), whence: SEEK_CUR)
        case 1:
          target = Int(generator.next() % UInt64(size + 100))  // sometimes past the end
          result = source.seek(offset: Int64(target), whence: SEEK_SET)
        case 2:
          let back = Int(generator.next() % 5_000)
          target = max(0, size - back)
          result = source.seek(offset: Int64(target - size), whence: SEEK_END)
        default:
          target = position
          result = source.seek(offset: 0, whence: SEEK_CUR)
        }
        try #require(result == Int64(target), "step \(step): seek to \(target) gave \(result)")
        position = target
      }
    }
  }

  @Test("A read across the buffer's end, a seek before the start, and a read at the end")
  func edges() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-bytesource")
    let size = FileByteSource.readAheadBytes + 1_000
    let (path, bytes) = try Self.randomFile(in: directory, count: size, seed: 9)
    let source = try FileByteSource(path: path)
    var buffer = [UInt8](repeating: 0, count: 300)
    // Fill the read-ahead from 0 (one small read), then read 300 bytes that end past it.
    #expect(buffer.withUnsafeMutableBytes { source.read(into: $0.baseAddress!, count: 1) } == 1)
    #expect(source.seek(offset: Int64(FileByteSource.readAheadBytes - 150), whence: SEEK_SET) > 0)
    #expect(buffer.withUnsafeMutableBytes { source.read(into: $0.baseAddress!, count: 300) } == 300)
    #expect(buffer == Array(bytes[(FileByteSource.readAheadBytes - 150)..<(FileByteSource.readAheadBytes + 150)]))
    // The last bytes, then the end: 0, as read(2) gives.
    #expect(source.seek(offset: -10, whence: SEEK_END) == Int64(size - 10))
    #expect(buffer.withUnsafeMutableBytes { source.read(into: $0.baseAddress!, count: 300) } == 10)
    #expect(Array(buffer[0..<10]) == Array(bytes[(size - 10)...]))
    #expect(buffer.withUnsafeMutableBytes { source.read(into: $0.baseAddress!, count: 300) } == 0)
    // A position before the start is refused and leaves the position where it was.
    #expect(source.seek(offset: -1, whence: SEEK_SET) == -1)
    #expect(source.seek(offset: 0, whence: SEEK_CUR) == Int64(size))
  }
}
