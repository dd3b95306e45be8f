import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput
import LeitmotifPlayers

/// What one source gives right now: its items, or why it gives none.
struct SourceResolution: Sendable {
  var items: [MediaItem]
  /// Why the source gives nothing (no access, an empty query, no picks); nil when it has items.
  var unavailableReason: String?

  static func unavailable(_ reason: String) -> SourceResolution {
    SourceResolution(items: [], unavailableReason: reason)
  }
}

/// Turns the cue file's sources into items: the bundled catalogue, library queries, playlists
/// and the player's picks. It does the I/O (SQLite, tags), so it runs when a cue file is loaded
/// or the library's access changes, off the game thread; the director then builds queues from
/// what it found without touching a disk.
struct MusicResolver {
  var catalog: BundledCatalog
  var library: MediaLibrary?
  var picks: MediaItemCollection?

  func resolveAll(_ sheet: CueSheet) -> [String: SourceResolution] {
    var result: [String: SourceResolution] = [:]
    for (name, source) in sheet.sources { result[name] = resolve(source) }
    return result
  }

  func resolve(_ source: MusicSource) -> SourceResolution {
    switch source.kind {
    case .bundled(let selection):
      let items = catalog.items(matching: selection)
      return items.isEmpty ? .unavailable("no bundled file matches") : SourceResolution(items: items)
    case .picks:
      guard let picks, !picks.items.isEmpty else { return .unavailable("the player has picked no songs") }
      return SourceResolution(items: picks.items)
    case .library(let query):
      guard let library else { return .unavailable("the game has no music library") }
      if let refusal = Self.refusal(library.authorizationStatus) { return .unavailable(refusal) }
      do {
        let items = try library.items(matching: query)
        return items.isEmpty ? .unavailable("the query finds no songs") : SourceResolution(items: items)
      } catch {
        return .unavailable("the query failed: \(error)")
      }
    case .playlist(let name):
      guard let library else { return .unavailable("the game has no music library") }
      if let refusal = Self.refusal(library.authorizationStatus) { return .unavailable(refusal) }
      do {
        let lists = try library.collections(matching: .playlists())
        guard let list = lists.first(where: { $0.name?.equalsIgnoringCase(name) ?? false }) else {
          return .unavailable("the library has no playlist \"\(name)\"")
        }
        return list.items.isEmpty ? .unavailable("playlist \"\(name)\" is empty") : SourceResolution(items: list.items)
      } catch {
        return .unavailable("the playlist query failed: \(error)")
      }
    }
  }

  /// Why the library cannot be used, in the player's terms; nil when it can.
  static func refusal(_ status: AuthorizationStatus) -> String? {
    switch status {
    case .authorized: return nil
    case .denied: return "library access was denied by the player"
    case .restricted: return "library access is restricted by policy"
    case .notDetermined: return "library access has not been granted (the player was not asked yet)"
    }
  }
}

/// What a source's playlist remembers from one entry into a state to the next.
struct PlaylistMemory {
  /// `step` through a sequence: the next item's place.
  var cursor = 0
  /// `step` through a shuffle: the paths still to play before the next shuffle.
  var deck: [String] = []
  /// `random`: the paths drawn last, the newest last (at most 64).
  var recent: [String] = []
}

/// A state's queue, built from resolved sources with no I/O: which items, from which source,
/// and what fell back to what on the way.
struct StateMusic {
  var entries: [QueueDescriptor.Entry]
  /// Source name and whether it is the player's music, by file path.
  var origins: [String: (source: String, isUserMusic: Bool)]
  var fallbacks: [DirectorReport.Kind]

  /// `failed`: paths of files that failed to play since the cue file was loaded; they are left
  /// out, so a source whose every file failed gives nothing and its `fallback` takes over.
  /// `loudnessTarget`: the level every item is brought to (`LoudnessLevelling.target(catalog:)`).
  /// The stems that play with `item` of the state's bundled music: for each layer, its source's
  /// file at the item's place in its own source (counting round), at the layer's `volume`. The
  /// item's level (its gain) applies to its stems as well: they are parts of one mix.
  static func layers(of state: MusicState, for item: MediaItem, resolved: [String: SourceResolution])
    -> [QueueDescriptor.Layer]
  {
    let main = state.bundledSource.flatMap { resolved[$0]?.items } ?? []
    let index = main.firstIndex { $0.assetURL.path == item.assetURL.path } ?? 0
    return state.layers.map { layer in
      guard let stems = resolved[layer.source]?.items, !stems.isEmpty else {
        // Cannot happen for a checked file (a bundled source has files); the layer keeps its
        // place (layers are addressed by position) and stays silent.
        return QueueDescriptor.Layer(item: item, volume: 0)
      }
      return QueueDescriptor.Layer(item: stems[index % stems.count], volume: layer.volume)
    }
  }

