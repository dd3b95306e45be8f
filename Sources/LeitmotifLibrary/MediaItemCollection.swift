import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

/// An ordered set of items (MediaPlayer's MPMediaItemCollection): an album, a playlist, a pick.
public struct MediaItemCollection: Sendable, Equatable {
  /// The items, in order.
  public var items: [MediaItem]
  /// The item that stands for the collection (its first).
  public var representativeItem: MediaItem? { items.first }
  /// How many items there are.
  public var count: Int { items.count }
  /// What the collection is, when it has a name: a playlist's, or the album, artist, genre or
  /// composer a library query grouped by (nil for a plain list of items).
  public var name: String?
  /// A library playlist's persistent id (nil for other collections).
  public var persistentID: UInt64?
  /// A collection of `items`, with a name and a playlist's persistent id where there are any.
  public init(items: [MediaItem], name: String? = nil, persistentID: UInt64? = nil) {
    self.items = items
    self.name = name
    self.persistentID = persistentID
  }
}
