import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput

/// What to play and how: items with optional trim points, transitions and loops, and the item
/// to start with (MediaPlayer's queue descriptors, plus what game music needs).
///
/// The library's media queries make descriptors too (`QueueDescriptor(query:)`, from the library
/// issue): everything a queue needs is in the entries, so any source of items can fill one.
public struct QueueDescriptor: Sendable, Equatable {
  /// One item of the queue and how it plays.
  public struct Entry: Sendable, Equatable {
    /// The item.
    public var item: MediaItem
    /// Trim points in seconds of the file (nil: from the start, to the end).
    public var startTime: TimeInterval?
    /// Where it stops, in seconds of the file (nil: at its end).
    public var endTime: TimeInterval?
    /// How this entry takes over from the one before it (nil: the player's `transition`).
    public var transition: Transition?
    /// Loop points (nil: the file's LOOPSTART/LOOPLENGTH tags, if any).
    public var loopPoints: LoopPoints?
    /// How often it loops (nil: the player's `loopRepeat`).
    public var loopRepeat: LoopRepeat?
    /// A level change for this entry alone, in decibels (nil: none), applied to its samples as
    /// they are decoded, so that it is exact at gapless joins (ReplayGain, a source's gain).
    public var gainDecibels: Double?
    /// This entry's own speed, tape-style (pitch goes with it), multiplied with the player's
    /// `currentPlaybackRate` (nil: 1). Positions, beats and bar lines follow it. One voice plays
    /// one rate, so an entry joined gaplessly to one of another rate joins with the shortest
    /// click-free crossfade instead. The music director puts each state's `rate` here, so that
    /// in a crossfade between states each music keeps its own speed. Must lie in 1/256...4.
    public var rate: Float?
    /// The item's other stems, played sample-locked with it (vertical layering): each starts on
    /// the item's frame, loops with it and is sought with it; its level is set through
    /// `QueuePlayer.setVolume(_:ofLayer:over:curve:)`. Each must have the item's sample rate. A
    /// stem shorter than the item is silent past its end; a longer one is cut at the item's end
    /// or loop end. At most `Voice.maximumLayers` (8); more are an error.
    public var layers: [Layer] = []
    /// The entry's beat grid, for beat callbacks (`QueuePlayer.addBeatObserver`); nil: the item's
    /// own (its BPM tag or detected tempo), if it has one.
    public var beatGrid: BeatGrid?
    /// The entry's named cue points, in seconds of its file by name, reported as markers
    /// (`QueuePlayer.addMarkerObserver`); nil: the item's own (`MediaItem.cuePoints`).
    public var cuePoints: [String: [Double]]?

    /// An entry for `item`, with trim points, transition, loop points and loop count where given
    /// (nil: the file's or the player's).
    public init(
      item: MediaItem, startTime: TimeInterval? = nil, endTime: TimeInterval? = nil, transition: Transition? = nil,
      loopPoints: LoopPoints? = nil, loopRepeat: LoopRepeat? = nil
    ) {
      self.item = item
      self.startTime = startTime
      self.endTime = endTime
      self.transition = transition
      self.loopPoints = loopPoints
      self.loopRepeat = loopRepeat
    }

    /// Checks the trim points on their own and against the item's duration where it is known.
    func validate() throws(QueueError) {
      let duration = item.playbackDuration
      for time in [startTime, endTime].compactMap({ $0 }) {
        guard time.isFinite, time >= 0, duration.map({ time <= $0 + 1e-9 }) ?? true else {
          throw QueueError.trimOutsideItem(item: item.errorName, time: time, duration: duration)
        }
      }
      if let start = startTime, let end = endTime, start >= end {
        throw QueueError.startAfterEnd(item: item.errorName, start: start, end: end)
      }
      if case .times(let count)? = loopRepeat, count < 0 { throw QueueError.invalidLoopCount(count) }
      if layers.count > Voice.maximumLayers {
        throw QueueError.invalidLayers("\(item.errorName): \(layers.count) layers; at most \(Voice.maximumLayers)")
      }
      for layer in layers where !(layer.volume.isFinite && layer.volume >= 0 && layer.volume <= 1) {
        throw QueueError.invalidLayers("\(layer.item.errorName): volume \(layer.volume) is outside [0, 1]")
      }
      if let gain = gainDecibels, !(gain.isFinite && gain <= 24) {
        throw QueueError.invalidGain(item: item.errorName, decibels: gain)
      }
      if let rate, !Voice.rateRange.contains(rate) {
        throw QueueError.invalidRate(item: item.errorName, rate: rate)
      }
      if let loop = loopPoints, let duration, let rate = item.sampleRate {
        let length = FrameMath.frames(seconds: duration, rate: Double(rate))
        guard (loop.endFrame ?? length) <= length, loop.startFrame < length else {
          throw QueueError.invalidLoopPoints(
            "\(item.errorName): the loop \(loop.startFrame)..<\(loop.endFrame ?? length) is outside the file's \(length) frames"
          )
        }
      }
    }
  }

  /// Where an entry's beats fall: every beat of `beatsPerMinute`, counted from `offsetSeconds`
  /// into the file (the first downbeat), `beatsPerBar` a bar.
  public struct BeatGrid: Sendable, Equatable {
    public var beatsPerMinute: Double
    public var beatsPerBar: Int
    public var offsetSeconds: Double

