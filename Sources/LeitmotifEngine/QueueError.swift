/// Why a queue request was refused. The queue is left exactly as it was.
public enum QueueError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The operation needs items and the queue (or the items given) has none.
  case emptyQueue(operation: String)
  /// An index outside the queue of `count` items.
  case indexOutOfRange(index: Int, count: Int)
  /// The item is not in the queue (`nowPlayingItem`, `insert(after:)`, `remove`, trim times).
  case itemNotInQueue(String)
  /// An item's start time is not before its end time.
  case startAfterEnd(item: String, start: Double, end: Double)
  /// A trim time outside the item (negative, NaN, or past its known duration).
  case trimOutsideItem(item: String, time: Double, duration: Double?)
  /// A crossfade of a negative, NaN or infinite length.
  case invalidCrossfade(Double)
  /// Loop points that cannot be used (zero length, outside the file); the text says why.
  case invalidLoopPoints(String)
  /// A negative loop count.
  case invalidLoopCount(Int)
  /// An entry's gain is not a finite level of at most +24 dB.
  case invalidGain(item: String, decibels: Double)
  /// An entry's rate is not a finite speed in 1/256...4.
  case invalidRate(item: String, rate: Float)
  /// An entry's layers cannot be played (too many, a volume outside 0...1); the text says why.
  case invalidLayers(String)
  /// A queue transaction was refused; `reason` is the first step that failed.
  case transactionRejected(reason: String)

  /// The refusal in a sentence that names the item and the value.
  public var description: String {
    switch self {
    case .emptyQueue(let operation): return "\(operation): the queue is empty"
    case .indexOutOfRange(let index, let count):
      return
        "index \(index) is out of range: the queue has \(count) item\(count == 1 ? "" : "s") (expected 0..<\(count))"
    case .itemNotInQueue(let item): return "\(item) is not in the queue"
    case .startAfterEnd(let item, let start, let end):
      return "\(item): the start time \(start) s is not before the end time \(end) s"
    case .trimOutsideItem(let item, let time, let duration):
      let limit = duration.map { "0...\($0) s" } ?? "a time of 0 s or more"
      return "\(item): trim time \(time) s is outside the item (expected \(limit))"
    case .invalidCrossfade(let seconds):
      return "crossfade of \(seconds) s: expected 0 s (gapless) to 86400 s (one day)"
    case .invalidLoopPoints(let why): return "invalid loop points: \(why)"
    case .invalidLoopCount(let count): return "loop count \(count): expected 0 or more"
    case .invalidGain(let item, let decibels):
      return "\(item): gain \(decibels) dB: expected a finite level of at most +24 dB"
    case .invalidRate(let item, let rate):
      return "\(item): rate \(rate): expected a speed from 1/256 to 4 (1 as written)"
    case .invalidLayers(let why): return "invalid layers: \(why)"
    case .transactionRejected(let reason): return "queue transaction rejected, the queue is unchanged: \(reason)"
    }
  }
}
