import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput

#if canImport(Glibc)
  import Glibc
#endif

/// What `OfflineRenderer` and `QueueRenderer` share: an offline engine on the loopback device,
/// the buffer each fixed-size mix lands in, and the WAV file, with their errors as `RenderError`.
package struct RenderSession {
  package typealias RenderError = OfflineRenderer.RenderError
  package let engine: AudioEngine
  let outputPath: String
  let sampleRate: Int
  let renderFrames: Int
  let sampleFormat: WAVSampleFormat
  /// The last mix: `renderFrames` stereo frames, interleaved.
  package private(set) var buffer: [Float]
  private var writer: WAVWriter?

  /// Opens the loopback engine; the WAV file waits for `openOutput()`, so that a render its
  /// player refuses leaves no file behind.
  package init(
    outputPath: String, sampleRate: Int, renderFrames: Int, sampleFormat: WAVSampleFormat,
    diagnostics: DiagnosticsHandler?
  ) throws(RenderError) {
    do {
      engine = try AudioEngine(
        output: .offline(sampleRate: sampleRate, renderFrames: renderFrames), diagnostics: diagnostics)
    } catch { throw .output(error) }
    self.outputPath = outputPath
    self.sampleRate = sampleRate
    self.renderFrames = renderFrames
    self.sampleFormat = sampleFormat
    buffer = [Float](repeating: 0, count: renderFrames * 2)
  }

  /// Creates (or truncates) the WAV file, unless that would destroy something (see
  /// `refuseToReplace`): one of `inputs` (what the render reads), or a file that is not a WAV.
  package mutating func openOutput(inputs: [String] = []) throws(RenderError) {
    if let reason = Self.refuseToReplace(outputPath, inputs: inputs) {
      throw .write(path: outputPath, underlying: reason)
    }
    do {
      // (A name that is not UTF-8 as its bytes: it was written as the escape's UTF-8.)
      writer = try WAVWriter(
        path: outputPath, sampleRate: sampleRate, channelCount: 2, sampleFormat: sampleFormat,
        withCPath: { path, body in FileSystemPath.withCString(path, body) })
    } catch { throw .write(path: outputPath, underlying: "\(error)") }
  }

  /// One render call of `renderFrames` into `buffer`: the engine pumps, mixes and delivers its
  /// events on this thread.
  mutating func mix() { mix(frameCount: renderFrames) }

  /// A shorter render call (at most `renderFrames`), so that a change lands on an exact frame (the
  /// director's events and beat-grid transitions). Runs stay repeatable: the same script makes
  /// the same calls.
  package mutating func mix(frameCount: Int) {
    let engine = self.engine
    let frames = max(1, min(frameCount, renderFrames))
    buffer.withUnsafeMutableBufferPointer { engine.render(into: $0.baseAddress!, frameCount: frames) }
  }

  /// Whether the last mix is digital silence.
  var mixIsSilent: Bool { buffer.allSatisfy { $0 == 0 } }

  /// Appends the first `frameCount` frames of the last mix to the file.
  package func write(frameCount: Int) throws(RenderError) { try write(buffer, frameCount: frameCount) }

  /// Appends the first `frameCount` frames of `samples` (an earlier mix) to the file.
  func write(_ samples: [Float], frameCount: Int) throws(RenderError) {
    guard let writer else { preconditionFailure("RenderSession.write before openOutput") }
    do {
      try samples.withUnsafeBufferPointer { try writer.write($0, frameCount: frameCount) }
    } catch { throw .write(path: outputPath, underlying: "\(error)") }
  }

  /// Why writing a WAV at `path` must not go ahead, or nil when it may: a render truncates its
  /// output first, so `leitmotif render --out song.ogg song.ogg` once turned the song into 1,024
  /// frames of WAV before its decoder saw the file empty. Refused:
  /// - the same file as one of `inputs` (by device and inode: another name, a link, `./a.ogg`
  ///   for `a.ogg`);
  /// - an existing regular file with something in it that is not a RIFF/WAVE file: a music
  ///   file, a cue file, an events script. A render replaces an earlier render, never anything
  ///   else; `/dev/null` and other devices are fine.
  package static func refuseToReplace(_ path: String, inputs: [String]) -> String? {
    var output = stat()
    guard stat(path, &output) == 0 else { return nil }  // not there yet: nothing to lose
    for input in inputs {
      var other = stat()
      if stat(input, &other) == 0 && other.st_dev == output.st_dev && other.st_ino == output.st_ino {
        return "it is \(input), which the render reads: choose another output file"
      }
    }
    guard (output.st_mode & S_IFMT) == S_IFREG, output.st_size > 0 else { return nil }
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }  // unreadable: creating it will say why
    defer { close(descriptor) }
    var header = [UInt8](repeating: 0, count: 12)
    let count = header.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, 12) }
    let isWAV =
      count == 12 && (header[0..<4].elementsEqual("RIFF".utf8) || header[0..<4].elementsEqual("RF64".utf8))
      && header[8..<12].elementsEqual("WAVE".utf8)
    return isWAV
      ? nil : "it exists and is not a WAV file (a render replaces only a WAV file): move it away or choose another path"
  }

  /// Completes the file's header and closes it.
  package func finish() throws(RenderError) {
    do { try writer?.finish() } catch { throw .write(path: outputPath, underlying: "\(error)") }
  }
}
