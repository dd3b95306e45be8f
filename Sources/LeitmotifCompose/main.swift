import Foundation

// leitmotif-compose: composes and synthesises Leitmotif's bundled default music and writes it as
// Ogg Vorbis (48 kHz stereo) with loop and tempo tags. Deterministic: the same seed gives the same
// bytes (every random choice comes from SplitMix64; nothing depends on time or hashing order).
//
//   leitmotif-compose [--out DIR] [--seed N] [--only NAME] [--quality Q]

let usage = """
  usage: leitmotif-compose [--out DIR] [--seed N] [--only NAME] [--quality Q]
    --out DIR      where the .ogg files go (default Assets/music)
    --seed N       the seed of every random choice (default 1)
    --only NAME    only this piece (file name with or without .ogg, e.g. combat)
    --quality Q    Vorbis VBR quality, -0.1 ... 1.0 (default 0.2)
  """

struct Options {
  var outputDirectory = "Assets/music"
  var seed: UInt64 = 1
  var only: String?
  var quality: Float = 0.2
}

func parseOptions(_ arguments: [String]) -> Options? {
  var options = Options()
  var index = 0
  while index < arguments.count {
    let argument = arguments[index]
    guard index + 1 < arguments.count else { return nil }
    let value = arguments[index + 1]
    switch argument {
    case "--out": options.outputDirectory = value
    case "--seed":
      guard let seed = UInt64(value) else { return nil }
      options.seed = seed
    case "--only": options.only = value.hasSuffix(".ogg") ? value : value + ".ogg"
    case "--quality":
      guard let quality = Float(value), (-0.1...1).contains(quality) else { return nil }
      options.quality = quality
    default: return nil
    }
    index += 2
  }
  return options
}

guard let options = parseOptions(Array(CommandLine.arguments.dropFirst())) else {
  FileHandle.standardError.write(Data((usage + "\n").utf8))
  exit(2)
}

var pieces = Soundtrack.pieces(seed: options.seed)
if let only = options.only {
  pieces = pieces.filter { $0.fileName == only }
  guard !pieces.isEmpty else {
    FileHandle.standardError.write(Data("leitmotif-compose: no piece named \(only)\n".utf8))
    exit(2)
  }
}

do {
  try FileManager.default.createDirectory(atPath: options.outputDirectory, withIntermediateDirectories: true)
  for piece in pieces {
    let rendered = Renderer.render(piece)
    try Renderer.write(rendered, of: piece, to: options.outputDirectory, quality: options.quality)
    let seconds = Double(rendered.frameCount) / sampleRate
    var line = "\(piece.fileName): \(String(format: "%.1f", seconds)) s, \(piece.beatsPerMinute) BPM"
    if piece.isLoop {
      line += ", loop bars \(piece.introBars)..<\(piece.introBars + piece.bodyBars)"
      line += " (frames \(piece.loopStartFrame) + \(piece.loopLengthFrames))"
    }
    line += String(format: ", RMS %.1f dBFS, peak %.1f dBFS", rendered.rmsDecibels, 20 * log10(Double(rendered.peak)))
    print(line)
  }
} catch {
  FileHandle.standardError.write(Data("leitmotif-compose: \(error)\n".utf8))
  exit(1)
}
