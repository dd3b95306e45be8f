import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

/// An index filled with made-up rows, for measuring query latency without audio files or
/// consent (`leitmotif-bench query`). Not API: reached with `@_spi(Benchmark) import Leitmotif`.
@_spi(Benchmark)
public final class SyntheticQueryIndex {
  let index: LibraryIndex

  /// Opens (creating) an index at `path`.
  public init(path: String) throws(LibraryError) {
    index = try LibraryIndex(path: path) { _ in }
  }

  /// Adds `items` (each with a persistent id) in one transaction.
  public func insert(_ items: [MediaItem]) throws(LibraryError) {
    do {
      try index.database.transaction { () throws(SQLiteError) in
        for item in items {
          try index.upsert(item, size: 0, mtimeNanoseconds: 0, fingerprint: "synthetic-\(item.persistentID ?? 0)")
        }
      }
      try index.database.execute("ANALYZE")
    } catch {
      throw LibraryError.index(path: index.path, reason: error.description)
    }
  }

  /// Runs `query` as `MediaLibrary.items(matching:)` does, without the consent check.
  public func items(matching query: MediaQuery) throws(LibraryError) -> [MediaItem] {
    try index.run(query).items
  }

  /// SQLite's plan for the query's statement (to see which index it uses).
  public func plan(_ query: MediaQuery) throws(LibraryError) -> String {
    let filter = try QueryRunner.whereClause(query.filterPredicates, searchIndex: index.ensureSearchIndex())
    let sql = QueryRunner.groupingSQL(query.groupingType)
    do {
      let statement = try index.database.prepare(
        "EXPLAIN QUERY PLAN SELECT \(QueryRunner.qualifiedItemColumns) FROM items WHERE \(filter.sql) ORDER BY \(sql.order)"
      )
      return try statement.rows(filter.values).compactMap { row in
        if case .text(let detail) = row.last { return detail } else { return nil }
      }.joined(separator: "; ")
    } catch {
      throw LibraryError.index(path: index.path, reason: error.description)
    }
  }
}
