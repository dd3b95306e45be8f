import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

/// What a `MediaPicker` tells the game when the player is done (MediaPlayer's
/// `MPMediaPickerControllerDelegate`). Called on the thread that called `toggle`, `pick` or
/// `cancel`, after the picker has finished.
public protocol MediaPickerDelegate: AnyObject {
  /// The player chose `collection` (in the order they picked the items; never empty).
  func mediaPicker(_ picker: MediaPicker, didPick collection: MediaItemCollection)
  /// The player closed the picker without choosing.
  func mediaPickerDidCancel(_ picker: MediaPicker)
}

/// A picker for the player's own music that the game draws in its own UI: MediaPlayer's
/// `MPMediaPickerController`, as a model. `leitmotif pick` is a terminal UI on top of it.
///
/// ```swift
/// let picker = MediaPicker(library: library)
/// picker.allowsPickingMultipleItems = true
/// picker.delegate = self
/// try picker.present()                 // asks for access when nobody has yet
/// try picker.setSearchText("dragon")   // title, artist or album contains "dragon"
/// picker.toggle(picker.items[0])       // then picker.pick(), or picker.cancel()
/// ```
///
/// **Access.** `present()` needs the library's usage description (else
/// `LibraryError.missingUsageDescription`, and nobody is asked). When nobody has been asked it
/// asks first (`MediaLibrary.requestAuthorization()`). When the answer is not yes (denied,
/// restricted, or notDetermined because nobody could be asked) it throws
/// `LibraryError.accessDenied` with the state and the reason, for the game to show; the picker
/// never opened, so the delegate is not called (no `mediaPickerDidCancel`): the game already
/// knows from the error, and a cancel would read as the player's choice.
///
/// **Picking.** With `allowsPickingMultipleItems` false (the default), `toggle(_:)` picks that
/// one item at once. With it true, `toggle(_:)` adds or removes an item from `selection` and
/// `pick()` hands the selection over (it does nothing while the selection is empty). After
/// `didPick` or `didCancel` the picker is finished: further calls are ignored until `present()`.
///
/// Thread safety: none; drive it from one thread (the game's UI thread). `present()`,
/// `setSearchText(_:)` and `reload()` query the library index (I/O): fine for a menu, not for a
/// frame that must not wait.
public final class MediaPicker {
  /// Which kinds of media the picker offers (MediaPlayer's `MPMediaType`). The library holds
  /// music only, so there is one kind; an empty set offers nothing.
  public struct MediaTypes: OptionSet, Sendable, Hashable {
    /// The set's bits.
    public let rawValue: UInt
    /// A set from its bits.
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// Music: what the library holds.
    public static let music = MediaTypes(rawValue: 1 << 0)
    /// Everything the library can hold (today: music).
    public static let anyAudio: MediaTypes = [.music]
  }

  /// An index-style group of `items` (e.g. every title under "B"), from the library's
  /// `itemSections(matching:)`: its title and the items' indices in `items`.
  public struct Section: Sendable, Equatable {
    /// The section's title: a letter, or "#".
    public var title: String
    /// Where its items lie in `items`.
    public var range: Range<Int>
    /// A section `title` over `range` of `items`.
    public init(title: String, range: Range<Int>) {
      self.title = title
      self.range = range
    }
  }

  /// Where the picker is in its life.
  public enum State: Sendable, Equatable {
    /// Not presented yet (or presenting failed).
    case idle
    /// Presented: searching and selecting.
    case presented
    /// Done: the delegate was told `didPick`.
    case picked
    /// Done: the delegate was told `didCancel`.
    case cancelled
  }

  /// What the picker offers (`.music`).
  public let mediaTypes: MediaTypes
  /// Whether the player may pick several items (default false: the first one picked is the pick).
  public var allowsPickingMultipleItems = false
  /// A line the game shows above the list ("Choose the music for your base").
  public var prompt: String?
  /// Told when the player picks or cancels. Held weakly, as MediaPlayer does.
  public weak var delegate: (any MediaPickerDelegate)?

  /// Where the picker is in its life: idle, presented, picked or cancelled.
  public private(set) var state = State.idle
  /// The filter: items whose title, artist or album contains it, ignoring case and diacritics.
  /// Empty: every item.
  public private(set) var searchText = ""
  /// The items shown: the library's songs (sorted as its song query sorts them) that match
  /// `searchText`.
  public private(set) var items: [MediaItem] = []
  /// `items` in index-style sections, in order; together they cover `items`.
  public private(set) var sections: [Section] = []
  /// The items chosen so far, in the order they were chosen (multiple mode).
  public private(set) var selection: [MediaItem] = []
  /// How many items the library holds, whatever the filter (0: the index is empty; a UI may
  /// offer to scan).
  public private(set) var libraryItemCount = 0

  let source: any MediaPickerSource
  /// Every song and its sections, read by `present()`/`reload()`; filtering keeps their order.
  private var catalog: [MediaItem] = []
  private var catalogSections: [Section] = []

  /// A picker over `library`'s music.
  public convenience init(library: MediaLibrary, mediaTypes: MediaTypes = .music) {
    self.init(source: LibraryPickerSource(library: library), mediaTypes: mediaTypes)
  }

  init(source: any MediaPickerSource, mediaTypes: MediaTypes = .music) {
    self.source = source
    self.mediaTypes = mediaTypes
  }

