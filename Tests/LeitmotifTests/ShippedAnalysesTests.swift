import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif

/// A game's bundled music ships its analyses (`FOLDER/.leitmotif/analysis`), so the catalogue
/// reads them instead of decoding every piece at a player's first launch.
@Suite("Shipped analyses: made once beside the bundled music, read before anything is decoded")
struct ShippedAnalysesTests {
  /// A music folder with two pieces, and a player's cache folder of its own (empty).
  struct Game {
    let directory: TemporaryDirectory
    let music: String
    let environment: [String: String]
    var cache: String { directory.file("cache") + "/leitmotif/analysis" }

    init() throws {
      directory = try TemporaryDirectory(prefix: "leitmotif-shipped")
      music = directory.file("music")
      try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
      environment = ["XDG_CACHE_HOME": directory.file("cache")]
      for (name, amplitude) in [("calm.ogg", Float(0.1)), ("battle.ogg", Float(0.4))] {
        let samples = ToneGenerator.sine(frequency: 440, amplitude: amplitude, seconds: 2, format: .stereo48000)
        try VorbisEncoder.encode(samples: samples, format: .stereo48000, to: music + "/" + name)
      }
    }

    func shippedEntries() -> [String] {
      ((try? FileManager.default.contentsOfDirectory(atPath: music + "/.leitmotif/analysis")) ?? []).sorted()
    }

    func cachedEntries() -> [String] {
      ((try? FileManager.default.contentsOfDirectory(atPath: cache)) ?? []).filter { $0.hasSuffix(".json") }
    }
  }

  @Test("write measures each piece once; check then finds them current, and the catalogue decodes nothing")
  func writeThenRead() throws {
    let game = try Game()
    let folder = URL(fileURLWithPath: game.music)
    let before = try ShippedAnalyses.check(folder: folder)
    #expect(before.missing == ["battle.ogg", "calm.ogg"] && before.current.isEmpty)
    #expect(game.shippedEntries().isEmpty, "check writes nothing")

    // Written through a cache of its own, so the player's cache below stays empty.
    let written = try ShippedAnalyses.write(folder: folder, environment: ["XDG_CACHE_HOME": game.directory.file("dev")])
    #expect(written.missing == ["battle.ogg", "calm.ogg"] && written.failures.isEmpty)
    #expect(game.shippedEntries().count == 2)
    let after = try ShippedAnalyses.check(folder: folder)
    #expect(after.current == ["battle.ogg", "calm.ogg"] && after.missing.isEmpty && after.unused.isEmpty)

    // Mark one shipped entry, so that reading it shows: a measurement would give the real energy.
    let calm = game.music + "/calm.ogg"
    let key = try #require(AnalysisCache.key(forFileAt: calm))
    var marked = try AudioAnalysis.measure(path: calm)
    marked.energy = 0.123
    try #require(AnalysisCache.encode(marked)).write(
      to: URL(fileURLWithPath: game.music + "/.leitmotif/analysis/" + key + ".json"))

