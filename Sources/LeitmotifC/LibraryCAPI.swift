// The C API's music-library calls (leitmotif.h, "The player's music library: scanning,
// queries, playlists, picks and queues"): the C side of `MediaLibrary`'s scan and queries and
// of the director's picks and game queue. Conventions as in CAPI.swift: arguments checked, the
// engine found, the Swift API called, a thrown error turned into its code once, here.

import CLeitmotifHeader
import FoundationEssentials
import Leitmotif

/// A library error as C sees it: an invalid predicate is the caller's argument, the rest the
/// library's refusal (no consent, a busy or broken index).
private func libraryError(_ error: LibraryError) -> CAPIError {
  if case .invalidPredicate = error { return .invalidArgument("\(error)") }
  return CAPIError(LM_ERROR_LIBRARY, "\(error)")
}

/// The caller's array stride: `first.struct_size`, at least this version's struct, or
/// `minimum` (the struct as an older header had it) where fields were added since.
func arrayStride<T>(of first: UnsafeMutablePointer<T>, _ type: String, minimum: Int? = nil) throws(CAPIError) -> Int {
  let size = UnsafeRawPointer(first).load(as: Int.self)
  try checkedSize(size, of: type, MemoryLayout<T>.size, minimum: minimum)
  return size
}

// MARK: - Scanning

@_cdecl("lm_library_scan")
public func lmLibraryScan(
  _ handle: OpaquePointer?, _ progress: lm_scan_progress_fn?, _ userData: UnsafeMutableRawPointer?,
  _ out: UnsafeMutablePointer<lm_scan_result>?
) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    if let out { try checkedSize(out.pointee.struct_size, of: "lm_scan_result", MemoryLayout<lm_scan_result>.size) }
    let report: ScanReport
    do throws(LibraryError) {
      // The progress function is one of the engine's callbacks: destroying the engine from it
      // is refused (the scan went on, calling it, for an engine destroyed).
      let engine = session.callbacks.engineBits.load(ordering: .acquiring)
      report = try session.library.scan(waitingUpToSeconds: 30) { step in
        CallbackThread.running(engine: engine) {
          progress?(Int32(clamping: step.filesRead), Int32(clamping: step.filesToRead), userData)
        }
      }
    } catch {
      throw libraryError(error)
    }
    // New songs can play at once: the cue file's library sources are resolved again.
    session.director.refreshSources()
    guard let out else { return }
    out.pointee = lm_scan_result(
      struct_size: MemoryLayout<lm_scan_result>.size, added: Int32(clamping: report.added),
      updated: Int32(clamping: report.updated), moved: Int32(clamping: report.moved),
      removed: Int32(clamping: report.removed), unchanged: Int32(clamping: report.unchanged),
      failed: Int32(clamping: report.failed.count + report.failedUnchanged),
      playlists: Int32(clamping: report.playlists.count), duration_seconds: report.durationSeconds)
  }
}

// MARK: - Queries

/// The C property's Swift name, or an error naming the value.
private func property(_ value: lm_media_property) throws(CAPIError) -> MediaProperty {
  let all: [lm_media_property: MediaProperty] = [
    LM_PROPERTY_PERSISTENT_ID: .persistentID, LM_PROPERTY_TITLE: .title, LM_PROPERTY_ARTIST: .artist,
    LM_PROPERTY_ALBUM_TITLE: .albumTitle, LM_PROPERTY_ALBUM_ARTIST: .albumArtist, LM_PROPERTY_GENRE: .genre,
    LM_PROPERTY_COMPOSER: .composer, LM_PROPERTY_PLAYBACK_DURATION: .playbackDuration,
    LM_PROPERTY_ALBUM_TRACK_NUMBER: .albumTrackNumber, LM_PROPERTY_DISC_NUMBER: .discNumber,
    LM_PROPERTY_BEATS_PER_MINUTE: .beatsPerMinute, LM_PROPERTY_YEAR: .year, LM_PROPERTY_PLAY_COUNT: .playCount,
    LM_PROPERTY_SKIP_COUNT: .skipCount, LM_PROPERTY_RATING: .rating, LM_PROPERTY_IS_COMPILATION: .isCompilation,
    LM_PROPERTY_LAST_PLAYED_DATE: .lastPlayedDate, LM_PROPERTY_DATE_ADDED: .dateAdded, LM_PROPERTY_PATH: .assetURL,
    LM_PROPERTY_LOUDNESS: .loudness, LM_PROPERTY_ENERGY: .energy, LM_PROPERTY_MOOD: .mood,
  ]
  guard let property = all[value] else {
    throw .invalidArgument("property \(value.rawValue): not an lm_media_property value")
  }
  return property
}

