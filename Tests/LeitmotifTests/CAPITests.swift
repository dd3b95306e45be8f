import Foundation
import LeitmotifFixtures
import Testing

/// The C API from C: Examples/c-game/game.c compiled with the toolchain's C compiler against
/// include/leitmotif.h and the libLeitmotifC.so SwiftPM built next to this test bundle, then run:
/// offline (its WAV checked by ear, its reports against its script) and in `--self-test` mode
/// (every error path an error code, and no crash).
///
/// The library is a product of its own, and `swift test` builds every product first, this one
/// too (a test cannot run `swift build` itself: it would wait forever for the lock `swift test`
/// holds). Where it is missing anyway, the suite is skipped and says so.
@Suite(
  "The C API, from a C program", .enabled(if: CGame.library != nil, CGame.notBuilt),
  .disabled(if: CGame.underThreadSanitizer, CGame.sanitized))
struct CAPITests {
  @Test("The C game renders its scripted minute offline: sound, and the music follows its cues")
  func offlineGame() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-c-api")
    let game = try CGame.build(in: directory)
    let wav = directory.file("game.wav")
    let run = try CGame.run(game, ["--offline", wav, "--cues", CGame.repository + "/Assets/cues.json5"], in: directory)
    #expect(run.status == 0, "\(run.errors)")
    #expect(run.output.contains("game: rendered 2880000 frames"), "\(run.output)")

