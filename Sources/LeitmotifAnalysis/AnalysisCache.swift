import FoundationEssentials
import LeitmotifDecoding

#if canImport(Glibc)
  import Glibc
#endif

/// Analyses kept between runs, so a game's bundled music is listened to once (its first run, or
/// after a file changed) rather than at every cue-file load.
///
/// Keyed by content, not by path: the file's size and a 64-bit hash of all its bytes. A game's
/// assets then keep their analyses when they are installed elsewhere, copied, or checked out
/// again with new modification times, and a changed file is never mistaken for the old one.
/// Reading a file to hash it costs about a millisecond per megabyte, against the hundreds a full
/// decode takes.
///
/// One small JSON file per analysis, `$XDG_CACHE_HOME/leitmotif/analysis/SIZE-HASH.json`
/// (default `~/.cache/leitmotif/...`), holding the `AudioAnalysis.version` that made it: no file
/// is shared between writers, so processes and threads need no lock, and a write is a temporary
/// file renamed into place. It is a cache: a missing, damaged, old or unwritable entry costs a
/// re-analysis, never an error.
///
/// A game can ship its bundled music's analyses with the music (`shipped`, the folder
/// `.leitmotif/analysis` inside the music's folder, written by `leitmotif cues analyze FOLDER`):
/// entries of the same form, looked up first and never written at run time, so a player's first
/// launch reads the analyses instead of decoding every piece. A shipped entry made by another
/// `AudioAnalysis.version`, or for bytes that have since changed, is not found by its key and
/// the file is measured as before.
package struct AnalysisCache: Sendable {
  private struct Entry: Codable {
    var version: Int
    var analysis: AudioAnalysis
  }

  /// Where the entries live (nil: neither `XDG_CACHE_HOME` nor `HOME` names a folder).
  package let directory: URL?
  /// The folder of shipped entries, read only (on disk or under a mount, see `MountedFiles`).
  package let shipped: String?

  /// A music folder's shipped analyses, relative to the folder.
  package static let shippedFolder = ".leitmotif/analysis"

  package init(environment: [String: String] = ProcessInfo.processInfo.environment, shipped: String? = nil) {
    self.shipped = shipped
    if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") {
      directory = URL(fileURLWithPath: cache + "/leitmotif/analysis", isDirectory: true)
    } else if let home = environment["HOME"], home.hasPrefix("/") {
      directory = URL(fileURLWithPath: home + "/.cache/leitmotif/analysis", isDirectory: true)
    } else {
      directory = nil
    }
  }

  /// The entry's name for the file at `path` ("SIZE-HASH"), nil when the file cannot be read.
  package static func key(forFileAt path: String) -> String? {
    // A mounted file (`MountedFiles`) is read through its mount, a file on disk by stdio: the
    // same bytes give the same key wherever they live.
    if MountedFiles.kind(of: path) == .file {
      guard let source = try? FileByteSource(path: path) else { return nil }
      return key { source.read(into: $0, count: $1) }
    }
    guard let file = FileSystemPath.withCString(path, { fopen($0, "rb") }) else { return nil }
    defer { fclose(file) }
    return key { buffer, count in
      let got = fread(buffer, 1, count, file)
      return got == 0 && ferror(file) != 0 ? -1 : got
    }
  }

  /// "SIZE-HASH" of the bytes `read` gives (up to its count into the buffer, 0 at the end, -1 on
  /// an error: then nil).
  private static func key(_ read: (UnsafeMutableRawPointer, Int) -> Int) -> String? {
    // FNV-1a over 8-byte little-endian words (the tail zero-padded), then the size: a fast, stable
    // content hash; not cryptographic, and needs not be.
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    var size: Int64 = 0
    let capacity = 1 << 16
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 8)
    defer { buffer.deallocate() }
    while true {
      let count = read(buffer.baseAddress!, capacity)
      if count < 0 { return nil }
      if count == 0 { break }
      size += Int64(count)
      let words = (count + 7) / 8
      if count % 8 != 0 {
        (buffer.baseAddress! + count).initializeMemory(as: UInt8.self, repeating: 0, count: 8 - count % 8)
      }
      let pointer = buffer.baseAddress!.assumingMemoryBound(to: UInt64.self)
      for index in 0..<words {
        hash ^= UInt64(littleEndian: pointer[index])
        hash &*= 0x100_0000_01b3
      }
    }
    return "\(size)-\(String(hash, radix: 16))"
  }

  /// The analysis for `key`, if one of the current version is there: shipped, else stored.
  package func analysis(for key: String) -> AudioAnalysis? {
    shippedAnalysis(for: key) ?? storedAnalysis(for: key)
  }

  /// The analysis stored in the player's cache for `key`, if one of the current version is there.
  package func storedAnalysis(for key: String) -> AudioAnalysis? {
    guard let url = directory?.appendingPathComponent(key + ".json"), let data = try? Data(contentsOf: url) else {
      return nil
    }
    return Self.decode(data)
  }

  /// The shipped analysis for `key`, if one of the current version is there.
  package func shippedAnalysis(for key: String) -> AudioAnalysis? {
    guard let shipped, let bytes = try? MountedFiles.contents(of: shipped + "/" + key + ".json") else { return nil }
    return Self.decode(Data(bytes))
  }

  /// An entry's analysis, nil when it is damaged or another version made it.
  package static func decode(_ data: Data) -> AudioAnalysis? {
    guard let entry = try? JSONDecoder().decode(Entry.self, from: data), entry.version == AudioAnalysis.version
    else { return nil }
    return entry.analysis
  }

  /// An entry for `analysis`, as this version writes it.
  package static func encode(_ analysis: AudioAnalysis) -> Data? {
    let encoder = JSONEncoder()
    // Sorted keys: a shipped folder made twice from the same music is the same bytes.
    encoder.outputFormatting = [.sortedKeys]
    return try? encoder.encode(Entry(version: AudioAnalysis.version, analysis: analysis))
  }

  /// Stores `analysis` under `key` (silently not, when the folder cannot be written).
  package func store(_ analysis: AudioAnalysis, for key: String) {
    guard let directory, let data = Self.encode(analysis) else { return }
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let target = directory.appendingPathComponent(key + ".json")
    let temporary = directory.appendingPathComponent(".\(key).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp")
    guard (try? data.write(to: temporary)) != nil else { return }
    if rename(temporary.path, target.path) != 0 { try? FileManager.default.removeItem(at: temporary) }
  }

  /// The analysis of the file at `path`: shipped or from the cache when there is one, else
  /// measured (a full decode) and stored.
  /// - Throws: `DecodeError` naming the file when it must be measured and does not decode.
  package func analysis(ofFileAt path: String) throws(DecodeError) -> AudioAnalysis {
    try lookUp(fileAt: path).analysis
  }

  /// The same, saying whether the analysis was a shipped one.
  package func lookUp(fileAt path: String) throws(DecodeError) -> (analysis: AudioAnalysis, shipped: Bool) {
    let key = Self.key(forFileAt: path)
    if let key, let shipped = shippedAnalysis(for: key) { return (shipped, true) }
    if let key, let known = storedAnalysis(for: key) { return (known, false) }
    let measured = try AudioAnalysis.measure(path: path)
    if let key { store(measured, for: key) }
    return (measured, false)
  }
}