private func comparison(_ value: lm_comparison) throws(CAPIError) -> MediaPredicateComparison {
  switch value {
  case LM_COMPARE_EQUAL_TO: return .equalTo
  case LM_COMPARE_CONTAINS: return .contains
  case LM_COMPARE_LESS_THAN: return .lessThan
  case LM_COMPARE_LESS_THAN_OR_EQUAL_TO: return .lessThanOrEqualTo
  case LM_COMPARE_GREATER_THAN: return .greaterThan
  case LM_COMPARE_GREATER_THAN_OR_EQUAL_TO: return .greaterThanOrEqualTo
  default: throw .invalidArgument("comparison \(value.rawValue): not an lm_comparison value")
  }
}

/// `predicates[index]` as a Swift predicate, checked against its property.
private func predicate(_ predicates: UnsafePointer<lm_predicate>, _ index: Int) throws(CAPIError)
  -> MediaPropertyPredicate
{
  let given = predicates[index]
  let property = try property(given.property)
  let comparison = try comparison(given.comparison)
  let made: MediaPropertyPredicate
  // lm_predicate_text on a number or the id: name the text the caller gave, not the 0 left
  // unset in `number` or `id` (which read "year contains 0").
  func textWhereNone(_ field: String, _ maker: String) -> CAPIError? {
    guard let text = given.text else { return nil }
    let shown = String(validatingCString: text).map { "\"\($0)\"" } ?? "text that is not UTF-8"
    return .invalidArgument(
      "predicates[\(index)].text is \(shown), but \(property.rawValue) is \(field == "id" ? "an id" : "a number"): "
        + "give it in .\(field) (\(maker))" + (comparison == .contains ? "; contains is for text and the path" : ""))
  }
  switch property {
  case .persistentID:
    if let error = textWhereNone("id", "lm_predicate_id") { throw error }
    // A 64-bit id does not fit a double: it is given whole, as text.
    made = MediaPropertyPredicate(value: String(given.id), forProperty: property, comparisonType: comparison)
  case .title, .artist, .albumTitle, .albumArtist, .genre, .composer, .mood:
    let text = try CString.nonEmpty(given.text, "predicates[\(index)].text (\(property.rawValue) is text)")
    made = MediaPropertyPredicate(value: text, forProperty: property, comparisonType: comparison)
  case .assetURL:
    guard let text = CString.optionalPath(given.text) else {
      throw .invalidArgument("predicates[\(index)].text is NULL (the path is matched as text)")
    }
    made = MediaPropertyPredicate(value: text, forProperty: property, comparisonType: comparison)
  default:
    if let error = textWhereNone("number", "lm_predicate_number") { throw error }
    guard given.number.isFinite else {
      throw .invalidArgument("predicates[\(index)].number (\(property.rawValue)) is \(given.number): not finite")
    }
    made = MediaPropertyPredicate(value: given.number, forProperty: property, comparisonType: comparison)
  }
  do {
    try made.validate()
  } catch {
    throw .invalidArgument("predicates[\(index)]: \(error)")
  }
  return made
}

