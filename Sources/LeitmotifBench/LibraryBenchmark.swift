import Foundation
import Leitmotif
import LeitmotifFixtures

#if canImport(Glibc)
  import Glibc
#endif

/// `leitmotif-bench library [--items N] [--songs M] [--no-cache]`: scan speed of a synthetic
/// library of N tiny real Ogg Vorbis files (default 100,000) with varied tags, and the time of a
/// rescan with nothing changed (goal: under 3 s at 100,000 items), then of a rescan after 1% of
/// the files were retagged; then the first scan of M songs of real length (default 12: 3.5
/// minutes each, stereo 44.1 kHz Vorbis, drums, bass and chords from `RhythmSynthesizer`), where
/// the whole decode and the analysis (loudness, true peak, tempo, beats, energy) is the cost,
/// and what 100,000 such songs would take at that rate.
///
/// The files (0.05 s of mono 22.05 kHz Vorbis each, a different tone and tags per file, in
/// artist/album folders of 10 files) are made once and kept in
/// `$TMPDIR/leitmotif-bench-cache/library-v1/` (making 100,000 takes minutes); a run with more
/// items than cached makes only the missing ones. The index is made afresh in a temporary
/// directory each run, through the public API (consent is granted for a bench application id
/// whose state lives in that directory). The last step touches 1% of the files (`utimes`: their
/// modification time changes, their content does not), so they are read again.
struct LibraryBenchmark {
  struct Options {
    var items = 100_000
    var songs = 12
    var useCache = true

    init(parsing arguments: [String]) throws {
      var rest = arguments[...]
      while let argument = rest.popFirst() {
        switch argument {
        case "--items":
          guard let value = rest.popFirst(), let count = Int(value), count > 0 else {
            throw UsageError(description: "--items needs a whole number of 1 or more")
          }
          items = count
        case "--songs":
          guard let value = rest.popFirst(), let count = Int(value), count >= 0 else {
            throw UsageError(description: "--songs needs a whole number of 0 or more")
          }
          songs = count
        case "--no-cache": useCache = false
        default: throw UsageError(description: "unknown option \"\(argument)\"")
        }
      }
    }
  }

  static let cacheVersion = "library-v1"
  static let songsCacheVersion = "songs-v1"
  /// A typical song's length.
  static let songSeconds = 210.0
  static let goalRescanSeconds = 3.0
  static let goalItems = 100_000

  let options: Options

  struct YesPrompt: AuthorizationPrompt {
    func askForLibraryAccess(applicationName: String, usageDescription: String) -> Bool? { true }
  }

  func run() throws {
    let temporary = try TemporaryDirectory(prefix: "leitmotif-bench-library")
    let folder: String
    if options.useCache {
      let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
      folder = "\(base)/leitmotif-bench-cache/\(Self.cacheVersion)"
    } else {
      folder = temporary.path + "/music"
    }
    let made = try Self.makeFiles(count: options.items, in: folder)
    // Only the first `items` files: a library folder per bench run that holds exactly them.
    let music = folder + "/items-\(options.items)"
    let library = try Self.library(of: music, in: temporary.path + "/items")

    progress("first scan of \(options.items) files")
    let first = try library.scan()
    progress("rescan with nothing changed")
    let unchanged = try library.scan()
    // Touch 1% (the mtime changes, the content does not): read again, updated in place.
    let touchedCount = max(1, options.items / 100)
    for index in stride(from: 0, to: options.items, by: options.items / touchedCount).prefix(touchedCount) {
      let path = music + "/" + Self.relativePath(index)
      utimes(path, nil)
    }
    progress("rescan with \(touchedCount) files touched")
    let touched = try library.scan()

    let scale = Double(Self.goalItems) / Double(options.items)
    print("library scan (\(options.items) items; files made this run: \(made))")
    var table = TextTable(["measure", "figure", "goal"])
    table.add([
      "first scan",
      String(
        format: "%.0f files/s (%.1f s, %d added, %d failed)", Double(first.added) / first.durationSeconds,
        first.durationSeconds, first.added, first.failed.count), "-",
    ])
    table.add([
      "rescan, nothing changed",
      String(format: "%.3f s (%d unchanged)", unchanged.durationSeconds, unchanged.unchanged)
        + (options.items == Self.goalItems
          ? "" : String(format: "; x%.1f = %.2f s at 100,000", scale, unchanged.durationSeconds * scale)),
      String(format: "< %.0f s at 100,000 items", Self.goalRescanSeconds),
    ])
    table.add([
      "rescan, 1% touched",
      String(
        format: "%.3f s (%d updated, %.0f changed files/s)", touched.durationSeconds, touched.updated,
        Double(touched.updated) / touched.durationSeconds), "-",
    ])
    if options.songs > 0 {
      let songsFolder =
        options.useCache
        ? (folder as NSString).deletingLastPathComponent + "/\(Self.songsCacheVersion)" : temporary.path + "/songs"
      let songsMade = try Self.makeSongs(count: options.songs, in: songsFolder)
      let songs = try Self.library(of: songsFolder + "/songs-\(options.songs)", in: temporary.path + "/songs")
      progress("first scan of \(options.songs) songs of \(Int(Self.songSeconds)) s")
      let scan = try songs.scan()
      let perSecond = Double(scan.added) / scan.durationSeconds
      table.add([
        "first scan, real-length songs",
        String(
          format: "%.2f songs/s (%d of %.0f s in %.1f s: %.0fx real time; %d made this run)", perSecond, scan.added,
          Self.songSeconds, scan.durationSeconds, perSecond * Self.songSeconds, songsMade), "-",
      ])
      table.add([
        "  100,000 such songs",
        String(format: "%.1f hours at that rate (one reading thread at nice 10)", 100_000 / perSecond / 3600), "-",
      ])
    }
    print(table.render())
  }

