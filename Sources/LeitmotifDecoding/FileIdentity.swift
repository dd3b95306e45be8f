#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// What identifies one version of a file, cheaply (a stat): a cue file's watcher and the
/// preloaded audio (is the file still the one that was decoded?) both ask.
package struct FileIdentity: Equatable, Sendable {
  package var modified: timespec?
  package var size: Int64 = -1
  package var inode: UInt64 = 0
  /// Whether the path named something when it was looked at.
  package var exists: Bool { modified != nil }

  package init(path: String) {
    // A mounted file changes when the game mounts a new version: its generation stands in for
    // the time it was written.
    if let generation = MountedFiles.generation(of: path) {
      modified = timespec(tv_sec: generation, tv_nsec: 0)
      return
    }
    var info = stat()
    guard FileSystemPath.withCString(path, { stat($0, &info) }) == 0 else { return }
    modified = info.st_mtim
    size = Int64(info.st_size)
    inode = UInt64(info.st_ino)
  }

  package static func == (a: FileIdentity, b: FileIdentity) -> Bool {
    a.modified?.tv_sec == b.modified?.tv_sec && a.modified?.tv_nsec == b.modified?.tv_nsec && a.size == b.size
      && a.inode == b.inode
  }
}