private func grouping(_ sort: lm_sort) throws(CAPIError) -> MediaQuery {
  switch sort {
  case LM_SORT_TITLE: return .songs()
  case LM_SORT_ALBUM: return .albums()
  case LM_SORT_ARTIST: return .artists()
  case LM_SORT_ALBUM_ARTIST: return .albumArtists()
  case LM_SORT_COMPOSER: return .composers()
  case LM_SORT_GENRE: return .genres()
  default: throw .invalidArgument("sort \(sort.rawValue): not an lm_sort value")
  }
}

extension EngineSession {
  /// The songs `query` matches, in its order: the predicates (AND), then the picker's search
  /// (title, artist or album contains the text), from the whole library or one playlist.
  func songs(_ query: lm_query?) throws(CAPIError) -> [MediaItem] {
    var swiftQuery = try grouping(query?.sort ?? LM_SORT_TITLE)
    if let query, try cSize(query.predicate_count, "query.predicate_count") > 0 {
      let predicates = try required(query.predicates, "query.predicates (with a count of \(query.predicate_count))")
      for index in 0..<query.predicate_count {
        swiftQuery.addFilterPredicate(try predicate(predicates, index))
      }
    }
    let search = try CString.optional(query?.search_text, "query.search_text")?.trimmingWhitespace() ?? ""
    do {
      var songs: [MediaItem]
      if let id = query?.playlist_id, id != 0 {
        var lists = MediaQuery.playlists()
        lists.filterPredicates = swiftQuery.filterPredicates
        // A filtered playlist query leaves out a playlist with no match: ask for it unfiltered too.
        guard
          let playlist = try library.collections(matching: MediaQuery.playlists()).first(where: {
            $0.persistentID == id
          })
        else { throw CAPIError.invalidArgument("query.playlist_id \(id): the library has no such playlist") }
        if swiftQuery.filterPredicates.isEmpty {
          songs = playlist.items
        } else {
          songs = try library.collections(matching: lists).first { $0.persistentID == id }?.items ?? []
        }
      } else {
        songs = try library.items(matching: swiftQuery)
      }
      guard !search.isEmpty else { return songs }
      // The picker's search: each property's contains query, their union, in the songs' order.
      var found = Set<UInt64>()
      for property in [MediaProperty.title, .artist, .albumTitle] {
        var contains = MediaQuery.songs()
        contains.addFilterPredicate(
          MediaPropertyPredicate(value: search, forProperty: property, comparisonType: .contains))
        for item in try library.items(matching: contains) { if let id = item.persistentID { found.insert(id) } }
      }
      songs.removeAll { !found.contains($0.persistentID ?? 0) }
      return songs
    } catch let error as CAPIError {
      throw error
    } catch let error as LibraryError {
      throw libraryError(error)
    } catch {
      throw CAPIError(LM_ERROR_LIBRARY, "\(error)")
    }
  }

  /// The items with these ids, in order; an id the index does not have is an error naming it.
  func items(_ ids: UnsafePointer<UInt64>?, _ count: Int) throws(CAPIError) -> [MediaItem] {
    guard count > 0 else { return [] }
    let ids = try required(ids, "persistent_ids (with a count of \(count))")
    let wanted = Array(UnsafeBufferPointer(start: ids, count: count))
    let found: [MediaItem?]
    do {
      found = try library.items(persistentIDs: wanted)
    } catch {
      throw libraryError(error)
    }
    if let missing = zip(wanted, found).first(where: { $0.1 == nil }) {
      throw .invalidArgument(
        "persistent_ids: the library index has no song \(missing.0) (never scanned, or its file is gone: "
          + "run lm_library_scan, then lm_library_query for the ids)")
    }
    return found.compactMap { $0 }
  }
}

