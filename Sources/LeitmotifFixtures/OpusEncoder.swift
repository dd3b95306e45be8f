import COpus
import CVorbisEnc
import Foundation

/// Writes Ogg Opus files for tests and benchmarks: libopus's encoder (the only file that calls
/// it) in 20 ms packets, put into Ogg pages with libogg, with the two headers RFC 7845 asks for
/// (OpusHead with the encoder's pre-skip, OpusTags with the tags). The input must be 48 kHz
/// (what the tests need; Opus itself always decodes at 48 kHz). The last page's granule position
/// marks the real end, so a decoder trims the padding of the last packet: the file decodes to
/// exactly as many frames as went in. Files with different `serial`s written one after the other
/// make a chained file.
public enum OpusEncoder {
  public struct Error: Swift.Error, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "\(path): cannot write Opus: \(reason)" }
  }

  public static func encode(
    samples: [Float], channels: Int, tags: [(String, String)] = [], bitrate: Int = 128_000,
    serial: Int32 = 0x4C4D_4F50, to path: String
  ) throws(Error) {
    guard channels == 1 || channels == 2 else { throw Error(path: path, reason: "1 or 2 channels") }
    var code: Int32 = 0
    guard let encoder = opus_encoder_create(48_000, Int32(channels), OPUS_APPLICATION_AUDIO, &code), code == OPUS_OK
    else { throw Error(path: path, reason: "opus_encoder_create failed (\(code))") }
    defer { opus_encoder_destroy(encoder) }
    _ = lm_opus_set_bitrate(encoder, Int32(bitrate))
    var lookahead: Int32 = 312
    _ = lm_opus_get_lookahead(encoder, &lookahead)
    let preSkip = Int(lookahead)

    let stream = UnsafeMutablePointer<ogg_stream_state>.allocate(capacity: 1)
    defer { stream.deallocate() }
    // "LMOP" unless told: the links of a chained file (files written one after the other)
    // need serial numbers of their own (RFC 3533).
    ogg_stream_init(stream, serial)
    defer { ogg_stream_clear(stream) }
    var output = Data()
    func write(_ page: ogg_page) {
      output.append(page.header, count: page.header_len)
      output.append(page.body, count: page.body_len)
    }
    func packet(_ bytes: [UInt8], number: Int64, granule: Int64, first: Bool = false, last: Bool = false) {
      var bytes = bytes
      bytes.withUnsafeMutableBufferPointer { buffer in
        var packet = ogg_packet(
          packet: buffer.baseAddress, bytes: buffer.count, b_o_s: first ? 1 : 0, e_o_s: last ? 1 : 0,
          granulepos: granule, packetno: number)
        ogg_stream_packetin(stream, &packet)
      }
    }
    func little(_ value: Int, bytes: Int) -> [UInt8] { (0..<bytes).map { UInt8((value >> (8 * $0)) & 0xFF) } }

    // RFC 7845: OpusHead (version 1, channels, pre-skip, input rate, gain 0, mapping family 0).
    let head =
      Array("OpusHead".utf8) + [1, UInt8(channels)] + little(preSkip, bytes: 2) + little(48_000, bytes: 4)
      + [0, 0, 0]
    packet(head, number: 0, granule: 0, first: true)
    var page = ogg_page()
    while ogg_stream_flush(stream, &page) != 0 { write(page) }
    let vendor = Array("Leitmotif test material".utf8)
    var comments = Array("OpusTags".utf8) + little(vendor.count, bytes: 4) + vendor + little(tags.count, bytes: 4)
    for (name, value) in tags {
      let entry = Array("\(name)=\(value)".utf8)
      comments += little(entry.count, bytes: 4) + entry
    }
    packet(comments, number: 1, granule: 0)
    while ogg_stream_flush(stream, &page) != 0 { write(page) }

    // Audio: 960-frame packets (20 ms), the input padded with silence to whole packets, and the
    // encoder's lookahead more, so the last real sample comes out.
    let frames = samples.count / channels
    let packetFrames = 960
    let padded = ((frames + preSkip + packetFrames - 1) / packetFrames) * packetFrames
    var input = samples + [Float](repeating: 0, count: (padded - frames) * channels)
    var encoded = [UInt8](repeating: 0, count: 4000)
    var number: Int64 = 2
    var done = 0
    while done < padded {
      let size = input.withUnsafeMutableBufferPointer { buffer in
        opus_encode_float(
          encoder, buffer.baseAddress! + done * channels, Int32(packetFrames), &encoded, Int32(encoded.count))
      }
      guard size > 0 else { throw Error(path: path, reason: "opus_encode_float failed (\(size))") }
      done += packetFrames
      let last = done >= padded
      // The granule position counts output samples including the pre-skip; on the last page it
      // is the real end, which trims the padding.
      let granule = Int64(last ? preSkip + frames : done)
      packet(Array(encoded[0..<Int(size)]), number: number, granule: granule, last: last)
      number += 1
      while ogg_stream_pageout(stream, &page) != 0 { write(page) }
    }
    while ogg_stream_flush(stream, &page) != 0 { write(page) }
    input.removeAll()
    do { try output.write(to: URL(fileURLWithPath: path)) } catch {
      throw Error(path: path, reason: "\(error)")
    }
  }
}
