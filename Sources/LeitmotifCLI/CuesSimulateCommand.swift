import Foundation
import Leitmotif

/// `leitmotif cues simulate CUES --events SCRIPT --out OUT.wav [--library DIR] [--timeline OUT.json]
/// [--duration S] [--state NAME]`: renders a scripted level offline through the director,
/// deterministically, and prints the timeline (one line per thing the director did).
///
/// Exit status: 0 rendered; 2 a usage error, or an invalid cue file or script (every problem
/// printed as `FILE:LINE:COLUMN: error: ...`); 1 the render failed (the output could not be written).
enum CuesSimulateCommand {
  static let usage = """
    usage: leitmotif cues simulate CUES --events SCRIPT --out OUT.wav [--library DIR] [--timeline OUT.json]
                                   [--duration SECONDS] [--state NAME]
      --events SCRIPT     a JSON5 list of timed events: [{ at: 12.5, cue: "enemy.spotted", payload: { threat: 2 } }]
      --out OUT.wav       where the render goes (32-bit float, 48 kHz stereo)
      --library DIR       the player's music for library sources (asks for consent on a terminal)
      --timeline OUT.json the timeline as JSON: events and what they did, states, items, voice gains
      --duration SECONDS  how long to render (default: 8 s after the last event)
      --state NAME        the state to start in (default: the cue file's "start")
    """

  static func run(_ arguments: [String]) -> Int32 {
    var cuesPath: String?
    var eventsPath: String?
    var outputPath: String?
    var timelinePath: String?
    var libraryFolder: String?
    var options = CueSimulation.Options()
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      switch argument {
      case "--help", "-h":
        say(usage)
        return 0
      case "--events", "--out", "--timeline", "--library", "--duration", "--state":
        guard let value = rest.popFirst(), !value.isEmpty else {
          fail("cues simulate: \(argument) needs a value\n\(usage)")
        }
        switch argument {
        case "--events": eventsPath = value
        case "--out": outputPath = value
        case "--timeline": timelinePath = value
        case "--library": libraryFolder = value
        case "--state": options.startState = value
        default:
          guard let seconds = Double(value), seconds.isFinite, seconds >= 0 else {
            fail("cues simulate: --duration: expected a time of 0 s or more, got \"\(value)\"")
          }
          options.durationSeconds = seconds
        }
      default:
        if argument.hasPrefix("-") { fail("cues simulate: unknown option \"\(argument)\"\n\(usage)") }
        guard cuesPath == nil else { fail("cues simulate takes one cue file\n\(usage)") }
        cuesPath = argument
      }
    }
    guard let cuesPath else { fail("cues simulate needs a cue file\n\(usage)") }
    guard let eventsPath else { fail("cues simulate needs --events SCRIPT\n\(usage)") }
    guard let outputPath else { fail("cues simulate needs --out OUT.wav\n\(usage)") }

    let sheet: CueSheet
    let script: CueScript
    do {
      sheet = try CueSheet.load(path: cuesPath)
      script = try CueScript.load(path: eventsPath)
    } catch {
      FileHandle.standardError.write(Data("\(error)\n".utf8))
      return 2
    }
    if let folder = libraryFolder {
      guard let library = openLibrary(folder) else { return 2 }
      options.library = library
    }
    if let state = options.startState, sheet.states[state] == nil {
      fail(
        "cues simulate: --state: no state \"\(state)\" in \(cuesPath) (it has: \(sheet.states.keys.sorted().joined(separator: ", ")))"
      )
    }
    let started = Date()
    let result: CueSimulation.Result
    do {
      result = try CueSimulation.run(
        sheet: sheet, script: script, outputPath: outputPath, options: options, diagnostics: printDiagnostic)
    } catch {
      FileHandle.standardError.write(Data("cues simulate: \(error)\n".utf8))
      return 1
    }
    for line in result.timeline.lines { say(line) }
    for note in result.timeline.notes { say("note: \(note)") }
    let seconds = Double(result.framesWritten) / Double(result.sampleRate)
    let elapsed = Date().timeIntervalSince(started)
    say(
      String(
        format: "rendered %.1f s to %@ in %.1f s (%.0fx real time)", seconds, outputPath, elapsed,
        seconds / max(elapsed, 0.001)))
    if let timelinePath {
      do {
        try result.timeline.jsonData().write(to: URL(fileURLWithPath: timelinePath))
        say("timeline: \(timelinePath)")
      } catch {
        FileHandle.standardError.write(Data("cues simulate: \(timelinePath): cannot write: \(error)\n".utf8))
        return 1
      }
    }
    return 0
  }

  /// The player's library in `folder`, scanned; consent is asked on a terminal when nobody has
  /// answered yet. Without consent the library stays closed and the director falls back (and says so).
  private static func openLibrary(_ folder: String) -> MediaLibrary? {
    var configuration = MediaLibrary.Configuration(
      applicationID: "leitmotif", usageDescription: ScanCommand.usageDescription,
      folders: [URL(fileURLWithPath: folder).standardizedFileURL])
    configuration.applicationName = "leitmotif"
    let library = MediaLibrary(configuration: configuration, prompt: TerminalPrompt(), diagnostics: printDiagnostic)
    if library.authorizationStatus == .notDetermined { _ = try? library.requestAuthorization() }
    if library.authorizationStatus == .authorized {
      do { _ = try library.scan() } catch {
        FileHandle.standardError.write(Data("cues simulate: the library scan failed: \(error)\n".utf8))
      }
    }
    return library
  }
}
