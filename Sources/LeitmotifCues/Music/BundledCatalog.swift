import Dispatch
import FoundationEssentials
import LeitmotifAnalysis
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The game's own music: every Ogg Vorbis, Opus, MP3, FLAC, WAV and AIFF file in a folder (the cue file's `assets`),
/// with its tags read once and its loudness, tempo, beats and energy measured once
/// (`AudioAnalysis`, kept in an `AnalysisCache` so a file is listened to again only when it
/// changes).
///
/// Bundled sources of a cue file select from it by file name (`bundled: ["a.ogg", "b.ogg"]`) or by
/// tags (`bundled: { mood: "calm" }`); the cue validator uses it to check that named files exist
/// and decode and that a tag selection matches something.
///
/// The folder is walked as the music library's folders are (`FolderWalker`): names ending in
/// `.ogg`, `.oga`, `.opus`, `.mp3`, `.flac`, `.wav`, `.wave`, `.aif`, `.aiff` or `.aifc` (any case),
/// hidden files and folders skipped, symbolic links not followed.
///
/// Thread safety: immutable after `init`; share it between threads freely.
public final class BundledCatalog: Sendable {
  /// A file that looked like audio but could not be read as such.
  public struct Failure: Sendable, Hashable, CustomStringConvertible {
    /// The file relative to the catalogue's folder ("" for the folder itself).
    public var relativePath: String
    /// Why, e.g. "damaged: ..." or "not Ogg Vorbis, Opus, MP3, FLAC, WAV or AIFF: it looks like text".
    public var reason: String

    /// A failure of `relativePath` for `reason`.
    public init(relativePath: String, reason: String) {
      self.relativePath = relativePath
      self.reason = reason
    }

    /// "FILE: REASON" (just the reason for the folder itself).
    public var description: String { relativePath.isEmpty ? reason : "\(relativePath): \(reason)" }
  }

  /// The folder, as given.
  public let directory: URL
  /// Every file that decodes, sorted by relative path, with its tags (`MediaItem.load(path:)`) and,
  /// when the catalogue analyses, its `AudioAnalysis`.
  public let items: [MediaItem]
  /// The median integrated loudness of the items that have one, in LUFS: the level the director
  /// brings every item to unless the cue file names another (`loudness: { target: ... }`). Nil
  /// when nothing was analysed or everything is silent.
  public let medianLoudness: Double?
  /// The relative path of each of `items`, at the same index ("battle/drums.ogg").
  public let relativePaths: [String]
  /// Files that do not decode and folders that could not be read, sorted by relative path (the
  /// catalogue's own folder, when it cannot be read, is the one failure, with path "").
  public let failures: [Failure]
  /// When the folder ships analyses (`ShippedAnalyses`), the pieces it ships none for, or a stale
  /// one (changed since), sorted by relative path: a player's first launch decodes each of them.
  /// Empty when the folder ships none, or when the catalogue does not analyse.
  public let piecesWithoutShippedAnalysis: [String]
  private let indexByRelativePath: [String: Int]
  /// The folder's real path (or its mount's), which relative paths are taken against.
  private let root: String

  /// Walks `directory` and every folder below it, opening each audio file to read its tags and
  /// length, and (`analyzing`) analysing each file that neither the folder's shipped analyses
  /// (`FOLDER/.leitmotif/analysis`, see `shipAnalyses(of:)`) nor the player's cache has an
  /// analysis of: a full decode, about 1 % of its length in CPU time, the files spread over the
  /// machine's cores. Does I/O: call it when a cue file is loaded, not on a game thread that must
  /// not wait. A folder that does not exist gives an empty catalogue with one failure naming it.
  /// A cue file's catalogue is made without analyses and then `analyzed(relativePaths:)` for the
  /// pieces it plays: a folder's other files are not decoded.
  public convenience init(directory: URL, analyzing: Bool = true) {
    self.init(directory: directory, analyzing: analyzing, environment: ProcessInfo.processInfo.environment)
  }

  /// The same, with the player's analysis cache found through `environment` (`XDG_CACHE_HOME`,
  /// `HOME`) instead of the process's.
  package convenience init(directory: URL, analyzing: Bool, environment: [String: String]) {
    var listing = Self.list(directory)
    if analyzing { listing = Self.analyze(listing, Set(listing.relativePaths), environment: environment) }
    self.init(directory: directory, listing)
  }

  /// What the catalogue holds, before and after analysis.
  private struct Listing {
    var root: String
    var items: [MediaItem] = []
    var relativePaths: [String] = []
    var failures: [Failure] = []
    var unshipped: [String] = []
  }

