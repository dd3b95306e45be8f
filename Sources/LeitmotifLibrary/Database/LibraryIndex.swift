import FoundationEssentials
import LeitmotifAnalysis
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

#if canImport(Glibc)
  import Glibc
#endif

/// The library's SQLite index: the schema, opening (and rebuilding a damaged or newer one), and
/// reading rows into `MediaItem`s. The scanner writes through it, queries read through it.
///
/// One index file per set of library folders, under `$XDG_CACHE_HOME/leitmotif/`, mode 0600
/// (`SQLiteDatabase` makes the file before SQLite does, which would make it 0644). It is a cache:
/// everything in it but play counts, skip counts, ratings and dates can be rebuilt from the files,
/// which is why a damaged or newer-schema file is rebuilt with a warning rather than refused.
// @unchecked Sendable: used only under `MediaLibrary`'s index lock.
package final class LibraryIndex: @unchecked Sendable {
  /// Bump when the schema changes. An index of an older version that `migrations` knows is
  /// brought up to date in place (play counts and ratings kept); any other is rebuilt.
  static let schemaVersion = 4

  /// The statements that take an index from version N to N + 1, by N.
  static let migrations: [Int: String] = [
    // 1 -> 2: what the scan's analysis measures, and the ReplayGain tags (library items ignored
    // them before). Rows of version 1 have analysis_version 0, so the next scan analyses them.
    1: """
    ALTER TABLE items ADD COLUMN loudness REAL;
    ALTER TABLE items ADD COLUMN loudness_range REAL;
    ALTER TABLE items ADD COLUMN true_peak REAL;
    ALTER TABLE items ADD COLUMN detected_bpm REAL;
    ALTER TABLE items ADD COLUMN first_beat REAL;
    ALTER TABLE items ADD COLUMN energy REAL;
    ALTER TABLE items ADD COLUMN bpm_detected INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE items ADD COLUMN beats_per_bar INTEGER;
    ALTER TABLE items ADD COLUMN replay_gain_track REAL;
    ALTER TABLE items ADD COLUMN replay_gain_album REAL;
    ALTER TABLE items ADD COLUMN analysis_version INTEGER NOT NULL DEFAULT 0;
    """,
    // 2 -> 3: where each song's sound begins and ends (AudioAnalysis 3). Rows keep their
    // analysis version (2), older than the current one, so the next scan measures them again.
    2: """
    ALTER TABLE items ADD COLUMN sound_start REAL;
    ALTER TABLE items ADD COLUMN sound_end REAL;
    """,
    // 3 -> 4: the MOOD tag (queries select by it, as bundled sources do), and the version of the
    // tag reading that filled each row. Rows of version 3 have tags_version 0, so the next scan
    // reads their tags again (not their audio: the analysis stands while the file is unchanged).
    3: """
    ALTER TABLE items ADD COLUMN mood TEXT;
    ALTER TABLE items ADD COLUMN mood_key TEXT;
    ALTER TABLE items ADD COLUMN tags_version INTEGER NOT NULL DEFAULT 0;
    """,
  ]

  /// Bump when what is read from a file's tags into a row changes (a new tag, several values
  /// joined): a scan reads the tags of every row of an older version again, without decoding the
  /// audio. 1: MOOD, and several artists, genres and composers joined with " / ".
  static let tagsVersion = 1

  let database: SQLiteDatabase
  let path: String

  /// The columns of `items`, in the order `item(from:)` reads them.
  static let itemColumns = """
    persistent_id, path, title, artist, album_title, album_artist, genre, composer, duration, \
    track_number, disc_number, bpm, year, play_count, skip_count, last_played, date_added, rating, \
    is_compilation, sample_rate, loudness, loudness_range, true_peak, detected_bpm, first_beat, energy, \
    bpm_detected, beats_per_bar, replay_gain_track, replay_gain_album, sound_start, sound_end, mood
    """

  /// The tables of the current schema (an older index keeps its own until migrated).
  static let schemaTables = """
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS items (
      persistent_id INTEGER PRIMARY KEY,      -- from the audio content: survives renames and moves
      path TEXT NOT NULL UNIQUE,              -- absolute, inside a library folder
      size INTEGER NOT NULL,                  -- bytes, and modification time in ns: a rescan
      mtime_ns INTEGER NOT NULL,              -- re-reads a file only when one of them changed
      fingerprint TEXT NOT NULL,              -- content hash the persistent id comes from
      title TEXT, artist TEXT, album_title TEXT, album_artist TEXT, genre TEXT, composer TEXT,
      duration REAL, track_number INTEGER, disc_number INTEGER,
      bpm REAL,                               -- the BPM tag, else the detected tempo (bpm_detected 1)
      year INTEGER,
      play_count INTEGER NOT NULL DEFAULT 0, skip_count INTEGER NOT NULL DEFAULT 0,
      last_played REAL, date_added REAL NOT NULL, rating INTEGER NOT NULL DEFAULT 0,
      is_compilation INTEGER NOT NULL DEFAULT 0, sample_rate INTEGER,
      -- Search and sort keys: folded (case and diacritics) and, for sorting, without a leading
      -- "The " or "A ".
      title_key TEXT, artist_key TEXT, album_key TEXT, album_artist_key TEXT, genre_key TEXT,
      composer_key TEXT, title_sort TEXT, artist_sort TEXT, album_sort TEXT, album_artist_sort TEXT,
      -- The scan's analysis (AudioAnalysis): LUFS, LU, dBTP, BPM, seconds, 0...1; the version of
      -- the analysis that measured them (0: not analysed yet).
      loudness REAL, loudness_range REAL, true_peak REAL, detected_bpm REAL, first_beat REAL, energy REAL,
      bpm_detected INTEGER NOT NULL DEFAULT 0, beats_per_bar INTEGER, replay_gain_track REAL,
      replay_gain_album REAL, analysis_version INTEGER NOT NULL DEFAULT 0,
      sound_start REAL, sound_end REAL,       -- seconds: the first and last sound (-60 dBFS)
      mood TEXT, mood_key TEXT,               -- the MOOD tag, and its folded key
      tags_version INTEGER NOT NULL DEFAULT 0 -- the `tagsVersion` that read the tags (0: older)
    );
    -- Files that could not be read, so a rescan does not retry them until they change.
    CREATE TABLE IF NOT EXISTS failures (
      path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, reason TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS playlists (
      id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, name TEXT NOT NULL, size INTEGER NOT NULL,
      mtime_ns INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS playlist_items (
      playlist_id INTEGER NOT NULL REFERENCES playlists(id) ON DELETE CASCADE,
      position INTEGER NOT NULL, persistent_id INTEGER NOT NULL,
      PRIMARY KEY (playlist_id, position)
    );
    """

  /// The indexes, made once the tables have every column they name.
  static let schemaIndexes = """
    CREATE INDEX IF NOT EXISTS items_artist ON items(artist_key);
    CREATE INDEX IF NOT EXISTS items_album ON items(album_key);
    CREATE INDEX IF NOT EXISTS items_title ON items(title_key);
    CREATE INDEX IF NOT EXISTS items_bpm ON items(bpm);
    CREATE INDEX IF NOT EXISTS items_duration ON items(duration);
    CREATE INDEX IF NOT EXISTS items_fingerprint ON items(fingerprint);
    CREATE INDEX IF NOT EXISTS items_energy ON items(energy);
    CREATE INDEX IF NOT EXISTS items_loudness ON items(loudness);
    CREATE INDEX IF NOT EXISTS items_mood ON items(mood_key);
    """

  /// Opens the index at `path`, creating it; a damaged file, or one of another schema version, is
  /// moved aside and rebuilt, and `warn` is told why.
  init(path: String, warn: (String) -> Void) throws(LibraryError) {
    self.path = path
    do {
      try FileManager.default.createDirectory(
        atPath: FileSystemPath.deletingLastComponent(path), withIntermediateDirectories: true)
    } catch {
      throw LibraryError.index(path: path, reason: "cannot create its folder: \(FolderWalker.errorText(error))")
    }
    // Another connection setting up the same file (two libraries or processes opening a new
    // index at once) can hold its lock for a moment: that is waited out, never "rebuilt" (a
    // rebuild would delete the file under the other connection).
    var attempts = 0
    while true {
      do {
        database = try Self.openChecked(path: path)
        return
      } catch let failure {
        if failure.isBusy {
          attempts += 1
          if attempts < 100 {
            usleep(50_000)
            continue
          }
          throw LibraryError.busy(path: path)
        }
        // Only a damaged file or another schema is rebuilt; other errors (permissions, a full
        // disk) must not cost the player's play counts.
        guard failure.canRebuild else { throw LibraryError.index(path: path, reason: failure.reason) }
        warn("the library index \(path) was rebuilt: \(failure.reason)")
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        do {
          database = try Self.openChecked(path: path)
          return
        } catch {
          throw LibraryError.index(path: path, reason: error.reason)
        }
      }
    }
  }

  private struct OpenFailure: Error {
    var reason: String
    /// Locked by another connection: wait, do not rebuild.
    var isBusy = false
    /// Damaged, not a database, or another schema version: rebuilt.
    var canRebuild = true
  }

  private static func openChecked(path: String) throws(OpenFailure) -> SQLiteDatabase {
    do {
      let database = try SQLiteDatabase(path: path)
      try database.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")
      let check = try database.prepare("PRAGMA quick_check")
      if try check.step(), let result = check.text(0), result != "ok" {
        throw OpenFailure(reason: "damaged (\(result))")
      }
      // The tables first (an empty file gets the current schema), then the version: an older
      // index keeps its `items` table, and the migrations add what it lacks.
      try database.execute(schemaTables)
      let versionRow = try database.prepare("SELECT value FROM meta WHERE key = 'schema_version'")
      if try versionRow.step() {
        var version = Int(versionRow.text(0) ?? "") ?? -1
        while version < schemaVersion, let migration = migrations[version] {
          try database.transaction { () throws(SQLiteError) in
            try database.execute(migration)
            try database.prepare("UPDATE meta SET value = ? WHERE key = 'schema_version'").run([
              .text("\(version + 1)")
            ])
          }
          version += 1
        }
        guard version == schemaVersion else {
          throw OpenFailure(reason: "schema version \(version), this build reads version \(schemaVersion)")
        }
        try database.execute(schemaIndexes)
      } else {
        try database.execute(schemaIndexes)
        try database.prepare("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)").run([
          .text("\(schemaVersion)")
        ])
      }
      return database
    } catch let error as OpenFailure {
      throw error
    } catch let error as SQLiteError {
      throw OpenFailure(
        reason: error.isDamage ? "damaged (\(error.message))" : error.description, isBusy: error.isBusy,
        canRebuild: error.isDamage)
    } catch {
      throw OpenFailure(reason: "\(error)")
    }
  }

  /// When anything in the index last changed (MediaPlayer's `lastModifiedDate`).
  func lastModifiedDate() throws(SQLiteError) -> Date? {
    let statement = try database.prepare("SELECT value FROM meta WHERE key = 'last_modified'")
    guard try statement.step(), let text = statement.text(0), let seconds = Double(text) else { return nil }
    return Date(timeIntervalSince1970: seconds)
  }

  func touch(_ date: Date = Date()) throws(SQLiteError) {
    try database.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('last_modified', ?)").run([
      .text("\(date.timeIntervalSince1970)")
    ])
  }

  /// Inserts or updates the item for `item.assetURL` (its `persistentID` must be set). Play and
  /// skip counts, ratings, last-played and date-added survive an update (they are the player's,
  /// not the file's); `dateAdded` is set on insert (now, unless the item carries one).
  /// `analysisVersion`: the `AudioAnalysis.version` that measured the item's figures, 0 when the
  /// item was not analysed (the next scan analyses it).
  func upsert(
    _ item: MediaItem, size: Int64, mtimeNanoseconds: Int64, fingerprint: String, analysisVersion: Int = 0
  ) throws(SQLiteError) {
    let statement = try database.prepare(
      """
      INSERT INTO items (persistent_id, path, size, mtime_ns, fingerprint, title, artist, album_title,
        album_artist, genre, composer, duration, track_number, disc_number, bpm, year, date_added,
        is_compilation, sample_rate, title_key, artist_key, album_key, album_artist_key, genre_key,
        composer_key, title_sort, artist_sort, album_sort, album_artist_sort, play_count, skip_count, rating,
        last_played, loudness, loudness_range, true_peak, detected_bpm, first_beat, energy, bpm_detected,
        beats_per_bar, replay_gain_track, replay_gain_album, analysis_version, sound_start, sound_end, mood,
        mood_key, tags_version)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21,
        ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36, ?37, ?38, ?39, ?40, ?41, ?42,
        ?43, ?44, ?45, ?46, ?47, ?48, ?49)
      ON CONFLICT(persistent_id) DO UPDATE SET
        path = excluded.path, size = excluded.size, mtime_ns = excluded.mtime_ns,
        fingerprint = excluded.fingerprint, title = excluded.title, artist = excluded.artist,
        album_title = excluded.album_title, album_artist = excluded.album_artist, genre = excluded.genre,
        composer = excluded.composer, duration = excluded.duration, track_number = excluded.track_number,
        disc_number = excluded.disc_number, bpm = excluded.bpm, year = excluded.year,
        is_compilation = excluded.is_compilation, sample_rate = excluded.sample_rate,
        title_key = excluded.title_key, artist_key = excluded.artist_key, album_key = excluded.album_key,
        album_artist_key = excluded.album_artist_key, genre_key = excluded.genre_key,
        composer_key = excluded.composer_key, title_sort = excluded.title_sort,
        artist_sort = excluded.artist_sort, album_sort = excluded.album_sort,
        album_artist_sort = excluded.album_artist_sort, loudness = excluded.loudness,
        loudness_range = excluded.loudness_range, true_peak = excluded.true_peak,
        detected_bpm = excluded.detected_bpm, first_beat = excluded.first_beat, energy = excluded.energy,
        bpm_detected = excluded.bpm_detected, beats_per_bar = excluded.beats_per_bar,
        replay_gain_track = excluded.replay_gain_track, replay_gain_album = excluded.replay_gain_album,
        analysis_version = excluded.analysis_version, sound_start = excluded.sound_start,
        sound_end = excluded.sound_end, mood = excluded.mood, mood_key = excluded.mood_key,
        tags_version = excluded.tags_version
      """)
    func text(_ value: String?) -> SQLiteStatement.Value { value.map { .text($0) } ?? .null }
    func int(_ value: Int?) -> SQLiteStatement.Value { value.map { .integer(Int64($0)) } ?? .null }
    func real(_ value: Double?) -> SQLiteStatement.Value { value.map { .real($0) } ?? .null }
    try statement.run([
      .integer(Int64(bitPattern: item.persistentID ?? 0)), .text(item.assetURL.path), .integer(size),
      .integer(mtimeNanoseconds), .text(fingerprint), text(item.title), text(item.artist), text(item.albumTitle),
      text(item.albumArtist), text(item.genre), text(item.composer), real(item.playbackDuration),
      int(item.albumTrackNumber), int(item.discNumber), real(item.beatsPerMinute), int(item.year),
      .real((item.dateAdded ?? Date()).timeIntervalSince1970), .integer(item.isCompilation ? 1 : 0),
      int(item.sampleRate), text(Self.searchKey(item.title)), text(Self.searchKey(item.artist)),
      text(Self.searchKey(item.albumTitle)), text(Self.searchKey(item.albumArtist)),
      text(Self.searchKey(item.genre)), text(Self.searchKey(item.composer)), text(Self.sortKey(item.title)),
      text(Self.sortKey(item.artist)), text(Self.sortKey(item.albumTitle)), text(Self.sortKey(item.albumArtist)),
      .integer(Int64(item.playCount)), .integer(Int64(item.skipCount)), .integer(Int64(item.rating)),
      real(item.lastPlayedDate?.timeIntervalSince1970), real(item.loudness), real(item.loudnessRange),
      real(item.truePeak), real(item.detectedBeatsPerMinute), real(item.firstBeatSeconds), real(item.energy),
      .integer(item.isBeatsPerMinuteDetected ? 1 : 0), int(item.beatsPerBar), real(item.replayGainTrackDecibels),
      real(item.replayGainAlbumDecibels), .integer(Int64(analysisVersion)), real(item.soundStartSeconds),
      real(item.soundEndSeconds), text(item.mood), text(Self.searchKey(item.mood)), .integer(Int64(Self.tagsVersion)),
    ])
  }

  /// Writes what `item` read from its file's tags (the names, numbers and flags that come from
  /// tags, and the mood) into the row `persistentID`, and marks it read by this `tagsVersion`.
  /// The rest of the row (the analysis, the BPM, the player's counts) stays: for a row of an
  /// older tag reading whose file has not changed.
  func updateTags(_ item: MediaItem, persistentID: Int64) throws(SQLiteError) {
    let statement = try database.prepare(
      """
      UPDATE items SET title = ?2, artist = ?3, album_title = ?4, album_artist = ?5, genre = ?6, composer = ?7,
        track_number = ?8, disc_number = ?9, year = ?10, is_compilation = ?11, mood = ?12, title_key = ?13,
        artist_key = ?14, album_key = ?15, album_artist_key = ?16, genre_key = ?17, composer_key = ?18,
        title_sort = ?19, artist_sort = ?20, album_sort = ?21, album_artist_sort = ?22, mood_key = ?23,
        tags_version = ?24
      WHERE persistent_id = ?1
      """)
    func text(_ value: String?) -> SQLiteStatement.Value { value.map { .text($0) } ?? .null }
    func int(_ value: Int?) -> SQLiteStatement.Value { value.map { .integer(Int64($0)) } ?? .null }
    try statement.run([
      .integer(persistentID), text(item.title), text(item.artist), text(item.albumTitle), text(item.albumArtist),
      text(item.genre), text(item.composer), int(item.albumTrackNumber), int(item.discNumber), int(item.year),
      .integer(item.isCompilation ? 1 : 0), text(item.mood), text(Self.searchKey(item.title)),
      text(Self.searchKey(item.artist)), text(Self.searchKey(item.albumTitle)), text(Self.searchKey(item.albumArtist)),
      text(Self.searchKey(item.genre)), text(Self.searchKey(item.composer)), text(Self.sortKey(item.title)),
      text(Self.sortKey(item.artist)), text(Self.sortKey(item.albumTitle)), text(Self.sortKey(item.albumArtist)),
      text(Self.searchKey(item.mood)), .integer(Int64(Self.tagsVersion)),
    ])
  }

  /// A row of `itemColumns` as an item.
  static func item(from statement: SQLiteStatement, offset: Int = 0) -> MediaItem {
    let o = offset
    // isDirectory: false, or Foundation stats every path to find out (a syscall per row).
    var item = MediaItem(assetURL: URL(fileURLWithPath: statement.text(o + 1) ?? "", isDirectory: false))
    item.persistentID = statement.integer(o).map { UInt64(bitPattern: $0) }
    item.title = statement.text(o + 2)
    item.artist = statement.text(o + 3)
    item.albumTitle = statement.text(o + 4)
    item.albumArtist = statement.text(o + 5)
    item.genre = statement.text(o + 6)
    item.composer = statement.text(o + 7)
    item.playbackDuration = statement.real(o + 8)
    item.albumTrackNumber = statement.integer(o + 9).map { Int($0) }
    item.discNumber = statement.integer(o + 10).map { Int($0) }
    item.beatsPerMinute = statement.real(o + 11)
    item.year = statement.integer(o + 12).map { Int($0) }
    item.playCount = Int(statement.integer(o + 13) ?? 0)
    item.skipCount = Int(statement.integer(o + 14) ?? 0)
    item.lastPlayedDate = statement.real(o + 15).map { Date(timeIntervalSince1970: $0) }
    item.dateAdded = statement.real(o + 16).map { Date(timeIntervalSince1970: $0) }
    item.rating = Int(statement.integer(o + 17) ?? 0)
    item.isCompilation = (statement.integer(o + 18) ?? 0) != 0
    item.sampleRate = statement.integer(o + 19).map { Int($0) }
    item.loudness = statement.real(o + 20)
    item.loudnessRange = statement.real(o + 21)
    item.truePeak = statement.real(o + 22)
    item.detectedBeatsPerMinute = statement.real(o + 23)
    item.firstBeatSeconds = statement.real(o + 24)
    item.energy = statement.real(o + 25)
    item.isBeatsPerMinuteDetected = (statement.integer(o + 26) ?? 0) != 0
    item.beatsPerBar = statement.integer(o + 27).map { Int($0) }
    item.replayGainTrackDecibels = statement.real(o + 28)
    item.replayGainAlbumDecibels = statement.real(o + 29)
    item.soundStartSeconds = statement.real(o + 30)
    item.soundEndSeconds = statement.real(o + 31)
    item.mood = statement.text(o + 32)
    return item
  }

  /// Folds text for matching: lowercased, diacritics removed ("Beyoncé" matches "beyonce").
  static func searchKey(_ text: String?) -> String? {
    text.map(SearchKeyFolding.fold)
  }

  /// The sort key: the search key without a leading "the " or "a " ("The Beatles" sorts under B).
  static func sortKey(_ text: String?) -> String? {
    guard var key = searchKey(text)?.trimmingWhitespace() else { return nil }
    for article in ["the ", "a "] where key.hasPrefix(article) && key.count > article.count {
      key.removeFirst(article.count)
      break
    }
    return key
  }
}

