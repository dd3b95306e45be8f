#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Paths are bytes on Linux; Leitmotif's paths are `String`s. This is where the two meet.
///
/// A file name need not be valid UTF-8: an old rip made on a Latin-1 system names its files
/// `Caf\xE9.mp3`. A Swift `String` cannot hold such bytes, and decoding them with replacement
/// characters would lose them (the file could no longer be opened). So a path Leitmotif reads
/// from the file system (a folder walk, `realpath`, a playlist, a command line) is turned into a
/// `String` by `string(decoding:)`: valid UTF-8 stays as it is, and each byte that is not part of
/// valid UTF-8 becomes one scalar of a private-use range, U+10FC80 to U+10FCFF (byte 0x80 to
/// 0xFF; bytes below 0x80 are always valid). Every place that hands a path to the kernel goes
/// through `withCString(_:_:)`, which turns those scalars back into their bytes, so the file
/// opens exactly as named; `displayed(_:)` shows them as U+FFFD for people.
///
/// The mapping is exact both ways: a valid name that itself contains a scalar of that range
/// (plane 16's private use area: no font or keyboard produces it) is written byte by byte too,
/// so `bytes(of: string(decoding: b)) == b` for every byte string `b` without NUL. This is the
/// idea of Python's PEP 383 ("surrogateescape"), which escapes to lone surrogates; Swift's
/// `String` cannot hold those, hence a private-use range. Paths that are valid UTF-8 (almost
/// all) are unchanged, so `withCString` costs one scan of the bytes and no copy for them.
///
/// Thread safety: pure functions.
public enum FileSystemPath {
  /// The first scalar of the escape range: byte `b` (0x80...0xFF) is `escapeBase + b`.
  static let escapeBase: UInt32 = 0x10FC00
  /// The UTF-8 lead bytes of the escape scalars (U+10FC80...U+10FCFF encode as F4 8F B2 80 to
  /// F4 8F B3 BF): a path without 0xF4 holds no escape, which is the fast path.
  private static let escapeLead: UInt8 = 0xF4

  /// The `String` that stands for the path bytes `bytes` (see the type's comment).
  public static func string(decoding bytes: some Collection<UInt8>) -> String {
    if let valid = String(validating: bytes, as: UTF8.self), !containsEscapeScalar(valid) { return valid }
    var scalars = String.UnicodeScalarView()
    var index = bytes.startIndex
    while index != bytes.endIndex {
      let (scalar, length) = decodeOne(bytes, at: index)
      let next = bytes.index(index, offsetBy: length)
      if let scalar, !isEscape(scalar.value) {
        scalars.append(scalar)
      } else {
        // Not valid UTF-8 here (one byte), or a valid scalar of the escape range (which must be
        // escaped too, so the mapping stays one to one): each byte becomes its escape.
        for byte in bytes[index..<next] { scalars.append(Unicode.Scalar(escapeBase + UInt32(byte))!) }
      }
      index = next
    }
    return String(scalars)
  }

  /// The `String` for a NUL-terminated C path (from `realpath`, `readdir`, `argv`).
  public static func string(cString: UnsafePointer<CChar>) -> String {
    string(decoding: UnsafeRawBufferPointer(start: cString, count: strlen(cString)).bindMemory(to: UInt8.self))
  }

  /// The exact bytes `path` stands for.
  public static func bytes(of path: String) -> [UInt8] {
    guard isEscaped(path) else { return Array(path.utf8) }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(path.utf8.count)
    for scalar in path.unicodeScalars {
      if isEscape(scalar.value) {
        bytes.append(UInt8(scalar.value - escapeBase))
      } else {
        bytes.append(contentsOf: UTF8.encode(scalar)!)
      }
    }
    return bytes
  }

  /// Calls `body` with `path` as the NUL-terminated bytes the kernel knows it by. Every
  /// `open`, `stat`, `opendir`, `realpath` and `inotify_add_watch` of a path Leitmotif got from
  /// the file system goes through here.
  public static func withCString<Result>(_ path: String, _ body: (UnsafePointer<CChar>) -> Result) -> Result {
    guard isEscaped(path) else { return path.withCString(body) }
    var bytes = bytes(of: path)
    bytes.append(0)
    return bytes.withUnsafeBufferPointer { buffer in
      buffer.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
    }
  }

  /// `path` for people: each byte that was not valid UTF-8 shown as U+FFFD (the replacement
  /// character), the way file managers and `ls` in a UTF-8 locale show it.
  public static func displayed(_ path: String) -> String {
    guard isEscaped(path) else { return path }
    var shown = String.UnicodeScalarView()
    for scalar in path.unicodeScalars {
      shown.append(isEscape(scalar.value) ? "\u{FFFD}" : scalar)
    }
    return String(shown)
  }

  /// Whether `path` holds bytes that are not valid UTF-8 (so `displayed` differs from it and
  /// only `withCString` or `bytes(of:)` names the file exactly).
  public static func isEscaped(_ path: String) -> Bool {
    path.utf8.contains(escapeLead) && containsEscapeScalar(path)
  }

  /// `realpath(3)` of `path`, or nil (with `errno` set) when it does not resolve.
  public static func realPath(_ path: String) -> String? {
    withCString(path) { pointer -> String? in
      guard let resolved = realpath(pointer, nil) else { return nil }
      defer { free(resolved) }
      return string(cString: resolved)
    }
  }

