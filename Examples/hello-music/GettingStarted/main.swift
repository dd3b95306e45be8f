import Foundation
import Leitmotif

// 1. One engine per game: the default sound device, or headless where there is none.
//    The library never prints: notices, warnings and errors come to this handler.
let engine = try AudioEngine(output: .defaultDevice) { diagnostic in print(diagnostic) }

// 2. A player plays one item. Every call returns at once; the file opens on the loader thread.
let menu = try Player(engine: engine, item: MediaItem(path: "Assets/music/menu.ogg"))
menu.addObserver { event in print("menu:", event) }  // on the player's notification queue
menu.play()
menu.currentPlaybackTime = 12.0  // sample-accurate, click-free
try menu.setCurrentPlaybackRate(1.25)

// 3. A queue player plays a list: crossfades, gapless joins, loops, repeat and shuffle.
let explore = MediaItem(path: "Assets/music/explore.ogg")
let stealth = MediaItem(path: "Assets/music/stealth.ogg")
let queue = QueuePlayer(engine: engine)
queue.transition = try Transition(duration: 2, curve: .sCurve)  // between items
var descriptor = QueueDescriptor(items: [explore, stealth])
try descriptor.setTransition(.gapless, for: stealth)  // stealth follows explore seamlessly
try queue.setQueue(with: descriptor)
queue.repeatMode = .all
queue.addObserver { event in
  if case .nowPlayingItemChanged(let item, _, let reason) = event {
    print("now playing", item?.title ?? "nothing", "because of", reason)
  }
}
menu.stop()
queue.play()

// 4. Or let the cue file decide: one director per game, made while the game loads
//    (it reads the cue file and the bundled music's tags).
queue.stop()
let director = try Director(engine: engine, cueFile: "Assets/cues.json5")
director.addObserver { report in print(report) }  // which rule fired, or why none did
director.start()  // the cue file's start state fades in

// In the frame loop, from any thread: never blocks, never touches a file.
director.post("level.start", ["level": "The Old Forest"])
director.post("enemy.spotted", ["threat": 3, "kind": "patrol"])
director.setParameter("health", 0.2, rampSeconds: 1)

Thread.sleep(forTimeInterval: 8)  // the fight begins on the bar about 5 s in
director.shutdown()
engine.shutdown()
