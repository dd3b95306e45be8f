import LeitmotifDecoding
import Synchronization

/// Why a file could not be preloaded. It still plays: it streams from the file as before.
public struct PreloadError: Error, Sendable, Equatable, CustomStringConvertible {
  public enum Reason: Sendable, Equatable {
    /// The file could not be opened or decoded to its end.
    case decode(DecodeError)
    /// Decoded, it would take `neededBytes` (at least), and `preloadedBytes` of the engine's
    /// `preloadBudgetBytes` are taken already.
    case overBudget(neededBytes: Int, preloadedBytes: Int, budgetBytes: Int)
  }

  /// The file.
  public var path: String
  public var reason: Reason

  public init(path: String, reason: Reason) {
    self.path = path
    self.reason = reason
  }

  public var description: String {
    switch reason {
    case .decode(let error): return "cannot preload \(error)"
    case .overBudget(let needed, let preloaded, let budget):
      return
        "cannot preload \(FileSystemPath.displayed(path)): decoded it takes \(needed) bytes, and \(preloaded) of the engine's preload budget of \(budget) bytes are taken (raise the budget: AudioEngine.preloadBudgetBytes, lm_set_preload_budget)"
    }
  }
}

/// The engine's preloaded files (see `AudioEngine.preload`): decoded audio by absolute path, each
/// with the file's identity when it was decoded and how many preloads hold it.
///
/// The loader asks it before opening a file; everyone else preloads and unloads. A lock guards
/// the table only (never held across a decode or a stat): the streaming thread never comes here.
final class PreloadCache: Sendable {
  private struct Entry {
    var audio: DecodedAudio
    var identity: FileIdentity
    var holds: Int
    /// The file was found changed (and said so) since this copy was decoded.
    var staleSaid = false

    /// Whether this copy stands for the file whose identity is `now`: the same file, or none
    /// (deleted, its pak unmounted: the copy is all there is, and a game may preload from a pak
    /// and then let the pak go). A path that now names another file needs decoding afresh.
    func isCurrent(for now: FileIdentity) -> Bool { !now.exists || now == identity }
  }

  private struct Table {
    var entries: [String: Entry] = [:]
    var bytes = 0
    var budget: Int
  }

  private let table: Mutex<Table>

  /// 64 MiB: about 5.8 minutes of 48 kHz stereo, or a few dozen stingers and short loops.
  static let defaultBudgetBytes = 64 << 20

  init() { table = Mutex(Table(budget: Self.defaultBudgetBytes)) }

  var budgetBytes: Int {
    get { table.withLock { $0.budget } }
    set { table.withLock { $0.budget = max(0, newValue) } }
  }

  var bytes: Int { table.withLock { $0.bytes } }

  static func key(_ path: String) -> String { MountedFiles.absolute(path) ?? path }

  /// Decodes `path` into memory, or holds the copy already there once more (a copy whose path now
  /// names another file is decoded again; one whose file is gone is held as it is). Does I/O and
  /// decodes on the calling thread.
  func preload(_ path: String) throws(PreloadError) -> DecodedAudio {
    let key = Self.key(path)
    let identity = FileIdentity(path: path)
    let held = table.withLock { table -> DecodedAudio? in
      guard var entry = table.entries[key], entry.isCurrent(for: identity) else { return nil }
      entry.holds += 1
      table.entries[key] = entry
      return entry.audio
    }
    if let held { return held }
    let decoder: any AudioDecoder
    do { decoder = try AudioFile.openDecoder(path: path) } catch {
      throw PreloadError(path: path, reason: .decode(error))
    }
    // What the file replaces (an older copy of it) does not count against its room.
    let (taken, budget) = table.withLock { table in
      (table.bytes - (table.entries[key]?.audio.sizeBytes ?? 0), table.budget)
    }
    let audio = try DecodedAudio.decode(
      decoder, limitBytes: budget - taken, preloadedBytes: taken, budgetBytes: budget)
    // Another thread may have preloaded meanwhile: the table decides under its lock.
    return try table.withLock { table throws(PreloadError) -> DecodedAudio in
      let old = table.entries[key]
      let others = table.bytes - (old?.audio.sizeBytes ?? 0)
      guard others + audio.sizeBytes <= table.budget else {
        throw PreloadError(
          path: path,
          reason: .overBudget(neededBytes: audio.sizeBytes, preloadedBytes: others, budgetBytes: table.budget))
      }
      table.entries[key] = Entry(audio: audio, identity: identity, holds: (old?.holds ?? 0) + 1)
      table.bytes = others + audio.sizeBytes
      return audio
    }
  }

  /// Lets go of one hold on `path`; the last one frees its memory (once no voice reads it).
  /// Returns whether `path` was preloaded.
  @discardableResult
  func unload(_ path: String) -> Bool {
    let key = Self.key(path)
    let dropped = table.withLock { table -> DecodedAudio?? in
      guard var entry = table.entries[key] else { return nil }
      entry.holds -= 1
      if entry.holds > 0 {
        table.entries[key] = entry
        return .some(nil)
      }
      table.entries[key] = nil
      table.bytes -= entry.audio.sizeBytes
      return .some(entry.audio)
    }
    // The pages go back to the system here, outside the lock (unless a voice still reads them).
    withExtendedLifetime(dropped) {}
    return dropped != nil
  }

  /// Lets go of everything (the engine's shutdown).
  func removeAll() {
    let dropped = table.withLock { table -> [String: Entry] in
      defer {
        table.entries = [:]
        table.bytes = 0
      }
      return table.entries
    }
    withExtendedLifetime(dropped) {}
  }

  func contains(_ path: String) -> Bool { table.withLock { $0.entries[Self.key(path)] != nil } }

  /// The identity `path` has now, when it is preloaded and now names another file than the one
  /// decoded (nil: not preloaded, unchanged, or gone). A stat.
  func changedIdentity(of path: String) -> FileIdentity? {
    guard let entry = table.withLock({ $0.entries[Self.key(path)] }) else { return nil }
    let now = FileIdentity(path: path)
    return entry.isCurrent(for: now) ? nil : now
  }

  /// The loader's question: a decoder over the preloaded copy of `path`, if there is one and it is
  /// current (`Entry.isCurrent`). A copy whose path now names another file is not used (nil: that
  /// file streams, as it is now) until it is preloaded again, which decodes it afresh; `stale` is
  /// set the first time that happens, so it is said once.
  func decoder(for path: String, stale: inout Bool) -> (any AudioDecoder)? {
    let key = Self.key(path)
    guard let entry = table.withLock({ $0.entries[key] }) else { return nil }
    // The stat outside the lock: the loader's thread does I/O, the table's other users need not wait.
    guard entry.isCurrent(for: FileIdentity(path: path)) else {
      stale = table.withLock { table in
        guard var current = table.entries[key], current.audio === entry.audio, !current.staleSaid else { return false }
        current.staleSaid = true
        table.entries[key] = current
        return true
      }
      return nil
    }
    return MemoryDecoder(entry.audio)
  }
}
