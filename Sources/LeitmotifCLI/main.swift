// leitmotif: the command-line tool. `leitmotif help` lists the commands.
import Foundation
import Leitmotif

#if canImport(Glibc)
  import Glibc
#endif

let usage = """
  usage:
    leitmotif info [--analyze] FILE...
        one JSON object per line: path, format, sampleRate, channels, frames, duration, tags; with
        --analyze also loudness (LUFS), loudnessRange (LU), truePeak (dBTP), detectedBeatsPerMinute,
        firstBeatSeconds, beatConfidence, energy (0...1), soundStartSeconds and soundEndSeconds
        (where the sound begins and ends: the first and last sample above -60 dBFS), from a full
        decode
    leitmotif render --out OUT.wav [OPTIONS] [--sample-rate HZ] [--format f32|s16] FILE...
        renders offline through the OpenAL loopback device, faster than real time
    leitmotif play [OPTIONS] [--device NAME] [--latency standard|low] FILE...
        plays in real time (headless if there is no sound card); Ctrl-C stops; --latency low
        keeps 10.7 ms queued ahead of OpenAL instead of 32 (AudioEngine's OutputLatency)
    leitmotif devices
        lists the playback devices OpenAL can open
    leitmotif cues check FILE
        checks a cue file (JSON5): every error and warning as FILE:LINE:COLUMN; exit status 2 if invalid
    leitmotif cues simulate CUES --events SCRIPT (--out OUT.wav | --live) [--timeline FILE] ...
        plays a scripted level against a cue file: rendered offline, or live on the sound device
    leitmotif cues analyze [--check] FOLDER
        measures the bundled music in FOLDER once into FOLDER/.leitmotif/analysis/, to ship with it

  the player's music library (each for one application id: --app ID, default leitmotif; without
  the player's consent: an error naming the state, exit status 3):
    leitmotif access list | allow APP | deny APP | reset APP
        who may read the music library (the analogue of Settings, Privacy)
    leitmotif scan [--library DIR]... [--app ID] [--json] [--wait SECONDS]
        indexes the library folders; prints what was added, updated, removed and failed
    leitmotif query [--group KIND] [--where 'artist=Name'] [--where 'bpm>=120'] [--json] ...
        lists items (or collections) matching the predicates: = equal, ~ contains, < <= > >=
    leitmotif pick [--multiple] [--prompt TEXT] [--json] [--library DIR]... [--app ID]
        a full-screen terminal picker; prints the picked items (Esc: exit status 1)
  each of these takes --help.

  OPTIONS (render and play):
    --seek SECONDS       start this far into the file (in a queue: into the first item played)
    --rate R             speed in [1/256, 4], speed and pitch together (in a queue: every item)
    --tempo T            tempo in 0.5...2: speed that keeps the pitch (SoundTouch); multiplies
                         with --rate (the FILEs play as a queue)
    --duration SECONDS   stop after this much output (default: when the file or queue ends)
  queue options (with any of these, or more than one FILE, the FILEs play as a queue):
    --crossfade SECONDS  overlap between items (at most half of either item); 0 is gapless
                         (default: 3)
    --curve CURVE        linear, equal-power (default), s-curve or exponential
    --repeat MODE        none (default), one (the playing item) or all (the queue)
    --shuffle MODE       off (default), songs, or albums (by album tag, each album in order)
    --seed N             the shuffle's seed (default: a random one, printed, so it can be replayed)
    --loops N|forever    items with loop points (LOOPSTART/LOOPLENGTH tags) jump back from the
                         loop's end to its start N times, or forever; without --loops they play
                         straight through
  render never ends with --repeat one, --repeat all or --loops forever: those need --duration.
  A queue prints a line per item that starts playing, per transition and per failure.
  exit status (render, play): 0 done, 1 a file could not be played, 2 a usage error
  """

/// Prints to standard error and exits: status 2 (a usage error) unless told otherwise.
func fail(_ message: String, status: Int32 = 2) -> Never {
  FileHandle.standardError.write(Data("leitmotif: \(message)\n".utf8))
  exit(status)
}

