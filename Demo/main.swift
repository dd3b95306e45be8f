// leitmotif-demo: the demo level. A scripted three minutes of play (Demo/level.json5) drives the
// music through the director and the default cue file (Assets/cues.json5) over the bundled
// music (Assets/music). With a sound card it plays in real time; without one (CI, a server) it
// renders the level offline to a WAV file, faster than real time. Either way it prints what the
// music does as it happens and draws a timeline picture. See Demo/README.md.
import Foundation
import Leitmotif

let options: DemoOptions
do {
  options = try DemoOptions(arguments: Array(CommandLine.arguments.dropFirst()))
} catch {
  if let message = error.message {
    FileHandle.standardError.write(Data("leitmotif-demo: \(message)\n\(DemoOptions.usage)\n".utf8))
    exit(2)
  }
  Output.shared.print(DemoOptions.usage)
  exit(0)
}

func complain(_ message: String) -> Never {
  FileHandle.standardError.write(Data("leitmotif-demo: \(message)\n".utf8))
  exit(1)
}

let printDiagnostic: DiagnosticsHandler = { diagnostic in
  Output.shared.print("leitmotif-demo: \(diagnostic)")
}

// The cue file and the level, checked before anything plays.
let sheet: CueSheet
let script: CueScript
do {
  sheet = try CueSheet.load(path: options.cuesPath)
  script = try CueScript.load(path: options.levelPath)
} catch {
  FileHandle.standardError.write(Data("\(error)\n".utf8))
  exit(2)
}

// The player's music, only with their consent (asked on the terminal).
var library: MediaLibrary?
var picks: MediaItemCollection?
if let folder = options.libraryFolder {
  library = PlayerMusic.open(folder: folder)
  if options.pick, let library {
    picks = PlayerMusic.pick(library: library, folder: folder)
  }
}

// Real time needs a sound card, unless asked for anyway (then it plays headless).
var mode = options.mode
var engine: AudioEngine?
if mode != .offline {
  do {
    let realtime = try AudioEngine(output: .defaultDevice)
    if realtime.initialDevice.kind == .headless && mode == .automatic {
      realtime.shutdown()
      Output.shared.print("no sound card here: rendering the level offline to \(options.outputPath) instead")
      mode = .offline
    } else {
      engine = realtime
      mode = .realtime
    }
  } catch {
    if mode == .realtime { complain("cannot open the sound device: \(error)") }
    Output.shared.print("no sound device (\(error)): rendering the level offline to \(options.outputPath) instead")
    mode = .offline
  }
}

let levelSeconds = script.lastTime + 8
let timeline: CueTimeline
if mode == .offline {
  timeline = OfflineLevel.run(sheet: sheet, script: script, library: library, picks: picks, levelSeconds: levelSeconds)
} else {
  timeline = RealtimeLevel.run(
    engine: engine!, script: script, library: library, picks: picks, levelSeconds: levelSeconds)
}

// The timeline: the data, the picture, and a PNG where a converter exists (`--timeline`).
do {
  let title = "Leitmotif demo level: \((options.levelPath as NSString).lastPathComponent)"
  for file in try TimelinePicture.write(timeline, title: title, named: options.timelinePath) {
    Output.shared.print((file.hasSuffix(".json") ? "timeline data: " : "timeline picture: ") + file)
  }
} catch {
  complain("cannot write the timeline: \(error)")
}

// Stopped by a signal: the shell's status for it (128 + its number), after the orderly shutdown.
if stoppedBySignal != 0 { exit(128 + stoppedBySignal) }
