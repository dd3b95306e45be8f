/// The metadata Leitmotif reads from a file's tags (Vorbis comments or ID3v2).
///
/// Absent tags are `nil`. Frame positions (loop points) are in frames of the file's own sample rate.
public struct AudioTags: Sendable, Hashable {
  /// The title (Vorbis `TITLE`, ID3 `TIT2`).
  public var title: String?
  /// The artist (`ARTIST`, ID3 `TPE1`).
  public var artist: String?
  /// The album (`ALBUM`, ID3 `TALB`).
  public var album: String?
  /// The album artist (`ALBUMARTIST`, ID3 `TPE2`).
  public var albumArtist: String?
  /// The genre (`GENRE`, ID3 `TCON`).
  public var genre: String?
  /// The composer (`COMPOSER`, ID3 `TCOM`).
  public var composer: String?
  /// The track's number (`TRACKNUMBER`, ID3 `TRCK` before the slash).
  public var trackNumber: Int?
  /// The number of tracks (`TRACKTOTAL`, ID3 `TRCK` after the slash).
  public var trackCount: Int?
  /// The disc's number (`DISCNUMBER`, ID3 `TPOS` before the slash).
  public var discNumber: Int?
  /// The number of discs (`DISCTOTAL`, ID3 `TPOS` after the slash).
  public var discCount: Int?
  /// The tempos a BPM tag may give, 1 to 999: anything else is taken for no tag. A tag of
  /// 1e308 once made a beat line every 1e-306 s, and the mixer never got through its first block.
  public static let plausibleBeatsPerMinute: ClosedRange<Double> = 1...999

  /// Tempo in beats per minute (Vorbis `BPM`, ID3 `TBPM`).
  public var beatsPerMinute: Double?
  /// The mood the track sets, as free text ("Tense", "Calm"): Vorbis `MOOD`, ID3v2.4 `TMOO` or
  /// an ID3 `TXXX` frame described `MOOD`; several are joined with " / " ("Calm / Dreamy").
  public var mood: String?
  /// Beats per bar, for changes on the bar: Vorbis `METER` or `TIMESIGNATURE` (or `TIME_SIGNATURE`)
  /// as a time signature's numerator ("3/4" or "6/8" -> 3 and 6) or a plain count ("4"); ID3
  /// `TXXX` frames with those descriptions. Values outside 1...64 are ignored.
  public var meter: Int?
  /// The year of release (`DATE` or `YEAR`; ID3 TYER/TDRC): the first four digits.
  public var year: Int?
  /// Part of a compilation (`COMPILATION`; iTunes' ID3 TCMP): 1, true or yes.
  public var isCompilation: Bool?
  /// First frame of the loop (`LOOPSTART`, `LOOP_START` or `LOOP_BEGIN`).
  public var loopStartFrame: Int64?
  /// The frame just after the loop's last one (from `LOOPLENGTH`, `LOOPEND` or `LOOP_END`);
  /// `nil` with a loop start means the loop runs to the end of the file.
  public var loopEndFrame: Int64?
  /// ReplayGain adjustments in dB and peaks as linear amplitude (1.0 = full scale).
  public var replayGainTrackGainDecibels: Double?
  /// ReplayGain's track peak, as linear amplitude.
  public var replayGainTrackPeak: Double?
  /// ReplayGain's album adjustment, in dB.
  public var replayGainAlbumGainDecibels: Double?
  /// ReplayGain's album peak, as linear amplitude.
  public var replayGainAlbumPeak: Double?

  /// Named cue points, in seconds of the file, by name in lower case: Vorbis comments (or ID3
  /// `TXXX` frames) `CUE_<NAME>=SECONDS`, several seconds separated by commas, and one name may
  /// be given more than once (`CUE_EXIT=32`, `CUE_PHRASE=8,16,24`). Sorted, each once.
  public var cuePoints: [String: [Double]] = [:]

  /// Tags with nothing known.
  public init() {}
}

/// A picture a file carries (a cover): Vorbis comments' and Opus tags' `METADATA_BLOCK_PICTURE`,
/// FLAC's PICTURE block, ID3v2's APIC frame. Read only when asked for (`AudioFile.artwork`):
/// covers run to megabytes, and the engine and the library never need them.
public struct Artwork: Sendable, Equatable {
  /// The picture's MIME type as the file says ("image/jpeg", "image/png").
  public var mimeType: String
  /// The image file's bytes.
  public var data: [UInt8]
  /// The picture's role: 3 is the front cover (ID3v2 and FLAC number them alike).
  public var pictureType: Int

