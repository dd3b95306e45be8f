import Foundation
import LeitmotifFixtures
import Testing

/// The SDK as a game gets it: `make install` into a temporary PREFIX, then the C example built
/// through the installed pkg-config file and run with the Swift toolchain's library folder hidden
/// (a tmpfs over it in a mount namespace of its own), so a runtime library the installed
/// libleitmotif.so still needs from the toolchain fails here. And `make deb`'s two packages.
///
/// `make test` builds the SDK (`make sdk`, its own scratch path .build/sdk) before `swift test`,
/// so the installs here only copy; run under plain `swift test`, the first one builds it. The
/// suite is serialized: two makes at once would link the same file.
@Suite(
  "The SDK: make install, and a C game on it without the toolchain", .serialized,
  .disabled(if: CGame.underThreadSanitizer, "make install builds without the sanitizer; nothing to add under it"))
struct InstallTests {
  /// What `make install PREFIX=prefix` put where.
  struct Installed {
    var prefix: String
    var version: String
    var major: String
    var library: String { "\(prefix)/lib/libleitmotif.so.\(version)" }
    var pkgConfigFolder: String { "\(prefix)/lib/pkgconfig" }
  }

  static var version: String {
    get throws {
      try String(contentsOfFile: CGame.repository + "/VERSION", encoding: .utf8)
        .trimmingCharacters(in: .whitespacesAndNewlines)
    }
  }

  static func make(_ arguments: [String], in directory: TemporaryDirectory) throws -> CGame.Run {
    // HOME stays the user's: SwiftPM keeps its caches there.
    let home = ProcessInfo.processInfo.environment["HOME"] ?? directory.path
    return try CGame.run(
      "/usr/bin/make", ["-s", "-C", CGame.repository] + arguments, in: directory,
      extraEnvironment: ["HOME": home])
  }

  static func install(in directory: TemporaryDirectory) throws -> Installed {
    let prefix = directory.file("prefix")
    let run = try make(["install", "PREFIX=\(prefix)"], in: directory)
    try #require(run.status == 0, "make install failed: \(run.output)\(run.errors)")
    let version = try Self.version
    return Installed(prefix: prefix, version: version, major: String(version.prefix { $0 != "." }))
  }

  static func output(
    _ program: String, _ arguments: [String], in directory: TemporaryDirectory,
    environment: [String: String] = [:]
  ) throws -> String {
    let run = try CGame.run(program, arguments, in: directory, extraEnvironment: environment)
    try #require(run.status == 0, "\(program) \(arguments.joined(separator: " ")): \(run.errors)")
    return run.output
  }

