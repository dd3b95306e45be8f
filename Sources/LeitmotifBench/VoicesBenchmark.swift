import Foundation
import Leitmotif
import LeitmotifFixtures

#if canImport(Glibc)
  import Glibc
#endif

/// `leitmotif-bench voices`: live CPU per audio second for 1, 2, 4, 8 and 16 streamed voices,
/// side by side with the engines game developers compare Leitmotif with, each in a process of
/// its own, in one run, interleaved round by round:
/// - on OpenAL Soft's null device (real time, no sound card): Leitmotif (`AudioEngine(output:
///   .defaultDevice)`, one `Player` per voice) against SFML 2.5's sf::Music (one OpenAL source
///   streaming each voice); with no voice: Leitmotif's idle engine against a bare OpenAL device
///   and context;
/// - skipping the OS output: Leitmotif's headless device against SDL_mixer 2 with SDL's dummy
///   driver (both mix in their own code);
/// - and what the raw decoder (libvorbisfile's `ov_read_float`) spends per second of the same
///   audio, against what each voice Leitmotif adds costs.
///
/// The peers are built from Peers/ by the bench (c++/cc and pkg-config) when libsfml-dev and
/// libsdl2-mixer-dev are installed; a peer that is missing is left out, and the bench says so.
/// Every file is 48 kHz stereo Ogg Vorbis and every device runs at 48 kHz (OpenAL through an
/// ALSOFT_CONF that says `frequency=48000`), so nobody resamples; each voice plays its own file
/// of four. CPU is getrusage(RUSAGE_SELF), user + kernel, of the child over the measured window,
/// after a warm-up (opening the files and the device is left out).
struct VoicesBenchmark {
  struct Options {
    var seconds = 10.0
    var counts = [1, 2, 4, 8, 16]
    var rounds = 1
    var useCache = true

    init() {}

    init(parsing arguments: [String]) throws {
      var rest = arguments[...]
      while let argument = rest.popFirst() {
        switch argument {
        case "--seconds":
          guard let text = rest.popFirst(), let number = Double(text), number > 0, number.isFinite else {
            throw UsageError(description: "--seconds needs a positive number")
          }
          seconds = number
        case "--rounds":
          guard let text = rest.popFirst(), let number = Int(text), number > 0 else {
            throw UsageError(description: "--rounds needs a positive whole number")
          }
          rounds = number
        case "--counts":
          guard let text = rest.popFirst() else { throw UsageError(description: "--counts needs a list like 1,2,4") }
          let parsed = text.split(separator: ",").compactMap { Int($0) }
          guard !parsed.isEmpty, parsed.count == text.split(separator: ",").count,
            parsed.allSatisfy({ (1...16).contains($0) })
          else { throw UsageError(description: "--counts: expected voice counts from 1 to 16, like 1,2,4") }
          counts = parsed
        case "--no-cache": useCache = false
        default: throw UsageError(description: "unknown option \"\(argument)\"")
        }
      }
    }
  }

  static let fileMinutes = 0.75
  static let fileCount = 4
  static let warmUpSeconds = 1.0
  /// The idle case warms up longer: an engine pauses OpenAL's mixer after two idle seconds
  /// (`StreamingLoop.idleNanosecondsBeforeDevicePause`), and a game's idle engine is idle for
  /// longer than that; the window then shows what idling costs, not the last of the start-up.
  static let idleWarmUpSeconds = 3.0
  /// Goal: each voice added costs at most this many times what the raw decoder spends on its audio.
  static let goalPerVoiceOverDecoder = 1.2

  enum Contender: String, CaseIterable {
    case leitmotifOpenAL = "Leitmotif (OpenAL null)"
    case sfml = "SFML sf::Music (OpenAL null)"
    case leitmotifHeadless = "Leitmotif (headless)"
    /// As SDL_mixer plays: the first voice streamed, the others preloaded (`AudioEngine.preload`)
    /// as SDL's chunks are decoded whole when they load.
    case leitmotifPreloaded = "Leitmotif (headless, voices 2 to N preloaded)"
    case sdlMixer = "SDL_mixer 2 (dummy driver)"
  }