  /// A library of the one folder `music`, its state and index in `directory`, authorized.
  static func library(of music: String, in directory: String) throws -> MediaLibrary {
    var configuration = MediaLibrary.Configuration(
      applicationID: "leitmotif-bench", usageDescription: "The benchmark scans a synthetic library.",
      folders: [URL(fileURLWithPath: music)])
    configuration.stateDirectory = URL(fileURLWithPath: directory + "/state")
    configuration.cacheDirectory = URL(fileURLWithPath: directory + "/cache")
    configuration.environment = ["HOME": directory]
    configuration.policyFile = URL(fileURLWithPath: directory + "/no-policy.json")
    let library = MediaLibrary(configuration: configuration, prompt: YesPrompt()) { diagnostic in
      progress("\(diagnostic)")
    }
    let status = try library.requestAuthorization()
    guard status == .authorized else {
      throw UsageError(description: "the bench could not authorize itself: \(status)")
    }
    return library
  }

  /// Songs of `songSeconds` (tempos 80 to 170 BPM, the five drum styles) under `folder/all/`,
  /// those missing, linked into `folder/songs-count/`. Returns how many it made.
  static func makeSongs(count: Int, in folder: String) throws -> Int {
    let fileManager = FileManager.default
    let view = folder + "/songs-\(count)"
    try fileManager.createDirectory(atPath: folder + "/all", withIntermediateDirectories: true)
    try fileManager.createDirectory(atPath: view, withIntermediateDirectories: true)
    let styles = RhythmSynthesizer.Style.allCases
    var made = 0
    for index in 0..<count {
      let name = String(format: "song-%03d.ogg", index)
      let path = folder + "/all/" + name
      if !fileManager.fileExists(atPath: path) {
        progress("making song \(index + 1) of \(count)")
        let song = RhythmSynthesizer.song(
          bpm: 80 + Double(index * 37 % 91), rate: 44_100, style: styles[index % styles.count],
          seconds: songSeconds, leadIn: 0.4, pickup: index % 3 == 0, harmony: true, seed: UInt64(index) &+ 0x50_6E6)
        let partial = path + ".partial"
        try VorbisEncoder.encode(
          samples: song.samples, format: song.format,
          tags: [("TITLE", "Song \(index)"), ("ARTIST", "Bench Band")], quality: 0.4, to: partial)
        guard rename(partial, path) == 0 else { throw UsageError(description: "cannot rename \(partial)") }
        made += 1
      }
      let linked = view + "/" + name
      if !fileManager.fileExists(atPath: linked) {
        guard link(path, linked) == 0 else { throw UsageError(description: "cannot link \(linked)") }
      }
    }
    return made
  }

  /// Artist/album/track folders: 10 tracks per album, 10 albums per artist.
  static func relativePath(_ index: Int) -> String {
    String(format: "artist-%05d/album-%02d/%02d track %d.ogg", index / 100, (index / 10) % 10, index % 10, index)
  }

  /// Makes the files 0..<count under `folder/all/`, those missing, and links exactly them into
  /// `folder/items-count/` (hard links: the scan sees ordinary files). Returns how many it made.
  static func makeFiles(count: Int, in folder: String) throws -> Int {
    let all = folder + "/all"
    let view = folder + "/items-\(count)"
    let format = PCMFormat.mono22050
    let genres = ["Ambient", "Battle", "Chiptune", "Orchestral", "Synthwave", "Folk", "Jazz", "Électro"]
    var made = 0
    let fileManager = FileManager.default
    let start = Date()
    for index in 0..<count {
      let relative = relativePath(index)
      let path = all + "/" + relative
      if !fileManager.fileExists(atPath: path) {
        try fileManager.createDirectory(
          atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let frequency = 110 + Double(index % 4000) * 0.5 + Double(index / 4000) * 0.013
        let tags = [
          ("TITLE", "Track \(index) — \(["Theme", "Reprise", "Interlude", "Boss"][index % 4])"),
          ("ARTIST", "Artist \(index / 100)"), ("ALBUM", "Album \(index / 10)"),
          ("GENRE", genres[index % genres.count]), ("TRACKNUMBER", "\(index % 10 + 1)"),
          ("BPM", "\(80 + index % 100)"),
        ]
        let partial = path + ".partial"
        try VorbisEncoder.encode(
          samples: ToneGenerator.sine(frequency: frequency, seconds: 0.05, format: format), format: format,
          tags: tags, quality: 0.1, to: partial)
        guard rename(partial, path) == 0 else { throw UsageError(description: "cannot rename \(partial)") }
        made += 1
        if made % 5_000 == 0 {
          progress(String(format: "made %d files (%.0f s)", made, Date().timeIntervalSince(start)))
        }
      }
      let linked = view + "/" + relative
      if !fileManager.fileExists(atPath: linked) {
        try fileManager.createDirectory(
          atPath: (linked as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        guard link(path, linked) == 0 else { throw UsageError(description: "cannot link \(linked)") }
      }
    }
    return made
  }
}
