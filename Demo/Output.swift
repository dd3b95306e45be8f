import Foundation

/// The demo's printing: report lines from the director's notification queue and the progress
/// line from the main thread share the terminal, so they go through one lock; on a terminal the
/// progress line is redrawn in place under the report lines.
final class Output: @unchecked Sendable {
  static let shared = Output()
  private let lock = NSLock()
  private var progress: String?
  private let isTerminal = isatty(STDOUT_FILENO) != 0

  func print(_ line: String) {
    lock.withLock {
      var text = ""
      if isTerminal, progress != nil { text += "\r\u{1B}[K" }
      text += line + "\n"
      if isTerminal, let progress { text += progress }
      write(text)
    }
  }

  func showProgress(_ line: String) {
    lock.withLock {
      if isTerminal {
        progress = line
        write("\r\u{1B}[K" + line)
      } else {
        write(line + "\n")
      }
    }
  }

  /// Ends the progress line (the next output starts on a line of its own).
  func finishProgress() {
    lock.withLock {
      if isTerminal, progress != nil { write("\n") }
      progress = nil
    }
  }

  /// Unbuffered, so lines from two threads never interleave mid-line.
  private func write(_ text: String) { FileHandle.standardOutput.write(Data(text.utf8)) }
}