  let options: Options

  func run() throws {
    let files = try BenchFiles(useCache: options.useCache)
    progress("files in \(files.directory)")
    let paths = try (0..<Self.fileCount).map {
      try files.vorbis48k(minutes: Self.fileMinutes, quality: DecodeBenchmark.vorbisQuality, seed: UInt64(100 + $0))
    }
    let work = try TemporaryDirectory(prefix: "leitmotif-bench-peers")
    let configuration = work.path + "/openal-48k.conf"
    try "[general]\nfrequency=48000\n".write(toFile: configuration, atomically: true, encoding: .utf8)
    var notes: [String] = []
    let sfml = Peer.build(
      source: "sfml-music.cpp", compiler: "c++", packages: ["sfml-audio", "openal"], into: work.path, notes: &notes)
    let sdl = Peer.build(
      source: "sdl-mixer.c", compiler: "cc", packages: ["SDL2_mixer"], into: work.path, notes: &notes)

    // The raw decoder's cost per second of audio: each file decoded whole, CPU of this thread;
    // once a round, between the contenders, and the median taken like theirs (measured once
    // before the rounds, it came out 0.0011 in one run and 0.0016 in another on this VM, which
    // moved the per-voice ratio from 1.3 to 2.0 with the same engine).
    func rawDecoderPerSecond() throws -> Double {
      var decodeCPU = 0.0
      var decodedSeconds = 0.0
      for path in paths {
        let before = CPUUsage.now()
        let frames = try RawDecoders.vorbis(path: path)
        decodeCPU += CPUUsage.now().since(before).threadSeconds
        decodedSeconds += Double(frames) / 48_000
      }
      return decodeCPU / decodedSeconds
    }
    var decoderRounds: [Double] = []
    // The same decoder paced as a stream's decode thread runs it live: the decode-ahead ring's
    // refill (five blocks of 4,096 frames, DecodeAheadStream's blockCount minus lowWaterBlocks),
    // then a sleep until those frames have played. Decoding in bursts between sleeps costs more
    // per frame than decoding a file straight through (caches and a core that idles in between):
    // 1.26 times, measured in C on this VM. A voice cannot cost less than its decoder paced, so
    // the per-voice cost is shown against this figure too (the goal stays judged on the first).
    func pacedDecoderPerSecond() throws -> Double {
      let paced = try RawDecoders.vorbisPaced(
        path: paths[0], seconds: options.seconds, burstFrames: Self.pacedBurstFrames, sampleRate: 48_000)
      return paced.cpuSeconds / (Double(paced.frames) / 48_000)
    }
    var pacedRounds: [Double] = []

    var results: [Contender: [Int: [Double]]] = [:]
    let counts = [0] + options.counts
    for round in 1...options.rounds {
      progress("round \(round): the raw decoder")
      decoderRounds.append(try rawDecoderPerSecond())
      progress("round \(round): the raw decoder paced as a stream, \(options.seconds) s")
      pacedRounds.append(try pacedDecoderPerSecond())
      for count in counts {
        for contender in Contender.allCases {
          let command: [String]
          var environment = ProcessInfo.processInfo.environment
          let warmUp = count == 0 ? Self.idleWarmUpSeconds : Self.warmUpSeconds
          let timing = [String(count), String(options.seconds), String(warmUp)] + paths
          switch contender {
          case .leitmotifOpenAL, .sfml:
            environment["ALSOFT_DRIVERS"] = "null"
            environment["ALSOFT_CONF"] = configuration
            if contender == .sfml {
              guard let sfml else { continue }
              command = [sfml] + timing
            } else {
              command = [Self.ownExecutable, "voices-child", "openal"] + timing
            }
          case .leitmotifHeadless:
            command = [Self.ownExecutable, "voices-child", "headless"] + timing
          case .leitmotifPreloaded:
            command = [Self.ownExecutable, "voices-child", "headless-preloaded"] + timing
          case .sdlMixer:
            guard let sdl else { continue }
            environment["SDL_AUDIODRIVER"] = "dummy"
            command = [sdl] + timing
          }
          progress("round \(round): \(contender.rawValue), \(count) voices, \(options.seconds) s")
          let perSecond = try Self.measure(command, environment: environment)
          results[contender, default: [:]][count, default: []].append(perSecond)
        }
      }
    }
    let sortedDecoder = decoderRounds.sorted()
    let sortedPaced = pacedRounds.sorted()
    print(
      report(
        results, counts: counts, decoderPerSecond: sortedDecoder[sortedDecoder.count / 2],
        decoderRange: (sortedDecoder.first!, sortedDecoder.last!), pacedPerSecond: sortedPaced[sortedPaced.count / 2],
        notes: notes))
  }

