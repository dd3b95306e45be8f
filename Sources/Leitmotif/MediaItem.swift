import Foundation

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

  public func hash(into hasher: inout Hasher) {
    if let persistentID {
      hasher.combine(persistentID)
    } else {
      hasher.combine(assetURL.standardizedFileURL)
    }
  }

  /// The file holding the audio.
  public var assetURL: URL
  public var title: String?
  public var artist: String?
  public var albumTitle: String?
  /// Length in seconds, when known.
  public var playbackDuration: TimeInterval?
  /// The file's sample rate, when known (loop points are in its frames).
  public var sampleRate: Int?
  /// Library properties (MediaPlayer's `MPMediaItem`), filled for items that come from the
  /// player's music library; nil or 0 otherwise.
  /// Stays the same across rescans, renames and moves inside the library (it comes from the audio).
  public var persistentID: UInt64?
  public var albumArtist: String?
  public var genre: String?
  public var composer: String?
  public var albumTrackNumber: Int?
  public var discNumber: Int?
  public var beatsPerMinute: Double?
  public var year: Int?
  public var playCount = 0
  public var skipCount = 0
  public var lastPlayedDate: Date?
  public var dateAdded: Date?
  /// 0 (unrated) to 5.
  public var rating = 0
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

  public init(assetURL: URL, title: String? = nil, artist: String? = nil, albumTitle: String? = nil) {
    self.assetURL = assetURL
    self.title = title
    self.artist = artist
    self.albumTitle = albumTitle
  }

  /// An item for the file at `path`, properties unknown until it is prepared.
  public init(path: String) { self.init(assetURL: URL(fileURLWithPath: path)) }

  /// Opens the file, reads its tags and length, and returns a complete item. Does I/O: not on a
  /// game thread that must not wait.
  /// - Throws: `DecodeError` naming the file and the reason.
  public static func load(path: String) throws(DecodeError) -> MediaItem {
    MediaItem(path: path, decoder: try AudioFile.openDecoder(path: path))
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
    // Only the start tagged: the loop runs to the end of the file (see `AudioTags.loopEndFrame`).
    if let start = tags.loopStartFrame { loopEndFrame = tags.loopEndFrame ?? max(start, decoder.lengthFrames) }
  }
}
