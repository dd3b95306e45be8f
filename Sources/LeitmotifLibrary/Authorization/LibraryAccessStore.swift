import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

/// The player's remembered answers, per application id: one JSON file, `access.json`, in the
/// state folder (`$XDG_STATE_HOME/leitmotif/`, default `~/.local/state/leitmotif/`).
///
/// ```json
/// {
///   "applications" : {
///     "com.example.dungeon" : { "date" : "2026-11-30T22:40:00Z", "status" : "authorized" },
///     "leitmotif" : { "date" : "2026-11-29T18:02:11Z", "status" : "denied" }
///   },
///   "version" : 1
/// }
/// ```
///
/// `status` is `authorized` or `denied` (restricted comes from a policy and is never stored;
/// an application without an entry is notDetermined); `date` is when the player answered, in
/// ISO 8601 UTC. The file is written atomically (a temporary file renamed over it) with mode
/// 0600 in a folder with mode 0700, under an exclusive lock (`access.lock`) so that two writers
/// do not lose each other's changes. A file that cannot be read as this format (damaged, from a
/// newer version, or naming a key twice, which JSON readers resolve differently) counts as no
/// answers at all, never as authorized; so does a file that is not the player's own: a symbolic
/// link, owned by another user, or writable by the group or others. The next write moves it
/// aside to `access.json.damaged` and starts afresh. The state folder must be a real folder: a
/// symbolic link there is refused, for reading and writing, and never followed.
///
/// `MediaLibrary` reads it (and re-reads it when it changes on disk); `leitmotif access` changes
/// it through this same type.
///
/// Thread safety: every method may be called from any thread and any process at once.
public struct LibraryAccessStore: Sendable {
  /// One remembered answer.
  public struct Answer: Sendable, Equatable {
    /// `.authorized` or `.denied`.
    public var status: AuthorizationStatus
    /// When the player answered.
    public var date: Date

    /// An answer of `status` given at `date`.
    public init(status: AuthorizationStatus, date: Date) {
      self.status = status
      self.date = date
    }
  }

  /// The format version this code reads and writes.
  static let formatVersion = 1
  /// No real answers file is anywhere near this: a bigger one is not ours.
  static let sizeLimitBytes = 4 << 20

  /// The state folder that holds `access.json`.
  public let directory: URL
  /// The answers file, `access.json` in `directory`.
  public var file: URL { directory.appendingPathComponent(fileName) }
  var fileName: String { "access.json" }
  var lockName: String { "access.lock" }
  var damagedName: String { "access.json.damaged" }

  /// The store in `directory` (a test's temporary folder, say).
  public init(directory: URL) { self.directory = directory }

  /// The store `MediaLibrary` uses with `configuration`: its `stateDirectory`, else
  /// `$XDG_STATE_HOME/leitmotif` from its environment, else `~/.local/state/leitmotif`.
  public init(configuration: MediaLibrary.Configuration) { directory = configuration.resolvedStateDirectory }

