import Foundation

/// A piece of music that can be played: a file and what is known about it.
///
/// This is MediaPlayer's media item: an asset (the file) separate from any playing instance of it.
/// Properties not known yet are `nil`; `MediaItem.load(path:)` fills them from the file's tags.
public struct MediaItem: Sendable, Hashable {
  /// The file holding the audio.
  public var assetURL: URL
  public var title: String?
  public var artist: String?
  public var albumTitle: String?
  /// Length in seconds, when known.
  public var playbackDuration: TimeInterval?
  /// The file's sample rate, when known (loop points are in its frames).
  public var sampleRate: Int?

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
    let decoder = try AudioFile.openDecoder(path: path)
    var item = MediaItem(path: path)
    item.title = decoder.tags.title
    item.artist = decoder.tags.artist
    item.albumTitle = decoder.tags.album
    item.playbackDuration = decoder.durationSeconds
    item.sampleRate = decoder.format.sampleRate
    return item
  }
}