/// Copies `item` into the caller's struct.
private func fill(_ out: UnsafeMutablePointer<lm_media_item>, with item: MediaItem) {
  out.pointee.struct_size = MemoryLayout<lm_media_item>.size
  out.pointee.persistent_id = item.persistentID ?? 0
  var cut = false
  cut = CString.copy(item.displayName, into: &out.pointee.title) || cut
  cut = CString.copy(item.artist, into: &out.pointee.artist) || cut
  cut = CString.copy(item.albumTitle, into: &out.pointee.album_title) || cut
  cut = CString.copy(item.albumArtist, into: &out.pointee.album_artist) || cut
  cut = CString.copy(item.genre, into: &out.pointee.genre) || cut
  cut = CString.copy(path: item.assetURL.path, into: &out.pointee.path) || cut
  out.pointee.truncated = cut ? 1 : 0
  out.pointee.duration_seconds = item.playbackDuration ?? -1
  out.pointee.beats_per_minute = item.beatsPerMinute ?? 0
  out.pointee.year = Int32(clamping: item.year ?? 0)
  out.pointee.album_track_number = Int32(clamping: item.albumTrackNumber ?? 0)
  out.pointee.rating = Int32(clamping: item.rating)
  out.pointee.play_count = Int32(clamping: item.playCount)
  out.pointee.skip_count = Int32(clamping: item.skipCount)
  out.pointee.has_loudness = item.loudness == nil ? 0 : 1
  out.pointee.loudness_lufs = item.loudness ?? 0
  cut = CString.copy(item.mood, into: &out.pointee.mood) || cut
  out.pointee.truncated = cut ? 1 : 0
}

/// Checks an output array's pointer and capacity: NULL goes with 0 only.
private func checkedArray(_ pointer: UnsafeMutableRawPointer?, _ capacity: Int, _ name: String) throws(CAPIError) {
  _ = try cSize(capacity, "capacity")
  guard (pointer == nil) == (capacity == 0) else {
    throw .invalidArgument(
      pointer == nil ? "\(name) is NULL with a capacity of \(capacity)" : "\(name) has a capacity of 0 (pass NULL)")
  }
}

@_cdecl("lm_library_query")
public func lmLibraryQuery(
  _ handle: OpaquePointer?, _ query: UnsafePointer<lm_query>?, _ items: UnsafeMutablePointer<lm_media_item>?,
  _ capacity: Int, _ outCount: UnsafeMutablePointer<Int>?, _ outTotal: UnsafeMutablePointer<Int>?
) -> lm_error {
  outCount?.pointee = 0
  outTotal?.pointee = 0
  return withEngine(handle) { session throws(CAPIError) in
    try checkedArray(UnsafeMutableRawPointer(items), capacity, "items")
    var given: lm_query?
    if let query {
      let size = UnsafeRawPointer(query).load(as: Int.self)
      try checkedSize(size, of: "lm_query", MemoryLayout<lm_query>.size)
      given = query.pointee
    }
    // A program built before `mood` was added passes the struct without it.
    let olderSize = MemoryLayout<lm_media_item>.offset(of: \lm_media_item.mood)
    let stride =
      try items.map { first throws(CAPIError) in try arrayStride(of: first, "lm_media_item", minimum: olderSize) } ?? 0
    let songs = try session.songs(given)
    let offset = min(songs.count, try cSize(given?.offset ?? 0, "query.offset"))
    let count = min(capacity, songs.count - offset)
    if let items {
      let base = UnsafeMutableRawPointer(items)
      for index in 0..<count {
        // Filled whole here, then as much of it as the caller's struct holds.
        var item = lm_media_item()
        fill(&item, with: songs[offset + index])
        let size = min(stride, MemoryLayout<lm_media_item>.size)
        item.struct_size = size
        withUnsafeBytes(of: &item) { bytes in
          (base + index * stride).copyMemory(from: bytes.baseAddress!, byteCount: size)
        }
      }
    }
    outCount?.pointee = count
    outTotal?.pointee = songs.count
  }
}

