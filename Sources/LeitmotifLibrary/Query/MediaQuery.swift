import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

/// The properties a query can filter on (MediaPlayer's `MPMediaItemProperty...` keys).
public enum MediaProperty: String, Sendable, CaseIterable {
  /// The ``MediaItem`` property of the same name (`assetURL` matches the file's path;
  /// `beatsPerMinute` is the BPM tag, else the detected tempo, compared to the hundredth of a
  /// BPM: a song detected at 119.998 equals 120; `loudness` and `energy` are the scan's analysis;
  /// `mood` is the MOOD tag, as bundled sources select by it).
  case persistentID, title, artist, albumTitle, albumArtist, genre, composer, playbackDuration, albumTrackNumber,
    discNumber, beatsPerMinute, year, playCount, skipCount, rating, isCompilation, lastPlayedDate, dateAdded, assetURL,
    loudness, energy, mood

  /// What kind of value the property holds, which says which comparisons it takes.
  package enum Kind {
    /// Text matched case- and diacritic-insensitively: equalTo and contains.
    case text
    /// A number (dates are seconds since 1970): equalTo and the four ranges.
    case number
    /// A yes/no flag: equalTo only.
    case flag
    /// The persistent id: equalTo only.
    case identifier
    /// The file's path, matched exactly: equalTo and contains.
    case path
  }

  var kind: Kind {
    switch self {
    case .title, .artist, .albumTitle, .albumArtist, .genre, .composer, .mood: return .text
    case .playbackDuration, .albumTrackNumber, .discNumber, .beatsPerMinute, .year, .playCount, .skipCount, .rating,
      .lastPlayedDate, .dateAdded, .loudness, .energy:
      return .number
    case .isCompilation: return .flag
    case .persistentID: return .identifier
    case .assetURL: return .path
    }
  }
}

/// How a predicate compares the property with its value. MediaPlayer has the first two; the ranges
/// are Leitmotif's, for numeric properties only (duration, BPM, year, play count, rating, ...).
public enum MediaPredicateComparison: String, Sendable, Hashable, CaseIterable {
  /// `equalTo` (any property) and `contains` (text and the path), as in MediaPlayer; the four ranges
  /// compare numeric properties only.
  case equalTo, contains, lessThan, lessThanOrEqualTo, greaterThan, greaterThanOrEqualTo

  var isRange: Bool { self != .equalTo && self != .contains }
}

/// One condition on an item's property (MediaPlayer's `MPMediaPropertyPredicate`). Text compares
/// case- and diacritic-insensitively ("beyonce" finds "Beyoncé"). A query's predicates combine
/// with AND.
///
/// Whether the comparison suits the property (a range on a text property, contains on a number,
/// a value that is not a number for a numeric property) is checked by `validate()`, which every
/// query calls first: a bad predicate fails the query with `LibraryError.invalidPredicate`.
public struct MediaPropertyPredicate: Sendable, Hashable, CustomStringConvertible {
  /// The value compared with: text as given, or a number.
  public enum Value: Sendable, Hashable {
    /// Text, for text properties and the path.
    case text(String)
    /// A number, for numeric properties (dates as seconds since 1970; flags as 0 or 1).
    case number(Double)
  }

  /// The value the property is compared with.
  public var value: Value
  /// The property compared.
  public var property: MediaProperty
  /// How they are compared (default `equalTo`).
  public var comparisonType: MediaPredicateComparison

  /// A predicate comparing `property` with the text `value`.
  public init(value: String, forProperty property: MediaProperty, comparisonType: MediaPredicateComparison = .equalTo) {
    self.value = .text(value)
    self.property = property
    self.comparisonType = comparisonType
  }

  /// A predicate comparing `property` with the number `value`.
  public init(value: Double, forProperty property: MediaProperty, comparisonType: MediaPredicateComparison = .equalTo) {
    self.value = .number(value)
    self.property = property
    self.comparisonType = comparisonType
  }

  /// A predicate comparing `property` with the whole number `value`. A `persistentID` is kept
  /// exact (as its digits): a `Double` holds whole numbers exactly only up to 2^53, and ids are
  /// 64-bit, so almost every id given as a number found nothing.
  public init(value: Int, forProperty property: MediaProperty, comparisonType: MediaPredicateComparison = .equalTo) {
    if property.kind == .identifier {
      self.init(value: String(value), forProperty: property, comparisonType: comparisonType)
    } else {
      self.init(value: Double(value), forProperty: property, comparisonType: comparisonType)
    }
  }

  /// A predicate comparing `property` with the whole number `value`: a `persistentID`
  /// (`MediaItem.persistentID` is a `UInt64`), exact, or a number.
  public init(value: UInt64, forProperty property: MediaProperty, comparisonType: MediaPredicateComparison = .equalTo) {
    if property.kind == .identifier {
      self.init(value: String(value), forProperty: property, comparisonType: comparisonType)
    } else {
      self.init(value: Double(value), forProperty: property, comparisonType: comparisonType)
    }
  }

