import FoundationEssentials
import LeitmotifDecoding

#if canImport(Glibc)
  import Glibc
#endif

/// What listening to a whole song tells: how loud it is, where its beats fall and how energetic
/// it is. Measured once, when the library scan reads a song or a bundled file is first seen, and
/// stored with it (the index, the catalogue's cache), because a song's analysis costs a full
/// decode.
///
/// Every figure is nil when the song gives none: silence has no loudness, a drone no tempo.
public struct AudioAnalysis: Sendable, Equatable, Codable {
  /// Bump when a figure is computed differently: stored analyses of another version are redone
  /// at the next scan.
  public static let version = 4

  /// The level below which a sample counts as silence for `soundStartSeconds` and
  /// `soundEndSeconds`: -60 dBFS, under anything heard in a game's mix but above dither and the
  /// noise of a digital file's silent stretches.
  public static let silenceThreshold: Float = 0.001

  /// Integrated loudness, LUFS (EBU R128, gated).
  public var loudness: Double?
  /// Loudness range, LU (EBU Tech 3342): how much the song's loudness moves.
  public var loudnessRange: Double?
  /// The highest true peak, dBTP.
  public var truePeak: Double?
  /// The detected tempo in beats per minute.
  public var beatsPerMinute: Double?
  /// Where the first detected beat falls, in seconds of the song: the beat grid's phase.
  public var firstBeatSeconds: Double?
  /// How sure the tempo detection is, 0...1 (see `RhythmAnalysis.confidence`).
  public var beatConfidence: Double?
  /// How energetic the song is, 0 (calm) to 1 (intense): see `EnergyScore`.
  public var energy: Double?
  /// Where the sound begins, in seconds of the song: its first sample above
  /// `silenceThreshold` (0 when it starts at once). A song that opens on seconds of silence
  /// (a hidden intro, a gap left by the rip) is started here when it plays as a soundtrack.
  public var soundStartSeconds: Double?
  /// Where the sound ends, in seconds of the song: just after its last sample above
  /// `silenceThreshold` (the song's length when it sounds to the end). Silence after it (a
  /// hidden track's gap) is not played as a soundtrack, and a crossfade to the next song
  /// overlaps the song's own ending instead of its silence.
  public var soundEndSeconds: Double?

  /// An analysis with the given figures (all unknown by default).
  public init(
    loudness: Double? = nil, loudnessRange: Double? = nil, truePeak: Double? = nil, beatsPerMinute: Double? = nil,
    firstBeatSeconds: Double? = nil, beatConfidence: Double? = nil, energy: Double? = nil,
    soundStartSeconds: Double? = nil, soundEndSeconds: Double? = nil
  ) {
    self.loudness = loudness
    self.loudnessRange = loudnessRange
    self.truePeak = truePeak
    self.beatsPerMinute = beatsPerMinute
    self.firstBeatSeconds = firstBeatSeconds
    self.beatConfidence = beatConfidence
    self.energy = energy
    self.soundStartSeconds = soundStartSeconds
    self.soundEndSeconds = soundEndSeconds
  }

  /// Decodes the file at `path` from start to end and analyses it. Does I/O and takes a full
  /// decode (about 1 % of the song's length in CPU time): not on a game thread.
  /// - Throws: `DecodeError` naming the file.
  public static func measure(path: String) throws(DecodeError) -> AudioAnalysis {
    try measure(try AudioFile.openDecoder(path: path))
  }

  /// Decodes `decoder` from its first frame to its last and analyses it; `visit` sees every block
  /// decoded (its first frame, interleaved samples, frame count), so a caller that needs the PCM
  /// for something else too (the library's fingerprint) does not decode the file twice.
  package static func measure(
    _ decoder: any AudioDecoder,
    visit: (_ startFrame: Int64, _ samples: UnsafeBufferPointer<Float>, _ frames: Int) -> Void = { _, _, _ in }
  ) throws(DecodeError) -> AudioAnalysis {
    if decoder.cursorFrames != 0 { try decoder.seek(toFrame: 0) }
    var analyzer = AudioAnalyzer(format: decoder.format)
    let channels = decoder.format.channelCount
    let blockFrames = 4096
    let block = UnsafeMutableBufferPointer<Float>.allocate(capacity: blockFrames * channels)
    defer { block.deallocate() }
    var frame: Int64 = 0
    while true {
      let frames: Int
      do {
        frames = try decoder.readFrames(into: block.baseAddress!, frameCapacity: blockFrames)
      } catch {
        // Damage after the last frame the file claims (bytes appended to a finished file) costs
        // no audio: the song is whole, as playing it shows.
        if frame >= decoder.lengthFrames { break }
        throw error
      }
      if frames == 0 { break }
      let samples = UnsafeBufferPointer(rebasing: block[0..<(frames * channels)])
      visit(frame, samples, frames)
      analyzer.add(samples, frames: frames)
      frame += Int64(frames)
    }
    return analyzer.finish()
  }
}