func printDiagnostic(_ diagnostic: Diagnostic) {
  // Line by line: a diagnostic may list several problems, one a line (a refused cue file).
  let lines = diagnostic.description.split(separator: "\n", omittingEmptySubsequences: false)
  let text = lines.map { TerminalText.safe(String($0)) }.joined(separator: "\n")
  FileHandle.standardError.write(Data("leitmotif: \(text)\n".utf8))
}

/// A queue's failures are printed as its events (with the item's place); the player's matching
/// error diagnostics would say the same again.
func printQueueDiagnostic(_ diagnostic: Diagnostic) {
  if diagnostic.severity == .error, diagnostic.error is DecodeError { return }
  printDiagnostic(diagnostic)
}

/// Unbuffered, so lines show at once even through a pipe, in the order they are written from
/// any thread.
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

/// The options each command takes, and the ones that make it play a queue.
enum OptionNames {
  static let playback: Set = ["seek", "rate", "duration"]
  /// `tempo` plays through a queue player: its voices have the time-stretcher.
  static let queue: Set = ["crossfade", "curve", "repeat", "shuffle", "seed", "loops", "tempo"]
  static let render = playback.union(queue).union(["out", "sample-rate", "format"])
  static let play = playback.union(queue).union(["device", "latency"])
}

/// A file named as a path or as the `file://` URL `leitmotif query` prints for a song
/// (`assetURL`): the URL's path, its %-escapes decoded to the name's bytes (UTF-8 or not).
/// Anything else is taken as it is.
func localPath(_ argument: String) -> String {
  guard argument.lowercased().hasPrefix("file://") else { return argument }
  return FileSystemPath.path(fileURL: argument) ?? argument
}

/// Options of the form `--name value`; everything else is a positional argument.
struct Arguments {
  var options: [String: String] = [:]
  var positional: [String] = []

  init(_ arguments: ArraySlice<String>, command: String, known: Set<String>) {
    var iterator = arguments.makeIterator()
    while let argument = iterator.next() {
      if argument.hasPrefix("--") {
        let name = String(argument.dropFirst(2))
        guard known.contains(name) else {
          let other = command == "render" ? "play" : "render"
          let otherKnown = command == "render" ? OptionNames.play : OptionNames.render
          if otherKnown.contains(name) { fail("\(command) does not take --\(name) (a \(other) option)") }
          fail("unknown option --\(name)\n\(usage)")
        }
        guard let value = iterator.next() else { fail("--\(name) needs a value") }
        options[name] = value
      } else {
        positional.append(localPath(argument))
      }
    }
  }

  /// Whether the files play as a queue: several of them, or any queue option.
  var isQueue: Bool { positional.count > 1 || !OptionNames.queue.isDisjoint(with: options.keys) }

  /// A number `isValid` accepts; anything else is a usage error saying what was `expected`.
  func double(_ name: String, expected: String, where isValid: (Double) -> Bool = { _ in true }) -> Double? {
    guard let text = options[name] else { return nil }
    guard let value = Double(text), value.isFinite, isValid(value) else {
      fail("--\(name): expected \(expected), got \"\(text)\"")
    }
    return value
  }

  /// One of an enumeration's raw values; anything else is a usage error that lists them.
  func choice<Value: RawRepresentable & CaseIterable>(_ name: String, of type: Value.Type) -> Value?
  where Value.RawValue == String {
    guard let text = options[name] else { return nil }
    guard let value = Value(rawValue: text) else {
      let names = Value.allCases.map(\.rawValue)
      fail("--\(name): expected \(names.dropLast().joined(separator: ", ")) or \(names.last!), got \"\(text)\"")
    }
    return value
  }

  var seekSeconds: Double? {
    double("seek", expected: "a time from 0 to 86400 s (one day)") { $0 >= 0 && $0 <= FrameMath.maximumSeconds }
  }
  var rate: Float {
    Float(double("rate", expected: "a speed in [1/256, 4]") { Voice.rateRange.contains(Float($0)) } ?? 1)
  }
  var tempo: Float {
    Float(double("tempo", expected: "a tempo in 0.5...2 (speed without pitch)") { $0 >= 0.5 && $0 <= 2 } ?? 1)
  }
  var durationSeconds: Double? {
    double("duration", expected: "a duration of more than 0 s, at most 86400 s (one day)") {
      $0 > 0 && $0 <= FrameMath.maximumSeconds
    }
  }