  public init(mimeType: String, data: [UInt8], pictureType: Int = 3) {
    self.mimeType = mimeType
    self.data = data
    self.pictureType = pictureType
  }

  /// The file name extension for its type ("jpg", "png", "gif", "webp"; "img" for others).
  public var fileExtension: String {
    switch mimeType.lowercased() {
    case "image/jpeg", "image/jpg": return "jpg"
    case "image/png": return "png"
    case "image/gif": return "gif"
    case "image/webp": return "webp"
    default: return "img"
    }
  }

  /// Of several pictures, the one a player shows: the front cover, else the first.
  static func better(_ current: Artwork?, _ candidate: Artwork) -> Artwork {
    guard let current else { return candidate }
    return current.pictureType != 3 && candidate.pictureType == 3 ? candidate : current
  }

  /// A FLAC picture block (big-endian: type, MIME type, description, width, height, depth,
  /// colours, data), as FLAC stores it and `METADATA_BLOCK_PICTURE` carries it in base64. Nil
  /// when a length runs past the block or the picture is a URL ("-->").
  package static func flacPictureBlock(_ bytes: [UInt8]) -> Artwork? {
    var offset = 0
    func word() -> Int? {
      guard offset + 4 <= bytes.count else { return nil }
      defer { offset += 4 }
      return bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
    }
    func field() -> ArraySlice<UInt8>? {
      guard let length = word(), length <= bytes.count - offset else { return nil }
      defer { offset += length }
      return bytes[offset..<offset + length]
    }
    guard let type = word(), let mime = field(), field() != nil else { return nil }
    for _ in 0..<4 { guard word() != nil else { return nil } }
    guard let data = field(), !data.isEmpty else { return nil }
    let mimeType = String(decoding: mime, as: UTF8.self)
    guard mimeType != "-->" else { return nil }
    return Artwork(mimeType: mimeType, data: Array(data), pictureType: type)
  }
}