  /// The folder's files with their tags and lengths, no analysis.
  private static func list(_ directory: URL) -> Listing {
    // A mounted folder (`MountedFiles`: the game's pak) is listed from its mount, with the
    // walker's rules for names; a folder on disk is walked on its real path, and relative paths
    // are taken against that.
    let mounted = MountedFiles.files(under: directory.path)
    let mountedRoot = MountedFiles.absolute(directory.path) ?? directory.path
    guard let root = mounted != nil ? mountedRoot : FileSystemPath.realPath(directory.path) else {
      let reason = FolderWalker.errnoText(errno)
      return Listing(
        root: directory.path,
        failures: [Failure(relativePath: "", reason: "cannot read the folder \(directory.path): \(reason)")])
    }
    let walk: (audioFiles: [String], failures: [(path: String, reason: String)])
    if let mounted {
      walk = (mounted.filter { Self.isListedAudio(Self.relativePath(of: $0, under: root)) }, [])
    } else {
      let walked = FolderWalker(folders: [URL(fileURLWithPath: root)]).walk()
      walk = (walked.audioFiles.map { $0.path }, walked.failures.map { ($0.path, $0.reason) })
    }
    func relative(_ path: String) -> String { Self.relativePath(of: path, under: root) }
    let files = walk.audioFiles
    // Each file's tags, as many at once as there are cores: a game's first launch waits for this.
    let results = Mutex([Result<MediaItem, DecodeError>?](repeating: nil, count: files.count))
    DispatchQueue.concurrentPerform(iterations: files.count) { index in
      let result = Result { () throws(DecodeError) -> MediaItem in try MediaItem.load(path: files[index]) }
      results.withLock { $0[index] = result }
    }
    var loaded: [(relativePath: String, item: MediaItem)] = []
    var failures = walk.failures.map { Failure(relativePath: relative($0.path), reason: $0.reason) }
    for (file, result) in zip(files, results.withLock { $0 }) {
      switch result {
      case .success(let item)?: loaded.append((relative(file), item))
      case .failure(let error)?: failures.append(Failure(relativePath: relative(file), reason: Self.reason(error)))
      case nil: break
      }
    }
    loaded.sort { $0.relativePath < $1.relativePath }
    return Listing(
      root: root, items: loaded.map(\.item), relativePaths: loaded.map(\.relativePath), failures: failures)
  }

  private init(directory: URL, _ listing: Listing) {
    self.directory = directory
    root = listing.root
    items = listing.items
    relativePaths = listing.relativePaths
    failures = listing.failures.sorted { $0.relativePath < $1.relativePath }
    piecesWithoutShippedAnalysis = listing.unshipped.sorted()
    let loudness = items.compactMap(\.loudness).sorted()
    medianLoudness =
      loudness.isEmpty
      ? nil
      : loudness.count % 2 == 1
        ? loudness[loudness.count / 2] : (loudness[loudness.count / 2 - 1] + loudness[loudness.count / 2]) / 2
    indexByRelativePath = Dictionary(
      relativePaths.enumerated().map { ($0.element, $0.offset) }, uniquingKeysWith: { first, _ in first })
  }

  /// This catalogue with the pieces at `relativePaths` analysed (as `init(directory:analyzing:)`
  /// does: the shipped analyses, the player's cache, else a full decode, the pieces spread over
  /// the cores): what a cue file plays, so a folder's other files are never decoded (a game's
  /// first launch analysed 6 unused 4-minute files in 17 s; trial 7). A piece whose analysis
  /// fails becomes a failure. `medianLoudness` is then the median of those pieces, and
  /// `piecesWithoutShippedAnalysis` names those of them the folder ships no analysis for.
  package func analyzed(
    relativePaths wanted: Set<String>, environment: [String: String] = ProcessInfo.processInfo.environment
  ) -> BundledCatalog {
    let listing = Listing(
      root: root, items: items, relativePaths: relativePaths, failures: failures,
      unshipped: piecesWithoutShippedAnalysis)
    return BundledCatalog(directory: directory, Self.analyze(listing, wanted, environment: environment))
  }

