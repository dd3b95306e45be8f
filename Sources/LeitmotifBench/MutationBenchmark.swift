import Foundation
import Leitmotif
import LeitmotifFixtures

#if canImport(Glibc)
  import Glibc
#endif

/// `leitmotif-bench mutate [--files N] [--seed S]`: mutated real music files through the
/// command-line tool, as a reviewer tries it (issue 13): each of N mutations (default 500) of
/// three real files (an Ogg Vorbis file, a chained one whose links change rate, an MP3 from
/// `lame`) goes through `leitmotif info` and `leitmotif render --duration 1`, each run in its own
/// process with a 10 s limit. A run that ends by a signal is a crash, one that reaches the limit a
/// hang; each such file is kept, and named, for a test or a fuzz corpus.
///
/// Mutations, seeded: bytes flipped anywhere; the file cut at a random place; for Ogg, bytes
/// flipped or a 4- or 8-byte field set to an extreme (0, 2^31 - 1, 2^31, 2^32 - 1, 2^63 - 1) and
/// the page checksums fixed, so the damage reaches libvorbis, not just libogg's check; a block
/// copied to another place.
struct MutationBenchmark {
  struct Options {
    var files = 500
    var seed: UInt64 = 0x4D55_5441

    init() {}

    init(parsing arguments: [String]) throws {
      var rest = arguments[...]
      while let argument = rest.popFirst() {
        switch argument {
        case "--files":
          guard let text = rest.popFirst(), let value = Int(text), value >= 1, value <= 100_000 else {
            throw UsageError(description: "--files needs a whole number from 1 to 100000")
          }
          files = value
        case "--seed":
          guard let text = rest.popFirst(), let value = UInt64(text) else {
            throw UsageError(description: "--seed needs a whole number")
          }
          seed = value
        default:
          throw UsageError(description: "mutate: unknown option \(argument)")
        }
      }
    }
  }

  let options: Options

  private enum Outcome: String { case ok, refused, crash, hang }

