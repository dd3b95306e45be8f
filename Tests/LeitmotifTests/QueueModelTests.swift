import Foundation
import Testing

@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// The queue model on its own: no engine, no files, no voices. What follows what, shuffles,
/// "play next" and the requests the scheduler hands the loader.
@Suite("Queue model: the queue as a value, without an engine")
struct QueueModelTests {
  static func items(_ names: [String], album: (String) -> String? = { _ in nil }) -> [MediaItem] {
    names.map { MediaItem(assetURL: URL(fileURLWithPath: "/music/\($0).ogg"), title: $0, albumTitle: album($0)) }
  }

  static func titles(_ model: QueueModel) -> [String] { model.items.compactMap(\.title) }

  static func model(_ names: [String]) -> QueueModel {
    var model = QueueModel()
    model.replace(with: QueueDescriptor(items: items(names)))
    return model
  }

  @Test("a new queue starts at its first item, or at the descriptor's start item")
  func startItem() {
    var model = Self.model(["a", "b", "c"])
    #expect(model.nowPlayingItem?.title == "a")
    #expect(model.indexOfNow == 0)
    var descriptor = QueueDescriptor(items: Self.items(["a", "b", "c"]))
    descriptor.startItem = descriptor.entries[2].item
    model.replace(with: descriptor)
    #expect(model.nowPlayingItem?.title == "c")
    #expect(Self.titles(model) == ["a", "b", "c"])
  }

  @Test("successor and predecessor follow the repeat mode; repeat one holds only at an item's end")
  func successors() {
    var model = Self.model(["a", "b", "c"])
    let ids = model.playOrder
    #expect(model.successor(of: ids[0], honoringRepeatOne: true) == ids[1])
    #expect(model.successor(of: ids[2], honoringRepeatOne: true) == nil)
    #expect(model.predecessor(of: ids[0]) == nil)
    model.repeatMode = .all
    #expect(model.successor(of: ids[2], honoringRepeatOne: true) == ids[0])
    #expect(model.predecessor(of: ids[0]) == ids[2])
    model.repeatMode = .one
    #expect(model.successor(of: ids[1], honoringRepeatOne: true) == ids[1])
    #expect(model.successor(of: ids[1], honoringRepeatOne: false) == ids[2])
  }

  @Test("the same item twice is two entries, each with its own id")
  func duplicates() {
    let model = Self.model(["a", "a", "b"])
    #expect(Set(model.playOrder).count == 3)
    #expect(Self.titles(model) == ["a", "a", "b"])
  }

  @Test("play next: after the now-playing item, in the order picked, and still next after a shuffle")
  func insertNext() {
    var model = Self.model(["a", "b", "c", "d", "e", "f"])
    _ = model.insertNext(QueueDescriptor(items: Self.items(["x"])))
    _ = model.insertNext(QueueDescriptor(items: Self.items(["y"])))
    #expect(Self.titles(model) == ["a", "x", "y", "b", "c", "d", "e", "f"])
    let changed1 = model.setShuffleMode(.songs)
    #expect(changed1)
    #expect(Array(Self.titles(model).prefix(3)) == ["a", "x", "y"])
    #expect(Set(Self.titles(model)) == ["a", "b", "c", "d", "e", "f", "x", "y"])
    // Once it plays, an item put next is shuffled like the rest.
    model.markPlaying(model.playOrder[1])
    #expect(model.pinned.count == 1)
  }

  @Test("the same seed gives the same shuffle; another seed another; turning it off restores queue order")
  func shuffleSeeds() {
    let names = (1...12).map { "song\($0)" }
    var first = Self.model(names)
    _ = first.setShuffleSeed(7)
    _ = first.setShuffleMode(.songs)
    var second = Self.model(names)
    _ = second.setShuffleSeed(7)
    _ = second.setShuffleMode(.songs)
    #expect(Self.titles(first) == Self.titles(second))
    #expect(Self.titles(first) != names)
    #expect(Self.titles(first).first == "song1", "the now-playing item stays first")
    let changed2 = second.setShuffleSeed(8)
    #expect(changed2)
    #expect(Self.titles(second) != Self.titles(first))
    let changed3 = first.setShuffleMode(.off)
    #expect(changed3)
    #expect(Self.titles(first) == names)
    let changed4 = first.setShuffleMode(.off)
    #expect(!changed4)
  }

