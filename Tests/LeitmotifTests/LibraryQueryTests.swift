import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// A small library, written straight into an index with `LibraryIndex.upsert` (no scan): the
/// files exist (empty, except where a test makes real Vorbis) so playlists can resolve them.
struct QueryFixture {
  let directory: TemporaryDirectory
  /// The library folder (a real path).
  let folder: String
  let index: LibraryIndex
  var items: [MediaItem] = []

  init(indexPath: String? = nil, directory: TemporaryDirectory? = nil) throws {
    let directory = try directory ?? TemporaryDirectory()
    self.directory = directory
    try FileManager.default.createDirectory(atPath: directory.file("Music"), withIntermediateDirectories: true)
    folder = FileSystemPath.realPath(directory.file("Music"))!
    index = try LibraryIndex(path: indexPath ?? directory.file("index.sqlite")) { _ in }
  }

  /// Adds an item whose file is `name` in the library folder (created empty unless it exists).
  @discardableResult
  mutating func add(
    _ name: String, title: String?, artist: String?, album: String? = nil, albumArtist: String? = nil,
    genre: String? = nil, composer: String? = nil, track: Int? = nil, bpm: Double? = nil, year: Int? = nil,
    duration: Double? = nil, plays: Int = 0, rating: Int = 0, compilation: Bool = false
  ) throws -> MediaItem {
    let path = folder + "/" + name
    if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
    var item = MediaItem(path: path)
    item.persistentID = UInt64(items.count + 1)
    item.title = title
    item.artist = artist
    item.albumTitle = album
    item.albumArtist = albumArtist
    item.genre = genre
    item.composer = composer
    item.albumTrackNumber = track
    item.beatsPerMinute = bpm
    item.year = year
    item.playbackDuration = duration
    item.playCount = plays
    item.rating = rating
    item.isCompilation = compilation
    try index.upsert(item, size: 0, mtimeNanoseconds: 0, fingerprint: "fixture-\(items.count + 1)")
    items.append(item)
    return item
  }

  /// The music most tests use: articles, accents, a digit, a compilation.
  static func standard(indexPath: String? = nil, directory: TemporaryDirectory? = nil) throws -> QueryFixture {
    var fixture = try QueryFixture(indexPath: indexPath, directory: directory)
    try fixture.add(
      "help.ogg", title: "Help!", artist: "The Beatles", album: "Help!", albumArtist: "The Beatles", genre: "Rock",
      track: 1, bpm: 95, year: 1965, duration: 140)
    try fixture.add(
      "yesterday.ogg", title: "Yesterday", artist: "The Beatles", album: "Help!", albumArtist: "The Beatles",
      genre: "Rock", composer: "Paul McCartney", track: 13, bpm: 97, year: 1965, duration: 125)
    try fixture.add(
      "halo.ogg", title: "Halo", artist: "Beyoncé", album: "I Am... Sasha Fierce", genre: "R&B", track: 2, bpm: 80,
      year: 2008, duration: 261)
    try fixture.add(
      "crazy.ogg", title: "Crazy in Love", artist: "Beyoncé", album: "Dangerously in Love", genre: "R&B", track: 1,
      bpm: 99, year: 2003, duration: 236, rating: 5)
    try fixture.add(
      "day.ogg", title: "A Day in the Life", artist: "The Beatles", album: "Sgt. Pepper's Lonely Hearts Club Band",
      genre: "Rock", track: 13, bpm: 80, year: 1967, duration: 337)
    try fixture.add(
      "99.ogg", title: "99 Luftballons", artist: "Nena", album: "99 Luftballons", genre: "Pop", track: 1, bpm: 193,
      year: 1983, duration: 232)
    try fixture.add(
      "bohemian.ogg", title: "Bohemian Rhapsody", artist: "Queen", album: "Now That's What I Call Music",
      albumArtist: "Various Artists", genre: "Rock", composer: "Freddie Mercury", track: 1, bpm: 72, year: 1975,
      duration: 354, compilation: true)
    try fixture.add(
      "video.ogg", title: "Video Killed the Radio Star", artist: "The Buggles", album: "Now That's What I Call Music",
      albumArtist: "Various Artists", genre: "Pop", track: 2, bpm: 132, year: 1979, duration: 253, compilation: true)
    try fixture.add(
      "epilogue.ogg", title: "Épilogue", artist: "Émilie Simon", album: "Végétal", genre: "Pop", track: 12, bpm: 120,
      year: 2006, duration: 190, plays: 12)
    return fixture
  }

