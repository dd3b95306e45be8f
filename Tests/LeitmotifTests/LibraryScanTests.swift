import Foundation
import LeitmotifFixtures
import Synchronization
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

#if canImport(Glibc)
  import Glibc
#endif

/// The index gate without the consent check, for testing the scanner itself (the consent gate is
/// `MediaLibrary.withIndex`, tested with the authorization).
final class DirectIndex: LibraryIndexAccess, @unchecked Sendable {
  let index: LibraryIndex
  let lock = NSLock()
  init(path: String, warn: (String) -> Void = { _ in }) throws {
    index = try LibraryIndex(path: path, warn: warn)
  }
  func withIndex<T>(_ body: (LibraryIndex) throws(LibraryError) -> T) throws(LibraryError) -> T {
    lock.lock()
    defer { lock.unlock() }
    return try body(index)
  }
  /// Under the lock, as every use of the index: its SQLite connection is one thread's at a time
  /// (`SQLITE_OPEN_NOMUTEX`), and a watcher's rescan may be writing through it. Read without
  /// the lock, a CI run once got "database disk image is malformed" after hanging for 150 s.
  func items() throws -> [MediaItem] {
    lock.lock()
    defer { lock.unlock() }
    return try index.allItems()
  }
  func item(at path: String) throws -> MediaItem? { try items().first { $0.assetURL.path == path } }
}

/// A library folder with tiny real Ogg Vorbis files (a sine each, so each has its own audio).
struct LibraryFolder {
  let temporary: TemporaryDirectory
  let music: String
  let indexPath: String

  init() throws {
    temporary = try TemporaryDirectory(prefix: "leitmotif-scan")
    music = temporary.path + "/Music"
    indexPath = temporary.path + "/cache/library.sqlite"
    try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
  }

  @discardableResult
  func song(
    _ relative: String, frequency: Double, title: String, artist: String = "Artist", album: String = "Album",
    moreTags: [(String, String)] = []
  ) throws -> String {
    let path = music + "/" + relative
    try FileManager.default.createDirectory(
      atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    let format = PCMFormat.mono22050
    try VorbisEncoder.encode(
      samples: ToneGenerator.sine(frequency: frequency, seconds: 0.3, format: format), format: format,
      tags: [("TITLE", title), ("ARTIST", artist), ("ALBUM", album), ("TRACKNUMBER", "3/9"), ("BPM", "128")]
        + moreTags,
      to: path)
    return path
  }

  var scanner: LibraryScanner { LibraryScanner(folders: [URL(fileURLWithPath: music)]) }
}

@Suite("LibraryScan")
struct LibraryScanTests {
  @Test func firstScanAddsItemsWithTheirTags() throws {
    let library = try LibraryFolder()
    try library.song("A/one.ogg", frequency: 440, title: "One")
    try library.song("A/two.ogg", frequency: 550, title: "Two")
    try library.song("B/C/three.OGG", frequency: 660, title: "Three", artist: "Other")
    try Data("not a playlist entry\n".utf8).write(to: URL(fileURLWithPath: library.music + "/mix.m3u"))
    try Data("notes".utf8).write(to: URL(fileURLWithPath: library.music + "/notes.txt"))
    let index = try DirectIndex(path: library.indexPath)

    let report = try library.scanner.scan(through: index)

    #expect(report.added == 3)
    #expect(report.failed.isEmpty)
    #expect(report.playlists == [library.music + "/mix.m3u"])
    let items = try index.items()
    #expect(items.map(\.title) == ["One", "Two", "Three"])
    #expect(Set(items.compactMap(\.persistentID)).count == 3)
    let one = items[0]
    #expect(one.artist == "Artist")
    #expect(one.albumTitle == "Album")
    #expect(one.albumTrackNumber == 3)
    #expect(one.beatsPerMinute == 128)
    #expect(one.sampleRate == 22_050)
    #expect(abs((one.playbackDuration ?? 0) - 0.3) < 0.001)
    #expect(one.dateAdded != nil)
    #expect(try index.index.lastModifiedDate() != nil)
  }

