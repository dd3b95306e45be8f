import Foundation
import Leitmotif
import LeitmotifFixtures
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `leitmotif-bench latency`: how long an immediate action takes to be heard. A real-time engine
/// plays on OpenAL Soft's wave backend, which writes what it mixes, as it mixes it, into a FIFO;
/// a reader thread stamps every chunk's arrival (CLOCK_MONOTONIC). Each trial calls `play()` on
/// a prepared `Player` at a random moment and waits for the first non-zero sample: the latency is
/// its arrival less the moment of the call. Two cases: an idle engine (nothing else playing) and
/// a busy one (another voice playing at volume 0 keeps the music bus full, as in a game where
/// music plays when a one-shot starts).
///
/// A third case, where a session bus can be had (`dbus-daemon`, started here for the run): the
/// media key. A paused `QueuePlayer` is on the bus as an MPRIS player (`NowPlayingService`); each
/// trial sends MPRIS `Play` to it from a client connection of the bench's own, as a desktop's
/// media-key handler does, and the latency runs from the message's sending to the first
/// non-zero sample: the bus, the service's thread, the engine and OpenAL together.
///
/// Runs in a child process (`latency-child`): OpenAL reads its driver settings once per process.
struct LatencyBenchmark {
  struct Options {
    var trials = 20
    var useCache = true

    init() {}

    init(parsing arguments: [String]) throws {
      var rest = arguments[...]
      while let argument = rest.popFirst() {
        switch argument {
        case "--trials":
          guard let text = rest.popFirst(), let number = Int(text), number > 0 else {
            throw UsageError(description: "--trials needs a positive whole number")
          }
          trials = number
        case "--no-cache": useCache = false
        default: throw UsageError(description: "unknown option \"\(argument)\"")
        }
      }
    }
  }

  /// The wave backend's period: 1024 frames at 48 kHz. Goal: one period plus 5 ms at most.
  static let periodSeconds = 1024.0 / 48_000
  static let goalSeconds = periodSeconds + 0.005

  let options: Options