  func run(_ query: MediaQuery) throws(LibraryError) -> QueryRunner.Result { try index.run(query) }

  func titles(_ query: MediaQuery) throws -> [String?] { try run(query).items.map(\.title) }

  func titles(_ predicates: MediaPropertyPredicate...) throws -> Set<String?> {
    Set(try titles(MediaQuery(filterPredicates: Set(predicates))))
  }
}

@Suite("Media queries: ready-made queries, grouping, sections, predicates")
struct LibraryQueryTests {
  @Test("songs() lists every item by title, ignoring a leading \"A\"; digits go to \"#\" at the end")
  func songs() throws {
    let fixture = try QueryFixture.standard()
    let result = try fixture.run(.songs())
    #expect(
      result.items.map(\.title) == [
        "Bohemian Rhapsody", "Crazy in Love", "A Day in the Life", "Épilogue", "Halo", "Help!",
        "Video Killed the Radio Star", "Yesterday", "99 Luftballons",
      ])
    #expect(result.itemSections.map(\.title) == ["B", "C", "D", "E", "H", "V", "Y", "#"])
    #expect(result.itemSections.first { $0.title == "H" }?.range == 4..<6)
    #expect(result.itemSections.last?.range == 8..<9)
    #expect(result.collections.count == 9, "grouped by title: one collection per item")
  }

  @Test("artists(): \"The Beatles\" under B, before Beyoncé; each collection names its artist")
  func artists() throws {
    let fixture = try QueryFixture.standard()
    let result = try fixture.run(.artists())
    #expect(
      result.collections.map(\.name) == ["The Beatles", "Beyoncé", "The Buggles", "Émilie Simon", "Nena", "Queen"])
    #expect(result.collections[0].count == 3)
    #expect(result.collections[0].representativeItem?.title == "Help!", "the album's first track stands for it")
    #expect(result.collectionSections.map(\.title) == ["B", "E", "N", "Q"])
    #expect(result.collectionSections[0].range == 0..<3)
    #expect(result.itemSections[0] == MediaQuerySection(title: "B", range: 0..<6), "items: 3 + 2 + 1 under B")
  }

  @Test("albums() groups by album and album artist, in disc and track order; compilations() keeps the compilations")
  func albumsAndCompilations() throws {
    let fixture = try QueryFixture.standard()
    let albums = try fixture.run(.albums()).collections
    #expect(
      albums.map(\.name) == [
        "Dangerously in Love", "Help!", "I Am... Sasha Fierce", "Now That's What I Call Music",
        "Sgt. Pepper's Lonely Hearts Club Band", "Végétal", "99 Luftballons",
      ])
    let help = try #require(albums.first { $0.name == "Help!" })
    #expect(help.items.map(\.title) == ["Help!", "Yesterday"])
    let compilations = try fixture.run(.compilations()).collections
    #expect(compilations.map(\.name) == ["Now That's What I Call Music"])
    #expect(compilations[0].items.map(\.title) == ["Bohemian Rhapsody", "Video Killed the Radio Star"])
    #expect(compilations[0].items.map(\.artist) == ["Queen", "The Buggles"], "one album, two artists")
  }

  @Test(
    "Albums without an album artist: same title in two artists' folders is two albums; guest artists in one folder, one"
  )
  func albumsWithoutAlbumArtist() throws {
    var fixture = try QueryFixture()
    for folder in ["Xavier", "Yolanda", "Zed"] {
      try FileManager.default.createDirectory(atPath: fixture.folder + "/" + folder, withIntermediateDirectories: true)
    }
    try fixture.add("Xavier/1.ogg", title: "Hit X1", artist: "Xavier", album: "Greatest Hits", track: 1)
    try fixture.add("Xavier/2.ogg", title: "Hit X2", artist: "Xavier", album: "Greatest Hits", track: 2)
    try fixture.add("Yolanda/1.ogg", title: "Hit Y1", artist: "Yolanda", album: "Greatest Hits", track: 1)
    try fixture.add("Zed/1.ogg", title: "Intro", artist: "Zed", album: "Nights", track: 1)
    try fixture.add("Zed/2.ogg", title: "Duet", artist: "Zed feat. Amy", album: "Nights", track: 2)
    let albums = try fixture.run(.albums()).collections
    #expect(albums.map(\.name) == ["Greatest Hits", "Greatest Hits", "Nights"], "\(albums.map(\.name))")
    #expect(
      Set(albums.prefix(2).map { $0.items.map(\.title) }) == [["Hit X1", "Hit X2"], ["Hit Y1"]],
      "\(albums.map { $0.items.map(\.title) })")
    #expect(albums.last?.items.map(\.title) == ["Intro", "Duet"])
  }

  @Test("albumArtists(), genres() and composers() group by their property")
  func otherGroupings() throws {
    let fixture = try QueryFixture.standard()
    #expect(
      try fixture.run(.albumArtists()).collections.map(\.name) == [
        "The Beatles", "Beyoncé", "Émilie Simon", "Nena", "Various Artists",
      ], "without an album artist, the artist")
    let genres = try fixture.run(.genres()).collections
    #expect(genres.map(\.name) == ["Pop", "R&B", "Rock"])
    #expect(genres.map(\.count) == [3, 2, 4])
    let composers = try fixture.run(.composers()).collections
    #expect(composers.map(\.name) == ["Freddie Mercury", "Paul McCartney", nil], "items without a composer last")
  }

  @Test("equalTo and contains ignore case and diacritics")
  func insensitive() throws {
    let fixture = try QueryFixture.standard()
    #expect(
      try fixture.titles(MediaPropertyPredicate(value: "beyonce", forProperty: .artist)) == ["Halo", "Crazy in Love"])
    #expect(try fixture.titles(MediaPropertyPredicate(value: "BEYONCÉ", forProperty: .artist)).count == 2)
    #expect(
      try fixture.titles(MediaPropertyPredicate(value: "LOVE", forProperty: .title, comparisonType: .contains))
        == ["Crazy in Love"])
    #expect(
      try fixture.titles(MediaPropertyPredicate(value: "epi", forProperty: .title, comparisonType: .contains))
        == ["Épilogue"])
    #expect(try fixture.titles(MediaPropertyPredicate(value: "vegetal", forProperty: .albumTitle)) == ["Épilogue"])
    #expect(
      try fixture.titles(MediaPropertyPredicate(value: "Beatles", forProperty: .artist)).isEmpty,
      "equalTo is the whole value")
  }

  @Test("Several predicates combine with AND")
  func and() throws {
    let fixture = try QueryFixture.standard()
    #expect(
      try fixture.titles(
        MediaPropertyPredicate(value: "beyonce", forProperty: .artist),
        MediaPropertyPredicate(value: "halo", forProperty: .title, comparisonType: .contains)) == ["Halo"])
    #expect(
      try fixture.titles(
        MediaPropertyPredicate(value: "the beatles", forProperty: .artist),
        MediaPropertyPredicate(value: 1965, forProperty: .year)) == ["Help!", "Yesterday"])
    var query = MediaQuery.albums()
    query.addFilterPredicate(MediaPropertyPredicate(value: "rock", forProperty: .genre))
    #expect(try fixture.run(query).collections.count == 3)
    query.removeFilterPredicate(MediaPropertyPredicate(value: "rock", forProperty: .genre))
    #expect(try fixture.run(query).collections.count == 7)
  }

  @Test("Ranges on BPM, year, duration, play count and rating")
  func ranges() throws {
    let fixture = try QueryFixture.standard()
    #expect(
      try fixture.titles(
        MediaPropertyPredicate(value: 120, forProperty: .beatsPerMinute, comparisonType: .greaterThanOrEqualTo))
        == ["99 Luftballons", "Video Killed the Radio Star", "Épilogue"])
    #expect(
      try fixture.titles(
        MediaPropertyPredicate(value: 80, forProperty: .beatsPerMinute, comparisonType: .lessThanOrEqualTo))
        == ["Halo", "A Day in the Life", "Bohemian Rhapsody"])
    #expect(
      try fixture.titles(
        MediaPropertyPredicate(value: 1965, forProperty: .year, comparisonType: .greaterThan),
        MediaPropertyPredicate(value: 1980, forProperty: .year, comparisonType: .lessThan))
        == ["A Day in the Life", "Bohemian Rhapsody", "Video Killed the Radio Star"])
    #expect(
      try fixture.titles(MediaPropertyPredicate(value: 130, forProperty: .playbackDuration, comparisonType: .lessThan))
        == ["Yesterday"])
    #expect(
      try fixture.titles(MediaPropertyPredicate(value: 10, forProperty: .playCount, comparisonType: .greaterThan)) == [
        "Épilogue"
      ])
    #expect(try fixture.titles(MediaPropertyPredicate(value: "5", forProperty: .rating)) == ["Crazy in Love"])
    #expect(try fixture.titles(MediaPropertyPredicate(value: true, forProperty: .isCompilation)).count == 2)
    #expect(try fixture.titles(MediaPropertyPredicate(value: "6", forProperty: .persistentID)) == ["99 Luftballons"])
  }

  @Test(
    "A detected tempo compares to the hundredth, as it is printed: a song detected at 119.998 BPM is a 120 BPM song")
  func tempoToTheHundredth() throws {
    var fixture = try QueryFixture()
    try fixture.add("a.ogg", title: "Just under", artist: nil, bpm: 119.998)
    try fixture.add("b.ogg", title: "Tagged", artist: nil, bpm: 120)
    try fixture.add("c.ogg", title: "Slower", artist: nil, bpm: 119.97)
    try fixture.add("d.ogg", title: "Faster", artist: nil, bpm: 120.02)
    func titles(_ value: Double, _ comparison: MediaPredicateComparison) throws -> Set<String?> {
      try fixture.titles(MediaPropertyPredicate(value: value, forProperty: .beatsPerMinute, comparisonType: comparison))
    }
    #expect(try titles(120, .equalTo) == ["Just under", "Tagged"])
    #expect(try titles(120, .greaterThanOrEqualTo) == ["Just under", "Tagged", "Faster"])
    #expect(try titles(120, .greaterThan) == ["Faster"])
    #expect(try titles(120, .lessThan) == ["Slower"])
    #expect(try titles(120, .lessThanOrEqualTo) == ["Just under", "Tagged", "Slower"])
    #expect(try titles(119.97, .equalTo) == ["Slower"])
  }

  @Test("A persistent id given as a number is matched exactly: ids are 64-bit, past a Double's 2^53")
  func largePersistentID() throws {
    var fixture = try QueryFixture.standard()
    var item = MediaItem(path: fixture.folder + "/far.ogg")
    _ = FileManager.default.createFile(atPath: item.assetURL.path, contents: nil)
    item.persistentID = 5_724_575_397_412_592_994
    item.title = "Far"
    try fixture.index.upsert(item, size: 0, mtimeNanoseconds: 0, fingerprint: "fixture-far")
    fixture.items.append(item)
    // The next id a Double holds: 5724575397412592994 as a Double is ...2640.
    var neighbour = MediaItem(path: fixture.folder + "/near.ogg")
    _ = FileManager.default.createFile(atPath: neighbour.assetURL.path, contents: nil)
    neighbour.persistentID = 5_724_575_397_412_592_640
    neighbour.title = "Near"
    try fixture.index.upsert(neighbour, size: 0, mtimeNanoseconds: 0, fingerprint: "fixture-near")
    fixture.items.append(neighbour)
    #expect(
      try fixture.titles(MediaPropertyPredicate(value: 5_724_575_397_412_592_994, forProperty: .persistentID)) == [
        "Far"
      ])
    #expect(
      try fixture.titles(MediaPropertyPredicate(value: UInt64(5_724_575_397_412_592_994), forProperty: .persistentID))
        == ["Far"])
    #expect(
      try fixture.titles(MediaPropertyPredicate(value: "5724575397412592994", forProperty: .persistentID)) == ["Far"])
  }

  @Test("A range on text, contains on a number, or a value of the wrong kind is an invalidPredicate error")
  func badPredicates() throws {
    let fixture = try QueryFixture.standard()
    let bad = [
      MediaPropertyPredicate(value: "M", forProperty: .title, comparisonType: .lessThan),
      MediaPropertyPredicate(value: "12", forProperty: .beatsPerMinute, comparisonType: .contains),
      MediaPropertyPredicate(value: "fast", forProperty: .beatsPerMinute),
      MediaPropertyPredicate(value: 1, forProperty: .isCompilation, comparisonType: .greaterThan),
      MediaPropertyPredicate(value: 3, forProperty: .artist),
      MediaPropertyPredicate(value: Double.nan, forProperty: .year),
    ]
    for predicate in bad {
      #expect(throws: LibraryError.self, "\(predicate)") { try predicate.validate() }
      do {
        _ = try fixture.run(MediaQuery(filterPredicates: [predicate]))
        Issue.record("\(predicate) ran")
      } catch {
        guard case .invalidPredicate(_, let reason) = error else {
          Issue.record("\(predicate): \(error)")
          continue
        }
        #expect(!reason.isEmpty)
      }
    }
  }

  @Test("contains of three characters or more goes through the trigram index, which follows every change")
  func searchIndexFollowsChanges() throws {
    var fixture = try QueryFixture.standard()
    let radio = MediaPropertyPredicate(value: "RADIO", forProperty: .title, comparisonType: .contains)
    #expect(try fixture.titles(radio) == ["Video Killed the Radio Star"], "the first contains makes the index")
    #expect(fixture.index.ensureSearchIndex())
    var added = try fixture.add("radio.ogg", title: "Radio Gaga", artist: "Queen")
    #expect(try fixture.titles(radio) == ["Video Killed the Radio Star", "Radio Gaga"], "an insert")
    added.title = "Under Pressure"
    try fixture.index.upsert(added, size: 0, mtimeNanoseconds: 1, fingerprint: "fixture-10")
    #expect(try fixture.titles(radio) == ["Video Killed the Radio Star"], "an update")
    #expect(
      try fixture.titles(MediaPropertyPredicate(value: "pressure", forProperty: .title, comparisonType: .contains))
        == ["Under Pressure"])
    try fixture.index.database.prepare("DELETE FROM items WHERE persistent_id = 8").run()
    #expect(try fixture.titles(radio).isEmpty, "a delete")
    #expect(
      try fixture.titles(MediaPropertyPredicate(value: "\"que", forProperty: .artist, comparisonType: .contains))
        .isEmpty,
      "a quote in the value is text, not FTS syntax")
  }

  @Test("Values are bound, never SQL: quotes, % and _ are matched as text")
  func boundValues() throws {
    let fixture = try QueryFixture.standard()
    #expect(try fixture.titles(MediaPropertyPredicate(value: "x' OR 1=1 --", forProperty: .title)).isEmpty)
    #expect(
      try fixture.titles(MediaPropertyPredicate(value: "%", forProperty: .title, comparisonType: .contains)).isEmpty)
    #expect(
      try fixture.titles(MediaPropertyPredicate(value: "_", forProperty: .title, comparisonType: .contains)).isEmpty)
    #expect(
      try fixture.titles(MediaPropertyPredicate(value: "'s", forProperty: .albumTitle, comparisonType: .contains))
        == ["A Day in the Life", "Bohemian Rhapsody", "Video Killed the Radio Star"])
  }
}