  /// The store for `environment` (`XDG_STATE_HOME`, `HOME`): the one `leitmotif access` uses.
  public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
    var configuration = MediaLibrary.Configuration(applicationID: "leitmotif")
    configuration.environment = environment
    self.init(configuration: configuration)
  }

  /// Every remembered answer, by application id (none when the file does not exist).
  /// - Throws: `LibraryError.accessStore` when the file cannot be read or is damaged.
  public func answers() throws(LibraryError) -> [String: Answer] {
    let snapshot = load()
    if let damage = snapshot.damage { throw LibraryError.accessStore(path: file.path, reason: damage) }
    return snapshot.answers
  }

  /// Remembers the player's answer for `applicationID`: `.authorized` or `.denied` (dated
  /// `date`); `.notDetermined` forgets it (like `forget`). Creates the folder (0700) and the file
  /// (0600) when missing.
  /// - Throws: `LibraryError.accessStore` when the file cannot be written, or for `.restricted`
  ///   (which only a policy sets).
  public func remember(_ status: AuthorizationStatus, for applicationID: String, date: Date = Date())
    throws(LibraryError)
  {
    switch status {
    case .authorized, .denied:
      try update { $0[applicationID] = Answer(status: status, date: date) }
    case .notDetermined:
      try forget(applicationID)
    case .restricted:
      throw LibraryError.accessStore(
        path: file.path,
        reason:
          "restricted is not an answer the player gives: it comes from an administrator's policy file or LEITMOTIF_LIBRARY_ACCESS=restricted"
      )
    }
  }

  /// Forgets the answer for `applicationID`, so it is notDetermined and will be asked again.
  /// - Returns: whether there was an answer to forget.
  /// - Throws: `LibraryError.accessStore` when the file cannot be written.
  @discardableResult
  public func forget(_ applicationID: String) throws(LibraryError) -> Bool {
    var found = false
    try update { answers in found = answers.removeValue(forKey: applicationID) != nil }
    return found
  }

  /// Whether `applicationID` can be stored and typed on a command line: 1 to 255 bytes, no
  /// control characters, no white space.
  public static func isValidApplicationID(_ applicationID: String) -> Bool {
    !applicationID.isEmpty && applicationID.utf8.count <= 255
      && !applicationID.unicodeScalars.contains {
        $0.properties.generalCategory == .control || $0.properties.isWhitespace
      }
  }

  // MARK: - Reading and writing

  /// What the file held when it was read, and the version read (nil: no file).
  package struct Snapshot: Sendable {
    var answers: [String: Answer] = [:]
    var version: FileVersion?
    /// Why the file could not be used, when it could not.
    var damage: String?
  }

  /// The file's layout on disk.
  private struct Contents: Codable {
    package struct Entry: Codable {
      var status: String
      var date: Date
    }
    var version: Int
    var applications: [String: Entry]
  }

  /// Reads the file. Never throws: a damaged file is reported in `damage`, with no answers.
  /// Only the player's own file is read: a link at the folder or the file, a file owned by
  /// another user, or one the group or others can write counts as damaged.
  func load() -> Snapshot {
    let read: (Data, FileVersion)?
    do throws(StateFileError) {
      guard let folder = try StateFolder(opening: directory.path) else { return Snapshot() }
      read = try folder.readOwnFile(fileName, limitBytes: Self.sizeLimitBytes)
    } catch {
      // The reason is shown with the file's path; a problem with the folder names the folder.
      return Snapshot(damage: error.path == file.path ? error.description : "\(error.path): \(error.description)")
    }
    guard let (data, version) = read else { return Snapshot() }
    switch Self.decode(data) {
    case .success(let answers): return Snapshot(answers: answers, version: version)
    case .failure(let reason): return Snapshot(version: version, damage: reason.text)
    }
  }

  /// Read, change and write back, under the lock, so that no other writer's change is lost.
  /// The folder is opened once without following links and everything happens relative to it.
  private func update(_ change: (inout [String: Answer]) -> Void) throws(LibraryError) {
    do throws(StateFileError) {
      let folder = try StateFolder(creating: directory.path, mode: 0o700)
      let lock = try StateFileLock(lockName, in: folder)
      var snapshot = load()
      if snapshot.damage != nil {
        // Kept for a look, out of the way; it granted nothing while it was there.
        try folder.move(fileName, to: damagedName)
        snapshot = Snapshot()
      }
      var answers = snapshot.answers
      change(&answers)
      try folder.writeAtomically(Self.encode(answers), to: fileName, mode: 0o600)
      _ = consume lock
    } catch {
      throw LibraryError.accessStore(path: error.path, reason: error.description)
    }
  }

  static func encode(_ answers: [String: Answer]) -> Data {
    let contents = Contents(
      version: formatVersion,
      applications: answers.mapValues { Contents.Entry(status: $0.status.rawValue, date: $0.date) })
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    encoder.dateEncodingStrategy = .iso8601
    // Encoding strings, whole-second dates and integers cannot fail.
    return (try? encoder.encode(contents)).map { $0 + Data("\n".utf8) } ?? Data()
  }

  package static func decode(_ data: Data) -> Result<[String: Answer], DamageReason> {
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .iso8601
    let contents: Contents
    do {
      contents = try decoder.decode(Contents.self, from: data)
    } catch {
      return .failure(DamageReason(text: "not the answers file's JSON (\(Self.describe(error)))"))
    }
    // The decoder keeps the first of two equal keys, other readers the last: such a file means
    // one thing here and another in every other tool, so it means nothing.
    switch JSONDuplicateKeys.check(data) {
    case .none: break
    case .duplicate(let key, let path):
      return .failure(DamageReason(text: JSONDuplicateKeys.describe(key: key, path: path)))
    case .unreadable(let reason):
      return .failure(DamageReason(text: "not the answers file's JSON (\(reason))"))
    }
    guard contents.version == formatVersion else {
      return .failure(
        DamageReason(text: "format version \(contents.version), this Leitmotif reads version \(formatVersion)"))
    }
    var answers: [String: Answer] = [:]
    for (application, entry) in contents.applications {
      guard let status = AuthorizationStatus(rawValue: entry.status), status == .authorized || status == .denied
      else {
        return .failure(
          DamageReason(text: "\"\(application)\" has status \"\(entry.status)\" (expected authorized or denied)"))
      }
      answers[application] = Answer(status: status, date: entry.date)
    }
    return .success(answers)
  }

  package struct DamageReason: Error { var text: String }

  /// A decoding error in a line, not Foundation's nested dump.
  private static func describe(_ error: Error) -> String {
    switch error {
    case DecodingError.dataCorrupted(let context): return context.debugDescription
    case DecodingError.keyNotFound(let key, _): return "\"\(key.stringValue)\" is missing"
    case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
      let path = context.codingPath.map(\.stringValue).joined(separator: ".")
      return "\(path): \(context.debugDescription)"
    default: return "\(error)"
    }
  }
}
