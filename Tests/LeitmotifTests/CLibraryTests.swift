import Foundation
import LeitmotifFixtures
import Testing

/// The C API's music library, from C: Examples/c-game/jukebox.c (built as CAPITests builds
/// game.c) over a player's folder made here: consent, the scan, playlists, a query read a page
/// at a time, the picker's search as picks, the query's songs as the game's queue, and the
/// master volume's fade. What it renders is checked by pitch: each song is a tone of its own.
@Suite(
  "The C API's music library: the jukebox scans, queries, picks and queues the player's songs",
  .enabled(if: CGame.library != nil, CGame.notBuilt), .disabled(if: CGame.underThreadSanitizer, CGame.sanitized))
struct CLibraryTests {
  /// The player's songs: title, artist, pitch, length.
  static let songs: [(title: String, artist: String, pitch: Double, seconds: Double)] = [
    ("Alpha", "Tester", 330, 6), ("Beta", "The Testers", 440, 6), ("Delta", "Tester", 495, 2),
    ("Epsilon", "Tester", 605, 2), ("Zeta", "Tester", 770, 2), ("Gamma", "Other", 550, 6),
  ]

  /// The MOOD tags of some of them.
  static let moods = ["Delta": "Calm", "Gamma": "Calm", "Zeta": "Tense"]

  /// Runs the jukebox over the player's folder of `songs` (and a playlist) with `arguments`,
  /// rendering 20 s offline; its output and the left channel it rendered.
  func runJukebox(_ arguments: [String]) throws -> (output: String, left: [Float]) {
    let game = try DirectorFixture()
    let music = game.directory.file("music")
    try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
    for song in Self.songs {
      try DirectorFixture.tone(
        music + "/\(song.title.lowercased()).ogg", pitch: song.pitch, seconds: song.seconds,
        tags: [("TITLE", song.title), ("ARTIST", song.artist), ("BPM", "120")]
          + (Self.moods[song.title].map { [("MOOD", $0)] } ?? []))
    }
    try "gamma.ogg\nalpha.ogg\n".write(toFile: music + "/Road trip.m3u", atomically: true, encoding: .utf8)
    _ = try game.sheet(
      """
      { start: "explore", assets: "assets", tempo: { bpm: 120 },
        sources: { calm: { bundled: "explore.ogg" }, picked: { picks: true, fallback: "calm" } },
        states: { explore: { music: "calm", between: "gapless" }, mine: { music: "picked", transition: { seconds: 0 } } },
        rules: [ { on: "to.mine", do: { crossfade: "mine", seconds: 0 } } ] }
      """)
    let jukebox = try CGame.build(
      source: CGame.repository + "/Examples/c-game/jukebox.c", named: "jukebox", in: game.directory)
    let wav = game.directory.file("jukebox.wav")
    let run = try CGame.run(
      jukebox,
      ["--library", music, "--cues", game.cuePath, "--offline", wav, "--seconds", "20", "--yes"] + arguments,
      in: game.directory)
    #expect(run.status == 0, "\(run.output)\(run.errors)")
    let samples = try DemoTests.floatSamples(wav)
    return (run.output, stride(from: 0, to: samples.count, by: 2).map { samples[$0] })
  }

