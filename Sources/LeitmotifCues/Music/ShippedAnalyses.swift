import Dispatch
import FoundationEssentials
import LeitmotifAnalysis
import LeitmotifDecoding
import LeitmotifLibrary
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The analyses a game ships with its bundled music: loudness, tempo, beats and energy of each
/// file, measured once on the developer's machine and kept beside the music in
/// `FOLDER/.leitmotif/analysis/` (one small JSON file per piece, named by the piece's size and
/// content hash; a hidden folder, so the catalogue does not list it as music).
///
/// Why: a `BundledCatalog` (every `Director`) needs each piece's analysis, and a piece without one
/// is decoded from start to end at the first launch on the player's machine. With the analyses
/// shipped, that launch reads them instead. An entry is found by content, so a piece that changed
/// after `write(folder:)` is measured at run time as before (and `check(folder:)` says so);
/// entries of another `AudioAnalysis.version` are ignored the same way.
///
/// `leitmotif cues analyze FOLDER` runs `write(folder:)`; `--check` runs `check(folder:)` (for a
/// game's build, so the shipped analyses never go stale unnoticed).
public enum ShippedAnalyses {
  /// What a `write` did or a `check` found, each list sorted by relative path.
  public struct Report: Sendable, Equatable {
    /// Pieces whose entry was already current.
    public var current: [String] = []
    /// Pieces with no current entry: written by `write`, only listed by `check`.
    public var missing: [String] = []
    /// Entries that belong to no piece of the folder (a piece removed or changed): deleted by
    /// `write`, only listed by `check` (file names in the shipped folder).
    public var unused: [String] = []
    /// Pieces that could not be read or decoded.
    public var failures: [BundledCatalog.Failure] = []
  }

  /// Why the shipped analyses could not be made.
  public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The folder or file concerned.
    public var path: String
    /// What went wrong, e.g. "cannot write: Permission denied".
    public var reason: String

    public var description: String { "\(path): \(reason)" }
  }

  /// The shipped folder of the music folder `folder`.
  public static func directory(of folder: URL) -> URL {
    folder.appendingPathComponent(AnalysisCache.shippedFolder, isDirectory: true)
  }

  /// Checks the shipped analyses of `folder` against its music without changing anything.
  /// - Throws: `Failure` when the folder cannot be read.
  public static func check(folder: URL) throws(Failure) -> Report {
    try survey(folder: folder, environment: [:], writing: false)
  }

  /// Makes the shipped analyses of `folder` current: measures each piece that has no current
  /// entry (the files spread over the cores; the developer's own analysis cache, found through
  /// `environment`, saves decoding pieces it already knows), writes its entry, and deletes the
  /// entries no piece has any more. The report's `missing` lists the pieces written.
  /// - Throws: `Failure` when the folder cannot be read or an entry cannot be written.
  public static func write(
    folder: URL, environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(Failure) -> Report {
    try survey(folder: folder, environment: environment, writing: true)
  }

  private static func survey(folder: URL, environment: [String: String], writing: Bool) throws(Failure) -> Report {
    guard MountedFiles.files(under: folder.path) == nil else {
      throw Failure(
        path: folder.path, reason: "a mounted folder: make its analyses from the folder on disk, then pack them")
    }
    guard let root = FileSystemPath.realPath(folder.path) else {
      throw Failure(path: folder.path, reason: "cannot read the folder: \(FolderWalker.errnoText(errno))")
    }
    let walked = FolderWalker(folders: [URL(fileURLWithPath: root)]).walk()
    func relative(_ path: String) -> String { BundledCatalog.relativePath(of: path, under: root) }
    var report = Report()
    report.failures = walked.failures.map { BundledCatalog.Failure(relativePath: relative($0.path), reason: $0.reason) }

    let shipped = root + "/" + AnalysisCache.shippedFolder
    let lookup = AnalysisCache(environment: environment, shipped: shipped)
    let files = walked.audioFiles.map(\.path)
    // Per piece: its key, and whether its entry is current; pieces to write are measured here too.
    enum Outcome {
      case current(key: String)
      case missing(key: String, AudioAnalysis?)
      case failed(String)
    }
    let outcomes = Mutex([Outcome?](repeating: nil, count: files.count))
    DispatchQueue.concurrentPerform(iterations: files.count) { index in
      let path = files[index]
      let outcome: Outcome
      if let key = AnalysisCache.key(forFileAt: path) {
        if lookup.shippedAnalysis(for: key) != nil {
          outcome = .current(key: key)
        } else if writing {
          // The key is known: the developer's cache by it, else one decode (which also tells a
          // piece that does not decode).
          do throws(DecodeError) {
            if let stored = lookup.storedAnalysis(for: key) {
              outcome = .missing(key: key, stored)
            } else {
              let measured = try AudioAnalysis.measure(path: path)
              lookup.store(measured, for: key)
              outcome = .missing(key: key, measured)
            }
          } catch {
            outcome = .failed(BundledCatalog.reason(error))
          }
        } else {
          outcome = .missing(key: key, nil)
        }
      } else {
        outcome = .failed("cannot read: \(FolderWalker.errnoText(errno))")
      }
      outcomes.withLock { $0[index] = outcome }
    }

    var keys = Set<String>()
    var toWrite: [(key: String, analysis: AudioAnalysis)] = []
    for (path, outcome) in zip(files, outcomes.withLock { $0 }) {
      switch outcome {
      case .current(let key)?:
        keys.insert(key)
        report.current.append(relative(path))
      case .missing(let key, let analysis)?:
        keys.insert(key)
        report.missing.append(relative(path))
        if let analysis { toWrite.append((key, analysis)) }
      case .failed(let reason)?:
        report.failures.append(BundledCatalog.Failure(relativePath: relative(path), reason: reason))
      case nil: break
      }
    }
    let existing = (try? FileManager.default.contentsOfDirectory(atPath: shipped)) ?? []
    report.unused = existing.filter { $0.hasSuffix(".json") && !keys.contains(String($0.dropLast(5))) }

    if writing {
      if !toWrite.isEmpty {
        do {
          try FileManager.default.createDirectory(atPath: shipped, withIntermediateDirectories: true)
        } catch {
          throw Failure(path: shipped, reason: "cannot make the folder: \(FolderWalker.errorText(error))")
        }
      }
      for (key, analysis) in toWrite {
        let target = shipped + "/" + key + ".json"
        guard let data = AnalysisCache.encode(analysis) else {
          throw Failure(path: target, reason: "cannot encode the analysis")
        }
        do {
          try data.write(to: URL(fileURLWithPath: target), options: .atomic)
        } catch {
          throw Failure(path: target, reason: "cannot write: \(FolderWalker.errorText(error))")
        }
      }
      for name in report.unused {
        let path = shipped + "/" + name
        guard unlink(path) == 0 || errno == ENOENT else {
          throw Failure(path: path, reason: "cannot delete: \(FolderWalker.errnoText(errno))")
        }
      }
    }
    report.current.sort()
    report.missing.sort()
    report.unused.sort()
    report.failures.sort { $0.relativePath < $1.relativePath }
    return report
  }
}