  /// `playlists`: what each source's playlist remembers between entries into states (the next
  /// item of a step, the shuffle's deck, the items drawn last), by source name.
  static func build(
    _ state: MusicState, sheet: CueSheet, resolved: [String: SourceResolution], failed: Set<String> = [],
    loudnessTarget: Double?, generator: inout SeededGenerator, playlists: inout [String: PlaylistMemory]
  ) -> StateMusic {
    var music = StateMusic(entries: [], origins: [:], fallbacks: [])
    /// Follows a source's fallback chain to the first that gives items, saying why at each step.
    func items(from start: String?, reports: inout [DirectorReport.Kind]) -> (name: String, items: [MediaItem])? {
      var name = start
      var seen: Set<String> = []
      while let current = name, !seen.contains(current), let source = sheet.sources[current] {
        seen.insert(current)
        let resolution = resolved[current] ?? .unavailable("not resolved yet")
        let playable =
          failed.isEmpty ? resolution.items : resolution.items.filter { !failed.contains($0.assetURL.path) }
        if !playable.isEmpty {
          let list = ordered(
            playable, source: source, step: state.playlist == .step, assets: sheet.assetsDirectory,
            memory: &playlists[current, default: PlaylistMemory()], generator: &generator,
            repeating: state.repeatMode == .all)
          return (current, list)
        }
        reports.append(
          .fallback(
            state: state.name, source: current, replacement: source.fallback,
            reason: resolution.unavailableReason
              ?? (resolution.items.isEmpty ? "it has no items" : "its files failed to play")))
        name = source.fallback
      }
      return nil
    }
    var userReports: [DirectorReport.Kind] = []
    var bundledReports: [DirectorReport.Kind] = []
    let user = state.mix == .bundledOnly ? nil : items(from: state.userSource, reports: &userReports)
    let bundled =
      (user == nil || state.mix != .userFirst) ? items(from: state.bundledSource, reports: &bundledReports) : nil
    if user == nil, let bundled, case .fallback(let name, let source, nil, let reason)? = userReports.last {
      // The end of the player's chain: say what plays instead of their songs.
      userReports[userReports.count - 1] = .fallback(
        state: name, source: source, replacement: bundled.name, reason: reason)
    }
    music.fallbacks = userReports + bundledReports
    func add(_ item: MediaItem, from name: String, inRotation: Bool = false) {
      let source = sheet.sources[name]!
      // The state's `loop` is for the game's music, whose loop points its designer set: a
      // player's song plays through, whatever loop tags it carries (a game soundtrack in their
      // library looped for good and held the queue). In an interleaved rotation a bundled piece
      // looped until released would hold it for good (the demo's explore state did): it plays
      // through once there, or loops the number of times `loop` says.
      let loop: LoopRepeat =
        source.kind.isUserMusic || (inRotation && state.loop == .untilReleased) ? .off : state.loop
      var entry = QueueDescriptor.Entry(item: item, loopRepeat: loop)
      entry.gainDecibels = Self.gain(for: item, source: source, levelling: sheet.loudness, target: loudnessTarget)
      if source.kind.isUserMusic { Self.trimSilence(&entry) }
      if name == state.bundledSource, !state.layers.isEmpty {
        entry.layers = Self.layers(of: state, for: item, resolved: resolved)
      }
      music.entries.append(entry)
      music.origins[item.assetURL.path] = (name, source.kind.isUserMusic)
    }
    switch (state.mix, user, bundled) {
    case (.interleave(let count), let user?, let bundled?):
      var bundledIndex = 0
      for (index, item) in user.items.enumerated() {
        add(item, from: user.name)
        if (index + 1) % max(1, count) == 0 {
          add(bundled.items[bundledIndex % bundled.items.count], from: bundled.name, inRotation: true)
          bundledIndex += 1
        }
      }
    case (_, let user?, _) where state.mix != .bundledOnly:
      for item in user.items { add(item, from: user.name) }
    case (_, _, let bundled?):
      for item in bundled.items { add(item, from: bundled.name) }
    default:
      break
    }
    return music
  }

