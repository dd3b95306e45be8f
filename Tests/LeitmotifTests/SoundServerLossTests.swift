import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

#if canImport(Glibc)
  import Glibc
#endif

/// Device loss on a real sound server: `leitmotif play` on PulseAudio (OpenAL Soft's pulse
/// backend), the server killed mid-play and started again. What reached the server's null sink
/// is recorded from its monitor with `parec` and compared with the decoded file, sample for
/// sample: the music before the kill is the file from its first frame, the music after it is the
/// file again from where it was lost, and the engine is back within half a second of the server.
///
/// The server is the test's own (its own runtime directory and HOME, no autospawn), started the
/// way a user's session starts it. Two things make the capture tell the truth:
/// - `parec --latency-msec=10`: parec's default fragment is 2 s, and a killed server takes the
///   recorder's unsent fragment with it.
/// - The server listens first only on a socket of the test's; the recorder connects there, and
///   only once its data flows does the test open the default socket (the one OpenAL finds): so
///   the capture sees the exact moment the engine comes back.
@Suite(
  "Device loss on PulseAudio: the server killed and restarted mid-play",
  .enabled(if: SoundServer.isInstalled, "needs pulseaudio, parec and pactl (Debian pulseaudio, pulseaudio-utils)"),
  .disabled(if: CGame.underThreadSanitizer, "timing-bound; see make test-tsan"))
struct SoundServerLossTests {
  @Test("killed after 3 s, back 1 s later: the music resumes where it was lost, within 0.5 s, sample-exact")
  func killAndRestart() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-pulse")
    // White noise (every frame tells where it is in the file) at a level whose decoded peaks stay
    // well below full scale: OpenAL's output limiter leaves it alone.
    let music = directory.file("noise.ogg")
    let format = PCMFormat.stereo48000
    try VorbisEncoder.encode(
      samples: ToneGenerator.whiteNoise(
        seed: 12, amplitude: 0.25, frameCount: format.frames(seconds: 12), channelCount: format.channelCount),
      format: format, quality: 0.4, to: music)
    let reference = try EngineHarness.decodeAll(music).samples
    let server = try SoundServer(directory: directory)
    defer { server.stop() }

    let before = try server.start(recordingTo: directory.file("before.raw"))
    var environment = server.clientEnvironment
    environment["ALSOFT_DRIVERS"] = "pulse"
    let player = try ChildProcess(LeitmotifCommand.executable, ["play", music], environment: environment)
    defer { player.interrupt() }
    usleep(2_500_000)
    let sinkLatency = server.sinkLatencyFrames()
    usleep(500_000)
    server.kill()
    usleep(1_000_000)
    let after = try server.start(recordingTo: directory.file("after.raw"))
    usleep(3_000_000)
    server.stopRecording()
    player.interrupt()
    let errors = player.finish()
    server.stop()

    let index = Capture.Index(reference)
    let heardBefore = try Capture(path: before.path, reference: reference, index: index)
    let heardAfter = try Capture(path: after.path, reference: reference, index: index)
    let rate = 48_000
    // Before: the file from its first frame, unbroken until the kill.
    let first = try #require(
      heardBefore.firstSound, "nothing reached the sink before the kill; the player said: \(errors)")
    #expect(first.fileFrame == 0)
    #expect(heardBefore.trailingOther == 0, "\(heardBefore.trailingOther) frames of something else after the music")
    #expect(first.matchedFrames > rate, "only \(first.matchedFrames) frames heard before the kill")
    let lostAt = first.fileFrame + first.matchedFrames

    // After: the file again, from the first frame that did not reach the sink, unbroken to the end.
    let resumed = try #require(heardAfter.firstSound, "the music did not come back; the player said: \(errors)")
    #expect(heardAfter.trailingOther == 0, "\(heardAfter.trailingOther) frames of something else after the music")
    #expect(resumed.matchedFrames > rate, "only \(resumed.matchedFrames) frames after the restart")
    let skipped = resumed.fileFrame - lostAt
    let tolerance = SoundServerLossTests.resumeTolerance(sinkLatencyFrames: sinkLatency ?? 0)
    #expect(
      tolerance.contains(skipped),
      "resumed at file frame \(resumed.fileFrame), \(skipped) frames after the last one heard (\(lostAt)); the player said: \(errors)"
    )
    // Back within 0.5 s of the server accepting clients again.
    let wait = Double(resumed.captureFrame - after.openedAtFrame) / Double(rate)
    #expect(wait >= 0 && wait <= 0.5, "the music came back \(wait) s after the server")
    #expect(errors.contains("disconnected") && errors.contains("audio resumed"), "\(errors)")
    print(
      "sound server loss: heard to file frame \(lostAt), resumed at \(resumed.fileFrame) (\(skipped) frames; allowed \(tolerance)), \(wait) s after the server came back; the player said: \(errors.split(separator: "\n").filter { $0.contains("resumed") })"
    )
  }

  /// How far the resumed frame may lie from the first frame not heard (negative: played again).
  /// The engine rewinds by the device's latency (what the server still held), but the server's
  /// buffer fills and drains by a device period (OpenAL's 1024 frames) as OpenAL writes, and the
  /// kill comes at any moment of that. The capture's end is known only to the recorder's
  /// latency (10 ms, 480 frames: its unsent fragment dies with the server), and the null sink
  /// renders up to its own latency ahead into the monitor (frames the engine's rewind counts as
  /// unplayed): both make the music seem to come back earlier than it does. (Without the rewind
  /// the engine resumed 2,800 frames, 59 ms, late here.)
  static func resumeTolerance(sinkLatencyFrames: Int) -> ClosedRange<Int> {
    -(1024 + SoundServer.recorderLatencyFrames + sinkLatencyFrames)...1024
  }
}