@Suite("Playlists: M3U, M3U8 and PLS files in the library folders")
struct PlaylistImportTests {
  func write(_ text: String, to path: String) throws { try text.write(toFile: path, atomically: true, encoding: .utf8) }

  @Test(
    "Relative, absolute and file:// entries resolve (a Windows relative path and a PLS line with spaces too); missing and outside entries are reported and skipped"
  )
  func importing() throws {
    var fixture = try QueryFixture.standard()
    try FileManager.default.createDirectory(atPath: fixture.folder + "/lists", withIntermediateDirectories: true)
    try fixture.add("lists/nested.ogg", title: "Nested", artist: "Nena")
    let outside = fixture.directory.file("outside.ogg")
    _ = FileManager.default.createFile(atPath: outside, contents: nil)
    try FileManager.default.createSymbolicLink(atPath: fixture.folder + "/escape.ogg", withDestinationPath: outside)
    let m3u = fixture.folder + "/lists/Road Trip.m3u8"
    try write(
      """
      #EXTM3U
      #EXTINF:140,The Beatles - Help!
      ..\\help.ogg
      nested.ogg
      \(fixture.folder)/halo.ogg
      file://\(fixture.folder)/99.ogg
      ../missing.ogg
      ../../outside.ogg
      ../escape.ogg
      http://example.com/stream.mp3

      """, to: m3u)
    let pls = fixture.folder + "/Calm.pls"
    try write(
      """
      [playlist]
      File1=yesterday.ogg
      Title1=Yesterday
      File2 = \(fixture.folder)/epilogue.ogg
      NumberOfEntries=2
      Version=2

      """, to: pls)
    let failures = PlaylistImporter.importPlaylists(
      [m3u, pls], folders: [URL(fileURLWithPath: fixture.folder)], index: fixture.index)
    let reasons = failures.map(\.reason)
    #expect(failures.count == 4, "\(failures)")
    #expect(reasons.contains { $0.contains("../missing.ogg") && $0.contains("no such file") })
    #expect(reasons.contains { $0.contains("../../outside.ogg") && $0.contains("outside the library folders") })
    #expect(reasons.contains { $0.contains("../escape.ogg") && $0.contains("outside the library folders") })
    #expect(reasons.contains { $0.contains("http://") && $0.contains("not a local file") })

    let playlists = try fixture.run(.playlists())
    #expect(playlists.collections.map(\.name) == ["Calm", "Road Trip"])
    #expect(playlists.collections[0].items.map(\.title) == ["Yesterday", "Épilogue"])
    #expect(playlists.collections[1].items.map(\.title) == ["Help!", "Nested", "Halo", "99 Luftballons"])
    #expect(playlists.collections.allSatisfy { $0.persistentID != nil })
    #expect(playlists.collectionSections.map(\.title) == ["C", "R"])
    #expect(playlists.items.count == 6)

    var filtered = MediaQuery.playlists()
    filtered.addFilterPredicate(MediaPropertyPredicate(value: "nena", forProperty: .artist))
    let nena = try fixture.run(filtered).collections
    #expect(nena.map(\.name) == ["Road Trip"], "a filtered query keeps playlists with a matching item")
    #expect(nena[0].items.map(\.title) == ["Nested", "99 Luftballons"])

    // A later scan without the PLS file removes its playlist; playlists outside are not read.
    let stray = fixture.directory.file("stray.m3u")
    try write("Music/help.ogg\n", to: stray)
    let again = PlaylistImporter.importPlaylists(
      [m3u, stray], folders: [URL(fileURLWithPath: fixture.folder)], index: fixture.index)
    #expect(again.contains { $0.path == stray && $0.reason.contains("outside the library folders") })
    #expect(try fixture.run(.playlists()).collections.map(\.name) == ["Road Trip"])
  }