  /// A source's items in the order they play this time: as listed, shuffled, or drawn at random
  /// by weight (a run of draws long enough that the queue's repeat is not heard as one); with
  /// `step`, one item only: the next of the sequence or of the shuffle's deck, or one draw.
  /// `repeating`: the queue starts again after its last item; a shuffle then holds several
  /// passes, each shuffled anew.
  static func ordered(
    _ items: [MediaItem], source: MusicSource, step: Bool, assets: URL, memory: inout PlaylistMemory,
    generator: inout SeededGenerator, repeating: Bool = false
  ) -> [MediaItem] {
    switch (source.order, step) {
    case (.sequence, false):
      return items
    case (.shuffle, false):
      return shuffledPasses(items, passes: repeating ? passes(for: items.count) : 1, generator: &generator)
    case (.sequence, true):
      defer { memory.cursor += 1 }
      return [items[memory.cursor % items.count]]
    case (.shuffle, true):
      let paths = Set(items.map(\.assetURL.path))
      memory.deck.removeAll { !paths.contains($0) }
      if memory.deck.isEmpty { memory.deck = items.shuffled(using: &generator).map(\.assetURL.path) }
      let path = memory.deck.removeFirst()
      return [items.first { $0.assetURL.path == path } ?? items[0]]
    case (.random, _):
      var weights: [String: Double] = [:]
      if case .bundled(let selection) = source.kind, !selection.weights.isEmpty {
        for (file, weight) in selection.weights {
          weights[assets.appendingPathComponent(file).standardizedFileURL.path] = weight
        }
      }
      let avoid = max(0, min(source.avoidRepeat ?? 1, items.count - 1))
      return (0..<(step ? 1 : max(16, 4 * items.count))).map { _ in
        draw(items, weights: weights, avoiding: avoid, memory: &memory, generator: &generator)
      }
    }
  }

  /// How many passes a repeating shuffle holds: a run of at least 64 songs (at most 16 passes),
  /// so that the queue's own repeat, the same order again, comes after hours of music. A queue
  /// of one shuffle played the songs in the same order every time round, where a shuffle is
  /// "each once, then a new shuffle".
  static func passes(for count: Int) -> Int {
    guard count > 1 else { return 1 }
    return max(1, min(16, (64 + count - 1) / count))
  }

  /// `passes` shuffles of `items` one after the other; no song plays twice in a row, across a
  /// pass's end nor where the queue starts again.
  static func shuffledPasses(_ items: [MediaItem], passes: Int, generator: inout SeededGenerator) -> [MediaItem] {
    var list: [MediaItem] = []
    list.reserveCapacity(items.count * passes)
    for pass in 0..<passes {
      var order = items
      order.shuffle(using: &generator)
      if order.count > 1 {
        if let last = list.last, order[0].assetURL.path == last.assetURL.path {
          order.swapAt(0, Int.random(in: 1..<order.count, using: &generator))
        }
        // The last pass's end meets the first pass's start when the queue repeats.
        if pass == passes - 1, passes > 1, let first = list.first,
          order[order.count - 1].assetURL.path == first.assetURL.path
        {
          order.swapAt(order.count - 1, order.count / 2)
        }
      }
      list += order
    }
    return list
  }

  /// One weighted draw that is none of the last `avoiding` drawn.
  private static func draw(
    _ items: [MediaItem], weights: [String: Double], avoiding avoid: Int, memory: inout PlaylistMemory,
    generator: inout SeededGenerator
  ) -> MediaItem {
    let recent = Set(memory.recent.suffix(avoid))
    var candidates = items.filter { !recent.contains($0.assetURL.path) }
    if candidates.isEmpty { candidates = items }
    let weighed = candidates.map { weights[$0.assetURL.standardizedFileURL.path] ?? 1 }
    let total = weighed.reduce(0, +)
    var pick = Double.random(in: 0..<total, using: &generator)
    var chosen = candidates[candidates.count - 1]
    for (index, weight) in weighed.enumerated() {
      if pick < weight {
        chosen = candidates[index]
        break
      }
      pick -= weight
    }
    memory.recent.append(chosen.assetURL.path)
    if memory.recent.count > 64 { memory.recent.removeFirst(memory.recent.count - 64) }
    return chosen
  }