  @Test("The jukebox plays the state's music, then the queue on the bar, then the picks on a cue, then fades out")
  func jukebox() throws {
    let (output, left) = try runJukebox(["--artist", "test", "--pick", "gamm", "--post", "13", "to.mine"])

    // What the menu saw: the scan, the playlist in its own order, the query in pages by title,
    // the picker's search.
    for line in [
      "jukebox: scan: 6 added, 0 updated, 0 moved, 0 removed, 0 unchanged, 0 failed, 1 playlists",
      "jukebox: playlist \"Road trip\": 2 songs", "jukebox:   in it 1/2: \"Gamma\" by \"Other\"",
      "jukebox:   in it 2/2: \"Alpha\" by \"Tester\"", "jukebox: song 1/5: \"Alpha\" by \"Tester\", 6.0 s, 120 BPM",
      "jukebox: song 2/5: \"Beta\" by \"The Testers\"", "jukebox: song 5/5: \"Zeta\" by \"Tester\"",
      "jukebox: picker finds 1/1: \"Gamma\" by \"Other\"", "jukebox: picked 1 songs",
      "jukebox 4.000 queue set: 5 songs", "jukebox: rendered 960000 frames",
    ] {
      #expect(output.contains(line), "missing: \(line)\n\(output)")
    }
    // Set at 4 s, on a bar: it lands there, the frame an lm_post between the same renders would.
    #expect(output.contains("report 4.000 NOW_PLAYING Alpha"), "\(output)")
    // (A song's change is noticed at the director's next step, up to a few hundredths later.)
    let beta = output.split(separator: "\n").first { $0.hasSuffix("NOW_PLAYING Beta") }
    let betaTime = beta.flatMap { Double($0.split(separator: " ")[1]) } ?? -1
    #expect(betaTime >= 10 && betaTime < 10.05, "gapless after Alpha, as the state says: \(output)")
    #expect(output.contains("jukebox 8.000 now playing \"Alpha\" from (game)"), "\(output)")
    #expect(output.contains("jukebox 15.000 now playing \"Gamma\" from picked"), "\(output)")

    // What was heard: the state's music, the queue's first two songs, the pick, the fade.
    let pitches = [DirectorFixture.explorePitch] + Self.songs.map(\.pitch)
    #expect(Listen.loudest(left, 1, 3.5, among: pitches) == DirectorFixture.explorePitch)
    #expect(Listen.loudest(left, 5.2, 9.8, among: pitches) == 330, "the queue's first song, Alpha")
    #expect(Listen.loudest(left, 10.2, 12.8, among: pitches) == 440, "then Beta")
    #expect(Listen.loudest(left, 13.5, 16.5, among: pitches) == 550, "the pick, Gamma, in the state that plays picks")
    let before = Listen.rms(Listen.window(left, 16, 16.9))
    let fading = Listen.rms(Listen.window(left, 18, 18.3))
    let after = Listen.rms(Listen.window(left, 19.6, 20))
    #expect(before > 0.05 && fading < before * 0.8 && fading > 0.01, "before \(before), fading \(fading)")
    #expect(after < 1e-4, "the master volume reached 0: RMS \(after)")
  }

  @Test("The jukebox's queue is the player's calm songs: LM_PROPERTY_MOOD selects them, and each item gives its mood")
  func moodQueue() throws {
    let (output, left) = try runJukebox(["--mood", "calm"])
    for line in [
      "jukebox: song 1/2: \"Delta\" by \"Tester\", 2.0 s, 120 BPM, mood \"Calm\"",
      "jukebox: song 2/2: \"Gamma\" by \"Other\", 6.0 s, 120 BPM, mood \"Calm\"", "jukebox 4.000 queue set: 2 songs",
    ] {
      #expect(output.contains(line), "missing: \(line)\n\(output)")
    }
    #expect(!output.contains("Zeta"), "\(output)")
    let pitches = [DirectorFixture.explorePitch] + Self.songs.map(\.pitch)
    #expect(Listen.loudest(left, 4.6, 5.4, among: pitches) == 495, "the queue's first song, Delta")
    #expect(Listen.loudest(left, 7, 11, among: pitches) == 550, "then Gamma")
  }

  @Test("The jukebox shuffles the queue: it starts at the song its report names, and plays the songs as reported")
  func shuffledJukebox() throws {
    let (output, left) = try runJukebox(["--artist", "test", "--shuffle", "songs"])
    #expect(output.contains("jukebox 4.000 queue set: 5 songs, shuffled"), "\(output)")
    // The reports: each song the queue plays, when it is heard.
    let reported = output.split(separator: "\n").compactMap { line -> (time: Double, title: String)? in
      let words = line.split(separator: " ")
      guard words.count == 4, words[0] == "report", words[2] == "NOW_PLAYING", let time = Double(words[1]) else {
        return nil
      }
      return (time, String(words[3]))
    }.filter { $0.time >= 4 }
    let given = ["Alpha", "Beta", "Delta", "Epsilon", "Zeta"]
    // 16 s from 4 s: most of a lap of 18 s.
    try #require(reported.count >= 4, "\(output)")
    #expect(reported[0].time == 4, "\(output)")
    let titles = reported.map(\.title)
    #expect(Set(titles).count == titles.count && Set(titles).isSubset(of: given), "each song once: \(titles)")
    #expect(titles != Array(given.prefix(titles.count)), "shuffled: \(titles)")
    let pitches = Self.songs.map(\.pitch)
    // (Those that begin before the master volume's fade at 17 s.)
    for (index, song) in reported.enumerated() where song.time < 15 {
      let end = index + 1 < reported.count ? reported[index + 1].time : 19
      let heard = Listen.loudest(left, song.time + 1.2, min(end, 17) - 0.2, among: pitches)
      #expect(heard == Self.songs.first { $0.title == song.title }?.pitch, "\(song.title) at \(song.time) s: \(output)")
    }
  }
}
