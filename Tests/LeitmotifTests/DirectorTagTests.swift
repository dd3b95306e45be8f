import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

@Suite("Tags a music director needs: mood, meter, tempo, ReplayGain and loop points on MediaItem")
struct DirectorTagTests {
  /// Half a second of a quiet stereo tone (24,000 frames at 48 kHz) with `tags` as Vorbis comments.
  func taggedVorbis(_ tags: [(String, String)], in directory: TemporaryDirectory, name: String) throws -> String {
    let samples = ToneGenerator.sine(frequency: 330, amplitude: 0.3, seconds: 0.5, format: .stereo48000)
    return try EngineHarness.vorbis(samples, in: directory, name: name, tags: tags)
  }

  func fixture(_ name: String) throws -> String {
    let fixtures = try #require(Bundle.module.path(forResource: "Fixtures", ofType: nil))
    return fixtures + "/" + name
  }

  @Test("MediaItem.load fills every director field from Vorbis comments (names in any case)")
  func vorbisComments() throws {
    let directory = try TemporaryDirectory()
    let path = try taggedVorbis(
      [
        ("TITLE", "Boss Theme"), ("ARTIST", "The Fixture Makers"), ("ALBUM", "Level 3"),
        ("ALBUMARTIST", "Score Ensemble"), ("GENRE", "Soundtrack"), ("COMPOSER", "A. Composer"),
        ("DATE", "1997-03-02"), ("BPM", "128.5"), ("mood", "Tense"), ("METER", "3/4"),
        ("REPLAYGAIN_TRACK_GAIN", "-6.50 dB"), ("REPLAYGAIN_ALBUM_GAIN", "-7.25 dB"),
        ("LOOPSTART", "1000"), ("LOOPLENGTH", "20000"),
      ], in: directory, name: "boss.ogg")
    let item = try MediaItem.load(path: path)
    #expect(item.title == "Boss Theme")
    #expect(item.artist == "The Fixture Makers")
    #expect(item.albumTitle == "Level 3")
    #expect(item.albumArtist == "Score Ensemble")
    #expect(item.genre == "Soundtrack")
    #expect(item.composer == "A. Composer")
    #expect(item.year == 1997)
    #expect(item.beatsPerMinute == 128.5)
    #expect(item.mood == "Tense")
    #expect(item.beatsPerBar == 3)
    #expect(item.replayGainTrackDecibels == -6.5)
    #expect(item.replayGainAlbumDecibels == -7.25)
    #expect(item.loopStartFrame == 1000)
    #expect(item.loopEndFrame == 21_000)
    #expect(item.sampleRate == 48_000)
  }

  @Test("TIMESIGNATURE is read as beats per bar; a loop start alone loops to the end")
  func timeSignatureAndOpenLoop() throws {
    let directory = try TemporaryDirectory()
    let sixEight = try MediaItem.load(
      path: try taggedVorbis(
        [("TIMESIGNATURE", "6/8"), ("LOOPSTART", "2400")], in: directory, name: "jig.ogg"))
    #expect(sixEight.beatsPerBar == 6)
    #expect(sixEight.loopStartFrame == 2400)
    #expect(sixEight.loopEndFrame == 24_000, "the end of the file")
    #expect(sixEight.mood == nil)

    let plain = try MediaItem.load(path: try taggedVorbis([("METER", "4")], in: directory, name: "march.ogg"))
    #expect(plain.beatsPerBar == 4)
    #expect(plain.loopStartFrame == nil && plain.loopEndFrame == nil)
  }

  @Test("Meters no bar has, and tags that are absent, leave the fields nil")
  func nonsenseAndAbsentTags() throws {
    let directory = try TemporaryDirectory()
    for (index, meter) in ["0/4", "-3", "waltz", "/4", "999"].enumerated() {
      let item = try MediaItem.load(
        path: try taggedVorbis([("METER", meter)], in: directory, name: "meter\(index).ogg"))
      #expect(item.beatsPerBar == nil, "METER=\(meter)")
    }
    let bare = try MediaItem.load(path: try taggedVorbis([], in: directory, name: "bare.ogg"))
    #expect(bare.mood == nil && bare.beatsPerBar == nil && bare.beatsPerMinute == nil)
    #expect(bare.replayGainTrackDecibels == nil && bare.replayGainAlbumDecibels == nil)
    #expect(bare.genre == nil && bare.albumArtist == nil && bare.composer == nil && bare.year == nil)
  }

  @Test("The new fields do not change an item's identity: equality and hash ignore them")
  func identityIsUnchanged() throws {
    let directory = try TemporaryDirectory()
    let path = try taggedVorbis([("MOOD", "Calm"), ("METER", "3/4"), ("BPM", "90")], in: directory, name: "calm.ogg")
    let loaded = try MediaItem.load(path: path)
    let bare = MediaItem(path: path)
    #expect(loaded.mood == "Calm")
    #expect(loaded == bare)
    #expect(loaded.hashValue == bare.hashValue)
    #expect(Set([loaded, bare]).count == 1)
  }

  @Test("MP3 (ID3v2): TMOO and TXXX METER, tempo, ReplayGain and loop points; see make-mp3-fixtures.sh")
  func id3Frames() throws {
    let item = try MediaItem.load(path: try fixture("director-tmoo.mp3"))
    #expect(item.title == "Director Tone")
    #expect(item.mood == "Brooding")
    #expect(item.beatsPerBar == 3)
    #expect(item.beatsPerMinute == 96)
    #expect(item.albumArtist == "Score Ensemble")
    #expect(item.composer == "B. Composer")
    #expect(item.genre == "Ambient")
    #expect(item.year == 1997)
    #expect(item.replayGainTrackDecibels == -3.2)
    #expect(item.replayGainAlbumDecibels == -4.1)
    #expect(item.loopStartFrame == 100)
    #expect(item.loopEndFrame == 9000)
    #expect(item.sampleRate == 44_100)
  }

  @Test("MP3 (ID3v2): mood and time signature as TXXX MOOD and TIMESIGNATURE")
  func id3UserTextFrames() throws {
    let item = try MediaItem.load(path: try fixture("director-txxx.mp3"))
    #expect(item.title == "Director Tone 2")
    #expect(item.mood == "Calm")
    #expect(item.beatsPerBar == 6)
    #expect(item.loopStartFrame == nil && item.loopEndFrame == nil)
  }
}
