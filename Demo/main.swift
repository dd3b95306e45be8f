// leitmotif-demo: until the scripted demo level exists, a short generated piece rendered offline.
import Foundation
import Leitmotif
import LeitmotifFixtures

let outputDirectory = FileManager.default.currentDirectoryPath + "/demo-out"
try FileManager.default.createDirectory(atPath: outputDirectory, withIntermediateDirectories: true)

// Compose: 16 seconds of the seeded music-like signal, 48 kHz stereo, with tags a game would use.
let format = PCMFormat(sampleRate: 48_000, channelCount: 2)
let piece = outputDirectory + "/demo-piece.ogg"
let samples = ToneGenerator.musicLike(seed: 2026, beatsPerMinute: 120, frameCount: 16 * 48_000, format: format)
try VorbisEncoder.encode(
  samples: samples, format: format,
  tags: [("TITLE", "Demo Piece"), ("ARTIST", "Leitmotif"), ("BPM", "120"), ("LOOPSTART", "96000")],
  quality: 0.5, to: piece)
print("composed \(piece)")

// Play it through the engine: offline, on OpenAL Soft's loopback device.
let wav = outputDirectory + "/demo.wav"
var options = OfflineRenderer.Options()
options.sampleRate = 48_000
let started = Date()
let result = try OfflineRenderer.render(path: piece, to: wav, options: options) { diagnostic in
  FileHandle.standardError.write(Data("leitmotif-demo: \(diagnostic)\n".utf8))
}
let seconds = Double(result.framesWritten) / Double(result.sampleRate)
let elapsed = Date().timeIntervalSince(started)
print(String(format: "rendered %.1f s of music in %.2f s (%.0fx real time)", seconds, elapsed, seconds / elapsed))
print("wrote \(wav)")
