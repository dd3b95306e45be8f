import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifAnalysis
@testable import LeitmotifCues
@testable import LeitmotifLibrary

/// Loudness as EBU R128 measures it, and the levelling the director does with it.
@Suite("Loudness: measured at scan, stored, and every item levelled to one target")
struct LoudnessTests {
  /// R128 of `samples` (interleaved, `channels`), as the analysis measures it.
  static func measure(_ samples: [Float], channels: Int, rate: Int = 48_000) throws -> LoudnessMeter {
    let meter = try #require(LoudnessMeter(channels: channels, sampleRate: rate))
    samples.withUnsafeBufferPointer { meter.add($0.baseAddress!, frames: samples.count / channels) }
    return meter
  }

  @Test("A 997 Hz sine at -20 dBFS reads -20 LUFS and -20 dBTP, stereo or mono (played on both speakers)")
  func sineReference() throws {
    // EBU Tech 3341's reference: a 997 Hz sine at 0 dBFS on both channels is 0 LUFS (within 0.1).
    let amplitude: Float = 0.1
    let mono = ToneGenerator.sine(
      frequencies: [997], amplitude: amplitude, frameCount: 10 * 48_000, sampleRate: 48_000)
    let stereo = ToneGenerator.sine(
      frequencies: [997, 997], amplitude: amplitude, frameCount: 10 * 48_000, sampleRate: 48_000)
    for (samples, channels) in [(stereo, 2), (mono, 1)] {
      let meter = try Self.measure(samples, channels: channels)
      let loudness = try #require(meter.integratedLoudness)
      #expect(abs(loudness - -20) < 0.1, "\(channels) channels: \(loudness) LUFS")
      let peak = try #require(meter.truePeak)
      #expect(abs(peak - -20) < 0.1, "true peak \(peak)")
      #expect(try #require(meter.loudnessRange) < 0.5, "a steady tone has no loudness range")
    }
    let louder = try Self.measure(stereo.map { $0 * 2 }, channels: 2)
    #expect(abs(try #require(louder.integratedLoudness) - -13.98) < 0.1, "6.02 dB louder")
  }

  @Test("The true peak counts peaks between samples: a quarter-rate sine sampled 45 degrees off its crests")
  func interSamplePeaks() throws {
    // At a quarter of the rate, sampled at 45 degrees, every sample is at 0.707 of the crest:
    // the sample peak is 3 dB under the true one. After 2 s of a quiet tone (the meter skips
    // chunks that cannot reach the peak so far), then the burst.
    let rate = 48_000
    var samples = ToneGenerator.sine(frequencies: [440, 440], amplitude: 0.05, frameCount: 2 * rate, sampleRate: rate)
    for frame in 0..<rate {
      let value = Float(0.5 * sin(Double.pi / 2 * Double(frame) + Double.pi / 4))
      samples += [value, -value]
    }
    var meter = TruePeakMeter(channels: 2, sampleRate: rate)
    samples.withUnsafeBufferPointer { meter.add($0.baseAddress!, frames: samples.count / 2) }
    let peak = try #require(meter.decibels)
    #expect(abs(peak - 20 * log10(0.5)) < 0.2, "true peak \(peak) dBTP, the crest -6.02, the samples -9.03")
    // Fed in odd-sized blocks, the same figure.
    var pieces = TruePeakMeter(channels: 2, sampleRate: rate)
    var start = 0
    for size in [1, 7, 255, 256, 257, 4096] where start < samples.count / 2 {
      let frames = min(size, samples.count / 2 - start)
      samples.withUnsafeBufferPointer { pieces.add($0.baseAddress! + 2 * start, frames: frames) }
      start += frames
    }
    samples.withUnsafeBufferPointer { pieces.add($0.baseAddress! + 2 * start, frames: samples.count / 2 - start) }
    #expect(pieces.decibels == meter.decibels)
  }

