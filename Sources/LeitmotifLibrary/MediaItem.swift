import FoundationEssentials
import LeitmotifAnalysis
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

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

  /// Whether `other` names the same file (standardized paths), whatever the titles and ids say:
  /// an item made with `MediaItem(path:)` and one from `load(path:)` or the library.
  package func isSameFile(as other: MediaItem) -> Bool {
    assetURL.standardizedFileURL == other.assetURL.standardizedFileURL
  }

  /// Where `self` is among `elements` (`item` reads each one's item): the first equal one
  /// (`==`), else the first of the same file. Queues look items up this way, so a game can name a
  /// queued item by its file (`MediaItem(path:)`) though the queue holds it loaded, with its
  /// title: `==` alone said such an item was not in the queue.
  package func firstMatch<C: Collection>(in elements: C, item: (C.Element) -> MediaItem?) -> C.Index? {
    elements.firstIndex { item($0) == self } ?? elements.firstIndex { item($0).map(isSameFile) ?? false }
  }

  /// Hashes what `==` compares: the persistent id, else the file.
  public func hash(into hasher: inout Hasher) {
    if let persistentID {
      hasher.combine(persistentID)
    } else {
      hasher.combine(assetURL.standardizedFileURL)
    }
  }

  /// The file holding the audio.
  public var assetURL: URL
  /// The title (`TITLE`, ID3 `TIT2`), when known.
  public var title: String?
  /// The artist, when known.
  public var artist: String?
  /// The album's title, when known.
  public var albumTitle: String?
  /// Length in seconds, when known.
  public var playbackDuration: TimeInterval?
  /// The file's sample rate, when known (loop points are in its frames).
  public var sampleRate: Int?
  /// Library properties (MediaPlayer's `MPMediaItem`), filled for items that come from the
  /// player's music library; nil or 0 otherwise.
  /// Stays the same across rescans, renames and moves inside the library (it comes from the audio).
  public var persistentID: UInt64?
  /// The album's artist (several artists of a compilation share one), when known.
  public var albumArtist: String?
  /// The genre, when known.
  public var genre: String?
  /// The composer, when known.
  public var composer: String?
  /// The track's number on its disc, when known.
  public var albumTrackNumber: Int?
  /// The disc's number in its set, when known.
  public var discNumber: Int?
  /// The tempo in beats per minute (`BPM`, ID3 `TBPM`), when known: beat-grid changes follow it.
  public var beatsPerMinute: Double?
  /// The year of release, when known.
  public var year: Int?
  /// How often the item played to its end (library items; counted by `QueuePlayer`).
  public var playCount = 0
  /// How often the item was skipped forward (library items; counted by `QueuePlayer`).
  public var skipCount = 0
  /// When the item last played to its end (library items).
  public var lastPlayedDate: Date?
  /// When the library scan first indexed the item (library items).
  public var dateAdded: Date?
  /// 0 (unrated) to 5.
  public var rating = 0
  /// Whether the item is part of a compilation.
  public var isCompilation = false

  // What a music director picks and cuts by, from the file's tags (`load(path:)`). Not part of
  // the item's identity: equality and hashing ignore them.

  /// The mood the track sets, as its tag says it ("Tense", "Calm"): Vorbis `MOOD`, ID3 `TMOO` or
  /// `TXXX:MOOD`.
  public var mood: String?
  /// Beats per bar (3 for 3/4), so a change can wait for the next bar: Vorbis `METER` or
  /// `TIMESIGNATURE`, ID3 `TXXX` with either name.
  public var beatsPerBar: Int?
  /// ReplayGain's adjustment for this track alone, in dB (negative: play it quieter).
  public var replayGainTrackDecibels: Double?
  /// ReplayGain's adjustment for the track's album as a whole, in dB.
  public var replayGainAlbumDecibels: Double?
  /// The first frame of the track's loop (in frames of the file's own `sampleRate`), from
  /// `LOOPSTART` or the like; nil when the file marks no loop.
  public var loopStartFrame: Int64?
  /// The frame just after the loop's last one (from `LOOPLENGTH` or `LOOPEND`); the file's length
  /// in frames when only the start is tagged (the loop runs to the end). Nil without a loop.
  public var loopEndFrame: Int64?

  // What listening to the whole song told (`AudioAnalysis`): filled for library items by the scan
  // and for bundled items by the cue file's catalogue; nil until the item is analysed. Not part of
  // the item's identity either.

  /// Integrated loudness in LUFS (EBU R128): the director levels every item to one target by it.
  public var loudness: Double?
  /// Loudness range in LU (EBU Tech 3342).
  public var loudnessRange: Double?
  /// The highest true peak in dBTP: a level boost stops where it would reach the ceiling.
  public var truePeak: Double?
  /// The tempo the analysis found, whatever the tags say.
  public var detectedBeatsPerMinute: Double?
  /// Where the analysis found the first beat, in seconds of the file: the phase of the grid of an
  /// item whose tempo is detected.
  public var firstBeatSeconds: Double?
  /// The file's named cue points, in seconds by name (its `CUE_<NAME>` tags; see
  /// `AudioTags.cuePoints`). Read from the file when it is loaded; the library's index does not
  /// keep them.
  public var cuePoints: [String: [Double]] = [:]
  /// How energetic the song is, 0 (calm) to 1 (intense).
  public var energy: Double?
  /// Where the song's sound begins and ends, in seconds of the file (`AudioAnalysis`): the
  /// director starts a player's song at its sound and ends it after its last, so a hidden intro's
  /// silence or a long gap at the end is not heard as dead air in the game.
  public var soundStartSeconds: Double?
  public var soundEndSeconds: Double?
  /// True when `beatsPerMinute` is the detected tempo (the file has no BPM tag).
  public var isBeatsPerMinuteDetected = false

  /// An item for the file at `assetURL` with what the caller knows of it; the rest stays nil until
  /// `MediaItem.load(path:)` reads the tags. Nothing is read here.
  public init(assetURL: URL, title: String? = nil, artist: String? = nil, albumTitle: String? = nil) {
    self.assetURL = assetURL
    self.title = title
    self.artist = artist
    self.albumTitle = albumTitle
  }

  /// An item for the file at `path` that knows only its path: title, artist, duration and the
  /// rest stay nil (nothing is read here, so it is safe on a game thread). `MediaItem.load(path:)`
  /// reads them.
  public init(path: String) { self.init(assetURL: URL(fileURLWithPath: path)) }

  /// What to call the item for people: its title, else its file name, with any bytes of the
  /// name that are not UTF-8 shown as U+FFFD (`FileSystemPath.displayed`).
  public var displayName: String { title ?? FileSystemPath.displayed(assetURL.lastPathComponent) }

  /// Opens the file, reads its tags and length, and returns a complete item. Does I/O: not on a
  /// game thread that must not wait.
  /// - Throws: `DecodeError` naming the file and the reason.
  public static func load(path: String) throws(DecodeError) -> MediaItem {
    MediaItem(path: path, decoder: try AudioFile.openDecoder(path: path))
  }

  /// The item's analysis figures, as one value (nil figures where the item was not analysed).
  public var analysis: AudioAnalysis {
    AudioAnalysis(
      loudness: loudness, loudnessRange: loudnessRange, truePeak: truePeak, beatsPerMinute: detectedBeatsPerMinute,
      firstBeatSeconds: firstBeatSeconds, energy: energy, soundStartSeconds: soundStartSeconds,
      soundEndSeconds: soundEndSeconds)
  }

  /// Takes `analysis`'s figures; a detected tempo fills `beatsPerMinute` when no tag gave one (and
  /// `isBeatsPerMinuteDetected` says so), so beat and bar changes follow the song's own grid.
  public mutating func apply(_ analysis: AudioAnalysis) {
    loudness = analysis.loudness
    loudnessRange = analysis.loudnessRange
    truePeak = analysis.truePeak
    detectedBeatsPerMinute = analysis.beatsPerMinute
    firstBeatSeconds = analysis.firstBeatSeconds
    energy = analysis.energy
    soundStartSeconds = analysis.soundStartSeconds
    soundEndSeconds = analysis.soundEndSeconds
    if beatsPerMinute == nil || isBeatsPerMinuteDetected {
      beatsPerMinute = analysis.beatsPerMinute
      isBeatsPerMinuteDetected = analysis.beatsPerMinute != nil
    }
  }

  /// Like `load(path:)`, and listens to the whole song too (`AudioAnalysis`: loudness, tempo,
  /// beats, energy), decoding it once from start to end: about 1 % of its length in CPU time.
  /// - Throws: `DecodeError` naming the file and the reason.
  public static func loadAnalyzed(path: String) throws(DecodeError) -> MediaItem {
    let decoder = try AudioFile.openDecoder(path: path)
    var item = MediaItem(path: path, decoder: decoder)
    item.apply(try AudioAnalysis.measure(decoder))
    return item
  }

  /// An item with everything `decoder`'s tags and format say (the library's scanner adds its
  /// own rules on top: a title from the file name, compilations).
  init(path: String, decoder: any AudioDecoder) {
    self.init(path: path)
    let tags = decoder.tags
    title = tags.title
    artist = tags.artist
    albumTitle = tags.album
    playbackDuration = decoder.durationSeconds
    sampleRate = decoder.format.sampleRate
    albumArtist = tags.albumArtist
    genre = tags.genre
    composer = tags.composer
    albumTrackNumber = tags.trackNumber
    discNumber = tags.discNumber
    beatsPerMinute = tags.beatsPerMinute
    year = tags.year
    isCompilation = tags.isCompilation ?? false
    mood = tags.mood
    beatsPerBar = tags.meter
    replayGainTrackDecibels = tags.replayGainTrackGainDecibels
    replayGainAlbumDecibels = tags.replayGainAlbumGainDecibels
    loopStartFrame = tags.loopStartFrame
    cuePoints = tags.cuePoints
    // Only the start tagged: the loop runs to the end of the file (see `AudioTags.loopEndFrame`).
    if let start = tags.loopStartFrame { loopEndFrame = tags.loopEndFrame ?? max(start, decoder.lengthFrames) }
  }
}