  /// The lm_ functions include/leitmotif.h declares (a macro such as lm_engine_create is not
  /// one, nor a `static inline` helper such as lm_number).
  static func declaredFunctions() throws -> Set<String> {
    let header = try String(contentsOfFile: CGame.repository + "/include/leitmotif.h", encoding: .utf8)
    let declaration = /^[a-z_][a-z_ ]*[ *]+(lm_[a-z0-9_]+)\(/.anchorsMatchLineEndings()
    return Set(header.matches(of: declaration).filter { !$0.output.0.hasPrefix("static") }.map { String($0.output.1) })
  }

  @Test(
    "make install puts the header, the versioned library and a pkg-config file into PREFIX; make uninstall takes them out"
  )
  func installAndUninstall() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-install")
    let installed = try Self.install(in: directory)
    let files = FileManager.default

    // The version is one number everywhere: VERSION, the header, the pkg-config file.
    let header = try String(contentsOfFile: "\(installed.prefix)/include/leitmotif.h", encoding: .utf8)
    #expect(files.fileExists(atPath: "\(installed.prefix)/include/leitmotif.hpp"), "the C++ header too")
    let parts = installed.version.split(separator: ".")
    try #require(parts.count == 3, "VERSION is MAJOR.MINOR.PATCH: \(installed.version)")
    for (name, part) in zip(["MAJOR", "MINOR", "PATCH"], parts) {
      #expect(header.contains("#define LM_VERSION_\(name) \(part)\n"), "the header's LM_VERSION_\(name) is \(part)")
    }
    let pc = try String(contentsOfFile: "\(installed.pkgConfigFolder)/leitmotif.pc", encoding: .utf8)
    #expect(pc.contains("Version: \(installed.version)\n"), "\(pc)")
    #expect(pc.contains("libdir=\(installed.prefix)/lib\n"), "the pkg-config file points inside PREFIX: \(pc)")
    #expect(pc.contains("includedir=\(installed.prefix)/include\n"), "\(pc)")

    // The library and its two links: libleitmotif.so -> .so.MAJOR -> .so.MAJOR.MINOR.PATCH.
    #expect(
      try files.destinationOfSymbolicLink(atPath: "\(installed.prefix)/lib/libleitmotif.so")
        == "libleitmotif.so.\(installed.major)")
    #expect(
      try files.destinationOfSymbolicLink(atPath: "\(installed.prefix)/lib/libleitmotif.so.\(installed.major)")
        == "libleitmotif.so.\(installed.version)")
    let dynamic = try Self.output("/usr/bin/readelf", ["-d", installed.library], in: directory)
    #expect(dynamic.contains("Library soname: [libleitmotif.so.\(installed.major)]"), "\(dynamic)")
    #expect(!dynamic.contains("RPATH") && !dynamic.contains("RUNPATH"), "no run path: \(dynamic)")
    let needed = dynamic.split(separator: "\n").filter { $0.contains("(NEEDED)") }
    for line in needed {
      for runtime in ["libswift", "libFoundation", "lib_Foundation", "libdispatch", "libBlocksRuntime"] {
        #expect(!line.contains(runtime), "the Swift runtime is linked in, not needed: \(line)")
      }
    }
    #expect(needed.contains { $0.contains("libopenal.so.1") }, "OpenAL Soft stays Debian's: \(needed)")

    // Exported: exactly the header's functions.
    let symbols = try Self.output(
      "/usr/bin/nm", ["-D", "--defined-only", "--extern-only", installed.library], in: directory)
    let exported = Set(
      symbols.split(separator: "\n").compactMap {
        $0.split(separator: " ").last?.split(separator: "@").first.map(String.init)
      }
      .filter { !$0.hasPrefix("LEITMOTIF_") })
    let declared = try Self.declaredFunctions()
    #expect(declared.count > 20, "\(declared)")
    let extra = exported.subtracting(declared).sorted(), missing = declared.subtracting(exported).sorted()
    #expect(exported == declared, "exported but not declared: \(extra); declared but not exported: \(missing)")

    let uninstall = try Self.make(["uninstall", "PREFIX=\(installed.prefix)"], in: directory)
    #expect(uninstall.status == 0, "\(uninstall.errors)")
    let left =
      files.enumerator(atPath: installed.prefix)?.compactMap { $0 as? String }
      .filter { !files.fileExists(atPath: "\(installed.prefix)/\($0)/.") } ?? []
    #expect(left.isEmpty, "make uninstall left \(left)")
  }

  @Test("The library's targets import FoundationEssentials, never Foundation (which links CoreFoundation and ICU in)")
  func noFullFoundation() throws {
    let targets = [
      "LeitmotifDecoding", "LeitmotifOutput", "LeitmotifEngine", "LeitmotifAnalysis", "LeitmotifLibrary",
      "LeitmotifPlayers", "LeitmotifCues", "LeitmotifDesktop", "Leitmotif", "LeitmotifC",
    ]
    var offenders: [String] = []
    for target in targets {
      let folder = CGame.repository + "/Sources/" + target
      let walker = try #require(FileManager.default.enumerator(atPath: folder))
      for case let path as String in walker where path.hasSuffix(".swift") {
        let text = try String(contentsOfFile: folder + "/" + path, encoding: .utf8)
        let imports = text.split(separator: "\n").filter { $0.hasPrefix("import ") || $0.contains(" import ") }
        if imports.contains(where: { $0.hasSuffix("import Foundation") || $0.contains("import CoreFoundation") }) {
          offenders.append(target + "/" + path)
        }
      }
    }
    #expect(offenders.isEmpty, "these import Foundation: \(offenders)")
  }

  /// The folder of the Swift runtime this test process loaded: the toolchain's library folder.
  static var toolchainLibraries: String? {
    // Read to the end: procfs files say they are empty, so a read sized by stat gets nothing.
    guard
      let maps = FileHandle(forReadingAtPath: "/proc/self/maps").map({
        String(decoding: $0.readDataToEndOfFile(), as: UTF8.self)
      })
    else { return nil }
    return maps.split(separator: "\n").lazy.compactMap { line -> String? in
      guard let path = line.split(separator: " ", omittingEmptySubsequences: true).last,
        path.hasSuffix("/libswiftCore.so")
      else { return nil }
      return String(path.dropLast("/libswiftCore.so".count))
    }.first
  }

  static let canHideToolchain =
    getuid() == 0 && toolchainLibraries != nil
    && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")

  @Test(
    "The C example, built through the installed pkg-config file, runs with the toolchain's libraries hidden",
    .enabled(if: canHideToolchain, "needs root and unshare (a mount namespace over the toolchain's library folder)"))
  func cGameWithoutToolchain() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-install-run")
    let installed = try Self.install(in: directory)
    let toolchain = try #require(Self.toolchainLibraries)

    // Built as a game's build would: the flags from pkg-config, strict warnings, C99.
    let flags = try Self.output(
      "/usr/bin/pkg-config", ["--cflags", "--libs", "leitmotif"], in: directory,
      environment: ["PKG_CONFIG_PATH": installed.pkgConfigFolder])
    let game = directory.file("c-game")
    let compile = try CGame.run(
      CGame.compiler,
      ["-std=c99", "-Wall", "-Wextra", "-Werror", CGame.repository + "/Examples/c-game/game.c"]
        + flags.split(whereSeparator: \.isWhitespace).map(String.init)
        + ["-Wl,-rpath,\(installed.prefix)/lib", "-lm", "-o", game], in: directory)
    try #require(compile.status == 0, "\(compile.errors)")

    // Run inside a mount namespace where the toolchain's library folder is an empty tmpfs.
    func hidden(_ arguments: [String]) throws -> CGame.Run {
      let script =
        "mount -t tmpfs leitmotif-no-toolchain \(CGame.shellCommand([toolchain])) && test ! -e "
        + CGame.shellCommand([toolchain + "/libswiftCore.so"]) + " && exec " + CGame.shellCommand([game] + arguments)
      return try CGame.run("/usr/bin/unshare", ["-m", "/bin/sh", "-c", script], in: directory)
    }
    let cues = CGame.repository + "/Assets/cues.json5"
    let selfTest = try hidden(["--self-test", "--cues", cues])
    #expect(selfTest.status == 0, "\(selfTest.output)\(selfTest.errors)")
    #expect(selfTest.output.contains("ok   the library's version is the header's"), "\(selfTest.output)")
    #expect(!selfTest.output.contains("FAIL"), "\(selfTest.output)")

    let wav = directory.file("game.wav")
    let play = try hidden(["--offline", wav, "--seconds", "12", "--cues", cues])
    #expect(play.status == 0, "\(play.output)\(play.errors)")
    #expect(play.output.contains("game: rendered 576000 frames"), "\(play.output)")
    let samples = try DemoTests.floatSamples(wav)
    #expect(samples.count == 12 * 48_000 * 2)
    #expect(samples.contains { abs($0) > 0.05 }, "the music plays")

    // And the same program sees the toolchain when nothing is hidden: the hiding is what was tested.
    let maps = try CGame.run("/usr/bin/ldd", [game], in: directory)
    #expect(maps.output.contains("\(installed.prefix)/lib/libleitmotif.so.\(installed.major)"), "\(maps.output)")
    #expect(!maps.output.contains(toolchain), "\(maps.output)")
  }

  @Test(
    "make deb builds libleitmotif0 and libleitmotif-dev: Debian's libraries as Depends, the pkg-config file on pkg-config's own path"
  )
  func debianPackages() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-deb")
    let run = try Self.make(["deb"], in: directory)
    try #require(run.status == 0, "make deb failed: \(run.output)\(run.errors)")
    let version = try Self.version
    let major = String(version.prefix { $0 != "." })
    let architecture = try Self.output("/usr/bin/dpkg", ["--print-architecture"], in: directory)
      .trimmingCharacters(in: .whitespacesAndNewlines)
    let library = CGame.repository + "/.build/deb/libleitmotif\(major)_\(version)-1_\(architecture).deb"
    let development = CGame.repository + "/.build/deb/libleitmotif-dev_\(version)-1_\(architecture).deb"

    let depends = try Self.output("/usr/bin/dpkg-deb", ["-f", library, "Depends"], in: directory)
    for package in [
      "libopenal1 (>= ", "libvorbisfile3", "libmpg123-0", "libflac12", "libopusfile0", "libsndfile1", "libsqlite3-0",
      "libc6",
    ] {
      #expect(depends.contains(package), "Depends: \(depends)")
    }
    #expect(!depends.contains("swift"), "\(depends)")
    let devDepends = try Self.output("/usr/bin/dpkg-deb", ["-f", development, "Depends"], in: directory)
    #expect(devDepends.contains("libleitmotif\(major) (= \(version)-1)"), "\(devDepends)")

    // The files, unpacked as dpkg would: the library under the multiarch folder, the link and
    // the pkg-config file in the dev package, that folder on pkg-config's default search path.
    let root = directory.file("root")
    for deb in [library, development] { _ = try Self.output("/usr/bin/dpkg-deb", ["-x", deb, root], in: directory) }
    let pcPath = try Self.output("/usr/bin/pkg-config", ["--variable", "pc_path", "pkg-config"], in: directory)
      .trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ":").map(String.init)
    let pcFolder = try #require(
      pcPath.first { FileManager.default.fileExists(atPath: root + $0 + "/leitmotif.pc") },
      "leitmotif.pc is in none of pkg-config's folders \(pcPath)")
    let pc = try String(contentsOfFile: root + pcFolder + "/leitmotif.pc", encoding: .utf8)
    let libdir = try #require(pc.split(separator: "\n").first { $0.hasPrefix("libdir=") }?.dropFirst("libdir=".count))
    #expect(FileManager.default.fileExists(atPath: "\(root)\(libdir)/libleitmotif.so.\(version)"), "\(pc)")
    #expect(
      try FileManager.default.destinationOfSymbolicLink(atPath: "\(root)\(libdir)/libleitmotif.so.\(major)")
        == "libleitmotif.so.\(version)")
    #expect(
      try FileManager.default.destinationOfSymbolicLink(atPath: "\(root)\(libdir)/libleitmotif.so")
        == "libleitmotif.so.\(major)")
    #expect(FileManager.default.fileExists(atPath: "\(root)/usr/include/leitmotif.h"))
    #expect(FileManager.default.fileExists(atPath: "\(root)/usr/include/leitmotif.hpp"))
  }
}
