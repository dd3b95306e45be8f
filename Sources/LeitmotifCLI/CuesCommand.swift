import Foundation
import Leitmotif

/// `leitmotif cues check FILE`: reads a cue file as the director would and prints every problem
/// in it, in the form compilers use (`FILE:LINE:COLUMN: error: KEYPATH: MESSAGE`), so editors and
/// CI can point at them.
///
/// The problems go to standard error, one per line, in file order; the summary line ("2 errors,
/// 1 warning in FILE" or "FILE: valid (3 states, 5 sources, 7 rules)") to standard output. Exit
/// status: 0 valid (warnings allowed), 2 invalid, unreadable, or a usage error.
enum CuesCommand {
  static let usage = """
    usage:
      leitmotif cues check FILE    checks a cue file: every error and warning, with its line and column
      leitmotif cues simulate CUES --events SCRIPT --out OUT.wav [--library DIR] [--timeline FILE]
                                   plays a scripted level offline and prints what each event did
      leitmotif cues analyze [--check] FOLDER
                                   measures the bundled music in FOLDER once (loudness, tempo, beats,
                                   energy) into FOLDER/.leitmotif/analysis/, to ship with the game: a
                                   player's first launch then reads it instead of decoding every piece;
                                   --check changes nothing and fails when an analysis is missing or stale
    exit status: 0 the file is valid (it may have warnings), 2 it is not, or a usage error;
    analyze: 0 done (--check: all current), 1 --check found a piece without a current analysis or
    a piece that does not decode, 2 a usage error or a folder that cannot be read or written
    """

  static func run(_ arguments: [String]) -> Int32 {
    switch arguments.first {
    case "check":
      return check(Array(arguments.dropFirst()))
    case "simulate":
      return CuesSimulateCommand.run(Array(arguments.dropFirst()))
    case "analyze":
      return analyze(Array(arguments.dropFirst()))
    case "help", "--help", "-h":
      print(usage)
      return 0
    case nil:
      fail("cues needs a subcommand\n\(usage)")
    case let other?:
      fail("cues: unknown subcommand \"\(other)\"\n\(usage)")
    }
  }

  private static func check(_ arguments: [String]) -> Int32 {
    if arguments.contains(where: { $0 == "--help" || $0 == "-h" }) {
      print(usage)
      return 0
    }
    // "--" ends the options, for a file whose name starts with "-".
    var paths: [String] = []
    var optionsEnded = false
    for argument in arguments {
      if !optionsEnded && argument == "--" {
        optionsEnded = true
      } else if !optionsEnded && argument.hasPrefix("-") && argument != "-" {
        fail("cues check: unknown option \"\(argument)\"\n\(usage)")
      } else {
        paths.append(argument)
      }
    }
    guard paths.count == 1 else {
      fail(paths.isEmpty ? "cues check needs a FILE\n\(usage)" : "cues check takes one FILE\n\(usage)")
    }
    let path = paths[0]

    let (sheet, problems) = CueSheet.check(path: path)
    for problem in problems { FileHandle.standardError.write(Data("\(problem)\n".utf8)) }

    let errors = problems.filter { $0.severity == .error }.count
    let warnings = problems.count - errors
    if let sheet {
      let counts = [
        count(sheet.states.count, "state"), count(sheet.sources.count, "source"), count(sheet.rules.count, "rule"),
      ]
      say(
        "\(path): valid (\(counts.joined(separator: ", ")))" + (warnings > 0 ? ", \(count(warnings, "warning"))" : ""))
      return 0
    }
    var summary = count(errors, "error")
    if warnings > 0 { summary += ", \(count(warnings, "warning"))" }
    say("\(summary) in \(path)")
    return 2
  }

  /// `leitmotif cues analyze [--check] FOLDER`: one line per piece ("measured", "current" or
  /// "missing", or why it failed) and per entry deleted or unused, then a summary.
  private static func analyze(_ arguments: [String]) -> Int32 {
    if arguments.contains(where: { $0 == "--help" || $0 == "-h" }) {
      print(usage)
      return 0
    }
    var checking = false
    var folders: [String] = []
    var optionsEnded = false
    for argument in arguments {
      if !optionsEnded && argument == "--" {
        optionsEnded = true
      } else if !optionsEnded && argument == "--check" {
        checking = true
      } else if !optionsEnded && argument.hasPrefix("-") {
        fail("cues analyze: unknown option \"\(argument)\"\n\(usage)")
      } else {
        folders.append(argument)
      }
    }
    guard folders.count == 1 else {
      fail(folders.isEmpty ? "cues analyze needs a FOLDER\n\(usage)" : "cues analyze takes one FOLDER\n\(usage)")
    }
    let folder = URL(fileURLWithPath: folders[0], isDirectory: true)
    let report: ShippedAnalyses.Report
    do {
      report = try checking ? ShippedAnalyses.check(folder: folder) : ShippedAnalyses.write(folder: folder)
    } catch {
      fail("cues analyze: \(error)")
    }
    for piece in report.current { say("\(piece): current") }
    for piece in report.missing { say("\(piece): \(checking ? "missing (no analysis of these bytes)" : "measured")") }
    for entry in report.unused {
      say(
        "\(AnalysisCache.shippedFolder)/\(entry): \(checking ? "unused (no piece has these bytes)" : "deleted (no piece has these bytes)")"
      )
    }
    for failure in report.failures { FileHandle.standardError.write(Data("leitmotif: \(failure)\n".utf8)) }
    let shipped = ShippedAnalyses.directory(of: folder).path
    if checking {
      let stale = report.missing.count
      say(
        stale == 0 && report.failures.isEmpty
          ? "\(shipped): \(count(report.current.count, "piece")), each with a current analysis"
          : "\(shipped): \(count(stale, "piece")) without a current analysis, \(count(report.failures.count, "failure"))"
      )
      return stale == 0 && report.failures.isEmpty ? 0 : 1
    }
    say(
      "\(shipped): \(report.missing.count) measured, \(report.current.count) current, \(report.unused.count) deleted"
        + (report.failures.isEmpty ? "" : ", \(count(report.failures.count, "failure"))"))
    return report.failures.isEmpty ? 0 : 1
  }

  /// "1 state", "3 states".
  private static func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }
}