@_cdecl("lm_library_playlists")
public func lmLibraryPlaylists(
  _ handle: OpaquePointer?, _ playlists: UnsafeMutablePointer<lm_playlist>?, _ capacity: Int,
  _ outCount: UnsafeMutablePointer<Int>?, _ outTotal: UnsafeMutablePointer<Int>?
) -> lm_error {
  outCount?.pointee = 0
  outTotal?.pointee = 0
  return withEngine(handle) { session throws(CAPIError) in
    try checkedArray(UnsafeMutableRawPointer(playlists), capacity, "playlists")
    let stride = try playlists.map { first throws(CAPIError) in try arrayStride(of: first, "lm_playlist") } ?? 0
    let lists: [MediaItemCollection]
    do throws(LibraryError) {
      lists = try session.library.collections(matching: .playlists())
    } catch {
      throw libraryError(error)
    }
    let count = min(capacity, lists.count)
    if let playlists {
      let base = UnsafeMutableRawPointer(playlists)
      for index in 0..<count {
        let out = (base + index * stride).assumingMemoryBound(to: lm_playlist.self)
        out.pointee.struct_size = MemoryLayout<lm_playlist>.size
        out.pointee.persistent_id = lists[index].persistentID ?? 0
        out.pointee.item_count = Int32(clamping: lists[index].count)
        out.pointee.truncated = CString.copy(lists[index].name, into: &out.pointee.name) ? 1 : 0
      }
    }
    outCount?.pointee = count
    outTotal?.pointee = lists.count
  }
}

// MARK: - Picks and the game's queue

@_cdecl("lm_set_picks")
public func lmSetPicks(_ handle: OpaquePointer?, _ ids: UnsafePointer<UInt64>?, _ count: Int) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    _ = try cSize(count, "count")
    let picked = try session.items(ids, count)
    session.director.setPicks(picked.isEmpty ? nil : MediaItemCollection(items: picked))
  }
}

@_cdecl("lm_set_queue")
public func lmSetQueue(
  _ handle: OpaquePointer?, _ ids: UnsafePointer<UInt64>?, _ count: Int, _ seconds: Double, _ at: lm_moment,
  _ repeatMode: lm_repeat_mode
) -> lm_error {
  lmSetQueueShuffled(handle, ids, count, seconds, at, repeatMode, LM_SHUFFLE_OFF)
}

@_cdecl("lm_set_queue_shuffled")
public func lmSetQueueShuffled(
  _ handle: OpaquePointer?, _ ids: UnsafePointer<UInt64>?, _ count: Int, _ seconds: Double, _ at: lm_moment,
  _ repeatMode: lm_repeat_mode, _ shuffleMode: lm_shuffle_mode
) -> lm_error {
  withEngine(handle) { session throws(CAPIError) in
    _ = try cSize(count, "count")
    let transition = TransitionSpec(seconds: try checkedSeconds(seconds, "seconds"), moment: try moment(at))
    let repeats: RepeatMode
    switch repeatMode {
    case LM_REPEAT_ALL: repeats = .all
    case LM_REPEAT_NONE: repeats = .none
    case LM_REPEAT_ONE: repeats = .one
    default:
      throw .invalidArgument("repeat \(repeatMode.rawValue): expected LM_REPEAT_ALL, LM_REPEAT_NONE or LM_REPEAT_ONE")
    }
    let shuffles: ShuffleMode
    switch shuffleMode {
    case LM_SHUFFLE_OFF: shuffles = .off
    case LM_SHUFFLE_SONGS: shuffles = .songs
    case LM_SHUFFLE_ALBUMS: shuffles = .albums
    default:
      throw .invalidArgument(
        "shuffle \(shuffleMode.rawValue): expected LM_SHUFFLE_OFF, LM_SHUFFLE_SONGS or LM_SHUFFLE_ALBUMS")
    }
    let queue = try session.items(ids, count)
    session.director.setQueue(queue, transition: transition, repeatMode: repeats, shuffleMode: shuffles)
  }
}
