import LeitmotifDecoding
import LeitmotifOutput

/// What the library has to say to the host. Leitmotif never prints: it hands every notice,
/// warning and error to the handler the host sets (the CLI and the demo print them).
public struct Diagnostic: Sendable, CustomStringConvertible {
  /// How serious a diagnostic is: a notice (for information), a warning (something was worked
  /// around), an error (something failed). Ordered in that way.
  public enum Severity: String, Sendable, Comparable {
    /// `notice`: for information; `warning`: something was worked around; `error`: something failed.
    case notice, warning, error
    /// Orders notice < warning < error.
    public static func < (a: Severity, b: Severity) -> Bool {
      let order: [Severity] = [.notice, .warning, .error]
      return order.firstIndex(of: a)! < order.firstIndex(of: b)!
    }
  }
  /// How serious it is.
  public var severity: Severity
  /// What happened, in a sentence that names the file, device or key concerned.
  public var message: String
  /// The typed error behind it, when there is one.
  public var error: (any Error & Sendable)?

  /// A diagnostic of `severity` saying `message`, with the typed `error` behind it if there is one.
  public init(_ severity: Severity, _ message: String, error: (any Error & Sendable)? = nil) {
    self.severity = severity
    self.message = message
    self.error = error
  }

  /// "SEVERITY: MESSAGE", e.g. "warning: stream underrun on voice 2: restarted".
  public var description: String { "\(severity.rawValue): \(message)" }
}

/// Receives diagnostics. Called on the engine's notification thread (or, for an offline engine,
/// on the thread that renders), never on the streaming thread; it must not block for long.
public typealias DiagnosticsHandler = @Sendable (Diagnostic) -> Void