  /// A predicate comparing `property` (a flag such as `isCompilation`) with `value`.
  public init(value: Bool, forProperty property: MediaProperty, comparisonType: MediaPredicateComparison = .equalTo) {
    self.init(value: value ? 1.0 : 0.0, forProperty: property, comparisonType: comparisonType)
  }

  /// The predicate as one line, e.g. `artist equalTo "beyonce"`, for messages.
  public var description: String {
    let shown: String
    switch value {
    case .text(let text): shown = "\"\(text)\""
    case .number(let number):
      shown = number == number.rounded() && abs(number) < 1e15 ? "\(Int64(number))" : "\(number)"
    }
    return "\(property.rawValue) \(comparisonType.rawValue) \(shown)"
  }

  /// Checks that the comparison suits the property and the value its kind.
  /// - Throws: `LibraryError.invalidPredicate` saying what is wrong and what would do.
  public func validate() throws(LibraryError) {
    _ = try condition()
  }

  /// The SQL condition (on the `items` table, with `?` parameters) and its bound values.
  /// Values are always bound, never put in the SQL text.
  /// `searchIndex`: whether the trigram search index exists (contains then uses it).
  func condition(searchIndex: Bool = false) throws(LibraryError) -> (sql: String, values: [SQLiteStatement.Value]) {
    func invalid(_ why: String) -> LibraryError { .invalidPredicate(predicate: description, reason: why) }
    let column = Self.column(property)
    switch property.kind {
    case .text, .path:
      guard case .text(let text) = value else {
        throw invalid("\(property.rawValue) is text: give the value as a string")
      }
      let folded = property.kind == .text ? (LibraryIndex.searchKey(text) ?? text) : text
      switch comparisonType {
      case .equalTo: return ("\(column) = ?", [.text(folded)])
      case .contains:
        // Three characters or more: through the trigram search index (SearchIndex.swift).
        // Shorter, or the path: a scan, with instr (no escaping of % and _ as LIKE would need).
        // (The mood is not in the search index: a library has a handful of moods, and a scan of
        // its short keys is quick.)
        if property.kind == .text && searchIndex && folded.count >= 3 && LibraryIndex.searchColumns.contains(column) {
          return (
            "items.persistent_id IN (SELECT rowid FROM items_search WHERE items_search MATCH ?)",
            [.text(LibraryIndex.searchMatch(column: column, text: folded))]
          )
        }
        return ("instr(\(column), ?) > 0", [.text(folded)])
      default:
        throw invalid("\(property.rawValue) is text: it takes equalTo or contains, not a range")
      }
    case .number, .flag, .identifier:
      if comparisonType == .contains {
        throw invalid("\(property.rawValue) is not text: contains needs a text property (title, artist, ...)")
      }
      if comparisonType.isRange && property.kind != .number {
        throw invalid(
          "\(property.rawValue) takes equalTo only; ranges are for numeric properties (duration, BPM, year, play count, rating, ...)"
        )
      }
      let number: Double
      switch value {
      case .number(let given): number = given
      case .text(let text):
        let trimmed = text.trimmingWhitespace()
        if property.kind == .flag, let flag = ["true": 1.0, "yes": 1, "false": 0, "no": 0][trimmed.lowercased()] {
          number = flag
        } else if property.kind == .identifier, let id = UInt64(trimmed) {
          return ("items.persistent_id = ?", [.integer(Int64(bitPattern: id))])
        } else if let given = Double(trimmed) {
          number = given
        } else {
          throw invalid("\(property.rawValue) is a number: \"\(text)\" is not one")
        }
      }
      guard number.isFinite else { throw invalid("\(property.rawValue): the value must be a finite number") }
      if property.kind == .identifier {
        guard number >= 0, number == number.rounded(), number < 1.8e19 else {
          throw invalid("a persistent id is a whole number of 0 or more")
        }
        return ("items.persistent_id = ?", [.integer(Int64(bitPattern: UInt64(number)))])
      }
      if property.kind == .flag {
        guard number == 0 || number == 1 else { throw invalid("isCompilation is true or false (1 or 0)") }
        return ("\(column) = ?", [.integer(Int64(number))])
      }
      if property == .beatsPerMinute {
        // A detected tempo is an estimate (119.998 for a song at 120), printed to the hundredth:
        // compared at that precision, so `bpm >= 120` finds the song shown at 120. (Bounds, not
        // round(), so the column's index still serves the range.)
        let half = Self.beatsPerMinutePrecision / 2
        switch comparisonType {
        case .equalTo: return ("(\(column) >= ? AND \(column) < ?)", [.real(number - half), .real(number + half)])
        case .lessThan: return ("\(column) < ?", [.real(number - half)])
        case .lessThanOrEqualTo: return ("\(column) < ?", [.real(number + half)])
        case .greaterThan: return ("\(column) >= ?", [.real(number + half)])
        default: return ("\(column) >= ?", [.real(number - half)])
        }
      }
      let operators: [MediaPredicateComparison: String] = [
        .equalTo: "=", .lessThan: "<", .lessThanOrEqualTo: "<=", .greaterThan: ">", .greaterThanOrEqualTo: ">=",
      ]
      return ("\(column) \(operators[comparisonType]!) ?", [.real(number)])
    }
  }

