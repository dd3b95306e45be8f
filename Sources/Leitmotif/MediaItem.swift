import Foundation

/// A piece of music that can be played: a file and what is known about it.
///
/// This is MediaPlayer's media item: an asset (the file) separate from any playing instance of it.
/// Properties not known yet are `nil`; `MediaItem.load(path:)` fills them from the file's tags.
public struct MediaItem: Sendable, Hashable {
  /// Identity, as MediaPlayer's items have it: library items are the same item when their
  /// persistent ids are (a play count going up, or a move, does not make another item); other
  /// items when their file and title are.
  public static func == (lhs: MediaItem, rhs: MediaItem) -> Bool {
    switch (lhs.persistentID, rhs.persistentID) {
    case (let left?, let right?): return left == right
    case (nil, nil):
      return lhs.assetURL.standardizedFileURL == rhs.assetURL.standardizedFileURL && lhs.title == rhs.title
    default: return false
    }
  }

  public func hash(into hasher: inout Hasher) {
    if let persistentID {
      hasher.combine(persistentID)
    } else {
      hasher.combine(assetURL.standardizedFileURL)
    }
  }

  /// The file holding the audio.
  public var assetURL: URL
  public var title: String?
  public var artist: String?
  public var albumTitle: String?
  /// Length in seconds, when known.
  public var playbackDuration: TimeInterval?
  /// The file's sample rate, when known (loop points are in its frames).
  public var sampleRate: Int?
  /// Library properties (MediaPlayer's `MPMediaItem`), filled for items that come from the
  /// player's music library; nil or 0 otherwise.
  /// Stays the same across rescans, renames and moves inside the library (it comes from the audio).
  public var persistentID: UInt64?
  public var albumArtist: String?
  public var genre: String?
  public var composer: String?
  public var albumTrackNumber: Int?
  public var discNumber: Int?
  public var beatsPerMinute: Double?
  public var year: Int?
  public var playCount = 0
  public var skipCount = 0
  public var lastPlayedDate: Date?
  public var dateAdded: Date?
  /// 0 (unrated) to 5.
  public var rating = 0
  public var isCompilation = false

  public init(assetURL: URL, title: String? = nil, artist: String? = nil, albumTitle: String? = nil) {
    self.assetURL = assetURL
    self.title = title
    self.artist = artist
    self.albumTitle = albumTitle
  }

  /// An item for the file at `path`, properties unknown until it is prepared.
  public init(path: String) { self.init(assetURL: URL(fileURLWithPath: path)) }

  /// Opens the file, reads its tags and length, and returns a complete item. Does I/O: not on a
  /// game thread that must not wait.
  /// - Throws: `DecodeError` naming the file and the reason.
  public static func load(path: String) throws(DecodeError) -> MediaItem {
    let decoder = try AudioFile.openDecoder(path: path)
    var item = MediaItem(path: path)
    item.title = decoder.tags.title
    item.artist = decoder.tags.artist
    item.albumTitle = decoder.tags.album
    item.playbackDuration = decoder.durationSeconds
    item.sampleRate = decoder.format.sampleRate
    return item
  }
}
