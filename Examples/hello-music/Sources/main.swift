// hello-music: a game's music on Leitmotif, start to finish. Run it from this folder:
//   swift run hello-music [SECONDS]
// It plays on the default sound device (headless, silent, where there is none), posts a few
// cues from a 60 Hz "game loop" while the music follows them, prints each report of the
// director, and shuts down. The README's Swift snippet is this file.

import Foundation
import Leitmotif

// 1. One engine per game: the default sound device, or headless where there is none. The
//    library never prints: notices, warnings and errors come to this handler.
let engine = try AudioEngine(output: .defaultDevice) { diagnostic in print("leitmotif: \(diagnostic)") }

// 2. One director per cue file, made while the game loads (it reads the file and the bundled
//    music's tags). A bad file throws CueFileError with every problem, each at its line and
//    column. While the game runs the file is watched: edit it, and the change is heard.
let director: Director
do {
  director = try Director(engine: engine, cueFile: "cues.json5")
} catch {
  print("hello-music: \(error)")
  exit(1)
}

// 3. What the director did and why (which rule fired, which state plays, or why a cue was
//    ignored), on Leitmotif's notification queue, never on the game's thread.
director.addObserver { report in print(report) }
director.start()  // the cue file's start state fades in

// 4. The game loop: 60 frames a second. Posting never blocks and never touches a file.
let seconds = CommandLine.arguments.dropFirst().first.flatMap(Double.init) ?? 12
let script: [(at: Double, cue: String, payload: CuePayload)] = [
  (2, "enemy.spotted", ["threat": 3, "kind": "patrol"]),
  (5, "player.hit", ["damage": 20]),
  (7, "combat.end", [:]),
]
let start = Date()
var next = 0
while Date().timeIntervalSince(start) < seconds {
  let now = Date().timeIntervalSince(start)
  while next < script.count, script[next].at <= now {
    director.post(script[next].cue, script[next].payload)
    next += 1
  }
  Thread.sleep(forTimeInterval: 1.0 / 60)
}
if let playing = director.nowPlaying {
  print(
    "hello-music: after \(seconds) s, \(director.audibleState ?? "no state") plays \"\(playing.item.title ?? "?")\"")
}

// 5. Shut down before exit: the director first, then the engine (its threads stop, OpenAL closes).
director.shutdown()
engine.shutdown()
print("hello-music: done")