  /// Frames a paced decoder decodes per wake (see `pacedDecoderPerSecond`).
  static let pacedBurstFrames = 5 * 4096

  private func report(
    _ results: [Contender: [Int: [Double]]], counts: [Int], decoderPerSecond: Double,
    decoderRange: (Double, Double), pacedPerSecond: Double, notes: [String]
  ) -> String {
    func median(_ contender: Contender, _ count: Int) -> Double? {
      guard let values = results[contender]?[count], !values.isEmpty else { return nil }
      let sorted = values.sorted()
      return sorted[sorted.count / 2]
    }
    func figure(_ value: Double?) -> String { value.map { String(format: "%.4f", $0) } ?? "n/a" }
    func ratio(_ a: Double?, _ b: Double?) -> String {
      guard let a, let b, b > 0 else { return "" }
      return String(format: "%.2f", a / b)
    }
    var table = TextTable(
      [
        "voices", "Leitmotif OpenAL", "SFML", "ratio", "Leitmotif headless", "SDL_mixer", "ratio",
        "headless, 2..N preloaded", "ratio", "per added voice / decoder", "(headless)", "/ paced decoder", "goals",
      ],
      rightAligned: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
    for count in counts {
      let ours = median(.leitmotifOpenAL, count)
      let sfml = median(.sfml, count)
      let headless = median(.leitmotifHeadless, count)
      let sdl = median(.sdlMixer, count)
      let preloaded = median(.leitmotifPreloaded, count)
      var perVoice = ""
      var perHeadlessVoice = ""
      var perPacedVoice = ""
      var verdicts: [String] = []
      // The first voice also wakes the whole mixer (the streaming thread's pumps, the bus,
      // OpenAL's own mixer, paused while idle): that is the engine's cost, shown on its own. A
      // voice added to others costs its decoding and its share of the mix, measured against the
      // first voice.
      if count == 1, let ours, let idle = median(.leitmotifOpenAL, 0) {
        perVoice = String(format: "(first: %.2f)", (ours - idle) / decoderPerSecond)
      } else if count > 1, let ours, let first = median(.leitmotifOpenAL, 1) {
        let added = (ours - first) / Double(count - 1) / decoderPerSecond
        perVoice = String(format: "%.2f", added)
        perPacedVoice = String(format: "%.2f", added * decoderPerSecond / pacedPerSecond)
        verdicts.append(added <= Self.goalPerVoiceOverDecoder ? "per voice PASS" : "per voice ABOVE")
        // The same on the headless device, for comparison (no OpenAL mixer thread beside it).
        if let headless, let first = median(.leitmotifHeadless, 1) {
          perHeadlessVoice = String(format: "%.2f", (headless - first) / Double(count - 1) / decoderPerSecond)
        }
      }
      if let ours, let sfml { verdicts.append(ours < sfml ? "< SFML" : "NOT < SFML") }
      if let headless, let sdl { verdicts.append(headless < sdl ? "< SDL_mixer" : "NOT < SDL_mixer") }
      if count > 1, let preloaded, let sdl {
        verdicts.append(preloaded < sdl ? "preloaded < SDL_mixer" : "preloaded NOT < SDL_mixer")
      }
      table.add([
        count == 0 ? "0 (idle)" : String(count), figure(ours), figure(sfml), ratio(ours, sfml), figure(headless),
        figure(sdl), ratio(headless, sdl), figure(preloaded), ratio(preloaded, sdl), perVoice, perHeadlessVoice,
        perPacedVoice, verdicts.joined(separator: ", "),
      ])
    }
    return [
      "Live CPU seconds per audio second (getrusage of each process over \(String(format: "%g", options.seconds)) s, after "
        + "\(String(format: "%g", Self.warmUpSeconds)) s of warm-up, \(String(format: "%g", Self.idleWarmUpSeconds)) s "
        + "for 0 voices), median of \(options.rounds) round(s), interleaved.",
      "Voices: one Player (Leitmotif), sf::Music (SFML) or Mix_Music/Mix_Chunk (SDL_mixer: one Mix_Music, the rest chunks "
        + "decoded whole at load) each, looping \(Self.fileCount) different \(String(format: "%g", Self.fileMinutes * 60)) s "
        + "Ogg Vorbis q\(String(format: "%.1f", DecodeBenchmark.vorbisQuality)) files, 48 kHz stereo; every device at 48 kHz.",
      "0 voices: an idle Leitmotif engine, a bare OpenAL device and context (in the SFML column), an idle SDL_mixer.",
      "Preloaded: Leitmotif as SDL_mixer plays, the first voice streamed and the files of the others decoded whole "
        + "before the run (AudioEngine.preload), like SDL's chunks; the headless column streams every voice.",
      String(
        format:
          "Raw decoder (ov_read_float) per audio second: %.5f (median of a run per round, %.5f to %.5f); per added "
          + "voice = (Leitmotif OpenAL(N) - Leitmotif OpenAL(1)) / (N - 1) / that (goal <= %.1f), and the same on the "
          + "headless device beside it; the first voice, (OpenAL(1) - idle) / that, includes waking the mixer.",
        decoderPerSecond, decoderRange.0, decoderRange.1, Self.goalPerVoiceOverDecoder),
      String(
        format:
          "Paced decoder (ov_read_float in bursts of %d frames, each followed by a sleep as long as it plays, as a "
          + "stream's decode thread runs): %.5f per audio second, %.2f times the raw decoder; \"/ paced decoder\" is "
          + "the OpenAL per-voice cost against it (a voice cannot cost less).",
        Self.pacedBurstFrames, pacedPerSecond, pacedPerSecond / decoderPerSecond),
      "Ratios are Leitmotif / peer: below 1 is cheaper.",
      "",
      table.render(),
    ].joined(separator: "\n") + (notes.isEmpty ? "" : "\n" + notes.map { "note: \($0)" }.joined(separator: "\n"))
  }

  /// The bench's own binary, run again as `voices-child`.
  static var ownExecutable: String {
    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
  }

  /// Runs `command` (its stderr goes to ours) and returns its exit status and what it printed.
  static func runChild(_ command: [String], environment: [String: String]) throws -> (status: Int32, output: Data) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: command[0])
    process.arguments = Array(command.dropFirst())
    process.environment = environment
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.standardError
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, data)
  }

  /// Runs a child that prints "CPU_SECONDS WALL_SECONDS" and returns CPU per wall second.
  static func measure(_ command: [String], environment: [String: String]) throws -> Double {
    let (status, data) = try runChild(command, environment: environment)
    let fields = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
    guard status == 0, fields.count == 2, fields[1] > 0 else {
      throw BenchFiles.Failure(description: "\((command[0] as NSString).lastPathComponent) failed (status \(status))")
    }
    return fields[0] / fields[1]
  }

  /// `voices-child openal|headless|headless-preloaded N SECONDS WARMUP FILE...`: N players on
  /// one engine, each playing one of the files (preloaded: the first streamed, the files of the
  /// others preloaded first); prints the CPU of the window like the peers do.
  static func child(_ arguments: [String]) throws {
    guard arguments.count >= 4, let count = Int(arguments[1]), let seconds = Double(arguments[2]),
      let warmUp = Double(arguments[3])
    else { throw UsageError(description: "voices-child openal|headless|headless-preloaded N SECONDS WARMUP FILE...") }
    let files = Array(arguments.dropFirst(4))
    let engine = try AudioEngine(output: arguments[0].hasPrefix("headless") ? .headless : .defaultDevice)
    defer { engine.shutdown() }
    var paths = (0..<count).map { files[$0 % files.count] }
    var link: String?
    if arguments[0] == "headless-preloaded" && count > 1 {
      // Four 45 s stereo files at 48 kHz take 69 MB decoded, above the default budget.
      engine.preloadBudgetBytes = 512 << 20
      for path in paths.dropFirst() { try engine.preload(path) }
      // The first voice streams, as SDL's Mix_Music does, also when a later voice plays its file
      // from memory: it reads it by another name (preloads are kept by path).
      let name = NSTemporaryDirectory() + "/leitmotif-bench-stream-\(getpid()).ogg"
      try? FileManager.default.removeItem(atPath: name)
      try FileManager.default.createSymbolicLink(atPath: name, withDestinationPath: paths[0])
      paths[0] = name
      link = name
    }
    defer { if let link { try? FileManager.default.removeItem(atPath: link) } }
    var players: [Player] = []
    for index in 0..<count {
      let player = try Player(engine: engine, item: MediaItem(path: paths[index]))
      player.play()
      players.append(player)
    }
    usleep(UInt32(warmUp * 1e6))
    let before = CPUUsage.now()
    let stopwatch = Stopwatch()
    usleep(UInt32(seconds * 1e6))
    let used = CPUUsage.now().since(before)
    FileHandle.standardOutput.write(Data(String(format: "%.6f %.6f\n", used.processSeconds, stopwatch.seconds).utf8))
    let playing = players.filter { $0.playbackState == .playing }.count
    if playing != count {
      FileHandle.standardError.write(Data("voices-child: only \(playing) of \(count) players played to the end\n".utf8))
      exit(1)
    }
  }
}