  @Test("album shuffle keeps each album's songs together, in their order")
  func albumShuffle() {
    let names = ["a1", "a2", "a3", "b1", "b2", "c1", "c2", "c3", "d1"]
    var model = QueueModel()
    model.replace(with: QueueDescriptor(items: Self.items(names) { String($0.prefix(1)) }))
    _ = model.setShuffleSeed(3)
    let changed5 = model.setShuffleMode(.albums)
    #expect(changed5)
    let order = Self.titles(model)
    #expect(order.first == "a1")
    for album in ["b", "c"] {
      let positions = order.enumerated().filter { $0.element.hasPrefix(album) }.map(\.offset)
      #expect(positions == Array(positions[0]..<(positions[0] + positions.count)), "\(album) together in \(order)")
      #expect(positions.map { order[$0] } == names.filter { $0.hasPrefix(album) })
    }
  }

  @Test(
    "album shuffle takes an album as the library does: title and album artist, else folder; a compilation across folders is one"
  )
  func albumIdentity() {
    func song(_ path: String, album: String, artist: String? = nil, compilation: Bool = false) -> MediaItem {
      var item = MediaItem(assetURL: URL(fileURLWithPath: path), title: path, albumTitle: album)
      item.albumArtist = artist
      item.isCompilation = compilation
      return item
    }
    let beatles = song("/m/Beatles/Greatest Hits/01.ogg", album: "Greatest Hits")
    let abba = song("/m/ABBA/Greatest Hits/01.ogg", album: "Greatest Hits")
    let abbaToo = song("/m/ABBA/Greatest Hits/02.ogg", album: "Greatest Hits")
    let queen = song("/m/x/01.ogg", album: "Greatest Hits", artist: "Queen")
    let queenToo = song("/m/y/02.ogg", album: "greatest hits", artist: "Queen")
    let mixed = song("/m/Now 1/01.ogg", album: "Now", compilation: true)
    let mixedToo = song("/m/Now 2/02.ogg", album: "Now", compilation: true)
    let keys = [beatles, abba, abbaToo, queen, queenToo, mixed, mixedToo].map { QueueModel.albumKey($0) }
    #expect(keys[0] != keys[1], "two artists' Greatest Hits in their own folders are two albums")
    #expect(keys[1] == keys[2] && keys[3] == keys[4] && keys[5] == keys[6], "\(keys)")
    #expect(Set(keys).count == 4, "\(keys)")
  }

  /// Plays `model` through `laps` laps as the player does at each item's end (the successor,
  /// then `markPlaying`), and returns each lap's titles in the order played.
  static func playLaps(_ model: inout QueueModel, _ laps: Int) -> [[String]] {
    var played: [[String]] = []
    var lap: [String] = []
    let count = model.playOrder.count
    while played.count < laps {
      guard let now = model.nowID, let next = model.successor(of: now, honoringRepeatOne: true) else { break }
      lap.append(model.entries[now]?.item.title ?? "?")
      if lap.count == count {
        played.append(lap)
        lap = []
      }
      model.markPlaying(next)
    }
    return played
  }

