import CLeitmotifHeader
import Leitmotif

#if canImport(Glibc)
  import Glibc
#endif

/// A failed C call: the code it returns and the sentence `lm_engine_last_error` gives.
struct CAPIError: Error {
  var code: lm_error
  var message: String

  /// Messages quote what the caller passed (a cue name, a parameter, a path): one longer than
  /// 1,000 characters is cut in the middle, so a megabyte of garbage passed in does not come back
  /// from `lm_engine_last_error` whole.
  init(_ code: lm_error, _ message: String) {
    self.code = code
    self.message = message.cutInMiddle(limit: 1_000)
  }

  static func invalidArgument(_ message: String) -> CAPIError { CAPIError(LM_ERROR_INVALID_ARGUMENT, message) }
  static func wrongMode(_ message: String) -> CAPIError { CAPIError(LM_ERROR_WRONG_MODE, message) }
}

/// Strings coming in from C: NULL, and bytes that are not UTF-8, are errors naming the argument.
enum CString {
  static func required(_ pointer: UnsafePointer<CChar>?, _ name: String) throws(CAPIError) -> String {
    guard let pointer else { throw .invalidArgument("\(name) is NULL") }
    guard let string = String(validatingCString: pointer) else {
      throw .invalidArgument("\(name) is not valid UTF-8")
    }
    return string
  }

  static func optional(_ pointer: UnsafePointer<CChar>?, _ name: String) throws(CAPIError) -> String? {
    guard let pointer else { return nil }
    return try required(pointer, name)
  }

  static func nonEmpty(_ pointer: UnsafePointer<CChar>?, _ name: String) throws(CAPIError) -> String {
    let string = try required(pointer, name)
    guard !string.isEmpty else { throw .invalidArgument("\(name) is empty") }
    return string
  }

  /// The bytes of a C string that must be non-empty UTF-8, without copying them (so without
  /// allocating: `lm_post` and `lm_set_parameter` may run on a game's audio thread). Valid while
  /// the caller's string is. `name` is made only for the error message.
  static func utf8(_ pointer: UnsafePointer<CChar>?, _ name: @autoclosure () -> String, allowsEmpty: Bool = false)
    throws(CAPIError) -> UnsafeRawBufferPointer
  {
    guard let pointer else { throw .invalidArgument("\(name()) is NULL") }
    let bytes = UnsafeRawBufferPointer(start: pointer, count: strlen(pointer))
    guard allowsEmpty || bytes.count > 0 else { throw .invalidArgument("\(name()) is empty") }
    guard isUTF8(bytes) else { throw .invalidArgument("\(name()) is not valid UTF-8") }
    return bytes
  }