  /// `listing` with the pieces at `wanted` analysed (see `analyzed(relativePaths:)`).
  private static func analyze(_ listing: Listing, _ wanted: Set<String>, environment: [String: String]) -> Listing {
    let (root, relativePaths) = (listing.root, listing.relativePaths)
    let shippedFolder = root + "/" + AnalysisCache.shippedFolder
    let cache = AnalysisCache(environment: environment, shipped: shippedFolder)
    let chosen = relativePaths.indices.filter { wanted.contains(relativePaths[$0]) }
    let results = Mutex([Result<(AudioAnalysis, shipped: Bool), DecodeError>?](repeating: nil, count: chosen.count))
    DispatchQueue.concurrentPerform(iterations: chosen.count) { index in
      let path = listing.items[chosen[index]].assetURL.path
      let result = Result { () throws(DecodeError) -> (AudioAnalysis, shipped: Bool) in
        let found = try cache.lookUp(fileAt: path)
        return (found.analysis, found.shipped)
      }
      results.withLock { $0[index] = result }
    }
    var items = listing.items
    var failures = listing.failures
    var failed: Set<Int> = []
    var unshipped = listing.unshipped
    for (index, result) in zip(chosen, results.withLock { $0 }) {
      switch result {
      case .success(let (analysis, shipped))?:
        items[index].apply(analysis)
        if !shipped { unshipped.append(relativePaths[index]) }
      case .failure(let error)?:
        failures.append(Failure(relativePath: relativePaths[index], reason: Self.reason(error)))
        failed.insert(index)
      case nil: break
      }
    }
    let shipsAnalyses =
      MountedFiles.kind(of: shippedFolder) != nil || FileManager.default.fileExists(atPath: shippedFolder)
    let kept = items.indices.filter { !failed.contains($0) }
    return Listing(
      root: root, items: kept.map { items[$0] }, relativePaths: kept.map { relativePaths[$0] }, failures: failures,
      unshipped: shipsAnalyses ? unshipped : [])
  }

  /// `path` relative to the folder `root` ("" for the folder itself).
  static func relativePath(of path: String, under root: String) -> String {
    if path == root { return "" }
    let prefix = root == "/" ? "/" : root + "/"
    return path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path
  }

  /// Whether a mounted file is one the walker would list: an audio extension, nothing hidden.
  private static func isListedAudio(_ relativePath: String) -> Bool {
    let parts = relativePath.split(separator: "/")
    guard let name = parts.last, !parts.contains(where: { $0.hasPrefix(".") }), let dot = name.lastIndex(of: ".")
    else { return false }
    return FolderWalker.audioExtensions.contains(name[name.index(after: dot)...].lowercased())
  }

  /// The item of the file at `relativePath` under the folder ("battle/drums.ogg"; a leading "./"
  /// and repeated slashes are ignored), or nil when there is no such file or it does not decode.
  public func item(relativePath: String) -> MediaItem? {
    indexByRelativePath[Self.normalized(relativePath)].map { items[$0] }
  }

  /// Why `relativePath` is not in the catalogue, if it is a file that failed to decode.
  public func failure(relativePath: String) -> Failure? {
    let path = Self.normalized(relativePath)
    return failures.first { $0.relativePath == path }
  }

  /// The items a bundled source selects: its `files` in the order given (files that are missing
  /// or do not decode are left out), or, when it names none, every item whose tags equal each
  /// given tag ignoring case, in relative-path order. A selection with neither files nor tags
  /// selects everything.
  public func items(matching selection: BundledSelection) -> [MediaItem] {
    indices(matching: selection).map { items[$0] }
  }

  /// The relative paths of the items `selection` selects, as `items(matching:)` orders them.
  package func relativePaths(matching selection: BundledSelection) -> [String] {
    indices(matching: selection).map { relativePaths[$0] }
  }

  private func indices(matching selection: BundledSelection) -> [Int] {
    if !selection.files.isEmpty { return selection.files.compactMap { indexByRelativePath[Self.normalized($0)] } }
    return items.indices.filter { index in
      let item = items[index]
      return Self.tag(item.mood, equals: selection.mood) && Self.tag(item.genre, equals: selection.genre)
        && Self.tag(item.title, equals: selection.title)
    }
  }

  /// A relative path as the catalogue keys it: no "./" components, no empty components.
  static func normalized(_ relativePath: String) -> String {
    relativePath.split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }.joined(separator: "/")
  }

  private static func tag(_ value: String?, equals wanted: String?) -> Bool {
    guard let wanted else { return true }
    guard let value else { return false }
    return value.equalsIgnoringCase(wanted)
  }

  /// The decode error without its absolute path: the failure is already keyed by its relative one.
  static func reason(_ error: DecodeError) -> String {
    let text = error.description
    let prefix = error.path + ": "
    return text.hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : text
  }
}
