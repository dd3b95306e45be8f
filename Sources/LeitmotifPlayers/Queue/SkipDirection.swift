import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput

/// Where a `skip` action goes: the next item, the previous one, or the playing item's beginning.
public enum SkipDirection: String, Sendable, CaseIterable {
  /// `next` and `previous` items of the state's queue, or the `beginning` of the playing item.
  case next, previous, beginning
}