/// Builds `AudioTags` from (name, value) pairs, whatever tag format they came from.
///
/// Vorbis comment names are used as the common vocabulary (case-insensitive); the MP3 decoder maps
/// ID3v2 frame ids onto them (`TIT2` -> `TITLE`, ...), and ID3 `TXXX` descriptions are used as names.
package struct TagCollector {
  private(set) var tags = AudioTags()
  private var loopLengthFrames: Int64?

  /// Whether pictures are kept (`artwork`); off for everything but `AudioFile.artwork`.
  package var keepsArtwork = false
  /// The picture to show, when `keepsArtwork`.
  package private(set) var artwork: Artwork?

  package init() {}

  /// Keeps `picture` if it is the better one to show (the front cover wins).
  package mutating func add(artwork picture: Artwork) {
    guard keepsArtwork else { return }
    artwork = Artwork.better(artwork, picture)
  }

  /// A Vorbis comment, "NAME=value" (Ogg Vorbis, Ogg Opus and FLAC all carry them), as UTF-8
  /// bytes; one without "=" is ignored.
  package mutating func add(comment bytes: UnsafeRawBufferPointer) {
    if Self.isPicture(bytes) {
      // A cover in base64 (often hundreds of kilobytes): decoded only when pictures are wanted,
      // and never made into a String otherwise.
      if keepsArtwork, let block = Self.base64(bytes[Self.pictureKey.count...]),
        let picture = Artwork.flacPictureBlock(block)
      {
        add(artwork: picture)
      }
      return
    }
    let text = String(decoding: bytes, as: UTF8.self)
    guard let equals = text.firstIndex(of: "=") else { return }
    add(name: String(text[..<equals]), value: String(text[text.index(after: equals)...]))
  }

  /// Whether a value for `name` was read already (an ID3v1 fallback fills only what ID3v2 left).
  package func has(_ name: String) -> Bool {
    switch name {
    case "TITLE": tags.title != nil
    case "ARTIST": tags.artist != nil
    case "ALBUM": tags.album != nil
    case "YEAR": tags.year != nil
    default: false
    }
  }

  /// The fields a song may have several of (two ARTIST comments, an ID3v2.4 TPE1 of two
  /// strings) keep them all, as " / " joins them (the ID3v2.3 convention, and what players
  /// show): a duet was filed under its first artist alone, and a query for the second missed it.
  /// The same value twice is kept once.
  private static func joined(_ existing: String?, _ value: String) -> String {
    guard let existing else { return value }
    if existing.split(separator: " / ").contains(where: { $0 == value }) { return existing }
    return existing + " / " + value
  }

  package mutating func add(name rawName: String, value rawValue: String) {
    let value = rawValue.trimmingSpaces
    guard !value.isEmpty else { return }
    switch rawName.uppercased() {
    case "TITLE": tags.title = tags.title ?? value
    case "ARTIST": tags.artist = Self.joined(tags.artist, value)
    case "ALBUM": tags.album = tags.album ?? value
    case "ALBUMARTIST", "ALBUM ARTIST", "ALBUM_ARTIST": tags.albumArtist = Self.joined(tags.albumArtist, value)
    case "GENRE": tags.genre = Self.joined(tags.genre, value)
    case "COMPOSER": tags.composer = Self.joined(tags.composer, value)
    case "TRACKNUMBER", "TRACK":
      let (number, count) = Self.numberAndCount(value)
      tags.trackNumber = number.flatMap { $0 > 0 ? $0 : nil } ?? tags.trackNumber
      tags.trackCount = count ?? tags.trackCount
    case "TRACKTOTAL", "TOTALTRACKS": tags.trackCount = Int(value) ?? tags.trackCount
    case "DISCNUMBER", "DISC":
      let (number, count) = Self.numberAndCount(value)
      // (A disc or track is counted from 1: a "-1" or "0" some taggers write means none.)
      tags.discNumber = number.flatMap { $0 > 0 ? $0 : nil } ?? tags.discNumber
      tags.discCount = count ?? tags.discCount
    case "DISCTOTAL", "TOTALDISCS": tags.discCount = Int(value) ?? tags.discCount
    case "DATE", "YEAR", "ORIGINALDATE":
      if tags.year == nil, let digits = value.split(whereSeparator: { !$0.isNumber }).first, digits.count == 4 {
        tags.year = Int(digits)
      }
    case "COMPILATION", "ITUNESCOMPILATION":
      if tags.isCompilation == nil { tags.isCompilation = ["1", "true", "yes"].contains(value.lowercased()) }
    case "MOOD": tags.mood = Self.joined(tags.mood, value)
    case "METER", "TIMESIGNATURE", "TIME_SIGNATURE":
      if tags.meter == nil { tags.meter = Self.beatsPerBar(value) }
    case "BPM", "TEMPO":
      if let bpm = Double(value), AudioTags.plausibleBeatsPerMinute.contains(bpm) { tags.beatsPerMinute = bpm }
    case "LOOPSTART", "LOOP_START", "LOOP_BEGIN", "LOOPBEGIN":
      tags.loopStartFrame = Self.frame(value) ?? tags.loopStartFrame
    case "LOOPLENGTH", "LOOP_LENGTH":
      loopLengthFrames = Self.frame(value).flatMap { $0 > 0 ? $0 : nil }
    case "LOOPEND", "LOOP_END":
      tags.loopEndFrame = Self.frame(value) ?? tags.loopEndFrame
    case "REPLAYGAIN_TRACK_GAIN": tags.replayGainTrackGainDecibels = Self.decibels(value)
    case "REPLAYGAIN_TRACK_PEAK": tags.replayGainTrackPeak = Self.number(value)
    case "REPLAYGAIN_ALBUM_GAIN": tags.replayGainAlbumGainDecibels = Self.decibels(value)
    case "REPLAYGAIN_ALBUM_PEAK": tags.replayGainAlbumPeak = Self.number(value)
    // Ogg Opus's own (RFC 7845): a Q7.8 integer in dB towards -23 LUFS; ReplayGain aims at -18
    // LUFS, so it is 5 dB more. A REPLAYGAIN_ tag, when a file has both, wins.
    case "R128_TRACK_GAIN":
      tags.replayGainTrackGainDecibels = tags.replayGainTrackGainDecibels ?? Self.r128Decibels(value)
    case "R128_ALBUM_GAIN":
      tags.replayGainAlbumGainDecibels = tags.replayGainAlbumGainDecibels ?? Self.r128Decibels(value)
    default:
      let upper = rawName.uppercased()
      if upper.hasPrefix("CUE_"), upper.count > 4 {
        let name = String(rawName.dropFirst(4)).lowercased()
        let seconds = value.split(whereSeparator: { $0 == "," || $0 == ";" || $0.isWhitespace }).compactMap {
          Double($0).flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
        }
        if !seconds.isEmpty { tags.cuePoints[name] = Array(Set((tags.cuePoints[name] ?? []) + seconds)).sorted() }
      }
    }
  }

  static let pictureKey = Array("METADATA_BLOCK_PICTURE=".utf8)

  /// Whether the comment is a `METADATA_BLOCK_PICTURE` (its name in any case).
  static func isPicture(_ bytes: UnsafeRawBufferPointer) -> Bool {
    guard bytes.count > pictureKey.count else { return false }
    for index in pictureKey.indices {
      var byte = bytes[index]
      if byte >= 0x61 && byte <= 0x7A { byte -= 0x20 }
      if byte != pictureKey[index] { return false }
    }
    return true
  }

  /// Standard base64 (RFC 4648; padding optional, whitespace skipped); nil on any other byte.
  static func base64(_ text: Slice<UnsafeRawBufferPointer>) -> [UInt8]? {
    var output: [UInt8] = []
    output.reserveCapacity(text.count * 3 / 4)
    var accumulator: UInt32 = 0
    var bits = 0
    for byte in text {
      let value: UInt32
      switch byte {
      case 0x41...0x5A: value = UInt32(byte - 0x41)
      case 0x61...0x7A: value = UInt32(byte - 0x61 + 26)
      case 0x30...0x39: value = UInt32(byte - 0x30 + 52)
      case 0x2B: value = 62
      case 0x2F: value = 63
      case 0x3D: return output  // padding: the end
      case 0x20, 0x0A, 0x0D, 0x09: continue
      default: return nil
      }
      accumulator = accumulator << 6 | value
      bits += 6
      if bits >= 8 {
        bits -= 8
        output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
      }
    }
    return output
  }

  /// The tags, with LOOPLENGTH turned into an end frame and loop points that contradict the
  /// file's length (or each other) dropped: a bad tag must not make a track loop forever on nothing.
  package func finished(lengthFrames: Int64) -> AudioTags {
    var result = tags
    if let start = result.loopStartFrame, let length = loopLengthFrames {
      // Both come from the file: a sum past Int64 is no frame of it (dropped just below).
      let (end, overflow) = start.addingReportingOverflow(length)
      result.loopEndFrame = overflow ? .max : end
    }
    if let start = result.loopStartFrame {
      let end = result.loopEndFrame ?? lengthFrames
      if start < 0 || start >= lengthFrames || end <= start || end > lengthFrames {
        result.loopStartFrame = nil
        result.loopEndFrame = nil
      }
    } else {
      result.loopEndFrame = nil
    }
    return result
  }

  private static func numberAndCount(_ value: String) -> (Int?, Int?) {
    let parts = value.split(separator: "/", maxSplits: 1).map { String($0).trimmingSpaces }
    return (parts.first.flatMap { Int($0) }, parts.count > 1 ? Int(parts[1]) : nil)
  }

  /// "3/4" -> 3, "4" -> 4; nil for anything else, or for a count no bar has.
  private static func beatsPerBar(_ value: String) -> Int? {
    let numerator = value.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
    guard let beats = Int(String(numerator).trimmingSpaces), (1...64).contains(beats) else { return nil }
    return beats
  }

  private static func frame(_ value: String) -> Int64? {
    guard let frame = Int64(value), frame >= 0 else { return nil }
    return frame
  }

  private static func number(_ value: String) -> Double? {
    guard let number = Double(value), number.isFinite else { return nil }
    return number
  }

  /// "-6.52 dB" -> -6.52
  /// An R128 gain (Q7.8 dB towards -23 LUFS, a 16-bit signed integer) as a ReplayGain one.
  private static func r128Decibels(_ value: String) -> Double? {
    guard let fixed = Int(value), (-32_768...32_767).contains(fixed) else { return nil }
    return Double(fixed) / 256 + 5
  }

  private static func decibels(_ value: String) -> Double? {
    var text = value
    if text.lowercased().hasSuffix("db") { text = String(text.dropLast(2)).trimmingSpaces }
    return number(text)
  }
}

extension String {
  var trimmingSpaces: String {
    var scalars = Substring(self)
    while let first = scalars.first, first.isWhitespace || first == "\0" { scalars.removeFirst() }
    while let last = scalars.last, last.isWhitespace || last == "\0" { scalars.removeLast() }
    return String(scalars)
  }
}
