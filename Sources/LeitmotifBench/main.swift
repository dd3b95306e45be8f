// leitmotif-bench: how fast Leitmotif decodes and renders compared with the C decoders it wraps,
// whether an offline render streams (its memory does not grow with the file's length), how fast
// an offline queue with crossfades renders against decoding its items, what a real-time
// engine costs in CPU while two voices crossfade, and what the music director costs the game.
//
//   leitmotif-bench [all] [options of those below]
//   leitmotif-bench decode [--minutes N] [--long-minutes M] [--rounds R] [--no-cache] [--skip-memory]
//   leitmotif-bench queue [--rounds R] [--no-cache] [--sample-rate HZ] [--fade SECONDS]
//   leitmotif-bench crossfade [--seconds S] [--no-cache]
//   leitmotif-bench voices [--seconds S] [--counts 1,2,4,8,16] [--rounds R] [--no-cache]
//   leitmotif-bench latency [--trials N] [--no-cache]
//   leitmotif-bench cues [--posts N] [--events N] [--pause MICROSECONDS] [--cpu-seconds S]
//   leitmotif-bench soak [--minutes M]   (not part of `all`: `make soak`)
//   leitmotif-bench mutate [--files N] [--seed S]   (not part of `all`)
//
// Every file it measures is made on the spot (and cached, see BenchFiles.swift), so the bench
// needs nothing but the package and the `lame` command. The figures go to stdout as tables;
// progress goes to stderr. The goals are printed next to the figures; the exit status is 0
// whether they are met or not (it is a measurement, not a test), and non-zero only when the
// bench itself could not run.
//
// Hidden subcommands: `voices-child` (Leitmotif's side of `voices`, in its own process),
// `latency-child` (the trials of `latency`, in the process that opens the wave device),
// `render-child FILE OUT` (one render in its own process, for the memory figure) and `decode-once raw|engine|render|render-null FILE` (one path, for running under perf or callgrind).

import Foundation
import Leitmotif
import LeitmotifFixtures

#if canImport(Glibc)
  import Glibc
#endif

let usage = """
  usage:
    leitmotif-bench [all] [options]
        decode, queue, crossfade, voices, latency, then cues; takes each one's options (--rounds goes
        to decode and queue; cues runs with its defaults)
    leitmotif-bench decode [--minutes N] [--long-minutes M] [--rounds R] [--no-cache] [--skip-memory]
        decode and render speed of an N-minute Ogg Vorbis and MP3 (default 10) against the raw
        C decoders, and peak memory of rendering an M-minute (default 60) and a 1-minute file
      --rounds R      interleaved measurement rounds; the median is reported (default 5)
      --no-cache      make the files in a fresh temporary directory instead of
                      $TMPDIR/leitmotif-bench-cache
      --skip-memory   leave out the peak-memory measurement (and the long file)
    leitmotif-bench queue [--rounds R] [--no-cache] [--sample-rate HZ] [--fade SECONDS]
        offline render speed of a queue of four items with 3 s crossfades against decoding the
        same items (median of R interleaved rounds, default 5)
      --sample-rate HZ, --fade SECONDS   experiments: another mixing rate (default 48000) or
                      crossfade (default 3; 0 is gapless); the goal is judged only on the defaults
    leitmotif-bench crossfade [--seconds S] [--no-cache]
        CPU seconds per audio second of a real-time headless engine: idle, one voice, and two
        voices crossfading back and forth; S seconds each (default 60)
    leitmotif-bench voices [--seconds S] [--counts 1,2,4,8,16] [--rounds R] [--no-cache]
        live CPU per audio second of 0 to 16 streamed voices, each contender in its own process:
        Leitmotif against SFML's sf::Music on OpenAL's null device, Leitmotif's headless device
        against SDL_mixer 2 on SDL's dummy driver (peers built from Sources/LeitmotifBench/Peers
        when libsfml-dev and libsdl2-mixer-dev are installed), and each added voice against the
        raw decoder, straight through and paced as a stream (S seconds per case, default 10;
        median of R rounds, default 1)
    leitmotif-bench latency [--trials N] [--no-cache]
        post-to-audible latency of Player.play() on OpenAL's wave backend writing into a FIFO,
        idle and with a voice playing (N trials each, default 20)
    leitmotif-bench cues [--posts N] [--events N] [--pause MICROSECONDS] [--cpu-seconds S]
        the music director: the cost of post() on a game thread while the director and a
        real-time engine are busy (N posts, default 200000, against a locked queue), events per
        second a pumped director applies (N per case, default 100000), live-reload latency, and
        the CPU a director on its own thread adds to playing music (S seconds per case, default 10)
      --pause MICROSECONDS   the game thread's sleep after each burst of 100 posts (default 2000)
    leitmotif-bench tempo [--assets DIR]
        tempo and beat detection on songs of known tempo (the fixtures' synthesized songs and the
        bundled pieces in DIR, default Assets/music): tempo error, octave errors, beat F-measure
        within +-70 ms, and analysis speed against real time (not part of `all`)
    leitmotif-bench soak [--minutes M]
        M minutes (default 30) of live playback on the headless device under load (two busy loops):
        a director and three queue players, a cue every 100 ms, parameters every frame, the cue
        file rewritten every 10 s; prints peak RSS at 1 minute and at the end, underruns and lost
        places, and the threads before and after (not part of `all`)
    leitmotif-bench mutate [--files N] [--seed S]
        N mutations (default 500) of each of three real files (Vorbis, chained Vorbis, MP3) through
        `leitmotif info` and `leitmotif render`, each run in its own process with a 10 s limit:
        counts crashes and hangs and keeps those files (not part of `all`; needs the leitmotif tool
        built next to the bench)
  """