  @Test("Silence has no loudness and no peak; a file's analysis agrees with its PCM within 0.3 LU")
  func files() throws {
    let silent = try Self.measure([Float](repeating: 0, count: 96_000), channels: 2)
    #expect(silent.integratedLoudness == nil && silent.truePeak == nil)

    let directory = try TemporaryDirectory()
    let samples = ToneGenerator.musicLike(seed: 3, frameCount: 6 * 48_000, format: .stereo48000)
    let pcm = try #require(try Self.measure(samples, channels: 2).integratedLoudness)
    for (name, write) in [
      (
        "a.ogg", { (path: String) throws in try VorbisEncoder.encode(samples: samples, format: .stereo48000, to: path) }
      ),
      ("a.flac", { (path: String) throws in try FLACEncoder.encode(samples: samples, format: .stereo48000, to: path) }),
    ] {
      let path = directory.file(name)
      try write(path)
      let analysis = try AudioAnalysis.measure(path: path)
      let loudness = try #require(analysis.loudness)
      #expect(abs(loudness - pcm) < 0.3, "\(name): \(loudness) LUFS, the PCM \(pcm)")
      #expect(analysis.truePeak != nil && analysis.loudnessRange != nil)
    }
  }

  @Test("The analysis cache keys by content: a copy elsewhere is not measured again, a changed file is")
  func cacheByContent() throws {
    let directory = try TemporaryDirectory()
    let cache = AnalysisCache(environment: ["XDG_CACHE_HOME": directory.file("cache")])
    let path = try EngineHarness.vorbisTone(in: directory, name: "a.ogg", seconds: 1, amplitude: 0.2)
    let key = try #require(AnalysisCache.key(forFileAt: path))
    #expect(cache.analysis(for: key) == nil)
    let first = try cache.analysis(ofFileAt: path)
    #expect(cache.analysis(for: key) == first, "stored")
    try FileManager.default.copyItem(atPath: path, toPath: directory.file("copy.ogg"))
    #expect(AnalysisCache.key(forFileAt: directory.file("copy.ogg")) == key)
    // A stored entry is what a copy gets: make it recognisable, then ask for the copy.
    var marked = first
    marked.energy = 0.123
    cache.store(marked, for: key)
    #expect(try cache.analysis(ofFileAt: directory.file("copy.ogg")).energy == 0.123)
    let other = try EngineHarness.vorbisTone(in: directory, name: "b.ogg", seconds: 1, amplitude: 0.4)
    #expect(AnalysisCache.key(forFileAt: other) != key)
    #expect(AnalysisCache.key(forFileAt: directory.file("missing.ogg")) == nil)
  }

  // MARK: - The library

  @Test("A scan measures each song from its one decode and stores it; a rescan opens nothing")
  func scanStoresLoudness() throws {
    let library = try LibraryFolder()
    let quiet = library.music + "/quiet.ogg"
    let loud = library.music + "/loud.ogg"
    for (path, amplitude) in [(quiet, Float(0.05)), (loud, Float(0.5))] {
      let samples = ToneGenerator.sine(frequency: 997, amplitude: amplitude, seconds: 5, format: .stereo48000)
      try VorbisEncoder.encode(
        samples: samples, format: .stereo48000, tags: [("REPLAYGAIN_TRACK_GAIN", "-3.5 dB")], to: path)
    }
    let index = try DirectIndex(path: library.indexPath)
    _ = try library.scanner.scan(through: index)
    let quietItem = try #require(try index.item(at: quiet))
    let loudItem = try #require(try index.item(at: loud))
    let quietLoudness = try #require(quietItem.loudness)
    let loudLoudness = try #require(loudItem.loudness)
    #expect(abs(loudLoudness - quietLoudness - 20) < 0.3, "\(loudLoudness) against \(quietLoudness)")
    let pcm = ToneGenerator.sine(frequency: 997, amplitude: 0.05, seconds: 5, format: .stereo48000)
    let expected = try #require(try Self.measure(pcm, channels: 2).integratedLoudness)
    #expect(abs(quietLoudness - expected) < 0.3, "\(quietLoudness) LUFS, its PCM \(expected)")
    #expect(try #require(loudItem.truePeak) > -6.5)
    #expect(loudItem.replayGainTrackDecibels == -3.5, "ReplayGain tags are kept for library items too")
    // By loudness, as a query.
    let query = MediaQuery(filterPredicates: [
      MediaPropertyPredicate(value: -20.0, forProperty: .loudness, comparisonType: .greaterThan)
    ])
    let found = try index.index.run(query).items
    #expect(found.map { $0.assetURL.path } == [loud])
    let again = try library.scanner.scan(through: index)
    #expect(again.filesOpened == 0 && again.unchanged == 2)
  }

