import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

/// Runs `MediaQuery`s against the index: SQL with bound parameters, then grouping and sections.
///
/// Every query is one statement over `items` (for playlists, `playlist_items` joined with
/// `items`). Equality on text uses the folded `*_key` columns and their indexes (artist, album,
/// title); ranges on duration and BPM use theirs; contains scans (no index helps a substring).
/// Items come sorted by the grouping's sort key (which has no leading "The " or "A "), then
/// album, disc and track; those whose sort key does not start with a letter (the "#" section)
/// go last, so that every section is one run of the list.
package struct QueryRunner {
  /// What a grouping groups by and sorts by, as SQL over `items`.
  package struct GroupingSQL {
    /// Equal values make one collection.
    var groupKey: String
    /// The key sections are made from (folded, without a leading article).
    var sortKey: String
    /// The whole ORDER BY.
    var order: String
  }

  static func groupingSQL(_ grouping: MediaGrouping) -> GroupingSQL {
    let inAlbum = "album_sort, album_key, disc_number, track_number, title_sort, items.persistent_id"
    switch grouping {
    case .title, .playlist:
      return GroupingSQL(
        groupKey: "CAST(items.persistent_id AS TEXT)", sortKey: "title_sort",
        order: "title_sort IS NULL, title_sort, artist_sort, \(inAlbum)")
    case .album:
      // An album is its title and album artist. Without an album artist tag, the folder stands in
      // for it (rtrim of the path by its own non-slash characters leaves the folder): two
      // artists' "Greatest Hits" in their own folders were one album of both; a compilation
      // stays one album across artists, and an album whose tracks name guest artists stays whole.
      let artist =
        "coalesce(album_artist_key, CASE WHEN is_compilation THEN '' ELSE rtrim(items.path, replace(items.path, '/', '')) END, '')"
      return GroupingSQL(
        groupKey: "coalesce(album_key, '') || char(1) || \(artist)", sortKey: "album_sort",
        order:
          "album_sort IS NULL, album_sort, album_key, \(artist), disc_number, track_number, title_sort, items.persistent_id"
      )
    case .artist:
      return GroupingSQL(
        groupKey: "coalesce(artist_key, '')", sortKey: "artist_sort",
        order: "artist_sort IS NULL, artist_sort, artist_key, \(inAlbum)")
    case .albumArtist:
      let key = "coalesce(album_artist_key, artist_key)"
      let sort = "coalesce(album_artist_sort, artist_sort)"
      return GroupingSQL(
        groupKey: "coalesce(\(key), '')", sortKey: sort, order: "\(sort) IS NULL, \(sort), \(key), \(inAlbum)")
    case .genre:
      return GroupingSQL(
        groupKey: "coalesce(genre_key, '')", sortKey: "genre_key",
        order: "genre_key IS NULL, genre_key, artist_sort, \(inAlbum)")
    case .composer:
      return GroupingSQL(
        groupKey: "coalesce(composer_key, '')", sortKey: "composer_key",
        order: "composer_key IS NULL, composer_key, \(inAlbum)")
    }
  }

  /// `itemColumns`, each qualified with `items.` (a playlist query joins a table that also has
  /// `persistent_id`).
  static let qualifiedItemColumns = LibraryIndex.itemColumns.split(separator: ",").map {
    "items." + $0.trimmingWhitespaceAndNewlines()
  }.joined(separator: ", ")

  /// One item of a result, with the keys it is grouped and sectioned by.
  package struct Row {
    var item: MediaItem
    var groupKey: String
    var sectionTitle: String
  }

  /// A query's result: its items in order, and its collections (each a run of `rows`, made
  /// only when asked for: `items(matching:)` does not pay for them).
  package struct Result {
    var rows: [Row] = []
    var grouping: MediaGrouping = .title
    /// Playlists: made with the rows (a playlist can be empty, and items repeat).
    var playlistCollections: [(collection: MediaItemCollection, sectionTitle: String)]?

    var items: [MediaItem] { rows.map(\.item) }
    var itemSections: [MediaQuerySection] { QueryRunner.sections(rows.map(\.sectionTitle)) }
    var collections: [MediaItemCollection] { groups.map(\.collection) }
    var collectionSections: [MediaQuerySection] { QueryRunner.sections(groups.map(\.sectionTitle)) }

    /// The runs of equal group keys (the order keeps each group together).
    var groups: [(collection: MediaItemCollection, sectionTitle: String)] {
      if let playlistCollections { return playlistCollections }
      var groups: [(collection: MediaItemCollection, sectionTitle: String)] = []
      var start = 0
      while start < rows.count {
        var end = start + 1
        while end < rows.count && rows[end].groupKey == rows[start].groupKey { end += 1 }
        let items = rows[start..<end].map(\.item)
        let name = QueryRunner.name(of: items[0], grouping: grouping)
        groups.append((MediaItemCollection(items: items, name: name), rows[start].sectionTitle))
        start = end
      }
      return groups
    }
  }

  let index: LibraryIndex

  /// The WHERE clause for `predicates` (AND), and its values; "1" when there are none.
  static func whereClause(_ predicates: Set<MediaPropertyPredicate>, searchIndex: Bool = false) throws(LibraryError)
    -> (
      sql: String, values: [SQLiteStatement.Value]
    )
  {
    // Sorted so that one query always makes the same SQL (a Set has no order).
    let sorted = predicates.sorted { $0.description < $1.description }
    var clauses: [String] = []
    var values: [SQLiteStatement.Value] = []
    for predicate in sorted {
      let condition = try predicate.condition(searchIndex: searchIndex)
      clauses.append(condition.sql)
      values += condition.values
    }
    return (clauses.isEmpty ? "1" : clauses.joined(separator: " AND "), values)
  }

  func run(_ query: MediaQuery) throws(LibraryError) -> Result {
    for predicate in query.filterPredicates { try predicate.validate() }
    let filter = try Self.whereClause(
      query.filterPredicates, searchIndex: !query.filterPredicates.isEmpty && index.ensureSearchIndex())
    do {
      if query.groupingType == .playlist {
        return try runPlaylists(filter: filter, filtered: !query.filterPredicates.isEmpty)
      }
      return try runItems(grouping: query.groupingType, filter: filter)
    } catch {
      throw LibraryError.index(path: index.path, reason: error.description)
    }
  }

  private func runItems(grouping: MediaGrouping, filter: (sql: String, values: [SQLiteStatement.Value]))
    throws(SQLiteError) -> Result
  {
    let sql = Self.groupingSQL(grouping)
    let statement = try index.database.prepare(
      "SELECT \(Self.qualifiedItemColumns), \(sql.groupKey), \(sql.sortKey) FROM items WHERE \(filter.sql) ORDER BY \(sql.order)"
    )
    try statement.bind(filter.values)
    let columns = LibraryIndex.itemColumnCount
    var letters: [Row] = []
    var others: [Row] = []
    // Rows come sorted, so the sort key changes seldom: its section title is worked out once.
    var lastSortKey: String?
    var lastTitle = "#"
    while try statement.step() {
      let sortKey = statement.text(columns + 1)
      if sortKey != lastSortKey || letters.isEmpty && others.isEmpty {
        lastSortKey = sortKey
        lastTitle = Self.sectionTitle(sortKey)
      }
      let row = Row(
        item: LibraryIndex.item(from: statement), groupKey: statement.text(columns) ?? "", sectionTitle: lastTitle)
      if lastTitle == "#" { others.append(row) } else { letters.append(row) }
    }
    return Result(rows: letters + others, grouping: grouping)
  }

  private func runPlaylists(filter: (sql: String, values: [SQLiteStatement.Value]), filtered: Bool)
    throws(SQLiteError) -> Result
  {
    struct Playlist {
      var id: Int64
      var name: String
      var section: String
      var sortKey: String
    }
    var playlists: [Playlist] = []
    let list = try index.database.prepare("SELECT id, name FROM playlists")
    while try list.step() {
      let name = list.text(1) ?? ""
      let sortKey = LibraryIndex.sortKey(name) ?? ""
      playlists.append(
        Playlist(id: list.integer(0) ?? 0, name: name, section: Self.sectionTitle(sortKey), sortKey: sortKey))
    }
    playlists.sort { ($0.section == "#" ? 1 : 0, $0.sortKey, $0.id) < ($1.section == "#" ? 1 : 0, $1.sortKey, $1.id) }
    let statement = try index.database.prepare(
      """
      SELECT \(Self.qualifiedItemColumns), playlist_items.playlist_id FROM playlist_items
      JOIN items ON items.persistent_id = playlist_items.persistent_id
      WHERE \(filter.sql) ORDER BY playlist_items.playlist_id, playlist_items.position
      """)
    try statement.bind(filter.values)
    var itemsByPlaylist: [Int64: [MediaItem]] = [:]
    while try statement.step() {
      itemsByPlaylist[statement.integer(LibraryIndex.itemColumnCount) ?? 0, default: []].append(
        LibraryIndex.item(from: statement))
    }
    var result = Result(grouping: .playlist, playlistCollections: [])
    for playlist in playlists {
      let items = itemsByPlaylist[playlist.id] ?? []
      // A filtered query keeps the playlists that have a matching item (as MediaPlayer does).
      if filtered && items.isEmpty { continue }
      result.playlistCollections?.append(
        (
          MediaItemCollection(items: items, name: playlist.name, persistentID: UInt64(bitPattern: playlist.id)),
          playlist.section
        ))
      result.rows += items.map { Row(item: $0, groupKey: "\(playlist.id)", sectionTitle: playlist.section) }
    }
    return result
  }

  /// The name of the collection `item` stands for.
  static func name(of item: MediaItem, grouping: MediaGrouping) -> String? {
    switch grouping {
    case .title, .playlist: return item.title
    case .album: return item.albumTitle
    case .artist: return item.artist
    case .albumArtist: return item.albumArtist ?? item.artist
    case .genre: return item.genre
    case .composer: return item.composer
    }
  }

  /// "B" for "beatles" (the sort key of "The Beatles"), "#" for a digit, a sign or nothing.
  static func sectionTitle(_ sortKey: String?) -> String {
    guard let first = sortKey?.trimmingWhitespace().first, first.isLetter else { return "#" }
    return String(first).uppercased()
  }

  /// Sections from the section title of each entry: one per run of equal titles.
  static func sections(_ titles: [String]) -> [MediaQuerySection] {
    var sections: [MediaQuerySection] = []
    var start = 0
    while start < titles.count {
      var end = start + 1
      while end < titles.count && titles[end] == titles[start] { end += 1 }
      sections.append(MediaQuerySection(title: titles[start], range: start..<end))
      start = end
    }
    return sections
  }
}

package extension LibraryIndex {
  /// How many columns `itemColumns` has.
  static let itemColumnCount = itemColumns.split(separator: ",").count

  /// Runs `query` (predicates checked first).
  func run(_ query: MediaQuery) throws(LibraryError) -> QueryRunner.Result {
    try QueryRunner(index: self).run(query)
  }
}
