import Dispatch
import FoundationEssentials
import LeitmotifAnalysis
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

#if canImport(Glibc)
  import Glibc
#endif

/// The gate to the index: `MediaLibrary.withIndex` (which checks consent first). Tests and tools
/// inside the module may pass an index directly.
package protocol LibraryIndexAccess: Sendable {
  func withIndex<T>(_ body: (LibraryIndex) throws(LibraryError) -> T) throws(LibraryError) -> T
  /// Throws unless reading library files is (still) allowed: checked before every file the scan
  /// opens, so a revocation in the middle of a long scan stops it at the next file.
  func checkAccess() throws(LibraryError)
}

package extension LibraryIndexAccess {
  func checkAccess() throws(LibraryError) {}
}

/// One scan of the library folders into the index.
///
/// Phases, so the index lock is held only for the short ones and consent is checked before any
/// library file is read:
/// 1. through the gate: read what the index knows (paths, sizes, modification times, fingerprints);
/// 2. outside the lock: walk the folders (`FolderWalker`) and open only new or changed files, and
///    those an older analysis measured: tags, length, then one full decode that feeds both the
///    `AudioFingerprint` and the `AudioAnalysis` (loudness, tempo, beats, energy), on a reading
///    thread at nice 10 (`LowPriorityReader`);
/// 3. through the gate: the files read, a transaction per batch of `batchFiles` (an interrupted
///    scan keeps what its finished batches wrote), then the removals of files that are gone in one
///    more, then hand the playlist files to `PlaylistImporter.importPlaylists(_:folders:index:)`
///    (Library/Playlists/).
///
/// Identity: an item's persistent id is its fingerprint (as a signed 64-bit integer, never 0). A
/// file that changed in place keeps its row's id whatever its audio; a new path whose fingerprint
/// matches a row whose file vanished this scan is a move (same id, play counts kept); identical
/// audio at two live paths gets a second id derived from the first.
package struct LibraryScanner {
  let folders: [URL]

  /// `progress` is called after each file read, on this thread.
  func scan(
    through gate: some LibraryIndexAccess, progress: (ScanProgress) -> Void = { _ in }
  ) throws(LibraryError) -> ScanReport {
    let started = DispatchTime.now().uptimeNanoseconds
    // 1. What the index knows; first of all, the file the last scan died in, if it did.
    var journal: ScanJournal? = nil
    var diedIn: ScanJournal.Entry? = nil
    // The file the last scan ended in for the first time: read last, as a retry (see `ScanJournal`).
    var secondChance: ScanJournal.Entry? = nil
    let (records, failureRecords) = try gate.withIndex {
      (index) throws(LibraryError) -> (
        [LibraryIndex.FileRecord], [String: (sizeBytes: Int64, modificationNanoseconds: Int64, reason: String)]
      ) in
      do throws(SQLiteError) {
        journal = ScanJournal(indexPath: index.path)
        if let journal, let entry = journal.leftOver() {
          if let now = FolderWalker.status(of: entry.path), now.sizeBytes == entry.sizeBytes,
            now.modificationNanoseconds == entry.modificationNanoseconds, !entry.isRetry
          {
            secondChance = entry
          } else if let now = FolderWalker.status(of: entry.path), now.sizeBytes == entry.sizeBytes,
            now.modificationNanoseconds == entry.modificationNanoseconds
          {
            try index.recordFailure(
              path: entry.path, sizeBytes: entry.sizeBytes, modificationNanoseconds: entry.modificationNanoseconds,
              reason: Self.diedWhileReading)
            diedIn = entry
          }
          journal.clear()
        }
        return (try index.fileRecords(), try index.failureRecords())
      } catch {
        throw LibraryError.index(path: index.path, reason: error.description)
      }
    }
    // 2. The folders, and the files that are new or changed.
    let walker = FolderWalker(folders: folders)
    let walk = walker.walk()
    var report = ScanReport()
    report.failed = walk.failures
    report.skipped = walk.skipped
    report.unsupported = walk.unsupported
    report.playlists = walk.playlists
    report.walkedFolders = walk.folders
    if let diedIn { report.failed.append(ScanFailure(path: diedIn.path, reason: Self.diedWhileReading)) }

    var byPath: [String: LibraryIndex.FileRecord] = [:]
    byPath.reserveCapacity(records.count)
    for record in records { byPath[record.path] = record }
    var usedIDs = Set(records.map { $0.persistentID })

    var changes = Changes()
    var present = Set<String>()
    present.reserveCapacity(walk.audioFiles.count)
    var toRead: [FolderWalker.File] = []
    // Unchanged files whose row an older tag reading filled (an index from before schema 4):
    // their tags are read again, not their audio.
    var toRetag: [(file: FolderWalker.File, persistentID: Int64)] = []
    for file in walk.audioFiles {
      present.insert(file.path)
      if let record = byPath[file.path], record.sizeBytes == file.sizeBytes,
        record.modificationNanoseconds == file.modificationNanoseconds,
        record.analysisVersion == AudioAnalysis.version
      {
        if record.tagsVersion < LibraryIndex.tagsVersion {
          toRetag.append((file, record.persistentID))
        } else {
          report.unchanged += 1
        }
        continue
      }
      if let failure = failureRecords[file.path], failure.sizeBytes == file.sizeBytes,
        failure.modificationNanoseconds == file.modificationNanoseconds
      {
        if file.path != diedIn?.path { report.notRetried.append(ScanFailure(path: file.path, reason: failure.reason)) }
        continue
      }
      toRead.append(file)
    }
    // The second chance last: should it take this scan down again, every other file is read.
    if let path = secondChance?.path, let index = toRead.firstIndex(where: { $0.path == path }) {
      toRead.append(toRead.remove(at: index))
    }
    // A library folder that is there but holds nothing at all, while the index has songs in it:
    // most likely the mount point of a drive that is not plugged in. Its songs are kept, with
    // their play counts and dates, as for a folder that cannot be read; an emptied folder
    // wiped them, and the drive's return added them again as new.
    var keptFolders = walk.unreadableFolders
    for root in walker.roots where (try? FileManager.default.contentsOfDirectory(atPath: root))?.isEmpty == true {
      let songs = records.filter { $0.path.hasPrefix(root + "/") }.count
      guard songs > 0 else { continue }
      keptFolders.append(root)
      report.failed.append(
        ScanFailure(
          path: root,
          reason: "the library folder is empty: its \(songs) song\(songs == 1 ? "" : "s") stay in the index until it "
            + "holds files again (a drive that is not mounted?)"))
    }
    // Rows whose file is gone (except under folders that could not be read: they may be back).
    var vanishedByFingerprint: [String: [LibraryIndex.FileRecord]] = [:]
    for record in records where !present.contains(record.path) {
      if keptFolders.contains(where: { record.path.hasPrefix($0 + "/") }) { continue }
      vanishedByFingerprint[record.fingerprint, default: []].append(record)
    }
    // Failures recorded for files that are gone: forget them.
    for path in failureRecords.keys where !present.contains(path) {
      if keptFolders.contains(where: { path.hasPrefix($0 + "/") }) { continue }
      changes.forgetFailures.append(path)
    }

    // The files, read and written in batches: a first scan reads every song whole, which takes
    // minutes for a large library, and a scan that is stopped (the game quits) keeps what its
    // finished batches wrote, so the next one goes on from there.
    let reading = DispatchTime.now().uptimeNanoseconds
    // Decoding and listening happen at nice 10 (`LowPriorityReader`), never on the caller's thread.
    // Made at the first file to read: a rescan of an unchanged library starts no thread.
    var reader: LowPriorityReader?
    var batchStart = 0
    while batchStart < toRead.count {
      let batch = toRead[batchStart..<min(toRead.count, batchStart + Self.batchFiles)]
      batchStart = batch.endIndex
      var batchChanges = Changes()
      for file in batch {
        do {
          try gate.checkAccess()
        } catch {
          // Stopped, not crashed: no file was being read.
          journal?.clear()
          throw error
        }
        journal?.reading(
          ScanJournal.Entry(
            path: file.path, sizeBytes: file.sizeBytes, modificationNanoseconds: file.modificationNanoseconds,
            isRetry: file.path == secondChance?.path))
        let current = reader ?? LowPriorityReader()
        reader = current
        let result = current.perform { Self.read(file) }
        report.filesOpened += 1
        progress(
          ScanProgress(
            filesRead: report.filesOpened, filesToRead: toRead.count,
            elapsedSeconds: Double(DispatchTime.now().uptimeNanoseconds - reading) / 1e9))
        switch result {
        case .vanished:
          present.remove(file.path)
          if let record = byPath[file.path] { vanishedByFingerprint[record.fingerprint, default: []].append(record) }
        case .changedWhileRead:
          // Not recorded: its size or time moved on, so the next scan reads it again.
          report.failed.append(
            ScanFailure(
              path: file.path, reason: "changed while being read (still being written?): read again next scan"))
        case .unreadable(let reason):
          // Not recorded: a chmod changes neither size nor time, so a recorded failure kept a
          // song out after the player let the scan read it (a player's trial). Refused at once
          // by the kernel, trying again next scan costs nothing.
          report.failed.append(ScanFailure(path: file.path, reason: reason + ": read again next scan"))
        case .failed(let reason):
          report.failed.append(ScanFailure(path: file.path, reason: reason))
          batchChanges.failures.append((file, reason))
          // A file that no longer decodes is no longer playable: its item goes.
          if let record = byPath[file.path] {
            batchChanges.removals.append(record.persistentID)
            report.removed += 1
          }
        case .item(var item, let fingerprint):
          if failureRecords[file.path] != nil { batchChanges.forgetFailures.append(file.path) }
          let key = String(fingerprint, radix: 16)
          if let record = byPath[file.path] {
            item.persistentID = UInt64(bitPattern: record.persistentID)
            report.updated += 1
          } else if var candidates = vanishedByFingerprint[key], let record = candidates.popLast() {
            vanishedByFingerprint[key] = candidates
            item.persistentID = UInt64(bitPattern: record.persistentID)
            report.moved += 1
          } else {
            let id = Self.newID(fingerprint: fingerprint, used: usedIDs)
            usedIDs.insert(id)
            item.persistentID = UInt64(bitPattern: id)
            report.added += 1
          }
          batchChanges.upserts.append((item, file, key))
        }
      }
      do {
        try write(batchChanges, through: gate)
      } catch {
        journal?.clear()
        throw error
      }
    }
    journal?.clear()
    try retag(toRetag, through: gate, reader: &reader, report: &report)

    // 3. What is gone, then the playlists.
    for record in vanishedByFingerprint.values.joined() {
      changes.removals.append(record.persistentID)
      report.removed += 1
    }
    try write(changes, through: gate, touching: report.hasChanges)
    report.playlistFailures = try gate.withIndex { (index) throws(LibraryError) -> [ScanFailure] in
      // Always called, with no files too: it removes the playlists whose files are gone.
      PlaylistImporter.importPlaylists(walk.playlists, folders: folders, index: index)
    }
    report.durationSeconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    return report
  }

  /// Reads the tags of `files` again (opening each, decoding nothing) and writes them into their
  /// rows, in batches. A file that cannot be opened now is left as it was and named in the
  /// report: its row keeps its old tags until a scan can read them.
  private func retag(
    _ files: [(file: FolderWalker.File, persistentID: Int64)], through gate: some LibraryIndexAccess,
    reader: inout LowPriorityReader?, report: inout ScanReport
  ) throws(LibraryError) {
    var batchStart = 0
    while batchStart < files.count {
      let batch = files[batchStart..<min(files.count, batchStart + Self.batchFiles)]
      batchStart = batch.endIndex
      var items: [(MediaItem, Int64)] = []
      for (file, persistentID) in batch {
        try gate.checkAccess()
        let current = reader ?? LowPriorityReader()
        reader = current
        let result = current.perform { () -> Result<MediaItem, DecodeError> in
          Result { () throws(DecodeError) in
            Self.item(path: file.path, decoder: try AudioFile.openDecoder(path: file.path))
          }
        }
        switch result {
        case .success(let item) where FolderWalker.status(of: file.path) == file:
          items.append((item, persistentID))
        case .success:
          // Changed meanwhile: the next scan reads it whole.
          continue
        case .failure(let error):
          report.failed.append(
            ScanFailure(path: file.path, reason: Self.reason(error) + ": its tags were not read again (next scan)"))
        }
      }
      guard !items.isEmpty else { continue }
      try gate.withIndex { (index) throws(LibraryError) in
        do throws(SQLiteError) {
          try index.database.transaction { () throws(SQLiteError) in
            for (item, persistentID) in items { try index.updateTags(item, persistentID: persistentID) }
            try index.touch()
          }
        } catch {
          throw error.isBusy
            ? LibraryError.busy(path: index.path) : LibraryError.index(path: index.path, reason: error.description)
        }
      }
      report.tagsReread += items.count
    }
  }

  /// Files read between two writes to the index.
  static let batchFiles = 64

  /// Writes `changes` in one transaction (and marks the index changed when they change it).
  private func write(
    _ changes: Changes, through gate: some LibraryIndexAccess, touching: Bool? = nil
  ) throws(LibraryError) {
    let changesItems = !(changes.upserts.isEmpty && changes.removals.isEmpty)
    guard changesItems || !changes.failures.isEmpty || !changes.forgetFailures.isEmpty || touching == true else {
      return
    }
    try gate.withIndex { (index) throws(LibraryError) in
      do throws(SQLiteError) {
        try index.database.transaction { () throws(SQLiteError) in
          for id in changes.removals { try index.removeItem(persistentID: id) }
          for path in changes.forgetFailures { try index.removeFailure(path: path) }
          for (file, reason) in changes.failures {
            try index.recordFailure(
              path: file.path, sizeBytes: file.sizeBytes, modificationNanoseconds: file.modificationNanoseconds,
              reason: reason)
          }
          for (item, file, key) in changes.upserts {
            try index.upsert(
              item, size: file.sizeBytes, mtimeNanoseconds: file.modificationNanoseconds, fingerprint: key,
              analysisVersion: AudioAnalysis.version)
          }
          if touching ?? changesItems { try index.touch() }
        }
      } catch {
        throw error.isBusy
          ? LibraryError.busy(path: index.path) : LibraryError.index(path: index.path, reason: error.description)
      }
    }
  }

  /// The failure recorded for a file that a scan was reading when it ended (see `ScanJournal`).
  static let diedWhileReading =
    "the last scan ended while reading this file (Leitmotif crashed or was stopped): skipped until the file changes"

  private struct Changes {
    var upserts: [(MediaItem, FolderWalker.File, String)] = []
    var removals: [Int64] = []
    var failures: [(FolderWalker.File, String)] = []
    var forgetFailures: [String] = []
  }

  package enum ReadResult {
    case item(MediaItem, fingerprint: UInt64)
    case failed(String)
    /// The file may not be read (its permissions): reported, not recorded.
    case unreadable(String)
    case vanished
    case changedWhileRead
  }

  /// Opens one file: tags, length, then one decode from start to end for the fingerprint and the
  /// analysis; then checks it did not change meanwhile.
  static func read(_ file: FolderWalker.File) -> ReadResult {
    var item: MediaItem
    let fingerprint: UInt64
    do {
      let decoder = try AudioFile.openDecoder(path: file.path)
      var accumulator = AudioFingerprint.Accumulator(decoder: decoder)
      let analysis = try AudioAnalysis.measure(decoder) { start, samples, frames in
        accumulator.add(startFrame: start, samples: samples, frames: frames)
      }
      fingerprint = accumulator.value
      item = Self.item(path: file.path, decoder: decoder)
      item.apply(analysis)
    } catch {
      if error.reason == .fileNotFound { return .vanished }
      guard let now = FolderWalker.status(of: file.path) else { return .vanished }
      if now != file { return .changedWhileRead }
      if error.reason == .permissionDenied { return .unreadable(Self.reason(error)) }
      return .failed(Self.reason(error))
    }
    guard let now = FolderWalker.status(of: file.path) else { return .vanished }
    if now != file { return .changedWhileRead }
    return .item(item, fingerprint: fingerprint)
  }

  /// The decoder's words without the path (the failure carries it).
  static func reason(_ error: DecodeError) -> String {
    let text = error.description
    let prefix = error.path + ": "
    return text.hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : text
  }

  /// The item for a file from its tags. Without a TITLE tag the title is the file name without
  /// its extension (as players show it); a COMPILATION (TCMP) tag, or else an album artist of
  /// "Various Artists", marks a compilation.
  static func item(path: String, decoder: any AudioDecoder) -> MediaItem {
    var item = MediaItem(path: path, decoder: decoder)
    let tags = decoder.tags
    if item.title == nil {
      // A title is for people: a name that is not UTF-8 shows its odd bytes as U+FFFD.
      item.title = FileSystemPath.displayed(FileSystemPath.deletingExtension(FileSystemPath.lastComponent(path)))
    }
    if tags.isCompilation == nil, let albumArtist = tags.albumArtist?.lowercased(),
      albumArtist == "various artists" || albumArtist == "various"
    {
      item.isCompilation = true
    }
    return item
  }

  /// The id for new audio: the fingerprint itself unless another item has it (identical audio
  /// at two paths) or it is 0; then a SplitMix64 step from it, until one is free.
  static func newID(fingerprint: UInt64, used: Set<Int64>) -> Int64 {
    var candidate = fingerprint
    while candidate == 0 || used.contains(Int64(bitPattern: candidate)) {
      candidate &+= 0x9E37_79B9_7F4A_7C15
      var mixed = candidate
      mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
      mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
      candidate = mixed ^ (mixed >> 31)
    }
    return Int64(bitPattern: candidate)
  }
}
