import Foundation
import LeitmotifFixtures
import Testing

@testable import LeitmotifDecoding

/// Covers a file carries, as the desktop's "now playing" shows them (`mpris:artUrl`): read only
/// when asked for, in every format Leitmotif plays.
@Suite("Artwork: the cover a file carries, in Ogg Vorbis, Opus, FLAC and MP3")
struct ArtworkTests {
  /// A real 1×1 PNG.
  static let png = [UInt8](
    Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")!
  )
  /// Another picture (not the front cover): a player shows the front cover first.
  static let back: [UInt8] = Array("not the cover".utf8)

  /// A FLAC picture block, as `METADATA_BLOCK_PICTURE` carries it (written here by hand, after
  /// the FLAC format's description, not by the parser under test).
  static func pictureBlock(type: UInt32, mime: String, data: [UInt8]) -> [UInt8] {
    func word(_ value: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) } }
    let description = Array("Cover".utf8)
    return word(type) + word(UInt32(mime.utf8.count)) + Array(mime.utf8) + word(UInt32(description.count))
      + description + word(1) + word(1) + word(32) + word(0) + word(UInt32(data.count)) + data
  }

  static func pictureTags() -> [(String, String)] {
    [
      ("TITLE", "Covered"),
      ("METADATA_BLOCK_PICTURE", Data(pictureBlock(type: 4, mime: "image/jpeg", data: back)).base64EncodedString()),
      ("metadata_block_picture", Data(pictureBlock(type: 3, mime: "image/png", data: png)).base64EncodedString()),
    ]
  }

  static let tone = ToneGenerator.sine(frequency: 440, amplitude: 0.3, seconds: 0.5, format: .stereo48000)

  @Test("Ogg Vorbis and Opus: METADATA_BLOCK_PICTURE, the front cover of two; the tags read as before")
  func oggPictures() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-artwork")
    let vorbis = directory.file("covered.ogg"), opus = directory.file("covered.opus")
    try VorbisEncoder.encode(samples: Self.tone, format: .stereo48000, tags: Self.pictureTags(), to: vorbis)
    try OpusEncoder.encode(samples: Self.tone, channels: 2, tags: Self.pictureTags(), to: opus)
    for path in [vorbis, opus] {
      let artwork = try #require(try AudioFile.artwork(path: path), "\(path)")
      #expect(artwork == Artwork(mimeType: "image/png", data: Self.png, pictureType: 3))
      #expect(artwork.fileExtension == "png")
      // Opened to play, the picture is not kept, and the tags are the same.
      let decoder = try AudioFile.openDecoder(path: path)
      #expect(decoder.artwork == nil)
      #expect(decoder.tags.title == "Covered")
    }
  }

  @Test("FLAC: its PICTURE block")
  func flacPicture() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-artwork")
    let path = directory.file("covered.flac")
    try FLACEncoder.encode(
      samples: Self.tone, format: .stereo48000, tags: [("TITLE", "Covered")], picture: ("image/png", Self.png),
      to: path)
    #expect(try AudioFile.artwork(path: path) == Artwork(mimeType: "image/png", data: Self.png, pictureType: 3))
    #expect(try AudioFile.openDecoder(path: path).artwork == nil)
  }

  @Test("MP3: an ID3v2 APIC frame (a tag written here before a LAME-made file)")
  func mp3Picture() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-artwork")
    let path = directory.file("covered.mp3")
    let audio = try Data(contentsOf: URL(fileURLWithPath: Fixture.path("lame-44100-stereo.mp3")))
    // ID3v2.3: "ID3", version 3.0, no flags, a syncsafe size; one APIC frame (its size plain
    // big-endian in 2.3): encoding 0, MIME, NUL, picture type 3, empty description, the image.
    let body = [0] + Array("image/png".utf8) + [0, 3, 0] + Self.png
    func word(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) } }
    let frame = Array("APIC".utf8) + word(body.count) + [0, 0] + body
    let size = frame.count
    let syncsafe = [21, 14, 7, 0].map { UInt8((size >> $0) & 0x7F) }
    let tag = Array("ID3".utf8) + [3, 0, 0] + syncsafe + frame
    try (Data(tag) + audio).write(to: URL(fileURLWithPath: path))
    #expect(try AudioFile.artwork(path: path) == Artwork(mimeType: "image/png", data: Self.png, pictureType: 3))
    let decoder = try AudioFile.openDecoder(path: path)
    #expect(decoder.artwork == nil)
    #expect(decoder.lengthFrames > 0)
  }

  @Test("No picture, a damaged one, a URL: nil, never a crash")
  func noPicture() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-artwork")
    let plain = directory.file("plain.ogg"), bad = directory.file("bad.ogg")
    try VorbisEncoder.encode(samples: Self.tone, format: .stereo48000, tags: [("TITLE", "Plain")], to: plain)
    #expect(try AudioFile.artwork(path: plain) == nil)
    var block = Self.pictureBlock(type: 3, mime: "image/png", data: Self.png)
    block.removeLast(10)  // the data runs past the block
    let url = Self.pictureBlock(type: 3, mime: "-->", data: Array("http://example.com/a.png".utf8))
    try VorbisEncoder.encode(
      samples: Self.tone, format: .stereo48000,
      tags: [
        ("METADATA_BLOCK_PICTURE", Data(block).base64EncodedString()), ("METADATA_BLOCK_PICTURE", "not base64!"),
        ("METADATA_BLOCK_PICTURE", Data(url).base64EncodedString()),
      ], to: bad)
    #expect(try AudioFile.artwork(path: bad) == nil)
  }
}
