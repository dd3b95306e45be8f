/// Decides what a file holds from its first bytes.
enum FormatSniffer {
  enum Kind: Equatable {
    case vorbis
    case mp3(id3v2SizeBytes: Int64)
    case flac
    case opus
    case wav
    case aiff
    case other(String?)
    case truncatedTag(claimedBytes: Int64)
  }

  static func sniff(_ source: FileByteSource) -> Kind {
    let head = source.bytes(at: 0, count: 64)
    if head.starts(with: Array("OggS".utf8)) {
      // The first page carries exactly the codec's identification packet, at byte 28.
      let packet = head.count > 28 ? Array(head[28...]) : []
      if packet.starts(with: [0x01] + Array("vorbis".utf8)) { return .vorbis }
      if packet.starts(with: Array("OpusHead".utf8)) { return .opus }
      if packet.starts(with: [0x7F] + Array("FLAC".utf8)) { return .other("an Ogg FLAC file") }
      if packet.starts(with: Array("Speex".utf8)) { return .other("an Ogg Speex file") }
      return .other("an Ogg file that is not Vorbis")
    }
    if head.starts(with: Array("fLaC".utf8)) { return .flac }
    if head.count >= 12, ["RIFF", "RIFX", "RF64"].contains(where: { head.starts(with: Array($0.utf8)) }) {
      return Array(head[8..<12]) == Array("WAVE".utf8) ? .wav : .other("a RIFF file that is not WAVE")
    }
    if head.count >= 12, head.starts(with: Array("FORM".utf8)) {
      let kind = Array(head[8..<12])
      return kind == Array("AIFF".utf8) || kind == Array("AIFC".utf8) ? .aiff : .other("an IFF file that is not AIFF")
    }

    var audioStart: Int64 = 0
    if head.starts(with: Array("ID3".utf8)) && head.count >= 10 {
      // ID3v2 size: four 7-bit "synchsafe" bytes, not counting the 10-byte header (or footer).
      let size = head[6..<10].reduce(Int64(0)) { ($0 << 7) | Int64($1 & 0x7F) }
      let footer: Int64 = (head[5] & 0x10) != 0 ? 10 : 0
      audioStart = 10 + size + footer
      if audioStart >= source.sizeBytes { return .truncatedTag(claimedBytes: audioStart) }
    }
    if let _ = firstMPEGFrame(source, from: audioStart) { return .mp3(id3v2SizeBytes: audioStart) }
    if audioStart > 0 { return .other("an ID3 tag with no MPEG audio after it") }
    return .other(looksLikeText(head) ? "text" : nil)
  }

  /// The offset of the first MPEG audio frame whose successor is also where its header says
  /// (or the file ends there): one lucky 0xFFE pattern in random bytes is not enough.
  static func firstMPEGFrame(_ source: FileByteSource, from start: Int64) -> Int64? {
    let window = source.bytes(at: start, count: 65_536)
    guard window.count >= 4 else { return nil }
    var index = 0
    while index + 4 <= window.count {
      if let length = frameLength(window, at: index) {
        let next = index + length
        if start + Int64(next) >= source.sizeBytes { return start + Int64(index) }
        let following =
          next + 4 <= window.count ? Array(window[next..<(next + 4)]) : source.bytes(at: start + Int64(next), count: 4)
        if following.count == 4, frameLength(following, at: 0) != nil,
          sameStream(Array(window[index..<(index + 4)]), following)
        {
          return start + Int64(index)
        }
      }
      index += 1
    }
    return nil
  }

  private static func sameStream(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    // Version, layer and sample rate must not change between neighbouring frames.
    (a[1] & 0xFE) == (b[1] & 0xFE) && (a[2] & 0x0C) == (b[2] & 0x0C)
  }

  /// The byte length of the MPEG audio frame whose header starts at `index`, if it is one.
  static func frameLength(_ bytes: [UInt8], at index: Int) -> Int? {
    guard index + 4 <= bytes.count else { return nil }
    let b1 = bytes[index + 1], b2 = bytes[index + 2]
    guard bytes[index] == 0xFF, (b1 & 0xE0) == 0xE0 else { return nil }
    let version = (b1 >> 3) & 0x03  // 0: MPEG 2.5, 2: MPEG 2, 3: MPEG 1
    let layer = (b1 >> 1) & 0x03  // 1: III, 2: II, 3: I
    let bitrateIndex = Int(b2 >> 4)
    let rateIndex = Int((b2 >> 2) & 0x03)
    let padding = Int((b2 >> 1) & 0x01)
    guard version != 1, layer != 0, bitrateIndex != 0, bitrateIndex != 15, rateIndex != 3 else { return nil }
    let rates = [[11_025, 12_000, 8_000], [0, 0, 0], [22_050, 24_000, 16_000], [44_100, 48_000, 32_000]]
    let sampleRate = rates[Int(version)][rateIndex]
    let mpeg1 = version == 3
    let bitrates: [Int]
    switch (mpeg1, layer) {
    case (true, 3): bitrates = [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448]
    case (true, 2): bitrates = [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384]
    case (true, _): bitrates = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
    case (false, 3): bitrates = [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256]
    case (false, _): bitrates = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]
    }
    let bitrate = bitrates[bitrateIndex] * 1000
    switch layer {
    case 3: return (12 * bitrate / sampleRate + padding) * 4
    case 2: return 144 * bitrate / sampleRate + padding
    default: return (mpeg1 ? 144 : 72) * bitrate / sampleRate + padding
    }
  }

  private static func looksLikeText(_ bytes: [UInt8]) -> Bool {
    !bytes.isEmpty && bytes.allSatisfy { $0 == 9 || $0 == 10 || $0 == 13 || (32..<127).contains($0) || $0 >= 0x80 }
  }
}