/// A PulseAudio server of the test's own with a null sink (48 kHz float stereo, so what reaches it
/// is bit-exact), and a `parec` recording the sink's monitor.
final class SoundServer {
  static let binaries = ["pulseaudio", "parec", "pactl"]
  /// parec's fragment (10 ms): what it may not have sent when the server dies.
  static let recorderLatencyFrames = 480
  static let isInstalled = binaries.allSatisfy { path(of: $0) != nil }

  static func path(of program: String) -> String? {
    let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
    return paths.map { "\($0)/\(program)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
  }

  struct NotStarted: Error, CustomStringConvertible {
    var description: String
  }

  /// A recording: its raw file, and how many frames it held when the default socket opened.
  struct Recording {
    var path: String
    var openedAtFrame: Int
  }

  private let directory: TemporaryDirectory
  private var daemon: ChildProcess?
  private var recorder: ChildProcess?
  private var controlSocket: String { directory.file("control.sock") }

  /// What a client of this server needs: its runtime directory and HOME (client.conf says no
  /// autospawn, so nothing starts a server of its own).
  var clientEnvironment: [String: String] {
    var environment = ProcessInfo.processInfo.environment
    environment["XDG_RUNTIME_DIR"] = directory.file("run")
    environment["HOME"] = directory.file("home")
    environment["PULSE_SERVER"] = nil
    return environment
  }

  init(directory: TemporaryDirectory) throws {
    self.directory = directory
    let configuration = directory.file("home/.config/pulse")
    try FileManager.default.createDirectory(atPath: configuration, withIntermediateDirectories: true)
    try FileManager.default.createDirectory(atPath: directory.file("run"), withIntermediateDirectories: true)
    try "autospawn = no\n".write(toFile: configuration + "/client.conf", atomically: true, encoding: .utf8)
  }

  /// Starts the server, records its sink's monitor into `path` and, once the recording flows,
  /// opens the default socket for clients.
  func start(recordingTo path: String) throws -> Recording {
    unlink(controlSocket)
    unlink(directory.file("run/pulse/native"))
    daemon = try ChildProcess(
      Self.path(of: "pulseaudio"),
      [
        "-n", "--daemonize=no", "--exit-idle-time=-1", "--disallow-exit", "--use-pid-file=no",
        "-L", "module-null-sink sink_name=s rate=48000 channels=2 format=float32le",
        "-L", "module-native-protocol-unix socket=\(controlSocket)",
      ],
      environment: clientEnvironment)
    try waitFor("the server's socket") { FileManager.default.fileExists(atPath: self.controlSocket) }
    var environment = clientEnvironment
    environment["PULSE_SERVER"] = "unix:\(controlSocket)"
    recorder = try ChildProcess(
      Self.path(of: "parec"),
      [
        "--latency-msec=\(Self.recorderLatencyFrames / 48)", "-d", "s.monitor", "--format=float32le", "--rate=48000",
        "--channels=2", "--raw",
      ],
      environment: environment, output: path)
    // 0.2 s of the monitor's silence: the recording flows.
    try waitFor("the monitor's first data") { Self.frames(in: path) >= 9_600 }
    let opened = try ChildProcess(
      Self.path(of: "pactl"), ["load-module", "module-native-protocol-unix"], environment: environment)
    let status = opened.finish(status: true)
    guard status == "0" else { throw NotStarted(description: "pactl load-module failed: \(status)") }
    return Recording(path: path, openedAtFrame: Self.frames(in: path))
  }

  /// The null sink's configured latency in frames (`pactl list sinks`), nil if unknown. A null
  /// sink renders that far ahead of its clock, straight into its monitor: the recording holds
  /// those frames as heard, while the stream's latency (what the engine rewinds by) still
  /// counts them as unplayed.
  func sinkLatencyFrames() -> Int? {
    var environment = clientEnvironment
    environment["PULSE_SERVER"] = "unix:\(controlSocket)"
    let listing = directory.file("sinks.txt")
    guard
      let lister = try? ChildProcess(
        Self.path(of: "pactl"), ["list", "sinks"], environment: environment, output: listing)
    else { return nil }
    _ = lister.finish()
    let text = (try? String(contentsOfFile: listing, encoding: .utf8)) ?? ""
    // "Latency: 10015 usec, configured 10000 usec"
    guard let line = text.split(separator: "\n").first(where: { $0.contains("configured") && $0.contains("Latency:") }),
      let configured = line.split(separator: ",").last?.split(separator: " ").first(where: { Int($0) != nil }),
      let microseconds = Int(configured)
    else { return nil }
    return microseconds * 48 / 1000
  }

  /// SIGKILL, as when a sound server crashes; the recorder goes with it.
  func kill() {
    daemon?.kill()
    _ = daemon?.finish()
    _ = recorder?.finish()
    daemon = nil
    recorder = nil
  }

  func stopRecording() {
    recorder?.terminate()
    _ = recorder?.finish()
    recorder = nil
  }

  func stop() {
    stopRecording()
    daemon?.terminate()
    _ = daemon?.finish()
    daemon = nil
  }

  static func frames(in path: String) -> Int {
    let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    return size / 8
  }

  private func waitFor(_ what: String, seconds: Double = 10, _ condition: () -> Bool) throws {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
      guard Date() < deadline else { throw NotStarted(description: "no \(what) after \(seconds) s") }
      usleep(10_000)
    }
  }
}