  /// Whether `bytes` are well-formed UTF-8 (no overlong forms, surrogates or values past
  /// U+10FFFF), as `String(validatingCString:)` decides, without making a String.
  static func isUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
    var index = 0
    while index < bytes.count {
      let lead = bytes[index]
      if lead < 0x80 {
        index += 1
        continue
      }
      let trailing: Int
      var scalar: UInt32
      let smallest: UInt32
      if lead & 0xE0 == 0xC0 {
        (trailing, scalar, smallest) = (1, UInt32(lead & 0x1F), 0x80)
      } else if lead & 0xF0 == 0xE0 {
        (trailing, scalar, smallest) = (2, UInt32(lead & 0x0F), 0x800)
      } else if lead & 0xF8 == 0xF0 {
        (trailing, scalar, smallest) = (3, UInt32(lead & 0x07), 0x1_0000)
      } else {
        return false
      }
      guard index + trailing < bytes.count else { return false }
      var next = 1
      while next <= trailing {
        let byte = bytes[index + next]
        guard byte & 0xC0 == 0x80 else { return false }
        scalar = scalar << 6 | UInt32(byte & 0x3F)
        next += 1
      }
      guard scalar >= smallest, scalar <= 0x10_FFFF, scalar < 0xD800 || scalar > 0xDFFF else { return false }
      index += trailing + 1
    }
    return true
  }

  /// A file-system path from C: any bytes but NUL (a folder named on a Latin-1 system is not
  /// UTF-8), kept exact through `FileSystemPath`.
  static func optionalPath(_ pointer: UnsafePointer<CChar>?) -> String? {
    pointer.map { FileSystemPath.string(cString: $0) }
  }

  /// Copies `string` (UTF-8; nil is "") into the caller's buffer of `capacity` bytes (at least
  /// 1), NUL-terminated; a longer one is cut at a UTF-8 character boundary.
  /// - Returns: whether it was cut.
  @discardableResult
  static func copy(_ string: String?, into buffer: UnsafeMutablePointer<CChar>, capacity: Int) -> Bool {
    var string = string ?? ""
    return string.withUTF8 { copy(bytes: $0, into: buffer, capacity: capacity, keepingCharacters: true) }
  }

  /// The same into a fixed-size array of a C struct (which Swift sees as a tuple of CChar).
  static func copy<Field>(_ string: String?, into field: inout Field) -> Bool {
    withUnsafeMutableBytes(of: &field) { raw in
      copy(string, into: raw.baseAddress!.assumingMemoryBound(to: CChar.self), capacity: raw.count)
    }
  }

  /// A path, as the bytes the kernel knows it by (`FileSystemPath`: need not be UTF-8), into a
  /// fixed-size array; cut where it must, since those bytes need not be characters.
  static func copy<Field>(path: String?, into field: inout Field) -> Bool {
    withUnsafeMutableBytes(of: &field) { raw in
      let buffer = raw.baseAddress!.assumingMemoryBound(to: CChar.self)
      guard let path else { return copy(nil, into: buffer, capacity: raw.count) }
      return FileSystemPath.withCString(path) { bytes in
        let count = strlen(bytes)
        return bytes.withMemoryRebound(to: UInt8.self, capacity: count) { start in
          copy(
            bytes: UnsafeBufferPointer(start: start, count: count), into: buffer, capacity: raw.count,
            keepingCharacters: false)
        }
      }
    }
  }

  private static func copy(
    bytes: UnsafeBufferPointer<UInt8>, into buffer: UnsafeMutablePointer<CChar>, capacity: Int,
    keepingCharacters: Bool
  ) -> Bool {
    var count = min(bytes.count, capacity - 1)
    let cut = count < bytes.count
    // Back off from a cut inside a character: bytes 10xxxxxx continue the one before.
    if cut && keepingCharacters { while count > 0 && bytes[count] & 0xC0 == 0x80 { count -= 1 } }
    buffer.withMemoryRebound(to: UInt8.self, capacity: capacity) { out in
      if let start = bytes.baseAddress, count > 0 { out.update(from: start, count: count) }
      out[count] = 0
    }
    return cut
  }

  /// A static, NUL-terminated string for C (string literals are stored with their terminator).
  static func literal(_ string: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(string.utf8Start).assumingMemoryBound(to: CChar.self)
  }
}

/// A C string Leitmotif owns (made with `strdup`, freed with `free`).
struct OwnedCString: @unchecked Sendable {
  let pointer: UnsafeMutablePointer<CChar>

  init(_ string: String) { pointer = strdup(string) }
  func free() { Glibc.free(pointer) }
}

/// Each thread's last error message, for `lm_last_error`: a thread-specific `strdup`ed string,
/// freed when replaced or when the thread ends.
enum ThreadLastError {
  private static let key: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key) { free($0) }
    return key
  }()

  static func set(_ message: String) {
    let previous = pthread_getspecific(key)
    pthread_setspecific(key, strdup(message))
    free(previous)
  }

  static var current: UnsafePointer<CChar> {
    guard let message = pthread_getspecific(key) else { return CString.literal("") }
    return UnsafePointer(message.assumingMemoryBound(to: CChar.self))
  }
}

/// The engine whose callback the calling thread is running (0: none), so that destroying or
/// flushing an engine from inside its own callback is an error instead of a deadlock.
enum CallbackThread {
  private static let key: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
  }()

  static var engine: UInt { UInt(bitPattern: pthread_getspecific(key)) }

  static func running<T>(engine: UInt, _ body: () -> T) -> T {
    let outer = pthread_getspecific(key)
    pthread_setspecific(key, UnsafeRawPointer(bitPattern: engine))
    defer { pthread_setspecific(key, outer) }
    return body()
  }
}
