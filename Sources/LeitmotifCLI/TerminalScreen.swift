// The controlling terminal for full-screen commands (`leitmotif pick`): raw mode through termios,
// the alternate screen, keys, the size, and putting everything back on every way out.
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

// What the signal handlers use. A handler may only make async-signal-safe calls (write,
// tcsetattr, signal, raise), so everything it needs is prepared here before raw mode starts.
nonisolated(unsafe) private var signalTerminalFD: Int32 = -1
nonisolated(unsafe) private var signalSavedModes = termios()
nonisolated(unsafe) private var signalRestoreBytes: UnsafeMutablePointer<UInt8>? = nil
nonisolated(unsafe) private var signalRestoreCount = 0
/// The write end of the self-pipe SIGWINCH writes to, so the input loop's poll() wakes up.
nonisolated(unsafe) private var signalWakeFD: Int32 = -1

/// Puts the terminal back from inside a signal handler (async-signal-safe calls only).
private func restoreTerminalFromSignal() {
  guard signalTerminalFD >= 0 else { return }
  if let bytes = signalRestoreBytes { _ = write(signalTerminalFD, bytes, signalRestoreCount) }
  // TCSANOW: a handler must not wait for output to drain to a terminal nobody may be reading.
  _ = tcsetattr(signalTerminalFD, TCSANOW, &signalSavedModes)
}

/// A key (or key sequence) read from the terminal.
enum TerminalKey: Equatable {
  case text(String)
  case space, enter, escape, backspace, tab
  case up, down, left, right, pageUp, pageDown, home, end
  /// Ctrl-C (raw mode delivers it as a byte, not a signal).
  case interrupt
  /// Ctrl-U: clear the line.
  case clearLine
  case other

  /// Splits what one read() returned into keys. A lone ESC at the end is the Escape key (the
  /// caller waits briefly for the rest of a sequence before deciding that).
  static func parse(_ bytes: [UInt8]) -> [TerminalKey] {
    var keys: [TerminalKey] = []
    var index = 0
    while index < bytes.count {
      let byte = bytes[index]
      switch byte {
      case 0x1b:
        guard index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "[") || bytes[index + 1] == UInt8(ascii: "O")
        else {
          keys.append(.escape)
          index += 1
          continue
        }
        // CSI or SS3: parameters, then one final byte in 0x40...0x7e.
        var end = index + 2
        while end < bytes.count, !(0x40...0x7e).contains(bytes[end]) { end += 1 }
        guard end < bytes.count else {
          keys.append(.escape)
          index = bytes.count
          continue
        }
        let parameter = String(decoding: bytes[(index + 2)..<end], as: UTF8.self)
        keys.append(Self.sequence(final: bytes[end], parameter: parameter))
        index = end + 1
        continue
      case 0x0d, 0x0a: keys.append(.enter)
      case 0x7f, 0x08: keys.append(.backspace)
      case 0x09: keys.append(.tab)
      case 0x03: keys.append(.interrupt)
      case 0x15: keys.append(.clearLine)
      case 0x20: keys.append(.space)
      case 0..<0x20: keys.append(.other)
      default:
        // One UTF-8 character: its length comes from the lead byte.
        let length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1
        let slice = bytes[index..<min(index + length, bytes.count)]
        let text = String(decoding: slice, as: UTF8.self)
        keys.append(text.isEmpty || text == "\u{FFFD}" ? .other : .text(text))
        index += length
        continue
      }
      index += 1
    }
    return keys
  }

  private static func sequence(final: UInt8, parameter: String) -> TerminalKey {
    switch final {
    case UInt8(ascii: "A"): return .up
    case UInt8(ascii: "B"): return .down
    case UInt8(ascii: "C"): return .right
    case UInt8(ascii: "D"): return .left
    case UInt8(ascii: "H"): return .home
    case UInt8(ascii: "F"): return .end
    case UInt8(ascii: "~"):
      switch parameter.split(separator: ";").first ?? "" {
      case "1", "7": return .home
      case "4", "8": return .end
      case "5": return .pageUp
      case "6": return .pageDown
      default: return .other
      }
    default: return .other
    }
  }
}

/// The terminal, taken over: /dev/tty (not stdin and stdout, so the picked items can go to a
/// pipe while the screen stays on the terminal) in raw mode on the alternate screen.
///
/// `restore()` puts it back; it runs on every way out: a normal return, `exit` after an error,
/// and SIGINT, SIGTERM, SIGHUP and SIGQUIT (the handler restores, then re-raises the signal with
/// its default action, so the exit status still says which signal it was).
final class TerminalScreen {
  struct OpenError: Error, CustomStringConvertible {
    var reason: String
    var description: String { reason }
  }

  let fd: Int32
  private var savedModes = termios()
  private let wakePipe: (read: Int32, write: Int32)
  private var isRestored = false
  private static let enterSequence = "\u{1b}[?1049h\u{1b}[?25l\u{1b}[2J"
  private static let leaveSequence = "\u{1b}[0m\u{1b}[?25h\u{1b}[?1049l"