  /// `--sample-rate` and `--format`, for render.
  var sampleRate: Int? {
    guard let text = options["sample-rate"] else { return nil }
    guard let hz = Int(text), (8_000...192_000).contains(hz) else {
      fail("--sample-rate: expected 8000...192000 Hz, got \"\(text)\"")
    }
    return hz
  }
  var sampleFormat: WAVSampleFormat { choice("format", of: WAVSampleFormat.self) ?? .float32 }

  /// The queue options, checked. `command` is "render" or "play": render refuses what never ends.
  func queueOptions(command: String) -> QueueRenderer.Options {
    var options = QueueRenderer.Options()
    let crossfade = double("crossfade", expected: "a duration from 0 to 86400 s (0 is gapless)") {
      $0 >= 0 && $0 <= FrameMath.maximumSeconds
    }
    let curve = choice("curve", of: FadeCurve.self)
    if crossfade != nil || curve != nil {
      do {
        options.transition = try Transition(
          duration: crossfade ?? Transition.defaultCrossfade.duration, curve: curve ?? .equalPower)
      } catch { fail("--crossfade: \(error)") }
    }
    options.repeatMode = choice("repeat", of: RepeatMode.self) ?? .none
    options.shuffleMode = choice("shuffle", of: ShuffleMode.self) ?? .off
    if let text = self.options["seed"] {
      guard let seed = UInt64(text) else {
        fail("--seed: expected a whole number from 0 to \(UInt64.max), got \"\(text)\"")
      }
      options.seed = seed
    } else if options.shuffleMode != .off {
      // Short enough to type back in.
      options.seed = UInt64.random(in: 0..<1_000_000)
      say(
        "shuffle \(options.shuffleMode.rawValue) with seed \(options.seed) (--seed \(options.seed) repeats this order)")
    }
    if let text = self.options["loops"] {
      if text == "forever" {
        options.loopRepeat = .untilReleased
      } else if let count = Int(text), count >= 0 {
        options.loopRepeat = .times(count)
      } else {
        fail("--loops: expected a whole number of 0 or more, or \"forever\", got \"\(text)\"")
      }
    }
    options.durationSeconds = durationSeconds
    options.startSeconds = seekSeconds ?? 0
    options.rate = rate
    options.tempo = tempo
    if command == "render" && options.durationSeconds == nil {
      if options.loopRepeat == .untilReleased {
        fail("--loops forever never ends: render needs --duration SECONDS with it")
      }
      if options.repeatMode != .none {
        fail("--repeat \(options.repeatMode.rawValue) never ends: render needs --duration SECONDS with it")
      }
    }
    return options
  }
}

/// Prints a queue's events, one line each: the item that starts playing, transitions, failures.
///
/// When the queue runs out the player moves back to its first item (stopped) and says so with a
/// now-playing change; that change is held until the next event shows whether playback stopped,
/// so it is not printed as if the first item played again.
final class QueueEventPrinter: @unchecked Sendable {
  private let lock = NSLock()
  private let itemCount: Int
  private var held: String?

  init(itemCount: Int) { self.itemCount = itemCount }

  func handle(_ event: QueuePlayerEvent) {
    lock.withLock {
      if case .playbackStateChanged(.stopped) = event, held != nil {
        held = nil
        say("■ end of queue")
        return
      }
      if let line = held {
        held = nil
        say(line)
      }
      switch event {
      case .nowPlayingItemChanged(let item?, let index, let reason):
        let place = index.map { "\($0 + 1)/\(itemCount)" } ?? "?/\(itemCount)"
        let artist = item.artist.map { " — \($0)" } ?? ""
        let line = "▶ \(place) \(Self.name(item))\(artist) (\(Self.words(reason)))"
        let mayBeTheEnd = (index ?? 0) == 0 && [.naturalEnd, .failure, .skipForward].contains(reason)
        if mayBeTheEnd { held = line } else { say(line) }
      case .transitionStarted(let from, let to, let transition):
        say("⇄ \(transition): \(from.map(Self.name) ?? "(silence)") → \(Self.name(to))")
      case .itemFailed(_, let error):
        say("✗ \(error)")
      default:
        break
      }
    }
  }

