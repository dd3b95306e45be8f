/// What the library has to say to the host. Leitmotif never prints: it hands every notice,
/// warning and error to the handler the host sets (the CLI and the demo print them).
public struct Diagnostic: Sendable, CustomStringConvertible {
  public enum Severity: String, Sendable, Comparable {
    case notice, warning, error
    public static func < (a: Severity, b: Severity) -> Bool {
      let order: [Severity] = [.notice, .warning, .error]
      return order.firstIndex(of: a)! < order.firstIndex(of: b)!
    }
  }
  public var severity: Severity
  public var message: String
  /// The typed error behind it, when there is one.
  public var error: (any Error & Sendable)?

  public init(_ severity: Severity, _ message: String, error: (any Error & Sendable)? = nil) {
    self.severity = severity
    self.message = message
    self.error = error
  }

  public var description: String { "\(severity.rawValue): \(message)" }
}

/// Receives diagnostics. Called on the engine's notification thread (or, for an offline engine,
/// on the thread that renders), never on the streaming thread; it must not block for long.
public typealias DiagnosticsHandler = @Sendable (Diagnostic) -> Void