  func run() throws {
    let files = try BenchFiles(useCache: options.useCache)
    let music = try files.vorbis48k(minutes: 0.5, quality: DecodeBenchmark.vorbisQuality, seed: 100)
    // A stinger: 3 s.
    let stinger = try files.vorbis48k(minutes: 0.05, quality: DecodeBenchmark.vorbisQuality, seed: 101)
    let work = try TemporaryDirectory(prefix: "leitmotif-bench-latency")
    let bus = SessionBus.start(in: work)
    defer { bus?.stop() }
    var table = TextTable(
      ["case", "latency", "trials", "median ms", "max ms", "min ms", "goal ms", "result"],
      rightAligned: [2, 3, 4, 5, 6])
    var costs: [String] = []
    // Each `OutputLatency` in a child process of its own (OpenAL reads its settings once per
    // process), one after the other, on the same files.
    for latency in ["standard", "low"] {
      let fifo = work.file("output-\(latency).fifo")
      guard mkfifo(fifo, 0o600) == 0 else { throw BenchFiles.Failure(description: "mkfifo \(fifo): errno \(errno)") }
      let configuration = work.file("wave-\(latency).conf")
      let environment = try WaveBackend.environment(capturingTo: fifo, configuration: configuration)
      var childEnvironment = environment
      if let bus { childEnvironment["DBUS_SESSION_BUS_ADDRESS"] = bus.address }
      let (status, data) = try VoicesBenchmark.runChild(
        [VoicesBenchmark.ownExecutable, "latency-child", fifo, music, String(options.trials), stinger, latency],
        environment: childEnvironment)
      guard status == 0 else { throw BenchFiles.Failure(description: "latency-child failed (status \(status))") }
      for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
        let fields = line.split(separator: " ")
        guard fields.count >= 2 else { continue }
        if fields[0] == "cost" {
          costs.append("\(latency): " + fields.dropFirst().joined(separator: " "))
          continue
        }
        let latencies = fields.dropFirst().compactMap { Double($0) }.sorted()
        guard !latencies.isEmpty else { continue }
        let median = latencies[latencies.count / 2]
        let maximum = latencies.last!
        table.add([
          Self.caseNames[String(fields[0])] ?? String(fields[0]), latency, String(latencies.count),
          String(format: "%.1f", median * 1000), String(format: "%.1f", maximum * 1000),
          String(format: "%.1f", latencies[0] * 1000),
          fields[0] == "key" ? "-" : String(format: "%.1f", Self.goalSeconds * 1000),
          fields[0] == "key"
            ? "-"
            : maximum <= Self.goalSeconds
              ? "PASS" : (median <= Self.goalSeconds ? "median PASS, max ABOVE" : "ABOVE GOAL"),
        ])
      }
    }
    print(
      [
        "Post-to-audible latency of Player.play() on a prepared player, on OpenAL Soft's wave backend (48 kHz, 1024-frame",
        "period) writing into a FIFO: from the call to the arrival of the first non-zero sample (CLOCK_MONOTONIC).",
        "Goal: one device period (21.3 ms) plus 5 ms. The media key: MPRIS Play sent over a session bus to the",
        "paused player's NowPlayingService, from the sending (no goal of its own; shown where dbus-daemon exists).",
        "Stingers: play() on a new player over the playing music, not prepared (the file is opened and its first",
        "blocks decoded after the call), streamed and preloaded (AudioEngine.preload); a 3 s 48 kHz Vorbis file.",
        "Each latency (AudioEngine's OutputLatency) in a process of its own, one after the other.",
        "",
        table.render(),
        "",
        "What each costs: the child process's CPU (user + kernel) per second while one voice plays and nothing",
        "else happens (the wave backend and the FIFO's reader included), the bus's queue after the trials, and",
        "underruns over all trials:",
      ].joined(separator: "\n") + "\n" + costs.map { "  " + $0 }.joined(separator: "\n"))
  }

  static let caseNames = [
    "idle": "idle engine", "busy": "busy engine (a voice playing)", "key": "media key (MPRIS Play, busy engine)",
    "stinger": "stinger, busy engine (not prepared: opened at play)",
    "stinger-preloaded": "stinger, busy engine (not prepared, preloaded)",
  ]

  /// A session bus of the run's own, for the media-key case; nil where dbus-daemon is missing.
  final class SessionBus {
    let address: String
    private let process: Process

    private init(address: String, process: Process) {
      self.address = address
      self.process = process
    }

    static func start(in work: TemporaryDirectory) -> SessionBus? {
      guard FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon") else { return nil }
      let socket = work.file("bus")
      let process = Process()
      process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
      process.arguments = ["--session", "--nofork", "--address=unix:path=" + socket]
      process.standardOutput = FileHandle.nullDevice
      process.standardError = FileHandle.nullDevice  // its notice about the fd limit, as a user
      guard (try? process.run()) != nil else { return nil }
      let deadline = Date().addingTimeInterval(5)
      while !FileManager.default.fileExists(atPath: socket) && Date() < deadline { usleep(10_000) }
      return SessionBus(address: "unix:path=" + socket, process: process)
    }

    func stop() {
      process.terminate()
      process.waitUntilExit()
    }
  }

  /// The FIFO's reader: every chunk's first frame number and arrival time, and where sound is.
  final class Listener: Sendable {
    private struct Heard {
      var frames = 0
      /// The arrival time of the first non-zero sample after `watchFrom`, in ns.
      var soundAt: UInt64?
      var watching = false
    }
    private let heard = Mutex(Heard())

    /// Starts watching for sound from now on.
    func watch() { heard.withLock { $0 = Heard(frames: $0.frames, soundAt: nil, watching: true) } }

    var soundAt: UInt64? { heard.withLock { $0.soundAt } }

    /// Reads the FIFO until it closes (on its own thread).
    func read(_ path: String) {
      let descriptor = open(path, O_RDONLY)
      guard descriptor >= 0 else { return }
      defer { close(descriptor) }
      var buffer = [UInt8](repeating: 0, count: 65_536)
      var skipped = 0
      while true {
        let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        // The WAV header first (44 bytes here; the wave backend writes a plain header).
        let start = min(count, max(0, 44 - skipped))
        skipped += start
        let sound = buffer.withUnsafeBytes { raw -> Bool in
          let samples = UnsafeRawBufferPointer(rebasing: raw[start..<count])
          var index = 0
          while index + 4 <= samples.count {
            if samples.load(fromByteOffset: index, as: Float.self) != 0 { return true }
            index += 4
          }
          return false
        }
        heard.withLock { state in
          state.frames += (count - start) / 8
          if state.watching && sound && state.soundAt == nil { state.soundAt = now }
        }
      }
    }
  }

  /// `latency-child FIFO MUSIC TRIALS STINGER LATENCY`: the trials, in the process that opens the
  /// wave device, on an engine of that `OutputLatency` (standard or low). Prints one line per
  /// case (its name and each trial's latency in seconds) and a `cost` line.
  static func child(_ arguments: [String]) throws {
    guard arguments.count == 5, let trials = Int(arguments[2]), ["standard", "low"].contains(arguments[4]) else {
      throw UsageError(description: "latency-child FIFO MUSIC TRIALS STINGER standard|low")
    }
    let stingerPath = arguments[3]
    let listener = Listener()
    let reader = Thread { listener.read(arguments[0]) }
    reader.start()
    let engine = try AudioEngine(output: .defaultDevice, latency: arguments[4] == "low" ? .low : .standard)
    defer { engine.shutdown() }
    let item = MediaItem(path: arguments[1])
    var lines: [String] = []
    for busy in [false, true] {
      var background: Player?
      if busy {
        let player = try Player(engine: engine, item: item)
        player.volume = 0
        player.play()
        background = player
        usleep(500_000)
      }
      /// One trial: `item` played on a new player (prepared first, or as a stinger is: at once).
      func trial(_ item: MediaItem, prepared: Bool) throws -> Double? {
        let player = try Player(engine: engine, item: item)
        let deadline = Date().addingTimeInterval(5)
        if prepared {
          player.prepareToPlay()
          while !player.isPreparedToPlay && Date() < deadline { usleep(1000) }
        }
        // A random moment against the device's period.
        usleep(UInt32.random(in: 100_000...200_000))
        listener.watch()
        let posted = DispatchTime.now().uptimeNanoseconds
        player.play()
        while listener.soundAt == nil && Date() < deadline.addingTimeInterval(5) { usleep(200) }
        defer {
          player.stop()
          usleep(150_000)
        }
        return listener.soundAt.map { Double($0 - posted) / 1e9 }
      }
      let latencies = try (0..<trials).compactMap { _ in try trial(item, prepared: true) }
      lines.append((busy ? "busy " : "idle ") + latencies.map { String(format: "%.6f", $0) }.joined(separator: " "))
      if busy {
        // A stinger over the music: a new player told to play at once, its file opened and its
        // first blocks decoded then; and the same file preloaded (`AudioEngine.preload`).
        let stinger = MediaItem(path: stingerPath)
        for preloaded in [false, true] {
          if preloaded { try engine.preload(stingerPath) }
          let latencies = try (0..<trials).compactMap { _ in try trial(stinger, prepared: false) }
          lines.append(
            (preloaded ? "stinger-preloaded " : "stinger ")
              + latencies.map { String(format: "%.6f", $0) }.joined(separator: " "))
        }
      }
      if let background {
        // The cost side: a few seconds of the one voice and nothing else.
        let seconds = 4.0
        let start = CPUUsage.now()
        let wall = DispatchTime.now().uptimeNanoseconds
        usleep(UInt32(seconds * 1_000_000))
        let used = CPUUsage.now().since(start).processSeconds
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - wall) / 1e9
        lines.append(
          "cost "
            + String(
              format: "CPU %.4f s per audio second with one voice, %d frames queued ahead, %d underruns",
              used / elapsed, engine.queuedAheadFrames, engine.underrunCount))
        background.stop()
      }
    }
    if let address = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"] {
      let latencies = try mediaKey(engine: engine, item: item, listener: listener, trials: trials, bus: address)
      lines.append("key " + latencies.map { String(format: "%.6f", $0) }.joined(separator: " "))
    }
    FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))
  }

  /// The media-key trials: MPRIS Play to a paused queue player, from a client of the bench's own.
  private static func mediaKey(
    engine: AudioEngine, item: MediaItem, listener: Listener, trials: Int, bus address: String
  ) throws -> [Double] {
    // Busy, as a game is: another voice keeps the music bus full.
    let background = try Player(engine: engine, item: item)
    background.volume = 0
    background.play()
    defer { background.stop() }
    let player = QueuePlayer(engine: engine)
    try player.setQueue(with: [item])
    let service = try NowPlayingService(player: player, configuration: .init(busAddress: address))
    defer { service.shutdown() }
    let client = try BusConnection(address: address)
    var latencies: [Double] = []
    for _ in 0..<trials {
      player.prepareToPlay()
      usleep(UInt32.random(in: 100_000...200_000))
      listener.watch()
      guard
        let play = client.methodCall(
          destination: service.busName, path: "/org/mpris/MediaPlayer2", interface: "org.mpris.MediaPlayer2.Player",
          member: "Play")
      else { continue }
      let sent = DispatchTime.now().uptimeNanoseconds
      client.callWithoutReply(play)
      try client.process(waitingAtMost: 0)
      let deadline = Date().addingTimeInterval(5)
      while listener.soundAt == nil && Date() < deadline { usleep(200) }
      if let heard = listener.soundAt { latencies.append(Double(heard - sent) / 1e9) }
      player.pause()
      usleep(150_000)
    }
    return latencies
  }
}
