import Foundation
import Leitmotif
import LeitmotifFixtures

/// `leitmotif-bench decode`: decode and render speed against the raw C decoders, and the peak
/// memory of an offline render of a long and a short file.
struct DecodeBenchmark {
  struct Options {
    /// Length of the files whose decode speed is measured.
    var minutes = 10.0
    /// Length of the long file in the memory comparison (the short one is always 1 minute).
    var longMinutes = 60.0
    /// Interleaved rounds; the median of each path is reported. Five, not three: on a 2-core
    /// machine shared with builds, single runs of the same path were seen to differ by 30%, and a
    /// median of five shrugs off two disturbed rounds (a 10-minute round takes about 6 s).
    var rounds = 5
    var useCache = true
    var measureMemory = true

    init() {}

    init(parsing arguments: [String]) throws {
      var rest = arguments[...]
      func value(_ name: String) throws -> Double {
        guard let text = rest.popFirst(), let number = Double(text), number > 0, number.isFinite else {
          throw UsageError(description: "\(name) needs a positive number")
        }
        return number
      }
      while let argument = rest.popFirst() {
        switch argument {
        case "--minutes": minutes = try value(argument)
        case "--long-minutes": longMinutes = try value(argument)
        case "--rounds":
          let number = try value(argument)
          guard number == number.rounded() else { throw UsageError(description: "--rounds needs a whole number") }
          rounds = Int(number)
        case "--no-cache": useCache = false
        case "--skip-memory": measureMemory = false
        default: throw UsageError(description: "unknown option \"\(argument)\"")
        }
      }
    }
  }

  /// libvorbisenc quality of the speed-test Vorbis file: 0.4 is about 128 kbit/s, typical of game
  /// music (decode cost grows a little with the bit rate).
  static let vorbisQuality: Float = 0.4
  /// Bit rate of the speed-test MP3: constant 160 kbit/s.
  static let mp3KilobitsPerSecond = 160
  /// Quality of the memory-test files: the lowest, because only their length matters there and
  /// an hour at a low quality encodes several times faster.
  static let memoryTestQuality: Float = 0.0
  /// Goals: the engine's decoder must cost at most 5% over the raw library, and so must a whole
  /// offline render of one stream (decoder + streaming loop + OpenAL mix + WAV writer), issue 12's
  /// "at least 0.95 of the raw decoder in wall time". Both render rows are judged; see
  /// `DecodePath.renderDiscarded` for why they differ.
  static let engineGoal = 0.95
  static let renderGoal = 0.95

  /// The smallest ratio to raw `path` should reach (none for the raw decoder itself).
  static func goal(for path: DecodePath) -> Double? {
    switch path {
    case .raw: return nil
    case .engine: return engineGoal
    case .render, .renderDiscarded: return renderGoal
    }
  }
  /// The memory of a 60-minute and a 1-minute render may differ by less than this: a render that
  /// streams holds the same few buffers whatever the length; one that loads would need ~600 MiB.
  static let memoryGoalKiB = 4 * 1024

  let options: Options

  func run() throws {
    let files = try BenchFiles(useCache: options.useCache)
    progress("files in \(files.directory)")
    // Make every file before measuring anything, so no encoder (lame runs in the background while
    // the Vorbis files are encoded, to use both cores) competes with the measured runs.
    let pendingMP3 = try files.startMP3(minutes: options.minutes, kilobitsPerSecond: Self.mp3KilobitsPerSecond)
    let vorbis = try files.vorbis(minutes: options.minutes, quality: Self.vorbisQuality)
    var memoryFiles: (short: String, long: String)? = nil
    if options.measureMemory {
      memoryFiles = (
        try files.vorbis(minutes: 1, quality: Self.memoryTestQuality),
        try files.vorbis(minutes: options.longMinutes, quality: Self.memoryTestQuality)
      )
    }
    let mp3 = try pendingMP3.wait()

    let scratch = try TemporaryDirectory(prefix: "leitmotif-bench")
    let minutes = String(format: "%g", options.minutes)
    let subjects = [
      SpeedComparison.Subject(
        name: "Ogg Vorbis q\(String(format: "%.1f", Self.vorbisQuality)), \(minutes) min", path: vorbis,
        container: .vorbis),
      SpeedComparison.Subject(
        name: "MP3 \(Self.mp3KilobitsPerSecond) kbit/s, \(minutes) min", path: mp3, container: .mp3),
    ]
    let speed = try SpeedComparison(subjects: subjects, rounds: options.rounds, scratchDirectory: scratch.path).run()
    print(speed.report())
    if let memoryFiles {
      print()
      let memory = try MemoryComparison(
        shortFile: memoryFiles.short, shortMinutes: 1, longFile: memoryFiles.long, longMinutes: options.longMinutes,
        scratchDirectory: scratch.path
      ).run()
      print(memory.report())
    }
  }
}

