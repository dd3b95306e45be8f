import LeitmotifDecoding
import LeitmotifLibrary
import LeitmotifOutput

/// A beat of the music a queue player plays, delivered when it is heard
/// (`QueuePlayer.addBeatObserver`, `Director.addBeatObserver`): so a game can flash its lights,
/// pulse its UI or time a footstep to the music.
public struct MusicBeat: Sendable, Equatable {
  /// The item whose beat it is.
  public var item: MediaItem
  /// The bar, counted as musicians do: 1 from the item's first downbeat (a pickup before it is
  /// bar 0). Counted in the file: after a loop jumps back, the bars of the loop come again.
  public var bar: Int
  /// The beat within the bar, from 1 (the downbeat) to `beatsPerBar`.
  public var beat: Int
  public var beatsPerBar: Int
  /// The mix frame it sounds on (frames since the engine started).
  public var mixFrame: Int64
  /// When it sounds, in seconds: of the mix clock (`mixFrame` / sample rate) from a queue
  /// player; of the director's clock (as its reports' times) from a director.
  public var seconds: Double

  /// The first beat of a bar.
  public var isDownbeat: Bool { beat == 1 }

  public init(item: MediaItem, bar: Int, beat: Int, beatsPerBar: Int, mixFrame: Int64, seconds: Double) {
    self.item = item
    self.bar = bar
    self.beat = beat
    self.beatsPerBar = beatsPerBar
    self.mixFrame = mixFrame
    self.seconds = seconds
  }
}

/// A named cue point of the music, when it is heard (see `QueuePlayer.addMarkerObserver`): a
/// game can start its cutscene on the chorus, or show the boss on the drop.
public struct MusicMarker: Sendable, Equatable {
  /// The item whose marker it is.
  public var item: MediaItem
  /// Its name, in lower case ("exit", "chorus").
  public var name: String
  /// Where it is in the item's file, in seconds.
  public var fileSeconds: Double
  /// The mix frame it sounds on (frames since the engine started).
  public var mixFrame: Int64
  /// When it sounds, in seconds: of the mix clock from a queue player; of the director's clock
  /// from a director (as `MusicBeat.seconds`).
  public var seconds: Double

  public init(item: MediaItem, name: String, fileSeconds: Double, mixFrame: Int64, seconds: Double) {
    self.item = item
    self.name = name
    self.fileSeconds = fileSeconds
    self.mixFrame = mixFrame
    self.seconds = seconds
  }
}

extension MediaItem {
  /// The item's own beat grid: its BPM tag (or the tempo the analysis detected, bars counted from
  /// the first detected beat), with its meter (4 when untagged). Nil without a tempo.
  var tagBeatGrid: QueueDescriptor.BeatGrid? {
    guard let bpm = beatsPerMinute, AudioTags.plausibleBeatsPerMinute.contains(bpm) else { return nil }
    let meter = beatsPerBar.flatMap { $0 > 0 ? $0 : nil } ?? 4
    var offset = 0.0
    if isBeatsPerMinuteDetected, let first = firstBeatSeconds {
      offset = max(0, first).truncatingRemainder(dividingBy: 60 / bpm * Double(meter))
    }
    return QueueDescriptor.BeatGrid(beatsPerMinute: bpm, beatsPerBar: meter, offsetSeconds: offset)
  }
}

extension MusicBeat: CustomStringConvertible {
  /// One line: "bar 3, beat 2/4 of "Title" at 12.345 s (frame 592560)". (The item whole, which
  /// the default description printed, is about 1,200 characters.)
  public var description: String {
    "bar \(bar), beat \(beat)/\(beatsPerBar) of \"\(item.displayName)\" at \(fixedPoint(seconds, decimals: 3)) s "
      + "(frame \(mixFrame))"
  }
}

extension MusicMarker: CustomStringConvertible {
  /// One line: "marker "chorus" of "Title" (12.000 s into it) at 40.000 s (frame 1920000)".
  public var description: String {
    "marker \"\(name)\" of \"\(item.displayName)\" (\(fixedPoint(fileSeconds, decimals: 3)) s into it) at "
      + "\(fixedPoint(seconds, decimals: 3)) s (frame \(mixFrame))"
  }
}
