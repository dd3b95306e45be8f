import CFLAC
import LeitmotifDecoding

#if canImport(Glibc)
  import Glibc
#endif

/// Writes FLAC files for tests and benchmarks with libFLAC's encoder (the only file that calls
/// it): interleaved floats in, `bitsPerSample`-bit integers out (rounded, clamped), tags as a
/// Vorbis comment block, a cover as a PICTURE block, and the STREAMINFO length filled in (or, with `unknownLength`, left at
/// 0, as some streaming encoders leave it).
public enum FLACEncoder {
  public struct Error: Swift.Error, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "\(path): cannot write FLAC: \(reason)" }
  }

  public static func encode(
    samples: [Float], format: PCMFormat, bitsPerSample: Int = 16, tags: [(String, String)] = [],
    picture: (mimeType: String, data: [UInt8])? = nil, unknownLength: Bool = false, to path: String
  ) throws(Error) {
    guard let encoder = FLAC__stream_encoder_new() else { throw Error(path: path, reason: "no encoder") }
    defer { FLAC__stream_encoder_delete(encoder) }
    let channels = format.channelCount
    let frames = samples.count / channels
    FLAC__stream_encoder_set_channels(encoder, UInt32(channels))
    FLAC__stream_encoder_set_bits_per_sample(encoder, UInt32(bitsPerSample))
    FLAC__stream_encoder_set_sample_rate(encoder, UInt32(format.sampleRate))
    FLAC__stream_encoder_set_compression_level(encoder, 5)
    FLAC__stream_encoder_set_total_samples_estimate(encoder, unknownLength ? 0 : UInt64(frames))
    var comment: UnsafeMutablePointer<FLAC__StreamMetadata>?
    if !tags.isEmpty {
      comment = FLAC__metadata_object_new(FLAC__METADATA_TYPE_VORBIS_COMMENT)
      for (name, value) in tags {
        var entry = FLAC__StreamMetadata_VorbisComment_Entry()
        guard FLAC__metadata_object_vorbiscomment_entry_from_name_value_pair(&entry, name, value) != 0,
          FLAC__metadata_object_vorbiscomment_append_comment(comment, entry, 0) != 0
        else { throw Error(path: path, reason: "the tag \(name) cannot be written") }
      }
    }
    defer { if let comment { FLAC__metadata_object_delete(comment) } }
    // A PICTURE block: the front cover.
    var pictureBlock: UnsafeMutablePointer<FLAC__StreamMetadata>?
    if let picture {
      pictureBlock = FLAC__metadata_object_new(FLAC__METADATA_TYPE_PICTURE)
      var data = picture.data
      var mime = Array(picture.mimeType.utf8CString)
      var description = Array("Cover".utf8) + [0]
      guard let pictureBlock, FLAC__metadata_object_picture_set_mime_type(pictureBlock, &mime, 1) != 0,
        FLAC__metadata_object_picture_set_description(pictureBlock, &description, 1) != 0,
        FLAC__metadata_object_picture_set_data(pictureBlock, &data, UInt32(data.count), 1) != 0
      else { throw Error(path: path, reason: "the picture cannot be written") }
      pictureBlock.pointee.data.picture.type = FLAC__STREAM_METADATA_PICTURE_TYPE_FRONT_COVER
    }
    defer { if let pictureBlock { FLAC__metadata_object_delete(pictureBlock) } }
    // libFLAC keeps the pointer to the list until the encoder finishes: it must outlive the call.
    let present = [comment, pictureBlock].compactMap { $0 }
    let blocks = UnsafeMutablePointer<UnsafeMutablePointer<FLAC__StreamMetadata>?>.allocate(capacity: 2)
    defer { blocks.deallocate() }
    for (index, block) in present.enumerated() { (blocks + index).initialize(to: block) }
    if !present.isEmpty {
      guard FLAC__stream_encoder_set_metadata(encoder, blocks, UInt32(present.count)) != 0 else {
        throw Error(path: path, reason: "the tags cannot be set")
      }
    }
    guard FLAC__stream_encoder_init_file(encoder, path, nil, nil) == FLAC__STREAM_ENCODER_INIT_STATUS_OK else {
      throw Error(path: path, reason: "the file cannot be created")
    }
    let scale = Float((1 << (bitsPerSample - 1)) - 1)
    let limit = Int32((1 << (bitsPerSample - 1)) - 1)
    let integers = samples.map { sample -> Int32 in
      max(-limit - 1, min(limit, Int32((max(-1, min(1, sample)) * scale).rounded())))
    }
    let ok = integers.withUnsafeBufferPointer {
      FLAC__stream_encoder_process_interleaved(encoder, $0.baseAddress, UInt32(frames)) != 0
    }
    guard ok, FLAC__stream_encoder_finish(encoder) != 0 else {
      throw Error(path: path, reason: "encoding failed")
    }
    if unknownLength { try clearLength(path) }
  }

  /// Sets STREAMINFO's total sample count to 0 ("unknown") in place: bytes 22 to 25 of the file
  /// hold its low 32 bits and the low 4 bits of byte 21 its high ones (after "fLaC" and the
  /// block header).
  private static func clearLength(_ path: String) throws(Error) {
    guard let file = fopen(path, "r+b") else { throw Error(path: path, reason: "cannot reopen") }
    defer { fclose(file) }
    var head = [UInt8](repeating: 0, count: 26)
    guard fread(&head, 1, 26, file) == 26 else { throw Error(path: path, reason: "too short") }
    head[21] &= 0xF0
    for index in 22..<26 { head[index] = 0 }
    fseek(file, 0, SEEK_SET)
    guard fwrite(head, 1, 26, file) == 26 else { throw Error(path: path, reason: "cannot rewrite STREAMINFO") }
  }
}