/// A peer program built from Peers/ (next to this file in the source tree).
enum Peer {
  static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Peers")

  /// The built binary, or nil (with a note why) when its packages or the compiler are missing.
  static func build(source: String, compiler: String, packages: [String], into output: String, notes: inout [String])
    -> String?
  {
    let name = (source as NSString).deletingPathExtension
    guard run(["pkg-config", "--exists"] + packages) != nil else {
      notes.append(
        "\(name) left out: pkg-config finds no \(packages.joined(separator: " ")) (apt-get install libsfml-dev libsdl2-mixer-dev)"
      )
      return nil
    }
    guard let flags = run(["pkg-config", "--cflags", "--libs"] + packages) else { return nil }
    let binary = "\(output)/\(name)"
    let arguments =
      ["-O2", directory.appendingPathComponent(source).path, "-o", binary]
      + flags.split(whereSeparator: \.isWhitespace).map(String.init)
    guard run([compiler] + arguments) != nil else {
      notes.append("\(name) left out: \(compiler) could not build \(source)")
      return nil
    }
    return binary
  }

  /// Runs a command found on PATH; its stdout, or nil when it failed.
  private static func run(_ command: [String]) -> String? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = command
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.standardError
    guard (try? process.run()) != nil else { return nil }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return process.terminationStatus == 0 ? String(decoding: data, as: UTF8.self) : nil
  }
}
