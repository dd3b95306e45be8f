import Foundation
import Leitmotif
import LeitmotifFixtures

/// `leitmotif-bench tempo`: how well and how fast the analysis finds tempo and beats, on music
/// whose tempo is known: the fixtures' synthesized songs (`RhythmSynthesizer.testSet`, beats known
/// to the sample) and the bundled pieces (Assets/music, made by leitmotif-compose: first beat at
/// 0 s, tempo from their BPM tags, which the analysis never reads). Stingers (under 10 s) are left
/// out: too short for a tempo.
///
/// Per song: the detected tempo and its error, an octave error (a ratio near 2, 3, 1/2 or 1/3),
/// the beat F-measure within ±70 ms, and analysis speed as a multiple of real time on this
/// thread's CPU clock: the rhythm alone, and the whole analysis (EBU R128 loudness with true peak,
/// rhythm, energy) without the decode. The decoded PCM is in memory first, so the figures are the
/// analysis, not the disk or the decoder.
struct TempoBenchmark {
  struct Options {
    var assets = "Assets/music"

    init(parsing arguments: [String]) throws {
      var rest = arguments[...]
      while let argument = rest.popFirst() {
        switch argument {
        case "--assets":
          guard let value = rest.popFirst() else { throw UsageError(description: "--assets needs a folder") }
          assets = value
        default: throw UsageError(description: "unknown option \"\(argument)\"")
        }
      }
    }
  }

  let options: Options

  struct Case {
    var name: String
    var format: AudioFormat
    var samples: [Float]
    var beatsPerMinute: Double
    var beats: [Double]
  }

  func run() throws {
    print("tempo and beats: detected against known tempos (goals: tempo within 2 % without octave error on 90 %,")
    print("beat F-measure >= 0.8 within +-70 ms, analysis >= 100x real time on one core)")
    var cases = RhythmSynthesizer.testSet().map {
      Case(name: $0.name, format: $0.format, samples: $0.samples, beatsPerMinute: $0.beatsPerMinute, beats: $0.beats)
    }
    cases += try bundledCases()
    var table = TextTable(
      ["song", "true BPM", "found", "error %", "octave", "beat F", "rhythm x", "analysis x"],
      rightAligned: [1, 2, 3, 5, 6, 7])
    var withinTwoPercent = 0
    var fSum = 0.0
    var audioSeconds = 0.0
    var rhythmCPU = 0.0
    var analysisCPU = 0.0
    for song in cases {
      let seconds = Double(song.samples.count / song.format.channelCount) / Double(song.format.sampleRate)
      let (rhythm, rhythmSeconds) = timed { analyzeRhythm(song) }
      let (_, allSeconds) = timed { analyzeAll(song) }
      audioSeconds += seconds
      rhythmCPU += rhythmSeconds
      analysisCPU += allSeconds
      let found = rhythm?.beatsPerMinute
      let error = found.map { 100 * ($0 - song.beatsPerMinute) / song.beatsPerMinute }
      let ratio = found.map { $0 / song.beatsPerMinute } ?? 1
      let octave = [2.0, 3, 0.5, 1.0 / 3].contains { abs(ratio / $0 - 1) < 0.04 }
      if let error, abs(error) <= 2 { withinTwoPercent += 1 }
      let f = RhythmSynthesizer.fMeasure(detected: rhythm?.beatTimes ?? [], truth: song.beats)
      fSum += f
      table.add([
        song.name, String(format: "%.1f", song.beatsPerMinute), found.map { String(format: "%.2f", $0) } ?? "none",
        error.map { String(format: "%+.2f", $0) } ?? "-", octave ? "yes" : "no", String(format: "%.3f", f),
        String(format: "%.0f", seconds / rhythmSeconds), String(format: "%.0f", seconds / allSeconds),
      ])
    }
    print(table.render())
    let share = Double(withinTwoPercent) / Double(max(1, cases.count))
    let meanF = fSum / Double(max(1, cases.count))
    let speed = audioSeconds / analysisCPU
    func verdict(_ met: Bool) -> String { met ? "goal met" : "BELOW GOAL" }
    print(
      String(
        format: "tempo within 2 %% without octave error: %d of %d (%.0f %%; goal 90 %%: %@)", withinTwoPercent,
        cases.count, 100 * share, verdict(share >= 0.9)))
    print(String(format: "mean beat F-measure: %.3f (goal 0.8: %@)", meanF, verdict(meanF >= 0.8)))
    print(
      String(
        format:
          "speed on one core: rhythm %.0fx, whole analysis %.0fx real time (%.0f s of audio in %.2f s CPU; goal 100x: %@)",
        audioSeconds / rhythmCPU, speed, audioSeconds, analysisCPU, verdict(speed >= 100)))
  }

  /// The bundled pieces of 10 s and more, decoded by Leitmotif's own decoders.
  func bundledCases() throws -> [Case] {
    let folder = URL(fileURLWithPath: options.assets)
    guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else {
      print("(no bundled music at \(folder.path): only the synthesized songs)")
      return []
    }
    var cases: [Case] = []
    for name in names.sorted() where name.hasSuffix(".ogg") {
      let decoder = try AudioFile.openDecoder(path: folder.appendingPathComponent(name).path)
      guard let bpm = decoder.tags.beatsPerMinute, decoder.durationSeconds >= 10 else { continue }
      let channels = decoder.format.channelCount
      var samples = [Float](repeating: 0, count: Int(decoder.lengthFrames) * channels)
      var frame = 0
      try samples.withUnsafeMutableBufferPointer { (buffer) throws(DecodeError) in
        while frame < Int(decoder.lengthFrames) {
          let got = try decoder.readFrames(
            into: buffer.baseAddress! + frame * channels, frameCapacity: min(4096, Int(decoder.lengthFrames) - frame))
          if got == 0 { break }
          frame += got
        }
      }
      // Beats from frame 0 on; none in the last 2.5 s, the effects' ring-out after the last bar.
      let beats = Array(stride(from: 0.0, through: decoder.durationSeconds - 2.5, by: 60 / bpm))
      cases.append(Case(name: name, format: decoder.format, samples: samples, beatsPerMinute: bpm, beats: beats))
    }
    return cases
  }

  /// Fed in 4096-frame blocks, as the scan's decode feeds it.
  func analyzeRhythm(_ song: Case) -> RhythmAnalysis? {
    var analyzer = RhythmAnalyzer(sampleRate: song.format.sampleRate)
    forEachBlock(song) { analyzer.add(interleaved: $0, channels: song.format.channelCount) }
    return analyzer.finish()
  }

  func analyzeAll(_ song: Case) -> AudioAnalysis {
    var analyzer = AudioAnalyzer(format: song.format)
    forEachBlock(song) { analyzer.add($0, frames: $0.count / song.format.channelCount) }
    return analyzer.finish()
  }

  func forEachBlock(_ song: Case, _ body: (UnsafeBufferPointer<Float>) -> Void) {
    song.samples.withUnsafeBufferPointer { all in
      let block = 4096 * song.format.channelCount
      var offset = 0
      while offset < all.count {
        let end = min(all.count, offset + block)
        body(UnsafeBufferPointer(rebasing: all[offset..<end]))
        offset = end
      }
    }
  }

  func timed<T>(_ body: () -> T) -> (T, Double) {
    let start = CPUUsage.now().threadSeconds
    let result = body()
    return (result, CPUUsage.now().threadSeconds - start)
  }
}