  @Test("The MOOD tag is indexed: a query selects by it ignoring case and accents, and contains finds one of several")
  func moodIsQueryable() throws {
    let library = try LibraryFolder()
    try library.song("calm.ogg", frequency: 440, title: "Calm One", moreTags: [("MOOD", "Calme")])
    try library.song("tense.ogg", frequency: 550, title: "Tense One", moreTags: [("MOOD", "Tense")])
    try library.song("both.ogg", frequency: 660, title: "Both", moreTags: [("MOOD", "Dreamy"), ("MOOD", "Calmé")])
    try library.song("none.ogg", frequency: 770, title: "No Mood")
    let index = try DirectIndex(path: library.indexPath)
    _ = try library.scanner.scan(through: index)
    func titles(_ predicate: MediaPropertyPredicate) throws -> [String] {
      try index.withIndex { (index) throws(LibraryError) in try index.run(MediaQuery(filterPredicates: [predicate])) }
        .items.compactMap(\.title).sorted()
    }
    #expect(try titles(MediaPropertyPredicate(value: "CALMÉ", forProperty: .mood)) == ["Calm One"])
    #expect(
      try titles(MediaPropertyPredicate(value: "calm", forProperty: .mood, comparisonType: .contains)) == [
        "Both", "Calm One",
      ])
    #expect(try titles(MediaPropertyPredicate(value: "tense", forProperty: .mood)) == ["Tense One"])
    #expect(try index.item(at: library.music + "/both.ogg")?.mood == "Dreamy / Calmé")
    #expect(try index.item(at: library.music + "/none.ogg")?.mood == nil)
    #expect(throws: LibraryError.self) {
      try MediaPropertyPredicate(value: 3, forProperty: .mood, comparisonType: .greaterThan).validate()
    }
  }

  @Test("An index of schema 3 (no MOOD) is migrated in place: the next scan reads the tags again, not the audio")
  func olderIndexRereadsTags() throws {
    let library = try LibraryFolder()
    let path = try library.song("calm.ogg", frequency: 440, title: "Calm", moreTags: [("MOOD", "Calm")])
    try library.song("plain.ogg", frequency: 550, title: "Plain")
    do {
      // The index as schema 3 left it: scanned, one song played 7 times, no mood columns.
      let index = try DirectIndex(path: library.indexPath)
      _ = try library.scanner.scan(through: index)
      try index.index.database.execute(
        """
        UPDATE items SET play_count = 7, loudness = -99 WHERE title = 'Calm';
        DROP INDEX items_mood;
        ALTER TABLE items DROP COLUMN mood;
        ALTER TABLE items DROP COLUMN mood_key;
        ALTER TABLE items DROP COLUMN tags_version;
        UPDATE meta SET value = '3' WHERE key = 'schema_version';
        """)
    }
    var warnings: [String] = []
    let index = try DirectIndex(path: library.indexPath) { warnings.append($0) }
    #expect(warnings.isEmpty, "migrated, not rebuilt: \(warnings)")
    #expect(try index.item(at: path)?.mood == nil)
    let report = try library.scanner.scan(through: index)
    #expect(report.tagsReread == 2 && report.filesOpened == 0 && report.updated == 0, "\(report)")
    #expect(report.description.contains("2 tags re-read"), "\(report)")
    let item = try #require(try index.item(at: path))
    #expect(item.mood == "Calm")
    // The analysis was not made again (the marker stays), and the player's count stays.
    #expect(item.loudness == -99 && item.playCount == 7)
    let again = try library.scanner.scan(through: index)
    #expect(again.tagsReread == 0 && again.unchanged == 2, "\(again)")
  }

  @Test(
    "A library folder that is there but empty (a drive not mounted) keeps its songs; when they come back they are the same songs"
  )
  func emptyFolderKeepsItsSongs() throws {
    let library = try LibraryFolder()
    try library.song("A/one.ogg", frequency: 440, title: "One")
    try library.song("A/two.ogg", frequency: 550, title: "Two")
    let index = try DirectIndex(path: library.indexPath)
    _ = try library.scanner.scan(through: index)
    let before = try index.items().compactMap(\.persistentID)
    // The drive goes: its mount point is an empty folder.
    let away = library.temporary.path + "/away"
    try FileManager.default.moveItem(atPath: library.music, toPath: away)
    try FileManager.default.createDirectory(atPath: library.music, withIntermediateDirectories: false)
    let empty = try library.scanner.scan(through: index)
    #expect(empty.removed == 0, "\(empty)")
    #expect(
      empty.failed.contains { $0.reason.contains("the library folder is empty: its 2 songs stay") }, "\(empty.failed)")
    #expect(try index.items().compactMap(\.persistentID) == before)
    // It comes back: nothing added, nothing removed, the same ids.
    try FileManager.default.removeItem(atPath: library.music)
    try FileManager.default.moveItem(atPath: away, toPath: library.music)
    let back = try library.scanner.scan(through: index)
    #expect(back.added == 0 && back.removed == 0, "\(back)")
    #expect(try index.items().compactMap(\.persistentID) == before)
    // A folder emptied of its songs but holding something else is taken at its word.
    try FileManager.default.removeItem(atPath: library.music + "/A")
    try Data("notes".utf8).write(to: URL(fileURLWithPath: library.music + "/notes.txt"))
    let cleared = try library.scanner.scan(through: index)
    #expect(cleared.removed == 2, "\(cleared)")
  }

  @Test("A folder of FLAC and Opus files is indexed with its tags (FLACs scanned as 0 added, 0 failed)")
  func flacAndOpusFilesAreIndexed() throws {
    let library = try LibraryFolder()
    for (index, title) in ["Lossless One", "Lossless Two"].enumerated() {
      let format = PCMFormat.stereo44100
      try FLACEncoder.encode(
        samples: ToneGenerator.sine(frequency: 440 + 110 * Double(index), seconds: 0.4, format: format),
        format: format, tags: [("TITLE", title), ("ARTIST", "Flac Artist"), ("BPM", "96")],
        to: library.music + "/\(index + 1).flac")
    }
    let opus = (0..<(2 * 24_000)).map { Float(0.3 * sin(Double($0 / 2) * 0.05)) }
    try OpusEncoder.encode(
      samples: opus, channels: 2, tags: [("TITLE", "Small Opus"), ("ARTIST", "Opus Artist")],
      to: library.music + "/3.opus")
    let index = try DirectIndex(path: library.indexPath)
    let report = try library.scanner.scan(through: index)
    #expect(report.added == 3)
    #expect(report.failed.isEmpty)
    let items = try index.items()
    #expect(items.map(\.title) == ["Lossless One", "Lossless Two", "Small Opus"])
    #expect(
      items.prefix(2).allSatisfy { $0.artist == "Flac Artist" && $0.beatsPerMinute == 96 && $0.sampleRate == 44_100 })
    #expect(abs((items.first?.playbackDuration ?? 0) - 0.4) < 0.001)
    #expect(items.last?.sampleRate == 48_000 && abs((items.last?.playbackDuration ?? 0) - 0.5) < 0.001)
  }

  @Test("Audio files of formats Leitmotif does not play are counted by extension and named in the report")
  func unsupportedFormatsAreCounted() throws {
    let library = try LibraryFolder()
    try library.song("one.ogg", frequency: 440, title: "One")
    for name in ["a.m4a", "b.M4A", "c.m4a", "d.wma", "notes.txt", "cover.jpg"] {
      try Data("not decoded".utf8).write(to: URL(fileURLWithPath: library.music + "/" + name))
    }
    let index = try DirectIndex(path: library.indexPath)
    let report = try library.scanner.scan(through: index)
    #expect(report.added == 1)
    #expect(report.failed.isEmpty, "unsupported files are not failures: \(report.failed)")
    #expect(report.unsupported == ["m4a": 3, "wma": 1])
    #expect(
      report.description.hasSuffix(
        "; 3 .m4a and 1 .wma files not played (Leitmotif plays Ogg Vorbis, Opus, MP3, FLAC, WAV and AIFF)"),
      "\(report)")
    #expect(report.filesOpened == 1, "only the Ogg file is opened")
  }

  @Test("A scan reports its progress after each file it reads; a rescan of nothing new reads none")
  func progress() throws {
    let library = try LibraryFolder()
    for (index, pitch) in [440.0, 550, 660].enumerated() {
      try library.song("\(index).ogg", frequency: pitch, title: "\(index)")
    }
    let index = try DirectIndex(path: library.indexPath)
    var seen: [ScanProgress] = []
    _ = try library.scanner.scan(through: index) { seen.append($0) }
    #expect(seen.map(\.filesRead) == [1, 2, 3] && seen.allSatisfy { $0.filesToRead == 3 })
    #expect(seen.last?.secondsLeft == 0)
    seen = []
    _ = try library.scanner.scan(through: index) { seen.append($0) }
    #expect(seen.isEmpty)
  }

  /// The nice values of this process's threads named `name` (from /proc/self/task/*/stat).
  static func niceValues(ofThreadsNamed name: String) -> [Int] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { task in
      guard let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8),
        comm.trimmingCharacters(in: .newlines) == name,
        let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
      else { return nil }
      // After "pid (comm)": state is field 3, nice field 19.
      let fields = stat[stat.index(after: close)...].split(separator: " ")
      return fields.count > 16 ? Int(fields[16]) : nil
    }
  }

  @Test("Files are read and analysed on a thread at nice 10; the caller's thread keeps its priority")
  func readingRunsAtLowPriority() throws {
    let library = try LibraryFolder()
    for (index, pitch) in [440.0, 550].enumerated() {
      try library.song("\(index).ogg", frequency: pitch, title: "\(index)")
    }
    let index = try DirectIndex(path: library.indexPath)
    let callerBefore = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
    var readers: [[Int]] = []
    var callerDuring: [Int32] = []
    let report = try library.scanner.scan(through: index) { _ in
      readers.append(Self.niceValues(ofThreadsNamed: LowPriorityReader.threadName))
      callerDuring.append(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0))
    }
    #expect(report.added == 2)
    #expect(readers.count == 2 && readers.allSatisfy { !$0.isEmpty && $0.allSatisfy { $0 == 10 } }, "\(readers)")
    #expect(
      callerDuring.allSatisfy { $0 == callerBefore }
        && getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == callerBefore)
  }

  /// A gate that lets `allowed` files be read, then refuses (as a consent revoked mid-scan would).
  final class StoppingIndex: LibraryIndexAccess, @unchecked Sendable {
    let inner: DirectIndex
    var allowed: Int
    init(_ inner: DirectIndex, allowed: Int) {
      self.inner = inner
      self.allowed = allowed
    }
    func withIndex<T>(_ body: (LibraryIndex) throws(LibraryError) -> T) throws(LibraryError) -> T {
      try inner.withIndex(body)
    }
    func checkAccess() throws(LibraryError) {
      allowed -= 1
      if allowed < 0 { throw LibraryError.accessDenied(.denied, reason: "stopped by the test") }
    }
  }

  @Test("A scan stopped part-way keeps the batches it finished; the next one reads only the rest")
  func interruptedScanResumes() throws {
    let library = try LibraryFolder()
    let count = LibraryScanner.batchFiles + 6
    for index in 0..<count { try library.song("\(index).ogg", frequency: 200 + Double(index) * 7, title: "\(index)") }
    let index = try DirectIndex(path: library.indexPath)
    #expect(throws: LibraryError.self) {
      try library.scanner.scan(through: StoppingIndex(index, allowed: LibraryScanner.batchFiles + 3))
    }
    #expect(try index.items().count == LibraryScanner.batchFiles, "the first batch was written")
    let report = try library.scanner.scan(through: index)
    #expect(report.unchanged == LibraryScanner.batchFiles && report.added == 6 && report.filesOpened == 6, "\(report)")
    #expect(try index.items().count == count)
  }

  @Test func aFileThatGrowsOrVanishesAfterTheWalkIsNotIndexedFromAHalfRead() throws {
    let library = try LibraryFolder()
    let path = try library.song("growing.ogg", frequency: 440, title: "Growing")
    // What the walk saw; then the file grows (still being written) before it is read.
    let walked = try #require(FolderWalker.status(of: path))
    let handle = try #require(FileHandle(forWritingAtPath: path))
    try handle.seekToEnd()
    try handle.write(contentsOf: Data(repeating: 0, count: 4096))
    try handle.close()
    guard case .changedWhileRead = LibraryScanner.read(walked) else {
      Issue.record("a file that changed after the walk must not be indexed from that read")
      return
    }
    // The next scan walks it anew and reads it (the appended zeros do not stop the decoder).
    let index = try DirectIndex(path: library.indexPath)
    let report = try library.scanner.scan(through: index)
    #expect(report.added == 1, "\(report.failed)")
    // A file that vanishes between the walk and the read is not an error: it is gone.
    let gone = try library.song("gone.ogg", frequency: 550, title: "Gone")
    let walkedGone = try #require(FolderWalker.status(of: gone))
    try FileManager.default.removeItem(atPath: gone)
    guard case .vanished = LibraryScanner.read(walkedGone) else {
      Issue.record("a file removed after the walk must read as vanished")
      return
    }
  }

  @Test func yearAndCompilationTagsAreRead() throws {
    let library = try LibraryFolder()
    let format = PCMFormat.mono22050
    let tone = ToneGenerator.sine(frequency: 330, seconds: 0.3, format: format)
    try VorbisEncoder.encode(
      samples: tone, format: format, tags: [("TITLE", "Dated"), ("DATE", "1999-05-01"), ("COMPILATION", "1")],
      to: library.music + "/dated.ogg")
    try VorbisEncoder.encode(
      samples: ToneGenerator.sine(frequency: 440, seconds: 0.3, format: format), format: format,
      tags: [("TITLE", "Plain")], to: library.music + "/plain.ogg")
    let index = try DirectIndex(path: library.indexPath)
    _ = try library.scanner.scan(through: index)
    let items = try index.items()
    let dated = try #require(items.first { $0.title == "Dated" })
    #expect(dated.year == 1999)
    #expect(dated.isCompilation)
    let plain = try #require(items.first { $0.title == "Plain" })
    #expect(plain.year == nil)
    #expect(!plain.isCompilation)
  }

  @Test func rescanWithNothingChangedOpensNoFile() throws {
    let library = try LibraryFolder()
    try library.song("one.ogg", frequency: 440, title: "One")
    try library.song("two.ogg", frequency: 550, title: "Two")
    let index = try DirectIndex(path: library.indexPath)
    _ = try library.scanner.scan(through: index)
    let modified = try index.index.lastModifiedDate()

    let report = try library.scanner.scan(through: index)

    #expect(report.unchanged == 2)
    #expect(report.filesOpened == 0)
    #expect(!report.hasChanges)
    #expect(try index.index.lastModifiedDate() == modified)
  }

  @Test func aTagEditUpdatesTheItemAndKeepsItsPersistentID() throws {
    let library = try LibraryFolder()
    let path = try library.song("one.ogg", frequency: 440, title: "One")
    let index = try DirectIndex(path: library.indexPath)
    _ = try library.scanner.scan(through: index)
    let before = try #require(try index.item(at: path))

    try library.song("one.ogg", frequency: 440, title: "One (Remastered)", artist: "Someone Else")
    let report = try library.scanner.scan(through: index)

    #expect(report.updated == 1 && report.added == 0 && report.removed == 0)
    let after = try #require(try index.item(at: path))
    #expect(after.persistentID == before.persistentID)
    #expect(after.title == "One (Remastered)")
    #expect(after.artist == "Someone Else")
  }

  @Test func aRenameOrMoveKeepsThePersistentIDAndThePlayCount() throws {
    let library = try LibraryFolder()
    let path = try library.song("Inbox/one.ogg", frequency: 440, title: "One")
    try library.song("Inbox/two.ogg", frequency: 550, title: "Two")
    let index = try DirectIndex(path: library.indexPath)
    _ = try library.scanner.scan(through: index)
    let before = try #require(try index.item(at: path))
    let id = Int64(bitPattern: try #require(before.persistentID))
    #expect(try index.index.recordPlay(persistentID: id, at: Date()))
    #expect(try index.index.recordPlay(persistentID: id, at: Date()))

    let moved = library.music + "/Sorted/Artist/01 One.ogg"
    try FileManager.default.createDirectory(
      atPath: (moved as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    #expect(rename(path, moved) == 0)
    let report = try library.scanner.scan(through: index)

    #expect(report.moved == 1 && report.added == 0 && report.removed == 0 && report.unchanged == 1)
    let after = try #require(try index.item(at: moved))
    #expect(after.persistentID == before.persistentID)
    #expect(after.playCount == 2)
    #expect(after.dateAdded == before.dateAdded)
    #expect(try index.item(at: path) == nil)
  }

  @Test func filesThatVanishAreRemoved() throws {
    let library = try LibraryFolder()
    let path = try library.song("one.ogg", frequency: 440, title: "One")
    try library.song("two.ogg", frequency: 550, title: "Two")
    let index = try DirectIndex(path: library.indexPath)
    _ = try library.scanner.scan(through: index)

    #expect(unlink(path) == 0)
    let report = try library.scanner.scan(through: index)

    #expect(report.removed == 1 && report.unchanged == 1)
    #expect(try index.items().map(\.title) == ["Two"])
  }

  @Test func identicalAudioAtTwoPathsGetsTwoItems() throws {
    let library = try LibraryFolder()
    try library.song("one.ogg", frequency: 440, title: "One")
    try library.song("copy/one.ogg", frequency: 440, title: "One")
    let index = try DirectIndex(path: library.indexPath)

    let report = try library.scanner.scan(through: index)

    #expect(report.added == 2)
    #expect(Set(try index.items().compactMap(\.persistentID)).count == 2)
  }

  @Test func emptyAndDamagedFilesAreRecordedAsFailedAndNotRetriedUntilTheyChange() throws {
    let library = try LibraryFolder()
    try library.song("good.ogg", frequency: 440, title: "Good")
    let empty = library.music + "/empty.ogg"
    let damaged = library.music + "/damaged.mp3"
    _ = FileManager.default.createFile(atPath: empty, contents: Data())
    _ = FileManager.default.createFile(
      atPath: damaged, contents: Data(String(repeating: "no audio here ", count: 50).utf8))
    let index = try DirectIndex(path: library.indexPath)

    let first = try library.scanner.scan(through: index)

    #expect(first.added == 1)
    #expect(Set(first.failed.map(\.path)) == [empty, damaged])
    #expect(first.failed.first { $0.path == empty }?.reason.contains("empty") == true)
    let recorded = try index.index.failures()
    #expect(recorded.map(\.path) == [damaged, empty])
    #expect(recorded.allSatisfy { !$0.reason.isEmpty })

    let second = try library.scanner.scan(through: index)
    #expect(second.failed.isEmpty && second.failedUnchanged == 2 && second.filesOpened == 0)
    // Named, with the reason they failed (the count alone named none).
    #expect(second.notRetried.map(\.path).sorted() == [damaged, empty])
    #expect(second.notRetried.first { $0.path == empty }?.reason.contains("empty") == true)

    // Fixed: read again, indexed, and no longer a failure.
    try library.song("empty.ogg", frequency: 770, title: "Fixed")
    let third = try library.scanner.scan(through: index)
    #expect(third.added == 1 && third.failedUnchanged == 1)
    #expect(try index.index.failures().map(\.path) == [damaged])
  }

  @Test func symbolicLinkLoopsAndLinksThatLeaveTheLibraryAreNotFollowed() throws {
    let library = try LibraryFolder()
    try library.song("inside/one.ogg", frequency: 440, title: "One")
    let outside = library.temporary.path + "/Elsewhere"
    try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
    let format = PCMFormat.mono22050
    try VorbisEncoder.encode(
      samples: ToneGenerator.sine(frequency: 880, seconds: 0.3, format: format), format: format,
      tags: [("TITLE", "Secret")], to: outside + "/secret.ogg")
    #expect(symlink(outside, library.music + "/to-elsewhere") == 0)
    #expect(symlink(outside + "/secret.ogg", library.music + "/secret.ogg") == 0)
    #expect(symlink(library.music + "/loop-b", library.music + "/loop-a") == 0)
    #expect(symlink(library.music + "/loop-a", library.music + "/loop-b") == 0)
    #expect(symlink(library.music, library.music + "/inside/up") == 0)  // a cycle through a folder
    #expect(symlink(library.music + "/inside/one.ogg", library.music + "/alias.ogg") == 0)
    let index = try DirectIndex(path: library.indexPath)

    let report = try library.scanner.scan(through: index)

    #expect(report.added == 1)
    #expect(try index.items().map(\.title) == ["One"])
    let skipped = Set(report.skipped.map { ($0.path as NSString).lastPathComponent })
    #expect(skipped == ["to-elsewhere", "secret.ogg", "loop-a", "loop-b"])
    #expect(report.skipped.first { $0.path.hasSuffix("loop-a") }?.reason.contains("loop") == true)
    #expect(report.skipped.first { $0.path.hasSuffix("to-elsewhere") }?.reason.contains("leaves") == true)
  }

  @Test(.enabled(if: geteuid() != 0, "root reads every folder"))
  func anUnreadableFolderIsReportedAndItsItemsKept() throws {
    let library = try LibraryFolder()
    try library.song("locked/one.ogg", frequency: 440, title: "One")
    try library.song("two.ogg", frequency: 550, title: "Two")
    let index = try DirectIndex(path: library.indexPath)
    _ = try library.scanner.scan(through: index)

    chmod(library.music + "/locked", 0)
    defer { chmod(library.music + "/locked", 0o755) }
    let report = try library.scanner.scan(through: index)

    #expect(report.failed.map(\.path) == [library.music + "/locked"])
    #expect(report.removed == 0)
    #expect(try index.items().count == 2)
  }

  @Test func aDamagedIndexIsRebuiltWithAWarning() throws {
    let library = try LibraryFolder()
    try library.song("one.ogg", frequency: 440, title: "One")
    try FileManager.default.createDirectory(
      atPath: (library.indexPath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try Data(String(repeating: "garbage, not SQLite ", count: 400).utf8).write(
      to: URL(fileURLWithPath: library.indexPath))
    var warnings: [String] = []

    let index = try DirectIndex(path: library.indexPath) { warnings.append($0) }
    let report = try library.scanner.scan(through: index)

    #expect(warnings.count == 1)
    #expect(warnings.first?.contains("rebuilt") == true)
    #expect(report.added == 1)
  }

  @Test func anIndexOfANewerSchemaIsRebuiltWithAWarning() throws {
    let library = try LibraryFolder()
    try library.song("one.ogg", frequency: 440, title: "One")
    do {
      let index = try DirectIndex(path: library.indexPath)
      _ = try library.scanner.scan(through: index)
      try index.index.database.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    }
    var warnings: [String] = []

    let index = try DirectIndex(path: library.indexPath) { warnings.append($0) }

    #expect(warnings.count == 1)
    #expect(warnings.first?.contains("schema version 99") == true)
    #expect(try index.items().isEmpty)
    #expect(try library.scanner.scan(through: index).added == 1)
  }

  @Test func aSecondScanWaitsForTheFirstOrSaysBusy() throws {
    let library = try LibraryFolder()
    let lockPath = library.temporary.path + "/index.scan-lock"
    let held = Mutex<ScanLock?>(try ScanLock(path: lockPath, waitingUpToSeconds: 0))

    #expect(throws: LibraryError.self) { try ScanLock(path: lockPath, waitingUpToSeconds: 0.1) }
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { held.withLock { $0 = nil } }
    let started = Date()
    let second = try ScanLock(path: lockPath, waitingUpToSeconds: 5)
    #expect(Date().timeIntervalSince(started) >= 0.2)
    withExtendedLifetime(second) {}
  }

  @Test func twoScansAtOnceOnTwoConnectionsLeaveOneConsistentIndex() throws {
    let library = try LibraryFolder()
    for number in 0..<6 {
      try library.song("song\(number).ogg", frequency: 300 + Double(number) * 50, title: "Song \(number)")
    }
    let first = try DirectIndex(path: library.indexPath)
    let second = try DirectIndex(path: library.indexPath)
    let results = Mutex<[Result<ScanReport, LibraryError>]>([])
    let group = DispatchGroup()
    for index in [first, second] {
      DispatchQueue.global().async(group: group) {
        let result = Result { () throws(LibraryError) -> ScanReport in
          let lock = try ScanLock(path: library.indexPath + ".scan-lock", waitingUpToSeconds: 30)
          defer { withExtendedLifetime(lock) {} }
          return try library.scanner.scan(through: index)
        }
        results.withLock { $0.append(result) }
      }
    }
    group.wait()

    let reports = try results.withLock { try $0.map { try $0.get() } }
    #expect(reports.map(\.added).sorted() == [0, 6])
    #expect(try first.items().count == 6)
  }

  @Test func watchModeIndexesAFileAddedWhileWatching() throws {
    let library = try LibraryFolder()
    try library.song("one.ogg", frequency: 440, title: "One")
    let index = try DirectIndex(path: library.indexPath)
    let first = try library.scanner.scan(through: index)
    let scanner = library.scanner
    let rescans = Mutex(0)
    let watcher = try LibraryWatcher(
      folders: first.walkedFolders,
      rescan: {
        rescans.withLock { $0 += 1 }
        return try? scanner.scan(through: index).walkedFolders
      }, warn: { _ in })
    watcher.start()
    defer { watcher.stop() }

    try library.song("New Album/two.ogg", frequency: 550, title: "Two")
    let deadline = Date().addingTimeInterval(3)
    while try index.items().count < 2 && Date() < deadline { usleep(50_000) }

    #expect(try index.items().compactMap(\.title).sorted() == ["One", "Two"])
    // A file in a folder made while watching is seen too (the folder got its watch).
    try library.song("New Album/three.ogg", frequency: 660, title: "Three")
    let later = Date().addingTimeInterval(3)
    while try index.items().count < 3 && Date() < later { usleep(50_000) }
    #expect(try index.items().count == 3)
    #expect(rescans.withLock { $0 } >= 1)
  }

  @Test("Watch mode owes the rescans it could not make (consent withdrawn) and makes one when it can again")
  func watchModeCatchesUpWhenConsentReturns() throws {
    let library = try LibraryFolder()
    let gone = try library.song("gone.ogg", frequency: 440, title: "Gone")
    try library.song("stays.ogg", frequency: 550, title: "Stays")
    let index = try DirectIndex(path: library.indexPath)
    let first = try library.scanner.scan(through: index)
    let scanner = library.scanner
    let allowed = Atomic<Bool>(true)
    let watcher = try LibraryWatcher(
      folders: first.walkedFolders,
      rescan: { allowed.load(ordering: .acquiring) ? try? scanner.scan(through: index).walkedFolders : nil },
      warn: { _ in }, isReady: { allowed.load(ordering: .acquiring) })
    watcher.start()
    defer { watcher.stop() }
    usleep(300_000)
    allowed.store(false, ordering: .releasing)  // the player says no
    try FileManager.default.removeItem(atPath: gone)
    usleep(1_000_000)  // the change is seen, and its rescan owed
    #expect(try index.items().count == 2, "nothing read without consent")
    allowed.store(true, ordering: .releasing)  // and yes again: no file changes from here
    let deadline = Date().addingTimeInterval(3)
    while try index.items().count > 1 && Date() < deadline { usleep(50_000) }
    #expect(try index.items().compactMap(\.title) == ["Stays"])
  }

  @Test func withoutAuthorizationScanReadsNothing() throws {
    let library = try LibraryFolder()
    try library.song("one.ogg", frequency: 440, title: "One")
    let configuration = MediaLibrary.Configuration.sandboxed(
      applicationID: "scan-test", root: library.temporary.path, music: library.music)
    let mediaLibrary = MediaLibrary(configuration: configuration)

    #expect(throws: LibraryError.self) { try mediaLibrary.scan() }
    #expect(throws: LibraryError.self) { try mediaLibrary.startWatching() }
    #expect(mediaLibrary.lastModifiedDate == nil)
    #expect(!FileManager.default.fileExists(atPath: configuration.indexPath))
  }
}

/// Through the public API, with consent given by a prompt that says yes.
@Suite("LibraryScan through MediaLibrary")
struct LibraryScanMediaLibraryTests {
  struct YesPrompt: AuthorizationPrompt {
    func askForLibraryAccess(applicationName: String, usageDescription: String) -> Bool? { true }
  }

  private static func authorizedLibrary(_ library: LibraryFolder) throws -> MediaLibrary {
    let configuration = MediaLibrary.Configuration.sandboxed(
      applicationID: "scan-test", root: library.temporary.path, music: library.music)
    let mediaLibrary = MediaLibrary(configuration: configuration, prompt: YesPrompt())
    #expect(try mediaLibrary.requestAuthorization() == .authorized)
    return mediaLibrary
  }

  @Test func scanRecordsPlaysAndTellsObservers() throws {
    let folder = try LibraryFolder()
    let path = try folder.song("one.ogg", frequency: 440, title: "One")
    let library = try Self.authorizedLibrary(folder)
    let heard = Mutex<[ScanReport]>([])
    let token = library.addLibraryObserver { report in heard.withLock { $0.append(report) } }
    #expect(library.lastModifiedDate == nil)

    let report = try library.scan()
    #expect(report.added == 1)
    #expect(library.lastModifiedDate != nil)
    let id = try #require(
      try library.withIndex { (index) throws(LibraryError) in try? index.allItems() }?.first?.persistentID)
    var item = MediaItem(path: path)
    item.persistentID = id
    #expect(try library.recordPlay(of: item))
    #expect(try library.recordSkip(of: item))
    // Not in the library: said so, nothing counted.
    var stranger = MediaItem(path: "/etc/passwd")
    #expect(try !library.recordPlay(of: stranger))
    stranger.persistentID = id &+ 1
    #expect(try !library.recordSkip(of: stranger))
    let stored = try library.withIndex { (index) throws(LibraryError) -> MediaItem? in
      (try? index.item(persistentID: Int64(bitPattern: id))) ?? nil
    }
    #expect(stored?.playCount == 1 && stored?.skipCount == 1 && stored?.lastPlayedDate != nil)

    // A rescan that changes nothing is not announced.
    _ = try library.scan()
    let deadline = Date().addingTimeInterval(2)
    while heard.withLock({ $0.isEmpty }) && Date() < deadline { usleep(20_000) }
    usleep(100_000)
    #expect(heard.withLock { $0.map(\.added) } == [1])
    library.removeLibraryObserver(token)
  }

  @Test func watchModeSeesANewFileAndAnnouncesIt() throws {
    let folder = try LibraryFolder()
    try folder.song("one.ogg", frequency: 440, title: "One")
    let library = try Self.authorizedLibrary(folder)
    _ = try library.scan()
    let heard = Mutex(0)
    library.addLibraryObserver { report in heard.withLock { $0 += report.added } }
    try library.startWatching()
    defer { library.stopWatching() }
    #expect(library.isWatching)
    usleep(200_000)

    try folder.song("Later/two.ogg", frequency: 550, title: "Two")
    let deadline = Date().addingTimeInterval(3)
    while heard.withLock({ $0 }) < 1 && Date() < deadline { usleep(50_000) }

    #expect(heard.withLock { $0 } == 1)
    let titles = try library.withIndex { (index) throws(LibraryError) in try? index.allItems() }?.compactMap(\.title)
    #expect(titles?.sorted() == ["One", "Two"])
  }

  @Test func twoLibrariesOnTheSameFoldersScanOneAtATime() throws {
    let folder = try LibraryFolder()
    for number in 0..<4 { try folder.song("s\(number).ogg", frequency: 300 + Double(number) * 70, title: "S\(number)") }
    let first = try Self.authorizedLibrary(folder)
    let second = try Self.authorizedLibrary(folder)
    let results = Mutex<[Int]>([])
    DispatchQueue.concurrentPerform(iterations: 2) { turn in
      let library = turn == 0 ? first : second
      if let report = try? library.scan() { results.withLock { $0.append(report.added) } }
    }
    #expect(results.withLock { $0.sorted() } == [0, 4])
  }
}

@Suite("LibraryScan: leitmotif scan")
struct LibraryScanCLITests {
  func run(_ arguments: [String], home: String) throws -> LeitmotifCommand.Run {
    try LeitmotifCommand.run(
      arguments,
      environment: [
        "HOME": home, "XDG_STATE_HOME": home + "/state", "XDG_CACHE_HOME": home + "/cache",
        "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
      ])
  }

  @Test(
    "query prints a title with an escape sequence and a newline escaped: the terminal sees no control character",
    .enabled(if: LeitmotifCommand.executable != nil, "the leitmotif executable is not next to the test bundle"))
  func queryEscapesControlCharacters() throws {
    let folder = try LibraryFolder()
    try folder.song("odd.ogg", frequency: 440, title: "Red\u{1B}[31mAlert\nSecond line\u{7}")
    let home = folder.temporary.path
    #expect(try run(["access", "allow", "query-cli-test"], home: home).status == 0)
    // Before any scan, an empty answer says what to run.
    let unscanned = try run(["query", "--app", "query-cli-test", "--library", folder.music], home: home)
    #expect(unscanned.status == 0, "\(unscanned.errors)")
    // The command that fills this index: the query's own --app and --library (a bare
    // `leitmotif scan` indexed ~/Music for another id).
    let scanCommand = "leitmotif scan --app query-cli-test --library \(folder.music)"
    #expect(
      unscanned.errors.contains("holds no songs from") && unscanned.errors.contains("run `\(scanCommand)` first"),
      "\(unscanned.errors)")
    #expect(try run(["scan", "--app", "query-cli-test", "--library", folder.music], home: home).status == 0)
    let query = try run(["query", "--app", "query-cli-test", "--library", folder.music], home: home)
    #expect(query.status == 0, "\(query.errors)")
    #expect(!query.errors.contains("leitmotif scan"), "\(query.errors)")
    #expect(!query.output.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "\(query.output)")
    #expect(query.output.contains("Red\\e[31mAlert\\nSecond line\\u{7}"), "\(query.output)")
    // The header, one row, the count: the newline in the title did not break the row.
    #expect(query.output.split(separator: "\n").count == 3, "\(query.output)")
  }

  @Test(
    "scan: no access is status 3 naming the state; with access it prints what it did and each failure",
    .enabled(if: LeitmotifCommand.executable != nil, "the leitmotif executable is not next to the test bundle"))
  func scanCommand() throws {
    let folder = try LibraryFolder()
    try folder.song("one.ogg", frequency: 440, title: "One")
    _ = FileManager.default.createFile(atPath: folder.music + "/empty.mp3", contents: Data())
    let home = folder.temporary.path

    // No application id at all is a usage error (it said "no access", and suggested an
    // `access allow` that refused the same id).
    for command in ["scan", "query"] {
      let bad = try run([command, "--app", "bad id", "--library", folder.music], home: home)
      #expect(bad.status == 2, "\(command): \(bad.errors)")
      #expect(bad.errors.contains("\(command) --app: \"bad id\" is not an application id"), "\(bad.errors)")
    }

    let denied = try run(["scan", "--app", "scan-cli-test", "--library", folder.music], home: home)
    #expect(denied.status == 3)
    #expect(denied.errors.contains("notDetermined"))
    #expect(!FileManager.default.fileExists(atPath: home + "/cache/leitmotif"))

    #expect(try run(["access", "allow", "scan-cli-test"], home: home).status == 0)
    let scanned = try run(["scan", "--app", "scan-cli-test", "--library", folder.music], home: home)
    #expect(scanned.status == 1)  // a file failed
    #expect(scanned.output.contains("1 added"))
    #expect(scanned.output.contains("failed: \(folder.music)/empty.mp3: the file is empty"))

    let json = try run(["scan", "--app", "scan-cli-test", "--library", folder.music, "--json"], home: home)
    #expect(json.status == 0)
    #expect(json.output.contains("\"unchanged\":1"))
    #expect(json.output.contains("\"failedUnchanged\":1"))
    #expect(
      json.output.contains("\"notRetried\":[{\"path\":\"\(folder.music)/empty.mp3\",\"reason\":\"the file is empty"))
    let again = try run(["scan", "--app", "scan-cli-test", "--library", folder.music], home: home)
    #expect(
      again.output.contains("not retried (unchanged since it failed): \(folder.music)/empty.mp3: the file is empty"))
  }
}

