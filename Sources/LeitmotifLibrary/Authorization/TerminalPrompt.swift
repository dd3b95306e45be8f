import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

#if canImport(Glibc)
  import Glibc
#endif

/// The built-in prompt for the CLI and the demo: asks on the controlling terminal (`/dev/tty`,
/// not standard input, so it works with input and output redirected) and reads y or n.
///
/// Nobody can be asked, and it returns nil (the status stays notDetermined, this run gets no
/// access), when there is no terminal: `/dev/tty` cannot be opened or is not a terminal, the
/// process runs in the terminal's background (reading would stop it), or the terminal closes
/// (end of file) before an answer. An answer other than y, yes, n or no is asked again, three
/// times at most.
///
/// Thread safety: may be called from any thread; it blocks until the player answers.
public struct TerminalPrompt: AuthorizationPrompt {
  /// The terminal asked on (default `/dev/tty`; tests pass a pseudo-terminal).
  public var terminalPath: String

  /// A prompt on `terminalPath` (default `/dev/tty`).
  public init(terminalPath: String = "/dev/tty") { self.terminalPath = terminalPath }

  /// Asks y/n on the terminal and waits for the answer.
  /// - Returns: true for y or yes, false for n or no, nil when there is no terminal to ask on
  /// (or no valid answer after three tries).
  public func askForLibraryAccess(applicationName: String, usageDescription: String) -> Bool? {
    // O_NOCTTY: asking must never make this terminal the process's controlling terminal.
    let terminal = open(terminalPath, O_RDWR | O_NOCTTY | O_CLOEXEC)
    guard terminal >= 0 else { return nil }
    defer { close(terminal) }
    guard isatty(terminal) == 1 else { return nil }
    // A background process that reads its terminal is stopped (SIGTTIN): nobody would answer.
    // (-1: not our controlling terminal, as with a test's pseudo-terminal; nobody competes.)
    let foreground = tcgetpgrp(terminal)
    if foreground != -1 && foreground != getpgrp() { return nil }

    let question = """
      \(Self.printable(applicationName)) would like to use your music library.
      \(Self.printable(usageDescription))
      (`leitmotif access` changes your answer later.)

      """
    guard Self.write(question, to: terminal) else { return nil }
    for _ in 0..<3 {
      guard Self.write("Allow access to your music? [y/n] ", to: terminal) else { return nil }
      guard let line = Self.readLine(from: terminal) else {
        // End of input (Ctrl-D): end the prompt's line, so what follows starts on its own.
        _ = Self.write("\n", to: terminal)
        return nil
      }
      switch line.trimmingWhitespace().lowercased() {
      case "y", "yes": return true
      case "n", "no": return false
      default: continue
      }
    }
    return nil
  }

  /// The text without control characters: a name or description must not be able to move the
  /// cursor or rewrite the question.
  static func printable(_ text: String) -> String {
    String(
      String.UnicodeScalarView(
        text.unicodeScalars.map { $0.properties.generalCategory == .control && $0 != "\n" ? " " : $0 }))
  }

  private static func write(_ text: String, to terminal: Int32) -> Bool {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
      let count = bytes.withUnsafeBytes { Glibc.write(terminal, $0.baseAddress, $0.count) }
      if count < 0 {
        if errno == EINTR { continue }
        return false
      }
      bytes = bytes.dropFirst(count)
    }
    return true
  }

  /// One line (without its newline), or nil at end of file or on an error.
  private static func readLine(from terminal: Int32) -> String? {
    var line: [UInt8] = []
    var byte: UInt8 = 0
    while true {
      let count = Glibc.read(terminal, &byte, 1)
      if count < 0 {
        if errno == EINTR { continue }
        return nil
      }
      if count == 0 { return nil }
      if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
      // Nobody types a long answer: keep only the start.
      if line.count < 64 { line.append(byte) }
    }
  }
}