    let catalog = BundledCatalog(directory: folder, analyzing: true, environment: game.environment)
    #expect(catalog.failures.isEmpty, "\(catalog.failures)")
    #expect(catalog.relativePaths == ["battle.ogg", "calm.ogg"])
    #expect(catalog.item(relativePath: "calm.ogg")?.energy == 0.123)
    #expect(catalog.item(relativePath: "battle.ogg")?.loudness != nil)
    #expect(game.cachedEntries().isEmpty, "nothing measured, so nothing stored in the player's cache")
    // The shipped folder is hidden: not music.
    #expect(catalog.items.count == 2)
  }

  @Test("A piece changed after its analysis was shipped is measured at run time; write replaces the entry")
  func changedPiece() throws {
    let game = try Game()
    let folder = URL(fileURLWithPath: game.music)
    _ = try ShippedAnalyses.write(folder: folder, environment: game.environment)
    let oldEntries = game.shippedEntries()

    // New bytes under the same name: the old entry no longer matches anything.
    let samples = ToneGenerator.sine(frequency: 440, amplitude: 0.2, seconds: 3, format: .stereo48000)
    try VorbisEncoder.encode(samples: samples, format: .stereo48000, to: game.music + "/calm.ogg")
    let key = try #require(AnalysisCache.key(forFileAt: game.music + "/calm.ogg"))
    let check = try ShippedAnalyses.check(folder: folder)
    #expect(check.missing == ["calm.ogg"] && check.current == ["battle.ogg"])
    #expect(check.unused.count == 1 && !check.unused.contains(key + ".json"))

    let player = ["XDG_CACHE_HOME": game.directory.file("player")]
    let catalog = BundledCatalog(directory: folder, analyzing: true, environment: player)
    let measured = try AudioAnalysis.measure(path: game.music + "/calm.ogg")
    #expect(catalog.item(relativePath: "calm.ogg")?.loudness == measured.loudness)
    #expect(
      (try? FileManager.default.contentsOfDirectory(atPath: game.directory.file("player") + "/leitmotif/analysis"))?
        .contains(key + ".json") == true, "the player's cache keeps what was measured")

    let rewritten = try ShippedAnalyses.write(folder: folder, environment: game.environment)
    #expect(rewritten.missing == ["calm.ogg"] && rewritten.unused == check.unused)
    #expect(game.shippedEntries().count == 2 && game.shippedEntries() != oldEntries)
    #expect(game.shippedEntries().contains(key + ".json"))
    #expect(try ShippedAnalyses.check(folder: folder).missing.isEmpty)
  }

  @Test("A piece that does not decode is a failure naming it; a missing folder is an error naming it")
  func failures() throws {
    let game = try Game()
    try Data("not audio at all".utf8).write(to: URL(fileURLWithPath: game.music + "/broken.ogg"))
    let report = try ShippedAnalyses.write(folder: URL(fileURLWithPath: game.music), environment: game.environment)
    #expect(report.failures.map(\.relativePath) == ["broken.ogg"], "\(report.failures)")
    #expect(report.missing == ["battle.ogg", "calm.ogg"])

    let nowhere = game.directory.file("nowhere")
    #expect(throws: ShippedAnalyses.Failure.self) { try ShippedAnalyses.check(folder: URL(fileURLWithPath: nowhere)) }
    do {
      _ = try ShippedAnalyses.check(folder: URL(fileURLWithPath: nowhere))
    } catch {
      #expect(error.description == "\(nowhere): cannot read the folder: No such file or directory")
    }
  }

  @Test("cues check warns at `assets` when the folder ships analyses but not for every piece; not when it ships none")
  func checkWarns() throws {
    let game = try Game()
    let cues = game.directory.file("cues.json5")
    try """
    {
      assets: "music",
      sources: { calm: { bundled: "calm.ogg" }, battle: { bundled: "battle.ogg" } },
      states: { explore: { music: "calm" }, fight: { music: "battle" } },
      start: "explore",
      rules: [{ on: "fight", do: { state: "fight" } }],
    }
    """.write(toFile: cues, atomically: true, encoding: .utf8)
    func warnings() -> [String] {
      CueSheet.check(path: cues).problems.filter { $0.severity == .warning }.map(\.description)
    }
    #expect(warnings().isEmpty, "no shipped analyses: nothing to say")

    _ = try ShippedAnalyses.write(folder: URL(fileURLWithPath: game.music), environment: game.environment)
    #expect(warnings().isEmpty, "every piece shipped")

    // A piece replaced after the analyses were made.
    let samples = ToneGenerator.sine(frequency: 330, amplitude: 0.2, seconds: 2, format: .stereo48000)
    try VorbisEncoder.encode(samples: samples, format: .stereo48000, to: game.music + "/calm.ogg")
    #expect(
      warnings() == [
        "\(cues):2:11: warning: assets: 1 of the 2 bundled pieces has no current analysis in "
          + "music/.leitmotif/analysis (\"calm.ogg\"), so a player's first launch decodes it: "
          + "run `leitmotif cues analyze \(URL(fileURLWithPath: game.music).standardizedFileURL.path)`"
      ])
  }

  @Test("A cue file's load analyses the pieces it plays and no other file of the folder")
  func onlyPiecesPlayedAnalysed() throws {
    let game = try Game()
    // A third piece in the folder that no source names (an alternate take, a sound effect).
    let samples = ToneGenerator.sine(frequency: 220, amplitude: 0.3, seconds: 2, format: .stereo48000)
    try VorbisEncoder.encode(samples: samples, format: .stereo48000, to: game.music + "/unused.ogg")
    let cues = game.directory.file("cues.json5")
    try """
    {
      assets: "music",
      sources: { calm: { bundled: "calm.ogg" } },
      states: { explore: { music: "calm" } },
      start: "explore",
      rules: [{ on: "hit", do: { stinger: "battle.ogg" } }],
    }
    """.write(toFile: cues, atomically: true, encoding: .utf8)
    let sheet = try CueSheet.load(path: cues)
    let catalog = try #require(sheet.catalog)
    // Every file is listed with its tags (the checks need them), but only the source's piece and
    // the stinger's file were decoded for their analysis: the load used to decode every file.
    #expect(catalog.relativePaths == ["battle.ogg", "calm.ogg", "unused.ogg"])
    #expect(catalog.item(relativePath: "calm.ogg")?.loudness != nil)
    #expect(catalog.item(relativePath: "battle.ogg")?.loudness != nil)
    #expect(catalog.item(relativePath: "unused.ogg")?.loudness == nil)
    #expect(catalog.item(relativePath: "unused.ogg")?.playbackDuration != nil)
    // The level everything is brought to is the median of the music played.
    let played = [catalog.item(relativePath: "calm.ogg")?.loudness, catalog.item(relativePath: "battle.ogg")?.loudness]
      .compactMap { $0 }.sorted()
    #expect(catalog.medianLoudness == (played[0] + played[1]) / 2)
  }

  @Test("The repository's bundled music ships a current analysis of every piece (`make assets` writes them)")
  func bundledMusicIsCurrent() throws {
    let folder = URL(fileURLWithPath: CGame.repository + "/Assets/music")
    let report = try ShippedAnalyses.check(folder: folder)
    #expect(report.current.count >= 9, "\(report.current)")
    #expect(
      report.missing.isEmpty, "stale: run `make assets` (or `leitmotif cues analyze Assets/music`): \(report.missing)")
    #expect(report.unused.isEmpty && report.failures.isEmpty, "\(report)")
  }

  @Test("leitmotif cues analyze: --check fails until the analyses are written, then passes; usage errors are 2")
  func command() throws {
    let game = try Game()
    let check = try LeitmotifCommand.run(["cues", "analyze", "--check", game.music], environment: game.environment)
    #expect(check.status == 1)
    #expect(check.output.contains("calm.ogg: missing") && check.output.contains("2 pieces without a current analysis"))

    let write = try LeitmotifCommand.run(["cues", "analyze", game.music], environment: game.environment)
    #expect(write.status == 0, "\(write.errors)")
    #expect(write.output.hasSuffix("2 measured, 0 current, 0 deleted\n"), "\(write.output)")

    let again = try LeitmotifCommand.run(["cues", "analyze", "--check", game.music], environment: game.environment)
    #expect(again.status == 0)
    #expect(again.output.hasSuffix("2 pieces, each with a current analysis\n"), "\(again.output)")

    for arguments in [["cues", "analyze"], ["cues", "analyze", "--fast", game.music], ["cues", "analyze", "a", "b"]] {
      let usage = try LeitmotifCommand.run(arguments)
      #expect(usage.status == 2, "\(arguments)")
      #expect(usage.errors.contains("leitmotif cues analyze [--check] FOLDER"), "\(usage.errors)")
    }
    let missing = try LeitmotifCommand.run(["cues", "analyze", game.directory.file("nowhere")])
    #expect(missing.status == 2)
    #expect(missing.errors.contains("nowhere: cannot read the folder: No such file or directory"), "\(missing.errors)")
  }
}