/// A scan that dies inside a file must not die there again on every run (issue 13, part 1).
@Suite(
  "LibraryScan journal: the file a scan died in gets a second chance, read last; dying in it again records it failed")
struct ScanJournalTests {
  private func environment(_ home: String) -> [String: String] {
    [
      "HOME": home, "XDG_STATE_HOME": home + "/state", "XDG_CACHE_HOME": home + "/cache",
      "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
    ]
  }

  @Test("A journal left by a scan that ended once inside a file: the next scan reads that file again, last, as a retry")
  func leftOverEntryGetsASecondChance() throws {
    let folder = try LibraryFolder()
    let one = try folder.song("one.ogg", frequency: 440, title: "One")
    let two = try folder.song("two.ogg", frequency: 550, title: "Two")
    let index = try DirectIndex(path: folder.indexPath)
    let status = try #require(FolderWalker.status(of: one))
    // What a scan writes before it opens `one.ogg`, left behind because it ended there (a
    // Ctrl-C, a game quit). It used to be recorded as failed at once: a good song lost.
    do {
      let journal = try #require(ScanJournal(indexPath: folder.indexPath))
      journal.reading(
        .init(path: one, sizeBytes: status.sizeBytes, modificationNanoseconds: status.modificationNanoseconds))
    }
    var order: [String] = []
    let journal = try #require(ScanJournal(indexPath: folder.indexPath))
    let report = try folder.scanner.scan(through: index) { _ in
      if let entry = journal.leftOver() { order.append(entry.path + (entry.isRetry ? " (retry)" : "")) }
    }
    #expect(report.added == 2 && report.failed.isEmpty, "\(report)")
    #expect(order == [two, one + " (retry)"], "\(order)")
  }

