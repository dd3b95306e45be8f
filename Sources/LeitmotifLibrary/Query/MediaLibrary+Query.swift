import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

/// Media queries (MediaPlayer's `MPMediaQuery` `items`, `collections`, `itemSections` and
/// `collectionSections`). Each call checks authorization first, then the predicates, then asks the
/// index; it reads no audio file.
///
/// Thread safety: any thread; calls are serialized with the library's other index calls. They do
/// I/O (SQLite): not on the game's frame thread.
extension MediaLibrary {
  /// The items matching `query`, sorted by its grouping's sort key (a leading "The " or "A " is
  /// ignored), then album, disc and track; the "#" section (digits and signs) comes last.
  /// - Throws: `LibraryError.accessDenied` without authorization, `.invalidPredicate` for a
  ///   predicate that does not suit its property, `.index` when the index cannot be read.
  public func items(matching query: MediaQuery) throws(LibraryError) -> [MediaItem] {
    try withIndex { index throws(LibraryError) in try index.run(query).items }
  }

  /// The matching items grouped by the query's `groupingType`: one collection per album, artist,
  /// album artist, genre or composer (named after it), per item for `.title`, or per playlist
  /// (named after the file, with its persistent id) for `.playlist`. The representative item is
  /// the collection's first.
  public func collections(matching query: MediaQuery) throws(LibraryError) -> [MediaItemCollection] {
    try withIndex { index throws(LibraryError) in try index.run(query).collections }
  }

  /// Index-style sections of `items(matching:)`: first letter of the grouping's sort key, "#"
  /// for the rest, each with its range in the items.
  public func itemSections(matching query: MediaQuery) throws(LibraryError) -> [MediaQuerySection] {
    try withIndex { index throws(LibraryError) in try index.run(query).itemSections }
  }

  /// The items with these persistent ids, in the same order (nil where the index has no such
  /// item: never scanned, or its file is gone), looked up under one hold of the index.
  /// - Throws: `LibraryError.accessDenied` without authorization, `.index` when the index
  ///   cannot be read.
  public func items(persistentIDs: [UInt64]) throws(LibraryError) -> [MediaItem?] {
    try withIndex { index throws(LibraryError) -> [MediaItem?] in
      do throws(SQLiteError) {
        return try persistentIDs.map { id throws(SQLiteError) in try index.item(persistentID: Int64(bitPattern: id)) }
      } catch {
        throw LibraryError.index(path: index.path, reason: error.description)
      }
    }
  }

  /// Index-style sections of `collections(matching:)`.
  public func collectionSections(matching query: MediaQuery) throws(LibraryError) -> [MediaQuerySection] {
    try withIndex { index throws(LibraryError) in try index.run(query).collectionSections }
  }
}
