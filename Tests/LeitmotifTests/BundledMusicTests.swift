import Foundation
import Leitmotif
import LeitmotifDecoding
import Testing

// What these tests prove about the bundled default music (Assets/music, made by
// `make assets`, i.e. Sources/LeitmotifCompose):
// - every piece is there, decodes, and is 48 kHz stereo;
// - its tags say what it is (title, artist, album, genre, mood, tempo, meter) and loops carry
//   loop points that lie on bar lines of their own tempo, so the beat grid runs through the loop;
// - the jump from the loop's end back to its start does not click: the step between the last
//   frame before the end and the first frame of the loop is no bigger than ordinary steps between
//   neighbouring frames inside the loop;
// - nothing is silent or clips, loops are about equally loud, and all of Assets/ stays small.
// The generator's determinism (same seed, same bytes) is checked by running it twice and
// comparing sha256 sums; it is too slow for a debug-build test.

/// One bundled piece and what its tags must say.
struct BundledPiece: Sendable, CustomStringConvertible {
  var fileName: String
  var mood: String
  var beatsPerMinute: Double
  var isLoop: Bool
  /// A layer of another piece (same bars, mixed over it): quieter on its own by design.
  var isStem = false

  var description: String { fileName }

  static let all = [
    BundledPiece(fileName: "menu.ogg", mood: "menu", beatsPerMinute: 90, isLoop: true),
    BundledPiece(fileName: "explore.ogg", mood: "calm", beatsPerMinute: 96, isLoop: true),
    BundledPiece(fileName: "stealth.ogg", mood: "tense", beatsPerMinute: 100, isLoop: true),
    BundledPiece(fileName: "stealth-alert.ogg", mood: "alert", beatsPerMinute: 100, isLoop: true, isStem: true),
    BundledPiece(fileName: "combat.ogg", mood: "combat", beatsPerMinute: 144, isLoop: true),
    BundledPiece(fileName: "boss.ogg", mood: "boss", beatsPerMinute: 150, isLoop: true),
    BundledPiece(fileName: "boss-phase2.ogg", mood: "boss", beatsPerMinute: 150, isLoop: true),
    BundledPiece(fileName: "stinger-spotted.ogg", mood: "spotted", beatsPerMinute: 100, isLoop: false),
    BundledPiece(fileName: "stinger-victory.ogg", mood: "victory", beatsPerMinute: 120, isLoop: false),
    BundledPiece(fileName: "stinger-defeat.ogg", mood: "defeat", beatsPerMinute: 70, isLoop: false),
  ]

  static let loops = all.filter(\.isLoop)

  /// The package root: this file is Tests/LeitmotifTests/BundledMusicTests.swift.
  static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

  static let assetsDirectory = packageRoot.appendingPathComponent("Assets")

  var path: String { Self.assetsDirectory.appendingPathComponent("music").appendingPathComponent(fileName).path }
}

/// A decoded piece: interleaved stereo samples and its item (tags and loop points).
private struct DecodedPiece {
  var item: MediaItem
  var samples: [Float]
  var channelCount: Int
  var sampleRate: Int

  init(_ piece: BundledPiece) throws {
    item = try MediaItem.load(path: piece.path)
    let decoder = try AudioFile.openDecoder(path: piece.path)
    channelCount = decoder.format.channelCount
    sampleRate = decoder.format.sampleRate
    samples = try AudioFile.decodeAll(decoder)
  }

  var frameCount: Int { samples.count / channelCount }

  /// The largest difference between the two frames' samples, over both channels.
  func step(from first: Int, to second: Int) -> Float {
    (0..<channelCount).map { abs(samples[second * channelCount + $0] - samples[first * channelCount + $0]) }.max()!
  }

  func rmsDecibels(frames: Range<Int>) -> Double {
    var sum = 0.0
    for index in (frames.lowerBound * channelCount)..<(frames.upperBound * channelCount) {
      sum += Double(samples[index] * samples[index])
    }
    return 10 * log10(sum / Double(max(1, frames.count * channelCount)))
  }
}

@Suite("Bundled music")
struct BundledMusicTests {
  @Test("every piece decodes as 48 kHz stereo with its tags", arguments: BundledPiece.all)
  func decodesWithTags(piece: BundledPiece) throws {
    let decoded = try DecodedPiece(piece)
    #expect(decoded.sampleRate == 48_000)
    #expect(decoded.channelCount == 2)
    let item = decoded.item
    #expect(item.title?.isEmpty == false)
    #expect(item.artist == "Leitmotif")
    #expect(item.albumTitle == "Leitmotif default soundtrack")
    #expect(item.genre == "Game")
    #expect(item.mood == piece.mood)
    #expect(item.beatsPerMinute == piece.beatsPerMinute)
    #expect(item.beatsPerBar == 4)
    if piece.isLoop {
      #expect(item.loopStartFrame != nil)
      #expect(item.loopEndFrame != nil)
    } else {
      #expect(item.loopStartFrame == nil)
      let seconds = Double(decoded.frameCount) / 48_000
      #expect((1...4).contains(seconds), "a stinger is a 1-4 s one-shot, not \(seconds) s")
    }
  }