  @Test("A playlist of a million lines is streamed, and its problems are reported only up to a cap")
  func millionLines() throws {
    let fixture = try QueryFixture.standard()
    let path = fixture.folder + "/huge.m3u"
    // 1,000,000 lines: an #EXTINF line before each entry, half the entries missing.
    let block = "#EXTINF:140,The Beatles - Help!\nhelp.ogg\n#EXTINF:10,Gone\n../gone.ogg\n"
    try ("#EXTM3U\n" + String(repeating: block, count: 250_000)).write(toFile: path, atomically: false, encoding: .utf8)
    let started = Date()
    let failures = PlaylistImporter.importPlaylists(
      [path], folders: [URL(fileURLWithPath: fixture.folder)], index: fixture.index)
    let seconds = Date().timeIntervalSince(started)
    #expect(failures.count == PlaylistImporter.maximumReportedEntries + 1)
    #expect(failures.last?.reason.contains("249980 more entries skipped") == true, "\(failures.last!)")
    #expect(seconds < 60, "a million lines took \(seconds) s")
    let playlist = try #require(try fixture.run(.playlists()).collections.first)
    #expect(playlist.count == 250_000)
    print("a playlist of 1,000,000 lines imported in \(String(format: "%.2f", seconds)) s")
  }
}

@Suite("Queries through MediaLibrary, and a queue from a query")
struct LibraryQueryPlaybackTests {
  /// A library whose consent is granted (through the consent store), with its index filled.
  func authorizedLibrary(_ directory: TemporaryDirectory) throws -> (MediaLibrary, QueryFixture) {
    let configuration = MediaLibrary.Configuration.sandboxed(
      applicationID: "query-tests", root: directory.path, music: directory.file("Music"))
    try LibraryAccessStore(configuration: configuration).remember(.authorized, for: "query-tests")
    let fixture = try QueryFixture(indexPath: configuration.indexPath, directory: directory)
    return (MediaLibrary(configuration: configuration), fixture)
  }

