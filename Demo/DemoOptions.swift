import Foundation

/// `leitmotif-demo`'s command line.
struct DemoOptions {
  enum Mode { case automatic, offline, realtime }

  static let usage = """
    usage: leitmotif-demo [--offline | --realtime] [--speed N] [--cues FILE] [--level FILE]
                          [--library DIR] [--pick] [--out FILE.wav] [--timeline FILE.svg] [--no-desktop]
      plays the demo level: with a sound card in real time; with none (CI, a server) it says so
      and renders the level offline, faster than real time, to --out
      --offline, --realtime  force the mode (real time without a sound card plays headless)
      --speed N        real time only: the level's events come N times faster (the music plays
                       at its own speed)
      --cues FILE      another cue file (default: this repository's Assets/cues.json5, wherever
                       the demo is run from); in real time it is watched: edit it while the
                       level runs and hear the change
      --level FILE     another level script (default: this repository's Demo/level.json5)
      --library DIR    the player's music for the exploration state (asks for consent first)
      --pick           first pick the songs for the exploration state in the full-screen terminal
                       picker (leitmotif pick: type to search, Space marks, Enter picks); needs --library
      --out FILE       the rendered level (default demo-level.wav)
      --timeline FILE  the timeline: FILE.svg (the picture), FILE.json (its data) and FILE.png
                       (where rsvg-convert or ImageMagick is installed), FILE without its
                       extension (default demo-level); the same as leitmotif cues simulate's
      --no-desktop     real time only: stay off the desktop's media controls (MPRIS), which the
                       level is on by default where there is a session bus
    """

  var mode = Mode.automatic
  var speed = 1.0
  var cuesPath: String
  var levelPath: String
  var libraryFolder: String?
  var pick = false
  var desktop = true
  var outputPath = "demo-level.wav"
  var timelinePath = "demo-level.svg"

  /// The package's folder, for the default cue file and level (found from this source file, so
  /// the demo runs from any working directory).
  static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().path

  init(arguments: [String]) throws(UsageError) {
    cuesPath = Self.packageRoot + "/Assets/cues.json5"
    levelPath = Self.packageRoot + "/Demo/level.json5"
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      switch argument {
      case "--offline": mode = .offline
      case "--realtime": mode = .realtime
      case "--pick": pick = true
      case "--no-desktop": desktop = false
      case "--help", "-h": throw UsageError(message: nil)
      case "--speed", "--cues", "--level", "--library", "--out", "--timeline":
        guard let value = rest.popFirst(), !value.isEmpty else {
          throw UsageError(message: "\(argument) needs a value")
        }
        switch argument {
        case "--speed":
          guard let speed = Double(value), speed.isFinite, speed > 0, speed <= 100 else {
            throw UsageError(message: "--speed: expected a number in (0, 100], got \"\(value)\"")
          }
          self.speed = speed
        case "--cues": cuesPath = value
        case "--level": levelPath = value
        case "--library": libraryFolder = value
        case "--out": outputPath = value
        default: timelinePath = value
        }
      default:
        throw UsageError(message: "unknown argument \"\(argument)\"")
      }
    }
    if pick && libraryFolder == nil { throw UsageError(message: "--pick needs --library DIR (the songs to pick from)") }
  }

  /// The JSON and PNG beside the timeline picture.
}

struct UsageError: Error {
  /// nil: help was asked for.
  var message: String?
}
