#if canImport(Glibc)
  import Glibc
#endif

/// A fresh, empty directory under `$TMPDIR` (or /tmp) that is deleted with everything in it when
/// the value is released. For tests that write fixture files.
///
/// Thread safety: creating and reading `path` is safe anywhere; remove files from one thread.
public final class TemporaryDirectory: Sendable {
  public let path: String

  /// - Parameter prefix: the start of the directory's name, to tell whose it is in /tmp.
  /// - Throws: `TemporaryDirectory.CreationError` with `errno` when `mkdtemp` fails.
  public init(prefix: String = "leitmotif-test") throws {
    let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
    var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
      throw CreationError(template: "\(base)/\(prefix)-XXXXXX", errno: errno)
    }
    path = String(cString: made)
  }

  public struct CreationError: Error, CustomStringConvertible {
    public var template: String
    public var errno: Int32
    public var description: String { "cannot create a temporary directory \(template): errno \(errno)" }
  }

  /// The path of `name` inside the directory (the file is not created).
  public func file(_ name: String) -> String { path + "/" + name }

  deinit { Self.removeTree(path) }

  /// Deletes `path` and everything under it, without following symbolic links. Restores search
  /// permission on directories a test took it away from, so they can be emptied.
  private static func removeTree(_ path: String) {
    var status = stat()
    guard lstat(path, &status) == 0 else { return }
    if (status.st_mode & S_IFMT) == S_IFDIR {
      chmod(path, 0o700)
      if let directory = opendir(path) {
        var names: [String] = []
        while let entry = readdir(directory) {
          let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
          }
          if name != "." && name != ".." { names.append(name) }
        }
        closedir(directory)
        for name in names { removeTree(path + "/" + name) }
      }
      rmdir(path)
    } else {
      unlink(path)
    }
  }
}