/// `all`'s options, handed to each benchmark: those it knows, with their values.
func split(allOptions arguments: [String]) throws -> (decode: [String], queue: [String], crossfade: [String]) {
  var decode: [String] = []
  var queue: [String] = []
  var crossfade: [String] = []
  var rest = arguments[...]
  while let argument = rest.popFirst() {
    switch argument {
    case "--no-cache":
      decode.append(argument)
      queue.append(argument)
      crossfade.append(argument)
    case "--skip-memory": decode.append(argument)
    case "--minutes", "--long-minutes", "--rounds", "--seconds", "--sample-rate", "--fade":
      guard let value = rest.popFirst() else {
        throw UsageError(description: "\(argument) needs a value")
      }
      switch argument {
      case "--seconds": crossfade += [argument, value]
      case "--sample-rate", "--fade": queue += [argument, value]
      case "--rounds":
        decode += [argument, value]
        queue += [argument, value]
      default: decode += [argument, value]
      }
    default: throw UsageError(description: "unknown option \"\(argument)\"")
    }
  }
  return (decode, queue, crossfade)
}

/// Prints to stderr and exits with status 2: wrong usage or a bench that cannot run.
func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data("leitmotif-bench: \(message)\n".utf8))
  exit(2)
}

/// A progress line on stderr, so that stdout holds only the tables.
func progress(_ message: String) {
  FileHandle.standardError.write(Data("  \(message)\n".utf8))
}