  @Test(
    "shuffle with repeat all: each lap plays every song once in a new order, never starting with the song that ended the last"
  )
  func shuffledLaps() throws {
    let names = (1...8).map { "song\($0)" }
    var model = Self.model(names)
    model.repeatMode = .all
    _ = model.setShuffleSeed(11)
    _ = model.setShuffleMode(.songs)
    let laps = Self.playLaps(&model, 6)
    #expect(laps.count == 6)
    for lap in laps { #expect(lap.sorted() == names.sorted(), "every song once a lap: \(lap)") }
    #expect(Set(laps).count == laps.count, "each lap in its own order: \(laps)")
    for (ended, next) in zip(laps, laps.dropFirst()) {
      #expect(ended.last != next.first, "a lap ends on \(ended.last ?? "") and the next begins with it")
    }
    #expect(model.lap == 6, "the walk began lap 7")
    // Before a lap's first song is the song that ended the lap before, as heard.
    let first = try #require(model.nowID)
    #expect(model.playOrder.first == first)
    #expect(model.predecessor(of: first).flatMap { model.entries[$0]?.item.title } == laps.last?.last)
    // The same seed and the same plays give the same laps.
    var again = Self.model(names)
    again.repeatMode = .all
    _ = again.setShuffleSeed(11)
    _ = again.setShuffleMode(.songs)
    #expect(Self.playLaps(&again, 6) == laps)
    // Without shuffle, or without repeat all, the order stays.
    var plain = Self.model(names)
    plain.repeatMode = .all
    #expect(Self.playLaps(&plain, 3) == [names, names, names])
    // Two songs: the only order that does not repeat a song across the seam is the same one.
    var two = Self.model(["x", "y"])
    two.repeatMode = .all
    _ = two.setShuffleMode(.songs)
    let twoLaps = Self.playLaps(&two, 3)
    #expect(Set(twoLaps).count == 1 && twoLaps.count == 3)
  }

  @Test(
    "album shuffle with repeat all: each lap keeps albums together and does not start with the album that ended the last"
  )
  func shuffledAlbumLaps() {
    let names = ["a1", "a2", "b1", "b2", "b3", "c1", "d1", "d2"]
    var model = QueueModel()
    model.replace(with: QueueDescriptor(items: Self.items(names) { String($0.prefix(1)) }))
    model.repeatMode = .all
    _ = model.setShuffleSeed(5)
    _ = model.setShuffleMode(.albums)
    let laps = Self.playLaps(&model, 5)
    #expect(laps.count == 5)
    #expect(Set(laps.dropFirst()).count > 1, "later laps in new orders: \(laps)")
    for (index, lap) in laps.enumerated() {
      #expect(lap.sorted() == names.sorted())
      // The first lap is the shuffle turned on under a1, which stays first (its album's other
      // songs fall where they fall); every lap after it is drawn whole.
      if index == 0 { continue }
      for album in ["a", "b", "c", "d"] {
        let positions = lap.enumerated().filter { $0.element.hasPrefix(album) }.map(\.offset)
        #expect(positions == Array(positions[0]..<(positions[0] + positions.count)), "\(album) together in \(lap)")
        #expect(positions.map { lap[$0] } == names.filter { $0.hasPrefix(album) })
      }
    }
    for (ended, next) in zip(laps, laps.dropFirst()) {
      #expect(ended.last?.prefix(1) != next.first?.prefix(1), "\(ended) then \(next)")
    }
  }

  @Test("append gives an empty queue its now-playing item; transitions and loops come from the entry or the queue")
  func appendAndRequests() throws {
    var model = QueueModel()
    #expect(model.nowID == nil)
    let changed6 = model.append(QueueDescriptor(items: Self.items(["a"])))
    #expect(changed6)
    let changed7 = model.append(QueueDescriptor(items: Self.items(["b"])))
    #expect(!changed7)
    #expect(Self.titles(model) == ["a", "b"])
    var entry = QueueDescriptor.Entry(item: Self.items(["c"])[0])
    entry.transition = .gapless
    entry.gainDecibels = -6
    entry.loopRepeat = .times(2)
    entry.startTime = 1.5
    _ = model.append(QueueDescriptor(entries: [entry]))
    let ids = model.playOrder
    model.transition = try Transition(duration: 2)
    #expect(model.transition(into: ids[0]).duration == 2)
    #expect(model.transition(into: ids[2]) == .gapless)
    let request = try #require(model.segmentRequest(for: ids[2], token: 9))
    #expect(request.token == 9 && request.path == "/music/c.ogg")
    #expect(request.startSeconds == 1.5)
    #expect(abs(request.gain - 0.501187) < 1e-5)
    #expect(request.loopCount == 2)
    model.loopRepeat = .untilReleased
    #expect(model.segmentRequest(for: ids[0], token: 1)?.loopCount == nil)
    #expect(model.segmentRequest(for: 999, token: 1) == nil)
  }
}