  @Test(
    "A journal left by a scan that ended inside a file on its second chance: the next scan records it failed without opening it"
  )
  func leftOverEntryIsRecorded() throws {
    let folder = try LibraryFolder()
    let one = try folder.song("one.ogg", frequency: 440, title: "One")
    try folder.song("two.ogg", frequency: 550, title: "Two")
    let index = try DirectIndex(path: folder.indexPath)
    let status = try #require(FolderWalker.status(of: one))
    // What a scan writes before it opens `one.ogg` a second time, left behind because it died there.
    do {
      let journal = try #require(ScanJournal(indexPath: folder.indexPath))
      journal.reading(
        .init(
          path: one, sizeBytes: status.sizeBytes, modificationNanoseconds: status.modificationNanoseconds,
          isRetry: true))
    }
    let report = try folder.scanner.scan(through: index)
    #expect(report.added == 1, "only two.ogg is indexed: \(report)")
    #expect(report.failed.map(\.path) == [one])
    #expect(report.failed.first?.reason == LibraryScanner.diedWhileReading)
    #expect(report.filesOpened == 1)
    // The journal is empty again, and the failure stays until the file changes.
    #expect(ScanJournal(indexPath: folder.indexPath)?.leftOver() == nil)
    let again = try folder.scanner.scan(through: index)
    #expect(again.failed.isEmpty && again.failedUnchanged == 1 && again.filesOpened == 0)
    // A changed file is read again.
    try folder.song("one.ogg", frequency: 660, title: "One again")
    let changed = try folder.scanner.scan(through: index)
    #expect(changed.updated + changed.added == 1 && changed.failed.isEmpty, "\(changed)")
  }