    // The sound: a minute of 32-bit float stereo at 48 kHz, never silent, never clipped.
    let samples = try DemoTests.floatSamples(wav)
    #expect(samples.count == 60 * 48_000 * 2)
    let peak = samples.reduce(Float(0)) { max($0, abs($1)) }
    let rms = sqrt(samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count)))
    #expect(peak < 1, "clipped: peak \(peak)")
    #expect(rms > 0.03, "too quiet: RMS \(rms)")
    for second in 1..<59 where samples.count == 60 * 48_000 * 2 {
      let window = samples[(second * 96_000)..<((second + 1) * 96_000)]
      #expect(window.contains { abs($0) > 0.01 }, "silent at \(second) s")
    }

    // The reports (from the C callback, on Leitmotif's notification thread): each state change
    // comes after the cue that asked for it, on the next bar at the latest (the slowest piece,
    // 90 BPM in 4/4, has bars of 2.67 s).
    let longestBar = 4 * 60 / 90.0
    // Combat enters with its two-bar intro (144 BPM) as a pickup: its downbeat is the first bar
    // line at least that far ahead.
    let combatPickup = 2 * 4 * 60 / 144.0
    let expected: [(cue: String, at: Double, state: String)] = [
      ("level.start", 2, "explore"), ("area.dark", 14, "stealth"), ("area.light", 24, "explore"),
      ("enemy.spotted", 30, "combat"), ("combat.end", 48, "explore"), ("level.complete", 56, "menu"),
    ]
    let changes = CGame.stateChanges(run.output)
    #expect(changes.map(\.state) == ["menu"] + expected.map(\.state), "\(run.output)")
    for (change, cue) in zip(changes.dropFirst(), expected) {
      #expect(run.output.contains(String(format: "game %.3f post %@", cue.at, cue.cue)))
      #expect(
        change.time >= cue.at
          && change.time <= cue.at + longestBar + (change.state == "combat" ? combatPickup : 0) + 0.05,
        "\(change.state) at \(change.time) s, its cue \(cue.cue) at \(cue.at) s")
    }
    #expect(run.output.contains("report 36.000 FIRED - "), "player.hit fired its rule at once")
    // One cue's reports come in the order of their times: the rule, then what it scheduled.
    let reports = run.output.split(separator: "\n").filter { $0.hasPrefix("report ") }.compactMap {
      line -> (time: Double, cue: Substring)? in
      guard let time = Double(line.split(separator: " ")[1]), let open = line.firstIndex(of: "["),
        let close = line[open...].firstIndex(of: "]")
      else { return nil }
      return (time, line[open...close])
    }
    for (earlier, later) in zip(reports, reports.dropFirst()) where earlier.cue == later.cue {
      #expect(earlier.time <= later.time, "\(earlier.cue): a report at \(earlier.time) s before one at \(later.time) s")
    }
    #expect(reports.count > 10, "\(run.output)")
    // The structured fields: the rule by name, the title of what plays, and a change that
    // waited for the bar decided when its cue came (30 s) and sounding on the bar after.
    #expect(run.output.contains("fields FIRED rule=fight title=- decided=30.000 sounding=30.000"), "\(run.output)")
    let combat = try #require(
      run.output.split(separator: "\n").first { $0.hasPrefix("fields STATE_CHANGED") && $0.contains("(Combat)") },
      "\(run.output)")
    let fields = Dictionary(
      combat.split(separator: " ").compactMap { part -> (String, String)? in
        let pair = part.split(separator: "=", maxSplits: 1)
        return pair.count == 2 ? (String(pair[0]), String(pair[1])) : nil
      }, uniquingKeysWith: { first, _ in first })
    let decided = try #require(fields["decided"].flatMap(Double.init)),
      sounding = try #require(fields["sounding"].flatMap(Double.init))
    #expect(
      decided == 30 && sounding > 30 + combatPickup && sounding <= 30 + longestBar + combatPickup + 0.05, "\(combat)")
    #expect(run.output.contains("game: finished 60 s in state menu"))
    // The beat callback: every downbeat stamped with its own frame (offline, time = frame / rate),
    // in order, bar 1 of the first piece on the first frame.
    let downbeats = run.output.split(separator: "\n").filter { $0.hasPrefix("downbeat ") }.map { line in
      let words = line.split(separator: " ")
      return (time: Double(words[1]) ?? -1, frame: Int64(words[7]) ?? -1)
    }
    #expect(downbeats.first.map { $0.time == 0 && $0.frame == 0 } == true, "\(downbeats.prefix(3))")
    #expect(downbeats.count >= 20, "\(downbeats.count) downbeats in a minute")
    #expect(downbeats.allSatisfy { abs($0.time - Double($0.frame) / 48_000) < 0.0005 }, "\(downbeats)")
    #expect(zip(downbeats, downbeats.dropFirst()).allSatisfy { $0.frame < $1.frame }, "in order")
    #expect(run.output.contains("beats heard"), "\(run.output)")
    // The marker callback: the combat music's "theme" (bar 7 of its file, 10 s in: the cue file's
    // `cues`), on its own frame, during the fight.
    let markers = run.output.split(separator: "\n").filter { $0.hasPrefix("marker ") }
    let theme = try #require(
      markers.first { $0.contains("\"theme\" at 10.000 s of \"Steel and Sparks (Combat)\"") }, "\(markers)")
    let words = theme.split(separator: " ")
    let time = try #require(Double(words[1])), frame = try #require(Double(words.last ?? ""))
    #expect(abs(time - frame / 48_000) < 0.0005 && time > 30 && time < 48, "\(theme)")
  }

  @Test("Every error path is an error code, and the process does not crash")
  func errorPaths() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-c-api")
    let game = try CGame.build(in: directory)
    let run = try CGame.run(
      game, ["--self-test", "--cues", CGame.repository + "/Assets/cues.json5"], in: directory,
      extraEnvironment: ["LM_SELF_TEST_LIBRARY": "1"])
    #expect(run.status == 0, "\(run.output)\(run.errors)")
    #expect(!run.output.contains("FAIL"), "\(run.output)")
    let summary = run.output.split(separator: "\n").last { $0.hasPrefix("self-test:") }.map(String.init) ?? ""
    let counts = summary.split(separator: " ").compactMap { Int($0) }
    #expect(counts.count == 2 && counts[0] == counts[1] && counts[0] >= 60, "\(summary)")
    for line in [
      "ok   post on a NULL handle: LM_ERROR_INVALID_HANDLE",
      "ok   create from a header of the next major version: LM_ERROR_VERSION",
      "ok   create from a newer header of the same major version: LM_ERROR_VERSION",
      "ok   create with an unknown latency: LM_ERROR_INVALID_ARGUMENT",
      "ok   create from a 0.1 lm_config (no latency field): LM_OK",
      "ok   create with a struct_size short of 0.1's: LM_ERROR_INVALID_ARGUMENT",
      "ok   post on a destroyed engine: LM_ERROR_INVALID_HANDLE",
      "ok   post a bad UTF-8 cue name: LM_ERROR_INVALID_ARGUMENT",
      "ok   post a 1 MiB cue name: LM_ERROR_INVALID_ARGUMENT",
      "ok   the message quotes it cut",
      "ok   set a 1 MiB parameter name: LM_ERROR_INVALID_ARGUMENT",
      "ok   that message quotes it cut too",
      "ok   rate 9 (out of range): LM_ERROR_INVALID_ARGUMENT",
      "ok   render on a real-time engine: LM_ERROR_WRONG_MODE",
      "ok   render 0 frames into NULL: LM_OK",
      "ok   a state name is cut to fit, NUL-terminated",
      "ok   lm_set_state moved to combat",
      "ok   after lm_stop's fade the music is silent",
      "ok   after lm_stop no state holds (the rules see none)",
      "ok   lm_resume starts the stopped state again",
      "ok   set an unknown state: LM_ERROR_INVALID_ARGUMENT",
      "ok   a stinger at the item's end: LM_ERROR_INVALID_ARGUMENT",
      "ok   a crossfade of 1e308 s: LM_ERROR_INVALID_ARGUMENT",
      "ok   master volume over 1e308 s: LM_ERROR_INVALID_ARGUMENT",
      "ok   now playing: a title and a path, copied into the caller's struct",
      "ok   a parameter set without a ramp reads back at once",
      "ok   post on a full bus: LM_ERROR_BUS_FULL",
      "ok   destroy from inside the callback: LM_ERROR_WRONG_MODE",
      "ok   the game's prompt was asked; yes",
      "ok   the consent callback heard the change to authorized",
      "ok   master volume 2: LM_ERROR_INVALID_ARGUMENT",
      "ok   preload the victory fanfare: LM_OK",
      "ok   unload a file no longer preloaded: LM_ERROR_INVALID_ARGUMENT",
      "ok   preload a missing file: LM_ERROR_AUDIO_FILE",
      "ok   the message names the file",
      "ok   preload over the budget: LM_ERROR_AUDIO_FILE",
      "ok   the message names the budget",
      "ok   a query without consent: LM_ERROR_LIBRARY",
      "ok   a query with contains on a number: LM_ERROR_INVALID_ARGUMENT",
      "ok   the message names the property",
      "ok   a query of an unknown playlist: LM_ERROR_INVALID_ARGUMENT",
      "ok   queue an unknown song: LM_ERROR_INVALID_ARGUMENT",
      "ok   the message names the id",
      "ok   clear the picks: LM_OK",
      "ok   calls racing with lm_engine_destroy complete or see LM_ERROR_INVALID_HANDLE",
    ] {
      #expect(run.output.contains(line), "missing: \(line)")
    }
  }

  @Test("The header is clean C99 and C++ at -Wall -Wextra -Wpedantic -Werror, its config and payload helpers too")
  func headerWarnings() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-c-header")
    let source = directory.file("uses.c")
    try Data(
      """
      #include "leitmotif.h"
      int uses(void);
      int uses(void) {
        lm_config config = lm_config_defaults();
        lm_value payload[] = {lm_number("threat", 2), lm_string("kind", "wolf"), lm_bool("boss", 1)};
        lm_engine *engine = NULL;
        if (lm_engine_create(&config, &engine) != LM_OK) return 1;
        return (int)lm_post(engine, "enemy.spotted", payload, 3) + (int)config.struct_size;
      }
      """.utf8
    ).write(to: URL(fileURLWithPath: source))
    for language in [["-x", "c", "-std=c99"], ["-x", "c++", "-std=c++11"], ["-x", "c++", "-std=c++17"]] {
      let run = try CGame.run(
        CGame.compiler,
        language + [
          "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-I", CGame.repository + "/include", "-fsyntax-only", source,
        ],
        in: directory)
      #expect(run.status == 0, "\(language): \(run.errors)")
    }
  }

  /// The C++ program for `cppHeader`: leitmotif.hpp's engine over the hello-music cue file.
  static let cppProgram = """
    #include <leitmotif.hpp>
    #include <cstdio>
    #include <vector>
    int main(int argc, char **argv) {
      if (argc != 2) return 2;
      lm_config config = lm_config_defaults();
      config.application_id = "org.leitmotif.cpp-test";
      config.cue_file = argv[1];
      config.output = LM_OUTPUT_OFFLINE;
      try {
        leitmotif::engine music(config);
        music.on_report([](const lm_report *report, void *) { std::printf("report %s\\n", report->text); });
        music.start();
        std::vector<float> audio(800 * 2);
        for (int step = 0; step < 4 * 60; step++) {
          if (step == 60) music.post("enemy.spotted", {lm_number("threat", 3), lm_string("kind", "patrol")});
          music.render(audio.data(), 800);
        }
        music.flush_reports();
        std::printf("state %s\\n", music.state().c_str());
        leitmotif::engine moved = std::move(music);  // the handle moves; music owns nothing now
        std::printf("rate %d\\n", moved.sample_rate());
        moved.set_state("no.such.state");
        std::printf("not reached\\n");
      } catch (const leitmotif::error &e) {
        std::printf("caught %s: %s\\n", lm_error_name(e.code()), e.what());
      }
      try {
        // The cue file from memory, beside the file (its assets are relative); unmounted when it goes.
        std::FILE *file = std::fopen(argv[1], "rb");
        std::vector<char> text(1 << 16);
        size_t size = file ? std::fread(&text[0], 1, text.size(), file) : 0;
        if (file) std::fclose(file);
        leitmotif::mount cues = leitmotif::mount::memory(std::string(argv[1]) + ".in-memory", &text[0], size);
        try {
          leitmotif::mount twice = leitmotif::mount::memory(cues.path(), &text[0], size);
        } catch (const leitmotif::error &e) {
          std::printf("mounted twice: %s\\n", e.what());
        }
        lm_config mounted = lm_config_defaults();
        mounted.application_id = "org.leitmotif.cpp-test";
        mounted.cue_file = cues.path().c_str();
        mounted.output = LM_OUTPUT_OFFLINE;
        leitmotif::engine from_memory(mounted);
        std::printf("from memory: %d\\n", from_memory.sample_rate());
      } catch (const leitmotif::error &e) {
        std::printf("mount failed: %s\\n", e.what());
      }
      try {
        lm_config bad = lm_config_defaults();
        bad.application_id = "org.leitmotif.cpp-test";
        bad.cue_file = "/nonexistent/cues.json5";
        leitmotif::engine never(bad);
      } catch (const leitmotif::error &e) {
        std::printf("create failed: %s\\n", e.what());
      }
      return 0;
    }
    """

  @Test("leitmotif.hpp: an engine owner that destroys what it made, moves, and throws Leitmotif's errors")
  func cppHeader() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-cpp")
    let source = directory.file("music.cpp")
    try Data(Self.cppProgram.utf8).write(to: URL(fileURLWithPath: source))
    let library = try #require(CGame.library)
    // Every C++ compiler here: they differ in the order they evaluate a call's arguments, and g++
    // read Leitmotif's message before the call that set it (the message was the one before).
    let compilers =
      [CGame.cxxCompiler]
      + ["/usr/bin/g++"].filter {
        $0 != CGame.cxxCompiler && FileManager.default.isExecutableFile(atPath: $0)
      }
    for compiler in compilers {
      let program = directory.file("music-" + URL(fileURLWithPath: compiler).lastPathComponent)
      for standard in ["c++11", "c++17"] {
        let compile = try CGame.run(
          compiler,
          [
            "-std=\(standard)", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-I", CGame.repository + "/include",
            source, "-L", library, "-lLeitmotifC", "-Wl,-rpath," + library, "-o", program,
          ], in: directory)
        try #require(compile.status == 0, "\(compiler) \(standard): \(compile.errors)")
      }
      try checkCppRun(program, compiler: compiler, in: directory)
    }
  }

  func checkCppRun(_ program: String, compiler: String, in directory: TemporaryDirectory) throws {
    let run = try CGame.run(program, [CGame.repository + "/Examples/hello-music/cues.json5"], in: directory)
    #expect(run.status == 0, "\(run.errors)")
    #expect(run.output.contains("state \"explore\" -> \"combat\""), "\(run.output)")
    #expect(run.output.contains("state combat\nrate 48000\n"), "\(run.output)")
    #expect(
      run.output.contains("caught LM_ERROR_INVALID_ARGUMENT: LM_ERROR_INVALID_ARGUMENT: the cue file has no state"),
      "\(run.output)")
    #expect(!run.output.contains("not reached"))
    // With Leitmotif's own message: what is wrong and where.
    #expect(run.output.contains("create failed: LM_ERROR_CUE_FILE: "), "\(compiler): \(run.output)")
    #expect(run.output.contains("/nonexistent/cues.json5"), "\(compiler): \(run.output)")
    #expect(run.output.contains("mounted twice: LM_ERROR_INVALID_ARGUMENT: "), "\(compiler): \(run.output)")
    #expect(!run.output.contains("mounted twice: LM_ERROR_INVALID_ARGUMENT: \n"), "\(compiler): \(run.output)")
    #expect(!run.output.contains("mount failed"), "\(run.output)")
    #expect(run.output.contains("from memory: 48000\n"), "\(run.output)")
  }

  /// The C program for `exitWithoutDestroy`: it plays, then returns from `main` with the engine
  /// alive. Its own `atexit` handler, registered before the engine exists, runs after
  /// Leitmotif's and lists the threads still there.
  static let exitProgram = """
    #define _DEFAULT_SOURCE
    #include <dirent.h>
    #include <stdio.h>
    #include <stdlib.h>
    #include <string.h>
    #include <unistd.h>
    #include "leitmotif.h"

    static void list_threads(void) {
      DIR *tasks = opendir("/proc/self/task");
      struct dirent *entry;
      while (tasks && (entry = readdir(tasks))) {
        char path[96], name[32] = {0};
        if (entry->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", entry->d_name);
        FILE *comm = fopen(path, "r");
        if (comm) { if (!fgets(name, sizeof name, comm)) name[0] = 0; fclose(comm); }
        if (strncmp(name, "lm.", 3) == 0) printf("thread at exit: %s", name);
      }
      if (tasks) closedir(tasks);
      printf("exit handler done\\n");
      fflush(stdout);
    }

    int main(int argc, char **argv) {
      if (argc != 3) { fprintf(stderr, "usage: exit-test CUES MICROSECONDS\\n"); return 2; }
      atexit(list_threads);
      lm_config config;
      memset(&config, 0, sizeof config);
      config.struct_size = sizeof config;
      config.application_id = "exit-test";
      config.cue_file = argv[1];
      lm_engine *engine = NULL;
      if (lm_engine_create(&config, &engine) != LM_OK) { fprintf(stderr, "%s\\n", lm_last_error()); return 2; }
      if (lm_start(engine, NULL) != LM_OK) { fprintf(stderr, "%s\\n", lm_engine_last_error(engine)); return 2; }
      usleep((useconds_t)atoi(argv[2]));
      return 0; /* no lm_engine_destroy */
    }
    """

  @Test("A program that returns from main without destroying its engine exits cleanly: the engine's threads stop first")
  func exitWithoutDestroy() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-c-exit")
    let source = directory.file("exit.c")
    try Data(Self.exitProgram.utf8).write(to: URL(fileURLWithPath: source))
    let program = try CGame.build(source: source, named: "exit-test", in: directory)
    for (attempt, microseconds) in [50_000, 200_000, 400_000, 120_000, 300_000].enumerated() {
      let run = try CGame.run(
        program, [CGame.repository + "/Assets/cues.json5", String(microseconds)], in: directory,
        extraEnvironment: ["ALSOFT_DRIVERS": "null"])
      #expect(run.status == 0, "attempt \(attempt): status \(run.status): \(run.errors)")
      #expect(run.output.contains("exit handler done"), "\(run.output)")
      // OpenAL's destructor runs after this handler: no thread of ours may still call into it.
      for thread in ["lm.streaming", "lm.decode", "lm.notify", "lm.loader"] {
        #expect(!run.output.contains("thread at exit: \(thread)"), "attempt \(attempt): \(run.output)")
      }
      #expect(!run.errors.contains("Assertion"), "\(run.errors)")
    }
  }
}

