import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

/// One thing wrong (or suspicious) in a cue file: where, at which key, and why.
///
/// Thread safety: a value type; pass it anywhere.
public struct CueProblem: Sendable, Equatable, CustomStringConvertible {
  /// Whether the problem stops the file from being used.
  public enum Severity: String, Sendable {
    /// The file cannot be used: the director keeps the last good one.
    case error
    /// The file works, but something in it is probably not what its author meant (a source no
    /// state plays, a state nothing enters).
    case warning
  }

  /// An error (the file is refused) or a warning (the file works).
  public var severity: Severity
  /// The cue file's path, as given to `CueSheet.load(path:)` or `parse(_:path:)`.
  public var file: String
  /// The offending key or value (for a missing key: the object that lacks it).
  public var location: JSON5.SourceLocation
  /// Where in the file's structure, e.g. `states.combat.transition.seconds`,
  /// `rules[2].do[0].crossfade`; empty for a syntax error or an unreadable file.
  public var keyPath: String
  /// What is wrong, e.g. `rate 5 is outside [0.00390625, 4]`.
  public var message: String

  /// A problem of `severity` in `file` at `location` and `keyPath`, saying `message`.
  public init(severity: Severity, file: String, location: JSON5.SourceLocation, keyPath: String, message: String) {
    self.severity = severity
    self.file = file
    self.location = location
    self.keyPath = keyPath
    self.message = message
  }

  /// `FILE:LINE:COLUMN: error: KEYPATH: MESSAGE`, the form compilers use, so editors and CI can
  /// jump to it (without `KEYPATH: ` when the key path is empty).
  /// Key paths and messages longer than 300 characters are cut in the middle (a state named
  /// with a 5 MB string was printed whole, one line per problem).
  public var description: String {
    let prefix = "\(file):\(location.line):\(location.column): \(severity.rawValue): "
    return prefix
      + (keyPath.isEmpty ? Self.shortened(message) : "\(Self.shortened(keyPath)): \(Self.shortened(message))")
  }

  static func shortened(_ text: String) -> String { text.cutInMiddle(limit: 300) }
}

/// Why a cue file was refused: every problem in it, errors and warnings, in file order.
public struct CueFileError: Error, Sendable, CustomStringConvertible {
  /// Errors and warnings, in file order (by line, then column).
  public var problems: [CueProblem]

  /// A refusal listing `problems`.
  public init(problems: [CueProblem]) { self.problems = problems }

  /// The errors alone.
  public var errors: [CueProblem] { problems.filter { $0.severity == .error } }

  /// One problem per line, as `CueProblem.description`.
  public var description: String { problems.map(\.description).joined(separator: "\n") }
}