  /// Silence a player's song may have at its start or end, in seconds, that is played anyway:
  /// less is not heard as a gap, and trimming it would only cost a seek.
  static let untrimmedSilence = (start: 0.1, end: 0.5)
  /// What is kept of the silence around the sound: the start of a soft attack, the end of a
  /// reverb's tail below the threshold.
  static let silenceMargin = (start: 0.02, end: 0.1)

  /// A player's song starts where its sound begins and ends after its last sound, as its
  /// analysis measured them (`MediaItem.soundStartSeconds`, `soundEndSeconds`): a hidden intro's
  /// seconds of silence, or a long gap before the end of a rip, would otherwise be dead air in
  /// the game, and a crossfade to the next song would fade silence in. Bundled music plays as its
  /// designer cut it. An entry with its own start or end, a song not analysed, or one with less
  /// than a second of sound is left as it is.
  static func trimSilence(_ entry: inout QueueDescriptor.Entry) {
    let item = entry.item
    guard entry.startTime == nil, entry.endTime == nil, let soundStart = item.soundStartSeconds,
      let soundEnd = item.soundEndSeconds, soundEnd - soundStart >= 1
    else { return }
    let start = max(0, soundStart - silenceMargin.start)
    if start >= untrimmedSilence.start { entry.startTime = start }
    let end = soundEnd + silenceMargin.end
    if let duration = item.playbackDuration, duration - end >= untrimmedSilence.end { entry.endTime = end }
  }

  /// The entry's level in dB (nil: 0), as `LoudnessLevelling` describes: `target - loudness`,
  /// limited by the true-peak ceiling, plus the source's gain. Without a target or a loudness
  /// (levelling off, nothing measured and no tag), the ReplayGain tag alone, never above the
  /// file's own level when it would boost it (no peak is known, so a boost could clip).
  static func gain(for item: MediaItem, source: MusicSource, levelling: LoudnessLevelling, target: Double?)
    -> Double?
  {
    var decibels = source.gainDecibels
    if source.replayGain != .off, let target, let loudness = loudness(of: item, mode: source.replayGain) {
      var level = target - loudness
      if level > 0 {
        level = item.truePeak.map { min(level, max(0, levelling.truePeakCeiling - $0)) } ?? 0
        level = min(level, LoudnessLevelling.maximumBoostDecibels)
      }
      decibels += level
    } else {
      switch source.replayGain {
      case .off: break
      case .track: decibels += item.replayGainTrackDecibels ?? item.replayGainAlbumDecibels ?? 0
      case .album: decibels += item.replayGainAlbumDecibels ?? item.replayGainTrackDecibels ?? 0
      }
      decibels = min(decibels, max(0, source.gainDecibels))
    }
    // A queue entry takes at most +24 dB; a designer's gain on top of a boost stops there.
    decibels = min(decibels, 24)
    return decibels == 0 ? nil : decibels
  }

  /// ReplayGain 2.0's reference level: a tag's gain brings a track to it.
  static let replayGainReferenceLUFS = -18.0

  /// The item's loudness for levelling: for album gain the album's (from its tag), keeping the
  /// album's own dynamics between tracks; otherwise the measured one, else the one a tag implies.
  static func loudness(of item: MediaItem, mode: MusicSource.ReplayGainMode) -> Double? {
    let fromTrackTag = item.replayGainTrackDecibels.map { replayGainReferenceLUFS - $0 }
    let fromAlbumTag = item.replayGainAlbumDecibels.map { replayGainReferenceLUFS - $0 }
    switch mode {
    case .off: return nil
    case .track: return item.loudness ?? fromTrackTag ?? fromAlbumTag
    case .album: return fromAlbumTag ?? item.loudness ?? fromTrackTag
    }
  }
}
