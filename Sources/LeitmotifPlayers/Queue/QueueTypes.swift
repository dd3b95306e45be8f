import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput

/// MediaPlayer's repeat modes.
public enum RepeatMode: String, Sendable, CaseIterable {
  /// Play the queue once.
  case none
  /// Repeat the playing item (skipping still moves on).
  case one
  /// Start the queue over after its last item.
  case all
}

/// MediaPlayer's shuffle modes.
public enum ShuffleMode: String, Sendable, CaseIterable {
  /// Items in queue order.
  case off
  /// Items in a random order.
  case songs
  /// Albums in a random order, each album's items in queue order.
  case albums
}

/// Why the now-playing item changed.
public enum NowPlayingChangeReason: String, Sendable {
  /// The previous item ended (or its crossfade into this one began).
  case naturalEnd
  /// A skip forward: `skipToNextItem()`, or a jump to a later item (`skip(toIndex:)`,
  /// `setNowPlayingItem(_:)`).
  case skipForward
  /// A skip back: `skipToPreviousItem()`, or a jump to an earlier item.
  case skipBack
  /// The queue was set or changed (`setQueue`, a transaction that removed the playing item).
  case queueChange
  /// The previous item failed; this one follows it.
  case failure
}

/// What a queue player reports, in order, to its observers and event streams.
public enum QueuePlayerEvent: Sendable {
  /// A new item is now playing (nil: none), at `index` in the play order, for `reason`.
  case nowPlayingItemChanged(MediaItem?, index: Int?, reason: NowPlayingChangeReason)
  /// The playback state changed to this.
  case playbackStateChanged(PlaybackState)
  /// The queue's items (in play order) changed.
  case queueChanged(count: Int)
  /// The player's volume changed to this.
  case volumeChanged(Float)
  /// An item could not be opened or failed while playing; the queue moves on past it, and passes
  /// over its file when it comes round again (repeat all), until a new queue is set.
  case itemFailed(MediaItem, DecodeError)
  /// A transition between two items began (gapless joins included), as heard: a crossfade longer
  /// than half the outgoing or the incoming item is shortened to that.
  case transitionStarted(from: MediaItem?, to: MediaItem, Transition)
  /// The output ran dry and was restarted.
  case underrun
}

extension QueuePlayerEvent: CustomStringConvertible {
  /// One short line, items by title (else file name): `print(event)` in an observer reads like a
  /// log, where the items' whole descriptions took hundreds of characters each.
  public var description: String {
    func name(_ item: MediaItem?) -> String { item.map { "\"\($0.displayName)\"" } ?? "nothing" }
    switch self {
    case .nowPlayingItemChanged(let item, let index, let reason):
      return "now playing \(name(item))\(index.map { " (index \($0))" } ?? "") after \(reason.rawValue)"
    case .playbackStateChanged(let state): return "playback state: \(state)"
    case .queueChanged(let count): return "queue changed: \(count) item\(count == 1 ? "" : "s")"
    case .volumeChanged(let volume): return "volume: \(volume)"
    case .itemFailed(let item, let error): return "\(name(item)) failed: \(error)"
    case .transitionStarted(let from, let to, let transition):
      return "\(from == nil ? "start" : "from \(name(from))") to \(name(to)): \(transition)"
    case .underrun: return "underrun: the output ran dry and was restarted"
    }
  }
}
