import Foundation
import LeitmotifFixtures

// From a piece's notes to the samples of its file, and the file itself.
//
// A loop piece's file is intro + loop body + outro, with LOOPSTART at the end of the intro and
// LOOPSTART + LOOPLENGTH at the end of the body. For the loop to be seamless, the body must start
// with what its own end leaves ringing (note releases, delay repeats, reverb), not with the
// intro's. So the timeline is rendered as intro, body, body, outro in one pass with the effects,
// and the file takes the *second* body: it begins with the first body's overhang, exactly what a
// player hears after jumping back, and its end runs straight into the outro. The intro's last
// few milliseconds are crossfaded into the body's last few, so the step from the intro into the
// first body is as smooth as the jump from the body's end back to its start.

/// The mix settings of a piece: effects and loudness.
struct Mix: Sendable {
  var reverbRoomSize = 0.75
  var reverbDamping = 0.5
  var reverbLevel = 1.0
  var delayBeats = 0.75
  var delayFeedback: Float = 0.35
  /// The RMS the loop body (or a stinger) is scaled to, in dBFS.
  var targetRMSDecibels = -18.0
}

/// A piece of music ready to render: its sections' notes (beats from each section's start), tempo,
/// loop structure and tags.
struct Piece {
  var fileName: String
  var title: String
  var mood: String
  var beatsPerMinute: Int
  var beatsPerBar = 4
  var introBars: Int
  /// 0 for a one-shot (a stinger): then only `intro` is played, for `oneShotSeconds`.
  var bodyBars: Int
  var outroBars: Int
  var intro: [Note]
  var body: [Note]
  var outro: [Note]
  var oneShotSeconds = 0.0
  var mix = Mix()

  var framesPerBeat: Int { sampleRateHz * 60 / beatsPerMinute }
  var framesPerBar: Int { framesPerBeat * beatsPerBar }
  var isLoop: Bool { bodyBars > 0 }
  var loopStartFrame: Int { introBars * framesPerBar }
  var loopLengthFrames: Int { bodyBars * framesPerBar }

  var tags: [(String, String)] {
    var tags = [
      ("TITLE", title), ("ARTIST", "Leitmotif"), ("ALBUM", "Leitmotif default soundtrack"), ("GENRE", "Game"),
      ("MOOD", mood), ("BPM", String(beatsPerMinute)), ("METER", String(beatsPerBar)),
    ]
    if isLoop {
      tags += [("LOOPSTART", String(loopStartFrame)), ("LOOPLENGTH", String(loopLengthFrames))]
    }
    tags.append(("COMMENT", "Composed and synthesised by leitmotif-compose; CC0"))
    return tags
  }
}

/// What rendering produced: interleaved stereo samples and a few measurements for the report.
struct RenderedPiece {
  var interleaved: [Float]
  var frameCount: Int
  var peak: Float
  var rmsDecibels: Double
}

enum Renderer {
  /// Seconds the effects ring after the last note of a file.
  static let ringOutSeconds = 2.5
  /// Frames over which the intro crossfades into the body's end.
  static let introCrossfadeFrames = 2_400

  static func render(_ piece: Piece) -> RenderedPiece {
    let bar = piece.framesPerBar
    var placed: [(Note, Int)] = piece.intro.map { ($0, 0) }
    let totalFrames: Int
    if piece.isLoop {
      let bodyStart = piece.loopStartFrame
      placed += piece.body.map { ($0, bodyStart) }
      placed += piece.body.map { ($0, bodyStart + piece.loopLengthFrames) }
      placed += piece.outro.map { ($0, bodyStart + 2 * piece.loopLengthFrames) }
      totalFrames = bodyStart + 2 * piece.loopLengthFrames + piece.outroBars * bar + Int(ringOutSeconds * sampleRate)
    } else {
      totalFrames = Int(piece.oneShotSeconds * sampleRate)
    }
    let timeline = mixdown(placed, piece: piece, frameCount: totalFrames)

    var file: StereoBuffer
    if piece.isLoop {
      let introFrames = piece.loopStartFrame
      let secondBody = introFrames + piece.loopLengthFrames
      let fileFrames = totalFrames - piece.loopLengthFrames
      file = StereoBuffer(frameCount: fileFrames)
      for frame in 0..<fileFrames {
        let source = frame < introFrames ? frame : frame + piece.loopLengthFrames
        file.left[frame] = timeline.left[source]
        file.right[frame] = timeline.right[source]
      }
      // The intro's end fades into the body's end, which is what precedes the body's start.
      for offset in 0..<introCrossfadeFrames {
        let frame = introFrames - introCrossfadeFrames + offset
        let weight = Float(offset + 1) / Float(introCrossfadeFrames)
        let bodyEnd = secondBody + piece.loopLengthFrames - introCrossfadeFrames + offset
        file.left[frame] = file.left[frame] * (1 - weight) + timeline.left[bodyEnd] * weight
        file.right[frame] = file.right[frame] * (1 - weight) + timeline.right[bodyEnd] * weight
      }
    } else {
      file = timeline
    }
    fadeOut(&file, seconds: 0.4)

    // Loudness: the loop body (or the whole one-shot) is scaled to the target RMS, then peaks
    // above -4.4 dBFS are rounded off (memoryless, so the loop seam stays seamless).
    let measured =
      piece.isLoop
      ? rms(file, range: piece.loopStartFrame..<(piece.loopStartFrame + piece.loopLengthFrames))
      : rms(file, range: 0..<min(file.frameCount, Int(sampleRate * 1.5)))
    let gain = Float(pow(10, piece.mix.targetRMSDecibels / 20) / max(measured, 1e-9))
    var interleaved = [Float](repeating: 0, count: file.frameCount * 2)
    var peak: Float = 0
    for frame in 0..<file.frameCount {
      let left = softClip(file.left[frame] * gain)
      let right = softClip(file.right[frame] * gain)
      interleaved[2 * frame] = left
      interleaved[2 * frame + 1] = right
      peak = max(peak, abs(left), abs(right))
    }
    let finalRMS = measured * Double(gain)
    return RenderedPiece(
      interleaved: interleaved, frameCount: file.frameCount, peak: peak, rmsDecibels: 20 * log10(finalRMS))
  }

