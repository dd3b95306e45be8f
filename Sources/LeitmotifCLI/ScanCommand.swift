import Foundation
import Leitmotif

/// `leitmotif scan [--library DIR]... [--app ID] [--json] [--wait SECONDS]`: scans the library
/// folders into the index for one application id and prints what changed.
///
/// Exit status: 0 scanned, 1 some files failed (they are listed), 2 a usage error, 3 no access
/// to the library (the state is named on stderr), 4 the index could not be used or another scan
/// held it (busy).
enum ScanCommand {
  static let usage = """
    usage: leitmotif scan [--library DIR]... [--app ID] [--json] [--wait SECONDS]
      --library DIR    a library folder (repeat for several; default: XDG_MUSIC_DIR, else ~/Music)
      --app ID         the application id whose consent and index are used (default: leitmotif)
      --json           one JSON object instead of lines
      --wait SECONDS   how long to wait for another scan of the same index (default: 30)
    """

  /// The CLI's own usage description, shown when the player is asked for its application id.
  static let usageDescription = "The leitmotif tool indexes your music so that games can play it as their soundtrack."

  static func run(_ arguments: [String]) -> Int32 {
    var folders: [URL] = []
    var applicationID = "leitmotif"
    var json = false
    var waitSeconds = 30.0
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      switch argument {
      case "--json": json = true
      case "--library", "--app", "--wait":
        guard let value = rest.popFirst() else { fail("scan: \(argument) needs a value\n\(usage)") }
        switch argument {
        case "--library": folders.append(URL(fileURLWithPath: value).standardizedFileURL)
        case "--app":
          applicationID = AccessCommand.applicationID(value, for: "scan --app")
        default:
          guard let seconds = Double(value), seconds >= 0, seconds <= FrameMath.maximumSeconds else {
            fail("scan: --wait: expected a time from 0 to 86400 s (one day), got \"\(value)\"")
          }
          waitSeconds = seconds
        }
      case "--help", "-h":
        print(usage)
        return 0
      default: fail("scan: unknown argument \"\(argument)\"\n\(usage)")
      }
    }
    var configuration = MediaLibrary.Configuration(
      applicationID: applicationID, usageDescription: applicationID == "leitmotif" ? usageDescription : nil,
      folders: folders.isEmpty ? nil : folders)
    configuration.applicationName = applicationID
    // The tool asks for its own id on the terminal when nobody has answered yet (without a
    // terminal nobody is asked and the scan fails with notDetermined); another app's consent is
    // that app's to ask for, or `leitmotif access allow ID`.
    let library = MediaLibrary(
      configuration: configuration, prompt: applicationID == "leitmotif" ? TerminalPrompt() : nil,
      diagnostics: printDiagnostic)
    if applicationID == "leitmotif" && library.authorizationStatus == .notDetermined {
      _ = try? library.requestAuthorization()
    }
    let report: ScanReport
    do {
      // On a terminal, a progress bar on stderr: a first scan decodes every song.
      let bar = isatty(2) == 1 && !json
      var lastDrawn = 0.0
      report = try library.scan(waitingUpToSeconds: waitSeconds) { progress in
        guard bar, progress.elapsedSeconds - lastDrawn >= 0.1 || progress.filesRead == progress.filesToRead else {
          return
        }
        lastDrawn = progress.elapsedSeconds
        FileHandle.standardError.write(Data(("\r" + Self.progressLine(progress) + "\u{1B}[K").utf8))
        if progress.filesRead == progress.filesToRead { FileHandle.standardError.write(Data("\n".utf8)) }
      }
    } catch {
      switch error {
      case .accessDenied:
        fail("scan: \(error)", status: 3)
      default:
        fail("scan: \(error)", status: 4)
      }
    }
    if json {
      print(jsonObject(report, folders: library.folders))
    } else {
      printLines(report, folders: library.folders)
    }
    return report.failed.isEmpty ? 0 : 1
  }

  /// "[########............] 120/500 files, 35.2 files/s, 0:11 left".
  static func progressLine(_ progress: ScanProgress) -> String {
    let width = 24
    let done = progress.filesToRead > 0 ? width * progress.filesRead / progress.filesToRead : width
    let left =
      progress.secondsLeft.map { seconds -> String in
        let whole = Int(seconds.rounded(.up))
        return String(format: "%d:%02d left", whole / 60, whole % 60)
      } ?? "estimating"
    return "[" + String(repeating: "#", count: done) + String(repeating: ".", count: width - done) + "] "
      + "\(progress.filesRead)/\(progress.filesToRead) files, "
      + String(format: "%.1f files/s, ", progress.filesPerSecond) + left
  }

  static func printLines(_ report: ScanReport, folders: [URL]) {
    say("scanned \(folders.map { FileSystemPath.displayed($0.path) }.joined(separator: ", ")): \(report)")
    // File names may hold newlines and escape sequences: shown escaped, one line each.
    for failure in report.failed { say("failed: \(TerminalText.safe("\(failure)"))") }
    for failure in report.notRetried {
      say("not retried (unchanged since it failed): \(TerminalText.safe("\(failure)"))")
    }
    for skipped in report.skipped { say("skipped: \(TerminalText.safe("\(skipped)"))") }
    if !report.playlists.isEmpty { say("playlists: \(report.playlists.count)") }
    for failure in report.playlistFailures { say("playlist: \(TerminalText.safe("\(failure)"))") }
  }

  static func jsonObject(_ report: ScanReport, folders: [URL]) -> String {
    func list(_ failures: [ScanFailure]) -> String {
      "["
        + failures.map {
          "{\"path\":\(jsonString(FileSystemPath.displayed($0.path))),\"reason\":\(jsonString($0.reason))}"
        }.joined(
          separator: ",")
        + "]"
    }
    let fields: [(String, String)] = [
      ("folders", "[" + folders.map { jsonString($0.path) }.joined(separator: ",") + "]"),
      ("added", "\(report.added)"), ("updated", "\(report.updated)"), ("moved", "\(report.moved)"),
      ("removed", "\(report.removed)"), ("unchanged", "\(report.unchanged)"), ("tagsReread", "\(report.tagsReread)"),
      ("failedUnchanged", "\(report.failedUnchanged)"), ("notRetried", list(report.notRetried)),
      ("failed", list(report.failed)),
      ("skipped", list(report.skipped)),
      (
        "unsupported",
        "{"
          + report.unsupported.sorted { $0.key < $1.key }.map { "\(jsonString($0.key)):\($0.value)" }.joined(
            separator: ",") + "}"
      ),
      ("playlists", "[" + report.playlists.map(jsonString).joined(separator: ",") + "]"),
      ("playlistFailures", list(report.playlistFailures)),
      ("durationSeconds", String(format: "%.3f", report.durationSeconds)),
    ]
    return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
  }
}