    /// A grid of `beatsPerMinute` (> 0), `beatsPerBar` a bar, from `offsetSeconds`.
    public init(beatsPerMinute: Double, beatsPerBar: Int = 4, offsetSeconds: Double = 0) {
      self.beatsPerMinute = beatsPerMinute
      self.beatsPerBar = beatsPerBar
      self.offsetSeconds = offsetSeconds
    }

    /// Seconds from one beat to the next.
    public var secondsPerBeat: Double { 60 / beatsPerMinute }
  }

  /// One stem of an entry (see `Entry.layers`).
  public struct Layer: Sendable, Equatable {
    /// The stem's file.
    public var item: MediaItem
    /// Its level when the queue starts, 0 to 1 (0: silent until raised).
    public var volume: Float

    /// A stem of `item` starting at `volume`.
    public init(item: MediaItem, volume: Float = 1) {
      self.item = item
      self.volume = volume
    }
  }

  /// The items and how each plays, in order.
  public var entries: [Entry]
  /// The item to start with (nil: the first; with shuffle, the first of the shuffled order).
  public var startItem: MediaItem?

  /// A descriptor of `entries`, starting with `startItem` (nil: the first).
  public init(entries: [Entry], startItem: MediaItem? = nil) {
    self.entries = entries
    self.startItem = startItem
  }

  /// A descriptor of `items`, each played whole with the player's transition and loops.
  public init(items: [MediaItem], startItem: MediaItem? = nil) {
    self.init(entries: items.map { Entry(item: $0) }, startItem: startItem)
  }

  /// A descriptor of a collection's items (an album, a playlist, a pick).
  public init(itemCollection: MediaItemCollection, startItem: MediaItem? = nil) {
    self.init(items: itemCollection.items, startItem: startItem)
  }

  /// Trims where `item` starts playing (MediaPlayer's `setStartTime(_:for:)`).
  ///
  /// This and the setters below change the first entry that is `item` (`==`), else the first
  /// entry of the same file (an item made with `MediaItem(path:)` names one that was loaded, with
  /// its title). With an item queued twice, change `entries[i]` to reach a later one.
  /// - Throws: `QueueError.itemNotInQueue`, `.trimOutsideItem`, `.startAfterEnd`.
  public mutating func setStartTime(_ time: TimeInterval, for item: MediaItem) throws(QueueError) {
    try update(item) { $0.startTime = time }
  }

  /// Trims where `item` stops playing (MediaPlayer's `setEndTime(_:for:)`).
  public mutating func setEndTime(_ time: TimeInterval, for item: MediaItem) throws(QueueError) {
    try update(item) { $0.endTime = time }
  }

  /// Sets the transition into `item`.
  public mutating func setTransition(_ transition: Transition, for item: MediaItem) throws(QueueError) {
    try update(item) { $0.transition = transition }
  }

  /// Sets `item`'s loop points and how often it loops.
  public mutating func setLoop(_ points: LoopPoints?, repeat loopRepeat: LoopRepeat, for item: MediaItem)
    throws(QueueError)
  {
    try update(item) {
      $0.loopPoints = points
      $0.loopRepeat = loopRepeat
    }
  }

  private mutating func update(_ item: MediaItem, _ change: (inout Entry) -> Void) throws(QueueError) {
    guard let index = item.firstMatch(in: entries, item: \.item) else {
      throw QueueError.itemNotInQueue(item.errorName)
    }
    var entry = entries[index]
    change(&entry)
    try entry.validate()
    entries[index] = entry
  }

  /// Checks every entry and the start item.
  func validate() throws(QueueError) {
    for entry in entries { try entry.validate() }
    if let startItem, startItem.firstMatch(in: entries, item: \.item) == nil {
      throw QueueError.itemNotInQueue(startItem.errorName)
    }
  }
}

/// A change to the queue made as one step (MediaPlayer's `perform(queueTransaction:)`): the
/// player applies it atomically, so observers see one `queueChanged`; if any step throws, the
/// queue stays as it was.
public struct QueueTransaction: Sendable {
  /// The queue's items in play order, as the transaction sees them so far.
  public var items: [MediaItem] { entries.map(\.entry.item) }
  var entries: [(id: Int, entry: QueueDescriptor.Entry)]
  var nowPlayingID: Int?
  var nextID: @Sendable () -> Int

  /// Inserts the descriptor's entries after `item` (nil: at the front).
  /// - Throws: `QueueError.itemNotInQueue` when `item` is not in the queue; errors of the entries.
  public mutating func insert(_ descriptor: QueueDescriptor, after item: MediaItem?) throws(QueueError) {
    try descriptor.validate()
    var index = 0
    if let item {
      guard let found = item.firstMatch(in: entries, item: \.entry.item) else {
        throw QueueError.itemNotInQueue(item.errorName)
      }
      index = found + 1
    }
    let new = descriptor.entries.map { (id: nextID(), entry: $0) }
    entries.insert(contentsOf: new, at: index)
  }

  /// Inserts items after `item` (nil: at the front).
  public mutating func insert(_ items: [MediaItem], after item: MediaItem?) throws(QueueError) {
    try insert(QueueDescriptor(items: items), after: item)
  }

  /// Removes the first occurrence of `item`. Removing the playing item moves on to the next.
  /// - Throws: `QueueError.itemNotInQueue`.
  public mutating func remove(_ item: MediaItem) throws(QueueError) {
    guard let index = item.firstMatch(in: entries, item: \.entry.item) else {
      throw QueueError.itemNotInQueue(item.errorName)
    }
    entries.remove(at: index)
  }
}