/// The streaming analyser behind `AudioAnalysis`: fed block by block, in order, with the file's
/// interleaved frames; holds a loudness meter and the rhythm analyser, never the song's PCM.
package struct AudioAnalyzer {
  private let meter: LoudnessMeter?
  private var rhythm: RhythmAnalyzer
  private let channels: Int
  private let sampleRate: Int
  /// Frames added so far.
  private var frames: Int64 = 0
  /// The first and last frame above the silence threshold, once one was seen.
  private var firstSounding: Int64?
  private var lastSounding: Int64?

  package init(format: AudioFormat) {
    channels = max(1, format.channelCount)
    sampleRate = format.sampleRate
    meter = LoudnessMeter(channels: format.channelCount, sampleRate: format.sampleRate)
    rhythm = RhythmAnalyzer(sampleRate: format.sampleRate)
  }

  package mutating func add(_ samples: UnsafeBufferPointer<Float>, frames count: Int) {
    guard count > 0, let base = samples.baseAddress else { return }
    meter?.add(base, frames: count)
    rhythm.add(interleaved: UnsafeBufferPointer(rebasing: samples[0..<(count * channels)]), channels: channels)
    findSound(base, frames: count)
    frames += Int64(count)
  }

  /// Moves the first and last sounding frame on with this block: the first is looked for only
  /// until found, the last from the block's end back, so a song costs about one pass over its
  /// first and last sounding blocks, not a test per sample.
  private mutating func findSound(_ samples: UnsafePointer<Float>, frames count: Int) {
    let threshold = AudioAnalysis.silenceThreshold
    let total = count * channels
    // NaN is not sound: `>` is false for it.
    func sounds(_ index: Int) -> Bool { abs(samples[index]) > threshold }
    guard let last = (0..<total).reversed().first(where: sounds) else { return }
    lastSounding = frames + Int64(last / channels)
    if firstSounding == nil, let first = (0..<total).first(where: sounds) {
      firstSounding = frames + Int64(first / channels)
    }
  }

  package func finish() -> AudioAnalysis {
    var analysis = AudioAnalysis()
    analysis.loudness = meter?.integratedLoudness
    analysis.loudnessRange = analysis.loudness == nil ? nil : meter?.loudnessRange
    analysis.truePeak = meter?.truePeak
    let beats = rhythm.finish()
    analysis.beatsPerMinute = beats?.beatsPerMinute
    analysis.firstBeatSeconds = beats?.firstBeatSeconds
    analysis.beatConfidence = beats?.confidence
    analysis.energy = analysis.loudness.map { EnergyScore.energy(loudness: $0, rhythm: beats) }
    if let first = firstSounding, let last = lastSounding, sampleRate > 0 {
      analysis.soundStartSeconds = Double(first) / Double(sampleRate)
      analysis.soundEndSeconds = Double(last + 1) / Double(sampleRate)
    }
    return analysis
  }
}

/// A song's energy, 0 (calm) to 1 (intense), from what the analysis measured: a weighted sum of
/// four scores, each mapped linearly (the centroid on a log scale) onto 0...1 and clamped:
/// - loudness, 0.35: -30 LUFS is 0, -10 LUFS is 1;
/// - onset density, 0.25: no onsets is 0, 8 a second is 1 (busy drums);
/// - tempo, 0.2: 60 BPM is 0, 180 BPM is 1;
/// - brightness (spectral centroid at the analysis rate), 0.2: 250 Hz is 0, 4 kHz is 1.
/// A song with no beat found (a drone, an ambient pad) scores on loudness alone. A heuristic, as
/// every energy figure is; on the bundled music it orders combat and boss above menu, explore
/// and stealth.
enum EnergyScore {
  static func energy(loudness: Double, rhythm: RhythmAnalysis?) -> Double {
    func unit(_ value: Double) -> Double { min(1, max(0, value)) }
    var energy = 0.35 * unit((loudness + 30) / 20)
    if let rhythm {
      energy += 0.25 * unit(rhythm.onsetsPerSecond / 8)
      energy += 0.2 * unit((rhythm.beatsPerMinute - 60) / 120)
      energy += 0.2 * unit(log2(max(rhythm.spectralCentroidHertz, 1) / 250) / 4)
    }
    return energy
  }
}
