// leitmotif: the command-line tool. `leitmotif help` lists the commands.
import Foundation
import Leitmotif

#if canImport(Glibc)
  import Glibc
#endif

let usage = """
  usage:
    leitmotif info FILE...
        one JSON object per line: path, format, sampleRate, channels, frames, duration, tags
    leitmotif render --out OUT.wav [--seek SECONDS] [--rate R] [--duration SECONDS]
                     [--sample-rate HZ] [--format f32|s16] FILE
        renders FILE offline through the OpenAL loopback device
    leitmotif play [--seek SECONDS] [--rate R] [--device NAME] FILE
        plays FILE in real time (headless if there is no sound card); Ctrl-C stops
    leitmotif devices
        lists the playback devices OpenAL can open
  """

func fail(_ message: String, status: Int32 = 2) -> Never {
  FileHandle.standardError.write(Data("leitmotif: \(message)\n".utf8))
  exit(status)
}

func printDiagnostic(_ diagnostic: Diagnostic) {
  FileHandle.standardError.write(Data("leitmotif: \(diagnostic)\n".utf8))
}

/// Options of the form `--name value`; everything else is a positional argument.
struct Arguments {
  var options: [String: String] = [:]
  var positional: [String] = []

  init(_ arguments: ArraySlice<String>, known: Set<String>) {
    var iterator = arguments.makeIterator()
    while let argument = iterator.next() {
      if argument.hasPrefix("--") {
        let name = String(argument.dropFirst(2))
        guard known.contains(name) else { fail("unknown option --\(name)\n\(usage)") }
        guard let value = iterator.next() else { fail("--\(name) needs a value") }
        options[name] = value
      } else {
        positional.append(argument)
      }
    }
  }

  func double(_ name: String) -> Double? {
    guard let text = options[name] else { return nil }
    guard let value = Double(text), value.isFinite else { fail("--\(name): expected a number, got \"\(text)\"") }
    return value
  }
}

func jsonString(_ value: String) -> String {
  let data = try! JSONSerialization.data(withJSONObject: [value], options: [.withoutEscapingSlashes])
  let text = String(decoding: data, as: UTF8.self)
  return String(text.dropFirst().dropLast())
}

func info(_ paths: [String]) -> Int32 {
  guard !paths.isEmpty else { fail("info needs at least one FILE") }
  var status: Int32 = 0
  for path in paths {
    do {
      let decoder = try AudioFile.openDecoder(path: path)
      let tags = decoder.tags
      var fields: [(String, String)] = [
        ("path", jsonString(path)),
        ("format", jsonString(decoder.containerFormat.rawValue)),
        ("sampleRate", "\(decoder.format.sampleRate)"),
        ("channels", "\(decoder.format.channelCount)"),
        ("frames", "\(decoder.lengthFrames)"),
        ("duration", String(format: "%.6f", decoder.durationSeconds)),
      ]
      func add(_ name: String, _ value: String?) { if let value { fields.append((name, jsonString(value))) } }
      func add(_ name: String, _ value: (some Numeric)?) { if let value { fields.append((name, "\(value)")) } }
      add("title", tags.title)
      add("artist", tags.artist)
      add("album", tags.album)
      add("albumArtist", tags.albumArtist)
      add("genre", tags.genre)
      add("composer", tags.composer)
      add("trackNumber", tags.trackNumber)
      add("trackCount", tags.trackCount)
      add("discNumber", tags.discNumber)
      add("discCount", tags.discCount)
      add("beatsPerMinute", tags.beatsPerMinute)
      add("loopStartFrame", tags.loopStartFrame)
      add("loopEndFrame", tags.loopEndFrame)
      add("replayGainTrackGain", tags.replayGainTrackGainDecibels)
      add("replayGainTrackPeak", tags.replayGainTrackPeak)
      add("replayGainAlbumGain", tags.replayGainAlbumGainDecibels)
      add("replayGainAlbumPeak", tags.replayGainAlbumPeak)
      print("{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}")
      for warning in decoder.warnings {
        FileHandle.standardError.write(Data("leitmotif: warning: \(path): \(warning)\n".utf8))
      }
    } catch {
      FileHandle.standardError.write(Data("leitmotif: \(error)\n".utf8))
      status = 1
    }
  }
  return status
}