  /// Renders every note into the dry, reverb and delay buses and mixes the effects back in.
  private static func mixdown(_ placed: [(Note, Int)], piece: Piece, frameCount: Int) -> StereoBuffer {
    var dry = StereoBuffer(frameCount: frameCount)
    var reverbSend = StereoBuffer(frameCount: frameCount)
    var delaySend = StereoBuffer(frameCount: frameCount)
    let secondsPerBeat = 60 / Double(piece.beatsPerMinute)
    for (note, offsetFrames) in placed {
      let samples = renderVoice(
        VoiceNote(
          timbre: note.instrument.timbre, pitch: note.pitch, gateSeconds: note.lengthBeats * secondsPerBeat,
          velocity: note.velocity, brightness: note.instrument.brightness, seed: note.seed))
      let start = offsetFrames + Int((note.startBeat * Double(piece.framesPerBeat)).rounded())
      let pan = note.instrument.pan + note.panOffset
      let gain = note.instrument.gain
      dry.add(samples, at: start, gain: gain, pan: pan)
      if note.instrument.reverbSend > 0 {
        reverbSend.add(samples, at: start, gain: gain * note.instrument.reverbSend, pan: pan)
      }
      if note.instrument.delaySend > 0 {
        delaySend.add(samples, at: start, gain: gain * note.instrument.delaySend, pan: pan)
      }
    }
    let delayFrames = Int(piece.mix.delayBeats * Double(piece.framesPerBeat))
    let echoes = PingPongDelay(delayFrames: delayFrames, feedback: piece.mix.delayFeedback).process(delaySend)
    for frame in 0..<frameCount {
      reverbSend.left[frame] += echoes.left[frame] * 0.5
      reverbSend.right[frame] += echoes.right[frame] * 0.5
    }
    let room = Reverb(roomSize: piece.mix.reverbRoomSize, damping: piece.mix.reverbDamping).process(reverbSend)
    let level = Float(piece.mix.reverbLevel)
    for frame in 0..<frameCount {
      dry.left[frame] += echoes.left[frame] + room.left[frame] * level
      dry.right[frame] += echoes.right[frame] + room.right[frame] * level
    }
    return dry
  }

  private static func fadeOut(_ buffer: inout StereoBuffer, seconds: Double) {
    let frames = min(buffer.frameCount, Int(seconds * sampleRate))
    for offset in 0..<frames {
      let frame = buffer.frameCount - frames + offset
      let weight = Float(frames - offset - 1) / Float(frames)
      buffer.left[frame] *= weight
      buffer.right[frame] *= weight
    }
  }

  private static func rms(_ buffer: StereoBuffer, range: Range<Int>) -> Double {
    var sum = 0.0
    for frame in range {
      sum += Double(buffer.left[frame] * buffer.left[frame] + buffer.right[frame] * buffer.right[frame])
    }
    return (sum / Double(2 * max(range.count, 1))).squareRoot()
  }

  /// Linear below 0.6, then a tanh knee that never exceeds 0.8 (-1.9 dBFS, leaving room for the
  /// Vorbis encoder's overshoot under -1 dBFS).
  static func softClip(_ sample: Float) -> Float {
    let threshold: Float = 0.6
    let ceiling: Float = 0.8
    let magnitude = abs(sample)
    guard magnitude > threshold else { return sample }
    let knee = ceiling - threshold
    let shaped = threshold + knee * Float(tanh(Double((magnitude - threshold) / knee)))
    return sample < 0 ? -shaped : shaped
  }

  /// Writes a rendered piece to `directory` as Ogg Vorbis, named and tagged as `piece` says.
  static func write(_ rendered: RenderedPiece, of piece: Piece, to directory: String, quality: Float) throws {
    let path = directory + "/" + piece.fileName
    try VorbisEncoder.encode(
      samples: rendered.interleaved, format: PCMFormat(sampleRate: sampleRateHz, channelCount: 2), tags: piece.tags,
      quality: quality, to: path)
  }
}