/// A raw float32 stereo capture, read against the decoded file: where the first sound is in the
/// file, and for how many frames the capture goes on being the file, bit for bit.
struct Capture {
  struct Sound {
    var captureFrame: Int
    var fileFrame: Int
    var matchedFrames: Int
  }
  var firstSound: Sound?
  /// Frames after the matched run that are neither silence nor the file.
  var trailingOther = 0

  /// White noise: a left sample's bit pattern (almost always) names one frame of the file.
  struct Index {
    var frameOf: [UInt32: Int] = [:]

    init(_ reference: [Float]) {
      frameOf.reserveCapacity(reference.count / 2)
      for frame in stride(from: reference.count / 2 - 1, through: 0, by: -1) {
        frameOf[reference[2 * frame].bitPattern] = frame
      }
    }
  }

  init(path: String, reference: [Float], index: Index) throws {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    let samples = data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    let frames = samples.count / 2
    guard let start = (0..<frames).first(where: { samples[2 * $0] != 0 || samples[2 * $0 + 1] != 0 }) else { return }
    guard let fileFrame = index.frameOf[samples[2 * start].bitPattern] else {
      trailingOther = frames - start
      return
    }
    var matched = 0
    while start + matched < frames, fileFrame + matched < reference.count / 2,
      samples[2 * (start + matched)] == reference[2 * (fileFrame + matched)],
      samples[2 * (start + matched) + 1] == reference[2 * (fileFrame + matched) + 1]
    {
      matched += 1
    }
    firstSound = Sound(captureFrame: start, fileFrame: fileFrame, matchedFrames: matched)
    trailingOther = (start + matched..<frames).filter { samples[2 * $0] != 0 || samples[2 * $0 + 1] != 0 }.count
  }
}
