import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifLibrary
import LeitmotifOutput

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

  /// Creates (or truncates) the WAV file.
  package mutating func openOutput() throws(RenderError) {
    do {
      writer = try WAVWriter(path: outputPath, sampleRate: sampleRate, channelCount: 2, sampleFormat: sampleFormat)
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

  /// Completes the file's header and closes it.
  package func finish() throws(RenderError) {
    do { try writer?.finish() } catch { throw .write(path: outputPath, underlying: "\(error)") }
  }
}