func render(_ arguments: Arguments) -> Int32 {
  guard let out = arguments.options["out"] else { fail("render needs --out OUT.wav") }
  guard arguments.positional.count == 1 else { fail("render takes exactly one FILE") }
  var options = OfflineRenderer.Options()
  options.seekSeconds = arguments.double("seek") ?? 0
  options.rate = Float(arguments.double("rate") ?? 1)
  guard options.rate > 0, options.rate <= 4 else { fail("--rate: expected a value in (0, 4], got \(options.rate)") }
  options.durationSeconds = arguments.double("duration")
  if let rate = arguments.options["sample-rate"] {
    guard let hz = Int(rate), (8_000...192_000).contains(hz) else {
      fail("--sample-rate: expected 8000...192000 Hz, got \"\(rate)\"")
    }
    options.sampleRate = hz
  }
  if let format = arguments.options["format"] {
    guard let sampleFormat = WAVSampleFormat(rawValue: format) else {
      fail("--format: expected f32 or s16, got \"\(format)\"")
    }
    options.sampleFormat = sampleFormat
  }
  do {
    let result = try OfflineRenderer.render(
      path: arguments.positional[0], to: out, options: options, diagnostics: printDiagnostic)
    let seconds = Double(result.framesWritten) / Double(result.sampleRate)
    print(
      "wrote \(out): \(result.framesWritten) frames, \(String(format: "%.3f", seconds)) s at \(result.sampleRate) Hz")
    if let failure = result.failure {
      FileHandle.standardError.write(Data("leitmotif: \(failure)\n".utf8))
      return 1
    }
    return 0
  } catch {
    FileHandle.standardError.write(Data("leitmotif: \(error)\n".utf8))
    return 1
  }
}

/// Unbuffered, so the once-a-second position shows at once even through a pipe.
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

final class Flag: @unchecked Sendable {
  private let lock = NSLock()
  private var value = false
  func set() { lock.withLock { value = true } }
  var isSet: Bool { lock.withLock { value } }
}

nonisolated(unsafe) var interrupted: sig_atomic_t = 0

func play(_ arguments: Arguments) -> Int32 {
  guard arguments.positional.count == 1 else { fail("play takes exactly one FILE") }
  let path = arguments.positional[0]
  let rate = Float(arguments.double("rate") ?? 1)
  let engine: AudioEngine
  do {
    let output: OutputChoice = arguments.options["device"].map { .namedDevice($0) } ?? .defaultDevice
    engine = try AudioEngine(output: output, diagnostics: printDiagnostic)
  } catch {
    fail("\(error)", status: 1)
  }
  let player: Player
  do { player = try Player(engine: engine, item: MediaItem(path: path)) } catch { fail("\(error)", status: 1) }
  do { try player.setCurrentPlaybackRate(rate) } catch { fail("--rate: \(error)") }
  if let seek = arguments.double("seek") { player.currentPlaybackTime = seek }
  signal(SIGINT) { _ in interrupted = 1 }
  signal(SIGTERM) { _ in interrupted = 1 }
  say("playing \(path) on \"\(engine.initialDevice.name)\" (\(engine.initialDevice.kind.rawValue))")
  let failed = Flag()
  player.addObserver { event in
    if case .itemFailed = event { failed.set() }
  }
  player.play()
  var tick = 0
  while interrupted == 0 {
    usleep(100_000)
    tick += 1
    let state = player.playbackState
    if tick % 10 == 0 {
      let total = player.playbackDuration.map { String(format: " / %.1f s", $0) } ?? ""
      say(String(format: "%.1f s", player.currentPlaybackTime) + total + " [\(state.rawValue)]")
    }
    if state == .stopped && tick > 5 { break }
  }
  if interrupted != 0 {
    player.stop()
    usleep(100_000)  // let the fade-out finish: Ctrl-C must not click
    say("stopped")
  }
  player.waitForNotifications()
  engine.shutdown()
  return failed.isSet ? 1 : 0
}

var commandLine = CommandLine.arguments.dropFirst()
guard let command = commandLine.popFirst() else { fail(usage) }
switch command {
case "info": exit(info(Array(commandLine)))
case "render":
  exit(render(Arguments(commandLine, known: ["out", "seek", "rate", "duration", "sample-rate", "format"])))
case "play": exit(play(Arguments(commandLine, known: ["seek", "rate", "device"])))
case "devices":
  for name in OutputDevice.playbackDeviceNames() { print(name) }
case "help", "--help", "-h": print(usage)
default: fail("unknown command \"\(command)\"\n\(usage)")
}
