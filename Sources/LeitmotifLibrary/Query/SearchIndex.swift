import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

/// A trigram full-text index over the folded text keys, so that `contains` needs no scan of
/// every row (SQLite's FTS5 with the trigram tokenizer, in SQLite since 3.34).
///
/// `contains` cannot use an ordinary index: `instr(title_key, ?)` reads all 100,000 rows, about
/// 40 ms here. An FTS5 trigram index finds the rows holding a substring of three characters or
/// more through the index instead (about 1 ms). Shorter values, and the file path, still scan.
///
/// The table (`items_search`) is external-content over `items` (rowid = persistent id: no text is
/// stored twice) and is kept up to date by triggers on `items`, so the scanner's writes (inserts,
/// updates of tags, deletes) keep it right without knowing about it. It is created, and filled
/// from `items`, by the first query that runs on an index without it; a later schema version can
/// create it with the rest of the schema instead. The same step adds an index on `year`.
package extension LibraryIndex {
  /// The text columns the search index holds (all `*_key` columns of `items`).
  static let searchColumns = ["title_key", "artist_key", "album_key", "album_artist_key", "genre_key", "composer_key"]

  static var searchIndexSQL: String {
    let columns = searchColumns.joined(separator: ", ")
    let new = searchColumns.map { "new.\($0)" }.joined(separator: ", ")
    let old = searchColumns.map { "old.\($0)" }.joined(separator: ", ")
    return """
      CREATE VIRTUAL TABLE IF NOT EXISTS items_search USING fts5(
        \(columns), content='items', content_rowid='persistent_id', tokenize='trigram');
      CREATE TRIGGER IF NOT EXISTS items_search_insert AFTER INSERT ON items BEGIN
        INSERT INTO items_search(rowid, \(columns)) VALUES (new.persistent_id, \(new));
      END;
      CREATE TRIGGER IF NOT EXISTS items_search_delete AFTER DELETE ON items BEGIN
        INSERT INTO items_search(items_search, rowid, \(columns)) VALUES ('delete', old.persistent_id, \(old));
      END;
      CREATE TRIGGER IF NOT EXISTS items_search_update AFTER UPDATE OF persistent_id, \(columns) ON items BEGIN
        INSERT INTO items_search(items_search, rowid, \(columns)) VALUES ('delete', old.persistent_id, \(old));
        INSERT INTO items_search(rowid, \(columns)) VALUES (new.persistent_id, \(new));
      END;
      INSERT INTO items_search(items_search) VALUES ('rebuild');
      -- Year is a range the issue names that the schema has no index for (BPM and duration have).
      CREATE INDEX IF NOT EXISTS items_year ON items(year);
      """
  }

  /// Whether the search index exists; creates and fills it when it does not (and when it can:
  /// an SQLite without FTS5 makes `contains` scan, as it would without the index).
  func ensureSearchIndex() -> Bool {
    do {
      let exists = try database.prepare(
        "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'items_search_update'")
      if try exists.step() { return true }
      try database.transaction { () throws(SQLiteError) in try database.execute(Self.searchIndexSQL) }
      return true
    } catch {
      return false
    }
  }

  /// The FTS5 query for "`column` contains `text`": a column filter and a quoted string (quotes
  /// doubled), bound as a parameter like every value.
  static func searchMatch(column: String, text: String) -> String {
    "\(column) : \"\(text.replacing("\"", with: "\"\""))\""
  }
}
