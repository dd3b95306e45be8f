import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput
import Synchronization

/// The player's own music, for the game's soundtrack: MediaPlayer's `MPMediaLibrary` for Linux.
///
/// Nothing in the library is touched until the player has said yes: every call that reads the
/// library checks the authorization first (`LibraryAccess`) and fails with
/// `LibraryError.accessDenied` otherwise, before any file under the library folders is opened.
/// The answer is per application id and can change while the game runs (`leitmotif access`).
///
/// Thread safety: every method may be called from any thread; calls that use the index are
/// serialized. They do I/O: call them off the game's frame thread.
public final class MediaLibrary: @unchecked Sendable {
  /// Whose library this is and where its files live: the application id and usage description,
  /// the library folders, and where answers and the index are kept.
  public struct Configuration: Sendable {
    /// Whose consent this is: the answer is remembered per application id.
    public var applicationID: String
    /// The name shown when asking (default: the application id).
    public var applicationName: String?
    /// The sentence the player reads when asked; required to ask or open the picker.
    public var usageDescription: String?
    /// The library folders (nil: `XDG_MUSIC_DIR` from ~/.config/user-dirs.dirs, else ~/Music).
    public var folders: [URL]?
    /// Where answers are remembered (nil: `$XDG_STATE_HOME/leitmotif`, default ~/.local/state/leitmotif).
    public var stateDirectory: URL?
    /// Where the index lives (nil: `$XDG_CACHE_HOME/leitmotif`, default ~/.cache/leitmotif).
    public var cacheDirectory: URL?
    /// An administrator's policy; `{"libraryAccess": "restricted", "reason": "..."}` restricts.
    public var policyFile = URL(fileURLWithPath: "/etc/leitmotif/policy.json")
    /// The environment read for XDG paths and `LEITMOTIF_LIBRARY_ACCESS` (tests pass their own).
    public var environment: [String: String] = ProcessInfo.processInfo.environment

    /// A configuration for `applicationID`, with the sentence shown when asking and the library
    /// folders (nil: `XDG_MUSIC_DIR`, else ~/Music).
    public init(applicationID: String, usageDescription: String? = nil, folders: [URL]? = nil) {
      self.applicationID = applicationID
      self.usageDescription = usageDescription
      self.folders = folders
    }

    var home: String { environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path }

    func xdg(_ variable: String, default fallback: String) -> URL {
      if let value = environment[variable], value.hasPrefix("/") { return URL(fileURLWithPath: value) }
      return URL(fileURLWithPath: home + "/" + fallback)
    }

    var resolvedStateDirectory: URL {
      stateDirectory ?? xdg("XDG_STATE_HOME", default: ".local/state").appendingPathComponent("leitmotif")
    }

    var resolvedCacheDirectory: URL {
      cacheDirectory ?? xdg("XDG_CACHE_HOME", default: ".cache").appendingPathComponent("leitmotif")
    }

    /// The library folders: as configured, else `XDG_MUSIC_DIR` (from the environment or
    /// ~/.config/user-dirs.dirs), else ~/Music. Reading user-dirs.dirs reads no library file.
    var resolvedFolders: [URL] {
      if let folders { return folders.map { $0.standardizedFileURL } }
      if let music = environment["XDG_MUSIC_DIR"], music.hasPrefix("/") { return [URL(fileURLWithPath: music)] }
      let config = xdg("XDG_CONFIG_HOME", default: ".config").appendingPathComponent("user-dirs.dirs")
      if let text = try? String(contentsOf: config, encoding: .utf8) {
        for line in text.split(separator: "\n") where line.hasPrefix("XDG_MUSIC_DIR=") {
          var value = String(line.dropFirst("XDG_MUSIC_DIR=".count)).trimmingWhitespace()
          value = value.trimming(where: { $0 == "\"" })
          value = value.replacing("$HOME", with: home)
          if value.hasPrefix("/") { return [URL(fileURLWithPath: value)] }
        }
      }
      return [URL(fileURLWithPath: home + "/Music")]
    }

