import LeitmotifDecoding

extension AudioEngine {
  /// Decodes `path` whole into memory, so that every voice that plays it from now on reads it
  /// from there: nothing is opened or decoded when it starts, and a slow disk cannot delay it.
  /// For stingers and short loops that fire again and again (a `Director` preloads its cue
  /// file's bundled stingers itself); long music is better streamed.
  ///
  /// Preloading the same file again holds it once more (each `unload` lets go of one hold) and
  /// costs nothing more, unless the file changed: then it is decoded again. A file that changes
  /// while preloaded is noticed when it next starts: from then on it streams from the file as it
  /// is now (a notice says so, once) until it is preloaded again. A file that is gone (deleted,
  /// or its pak unmounted) plays on from memory, and preloading it again holds that copy: a game
  /// may preload from a mount and then let the mount go. A preloaded file sounds the same as a streamed one, sample for sample.
  ///
  /// Blocking: it reads and decodes the file on the calling thread (milliseconds for a stinger),
  /// so call it while a level loads, not from the game's frame loop. Any thread.
  /// - Returns: the decoded audio's size in bytes.
  /// - Throws: `PreloadError`: the file does not decode to its end, or it would not fit in what
  ///   is left of `preloadBudgetBytes`. It still plays then, streamed.
  @discardableResult
  public func preload(_ path: String) throws(PreloadError) -> Int {
    try preloaded.preload(path).sizeBytes
  }

  /// Lets go of one hold on a preloaded file (see `preload`); with the last, its memory is given
  /// back once no voice reads it, and the file streams again. Returns false when `path` was not
  /// preloaded.
  @discardableResult
  public func unload(_ path: String) -> Bool { preloaded.unload(path) }

  /// Whether `path` is preloaded.
  public func isPreloaded(_ path: String) -> Bool { preloaded.contains(path) }

  /// The identity `path` has now, when it is preloaded and its file was changed since (a
  /// director decodes its stingers afresh then). A stat.
  package func preloadedFileChange(_ path: String) -> FileIdentity? { preloaded.changedIdentity(of: path) }

  /// Bytes of decoded audio held in memory by `preload`.
  public var preloadedBytes: Int { preloaded.bytes }

  /// The most memory preloaded audio may take, in bytes (default 64 MiB: 5.8 minutes of 48 kHz
  /// stereo; a 44.1 kHz mono stinger of 2 s takes 353 KB). Lowering it unloads nothing: it
  /// applies to the next `preload`.
  public var preloadBudgetBytes: Int {
    get { preloaded.budgetBytes }
    set { preloaded.budgetBytes = newValue }
  }
}