  @Test("A version-1 index is migrated in place: play counts kept, and the next scan analyses its songs")
  func migration() throws {
    let library = try LibraryFolder()
    let path = try library.song("one.ogg", frequency: 440, title: "One")
    do {
      // An index as version 1 wrote it: its items table, one song played 7 times.
      try FileManager.default.createDirectory(
        atPath: (library.indexPath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
      let database = try SQLiteDatabase(path: library.indexPath)
      try database.execute(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '1');
        CREATE TABLE items (
          persistent_id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, size INTEGER NOT NULL,
          mtime_ns INTEGER NOT NULL, fingerprint TEXT NOT NULL,
          title TEXT, artist TEXT, album_title TEXT, album_artist TEXT, genre TEXT, composer TEXT,
          duration REAL, track_number INTEGER, disc_number INTEGER, bpm REAL, year INTEGER,
          play_count INTEGER NOT NULL DEFAULT 0, skip_count INTEGER NOT NULL DEFAULT 0,
          last_played REAL, date_added REAL NOT NULL, rating INTEGER NOT NULL DEFAULT 0,
          is_compilation INTEGER NOT NULL DEFAULT 0, sample_rate INTEGER,
          title_key TEXT, artist_key TEXT, album_key TEXT, album_artist_key TEXT, genre_key TEXT,
          composer_key TEXT, title_sort TEXT, artist_sort TEXT, album_sort TEXT, album_artist_sort TEXT
        );
        CREATE INDEX items_bpm ON items(bpm);
        """)
      let file = try #require(FolderWalker.status(of: path))
      try database.prepare(
        """
        INSERT INTO items (persistent_id, path, size, mtime_ns, fingerprint, title, play_count, date_added)
        VALUES (42, ?, ?, ?, 'abc', 'One', 7, 0)
        """
      ).run([.text(path), .integer(file.sizeBytes), .integer(file.modificationNanoseconds)])
    }
    var warnings: [String] = []
    let index = try DirectIndex(path: library.indexPath) { warnings.append($0) }
    #expect(warnings.isEmpty, "migrated, not rebuilt: \(warnings)")
    let before = try #require(try index.item(at: path))
    #expect(before.playCount == 7 && before.loudness == nil && before.persistentID == 42)
    let report = try library.scanner.scan(through: index)
    #expect(report.updated == 1 && report.filesOpened == 1, "\(report)")
    let after = try #require(try index.item(at: path))
    #expect(after.playCount == 7 && after.truePeak != nil && after.persistentID == before.persistentID)
    let version = try index.index.database.prepare("SELECT analysis_version FROM items").rows()
    #expect(version == [[.integer(Int64(AudioAnalysis.version))]])
  }

  @Test("The fingerprint from the scan's one decode is the one seeking to its windows gives")
  func fingerprintInOnePass() throws {
    let directory = try TemporaryDirectory()
    let path = try EngineHarness.vorbisTone(in: directory, seconds: 7, frequency: 523)
    let seeking = try AudioFingerprint.compute(try AudioFile.openDecoder(path: path))
    let decoder = try AudioFile.openDecoder(path: path)
    var accumulator = AudioFingerprint.Accumulator(decoder: decoder)
    _ = try AudioAnalysis.measure(decoder) { accumulator.add(startFrame: $0, samples: $1, frames: $2) }
    #expect(accumulator.windows.count == 2)
    #expect(accumulator.value == seeking)
  }

  // MARK: - The director

  /// `loud.ogg` (a 440 Hz tone at -6 dBFS) and `quiet.ogg` (660 Hz at -26 dBFS), 4 s each, in a
  /// fresh director fixture; the state plays quiet, then loud.
  func twoLevels(_ loudness: String) throws -> (left: [Float], sheet: CueSheet) {
    let game = try DirectorFixture()
    try DirectorFixture.tone(game.assets + "/loud.ogg", pitch: 440, seconds: 4, amplitude: 0.5, tags: [])
    try DirectorFixture.tone(game.assets + "/quiet.ogg", pitch: 660, seconds: 4, amplitude: 0.05, tags: [])
    let sheet = try game.sheet(
      """
      { start: "s", assets: "assets", \(loudness)
        sources: { music: { bundled: ["quiet.ogg", "loud.ogg"] } },
        states: { s: { music: "music", transition: { seconds: 0 }, between: "gapless" } } }
      """)
    return (try game.simulate(sheet, [], seconds: 7.5).left, sheet)
  }

  /// Short-term loudness (3 s) of the left channel from `from` seconds, as both speakers play it.
  static func shortTerm(_ left: [Float], from: Double) throws -> Double {
    let start = Int(from * 48_000)
    let meter = try measure(Array(left[start..<(start + 3 * 48_000)]), channels: 1)
    return try #require(meter.integratedLoudness)
  }

  @Test("Consecutive items 20 LU apart play within 1 LU of each other, at the bundled music's median")
  func consecutiveItemsMatch() throws {
    let (left, sheet) = try twoLevels("")
    let quiet = try Self.shortTerm(left, from: 0.5)
    let loud = try Self.shortTerm(left, from: 4.5)
    #expect(abs(loud - quiet) < 1, "quiet item \(quiet) LUFS, loud item \(loud) LUFS")
    let median = try #require(sheet.catalog?.medianLoudness)
    #expect(abs(quiet - median) < 1, "at the median \(median)")
    // Levelling off: they differ by what the files do.
    let (plain, _) = try twoLevels(#"loudness: "off","#)
    let difference = try Self.shortTerm(plain, from: 4.5) - Self.shortTerm(plain, from: 0.5)
    #expect(abs(difference - 20) < 1, "\(difference)")
  }

  @Test("loudness.target sets the level; a boost stops at the true-peak ceiling")
  func targetAndCeiling() throws {
    let (left, _) = try twoLevels("loudness: { target: -30 },")
    #expect(abs(try Self.shortTerm(left, from: 0.5) - -30) < 0.5)
    #expect(abs(try Self.shortTerm(left, from: 4.5) - -30) < 0.5)
    // 0 LUFS is out of reach of both. The loud item is raised until its true peak is at the
    // -1 dBTP ceiling; the quiet one (whose ceiling is 24 dB up) by the 20 dB a boost may take.
    let (boosted, _) = try twoLevels("loudness: { target: 0, truePeak: -1 },")
    let (plain, _) = try twoLevels(#"loudness: "off","#)
    let window = boosted[Int(4.5 * 48_000)..<Int(7.4 * 48_000)]
    let peak = 20 * log10(Double(window.map { abs($0) }.max() ?? 0))
    #expect(peak < -0.9 && peak > -1.6, "loud item's peak \(peak) dBFS")
    let raised = try Self.shortTerm(boosted, from: 0.5) - Self.shortTerm(plain, from: 0.5)
    #expect(abs(raised - LoudnessLevelling.maximumBoostDecibels) < 0.1, "quiet item raised \(raised) dB")
  }

  @Test("Bad loudness settings are errors that name the key and the range")
  func badSettings() throws {
    for (text, message) in [
      ("loudness: { target: 3 }", "target 3 is outside [-70, 0]"),
      ("loudness: { truePeak: -40 }", "truePeak -40 is outside [-20, 0]"),
      ("loudness: \"loud\"", "expected an object { target, truePeak } or \"off\", found a string"),
      ("loudness: { traget: -18 }", "unknown key \"traget\"; did you mean \"target\"?"),
    ] {
      let problems = CueSheet.check("{ \(text) }", path: "cues.json5").problems.filter { $0.severity == .error }
      #expect(problems.map { $0.message } == [message], "\(text)")
    }
  }
}

/// The levelling as the real-time engine plays it: the bundled music, then two of the player's
/// songs 17 LU apart (one loud, one quiet), captured from OpenAL Soft's wave backend.
///
/// Every piece is steady (drums, bass and chords at one level throughout), so a 3 s window's
/// short-term loudness is the piece's own: with the bundled exploration music (loudness range
/// 3.8 LU: its first bars sit 2.3 LU under its integrated loudness) two windows would differ by
/// what the composer wrote, not by what the levelling did.
@Suite(
  "Loudness live: the player's songs and the bundled music as the wave backend captures them",
  .disabled(if: CGame.underThreadSanitizer, "the live run is timing-bound; see make test-tsan"))
struct LiveLoudnessTests {
  /// A drum, bass and chords song, scaled to `loudness` LUFS.
  static func song(
    _ path: String, title: String, loudness: Double, seconds: Double = 12, rate: Int = 44_100,
    style: RhythmSynthesizer.Style = .rock, seed: UInt64
  ) throws {
    let song = RhythmSynthesizer.song(
      bpm: 124, rate: rate, style: style, seconds: seconds, leadIn: 0.2, pickup: false, harmony: true, seed: seed)
    let measured = try #require(try LoudnessTests.measure(song.samples, channels: 2, rate: rate).integratedLoudness)
    let gain = Float(pow(10, (loudness - measured) / 20))
    try VorbisEncoder.encode(
      samples: song.samples.map { $0 * gain }, format: song.format, tags: [("TITLE", title), ("ARTIST", "Player")],
      to: path)
  }

  @Test(
    "Bundled music, a loud song (-11 LUFS) and a quiet one (-28 LUFS) of the player's play within 1 LU of each other, live",
    .enabled(if: LeitmotifCommand.executable != nil, "the leitmotif executable is not next to the test bundle"))
  func playersSongsMatchTheScoreLive() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-live-loudness")
    let assets = directory.file("music")
    let library = directory.file("Player Music")
    for folder in [assets, library] {
      try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }
    // The game's music at -20 LUFS: the bundled median, so the target.
    try Self.song(
      assets + "/explore.ogg", title: "Explore", loudness: -20, seconds: 8, rate: 48_000, style: .fourOnFloor, seed: 20)
    try Self.song(library + "/loud.ogg", title: "Loud", loudness: -11, seed: 11)
    try Self.song(library + "/quiet.ogg", title: "Quiet", loudness: -28, seed: 28)
    let cues = directory.file("level.json5")
    try """
    {
      assets: "\(assets)",
      start: "explore",
      sources: {
        calm: { bundled: "explore.ogg" },
        loud: { library: { title: "Loud" } },
        quiet: { library: { title: "Quiet" } },
      },
      states: {
        explore: { music: "calm" },
        loud: { music: "loud", transition: { seconds: 0.5 } },
        quiet: { music: "quiet", transition: { seconds: 0.5 } },
      },
      rules: [{ on: "loud", do: { state: "loud" } }, { on: "quiet", do: { state: "quiet" } }],
    }
    """.write(toFile: cues, atomically: true, encoding: .utf8)
    let events = directory.file("script.json5")
    try #"[{ at: 4, cue: "loud" }, { at: 10, cue: "quiet" }]"#.write(toFile: events, atomically: true, encoding: .utf8)
    let capture = directory.file("live.wav")
    let configuration = directory.file("wave.conf")
    var environment = try WaveBackend.environment(capturingTo: capture, configuration: configuration)
    environment["HOME"] = directory.path
    environment["XDG_STATE_HOME"] = directory.file("state")
    environment["XDG_CACHE_HOME"] = directory.file("cache")

    let allowed = try LeitmotifCommand.run(["access", "allow", "leitmotif"], environment: environment)
    #expect(allowed.status == 0, "\(allowed.errors)")
    let live = try LeitmotifCommand.run(
      [
        "cues", "simulate", cues, "--events", events, "--live", "--duration", "16", "--library", library, "--lead",
        "0.06",
      ],
      environment: environment)
    #expect(live.status == 0, "\(live.errors)")
    #expect(live.output.contains("-> \"loud\"") && live.output.contains("-> \"quiet\""), "\(live.output)")

    let heard = try DemoTests.floatSamples(capture)
    let lead = try #require((0..<(heard.count / 2)).first { heard[2 * $0] != 0 || heard[2 * $0 + 1] != 0 })
    /// Short-term loudness (3 s, stereo) from `from` seconds after the first sound.
    func shortTerm(from: Double) throws -> Double {
      let start = 2 * (lead + Int(from * 48_000))
      try #require(start + 2 * 3 * 48_000 <= heard.count, "the capture ends at \(heard.count / 2) frames")
      return try #require(
        try LoudnessTests.measure(Array(heard[start..<(start + 2 * 3 * 48_000)]), channels: 2).integratedLoudness)
    }
    // Each window starts after its fade and ends before the next change.
    let bundled = try shortTerm(from: 0.5)
    let loud = try shortTerm(from: 5.5)
    let quiet = try shortTerm(from: 11.5)
    #expect(abs(bundled - -20) < 1, "the bundled music \(bundled) LUFS, the target -20")
    #expect(abs(loud - bundled) < 1, "bundled \(bundled) LUFS, then the loud song \(loud) LUFS")
    #expect(abs(quiet - loud) < 1, "the loud song \(loud) LUFS, then the quiet one \(quiet) LUFS")
    print("live short-term loudness: bundled \(bundled), loud song \(loud), quiet song \(quiet) LUFS")
  }
}