  /// Prints a line still held (call after the player's notifications are all delivered).
  func finish() {
    lock.withLock {
      if let line = held { say(line) }
      held = nil
    }
  }

  static func name(_ item: MediaItem) -> String { item.displayName }

  static func words(_ reason: NowPlayingChangeReason) -> String {
    switch reason {
    case .naturalEnd: return "next"
    case .skipForward: return "skipped forward"
    case .skipBack: return "skipped back"
    case .queueChange: return "start"
    case .failure: return "after a failure"
    }
  }
}

func jsonString(_ value: String) -> String {
  let data = try! JSONSerialization.data(withJSONObject: [value], options: [.withoutEscapingSlashes])
  let text = String(decoding: data, as: UTF8.self)
  return String(text.dropFirst().dropLast())
}

/// The analysis's figures as JSON members, in the order `info --analyze` and `query --json` print
/// them; an unknown figure is `null` (`unknownAsNull`) or left out.
func analysisFields(_ analysis: AudioAnalysis, unknownAsNull: Bool) -> [(String, String)] {
  let figures: [(String, Double?, Int)] = [
    ("loudness", analysis.loudness, 2), ("loudnessRange", analysis.loudnessRange, 2),
    ("truePeak", analysis.truePeak, 2), ("detectedBeatsPerMinute", analysis.beatsPerMinute, 2),
    ("firstBeatSeconds", analysis.firstBeatSeconds, 3), ("beatConfidence", analysis.beatConfidence, 2),
    ("energy", analysis.energy, 2), ("soundStartSeconds", analysis.soundStartSeconds, 3),
    ("soundEndSeconds", analysis.soundEndSeconds, 3),
  ]
  return figures.compactMap { name, value, digits in
    guard let value else { return unknownAsNull ? (name, "null") : nil }
    return (name, String(format: "%.\(digits)f", value))
  }
}

