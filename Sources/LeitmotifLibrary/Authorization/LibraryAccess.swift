import Dispatch
import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput
import Synchronization

/// Consent for one application id: what an administrator's policy says, what the player
/// answered (remembered on disk, `LibraryAccessStore`), and asking when nobody has.
///
/// The seam the rest of the library uses: `status()`, `check()` (throws unless authorized) and
/// `request()`. Every library call goes through `check()` before it opens anything.
///
/// Changes made outside the game (`leitmotif access deny APP`, an administrator's policy) are
/// seen on the next check: `status()` costs two `stat` calls and re-reads a file only when its
/// inode, size or times changed. Observers (`observe`) are told within half a second by a
/// thread that polls while anyone observes and ends when nobody does.
///
/// Thread safety: every method may be called from any thread. `request()` calls are
/// serialized, so two threads asking at once show one prompt.
package final class LibraryAccess: Sendable {
  package typealias Handler = @Sendable (AuthorizationStatus) -> Void

  /// How often observers' status is re-checked: a change reaches them within this, well within
  /// the second the issue allows.
  static let pollInterval = DispatchTimeInterval.milliseconds(500)

  let configuration: MediaLibrary.Configuration
  let prompt: AuthorizationPrompt?
  let diagnostics: DiagnosticsHandler?
  let store: LibraryAccessStore
  /// The environment's verdict: fixed for the life of the configuration.
  private let environmentPolicy: AccessPolicy
  private let state = Mutex(State())
  /// Held while asking, so two requests at once do not both prompt.
  private let requestLock = Mutex(())
  /// Wakes the observer thread (a new status to deliver, or the last observer gone).
  private let observerWake = DispatchSemaphore(value: 0)

  private struct State {
    /// The policy file as last read, and the version read.
    var policy: (version: FileVersion?, verdict: AccessPolicy)?
    /// The answers file as last read, and what it means for this application.
    var store: (snapshot: LibraryAccessStore.Snapshot, decision: (AuthorizationStatus, String))?
    /// The damage last warned about, so one damaged file gives one warning.
    var warnedDamage: String?
    /// An answer that could not be written, kept for this run while the file stays as it was.
    var unsavedAnswer: (status: AuthorizationStatus, storeVersion: FileVersion?)?
    var observers: [Int: Handler] = [:]
    var nextObserverID = 0
    var lastPublished: AuthorizationStatus?
    /// Statuses waiting for the observer thread to deliver, in order.
    var undelivered: [(AuthorizationStatus, [Handler])] = []
    var observerThreadRunning = false
  }

  init(configuration: MediaLibrary.Configuration, prompt: AuthorizationPrompt?, diagnostics: DiagnosticsHandler?) {
    self.configuration = configuration
    self.prompt = prompt
    self.diagnostics = diagnostics
    store = LibraryAccessStore(configuration: configuration)
    environmentPolicy = AccessPolicy.environment(configuration.environment)
  }

  deinit { observerWake.signal() }

  var applicationID: String { configuration.applicationID }

  /// The status and why, in a sentence for the player (for restricted, the policy's reason).
  /// Re-reads the policy and the answers when they changed on disk; tells observers of a change.
  func status() -> (status: AuthorizationStatus, reason: String) {
    let policyPath = configuration.policyFile.path
    let policyVersion = Result { () throws(StateFileError) in try StateFiles.version(of: policyPath) }
    let storeVersion = Result { () throws(StateFileError) in try StateFiles.version(of: store.file.path) }
    var warning: String?
    let result = state.withLock { state -> (status: AuthorizationStatus, reason: String) in
      let result = decide(&state, policyVersion: policyVersion, storeVersion: storeVersion, warning: &warning)
      publish(result.status, in: &state)
      return result
    }
    if let warning { diagnostics?(Diagnostic(.warning, warning)) }
    return result
  }

  /// Throws `LibraryError.accessDenied` with the state and its reason unless authorized.
  func check() throws(LibraryError) {
    let (status, reason) = status()
    guard status == .authorized else { throw LibraryError.accessDenied(status, reason: reason) }
  }

  /// Asks the player through the prompt when nobody has yet, remembers the answer and returns
  /// the status. Does nothing else when the status is already known, restricted included.
  /// - Throws: `LibraryError.missingUsageDescription` without a usage description, before
  ///   anything is read or asked.
  func request() throws(LibraryError) -> AuthorizationStatus {
    guard let description = configuration.usageDescription?.trimmingWhitespaceAndNewlines(),
      !description.isEmpty
    else {
      throw LibraryError.missingUsageDescription(applicationID: applicationID)
    }
    return requestLock.withLock { _ in
      let current = status()
      guard current.status == .notDetermined else { return current.status }
      let name = configuration.applicationName ?? applicationID
      // No prompt, or one that cannot reach anybody (no terminal): nobody is asked and this
      // run gets no access; nothing is remembered, so the next run asks again.
      guard let prompt, let allowed = prompt.askForLibraryAccess(applicationName: name, usageDescription: description)
      else { return .notDetermined }
      let answer: AuthorizationStatus = allowed ? .authorized : .denied
      do {
        try store.remember(answer, for: applicationID)
      } catch {
        diagnostics?(
          Diagnostic(
            .warning, "\(applicationID): the player's answer (\(answer.rawValue)) holds for this run only: \(error)",
            error: error))
        let version = try? StateFiles.version(of: store.file.path)
        state.withLock { $0.unsavedAnswer = (answer, version) }
      }
      return status().status
    }
  }

  /// Calls `handler` with each new status, in order, on the library's observer thread. While
  /// anyone observes, that thread re-checks every half second (two `stat` calls) and sleeps in
  /// between. A thread of its own, not a dispatch timer: a busy dispatch pool (a game's or a test
  /// runner's) must not delay a revocation past the second the player was promised.
  func observe(_ handler: @escaping Handler) -> AuthorizationObservation {
    let now = status().status
    let (id, startThread) = state.withLock { state -> (Int, Bool) in
      var start = false
      if state.observers.isEmpty {
        state.lastPublished = now
        start = !state.observerThreadRunning
        state.observerThreadRunning = true
      }
      let id = state.nextObserverID
      state.nextObserverID += 1
      state.observers[id] = handler
      return (id, start)
    }
    if startThread {
      NativeThread { [weak self] in self?.observeLoop() }.start()
    }
    return AuthorizationObservation { [weak self] in self?.removeObserver(id) }
  }

  /// The observer thread: poll, deliver, sleep; ends when the last observer goes.
  private func observeLoop() {
    nameCurrentThread("lm.access")
    while true {
      _ = observerWake.wait(timeout: .now() + Self.pollInterval)
      let done = state.withLock { state -> Bool in
        if state.observers.isEmpty {
          state.observerThreadRunning = false
          return true
        }
        return false
      }
      if done { return }
      _ = status()
      let deliveries = state.withLock { state -> [(AuthorizationStatus, [Handler])] in
        defer { state.undelivered.removeAll() }
        return state.undelivered
      }
      for (status, handlers) in deliveries {
        for handler in handlers { handler(status) }
      }
    }
  }

  private func removeObserver(_ id: Int) {
    let wake = state.withLock { state -> Bool in
      state.observers[id] = nil
      if state.observers.isEmpty {
        state.lastPublished = nil
        state.undelivered.removeAll()
        return true
      }
      return false
    }
    if wake { observerWake.signal() }
  }

  /// Queues the observers' calls when the status changed. Under the state lock, so calls go out
  /// in the order the changes were seen.
  private func publish(_ status: AuthorizationStatus, in state: inout State) {
    guard !state.observers.isEmpty, status != state.lastPublished else { return }
    state.lastPublished = status
    let handlers = state.observers.sorted { $0.key < $1.key }.map(\.value)
    state.undelivered.append((status, handlers))
    observerWake.signal()
  }

  // MARK: - Deciding

  private func decide(
    _ state: inout State, policyVersion: Result<FileVersion?, StateFileError>,
    storeVersion: Result<FileVersion?, StateFileError>, warning: inout String?
  ) -> (status: AuthorizationStatus, reason: String) {
    // 1. The administrator's policy file.
    if let restriction = policyVerdict(&state, version: policyVersion).restriction { return (.restricted, restriction) }
    // 2. The environment.
    if let restriction = environmentPolicy.restriction { return (.restricted, restriction) }
    // 3. An answer given in this run that could not be written, while the file is unchanged.
    let currentStoreVersion = try? storeVersion.get()
    if let unsaved = state.unsavedAnswer {
      if unsaved.storeVersion == currentStoreVersion {
        return (unsaved.status, "the player answered \(unsaved.status.rawValue) in this run (it could not be saved)")
      }
      state.unsavedAnswer = nil
    }
    // 4. The player's remembered answer.
    let decision: (AuthorizationStatus, String)
    switch storeVersion {
    case .failure(let error):
      state.store = nil
      decision = damaged(error.description, warning: &warning, in: &state)
    case .success(let version):
      if let cached = state.store, cached.snapshot.version == version {
        decision = cached.decision
      } else {
        var snapshot = version == nil ? LibraryAccessStore.Snapshot() : store.load()
        // A file that could not be opened at all is judged again when its stat changes.
        if snapshot.version == nil, snapshot.damage != nil { snapshot.version = version }
        if let damage = snapshot.damage {
          decision = damaged(damage, warning: &warning, in: &state)
        } else {
          state.warnedDamage = nil
          decision = answerDecision(snapshot.answers[applicationID])
        }
        state.store = (snapshot, decision)
      }
    }
    return decision
  }

  private func policyVerdict(_ state: inout State, version: Result<FileVersion?, StateFileError>) -> AccessPolicy {
    let path = configuration.policyFile.path
    switch version {
    case .failure(let error):
      // Cannot even tell whether there is a policy: fail safe.
      state.policy = nil
      return AccessPolicy(restriction: "the policy file \(path) cannot be checked (\(error)), so access is restricted")
    case .success(let version):
      if let cached = state.policy, cached.version == version { return cached.verdict }
      let verdict: AccessPolicy
      if version == nil {
        verdict = AccessPolicy(restriction: nil)
      } else {
        let read = Result { () throws(StateFileError) in
          try StateFiles.readRegularFile(path, limitBytes: AccessPolicy.sizeLimitBytes)?.0
        }
        verdict = AccessPolicy.file(path, read: read)
      }
      state.policy = (version, verdict)
      return verdict
    }
  }

  private func damaged(_ damage: String, warning: inout String?, in state: inout State) -> (
    AuthorizationStatus, String
  ) {
    let reason =
      "the remembered answers in \(store.file.path) cannot be used (\(damage)), so every application counts as not asked; the next answer (or `leitmotif access allow|deny|reset APP`) rewrites the file"
    if state.warnedDamage != damage {
      state.warnedDamage = damage
      warning = reason
    }
    return (.notDetermined, reason)
  }

  private func answerDecision(_ answer: LibraryAccessStore.Answer?) -> (AuthorizationStatus, String) {
    guard let answer else {
      return (
        .notDetermined,
        "the player has not been asked yet: the game asks with requestAuthorization() (C: lm_library_request_authorization); from a shell, `leitmotif access allow \(applicationID)` answers for them"
      )
    }
    let date = answer.date.formatted(.iso8601)
    switch answer.status {
    case .denied:
      return (.denied, "the player denied access on \(date); `leitmotif access allow \(applicationID)` changes that")
    default:
      return (answer.status, "the player allowed access on \(date)")
    }
  }
}

/// A running observation of a library's authorization (`MediaLibrary.observeAuthorization`).
/// It lasts until `cancel()` or until this object goes away; keep it as long as you want to be
/// told. A call already on its way when you cancel may still arrive.
public final class AuthorizationObservation: Sendable {
  private let cancellation: Mutex<(@Sendable () -> Void)?>

  init(cancel: @escaping @Sendable () -> Void) { cancellation = Mutex(cancel) }

  /// Stops the observation (again: nothing).
  public func cancel() {
    let cancel = cancellation.withLock { slot in
      let cancel = slot
      slot = nil
      return cancel
    }
    cancel?()
  }

  deinit { cancel() }
}