  @Test("A journal naming a file that changed since is ignored: the file is read as usual")
  func staleEntryIsIgnored() throws {
    let folder = try LibraryFolder()
    let one = try folder.song("one.ogg", frequency: 440, title: "One")
    let index = try DirectIndex(path: folder.indexPath)
    let journal = try #require(ScanJournal(indexPath: folder.indexPath))
    journal.reading(.init(path: one, sizeBytes: 1, modificationNanoseconds: 1))
    let report = try folder.scanner.scan(through: index)
    #expect(report.added == 1 && report.failed.isEmpty, "\(report)")
  }

  @Test(
    "leitmotif scan killed while reading: the next scan reads that file again and indexes every song",
    .enabled(if: LeitmotifCommand.executable != nil, "the leitmotif executable is not next to the test bundle"),
    .hangGuard)
  func killedScan() throws {
    let folder = try LibraryFolder()
    for index in 0..<40 { try folder.song("song\(index).ogg", frequency: 200 + 10 * Double(index), title: "S\(index)") }
    let home = folder.temporary.path
    #expect(try LeitmotifCommand.run(["access", "allow", "journal-test"], environment: environment(home)).status == 0)
    let arguments = ["scan", "--app", "journal-test", "--library", folder.music]
    let scan = try ChildProcess(LeitmotifCommand.executable, arguments, environment: environment(home))
    // The journal appears with the index; wait until it names a file, then kill the scan there.
    let cache = home + "/cache/leitmotif"
    var named: String? = nil
    let deadline = Date().addingTimeInterval(60)
    while named == nil && Date() < deadline {
      let journals = ((try? FileManager.default.contentsOfDirectory(atPath: cache)) ?? []).filter {
        $0.hasSuffix(".reading")
      }
      if let name = journals.first, let text = try? String(contentsOfFile: cache + "/" + name, encoding: .utf8),
        text.hasSuffix("\n")
      {
        scan.kill()
        named = text.dropLast().split(separator: " ", maxSplits: 2).last.map(String.init)
      }
      usleep(200)
    }
    _ = scan.finish()
    let path = try #require(named, "the scan never named a file in its journal")
    let next = try LeitmotifCommand.run(arguments, environment: environment(home))
    // The kill lands a moment after the journal was seen: on the last file, the scan may have
    // finished by then (all 40 indexed, journal empty). Anywhere else it died inside a file.
    if next.output.contains("40 unchanged") { return }
    // The file it was killed in gets a second chance: nothing is lost (it was recorded as
    // failed: "39 added", one good song left out until the file changed).
    _ = path
    #expect(!(next.output + next.errors).contains("the last scan ended while reading"), "\(next.output)\(next.errors)")
    #expect(next.output.contains("40 added"), "\(next.output)")
  }
}