/// Building and running the C example.
enum CGame {
  /// The repository: three folders above this file.
  static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

  /// The folder holding libLeitmotifC.so: SwiftPM's build folder, where this test bundle is.
  static let library: String? = {
    var candidates: [URL] = []
    if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
      candidates.append(URL(fileURLWithPath: path).deletingLastPathComponent())
    }
    candidates.append(Bundle.main.bundleURL)
    candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
    return candidates.map(\.path)
      .first { FileManager.default.fileExists(atPath: $0 + "/libLeitmotifC.so") }
  }()

  static let notBuilt = Comment(
    rawValue: "libLeitmotifC.so is not next to the test bundle: build it with `swift build --product LeitmotifC` "
      + "(with the same options as `swift test`)")

  /// Whether this test process runs under the thread sanitizer (`make test-tsan`): its build of
  /// libLeitmotifC.so then needs the sanitizer's runtime in the program that loads it.
  static let underThreadSanitizer = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil

  /// Why the suite does not run under the thread sanitizer: a C program linking that build needs
  /// `-fsanitize=thread` plus the toolchain's libdispatch and BlocksRuntime, and the sanitizer
  /// cannot see `Synchronization.Mutex` on Linux (it locks with a futex), so every lock the
  /// engine takes for a C call would be reported as a race.
  static let sanitized = Comment(
    rawValue: "not under the thread sanitizer: its libLeitmotifC.so needs the sanitizer's runtime in the C program, "
      + "and the sanitizer does not see Synchronization.Mutex on Linux")

  /// The C compiler: the toolchain's clang, else the clang next to `swift` on PATH, else `cc`.
  static let compiler: String = {
    var candidates = ["/opt/swift/usr/bin/clang"]
    for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
      if FileManager.default.isExecutableFile(atPath: "\(folder)/swift") { candidates.append("\(folder)/clang") }
    }
    candidates += ["/usr/bin/cc", "/usr/bin/clang", "/usr/bin/gcc"]
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? "cc"
  }()

  /// The C++ compiler: the C compiler's own C++ driver (clang++), else `c++`.
  static let cxxCompiler: String = {
    let candidates = (compiler.hasSuffix("clang") ? [compiler + "++"] : []) + ["/usr/bin/c++", "/usr/bin/g++"]
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? "c++"
  }()

  struct Run {
    var status: Int32
    var output: String
    var errors: String
  }

  struct CompileError: Error, CustomStringConvertible {
    var description: String
  }

  /// Compiles Examples/c-game/game.c into `directory` as C99 with warnings, against the header and
  /// the library, with the library's folder as its run path (as the pkg-config file gives it).
  static func build(in directory: TemporaryDirectory) throws -> String {
    try build(source: repository + "/Examples/c-game/game.c", named: "c-game", in: directory)
  }

  /// Compiles the C file at `source` the same way, into `directory` as `name`.
  static func build(source: String, named name: String, in directory: TemporaryDirectory) throws -> String {
    let library = try #require(library)
    let output = directory.file(name)
    let run = try self.run(
      compiler,
      [
        "-std=c99", "-Wall", "-Wextra", "-I", repository + "/include",
        source, "-L", library, "-lLeitmotifC", "-Wl,-rpath," + library, "-lm", "-o", output,
      ], in: directory)
    guard run.status == 0 else { throw CompileError(description: "\(compiler) failed:\n\(run.errors)") }
    #expect(!run.errors.contains("warning:"), "the example compiles without warnings: \(run.errors)")
    return output
  }

  /// Runs `program` with HOME in `directory` (the library's consent and index stay there).
  static func run(
    _ program: String, _ arguments: [String], in directory: TemporaryDirectory,
    extraEnvironment: [String: String] = [:]
  ) throws -> Run {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: program)
    process.arguments = arguments
    process.currentDirectoryURL = URL(fileURLWithPath: directory.path)
    var environment = ProcessInfo.processInfo.environment.filter {
      !$0.key.hasPrefix("XDG_") && $0.key != "LEITMOTIF_LIBRARY_ACCESS"
    }
    environment["HOME"] = directory.path
    environment.merge(extraEnvironment) { $1 }
    process.environment = environment
    // Standard error goes to a file, so that a full pipe can never stall the program while
    // standard output is read.
    let errorsPath = directory.file("stderr-\(UUID().uuidString)")
    _ = FileManager.default.createFile(atPath: errorsPath, contents: nil)
    let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: errorsPath))
    let output = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    try errors.close()
    let errorData = FileManager.default.contents(atPath: errorsPath) ?? Data()
    return Run(
      status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
      errors: String(decoding: errorData, as: UTF8.self))
  }

  /// `words` as one `sh -c` command line, each word single-quoted (a quote inside written '\\'').
  static func shellCommand(_ words: [String]) -> String {
    words.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
  }

  /// The `report TIME STATE_CHANGED STATE ...` lines the game printed, in order.
  static func stateChanges(_ output: String) -> [(time: Double, state: String)] {
    output.split(separator: "\n").compactMap { line in
      let words = line.split(separator: " ", maxSplits: 4)
      guard words.count >= 4, words[0] == "report", words[2] == "STATE_CHANGED", let time = Double(words[1]) else {
        return nil
      }
      return (time, String(words[3]))
    }
  }
}
