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
/// - The player runs under real-time scheduling where the machine allows it (`chrt`), as on a
///   desktop whose audio stack is set up for it: the engine's streaming thread asks for it by
///   itself, but OpenAL Soft's threads that write to the server do so only when its config says
///   `rt-prio`. Under a full `make test` on two cores they were once held off until the server's
///   buffer ran dry: a dropout in the capture 0.13 s after the resume, which this test is not
///   about. Even so, one 10 ms block of the null sink once went silent under that load, 0.35 s
///   into the music, long before the kill. So dropouts are allowed, told apart from a wrong
///   resume, counted and printed; a jump, a repeat or foreign sound still fails the test.
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
    let (program, arguments) = SoundServer.underRealtimeScheduling(
      try #require(LeitmotifCommand.executable).path, ["play", music])
    let player = try ChildProcess(program, arguments, environment: environment)
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
    #expect(
      heardBefore.trailingOther == 0,
      "\(heardBefore.trailingOther) frames of something else after the music: \(heardBefore.after); the player said: \(errors)"
    )
    #expect(first.matchedFrames > rate, "only \(first.matchedFrames) frames heard before the kill")
    let lostAt = first.fileFrame + first.matchedFrames

    // After: the file again, from the first frame that did not reach the sink, unbroken to the end.
    let resumed = try #require(heardAfter.firstSound, "the music did not come back; the player said: \(errors)")
    #expect(
      heardAfter.trailingOther == 0,
      "\(heardAfter.trailingOther) frames of something else after the music: \(heardAfter.after); the player said: \(errors)"
    )
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
      "sound server loss: heard to file frame \(lostAt), resumed at \(resumed.fileFrame) (\(skipped) frames; allowed \(tolerance)), \(wait) s after the server came back (player \(program.hasSuffix("chrt") ? "" : "not ")under real-time scheduling); dropouts under load: \(heardBefore.dropouts + heardAfter.dropouts); the player said: \(errors.split(separator: "\n").filter { $0.contains("resumed") || $0.contains("underrun") })"
    )
  }

  /// How far the resumed frame may lie from the first frame not heard (negative: played again).
  /// The engine rewinds by the device's latency (what the server still held), averaged, but the
  /// server's buffer fills and drains by a device period (OpenAL's 1024 frames) as OpenAL
  /// writes, and the kill comes at any moment of that: a period either way. Two things bend what
  /// the capture shows, one each way:
  /// - The null sink renders up to its own latency ahead into the monitor: frames the engine's
  ///   rewind counts as unplayed, so the music seems to come back earlier than it does.
  /// - The capture's end is known only to the recorder's latency (10 ms, 480 frames): its unsent
  ///   fragment dies with the server, so the last frame heard seems earlier than it was and the
  ///   music seems to come back later. (Until 2026-12-07 this allowance stood on the other side,
  ///   and 2 runs in about 13 failed at +1,056 and +1,271 frames; the misses over 6 runs in a row
  ///   were -599 to +1,056, centred on -18.)
  /// (Without the rewind the engine resumed 2,800 frames, 59 ms, late here.)
  static func resumeTolerance(sinkLatencyFrames: Int) -> ClosedRange<Int> {
    -(1024 + sinkLatencyFrames)...(1024 + SoundServer.recorderLatencyFrames)
  }
}