/// Decode speed of the raw C decoder, the engine's decoder and an offline render (into a file and
/// into /dev/null), side by side.
///
/// How: the paths run one after the other on the same file, and the whole sequence is repeated:
/// raw, engine, render, render to /dev/null, raw, ... Slow drift of the machine (another process,
/// CPU frequency, the page cache writing back the last render's WAV) then falls on all paths
/// alike instead of on whichever ran during it, and the median of each path discards a
/// round that was disturbed. The ratios are of the medians. An untimed raw decode of every file
/// first brings it into the page cache, so no round reads from the disk.
struct SpeedComparison {
  struct Subject {
    var name: String
    var path: String
    var container: ContainerFormat
  }

  let subjects: [Subject]
  let rounds: Int
  let scratchDirectory: String

  struct Result {
    var subject: Subject
    /// Seconds of audio in the file (from the raw decoder's frame count).
    var audioSeconds: Double
    /// Wall seconds per round, by path.
    var times: [DecodePath: [Double]]
    /// CPU seconds per round, by path.
    var cpuTimes: [DecodePath: [Double]]
    var notes: [String]
  }

  func run() throws -> Report {
    let loadAtStart = loadAverage()
    var results: [Result] = []
    for subject in subjects {
      progress("warming up: \(subject.name)")
      let frames = try DecodePath.raw.run(
        path: subject.path, container: subject.container, scratchDirectory: scratchDirectory)
      results.append(
        Result(
          subject: subject, audioSeconds: Double(frames) / Double(BenchFiles.format.sampleRate), times: [:],
          cpuTimes: [:], notes: []))
    }
    for round in 1...rounds {
      for index in results.indices {
        for path in DecodePath.allCases {
          let subject = results[index].subject
          let stopwatch = Stopwatch()
          let frames = try path.run(
            path: subject.path, container: subject.container, scratchDirectory: scratchDirectory)
          let seconds = stopwatch.seconds
          results[index].times[path, default: []].append(seconds)
          results[index].cpuTimes[path, default: []].append(stopwatch.cpuSeconds)
          progress(
            String(
              format: "round %d/%d  %@  %@: %.3f s (%.0f× real time)", round, rounds, subject.name,
              path.label(for: subject.container), seconds, results[index].audioSeconds / seconds))
          let expected = Int64((results[index].audioSeconds * Double(BenchFiles.format.sampleRate)).rounded())
          if frames != expected && round == 1 {
            results[index].notes.append("\(path.label(for: subject.container)) gave \(frames) frames, raw \(expected)")
          }
        }
      }
    }
    return Report(results: results, rounds: rounds, loadAverage: loadAtStart)
  }

  struct Report {
    var results: [Result]
    var rounds: Int
    /// /proc/loadavg's first three fields when the measurement began: other work on the machine.
    var loadAverage: String

    func report() -> String {
      var table = TextTable(
        [
          "file", "path", "median", "min–max", "× real time", "ratio to raw", "goal", "result", "CPU median",
          "CPU ratio",
        ],
        rightAligned: [2, 3, 4, 5, 8, 9])
      var notes: [String] = []
      for result in results {
        let raw = result.times[.raw]?.median ?? .nan
        let rawCPU = result.cpuTimes[.raw]?.median ?? .nan
        for path in DecodePath.allCases {
          let times = result.times[path] ?? []
          let median = times.median ?? .nan
          let cpuMedian = result.cpuTimes[path]?.median ?? .nan
          let ratio = raw / median
          let goal = DecodeBenchmark.goal(for: path)
          let verdict = goal.map { ratio >= $0 ? "PASS" : "BELOW GOAL" } ?? ""
          table.add([
            path == .raw ? result.subject.name : "",
            path.label(for: result.subject.container),
            String(format: "%.3f s", median),
            String(format: "%.3f–%.3f", times.min() ?? .nan, times.max() ?? .nan),
            String(format: "%.0f×", result.audioSeconds / median),
            String(format: "%.3f", ratio),
            goal.map { String(format: "≥ %.2f", $0) } ?? "", verdict,
            String(format: "%.3f s", cpuMedian),
            String(format: "%.3f", rawCPU / cpuMedian),
          ])
        }
        notes += result.notes.map { "\(result.subject.name): \($0)" }
      }
      var lines = [
        "Decode speed, 44.1 kHz stereo, wall time of a whole file (open + decode + close);",
        "median of \(rounds) interleaved rounds (raw, engine, render to a file, render to /dev/null, raw, ...). Ratio to raw = raw time / path time;",
        "the goals are judged on wall time. CPU columns: the same runs in CPU time (what was not spent waiting for the CPU).",
        "Load average at the start: \(loadAverage).",
        "",
        table.render(),
      ]
      if !notes.isEmpty { lines += [""] + notes.map { "note: \($0)" } }
      return lines.joined(separator: "\n")
    }
  }
}