  /// A `file://` URL for `path` that names its exact bytes: every byte outside the unreserved
  /// ASCII set percent-encoded (`/music/Caf\xE9.mp3` is `file:///music/Caf%E9.mp3`), as
  /// RFC 8089 and the freedesktop.org file-URI convention write file names that are not UTF-8.
  public static func fileURLString(_ path: String) -> String {
    var url = "file://"
    for byte in bytes(of: path) {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
        UInt8(ascii: "~"), UInt8(ascii: "/"):
        url.unicodeScalars.append(Unicode.Scalar(byte))
      default:
        url += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
      }
    }
    return url
  }

  /// The path of a `file://` URL (`file:///music/Caf%E9.mp3`, `file://localhost/...`), its
  /// percent escapes decoded to bytes (which need not be UTF-8), or nil for another host. The
  /// inverse of `fileURLString(_:)`; Foundation's `URL.path` cannot give back bytes that are not UTF-8.
  public static func path(fileURL url: String) -> String? {
    var rest = bytes(of: url)[...]
    guard rest.count > 7, String(decoding: rest.prefix(7), as: UTF8.self).lowercased() == "file://" else { return nil }
    rest = rest.dropFirst(7)
    if rest.first != UInt8(ascii: "/") {
      guard rest.count >= 10, String(decoding: rest.prefix(9), as: UTF8.self).lowercased() == "localhost",
        rest[rest.startIndex + 9] == UInt8(ascii: "/")
      else { return nil }
      rest = rest.dropFirst(9)
    }
    var decoded: [UInt8] = []
    var index = rest.startIndex
    while index < rest.endIndex {
      let byte = rest[index]
      if byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
      if byte == UInt8(ascii: "%"), index + 2 < rest.endIndex,
        let value = UInt8(String(decoding: rest[(index + 1)...(index + 2)], as: UTF8.self), radix: 16)
      {
        decoded.append(value)
        index += 3
      } else {
        decoded.append(byte)
        index += 1
      }
    }
    return string(decoding: decoded)
  }

  // Path arithmetic, as NSString's path methods did (FoundationEssentials has no NSString, and
  // its URL would not keep the bytes of a name that is not UTF-8). On the UTF-8 bytes: the kernel
  // splits at each "/" byte, even one a combining mark follows (one `Character` with it), and an
  // escaped byte is never taken for "/" or "." (both ASCII).

  private static let slashByte = UInt8(ascii: "/")

  /// The last component of `path`, trailing slashes ignored: `/music/a.ogg` gives `a.ogg`,
  /// `/music/` gives `music`, `/` gives `/` (NSString's `lastPathComponent`).
  package static func lastComponent(_ path: String) -> String {
    let bytes = withoutTrailingSlashes(path.utf8[...])
    guard bytes.count > 1, let slash = bytes.lastIndex(of: slashByte) else {
      return String(decoding: bytes, as: UTF8.self)
    }
    return String(decoding: bytes[bytes.index(after: slash)...], as: UTF8.self)
  }

  /// `path` without its last component and the slashes before it: `/music/a.ogg` gives
  /// `/music`, `/music` gives `/`, `a.ogg` gives the empty string (NSString's
  /// `deletingLastPathComponent`, which on Linux crashes on the last of these).
  package static func deletingLastComponent(_ path: String) -> String {
    let bytes = withoutTrailingSlashes(path.utf8[...])
    guard bytes.count > 1 || bytes.first != slashByte else { return "/" }
    guard let slash = bytes.lastIndex(of: slashByte) else { return "" }
    let parent = withoutTrailingSlashes(bytes[...slash])
    return String(decoding: parent, as: UTF8.self)
  }

  /// `name` (one component) without its extension, the part from its last dot: `a.tar.gz` gives
  /// `a.tar`; a name whose only dot is its first (`.hidden`), and `.` and `..`, have none
  /// (NSString's `deletingPathExtension` of a file name).
  package static func deletingExtension(_ name: String) -> String {
    guard name != ".", name != "..", let dot = name.utf8.lastIndex(of: UInt8(ascii: ".")),
      dot != name.utf8.startIndex
    else { return name }
    return String(decoding: name.utf8[..<dot], as: UTF8.self)
  }

  /// `bytes` without the slashes at its end; a lone `/` stays (and the empty path).
  private static func withoutTrailingSlashes(_ bytes: Substring.UTF8View) -> Substring.UTF8View {
    guard let last = bytes.lastIndex(where: { $0 != slashByte }) else { return bytes.prefix(1) }
    return bytes[...last]
  }

  private static func isEscape(_ value: UInt32) -> Bool { value >= escapeBase + 0x80 && value <= escapeBase + 0xFF }

  private static func containsEscapeScalar(_ text: String) -> Bool {
    text.utf8.contains(escapeLead) && text.unicodeScalars.contains { isEscape($0.value) }
  }

  /// Decodes one UTF-8 scalar at `index`: the scalar and its length in bytes, or nil when the
  /// bytes there are not valid UTF-8.
  private static func decodeOne<Bytes: Collection<UInt8>>(
    _ bytes: Bytes, at index: Bytes.Index
  ) -> (Unicode.Scalar?, Int) {
    var iterator = bytes[index...].makeIterator()
    var decoder = UTF8()
    switch decoder.decode(&iterator) {
    case .scalarValue(let scalar): return (scalar, UTF8.width(scalar))
    case .emptyInput, .error: return (nil, 1)
    }
  }
}