func info(_ paths: [String], analyze: Bool) -> Int32 {
  guard !paths.isEmpty else { fail("info needs at least one FILE") }
  var status: Int32 = 0
  for path in paths {
    do {
      let decoder = try AudioFile.openDecoder(path: path)
      let tags = decoder.tags
      var fields: [(String, String)] = [
        ("path", jsonString(FileSystemPath.displayed(path))),
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
      if analyze { fields += analysisFields(try AudioAnalysis.measure(decoder), unknownAsNull: true) }
      print("{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}")
      for warning in decoder.warnings {
        FileHandle.standardError.write(Data("leitmotif: warning: \(FileSystemPath.displayed(path)): \(warning)\n".utf8))
      }
    } catch {
      FileHandle.standardError.write(Data("leitmotif: \(error)\n".utf8))
      status = 1
    }
  }
  return status
}

/// Items for `paths`, with their tags where the file opens (a file that does not stays in the
/// queue and fails when its turn comes, as the player reports).
func loadItems(_ paths: [String]) -> [MediaItem] {
  paths.map { path in (try? MediaItem.load(path: path)) ?? MediaItem(path: path) }
}

func describe(framesWritten: Int64, sampleRate: Int, path: String) -> String {
  let seconds = Double(framesWritten) / Double(sampleRate)
  return
    "wrote \(FileSystemPath.displayed(path)): \(framesWritten) frames, \(String(format: "%.3f", seconds)) s at \(sampleRate) Hz"
}

func render(_ arguments: Arguments) -> Int32 {
  guard let out = arguments.options["out"] else { fail("render needs --out OUT.wav") }
  guard !arguments.positional.isEmpty else { fail("render needs at least one FILE") }
  if arguments.isQueue { return renderQueue(arguments, to: out) }
  var options = OfflineRenderer.Options()
  options.seekSeconds = arguments.seekSeconds ?? 0
  options.rate = arguments.rate
  options.durationSeconds = arguments.durationSeconds
  options.sampleRate = arguments.sampleRate
  options.sampleFormat = arguments.sampleFormat
  do {
    let result = try OfflineRenderer.render(
      path: arguments.positional[0], to: out, options: options, diagnostics: printDiagnostic)
    say(describe(framesWritten: result.framesWritten, sampleRate: result.sampleRate, path: out))
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

func renderQueue(_ arguments: Arguments, to out: String) -> Int32 {
  var options = arguments.queueOptions(command: "render")
  options.sampleRate = arguments.sampleRate
  options.sampleFormat = arguments.sampleFormat
  let printer = QueueEventPrinter(itemCount: arguments.positional.count)
  do {
    let result = try QueueRenderer.render(
      paths: arguments.positional, to: out, options: options, diagnostics: printQueueDiagnostic,
      onEvent: printer.handle)
    printer.finish()
    say(describe(framesWritten: result.framesWritten, sampleRate: result.sampleRate, path: out))
    return result.failures.isEmpty ? 0 : 1
  } catch {
    printer.finish()
    if case .invalidOptions = error { fail("\(error)") }
    fail("\(error)", status: 1)
  }
}

final class Flag: @unchecked Sendable {
  private let lock = NSLock()
  private var value = false
  func set() { lock.withLock { value = true } }
  var isSet: Bool { lock.withLock { value } }
}

nonisolated(unsafe) var interrupted: sig_atomic_t = 0

/// Ctrl-C, SIGTERM and SIGHUP (the terminal closed) only raise a flag: the play loops see it and
/// stop with a fade, and the desktop's music app paused for the music is resumed.
func stopOnSignals() {
  signal(SIGINT) { _ in interrupted = 1 }
  signal(SIGTERM) { _ in interrupted = 1 }
  signal(SIGHUP) { _ in interrupted = 1 }
}

func openEngine(_ arguments: Arguments, diagnostics: @escaping DiagnosticsHandler) -> AudioEngine {
  do {
    let output: OutputChoice = arguments.options["device"].map { .namedDevice($0) } ?? .defaultDevice
    let latency: OutputLatency
    switch arguments.options["latency"] ?? "standard" {
    case "standard": latency = .standard
    case "low": latency = .low
    case let other: fail("--latency \(other): expected standard or low", status: 2)
    }
    return try AudioEngine(output: output, latency: latency, diagnostics: diagnostics)
  } catch {
    fail("\(error)", status: 1)
  }
}

func play(_ arguments: Arguments) -> Int32 {
  guard !arguments.positional.isEmpty else { fail("play needs at least one FILE") }
  if arguments.isQueue { return playQueue(arguments) }
  let path = arguments.positional[0]
  let rate = arguments.rate
  let seek = arguments.seekSeconds
  let duration = arguments.durationSeconds
  let engine = openEngine(arguments, diagnostics: printDiagnostic)
  let player: Player
  // With its tags, for the desktop's "now playing".
  do { player = try Player(engine: engine, item: loadItems([path])[0]) } catch { fail("\(error)", status: 1) }
  do { try player.setCurrentPlaybackRate(rate) } catch { fail("--rate: \(error)") }
  if let seek { player.currentPlaybackTime = seek }
  stopOnSignals()
  say(
    "playing \(FileSystemPath.displayed(path)) on \"\(engine.initialDevice.name)\" (\(engine.initialDevice.kind.rawValue))"
  )
  let failed = Flag()
  player.addObserver { event in
    if case .itemFailed = event { failed.set() }
  }
  player.play()
  let desktop = showOnDesktop(player)
  defer { desktop?.shutdown() }
  let started = Date()
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
    if let duration, Date().timeIntervalSince(started) >= duration {
      stopWithFade(player.stop)
      say("stopped after \(duration) s")
      break
    }
  }
  if interrupted != 0 {
    stopWithFade(player.stop)
    say("stopped")
  }
  player.waitForNotifications()
  engine.shutdown()
  return failed.isSet ? 1 : 0
}

/// On the desktop's media controls (MPRIS: GNOME's and KDE's "now playing", playerctl, the media
/// keys) while it plays, where there is a session bus; one line says which.
func showOnDesktop(_ player: any MediaPlayback) -> NowPlayingService? {
  do {
    let service = try NowPlayingService(player: player, configuration: .init(identity: "Leitmotif"))
    say("on the desktop's media controls as \(service.busName)")
    return service
  } catch {
    say("not on the desktop's media controls: \(error)")
    return nil
  }
}

/// Stops, then lets the 10 ms fade-out play before the engine goes: stopping must not click.
func stopWithFade(_ stop: () -> Void) {
  stop()
  usleep(100_000)
}

func playQueue(_ arguments: Arguments) -> Int32 {
  let paths = arguments.positional
  let options = arguments.queueOptions(command: "play")
  let engine = openEngine(arguments, diagnostics: printQueueDiagnostic)
  let player = QueuePlayer(engine: engine)
  let printer = QueueEventPrinter(itemCount: paths.count)
  let failed = Flag()
  player.addObserver { event in
    if case .itemFailed = event { failed.set() }
    printer.handle(event)
  }
  do { try options.configure(player, items: loadItems(paths)) } catch { fail("\(error)", status: 1) }
  stopOnSignals()
  let count = paths.count == 1 ? "1 item" : "\(paths.count) items"
  say("playing \(count) on \"\(engine.initialDevice.name)\" (\(engine.initialDevice.kind.rawValue))")
  // Setting the rate starts playback (the rate was checked when the options were read).
  do { try player.setCurrentPlaybackRate(options.rate) } catch { fail("--rate: \(error)") }
  let desktop = showOnDesktop(player)
  defer { desktop?.shutdown() }
  let started = Date()
  var stoppedBy: String?
  while player.playbackState != .stopped {
    usleep(100_000)
    if interrupted != 0 {
      stoppedBy = "stopped"
    } else if let duration = options.durationSeconds, Date().timeIntervalSince(started) >= duration {
      stoppedBy = "stopped after \(duration) s"
    }
    if stoppedBy != nil {
      stopWithFade(player.stop)
      break
    }
  }
  player.waitForNotifications()
  printer.finish()
  if let stoppedBy { say(stoppedBy) }
  engine.shutdown()
  return failed.isSet ? 1 : 0
}

// The arguments' own bytes (`FileSystemPath`): `CommandLine.arguments` repairs bytes that are
// not UTF-8 into U+FFFD, and a file named so could then not be opened.
/// The part of `usage` about `command`: its lines, and for `render` and `play` the options they
/// share (`leitmotif info --help` printed the whole tool's usage, every command's).
func commandUsage(_ command: String) -> String {
  let lines = usage.split(separator: "\n", omittingEmptySubsequences: false)
  var kept = ["usage:"]
  var index = 0
  while index < lines.count {
    if lines[index].hasPrefix("  leitmotif \(command)") {
      kept.append(String(lines[index]))
      index += 1
      while index < lines.count, lines[index].hasPrefix("      ") {
        kept.append(String(lines[index]))
        index += 1
      }
    } else {
      index += 1
    }
  }
  if command == "render" || command == "play",
    let options = lines.firstIndex(where: { $0.hasPrefix("OPTIONS (render and play)") })
  {
    kept.append("")
    kept += lines[options...].map(String.init)
  }
  return kept.joined(separator: "\n")
}

var commandLine = (0..<Int(CommandLine.argc)).map { index in
  CommandLine.unsafeArgv[index].map { FileSystemPath.string(cString: $0) } ?? ""
}.dropFirst()
guard let command = commandLine.popFirst() else { fail(usage) }
// `leitmotif render --help` asks for the usage, as `leitmotif help` does (it was an unknown
// option, and for `info` a file named --help).
if ["info", "render", "play", "devices"].contains(command),
  commandLine.contains(where: { $0 == "--help" || $0 == "-h" })
{
  print(commandUsage(command))
  exit(0)
}
switch command {
case "info":
  let analyze = commandLine.contains("--analyze")
  exit(info(commandLine.filter { $0 != "--analyze" }.map(localPath), analyze: analyze))
case "render": exit(render(Arguments(commandLine, command: "render", known: OptionNames.render)))
case "play": exit(play(Arguments(commandLine, command: "play", known: OptionNames.play)))
case "devices":
  for name in OutputDevice.playbackDeviceNames() { print(name) }
case "access": exit(AccessCommand.run(Array(commandLine)))
case "scan": exit(ScanCommand.run(Array(commandLine)))
case "query": exit(QueryCommand.run(Array(commandLine)))
case "pick": exit(PickCommand.run(Array(commandLine)))
case "cues": exit(CuesCommand.run(Array(commandLine)))
case "help", "--help", "-h": print(usage)
default: fail("unknown command \"\(command)\"\n\(usage)")
}
