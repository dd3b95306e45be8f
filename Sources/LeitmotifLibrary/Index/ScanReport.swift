import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

/// A file or folder a scan could not use, and why.
public struct ScanFailure: Sendable, Hashable, CustomStringConvertible {
  /// The file or folder (absolute; a name that is not UTF-8 is shown with U+FFFD in its place).
  public var path: String
  /// Why it could not be used, e.g. "not Ogg Vorbis, Opus, MP3, FLAC, WAV or AIFF: it looks like text".
  public var reason: String

  /// A failure of `path` for `reason`.
  public init(path: String, reason: String) {
    self.path = path
    self.reason = reason
  }

  /// "PATH: REASON".
  public var description: String { "\(FileSystemPath.displayed(path)): \(reason)" }
}

/// How far a scan is: reported after each file it reads (`MediaLibrary.scan(waitingUpToSeconds:progress:)`).
public struct ScanProgress: Sendable {
  /// Files read (decoded and analysed) so far.
  public var filesRead: Int
  /// Files this scan must read: the new and changed ones, and those an older analysis measured.
  public var filesToRead: Int
  /// Seconds since the scan started reading files.
  public var elapsedSeconds: Double

  /// Files per second so far (0 before the first).
  public var filesPerSecond: Double { elapsedSeconds > 0 ? Double(filesRead) / elapsedSeconds : 0 }
  /// Seconds left at the rate so far; nil before the first file.
  public var secondsLeft: Double? {
    filesRead > 0 ? Double(filesToRead - filesRead) / max(filesPerSecond, 1e-9) : nil
  }
}

/// What one scan of the library folders did.
public struct ScanReport: Sendable, CustomStringConvertible {
  /// Items new to the index.
  public var added = 0
  /// Items whose file changed (size or modification time) and was read again (tags, length,
  /// analysis), or whose analysis an older version of Leitmotif made.
  public var updated = 0
  /// Items found under a new path with the audio of a file that vanished: same persistent id,
  /// play counts kept.
  public var moved = 0
  /// Items whose file is gone.
  public var removed = 0
  /// Files with the size and modification time the index knows: not opened.
  public var unchanged = 0
  /// Unchanged files whose tags were read again (not their audio), because an older version of
  /// Leitmotif read fewer of them (an index made before the MOOD tag was kept, or when only the
  /// first of several artists was). Their play counts, analysis and ids stay.
  public var tagsReread = 0
  /// Files and folders that could not be read this scan (zero-byte, damaged, not audio, vanished
  /// or changed while read, unreadable folders, names that are not UTF-8).
  public var failed: [ScanFailure] = []
  /// Files that failed before and have not changed since, each with the reason it failed then:
  /// not retried (a player who sees "3 earlier failures not retried" can find them, and fix or
  /// remove them).
  public var notRetried: [ScanFailure] = []
  /// How many files `notRetried` lists.
  public var failedUnchanged: Int { notRetried.count }
  /// Symbolic links not followed: they leave the library folders, loop or point nowhere.
  public var skipped: [ScanFailure] = []
  /// Audio files of formats Leitmotif does not play (.m4a, .wav, .wma, ...), by extension
  /// (lowercased): not opened, not indexed, counted so the scan can say so.
  public var unsupported: [String: Int] = [:]
  /// The playlist files found (.m3u, .m3u8, .pls).
  public var playlists: [String] = []
  /// Problems with playlist entries (missing, outside the library folders), from the importer.
  public var playlistFailures: [ScanFailure] = []
  /// Wall-clock time of the scan.
  public var durationSeconds = 0.0

  /// The folders the scan walked, for the watcher.
  var walkedFolders: [String] = []
  /// How many audio files the scan opened (tests check a rescan opens none).
  var filesOpened = 0

  /// An empty report: nothing scanned yet.
  public init() {}

  /// Whether the scan changed the index (items added, updated, moved or removed, or tags re-read).
  public var hasChanges: Bool { added + updated + moved + removed + tagsReread > 0 }

  /// One line: the counts and the time, e.g. "3 added, 0 updated, ... in 0.12 s".
  public var description: String {
    "\(added) added, \(updated) updated, \(moved) moved, \(removed) removed, \(unchanged) unchanged, "
      + (tagsReread > 0 ? "\(tagsReread) tags re-read, " : "")
      + "\(failed.count) failed" + (failedUnchanged > 0 ? " (\(failedUnchanged) earlier failures not retried)" : "")
      + " in \(fixedPoint(durationSeconds, decimals: 2)) s"
      + (unsupported.isEmpty ? "" : "; " + unsupportedSummary)
  }

  /// "3 .m4a and 1 .wav files not played (Leitmotif plays Ogg Vorbis, Opus, MP3, FLAC, WAV and AIFF)".
  public var unsupportedSummary: String {
    let counts = unsupported.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
    let parts = counts.map { "\($0.value) .\($0.key)" }
    let list = parts.count > 1 ? parts.dropLast().joined(separator: ", ") + " and " + parts.last! : parts.first ?? ""
    let total = unsupported.values.reduce(0, +)
    return "\(list) file\(total == 1 ? "" : "s") not played (Leitmotif plays Ogg Vorbis, Opus, MP3, FLAC, WAV and AIFF)"
  }
}