    /// One index per set of folders: its file name carries a hash of the folder list.
    var indexPath: String {
      let key = resolvedFolders.map(\.path).sorted().joined(separator: "\n")
      var hash: UInt64 = 0xcbf2_9ce4_8422_2325
      for byte in key.utf8 {
        hash ^= UInt64(byte)
        hash &*= 0x100_0000_01b3
      }
      return resolvedCacheDirectory.appendingPathComponent("library-\(String(hash, radix: 16)).sqlite").path
    }
  }

  /// The configuration the library was made with.
  public let configuration: Configuration
  let access: LibraryAccess
  private let diagnostics: DiagnosticsHandler?
  /// The open index, made on first use after access was granted. Serializes every index call.
  private let indexLock = Mutex<LibraryIndex?>(nil)

  /// A library for `configuration`. Opens nothing: no file is read until a call needs it and
  /// access is granted.
  public init(
    configuration: Configuration, prompt: AuthorizationPrompt? = nil, diagnostics: DiagnosticsHandler? = nil
  ) {
    self.configuration = configuration
    self.diagnostics = diagnostics
    access = LibraryAccess(configuration: configuration, prompt: prompt, diagnostics: diagnostics)
  }

  /// The library folders this library reads (and nothing outside them).
  public var folders: [URL] { configuration.resolvedFolders }

  /// The current authorization (re-read when the remembered answer changes on disk).
  public var authorizationStatus: AuthorizationStatus { access.status().status }

  /// Asks the player when nobody has yet (through the prompt), remembers the answer for this
  /// application id, and returns the status. When the status is already known (restricted
  /// included) nobody is asked. Without a prompt, or when the prompt can reach nobody (no
  /// terminal), the status stays notDetermined and nothing is remembered. Blocks while the
  /// prompt waits for the player.
  /// - Throws: `LibraryError.missingUsageDescription` when there is no usage description: the
  ///   library is not touched and nobody is asked.
  @discardableResult
  public func requestAuthorization() throws(LibraryError) -> AuthorizationStatus {
    try access.request()
  }

  /// Why the status is what it is, in a sentence for the player (for restricted: the policy's
  /// reason; for denied: when, and how to change it).
  public var authorizationReason: String { access.status().reason }

  /// Calls `handler` with the new status each time the authorization changes: the player's
  /// answer, `leitmotif access allow|deny|reset`, a policy. A change reaches it within a second
  /// (a background poll every 0.5 s, two `stat` calls, runs while any observation lasts).
  /// The handler runs on a background queue, one call at a time; it must not block for long.
  /// - Returns: the observation; it lasts until you cancel it or let it go.
  public func observeAuthorization(_ handler: @escaping @Sendable (AuthorizationStatus) -> Void)
    -> AuthorizationObservation
  {
    access.observe(handler)
  }

  /// The authorization's changes as an `AsyncStream` (see `observeAuthorization`); the
  /// observation ends when the iteration does.
  public var authorizationUpdates: AsyncStream<AuthorizationStatus> {
    AsyncStream { continuation in
      let observation = access.observe { continuation.yield($0) }
      continuation.onTermination = { _ in observation.cancel() }
    }
  }

  /// Runs `body` with the index, after checking access (the gate every library call goes
  /// through). Calls are serialized.
  package func withIndex<T>(_ body: (LibraryIndex) throws(LibraryError) -> T) throws(LibraryError) -> T {
    try access.check()
    return try indexLock.withLock { (slot) throws(LibraryError) -> T in
      let index: LibraryIndex
      if let open = slot {
        index = open
      } else {
        index = try LibraryIndex(path: configuration.indexPath) { [diagnostics] warning in
          diagnostics?(Diagnostic(.warning, warning))
        }
        slot = index
      }
      return try body(index)
    }
  }

  func report(_ diagnostic: Diagnostic) { diagnostics?(diagnostic) }
}