var arguments = CommandLine.arguments.dropFirst()
// No command (nothing, or options only) runs everything.
let command: String
if let first = arguments.first, !first.hasPrefix("--") || first == "--help" {
  command = first
  arguments = arguments.dropFirst()
} else {
  command = "all"
}
switch command {
case "all":
  let decode: DecodeBenchmark.Options
  let queue: QueueBenchmark.Options
  let crossfade: CrossfadeBenchmark.Options
  do {
    let routed = try split(allOptions: Array(arguments))
    decode = try DecodeBenchmark.Options(parsing: routed.decode)
    queue = try QueueBenchmark.Options(parsing: routed.queue)
    crossfade = try CrossfadeBenchmark.Options(parsing: routed.crossfade)
  } catch {
    fail("\(error)\n\(usage)")
  }
  do {
    try DecodeBenchmark(options: decode).run()
    print()
    try QueueBenchmark(options: queue).run()
    print()
    try CrossfadeBenchmark(options: crossfade).run()
    print()
    try VoicesBenchmark(options: VoicesBenchmark.Options()).run()
    print()
    try LatencyBenchmark(options: LatencyBenchmark.Options()).run()
    print()
    try CueBenchmark(options: CueBenchmark.Options()).run()
  } catch {
    fail("\(error)")
  }
  exit(0)
case "decode":
  let options: DecodeBenchmark.Options
  do { options = try DecodeBenchmark.Options(parsing: Array(arguments)) } catch { fail("\(error)\n\(usage)") }
  do {
    try DecodeBenchmark(options: options).run()
  } catch {
    fail("\(error)")
  }
  exit(0)
case "queue":
  let options: QueueBenchmark.Options
  do { options = try QueueBenchmark.Options(parsing: Array(arguments)) } catch { fail("\(error)\n\(usage)") }
  do {
    try QueueBenchmark(options: options).run()
  } catch {
    fail("\(error)")
  }
  exit(0)
case "crossfade":
  let options: CrossfadeBenchmark.Options
  do { options = try CrossfadeBenchmark.Options(parsing: Array(arguments)) } catch { fail("\(error)\n\(usage)") }
  do {
    try CrossfadeBenchmark(options: options).run()
  } catch {
    fail("\(error)")
  }
  exit(0)
case "voices":
  let options: VoicesBenchmark.Options
  do { options = try VoicesBenchmark.Options(parsing: Array(arguments)) } catch { fail("\(error)\n\(usage)") }
  do {
    try VoicesBenchmark(options: options).run()
  } catch {
    fail("\(error)")
  }
  exit(0)
case "latency":
  let options: LatencyBenchmark.Options
  do { options = try LatencyBenchmark.Options(parsing: Array(arguments)) } catch { fail("\(error)\n\(usage)") }
  do {
    try LatencyBenchmark(options: options).run()
  } catch {
    fail("\(error)")
  }
  exit(0)
case "latency-child":
  do { try LatencyBenchmark.child(Array(arguments)) } catch { fail("\(error)") }
  exit(0)
case "soak-assets":
  do { try SoakBenchmark.makeAssets(in: arguments.first ?? "") } catch { fail("\(error)") }
  exit(0)
case "tempo":
  do {
    try TempoBenchmark(options: TempoBenchmark.Options(parsing: Array(arguments))).run()
  } catch {
    fail("\(error)")
  }
case "voices-child":
  do { try VoicesBenchmark.child(Array(arguments)) } catch { fail("\(error)") }
  exit(0)
case "mutate":
  do {
    try MutationBenchmark(options: try MutationBenchmark.Options(parsing: Array(arguments))).run()
  } catch {
    fail("\(error)")
  }
  exit(0)
case "soak":
  do {
    try SoakBenchmark(options: try SoakBenchmark.Options(parsing: Array(arguments))).run()
  } catch {
    fail("\(error)")
  }
  exit(0)
case "cues":
  let options: CueBenchmark.Options
  do { options = try CueBenchmark.Options(parsing: Array(arguments)) } catch { fail("\(error)\n\(usage)") }
  do {
    try CueBenchmark(options: options).run()
  } catch {
    fail("\(error)")
  }
  exit(0)
case "query":
  do { try QueryBenchmark(options: QueryBenchmark.Options(parsing: Array(arguments))).run() } catch {
    fail("\(error)\n\(usage)")
  }
  exit(0)
case "library":
  do { try LibraryBenchmark(options: LibraryBenchmark.Options(parsing: Array(arguments))).run() } catch {
    fail("\(error)")
  }
  exit(0)
case RenderChild.subcommand:
  // Hidden: one offline render in a process of its own, for the peak-memory measurement.
  exit(RenderChild.main(Array(arguments)))
case "decode-once":
  // Hidden, for profilers (perf, callgrind) and experiments: one path over one file, e.g.
  // `leitmotif-bench decode-once render FILE --render-frames 4096 --format s16`.
  var rest = Array(arguments)
  var renderOptions = OfflineRenderer.Options()
  while rest.count > 2, let index = rest.firstIndex(where: { $0.hasPrefix("--") }), index + 1 < rest.count {
    let value = rest[index + 1]
    switch rest[index] {
    case "--render-frames":
      guard let frames = Int(value), frames > 0 else { fail("--render-frames needs a positive whole number") }
      renderOptions.renderFrames = frames
    case "--format":
      guard let format = WAVSampleFormat(rawValue: value) else { fail("--format needs f32 or s16") }
      renderOptions.sampleFormat = format
    default: fail("unknown option \(rest[index])")
    }
    rest.removeSubrange(index...(index + 1))
  }
  guard rest.count == 2, let path = DecodePath(name: rest[0]) else {
    fail("usage: leitmotif-bench decode-once raw|engine|render|render-null FILE [--render-frames N] [--format f32|s16]")
  }
  do {
    let container: ContainerFormat = try AudioFile.openDecoder(path: rest[1]).containerFormat
    let scratch = try TemporaryDirectory(prefix: "leitmotif-bench")
    let stopwatch = Stopwatch()
    let frames = try path.run(
      path: rest[1], container: container, scratchDirectory: scratch.path, renderOptions: renderOptions)
    print(
      String(format: "%@: %lld frames in %.3f s (%.3f s CPU)", rest[0], frames, stopwatch.seconds, stopwatch.cpuSeconds)
    )
  } catch {
    fail("\(error)")
  }
case "help", "--help", "-h":
  print(usage)
default:
  fail("unknown command \"\(command)\"\n\(usage)")
}

/// A bad command line: what was wrong, for the usage message.
struct UsageError: Error, CustomStringConvertible {
  var description: String
}
