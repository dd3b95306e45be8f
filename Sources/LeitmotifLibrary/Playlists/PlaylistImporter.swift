import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

#if canImport(Glibc)
  import Glibc
#endif

/// Turns the M3U, M3U8 and PLS files a scan found in the library folders into playlists in the
/// index (`playlists`, `playlist_items`). The scanner calls it at the end of a scan.
///
/// - Entries: M3U/M3U8 lines that are not comments (`#EXTM3U`, `#EXTINF:` and other `#` lines
///   are skipped; `#PLAYLIST:` names the playlist); PLS `FileN=` lines. Absolute paths, paths
///   relative to the playlist's folder, and `file://` URLs.
/// - Each entry is resolved with `realpath` and must lie inside one of the granted folders: a
///   playlist never leads the library outside them (not through `..`, not through a symbolic
///   link). Entries that are missing, outside, or not an item of the index are reported and
///   skipped; the rest keep their order.
/// - Files are streamed a line at a time (a line longer than `maximumLineBytes` is skipped), so
///   a playlist of a million lines costs a million `realpath` calls and little memory; at most
///   `maximumReportedEntries` problems are reported per playlist, then one line with the count.
/// - Each playlist is written in one transaction; playlists in the folders that were not in
///   this scan's list (deleted files) are removed.
package enum PlaylistImporter {
  static let maximumReportedEntries = 20
  static let maximumLineBytes = 16_384

  /// Imports `files` (paths of .m3u, .m3u8 and .pls files) and returns what could not be used.
  static func importPlaylists(_ files: [String], folders: [URL], index: LibraryIndex) -> [ScanFailure] {
    let roots = folders.compactMap { FileSystemPath.realPath($0.path) }
    var failures: [ScanFailure] = []
    var imported: Set<String> = []
    for file in files {
      guard let real = FileSystemPath.realPath(file) else {
        failures.append(ScanFailure(path: file, reason: "the playlist vanished before it could be read"))
        continue
      }
      guard isInside(real, roots) else {
        failures.append(ScanFailure(path: file, reason: "the playlist is outside the library folders: not read"))
        continue
      }
      do {
        if try importPlaylist(at: real, roots: roots, index: index, failures: &failures) { imported.insert(real) }
      } catch {
        failures.append(ScanFailure(path: real, reason: "the playlist could not be stored: \(error)"))
      }
    }
    do {
      try removePlaylists(notIn: imported, roots: roots, index: index)
    } catch {
      failures.append(ScanFailure(path: index.path, reason: "vanished playlists could not be removed: \(error)"))
    }
    return failures
  }

  /// One playlist file. Returns false when the file could not be opened (it is reported).
  private static func importPlaylist(
    at path: String, roots: [String], index: LibraryIndex, failures: inout [ScanFailure]
  ) throws(SQLiteError) -> Bool {
    // Opened without blocking (a FIFO would wait for a writer forever) and only if it is a
    // regular file; then read as usual.
    let descriptor = FileSystemPath.withCString(path) { open($0, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) }
    var info = stat()
    guard descriptor >= 0 else {
      failures.append(
        ScanFailure(path: path, reason: "the playlist cannot be read: \(String(cString: strerror(errno)))"))
      return false
    }
    guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG,
      fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK) == 0,
      let file = fdopen(descriptor, "r")
    else {
      close(descriptor)
      failures.append(ScanFailure(path: path, reason: "the playlist is not a regular file; skipped"))
      return false
    }
    defer { fclose(file) }
    let isPLS = path.lowercased().hasSuffix(".pls")
    let folder = FileSystemPath.deletingLastComponent(path)
    var name = FileSystemPath.displayed(FileSystemPath.deletingExtension(FileSystemPath.lastComponent(path)))
    var problems = 0
    func report(_ line: Int, _ entry: String, _ why: String) {
      problems += 1
      if problems <= maximumReportedEntries {
        failures.append(
          ScanFailure(path: path, reason: "line \(line): \(FileSystemPath.displayed(entry)): \(why); skipped"))
      }
    }

    try index.database.transaction { () throws(SQLiteError) in
      let upsert = try index.database.prepare(
        """
        INSERT INTO playlists(path, name, size, mtime_ns) VALUES (?1, ?2, ?3, ?4)
        ON CONFLICT(path) DO UPDATE SET name = excluded.name, size = excluded.size, mtime_ns = excluded.mtime_ns
        """)
      let modification = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
      try upsert.run([.text(path), .text(name), .integer(Int64(info.st_size)), .integer(modification)])
      let idRow = try index.database.prepare("SELECT id FROM playlists WHERE path = ?")
      try idRow.bind([.text(path)])
      guard try idRow.step(), let playlistID = idRow.integer(0) else { return }
      try index.database.prepare("DELETE FROM playlist_items WHERE playlist_id = ?").run([.integer(playlistID)])
      let insert = try index.database.prepare(
        "INSERT INTO playlist_items(playlist_id, position, persistent_id) VALUES (?, ?, ?)")
      let lookup = try index.database.prepare("SELECT persistent_id FROM items WHERE path = ?")

      var position: Int64 = 0
      var lineNumber = 0
      var buffer = [CChar](repeating: 0, count: maximumLineBytes + 2)
      // Entries already resolved in this playlist (a long playlist repeats itself), up to a bound.
      var resolved: [String: Result<Int64, EntryProblem>] = [:]
      while fgets(&buffer, Int32(buffer.count), file) != nil {
        lineNumber += 1
        var length = strlen(buffer)
        if length == buffer.count - 1 && buffer[length - 1] != 0x0A {
          // Longer than any path: skip the rest of the line.
          var character = fgetc(file)
          while character != EOF && character != 0x0A { character = fgetc(file) }
          report(lineNumber, "(a line of more than \(maximumLineBytes) bytes)", "too long for a path")
          continue
        }
        // Trim in bytes, and skip blank lines and M3U comments before making a String: most
        // lines of a long playlist are #EXTINF lines or entries.
        var start = 0
        if lineNumber == 1 && length >= 3 && buffer[0] == -17 && buffer[1] == -69 && buffer[2] == -65 { start = 3 }
        while length > start
          && (buffer[length - 1] == 0x0A || buffer[length - 1] == 0x0D || buffer[length - 1] == 0x20
            || buffer[length - 1] == 0x09)
        { length -= 1 }
        while start < length && (buffer[start] == 0x20 || buffer[start] == 0x09) { start += 1 }
        if start == length { continue }
        if !isPLS && buffer[start] == 0x23 && !(length - start > 10 && buffer[start + 1] == 0x50) { continue }
        buffer[length] = 0
        // The line's exact bytes: an M3U written on a Latin-1 system names Latin-1 files, and
        // `resolve` tries the bytes as they are before reading them as Latin-1.
        let line = buffer.withUnsafeBufferPointer { pointer in
          FileSystemPath.string(decoding: pointer[start..<length].lazy.map { UInt8(bitPattern: $0) })
        }
        guard let entry = Self.entry(in: line, isPLS: isPLS, name: &name) else { continue }
        let outcome: Result<Int64, EntryProblem>
        if let known = resolved[entry] {
          outcome = known
        } else {
          outcome = try resolveEntry(entry, folder: folder, roots: roots, lookup: lookup)
          if resolved.count < 100_000 { resolved[entry] = outcome }
        }
        switch outcome {
        case .success(let persistentID):
          try insert.run([.integer(playlistID), .integer(position), .integer(persistentID)])
          position += 1
        case .failure(let problem):
          report(lineNumber, entry, problem.reason)
        }
      }
      if problems > maximumReportedEntries {
        failures.append(
          ScanFailure(
            path: path, reason: "\(problems - maximumReportedEntries) more entries skipped (not reported one by one)"))
      }
      // The name may have come from a #PLAYLIST: line.
      try index.database.prepare("UPDATE playlists SET name = ? WHERE id = ?").run([.text(name), .integer(playlistID)])
    }
    return true
  }

  /// Why an entry was skipped.
  package struct EntryProblem: Error {
    var reason: String
  }

  /// The persistent id of the item an entry names, or why there is none.
  private static func resolveEntry(_ entry: String, folder: String, roots: [String], lookup: SQLiteStatement)
    throws(SQLiteError) -> Result<Int64, EntryProblem>
  {
    guard let target = resolve(entry, relativeTo: folder) else {
      return .failure(EntryProblem(reason: entry.contains("://") ? "not a local file" : "no such file"))
    }
    guard isInside(target, roots) else { return .failure(EntryProblem(reason: "outside the library folders")) }
    try lookup.bind([.text(target)])
    guard try lookup.step(), let persistentID = lookup.integer(0) else {
      return .failure(EntryProblem(reason: "not an item of the library (not audio, or not scanned)"))
    }
    return .success(persistentID)
  }

  /// The entry a line names, or nil for comments, directives and other PLS keys.
  package static func entry(in line: String, isPLS: Bool, name: inout String) -> String? {
    guard !line.isEmpty else { return nil }
    if isPLS {
      // FileN=path; [playlist], TitleN=, LengthN=, NumberOfEntries=, Version= are not entries.
      guard line.count > 4, line.prefix(4).lowercased() == "file", let equals = line.firstIndex(of: "=") else {
        return nil
      }
      // (`File2 = path`, spaces around the `=`, is written by some players: it was dropped unsaid.)
      let number = line[line.index(line.startIndex, offsetBy: 4)..<equals].trimmingWhitespace()
      guard !number.isEmpty, number.allSatisfy(\.isNumber) else { return nil }
      let value = line[line.index(after: equals)...].trimmingWhitespace()
      return value.isEmpty ? nil : value
    }
    if line.hasPrefix("#") {
      if line.hasPrefix("#PLAYLIST:") {
        let given = line.dropFirst("#PLAYLIST:".count).trimmingWhitespace()
        // A name is text, not a path: one that is not UTF-8 was written in Latin-1.
        if !given.isEmpty { name = FileSystemPath.isEscaped(given) ? latin1Reading(given) : given }
      }
      return nil
    }
    return line
  }

  /// The real path an entry names (relative entries are relative to the playlist's folder), or
  /// nil when it does not exist or is not a local file.
  ///
  /// An entry's bytes are tried as they are first (the file's name may be those very bytes);
  /// an entry that is not UTF-8 is then read as Latin-1 (a playlist written by an old Windows
  /// player, naming files that have since been renamed to UTF-8).
  package static func resolve(_ entry: String, relativeTo folder: String) -> String? {
    var path = entry
    if entry.lowercased().hasPrefix("file://") {
      guard let local = FileSystemPath.path(fileURL: entry) else { return nil }
      path = local
    } else if entry.contains("://") {
      return nil
    }
    if !path.hasPrefix("/") { path = folder + "/" + path }
    if let real = FileSystemPath.realPath(path) { return real }
    // A playlist written on Windows: `..\Album\01.mp3`, relative, with backslashes.
    if entry.contains("\\"), !entry.contains("/"), !entry.contains(":"),
      let real = FileSystemPath.realPath(folder + "/" + String(entry.map { $0 == "\\" ? "/" : $0 }))
    {
      return real
    }
    guard FileSystemPath.isEscaped(path) else { return nil }
    return FileSystemPath.realPath(latin1Reading(path))
  }

  /// The text `string`'s bytes make when read as Latin-1 (each byte the code point of its value).
  static func latin1Reading(_ string: String) -> String {
    var scalars = String.UnicodeScalarView()
    for byte in FileSystemPath.bytes(of: string) { scalars.append(Unicode.Scalar(byte)) }
    return String(scalars)
  }

  static func isInside(_ path: String, _ roots: [String]) -> Bool {
    roots.contains { root in path == root || path.hasPrefix(root.hasSuffix("/") ? root : root + "/") }
  }

  /// Removes the playlists inside `roots` whose file was not imported this time.
  private static func removePlaylists(notIn imported: Set<String>, roots: [String], index: LibraryIndex)
    throws(SQLiteError)
  {
    let stored = try index.database.prepare("SELECT id, path FROM playlists").rows()
    let gone: [Int64] = stored.compactMap { row in
      guard case .integer(let id) = row[0], case .text(let path) = row[1] else { return nil }
      return !imported.contains(path) && isInside(path, roots) ? id : nil
    }
    guard !gone.isEmpty else { return }
    try index.database.transaction { () throws(SQLiteError) in
      let deleteItems = try index.database.prepare("DELETE FROM playlist_items WHERE playlist_id = ?")
      let deletePlaylist = try index.database.prepare("DELETE FROM playlists WHERE id = ?")
      for id in gone {
        try deleteItems.run([.integer(id)])
        try deletePlaylist.run([.integer(id)])
      }
    }
  }
}
