#if canImport(Glibc)
  import Glibc
#endif

/// Why a file could not be opened or decoded.
///
/// Every error names the file it is about (`path`) and says what went wrong (`reason`);
/// where a C library reported a code, it is kept as `code` so nothing is lost in translation.
/// The C codes are translated into a `Reason` once, in the file that talks to each library.
public struct DecodeError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What went wrong with the file.
  public enum Reason: Sendable, Equatable {
    /// Nothing exists at the path.
    case fileNotFound
    /// The path names a directory, not a file.
    case isDirectory
    /// The file exists but may not be read (permissions).
    case permissionDenied
    /// Reading failed at the operating-system level (`errno`).
    case readFailed(errno: Int32)
    /// The file holds no bytes at all.
    case emptyFile
    /// The content is neither Ogg Vorbis nor MP3; `detected` names what it looks like, if known
    /// (for example "a FLAC file", "a WAV file", "text").
    case unrecognizedFormat(detected: String?)
    /// The header or stream is damaged: the decoder explains how.
    case corrupt(String)
    /// The data ends before the stream does.
    case truncated(String)
    /// A seek target beyond the file's length.
    case seekOutOfRange(frame: Int64, lengthFrames: Int64)
    /// The stream uses something this decoder does not support.
    case unsupported(String)
    /// Trim or loop points asked for do not fit the file (outside it, or empty).
    case pointsOutsideFile(String)
  }

  /// The file the error is about.
  public var path: String
  /// What went wrong.
  public var reason: Reason
  /// The C library's own error code (an `OV_*` or `MPG123_*` value), when one caused this.
  public var code: Int32?

  /// An error about the file at `path`, for `reason`, with the C library's `code` if one caused it.
  public init(path: String, reason: Reason, code: Int32? = nil) {
    self.path = path
    self.reason = reason
    self.code = code
  }

  /// The error in a sentence that names the file and what it looks like.
  public var description: String {
    let what: String
    switch reason {
    case .fileNotFound: what = "no such file"
    case .isDirectory: what = "is a directory, not an audio file"
    case .permissionDenied: what = "permission denied"
    case .readFailed(let errno): what = "read failed: \(String(cString: strerror(errno))) (errno \(errno))"
    case .emptyFile: what = "the file is empty (0 bytes)"
    case .unrecognizedFormat(let detected):
      what = "not Ogg Vorbis, Opus, MP3, FLAC, WAV or AIFF" + (detected.map { ": it looks like \($0)" } ?? "")
    case .corrupt(let why): what = "damaged: \(why)"
    case .truncated(let why): what = "truncated: \(why)"
    case .seekOutOfRange(let frame, let length):
      what = "cannot seek to frame \(frame): the file has \(length) frames"
    case .unsupported(let why): what = "unsupported: \(why)"
    case .pointsOutsideFile(let why): what = "points do not fit the file: \(why)"
    }
    // A path longer than any real one (garbage a game passed) is cut in the middle.
    return "\(FileSystemPath.displayed(path).cutInMiddle(limit: 500)): \(what)" + (code.map { " [code \($0)]" } ?? "")
  }
}