  @Test("loop points lie on bar lines and the loop is 8 to 16 whole bars", arguments: BundledPiece.loops)
  func loopPointsOnBarLines(piece: BundledPiece) throws {
    let item = try MediaItem.load(path: piece.path)
    let start = try #require(item.loopStartFrame)
    let end = try #require(item.loopEndFrame)
    let barFrames = 48_000 * 60 / piece.beatsPerMinute * 4
    let startBars = Double(start) / barFrames
    let endBars = Double(end) / barFrames
    #expect(abs(startBars * barFrames - startBars.rounded() * barFrames) <= 1, "LOOPSTART \(start) is off the bar grid")
    #expect(abs(endBars * barFrames - endBars.rounded() * barFrames) <= 1, "loop end \(end) is off the bar grid")
    #expect((1...4).contains(startBars.rounded()), "the intro is \(startBars) bars")
    #expect((8...16).contains((endBars - startBars).rounded()), "the loop is \(endBars - startBars) bars")
  }

  @Test("the jump from loop end back to loop start does not click", arguments: BundledPiece.loops)
  func seamIsContinuous(piece: BundledPiece) throws {
    let decoded = try DecodedPiece(piece)
    let start = Int(try #require(decoded.item.loopStartFrame))
    let end = Int(try #require(decoded.item.loopEndFrame))
    // The ordinary steps between neighbouring frames in the loop's first and last two seconds
    // (the music either side of the seam): the seam's step must be no bigger than the 99th
    // percentile of them (a cut at a wrong place is typically several times bigger).
    let window = 2 * 48_000
    var steps = (start + 1..<start + window).map { decoded.step(from: $0 - 1, to: $0) }
    steps += (end - window..<end).map { decoded.step(from: $0 - 1, to: $0) }
    steps.sort()
    let typicalStep = steps[steps.count * 99 / 100]
    let seamStep = decoded.step(from: end - 1, to: start)
    #expect(seamStep <= typicalStep, "seam step \(seamStep) vs 99th percentile \(typicalStep)")
  }

  @Test("nothing is silent or clips", arguments: BundledPiece.all)
  func levels(piece: BundledPiece) throws {
    let decoded = try DecodedPiece(piece)
    var peak: Float = 0
    for sample in decoded.samples { peak = max(peak, abs(sample)) }
    #expect(peak < 0.891, "peak \(20 * log10(Double(peak))) dBFS is not under -1 dBFS")
    let rms = decoded.rmsDecibels(frames: 0..<decoded.frameCount)
    #expect(rms > -30, "RMS \(rms) dBFS: too quiet")
  }

  @Test("a stem has its piece's length and loop points, frame for frame")
  func stemMatchesItsPiece() throws {
    let stem = try MediaItem.load(path: BundledPiece.all.first { $0.fileName == "stealth-alert.ogg" }!.path)
    let piece = try MediaItem.load(path: BundledPiece.all.first { $0.fileName == "stealth.ogg" }!.path)
    #expect(stem.loopStartFrame == piece.loopStartFrame && stem.loopEndFrame == piece.loopEndFrame)
    let stemFrames = try AudioFile.openDecoder(path: stem.assetURL.path).lengthFrames
    let pieceFrames = try AudioFile.openDecoder(path: piece.assetURL.path).lengthFrames
    #expect(stemFrames == pieceFrames, "stem \(stemFrames) frames, piece \(pieceFrames)")
  }

  @Test("the loops are about equally loud (loop bodies within 3 dB)")
  func loudnessMatched() throws {
    var levels: [Double] = []
    for piece in BundledPiece.loops where !piece.isStem {
      let decoded = try DecodedPiece(piece)
      let start = Int(try #require(decoded.item.loopStartFrame))
      let end = Int(try #require(decoded.item.loopEndFrame))
      levels.append(decoded.rmsDecibels(frames: start..<end))
    }
    let spread = levels.max()! - levels.min()!
    #expect(spread <= 3, "loop RMS levels \(levels) spread \(spread) dB")
  }

  @Test("all of Assets/ stays under 6 MB")
  func assetsAreSmall() throws {
    let directory = BundledPiece.assetsDirectory
    let enumerator = try #require(
      FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.fileSizeKey]))
    var totalBytes = 0
    for case let url as URL in enumerator {
      totalBytes += try url.resourceValues(forKeys: [.fileSizeKey]).fileSize ?? 0
    }
    #expect(totalBytes > 0)
    #expect(totalBytes < 6_000_000, "Assets/ holds \(totalBytes) bytes")
  }
}
