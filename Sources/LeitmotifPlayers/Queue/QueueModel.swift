import FoundationEssentials
import LeitmotifEngine
import LeitmotifLibrary

#if canImport(Glibc)
  import Glibc
#endif

/// The queue of a `QueuePlayer` as plain data: its entries, queue order and play order (shuffled
/// or not), the items put next, the now-playing entry, and the modes that decide what follows
/// what. A value type with no engine, no voices and no locks: `QueuePlayer` keeps one inside
/// its state and schedules voices from what it says, and tests drive it on its own.
///
/// Entries have ids (from 1, never reused within a model), so the same item can be in the queue
/// twice and each entry keeps its own trim points, loop and transition.
package struct QueueModel {
  package var entries: [Int: QueueDescriptor.Entry] = [:]
  /// Entry ids in queue order, and in play order (the same unless shuffled).
  package var queueOrder: [Int] = []
  package var playOrder: [Int] = []
  /// Entries put "next" by `insertNext` that have not played yet: they stay next through shuffles.
  package var pinned: [Int] = []
  package var nowID: Int?
  package var nextEntryID = 1
  package var repeatMode: RepeatMode = .none
  package private(set) var shuffleMode: ShuffleMode = .off
  package private(set) var shuffleSeed: UInt64 = 0
  private var generator = SeededGenerator(seed: 0)
  /// Laps of a shuffled queue begun since the seed was set or the queue replaced: each new lap's
  /// order is drawn from the seed and this count (see `nextLapOrder`), so it is the same on every
  /// run of the same events.
  package private(set) var lap = 0
  /// The entry that ended the last lap and the one that began this one (set when a new lap's
  /// order took over): before the lap's first song, as heard, is the one that ended the lap
  /// before, where the new play order puts another.
  private var lapSeam: (ended: Int, began: Int)?
  /// The transition where an entry names none.
  package var transition: Transition = .defaultCrossfade
  /// How often items with loop points loop where their entry does not say.
  package var loopRepeat: LoopRepeat = .untilReleased

  package init() {}

  // MARK: - Reading

  /// The items in play order.
  package var items: [MediaItem] { playOrder.compactMap { entries[$0]?.item } }

  package var nowPlayingItem: MediaItem? { nowID.flatMap { entries[$0]?.item } }

  /// Where the now-playing entry starts in its file (its trim), in seconds; 0 with none.
  package var nowStartSeconds: Double { nowID.flatMap { entries[$0]?.startTime } ?? 0 }

  /// Where the now-playing entry is in play order.
  package var indexOfNow: Int? { nowID.flatMap { playOrder.firstIndex(of: $0) } }

  /// The entry that plays after `id`: the next in play order, the first again with repeat all,
  /// `id` itself with repeat one (when `honoringRepeatOne`: an item's natural end, not a skip).
  package func successor(of id: Int, honoringRepeatOne: Bool) -> Int? {
    if honoringRepeatOne && repeatMode == .one { return id }
    guard let index = playOrder.firstIndex(of: id) else { return playOrder.first }
    if index + 1 < playOrder.count { return playOrder[index + 1] }
    return repeatMode == .all ? (nextLapOrder()?.first ?? playOrder.first) : nil
  }

  /// With shuffle and repeat all, the play order of the lap after this one: shuffled afresh (a
  /// player who leaves the game's music on for hours should not hear the same "random" order
  /// every lap), never beginning with the song (or, shuffling albums, the album) that ends this
  /// lap. Nil when the next lap replays this order: shuffle off, no repeat all, items put next
  /// still to play, or two songs or fewer (whose only order that does not repeat a song is this
  /// one). Drawn from the seed and the lap count, not the player's generator: asking does not
  /// change what it says.
  package func nextLapOrder() -> [Int]? {
    guard shuffleMode != .off, repeatMode == .all, pinned.isEmpty, playOrder.count > 2, let last = playOrder.last
    else { return nil }
    var lapGenerator = SeededGenerator(seed: shuffleSeed &+ UInt64(lap + 1) &* 0xD1B5_4A32_D192_ED03)
    var groups = Self.shuffledGroups(queueOrder, shuffleMode, entries, using: &lapGenerator)
    if groups.count > 1, groups[0].contains(last) {
      groups.swapAt(0, Int.random(in: 1..<groups.count, using: &lapGenerator))
    }
    return groups.flatMap { $0 }
  }

  /// The entry before `id` in play order (the last one, with repeat all, before the first).
  package func predecessor(of id: Int) -> Int? {
    guard let index = playOrder.firstIndex(of: id) else { return nil }
    if index > 0 { return playOrder[index - 1] }
    if repeatMode == .all, let seam = lapSeam, seam.began == id, entries[seam.ended] != nil { return seam.ended }
    return repeatMode == .all && playOrder.count > 1 ? playOrder.last : nil
  }

  /// How the music changes into entry `id`: its own transition, else the queue's.
  package func transition(into id: Int) -> Transition { entries[id]?.transition ?? transition }

  /// What the engine's loader needs to open entry `id` (its trim, loop and gain), as segment `token`.
  package func segmentRequest(for id: Int, token: Int) -> SegmentRequest? {
    guard let entry = entries[id] else { return nil }
    var request = SegmentRequest(token: token, path: entry.item.assetURL.path)
    request.startSeconds = entry.startTime ?? 0
    request.endSeconds = entry.endTime
    request.loopPoints = entry.loopPoints
    request.loopCount = (entry.loopRepeat ?? loopRepeat).count
    request.gain = entry.gainDecibels.map { Float(pow(10, $0 / 20)) } ?? 1
    request.stemPaths = entry.layers.map(\.item.assetURL.path)
    return request
  }

  // MARK: - Changing

  /// Gives each of the descriptor's entries an id and keeps it (in no order yet).
  package mutating func add(_ descriptor: QueueDescriptor) -> [Int] {
    descriptor.entries.map { entry in
      let id = nextEntryID
      nextEntryID += 1
      entries[id] = entry
      return id
    }
  }

  /// Replaces the whole queue; the now-playing entry is the descriptor's start item (its first
  /// occurrence), else the first in play order.
  package mutating func replace(with descriptor: QueueDescriptor) {
    entries = [:]
    let ids = add(descriptor)
    queueOrder = ids
    pinned = []
    lap = 0
    nowID = descriptor.startItem.flatMap { start in
      start.firstMatch(in: ids, item: { entries[$0]?.item }).map { ids[$0] }
    }
    let hadStart = nowID != nil
    rebuildPlayOrder()
    if !hadStart { nowID = playOrder.first }
  }

  /// Puts the descriptor's entries right after the now-playing entry, after those put next
  /// before them (several "play next" picks play in the order they were made), in queue order
  /// and in play order; they stay next through shuffles until they play.
  package mutating func insertNext(_ descriptor: QueueDescriptor) -> [Int] {
    let ids = add(descriptor)
    let anchor = nowID.flatMap { queueOrder.firstIndex(of: $0) }.map { $0 + 1 } ?? 0
    let pinnedAfterNow = pinned.filter { queueOrder.firstIndex(of: $0).map { $0 >= anchor } ?? false }
    let queueInsert = pinnedAfterNow.compactMap { queueOrder.firstIndex(of: $0) }.max().map { $0 + 1 } ?? anchor
    queueOrder.insert(contentsOf: ids, at: queueInsert)
    pinned.append(contentsOf: ids)
    if shuffleMode == .off {
      playOrder = queueOrder
    } else {
      let nowIndex = nowID.flatMap { playOrder.firstIndex(of: $0) }.map { $0 + 1 } ?? 0
      let pinnedInPlay = playOrder.enumerated().filter { $0.offset >= nowIndex && pinned.contains($0.element) }
      let insertAt = pinnedInPlay.map(\.offset).max().map { $0 + 1 } ?? nowIndex
      playOrder.insert(contentsOf: ids, at: insertAt)
    }
    if nowID == nil { nowID = playOrder.first }
    return ids
  }

  /// Adds the descriptor's entries at the end (of both orders). True when the queue had no
  /// now-playing entry and now has one.
  package mutating func append(_ descriptor: QueueDescriptor) -> Bool {
    let ids = add(descriptor)
    queueOrder.append(contentsOf: ids)
    playOrder.append(contentsOf: ids)
    guard nowID == nil else { return false }
    nowID = playOrder.first
    return nowID != nil
  }

  /// Entry `id` starts playing: it is no longer "put next". When it follows the end of a
  /// shuffled lap (the last entry of the play order playing, `id` the first of `nextLapOrder`),
  /// that lap's order becomes the play order; true then (the order changed).
  @discardableResult
  package mutating func markPlaying(_ id: Int) -> Bool {
    var newLap = false
    if let now = nowID, now != id, now == playOrder.last, let next = nextLapOrder(), next.first == id {
      playOrder = next
      lap += 1
      lapSeam = (now, id)
      newLap = true
    }
    nowID = id
    pinned.removeAll { $0 == id }
    return newLap
  }

  /// Turns shuffle on or off (or changes its kind); false when it was already so.
  package mutating func setShuffleMode(_ mode: ShuffleMode) -> Bool {
    guard mode != shuffleMode else { return false }
    shuffleMode = mode
    rebuildPlayOrder()
    return true
  }

  /// The shuffle (and its seed, when given) for a queue about to be replaced: no order is drawn
  /// here; `replace` draws it.
  package mutating func prepareShuffle(_ mode: ShuffleMode, seed: UInt64?) {
    shuffleMode = mode
    guard let seed else { return }
    shuffleSeed = seed
    generator = SeededGenerator(seed: seed)
  }

  /// Seeds the shuffle generator; reshuffles when shuffle is on (true then).
  package mutating func setShuffleSeed(_ seed: UInt64) -> Bool {
    shuffleSeed = seed
    generator = SeededGenerator(seed: seed)
    lap = 0
    guard shuffleMode != .off else { return false }
    rebuildPlayOrder()
    return true
  }

  /// Play order from queue order: the now-playing entry first, then those put next, then the
  /// rest shuffled (songs one by one, albums as groups in their queue order).
  package mutating func rebuildPlayOrder() {
    lapSeam = nil
    guard shuffleMode != .off else {
      playOrder = queueOrder
      return
    }
    let fixed = ([nowID].compactMap { $0 }) + pinned.filter { $0 != nowID }
    let rest = queueOrder.filter { !fixed.contains($0) }
    playOrder = fixed + Self.shuffledGroups(rest, shuffleMode, entries, using: &generator).flatMap { $0 }
  }

  /// An album as the library groups one (`MediaQuery.albums()`): its title and album artist, or
  /// without an album artist its folder (a compilation's songs, across folders, one album). By
  /// title alone, two artists' "Greatest Hits" were one album to shuffle (a player's trial).
  static func albumKey(_ item: MediaItem) -> String? {
    guard let title = item.albumTitle else { return nil }
    let path = item.assetURL.path
    let folder = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? ""
    let artist = item.albumArtist?.lowercased() ?? (item.isCompilation ? "" : folder)
    return title.lowercased() + "\u{1}" + artist
  }

  /// `ids` shuffled as `mode` says, in groups that stay together: one entry each for songs; for
  /// albums, each album's entries in their queue order (an entry with no album alone).
  private static func shuffledGroups(
    _ ids: [Int], _ mode: ShuffleMode, _ entries: [Int: QueueDescriptor.Entry], using generator: inout SeededGenerator
  ) -> [[Int]] {
    var groups: [[Int]] = []
    switch mode {
    case .songs:
      groups = ids.map { [$0] }
    case .albums:
      var groupIndex: [String: Int] = [:]
      for id in ids {
        guard let album = entries[id].flatMap({ Self.albumKey($0.item) }) else {
          groups.append([id])
          continue
        }
        if let index = groupIndex[album] {
          groups[index].append(id)
        } else {
          groupIndex[album] = groups.count
          groups.append([id])
        }
      }
    case .off:
      return ids.map { [$0] }
    }
    groups.shuffle(using: &generator)
    return groups
  }
}