  func run() throws {
    let tool = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
      "leitmotif"
    ).path
    guard FileManager.default.isExecutableFile(atPath: tool) else {
      throw UsageError(
        description: "mutate needs the leitmotif tool next to the bench: swift build --product leitmotif (same -c)")
    }
    let directory = try TemporaryDirectory(prefix: "leitmotif-mutate")
    let kept = NSTemporaryDirectory() + "leitmotif-mutate-found"
    try FileManager.default.createDirectory(atPath: kept, withIntermediateDirectories: true)
    let seeds = try makeSeeds(in: directory)
    var random = SplitMix64(seed: options.seed)
    var rows: [[String]] = []
    var found: [String] = []
    let started = Date()
    for (name, original, isOgg) in seeds {
      var counts: [String: [Outcome: Int]] = ["info": [:], "render": [:]]
      for index in 0..<options.files {
        let bytes = Self.mutate(original, isOgg: isOgg, using: &random)
        let path = directory.file("m-\(name)-\(index)" + (isOgg ? ".ogg" : ".mp3"))
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        for (command, arguments) in [
          ("info", ["info", path]),
          ("render", ["render", "--out", directory.file("out.wav"), "--duration", "1", path]),
        ] {
          let outcome = Self.runLimited(tool, arguments, seconds: 10)
          counts[command]![outcome, default: 0] += 1
          if outcome == .crash || outcome == .hang {
            let keep = "\(kept)/\(outcome.rawValue)-\(command)-\((path as NSString).lastPathComponent)"
            try? FileManager.default.removeItem(atPath: keep)
            try? FileManager.default.copyItem(atPath: path, toPath: keep)
            found.append(keep)
          }
        }
        unlink(path)
      }
      for command in ["info", "render"] {
        let row = counts[command]!
        rows.append([
          name, command, String(options.files), String(row[.ok, default: 0]), String(row[.refused, default: 0]),
          String(row[.crash, default: 0]), String(row[.hang, default: 0]),
        ])
      }
    }
    print(
      "Mutated files through the CLI: \(options.files) mutations of each file (seed \(options.seed)), "
        + "each run in its own process with a 10 s limit, in \(Int(Date().timeIntervalSince(started))) s")
    var table = TextTable(
      ["file", "command", "files", "ok", "refused (an error)", "crashed", "hung"], rightAligned: [2, 3, 4, 5, 6])
    for row in rows { table.add(row) }
    print(table.render())
    print(found.isEmpty ? "no crash and no hang" : "kept:\n" + found.map { "  \($0)" }.joined(separator: "\n"))
  }

  /// The three real files: Vorbis, chained Vorbis (44.1 kHz then 22.05 kHz mono), MP3 (lame).
  private func makeSeeds(in directory: TemporaryDirectory) throws -> [(String, [UInt8], Bool)] {
    let format = PCMFormat.stereo44100
    let music = ToneGenerator.musicLike(seed: 7, frameCount: format.frames(seconds: 2), format: format)
    let vorbis = directory.file("seed.ogg")
    try VorbisEncoder.encode(
      samples: music, format: format, tags: [("TITLE", "Seed"), ("LOOPSTART", "1000"), ("LOOPLENGTH", "20000")],
      quality: 0.2, to: vorbis)
    let mono = PCMFormat(sampleRate: 22_050, channelCount: 1)
    let chained = directory.file("chained.ogg")
    try VorbisEncoder.encodeChain(
      [
        .init(samples: Array(music[0..<(2 * 44_100)]), format: format),
        .init(
          samples: ToneGenerator.musicLike(seed: 8, frameCount: mono.frames(seconds: 1), format: mono), format: mono),
      ], quality: 0.2, to: chained)
    let wav = directory.file("seed.wav")
    let writer = try WAVWriter(path: wav, sampleRate: 44_100, channelCount: 2, sampleFormat: .int16)
    try music.withUnsafeBufferPointer { try writer.write($0, frameCount: music.count / 2) }
    try writer.finish()
    let mp3 = directory.file("seed.mp3")
    guard Self.runLimited("/usr/bin/lame", ["--quiet", "--tt", "Seed", wav, mp3], seconds: 60) == .ok else {
      throw UsageError(description: "lame could not make the MP3 seed (apt-get install lame)")
    }
    func bytes(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }
    return [("vorbis", try bytes(vorbis), true), ("chained", try bytes(chained), true), ("mp3", try bytes(mp3), false)]
  }

  private static func mutate(_ original: [UInt8], isOgg: Bool, using random: inout SplitMix64) -> [UInt8] {
    var bytes = original
    switch Int.random(in: 0..<(isOgg ? 5 : 3), using: &random) {
    case 0:
      for _ in 0..<Int.random(in: 1...8, using: &random) {
        bytes[Int.random(in: 0..<bytes.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
      }
    case 1:
      bytes = Array(bytes[0..<Int.random(in: 1..<bytes.count, using: &random)])
    case 2:
      let length = Int.random(in: 1...min(4096, bytes.count / 2), using: &random)
      let from = Int.random(in: 0...(bytes.count - length), using: &random)
      let to = Int.random(in: 0...(bytes.count - length), using: &random)
      bytes.replaceSubrange(to..<(to + length), with: original[from..<(from + length)])
    case 3:
      for _ in 0..<Int.random(in: 1...6, using: &random) {
        bytes[Int.random(in: 0..<bytes.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
      }
      OggPages.fixChecksums(&bytes)
    default:
      let extremes: [UInt64] = [0, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, 0x7FFF_FFFF_FFFF_FFFF]
      let value = extremes.randomElement(using: &random)!
      let width = value > 0xFFFF_FFFF || Bool.random(using: &random) ? 8 : 4
      let at = Int.random(in: 0...(bytes.count - width), using: &random)
      for index in 0..<width { bytes[at + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))) }
      OggPages.fixChecksums(&bytes)
    }
    return bytes
  }

  /// Runs `program` with its output thrown away; kills it after `seconds`.
  private static func runLimited(_ program: String, _ arguments: [String], seconds: Double) -> Outcome {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    let all = [program] + arguments
    var argv: [UnsafeMutablePointer<CChar>?] = all.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    let variables = ["SWIFT_BACKTRACE=enable=no", "PATH=/usr/bin:/bin", "HOME=/tmp"]
    var environment: [UnsafeMutablePointer<CChar>?] = variables.map { strdup($0) } + [nil]
    defer { for pointer in environment { free(pointer) } }
    var pid: pid_t = 0
    guard posix_spawn(&pid, program, &actions, nil, &argv, &environment) == 0 else { return .crash }
    let deadline = Date().addingTimeInterval(seconds)
    var status: Int32 = 0
    while waitpid(pid, &status, WNOHANG) == 0 {
      if Date() > deadline {
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
        return .hang
      }
      usleep(2_000)
    }
    let signaled = (status & 0x7F) != 0 && (status & 0x7F) != 0x7F
    if signaled { return .crash }
    let code = (status >> 8) & 0xFF
    return code == 0 ? .ok : (code <= 3 ? .refused : .crash)
  }
}
