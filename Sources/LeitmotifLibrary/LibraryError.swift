import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

/// Why a library request was refused. Without authorization every library call fails with
/// `.accessDenied`, and no file under the library folders has been opened.
public enum LibraryError: Error, Sendable, CustomStringConvertible {
  /// Asking for access (or opening the picker) needs a usage description: the text the player
  /// reads when asked.
  case missingUsageDescription(applicationID: String)
  /// The player has not said yes: the state (notDetermined, denied or restricted) and why.
  case accessDenied(AuthorizationStatus, reason: String)
  /// The remembered answers (`access.json` in the state folder) cannot be read or written.
  case accessStore(path: String, reason: String)
  /// The index database could not be opened or written.
  case index(path: String, reason: String)
  /// Another scan holds the index (in this process or another).
  case busy(path: String)
  /// A library folder that cannot be used.
  case folder(path: String, reason: String)
  /// A query's predicate that cannot be run: a range on a text property, contains on a number, a
  /// value of the wrong kind.
  case invalidPredicate(predicate: String, reason: String)

  /// The error in a sentence that says what to do about it where there is something to do.
  public var description: String {
    switch self {
    case .missingUsageDescription(let app):
      return
        "\(app): no usage description: set MediaLibrary.Configuration.usageDescription (C: lm_config.usage_description; the sentence the player reads when asked, e.g. \"Your music plays as the soundtrack while you explore.\") before asking for library access or opening the picker"
    case .accessDenied(let status, let reason): return "no access to the music library (\(status.rawValue)): \(reason)"
    case .accessStore(let path, let reason):
      return "\(path): the remembered library-access answers cannot be used: \(reason)"
    case .index(let path, let reason): return "\(path): the library index cannot be used: \(reason)"
    case .busy(let path): return "\(path): another scan is running; try again when it is done"
    case .folder(let path, let reason): return "\(FileSystemPath.displayed(path)): \(reason)"
    case .invalidPredicate(let predicate, let reason): return "invalid predicate (\(predicate)): \(reason)"
    }
  }
}

/// MediaPlayer's authorization states for the music library.
public enum AuthorizationStatus: String, Sendable, Codable, CaseIterable {
  /// Nobody has asked the player yet (or nobody could: no terminal, no prompt).
  case notDetermined
  /// The player said no.
  case denied
  /// An administrator's policy (or `LEITMOTIF_LIBRARY_ACCESS=restricted`) forbids access; the
  /// player is not asked.
  case restricted
  /// The player said yes.
  case authorized
}

/// How a game asks the player for access: it shows the app's name and usage description in its
/// own UI and returns the answer. Return nil when nobody can be asked (the status then stays
/// notDetermined and this run gets no access). `TerminalPrompt` is the built-in one.
public protocol AuthorizationPrompt: Sendable {
  /// Asks the player whether the game may read their music library, showing `applicationName`
  /// and `usageDescription`. Called on the thread that called `MediaLibrary.requestAuthorization()`
  /// and may block until the player answers.
  /// - Returns: true for yes, false for no, nil when nobody can be asked.
  func askForLibraryAccess(applicationName: String, usageDescription: String) -> Bool?
}