  /// Tempos compare to the hundredth of a BPM (see `sql`).
  static let beatsPerMinutePrecision = 0.01

  /// The column a predicate compares: the folded `*_key` column for text.
  static func column(_ property: MediaProperty) -> String {
    switch property {
    case .persistentID: return "items.persistent_id"
    case .title: return "title_key"
    case .artist: return "artist_key"
    case .albumTitle: return "album_key"
    case .albumArtist: return "album_artist_key"
    case .genre: return "genre_key"
    case .composer: return "composer_key"
    case .playbackDuration: return "duration"
    case .albumTrackNumber: return "track_number"
    case .discNumber: return "disc_number"
    case .beatsPerMinute: return "bpm"
    case .year: return "year"
    case .playCount: return "play_count"
    case .skipCount: return "skip_count"
    case .rating: return "rating"
    case .isCompilation: return "is_compilation"
    case .lastPlayedDate: return "last_played"
    case .dateAdded: return "date_added"
    case .assetURL: return "items.path"
    case .loudness: return "loudness"
    case .energy: return "energy"
    case .mood: return "mood_key"
    }
  }
}

/// How a query groups its items into collections (MediaPlayer's `MPMediaGrouping`).
public enum MediaGrouping: String, Sendable, Hashable, CaseIterable {
  /// Group by the property of that name: `album` by album title and album artist, `playlist` gives
  /// one collection per playlist, `title` is no grouping (one item each).
  case title, album, artist, albumArtist, composer, genre, playlist
}

/// A query of the music library (MediaPlayer's `MPMediaQuery`): predicates that combine with AND,
/// and a grouping that says how `collections` groups and how `items` sorts. Run it with
/// `MediaLibrary.items(matching:)` and its siblings. A value type: building one reads nothing.
public struct MediaQuery: Sendable, Hashable {
  /// The predicates; all must hold (AND).
  public var filterPredicates: Set<MediaPropertyPredicate>
  /// How `collections` groups the items and how `items` sorts them (default `.title`).
  public var groupingType: MediaGrouping

  /// A query for every item matching all of `filterPredicates`, grouped by title.
  public init(filterPredicates: Set<MediaPropertyPredicate> = []) {
    self.filterPredicates = filterPredicates
    self.groupingType = .title
  }

  init(grouping: MediaGrouping, predicates: Set<MediaPropertyPredicate> = []) {
    self.filterPredicates = predicates
    self.groupingType = grouping
  }

  /// Adds `predicate` to the predicates (AND).
  public mutating func addFilterPredicate(_ predicate: MediaPropertyPredicate) { filterPredicates.insert(predicate) }
  /// Removes `predicate` from the predicates.
  public mutating func removeFilterPredicate(_ predicate: MediaPropertyPredicate) { filterPredicates.remove(predicate) }

  /// Every item, by title.
  public static func songs() -> MediaQuery { MediaQuery(grouping: .title) }
  /// Every item, grouped by album (album title and album artist).
  public static func albums() -> MediaQuery { MediaQuery(grouping: .album) }
  /// Every item, grouped by artist.
  public static func artists() -> MediaQuery { MediaQuery(grouping: .artist) }
  /// Every item, grouped by album artist.
  public static func albumArtists() -> MediaQuery { MediaQuery(grouping: .albumArtist) }
  /// Every item, grouped by genre.
  public static func genres() -> MediaQuery { MediaQuery(grouping: .genre) }
  /// Every item, grouped by composer.
  public static func composers() -> MediaQuery { MediaQuery(grouping: .composer) }
  /// Items marked as part of a compilation, grouped by album.
  public static func compilations() -> MediaQuery {
    MediaQuery(grouping: .album, predicates: [MediaPropertyPredicate(value: true, forProperty: .isCompilation)])
  }
  /// The playlists (M3U, M3U8 and PLS files in the library folders), each a collection.
  public static func playlists() -> MediaQuery { MediaQuery(grouping: .playlist) }
}

/// An index-style section of a query's items or collections: the first letter of the sort key
/// ("The Beatles" under B), "#" for digits and everything else, and where it lies in the list.
public struct MediaQuerySection: Sendable, Hashable {
  /// The section's title: a letter, or "#".
  public var title: String
  /// Where the section's items (or collections) lie in the list.
  public var range: Range<Int>

  /// A section `title` over `range`.
  public init(title: String, range: Range<Int>) {
    self.title = title
    self.range = range
  }
}