// MARK: - What the scanner reads and writes

package extension LibraryIndex {
  /// What the index knows about an item's file: enough to tell whether it changed.
  struct FileRecord: Sendable {
    var persistentID: Int64
    var path: String
    var sizeBytes: Int64
    var modificationNanoseconds: Int64
    var fingerprint: String
    /// The `AudioAnalysis.version` that measured the item (0: not analysed).
    var analysisVersion: Int = 0
    /// The `LibraryIndex.tagsVersion` that read the item's tags (0: an index older than schema 4).
    var tagsVersion: Int = 0
  }

  /// Every item's file record (one query; about 100 ms for 100,000 items).
  func fileRecords() throws(SQLiteError) -> [FileRecord] {
    let statement = try database.prepare(
      "SELECT persistent_id, path, size, mtime_ns, fingerprint, analysis_version, tags_version FROM items")
    var records: [FileRecord] = []
    while try statement.step() {
      records.append(
        FileRecord(
          persistentID: statement.integer(0) ?? 0, path: statement.text(1) ?? "",
          sizeBytes: statement.integer(2) ?? -1, modificationNanoseconds: statement.integer(3) ?? -1,
          fingerprint: statement.text(4) ?? "", analysisVersion: Int(statement.integer(5) ?? 0),
          tagsVersion: Int(statement.integer(6) ?? 0)))
    }
    return records
  }

  /// The files that failed, with the size and modification time they had then.
  func failureRecords() throws(SQLiteError)
    -> [String: (sizeBytes: Int64, modificationNanoseconds: Int64, reason: String)]
  {
    let statement = try database.prepare("SELECT path, size, mtime_ns, reason FROM failures")
    var records: [String: (Int64, Int64, String)] = [:]
    while try statement.step() {
      if let path = statement.text(0) {
        records[path] = (statement.integer(1) ?? -1, statement.integer(2) ?? -1, statement.text(3) ?? "")
      }
    }
    return records
  }

  func recordFailure(path: String, sizeBytes: Int64, modificationNanoseconds: Int64, reason: String)
    throws(SQLiteError)
  {
    try database.prepare("INSERT OR REPLACE INTO failures(path, size, mtime_ns, reason) VALUES (?, ?, ?, ?)").run([
      .text(path), .integer(sizeBytes), .integer(modificationNanoseconds), .text(reason),
    ])
  }

  func removeFailure(path: String) throws(SQLiteError) {
    try database.prepare("DELETE FROM failures WHERE path = ?").run([.text(path)])
  }

  func removeItem(persistentID: Int64) throws(SQLiteError) {
    try database.prepare("DELETE FROM items WHERE persistent_id = ?").run([.integer(persistentID)])
  }

  /// The failures table, for reports and tests: path and reason.
  func failures() throws(SQLiteError) -> [ScanFailure] {
    try database.prepare("SELECT path, reason FROM failures ORDER BY path").rows().compactMap { row in
      guard case .text(let path) = row[0], case .text(let reason) = row[1] else { return nil }
      return ScanFailure(path: path, reason: reason)
    }
  }

  /// The item with `persistentID`, or nil.
  func item(persistentID: Int64) throws(SQLiteError) -> MediaItem? {
    let statement = try database.prepare("SELECT \(Self.itemColumns) FROM items WHERE persistent_id = ?")
    try statement.bind([.integer(persistentID)])
    return try statement.step() ? Self.item(from: statement) : nil
  }

  /// Every item, by path (for tests and tools; queries have their own API).
  func allItems() throws(SQLiteError) -> [MediaItem] {
    let statement = try database.prepare("SELECT \(Self.itemColumns) FROM items ORDER BY path")
    var items: [MediaItem] = []
    while try statement.step() { items.append(Self.item(from: statement)) }
    return items
  }

  /// Adds one to the play count and sets the last-played date. Returns false when no item has
  /// that id.
  func recordPlay(persistentID: Int64, at date: Date) throws(SQLiteError) -> Bool {
    try database.prepare("UPDATE items SET play_count = play_count + 1, last_played = ? WHERE persistent_id = ?")
      .run([.real(date.timeIntervalSince1970), .integer(persistentID)])
    return database.changes > 0
  }

  /// Adds one to the skip count. Returns false when no item has that id.
  func recordSkip(persistentID: Int64) throws(SQLiteError) -> Bool {
    try database.prepare("UPDATE items SET skip_count = skip_count + 1 WHERE persistent_id = ?").run([
      .integer(persistentID)
    ])
    return database.changes > 0
  }
}
