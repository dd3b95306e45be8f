import Foundation
import LeitmotifFixtures
import Testing

/// The examples in Examples/ run as a newcomer runs them: hello-music, a Swift package of its
/// own, from its folder; the C programs built with CMake through the installed pkg-config file,
/// from the repository's top folder. And the README shows their code as it is, so its snippets
/// compile.
///
/// `make test` builds them first (`make examples`: its own scratch path and CMake folder); under
/// plain `swift test` the suite builds them itself. Serialized: one build at a time.
@Suite(
  "The examples: hello-music and the CMake C game run, and the README shows their code", .serialized,
  .disabled(if: CGame.underThreadSanitizer, "the examples build without the sanitizer"))
struct ExamplesTests {
  static let helloMusic = CGame.repository + "/.build/examples/hello-music/debug/hello-music"
  static let gettingStarted = CGame.repository + "/.build/examples/hello-music/debug/getting-started"
  static let cGame = CGame.repository + "/.build/examples/c-game/c-game"
  static let helloC = CGame.repository + "/.build/examples/c-game/hello"
  static let pak = CGame.repository + "/.build/examples/c-game/pak"

  /// Builds the examples when one is missing (`make examples`).
  static func built(in directory: TemporaryDirectory) throws {
    let files = FileManager.default
    guard ![helloMusic, gettingStarted, cGame, helloC, pak].allSatisfy({ files.isExecutableFile(atPath: $0) }) else {
      return
    }
    let home = ProcessInfo.processInfo.environment["HOME"] ?? directory.path
    let run = try CGame.run(
      "/usr/bin/make", ["-s", "-C", CGame.repository, "examples"], in: directory, extraEnvironment: ["HOME": home])
    try #require(run.status == 0, "make examples failed: \(run.output)\(run.errors)")
  }

  /// Runs `program` in `folder` (the examples find their cue files relative to where they run).
  static func run(_ program: String, _ arguments: [String], in folder: String, directory: TemporaryDirectory) throws
    -> CGame.Run
  {
    // CGame.run starts programs in the temporary directory; a shell moves to `folder` first.
    return try CGame.run(
      "/bin/sh", ["-c", "cd \(CGame.shellCommand([folder])) && exec \(CGame.shellCommand([program] + arguments))"],
      in: directory,
      extraEnvironment: ["ALSOFT_DRIVERS": "null"])
  }

  /// The lines of one cue's reports ("[enemy.spotted] ..."), in the order printed, with their times.
  static func reportTimes(_ output: String, cue: String) -> [Double] {
    output.split(separator: "\n").filter { $0.contains("[\(cue)]") }.compactMap {
      Double($0.split(separator: " ").first { !$0.isEmpty } ?? "")
    }
  }

