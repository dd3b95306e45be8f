import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput

extension QueueDescriptor {
  /// A queue of the items `query` finds in `library`, in the query's order; hand it to
  /// `QueuePlayer.setQueue(with:)`.
  /// - Throws: what `MediaLibrary.items(matching:)` throws.
  public init(query: MediaQuery, library: MediaLibrary) throws(LibraryError) {
    self.init(items: try library.items(matching: query))
  }
}