  @Test("Without authorization a query is an access error")
  func denied() throws {
    let directory = try TemporaryDirectory()
    let configuration = MediaLibrary.Configuration.sandboxed(
      applicationID: "query-tests", root: directory.path, music: directory.path, usageDescription: nil)
    let library = MediaLibrary(configuration: configuration)
    do {
      _ = try library.items(matching: .songs())
      Issue.record("a query ran without authorization")
    } catch {
      guard case .accessDenied(let status, _) = error else {
        Issue.record("\(error)")
        return
      }
      #expect(status == .notDetermined)
    }
    #expect(!FileManager.default.fileExists(atPath: configuration.indexPath), "the index was not even opened")
  }

  @Test("QueueDescriptor(query:library:) plays the query's items, in its order, on an offline engine")
  func queueFromQuery() throws {
    let directory = try TemporaryDirectory()
    let (library, emptyFixture) = try authorizedLibrary(directory)
    var fixture = emptyFixture
    // Real tiny Vorbis files, made in code: three tones, two of them by "The Testers".
    for (name, frequency) in [("b.ogg", 330.0), ("a.ogg", 220.0), ("c.ogg", 440.0)] {
      _ = try EngineHarness.vorbisTone(
        in: directory, name: "Music/\(name)", seconds: 0.3, frequency: frequency)
    }
    try fixture.add("b.ogg", title: "Second", artist: "The Testers", album: "Tones", track: 2, duration: 0.3)
    try fixture.add("a.ogg", title: "First", artist: "The Testers", album: "Tones", track: 1, duration: 0.3)
    try fixture.add("c.ogg", title: "Other", artist: "Somebody", album: "Else", track: 1, duration: 0.3)

    #expect(library.authorizationStatus == .authorized, "the consent store grants access")
    var query = MediaQuery.albums()
    query.addFilterPredicate(MediaPropertyPredicate(value: "testers", forProperty: .artist, comparisonType: .contains))
    #expect(try library.items(matching: query).map(\.title) == ["First", "Second"])
    #expect(try library.collections(matching: query).map(\.name) == ["Tones"])
    #expect(try library.itemSections(matching: query) == [MediaQuerySection(title: "T", range: 0..<2)])
    #expect(try library.collectionSections(matching: query) == [MediaQuerySection(title: "T", range: 0..<1)])

    let descriptor = try QueueDescriptor(query: query, library: library)
    let engine = try EngineHarness.offlineEngine()
    let player = QueuePlayer(engine: engine)
    let log = QueueLog(player)
    try player.setQueue(with: descriptor)
    player.play()
    _ = EngineHarness.render(engine, seconds: 1.5)
    player.waitForNotifications()
    #expect(log.nowPlaying.map(\.0).prefix(2) == ["First", "Second"])
    #expect(log.failures.isEmpty)
  }
}