  @Test("hello-music plays its cues live (headless here): the fight starts on the bar, ends, and it shuts down")
  func helloMusicRuns() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-hello-music")
    try Self.built(in: directory)
    let run = try Self.run(Self.helloMusic, ["9"], in: CGame.repository + "/Examples/hello-music", directory: directory)
    #expect(run.status == 0, "\(run.output)\(run.errors)")
    #expect(run.output.contains("state none -> \"explore\""), "\(run.output)")
    #expect(run.output.contains("rule \"fight\""), "\(run.output)")
    #expect(run.output.contains("state \"explore\" -> \"combat\""), "\(run.output)")
    #expect(run.output.contains("state \"combat\" -> \"explore\""), "\(run.output)")
    #expect(run.output.contains("rule \"ouch\""), "\(run.output)")
    #expect(run.output.hasSuffix("hello-music: done\n"), "\(run.output)")
    for cue in ["enemy.spotted", "combat.end"] {
      let times = Self.reportTimes(run.output, cue: cue)
      #expect(times.count >= 2 && times == times.sorted(), "\(cue): \(times)")
    }
  }

  @Test(
    "Getting started's whole program builds and runs from the repository's top folder: menu, then the director's states"
  )
  func gettingStartedRuns() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-getting-started")
    try Self.built(in: directory)
    let run = try Self.run(Self.gettingStarted, [], in: CGame.repository, directory: directory)
    #expect(run.status == 0, "\(run.output)\(run.errors)")
    #expect(run.output.contains("menu: prepared"), "\(run.output)")
    // The director's start state, then the level's two cues, posted together as it starts: the
    // level's change lands at once, on the menu's first bar line (none of the menu is heard yet),
    // as the same script does offline; the fight's on its bar. (The live director used to count
    // the menu's position from where the mix stood a quarter second before it began, put the
    // level's change on the second bar, and the fight's pickup replaced it: explore was never
    // heard live, though it was offline.)
    for change in ["state none -> \"menu\"", "state \"menu\" -> \"explore\"", "state \"explore\" -> \"combat\""] {
      #expect(run.output.contains(change), "no \(change) in \(run.output)")
    }
    #expect(!run.output.contains("error"), "\(run.output)")
  }

  @Test("The CMake-built C programs run against the installed SDK: hello.c and the game's scripted minute")
  func cProgramsRun() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-c-examples")
    try Self.built(in: directory)
    let hello = try Self.run(Self.helloC, [], in: CGame.repository, directory: directory)
    #expect(hello.status == 0, "\(hello.output)\(hello.errors)")
    #expect(hello.output.contains("[enemy.spotted] rule \"fight\""), "\(hello.output)")
    #expect(hello.output.contains("state \"combat\" -> \"explore\""), "\(hello.output)")
    #expect(hello.output.hasSuffix("hello: done\n"), "\(hello.output)")
    #expect(
      Self.reportTimes(hello.output, cue: "enemy.spotted")
        == Self.reportTimes(hello.output, cue: "enemy.spotted").sorted())

    // Linked against the SDK installed into .build/prefix, as pkg-config gave it.
    let libraries = try CGame.run("/usr/bin/ldd", [Self.cGame], in: directory)
    #expect(libraries.output.contains("/.build/prefix/lib/libleitmotif.so.0"), "\(libraries.output)")

    // The scripted minute, one lm_render per 60 Hz step as an audio callback calls it: every
    // step is timed in the calling thread's CPU time (a loaded machine's scheduling, and waits
    // for the loader, do not count), and none takes 2 ms of it. (Wall-clock figures, with the
    // steps paced like a sound card's callback: `c-game --offline OUT --paced`.)
    // A step's CPU time still grows when the whole suite crowds two cores (caches and the
    // scheduler: one CI run saw a single step of 2.7 ms, where runs alone stay under 1 ms), so a
    // minute over the bound is run once more; the better minute must keep it.
    var timings: [String] = []
    var best = Double.infinity
    for _ in 0..<2 where best >= 2 {
      let wav = directory.file("game.wav")
      let game = try Self.run(Self.cGame, ["--offline", wav], in: CGame.repository, directory: directory)
      #expect(game.status == 0, "\(game.output)\(game.errors)")
      #expect(game.output.contains("game: rendered 2880000 frames"), "\(game.output)")
      #expect(try DemoTests.floatSamples(wav).contains { abs($0) > 0.05 }, "the music plays")
      let timing = try #require(
        game.output.split(separator: "\n").first { $0.hasPrefix("game: lm_render steps: 3600,") }, "\(game.output)")
      let cpu = try #require(
        timing.firstRange(of: "ms (wall").flatMap { wall in
          timing[wall.upperBound...].firstRange(of: "), ").flatMap { comma in
            Double(timing[comma.upperBound...].prefix { $0 != " " })
          }
        }, "\(timing)")
      print("c-game's minute: \(timing)")
      timings.append(String(timing))
      best = min(best, cpu)
    }
    #expect(best < 2, "the slowest lm_render step took \(best) ms of CPU at best: \(timings)")
  }

  @Test("pak.c plays the demo's music out of a pak and its cue file from memory, to the sample as from the loose files")
  func pakRuns() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-c-pak")
    try Self.built(in: directory)
    let run = try Self.run(
      Self.pak, ["Assets/cues.json5", directory.file("game.pak")], in: CGame.repository, directory: directory)
    #expect(run.status == 0, "\(run.output)\(run.errors)")
    #expect(run.output.contains("pak: packed 10 files of Assets/music"), "\(run.output)")
    #expect(run.output.contains(", 0 of 2880000 samples differ from the loose files"), "\(run.output)")
    #expect(
      run.output.contains("unmount while playing: LM_ERROR_INVALID_ARGUMENT (cannot unmount /pak/music: "),
      "\(run.output)")
    #expect(run.output.contains("pak: unmount after: LM_OK, LM_OK"), "\(run.output)")
    #expect(run.output.contains("closed all but 0\n"), "\(run.output)")
    // Not silence twice: the level's music really came out of the pak.
    let rms = run.output.split(separator: "\n").first { $0.contains("RMS ") }.flatMap {
      Double($0.split(separator: " ").drop { $0 != "RMS" }.dropFirst().first?.dropLast() ?? "")
    }
    #expect((rms ?? 0) > 0.05, "\(run.output)")
  }

  @Test("The README's Swift and C snippets are the examples' code, as it is")
  func readmeShowsTheExamples() throws {
    let readme = try String(contentsOfFile: CGame.repository + "/README.md", encoding: .utf8)
    for (file, from) in [
      ("Examples/hello-music/Sources/main.swift", "import Foundation"),
      ("Examples/c-game/hello.c", "#include <leitmotif.h>"),
    ] {

      let source = try String(contentsOfFile: CGame.repository + "/" + file, encoding: .utf8)
      let start = try #require(source.range(of: from), "\(file) has \(from)")
      let body = String(source[start.lowerBound...])
      #expect(readme.contains(body), "README.md does not show \(file) as it is: copy it from `\(from)` to its end")
    }
  }

  @Test(
    "The C API article's small game compiles without warnings and runs from the top folder")
  func cAPIArticleGameRuns() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-capi-article")
    let article = try String(
      contentsOfFile: CGame.repository + "/Sources/Leitmotif/Leitmotif.docc/CAPI.md", encoding: .utf8)
    let heading = try #require(article.range(of: "### A small game"))
    let start = try #require(article[heading.upperBound...].range(of: "```c\n"))
    let end = try #require(article[start.upperBound...].range(of: "```"))
    let source = directory.file("small-game.c")
    try Data(article[start.upperBound..<end.lowerBound].utf8).write(to: URL(fileURLWithPath: source))
    let program = try CGame.build(source: source, named: "small-game", in: directory)
    let run = try Self.run(program, [], in: CGame.repository, directory: directory)
    #expect(run.status == 0, "\(run.output)\(run.errors)")
    // The game "runs" for no time: the start state is reported, and nothing fails.
    #expect(run.output.contains("state none -> \"menu\""), "\(run.output)")
    #expect(run.errors.isEmpty, "\(run.errors)")
  }

  @Test("Getting started shows its example's code as it is")
  func gettingStartedShowsTheExample() throws {
    let page = try String(
      contentsOfFile: CGame.repository + "/Sources/Leitmotif/Leitmotif.docc/GettingStarted.md", encoding: .utf8)
    let source = try String(
      contentsOfFile: CGame.repository + "/Examples/hello-music/GettingStarted/main.swift", encoding: .utf8)
    #expect(
      page.contains("```swift\n" + source + "```"),
      "GettingStarted.md does not show Examples/hello-music/GettingStarted/main.swift as it is")
  }

  @Test(
    "The Debian packages the README and Getting started name are the ones the Makefile installs and Package.swift links"
  )
  func packageListsAgree() throws {
    func read(_ file: String) throws -> String {
      try String(contentsOfFile: CGame.repository + "/" + file, encoding: .utf8)
    }
    func words(_ text: Substring) -> Set<String> {
      Set(text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\\" }).map(String.init))
    }
    // The Makefile's `PACKAGES := ...` (continued over backslashed lines).
    let makefile = try read("Makefile")
    let start = try #require(makefile.range(of: "PACKAGES := "))
    var end = start.upperBound
    while let newline = makefile[end...].firstIndex(of: "\n") {
      end = newline
      guard makefile[..<newline].hasSuffix("\\") else { break }
      end = makefile.index(after: newline)
    }
    let installed = words(makefile[start.upperBound..<end])
    #expect(installed.count > 10, "\(installed)")

    // The README's list of what `make test` installs.
    let readme = try read("README.md")
    let listStart = try #require(readme.range(of: "needs first (`"))
    let listEnd = try #require(readme[listStart.upperBound...].range(of: "`)"))
    #expect(words(readme[listStart.upperBound..<listEnd.lowerBound]) == installed)

    // Every library package Package.swift names (`.apt([...])`), on Getting started's install line.
    let manifest = try read("Package.swift")
    var linked = Set<String>()
    var rest = manifest[...]
    while let apt = rest.range(of: ".apt([") {
      let close = try #require(rest[apt.upperBound...].firstIndex(of: "]"))
      for name in rest[apt.upperBound..<close].split(separator: ",") {
        linked.insert(name.trimmingCharacters(in: CharacterSet(charactersIn: " \"")))
      }
      rest = rest[close...]
    }
    #expect(linked.count > 10, "\(linked)")
    let page = try read("Sources/Leitmotif/Leitmotif.docc/GettingStarted.md")
    let line = try #require(page.range(of: "sudo apt-get install "))
    let lineEnd = try #require(page[line.upperBound...].firstIndex(of: "`"))
    let named = words(page[line.upperBound..<lineEnd])
    #expect(
      linked.subtracting(named).isEmpty, "Getting started's apt-get line lacks \(linked.subtracting(named).sorted())")
    #expect(
      linked.subtracting(["libopus-dev"]).isSubset(of: installed),
      "the Makefile lacks \(linked.subtracting(installed).sorted())")
  }
}