  init() throws(OpenError) {
    fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
    guard fd >= 0 else { throw OpenError(reason: "no terminal: /dev/tty: \(String(cString: strerror(errno)))") }
    guard tcgetattr(fd, &savedModes) == 0 else {
      let reason = String(cString: strerror(errno))
      close(fd)
      throw OpenError(reason: "/dev/tty is not a terminal: \(reason)")
    }
    var pipeFDs: [Int32] = [-1, -1]
    guard pipe(&pipeFDs) == 0 else {
      close(fd)
      throw OpenError(reason: "pipe: \(String(cString: strerror(errno)))")
    }
    wakePipe = (pipeFDs[0], pipeFDs[1])
    for descriptor in pipeFDs {
      _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
      _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
    }

    // Prepared before any handler can run.
    signalTerminalFD = fd
    signalSavedModes = savedModes
    let restore = Array(Self.leaveSequence.utf8)
    let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: restore.count)
    bytes.initialize(from: restore, count: restore.count)
    signalRestoreBytes = bytes
    signalRestoreCount = restore.count
    signalWakeFD = wakePipe.write
    // A parent may have started us with these blocked (a thread's mask is inherited through
    // fork and exec): then a resize would never be seen and SIGTERM would never end us.
    var handled = sigset_t()
    sigemptyset(&handled)
    for signalNumber in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH] { sigaddset(&handled, signalNumber) }
    pthread_sigmask(SIG_UNBLOCK, &handled, nil)
    for signalNumber in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] {
      signal(signalNumber) { number in
        restoreTerminalFromSignal()
        signal(number, SIG_DFL)
        raise(number)
      }
    }
    signal(SIGWINCH) { _ in
      var byte: UInt8 = UInt8(ascii: "W")
      _ = write(signalWakeFD, &byte, 1)
    }

    var raw = savedModes
    raw.c_iflag &= ~tcflag_t(BRKINT | ICRNL | INPCK | ISTRIP | IXON)
    raw.c_oflag &= ~tcflag_t(OPOST)
    raw.c_cflag |= tcflag_t(CS8)
    raw.c_lflag &= ~tcflag_t(ECHO | ICANON | IEXTEN | ISIG)
    withUnsafeMutableBytes(of: &raw.c_cc) { cc in
      cc[Int(VMIN)] = 1
      cc[Int(VTIME)] = 0
    }
    _ = tcsetattr(fd, TCSAFLUSH, &raw)
    send(Self.enterSequence)
  }

  deinit { restore() }

  /// Leaves the alternate screen, shows the cursor and puts the terminal modes back. Safe to call
  /// more than once.
  func restore() {
    guard !isRestored else { return }
    isRestored = true
    send(Self.leaveSequence)
    _ = tcsetattr(fd, TCSAFLUSH, &savedModes)
    signal(SIGWINCH, SIG_DFL)
    for signalNumber in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] { signal(signalNumber, SIG_DFL) }
    signalTerminalFD = -1
    signalWakeFD = -1
    close(wakePipe.read)
    close(wakePipe.write)
    close(fd)
  }

  /// Columns and rows (80x24 when the terminal does not say).
  var size: (columns: Int, rows: Int) {
    var window = winsize()
    let result = withUnsafeMutablePointer(to: &window) { ioctl(fd, UInt(TIOCGWINSZ), $0) }
    guard result == 0, window.ws_col > 0, window.ws_row > 0 else { return (80, 24) }
    return (Int(window.ws_col), Int(window.ws_row))
  }

  /// Writes `text` to the terminal, all of it.
  func send(_ text: String) {
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
      let written = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
      if written < 0 {
        if errno == EINTR { continue }
        return
      }
      offset += written
    }
  }

  /// What woke the input loop.
  enum Event {
    case keys([TerminalKey])
    case resized
  }

  /// Waits for keys or a resize.
  func nextEvent() -> Event {
    while true {
      var fds = [
        pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0),
      ]
      let ready = poll(&fds, 2, -1)
      if ready < 0 {
        if errno == EINTR { continue }
        return .keys([.escape])
      }
      if fds[1].revents & Int16(POLLIN) != 0 {
        var drain = [UInt8](repeating: 0, count: 64)
        _ = read(wakePipe.read, &drain, drain.count)
        return .resized
      }
      if fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
        var bytes = readAvailable()
        if bytes.isEmpty { return .keys([.interrupt]) }  // the terminal went away
        // A lone ESC may be the start of a sequence still on its way: wait a moment for it.
        if bytes.last == 0x1b, waitForInput(milliseconds: 30) { bytes += readAvailable() }
        return .keys(TerminalKey.parse(bytes))
      }
    }
  }

  private func readAvailable() -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: 256)
    while true {
      let count = read(fd, &buffer, buffer.count)
      if count < 0 && errno == EINTR { continue }
      return count > 0 ? Array(buffer[0..<count]) : []
    }
  }

  private func waitForInput(milliseconds: Int32) -> Bool {
    var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    return poll(&descriptor, 1, milliseconds) > 0
  }
}