  /// Opens the picker: checks the usage description, asks for access when nobody has, and reads
  /// the library's songs (`searchText` and `selection` start empty).
  /// - Throws: `LibraryError.missingUsageDescription` (nobody was asked, nothing was read);
  ///   `LibraryError.accessDenied` with the state (notDetermined, denied or restricted) and why;
  ///   `LibraryError.index` when the index cannot be read. The delegate is not called.
  public func present() throws(LibraryError) {
    state = .idle
    try source.checkUsageDescription()
    if source.authorizationStatus == .notDetermined {
      _ = try source.requestAuthorization()
    }
    try source.checkAccess()
    searchText = ""
    selection = []
    try reload()
    state = .presented
  }

  /// Reads the library again (after a scan, or a library change) and re-applies `searchText`.
  /// The selection keeps the items still in the library.
  /// - Throws: `LibraryError` (access revoked meanwhile: `.accessDenied`).
  public func reload() throws(LibraryError) {
    if mediaTypes.contains(.music) {
      let songs: (items: [MediaItem], sections: [Section])
      do throws(LibraryError) { songs = try source.songs() } catch {
        if case .accessDenied = error { forgetLibrary() }
        throw error
      }
      catalog = songs.items
      catalogSections = songs.sections
    } else {
      catalog = []
      catalogSections = []
    }
    libraryItemCount = catalog.count
    let present = Set(catalog)
    selection.removeAll { !present.contains($0) }
    try applySearch()
  }

  /// Filters the items: those whose title, artist or album title contains `text`, ignoring case
  /// and diacritics ("beyonce" finds "Beyoncé"). Surrounding white space is ignored.
  /// - Throws: `LibraryError` from the library's query.
  public func setSearchText(_ text: String) throws(LibraryError) {
    let previous = searchText
    searchText = text
    do {
      try applySearch()
    } catch {
      // The text goes with the items it found: a failed search leaves both as they were, or,
      // when the player withdrew consent, shows nothing of theirs any more.
      searchText = previous
      if case .accessDenied = error { forgetLibrary() }
      throw error
    }
  }

  /// The player withdrew consent: nothing of their library stays in the picker.
  private func forgetLibrary() {
    catalog = []
    catalogSections = []
    items = []
    sections = []
    selection = []
    libraryItemCount = 0
  }

  private func applySearch() throws(LibraryError) {
    let needle = searchText.trimmingWhitespace()
    if needle.isEmpty || catalog.isEmpty {
      items = catalog
      sections = catalogSections
      return
    }
    let matching = Set(try source.search(text: needle))
    var kept: [MediaItem] = []
    var keptSections: [Section] = []
    for section in catalogSections {
      let start = kept.count
      kept.append(contentsOf: catalog[section.range].filter { matching.contains($0) })
      if kept.count > start { keptSections.append(Section(title: section.title, range: start..<kept.count)) }
    }
    items = kept
    sections = keptSections
  }

  /// Whether `item` is in `selection`.
  public func isSelected(_ item: MediaItem) -> Bool { selection.contains(item) }

  /// Multiple mode: adds `item` to the selection, or removes it if it is there. Single mode:
  /// picks `item` at once (the delegate is told `didPick` with it). Ignored unless presented.
  public func toggle(_ item: MediaItem) {
    guard state == .presented else { return }
    if !allowsPickingMultipleItems {
      finish(picking: [item])
    } else if let index = selection.firstIndex(of: item) {
      selection.remove(at: index)
    } else {
      selection.append(item)
    }
  }

  /// Hands the selection to the delegate (`didPick`) and finishes. Does nothing (returns false)
  /// while the selection is empty or the picker is not presented. When the player has withdrawn
  /// consent since the picker opened, nothing of theirs is handed over: the picker cancels
  /// (`didCancel`) and this returns false.
  @discardableResult
  public func pick() -> Bool {
    guard state == .presented else { return false }
    guard source.authorizationStatus == .authorized else { return finish(picking: []) }
    guard !selection.isEmpty else { return false }
    return finish(picking: selection)
  }

  /// Closes the picker without a pick: the delegate is told `didCancel`. Ignored unless presented.
  public func cancel() {
    guard state == .presented else { return }
    state = .cancelled
    delegate?.mediaPickerDidCancel(self)
  }

  @discardableResult
  private func finish(picking picked: [MediaItem]) -> Bool {
    guard source.authorizationStatus == .authorized else {
      forgetLibrary()
      cancel()
      return false
    }
    state = .picked
    delegate?.mediaPicker(self, didPick: MediaItemCollection(items: picked))
    return true
  }
}

/// What the picker needs from a library: the seam between the model and the index, so the
/// model's rules can be tested on their own. `LibraryPickerSource` is the real one.
package protocol MediaPickerSource {
  var authorizationStatus: AuthorizationStatus { get }
  /// Throws `LibraryError.missingUsageDescription` without a usage description.
  func checkUsageDescription() throws(LibraryError)
  func requestAuthorization() throws(LibraryError) -> AuthorizationStatus
  /// Throws `LibraryError.accessDenied` (with the state and why) unless authorized.
  func checkAccess() throws(LibraryError)
  /// Every song, in the song query's order, and its index-style sections.
  func songs() throws(LibraryError) -> (items: [MediaItem], sections: [MediaPicker.Section])
  /// The songs whose title, artist or album title contains `text` (case and diacritics ignored).
  func search(text: String) throws(LibraryError) -> [MediaItem]
}