/// The capture reading the device-loss test relies on, on captures made up from the file.
@Suite("Device loss on PulseAudio: reading a capture against its file")
struct CaptureReadingTests {
  @Test("A capture is read as the file through dropouts, late or lost; a jump, a repeat or foreign sound ends the run")
  func captureReading() {
    let reference = ToneGenerator.whiteNoise(seed: 3, amplitude: 0.25, frameCount: 4_000, channelCount: 2)
    let index = Capture.Index(reference)
    func frames(_ range: Range<Int>) -> [Float] { Array(reference[(2 * range.lowerBound)..<(2 * range.upperBound)]) }
    let silence = [Float](repeating: 0, count: 2 * 300)

    // Silence, the file from 100, a dropout, the file going on, silence to the end.
    let dropout = Capture(
      samples: silence + frames(100..<1_000) + silence + frames(1_000..<2_000) + silence, reference: reference,
      index: index)
    #expect(dropout.firstSound?.captureFrame == 300)
    #expect(dropout.firstSound?.fileFrame == 100)
    #expect(dropout.firstSound?.matchedFrames == 1_900)
    #expect(dropout.dropouts.map(\.frames) == [300])
    #expect(dropout.trailingOther == 0)

    // A gap in place of the frames it hides (the server played silence and threw them away).
    let lost = Capture(
      samples: frames(100..<1_000) + silence + frames(1_300..<2_000), reference: reference, index: index)
    #expect(lost.firstSound?.matchedFrames == 1_900)
    #expect(lost.dropouts.map(\.lost) == [true])
    #expect(lost.trailingOther == 0)

    // A gap after which the file jumps ahead by 10 frames: lost audio, not a dropout.
    let jump = Capture(
      samples: frames(0..<1_000) + silence + frames(1_010..<2_000), reference: reference, index: index)
    #expect(jump.firstSound?.matchedFrames == 1_000)
    #expect(jump.dropouts.isEmpty)
    #expect(jump.trailingOther == 990)

    // Frames played again with no gap, and sound that is not the file.
    let repeated = Capture(samples: frames(0..<1_000) + frames(900..<2_000), reference: reference, index: index)
    #expect(repeated.firstSound?.matchedFrames == 1_000)
    #expect(repeated.trailingOther == 1_100)
    let foreign = Capture(
      samples: frames(0..<1_000) + [Float](repeating: 0.5, count: 20) + frames(1_010..<2_000), reference: reference,
      index: index)
    #expect(foreign.firstSound?.matchedFrames == 1_000)
    #expect(foreign.trailingOther == 1_000)
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

  /// `program` run under SCHED_RR (`chrt -r 1`, every thread of it) when this machine lets a
  /// process ask for it (root, or an RLIMIT_RTPRIO), else as it is.
  static func underRealtimeScheduling(_ program: String, _ arguments: [String]) -> (String, [String]) {
    guard let chrt = path(of: "chrt"),
      let probe = try? ChildProcess(chrt, ["-r", "1", "true"], environment: ProcessInfo.processInfo.environment),
      probe.finish(status: true) == "0"
    else { return (program, arguments) }
    return (chrt, ["-r", "1", program] + arguments)
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
/// file, and for how many frames of the file the capture goes on being the file, bit for bit.
///
/// A silent gap is a dropout when after it the file goes on with its very next frame (the
/// engine's bus ran dry for a moment: the music comes late, nothing is lost), or as many frames
/// later as the gap is long (the server's buffer ran dry and it threw away what came late: time
/// went on). Either is a thread held off on a loaded machine; dropouts are counted and the run
/// goes on through them, as this test is about where the music resumes after a loss, and
/// underruns have tests of their own. Anything else breaks the run: a jump in the file, a frame
/// played again, sound that is not the file.
struct Capture {
  struct Sound {
    var captureFrame: Int
    var fileFrame: Int
    /// Frames of the file heard in order from `fileFrame`, through any dropouts.
    var matchedFrames: Int
  }
  struct Dropout: CustomStringConvertible {
    var captureFrame: Int
    var frames: Int
    /// The server threw the frames away (the file goes on `frames` later), rather than playing
    /// them late.
    var lost: Bool

    var description: String { "\(frames) silent frames at capture frame \(captureFrame)\(lost ? ", lost" : ", late")" }
  }
  var firstSound: Sound?
  var dropouts: [Dropout] = []
  /// Frames after the matched run that are neither silence nor the file.
  var trailingOther = 0
  /// What the capture holds after the matched run, in words: silent gaps, and runs of the file
  /// from where they start (the first few), to tell a jump from noise.
  var after: [String] = []

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
    self.init(samples: samples, reference: reference, index: index)
  }

  init(samples: [Float], reference: [Float], index: Index) {
    let frames = samples.count / 2
    let fileFrames = reference.count / 2
    func silent(_ frame: Int) -> Bool { samples[2 * frame] == 0 && samples[2 * frame + 1] == 0 }
    func matches(_ frame: Int, _ fileFrame: Int) -> Bool {
      fileFrame < fileFrames && samples[2 * frame] == reference[2 * fileFrame]
        && samples[2 * frame + 1] == reference[2 * fileFrame + 1]
    }
    guard let start = (0..<frames).first(where: { !silent($0) }) else { return }
    guard let fileFrame = index.frameOf[samples[2 * start].bitPattern] else {
      trailingOther = frames - start
      return
    }
    var frame = start
    var next = fileFrame
    // The end of the run: after its last frame of the file (trailing silence is no dropout).
    var end = start
    while frame < frames {
      if matches(frame, next) {
        frame += 1
        next += 1
        end = frame
      } else if silent(frame) {
        let gap = frame
        while frame < frames, silent(frame) { frame += 1 }
        guard frame < frames else { break }
        if matches(frame, next) {
          dropouts.append(Dropout(captureFrame: gap, frames: frame - gap, lost: false))
        } else if matches(frame, next + frame - gap) {
          dropouts.append(Dropout(captureFrame: gap, frames: frame - gap, lost: true))
          next += frame - gap
        } else {
          break
        }
      } else {
        break
      }
    }
    firstSound = Sound(captureFrame: start, fileFrame: fileFrame, matchedFrames: next - fileFrame)
    trailingOther = (end..<frames).filter { !silent($0) }.count
    after = Self.describe(samples, from: end, reference: reference, index: index)
  }

  /// The runs from `frame` on: silence, the file from some frame, or neither (at most 8 runs).
  static func describe(_ samples: [Float], from frame: Int, reference: [Float], index: Index) -> [String] {
    let frames = samples.count / 2
    func silent(_ frame: Int) -> Bool { samples[2 * frame] == 0 && samples[2 * frame + 1] == 0 }
    var runs: [String] = []
    var frame = frame
    while frame < frames, runs.count < 8 {
      let start = frame
      if silent(frame) {
        while frame < frames, silent(frame) { frame += 1 }
        runs.append("at capture frame \(start): \(frame - start) silent")
      } else if let fileFrame = index.frameOf[samples[2 * frame].bitPattern] {
        while frame < frames, fileFrame + frame - start < reference.count / 2,
          samples[2 * frame] == reference[2 * (fileFrame + frame - start)],
          samples[2 * frame + 1] == reference[2 * (fileFrame + frame - start) + 1]
        {
          frame += 1
        }
        frame = max(frame, start + 1)
        runs.append("at capture frame \(start): the file from frame \(fileFrame) for \(frame - start)")
      } else {
        while frame < frames, !silent(frame), index.frameOf[samples[2 * frame].bitPattern] == nil { frame += 1 }
        runs.append("at capture frame \(start): \(frame - start) frames of neither")
      }
    }
    return runs
  }
}
