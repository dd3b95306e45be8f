import Foundation
import LeitmotifFixtures
import Synchronization
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

#if canImport(Glibc)
  import Glibc
#endif

/// A prompt that answers as it is told and counts how often it was asked.
final class ScriptedPrompt: AuthorizationPrompt {
  private let answer: Bool?
  private let calls = Mutex(0)

  init(answer: Bool?) { self.answer = answer }

  var callCount: Int { calls.withLock { $0 } }

  func askForLibraryAccess(applicationName: String, usageDescription: String) -> Bool? {
    calls.withLock { $0 += 1 }
    return answer
  }
}

/// A temporary home for one test: library folder, state and cache folders, a policy path; none
/// of the real machine's files are used.
struct AccessSandbox {
  static let applicationID = "com.example.dungeon"
  static let usageDescription = "Your music plays as the soundtrack while you explore."

  let directory: TemporaryDirectory
  var configuration: MediaLibrary.Configuration

  init(environment: [String: String] = [:]) throws {
    directory = try TemporaryDirectory(prefix: "leitmotif-access")
    mkdir(directory.file("Music"), 0o755)
    configuration = MediaLibrary.Configuration(
      applicationID: Self.applicationID, usageDescription: Self.usageDescription,
      folders: [URL(fileURLWithPath: directory.file("Music"))])
    configuration.stateDirectory = URL(fileURLWithPath: directory.file("state/leitmotif"))
    configuration.cacheDirectory = URL(fileURLWithPath: directory.file("cache/leitmotif"))
    configuration.policyFile = URL(fileURLWithPath: directory.file("etc/leitmotif/policy.json"))
    configuration.environment = ["HOME": directory.path].merging(environment) { $1 }
  }

  var store: LibraryAccessStore { LibraryAccessStore(configuration: configuration) }
  var storePath: String { store.file.path }

  func library(prompt: AuthorizationPrompt? = nil, log: DiagnosticLog? = nil) -> MediaLibrary {
    MediaLibrary(configuration: configuration, prompt: prompt, diagnostics: log?.handler)
  }

  func writePolicy(_ text: String) throws {
    try FileManager.default.createDirectory(
      atPath: directory.file("etc/leitmotif"), withIntermediateDirectories: true)
    try Data(text.utf8).write(to: configuration.policyFile)
  }

  func writeStore(_ text: String) throws {
    try FileManager.default.createDirectory(atPath: store.directory.path, withIntermediateDirectories: true)
    try Data(text.utf8).write(to: store.file)
    // As Leitmotif writes it, whatever the umask: a file others can write is refused on its own.
    chmod(store.file.path, 0o600)
  }

  /// An answers file that says `status` for the application, as Leitmotif writes it.
  static func answersText(_ status: AuthorizationStatus) -> String {
    String(
      decoding: LibraryAccessStore.encode([applicationID: .init(status: status, date: Date(timeIntervalSince1970: 0))]),
      as: UTF8.self)
  }
}

/// The error a library call threw, if it was an access error: its state and reason.
func accessError(_ body: () throws -> Void) -> (AuthorizationStatus, String)? {
  do {
    try body()
    return nil
  } catch {
    if case .accessDenied(let status, let reason) = error as? LibraryError { return (status, reason) }
    return nil
  }
}

/// A new pseudo-terminal: its master's descriptor and its slave's path. Through /dev/ptmx and
/// ioctl, since posix_openpt, grantpt, unlockpt and ptsname are not visible to Swift through
/// Glibc (grantpt does nothing on Linux's devpts anyway).
func openPseudoTerminal() -> (master: Int32, slavePath: String)? {
  let master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
  guard master >= 0 else { return nil }
  // TIOCSPTLCK and TIOCGPTN, from <asm-generic/ioctls.h> (function-like macros Swift cannot import).
  let unlock: UInt = 0x4004_5431
  let number: UInt = 0x8004_5430
  var locked: Int32 = 0
  var index: UInt32 = 0
  guard ioctl(master, unlock, &locked) == 0, ioctl(master, number, &index) == 0 else {
    close(master)
    return nil
  }
  return (master, "/dev/pts/\(index)")
}

func permissions(_ path: String) -> mode_t {
  var status = stat()
  guard stat(path, &status) == 0 else { return 0 }
  return status.st_mode & 0o777
}

@Suite("LibraryAccess: consent, remembered answers, policy and revocation")
struct LibraryAccessTests {
  @Test("Nobody asked yet is notDetermined; a yes is authorized, remembered across libraries, and never asked again")
  func yesIsRememberedAcrossInstances() throws {
    let sandbox = try AccessSandbox()
    let prompt = ScriptedPrompt(answer: true)
    let library = sandbox.library(prompt: prompt)
    #expect(library.authorizationStatus == .notDetermined)
    #expect(library.authorizationReason.contains("has not been asked"))
    #expect(accessError { try library.withIndex { _ in } }?.0 == .notDetermined)

    #expect(try library.requestAuthorization() == .authorized)
    #expect(prompt.callCount == 1)
    #expect(library.authorizationStatus == .authorized)
    #expect(try library.requestAuthorization() == .authorized)
    #expect(prompt.callCount == 1, "asked again although the answer is known")

    // Another library (a later run of the game) with the same application id: remembered.
    let laterPrompt = ScriptedPrompt(answer: false)
    let later = sandbox.library(prompt: laterPrompt)
    #expect(later.authorizationStatus == .authorized)
    #expect(try later.requestAuthorization() == .authorized)
    #expect(laterPrompt.callCount == 0)
    #expect(try sandbox.store.answers()[AccessSandbox.applicationID]?.status == .authorized)

    // Another application id is asked for itself.
    var other = sandbox.configuration
    other.applicationID = "org.example.racer"
    #expect(MediaLibrary(configuration: other).authorizationStatus == .notDetermined)
  }

  @Test("A no is denied and remembered; library calls then fail naming the state")
  func noIsDenied() throws {
    let sandbox = try AccessSandbox()
    let prompt = ScriptedPrompt(answer: false)
    let library = sandbox.library(prompt: prompt)
    #expect(try library.requestAuthorization() == .denied)
    let error = try #require(accessError { try library.withIndex { _ in } })
    #expect(error.0 == .denied)
    #expect(error.1.contains("leitmotif access allow \(AccessSandbox.applicationID)"))
    #expect(
      LibraryError.accessDenied(error.0, reason: error.1).description.hasPrefix(
        "no access to the music library (denied)"))
    let later = ScriptedPrompt(answer: true)
    #expect(try sandbox.library(prompt: later).requestAuthorization() == .denied)
    #expect(later.callCount == 0)
  }

  @Test("No prompt, or a terminal prompt with no terminal: nobody is asked, notDetermined, nothing remembered")
  func nobodyToAsk() throws {
    let sandbox = try AccessSandbox()
    #expect(try sandbox.library().requestAuthorization() == .notDetermined)
    #expect(try sandbox.library(prompt: ScriptedPrompt(answer: nil)).requestAuthorization() == .notDetermined)

    let regularFile = sandbox.directory.file("not-a-terminal")
    _ = FileManager.default.createFile(atPath: regularFile, contents: Data("y\n".utf8))
    for path in [sandbox.directory.file("no-such-tty"), regularFile, "/dev/null"] {
      let prompt = TerminalPrompt(terminalPath: path)
      #expect(prompt.askForLibraryAccess(applicationName: "Dungeon", usageDescription: "Music.") == nil, "\(path)")
      #expect(try sandbox.library(prompt: prompt).requestAuthorization() == .notDetermined)
    }
    #expect(!FileManager.default.fileExists(atPath: sandbox.storePath))
  }

  @Test("TerminalPrompt asks on a terminal: y is yes, n is no, nonsense is asked again, end of file is nobody")
  func terminalPromptOnPseudoTerminal() throws {
    func ask(typing input: String) throws -> (Bool?, String) {
      let (master, slavePath) = try #require(openPseudoTerminal())
      defer { close(master) }
      // Typed before the question shows, like a quick player: the terminal keeps it.
      _ = input.utf8CString.withUnsafeBufferPointer { write(master, $0.baseAddress, input.utf8.count) }
      let answer = TerminalPrompt(terminalPath: slavePath).askForLibraryAccess(
        applicationName: "Dungeon\u{1B}[2J", usageDescription: AccessSandbox.usageDescription)
      // Everything the prompt wrote, however many reads it takes.
      let flags = fcntl(master, F_GETFL)
      _ = fcntl(master, F_SETFL, flags | O_NONBLOCK)
      var screen: [UInt8] = []
      var buffer = [UInt8](repeating: 0, count: 4096)
      var idleReads = 0
      while idleReads < 10 {
        let count = read(master, &buffer, buffer.count)
        if count > 0 {
          screen += buffer.prefix(count)
          idleReads = 0
        } else {
          idleReads += 1
          usleep(10_000)
        }
      }
      return (answer, String(decoding: screen, as: UTF8.self))
    }
    let (yes, shown) = try ask(typing: "y\n")
    #expect(yes == true)
    #expect(shown.contains("Dungeon [2J would like to use your music library."), "\(shown)")
    #expect(shown.contains(AccessSandbox.usageDescription))
    #expect(shown.contains("[y/n]"))
    #expect(try ask(typing: "No\n").0 == false)
    let (retried, retriedScreen) = try ask(typing: "maybe\nyes\n")
    #expect(retried == true)
    #expect(retriedScreen.components(separatedBy: "[y/n]").count == 3)
    // Ctrl-D at the start of a line: end of file, nobody answered.
    #expect(try ask(typing: "\u{04}").0 == nil)
  }

  @Test("A damaged answers file is notDetermined with one warning, never authorized; the next answer rewrites it")
  func damagedStore() throws {
    let sandbox = try AccessSandbox()
    let damaged = [
      "{ \"version\": 1, \"applications\": { \"com.example.dungeon\": { \"status\": \"authorized\"",  // cut off
      "{\"version\": 2, \"applications\": {\"com.example.dungeon\": {\"status\": \"authorized\", \"date\": \"2026-11-30T10:00:00Z\"}}}",
      "{\"version\": 1, \"applications\": {\"com.example.dungeon\": {\"status\": \"authorised\", \"date\": \"2026-11-30T10:00:00Z\"}}}",
      "{\"version\": 1, \"applications\": {\"com.example.dungeon\": {\"status\": \"authorized\", \"date\": \"yesterday\"}}}",
      "\u{0}\u{1}binary",
    ]
    for text in damaged {
      try sandbox.writeStore(text)
      let log = DiagnosticLog()
      let library = sandbox.library(log: log)
      #expect(library.authorizationStatus == .notDetermined, "\(text)")
      #expect(library.authorizationStatus == .notDetermined)
      #expect(accessError { try library.withIndex { _ in } }?.0 == .notDetermined)
      let warnings = log.all.filter { $0.severity == .warning }
      #expect(warnings.count == 1, "\(text): \(warnings)")
      #expect(warnings.first?.message.contains("\(sandbox.storePath) cannot be used") == true)
      #expect(throws: LibraryError.self) { try sandbox.store.answers() }
    }

    let prompt = ScriptedPrompt(answer: true)
    let library = sandbox.library(prompt: prompt)
    #expect(try library.requestAuthorization() == .authorized)
    #expect(prompt.callCount == 1)
    #expect(try sandbox.store.answers()[AccessSandbox.applicationID]?.status == .authorized)
    #expect(FileManager.default.fileExists(atPath: sandbox.storePath + ".damaged"))
  }

  @Test("An answers file that names a key twice is damaged: notDetermined, one warning naming the file and the key")
  func duplicateKeysInStore() throws {
    let sandbox = try AccessSandbox()
    let app = AccessSandbox.applicationID
    let date = #""date": "2026-11-30T10:00:00Z""#
    let cases: [(text: String, key: String)] = [
      // The issue's file: authorized, then denied. JSONDecoder kept the first, jq and Python the last.
      (
        #"{"version": 1, "applications": {"\#(app)": {"status": "authorized", \#(date)}, "\#(app)": {"status": "denied", \#(date)}}}"#,
        app
      ),
      // The same key with an escape in it.
      (
        #"{"version": 1, "applications": {"\#(app)": {"status": "authorized", \#(date)}, "com.example.dung\u0065on": {"status": "denied", \#(date)}}}"#,
        app
      ),
      // Twice inside one application's entry.
      (
        #"{"version": 1, "applications": {"\#(app)": {"status": "authorized", "status": "denied", \#(date)}}}"#,
        "status"
      ),
    ]
    for (text, key) in cases {
      try sandbox.writeStore(text)
      let log = DiagnosticLog()
      let library = sandbox.library(log: log)
      #expect(library.authorizationStatus == .notDetermined, "\(text)")
      #expect(accessError { try library.withIndex { _ in } }?.0 == .notDetermined)
      let warnings = log.all.filter { $0.severity == .warning }.map(\.message)
      #expect(warnings.count == 1, "\(warnings)")
      #expect(warnings.first?.contains("\(sandbox.storePath) cannot be used") == true, "\(warnings)")
      #expect(warnings.first?.contains("\"\(key)\" appears twice") == true, "\(warnings)")
      #expect {
        try sandbox.store.answers()
      } throws: { error in
        "\(error)".contains("\"\(key)\" appears twice")
      }
    }
    // The scanner itself: equal keys in different objects are fine; keys equal once unescaped
    // (a surrogate pair, canonically equivalent spellings) are one key, as in the decoder.
    func check(_ text: String) -> JSONDuplicateKeys.Finding { JSONDuplicateKeys.check(Data(text.utf8)) }
    #expect(check(#"{"a": [{"k": 1}, {"k": [true, null, -1.5e3]}], "b": {"k": "\"}"}}"#) == .none)
    #expect(check(#"{"a": [{"k": 1, "k": 2}]}"#) == .duplicate(key: "k", path: ["a", "[0]"]))
    #expect(check(#"{"\ud83c\udfb5": 1, "🎵": 2}"#) == .duplicate(key: "🎵", path: []))
    #expect(check(#"{"x": {"caf\u00e9": 1, "cafe\u0301": 2}}"#) == .duplicate(key: "café", path: ["x"]))

    // The next answer moves it aside and writes one entry.
    #expect(try sandbox.library(prompt: ScriptedPrompt(answer: false)).requestAuthorization() == .denied)
    #expect(FileManager.default.fileExists(atPath: sandbox.storePath + ".damaged"))
    #expect(try sandbox.store.answers()[app]?.status == .denied)
  }

  @Test(
    "Answers in a file that others can write (0666 in a 0777 folder, or group-writable) are ignored; the next answer rewrites it"
  )
  func writableStoreIgnored() throws {
    let sandbox = try AccessSandbox()
    let store = sandbox.store
    try store.remember(.authorized, for: AccessSandbox.applicationID)
    let running = sandbox.library()
    #expect(running.authorizationStatus == .authorized)
    #expect(chmod(store.directory.path, 0o777) == 0)
    for mode: mode_t in [0o666, 0o620, 0o602] {
      #expect(chmod(sandbox.storePath, mode) == 0)
      let log = DiagnosticLog()
      #expect(sandbox.library(log: log).authorizationStatus == .notDetermined, "mode \(String(mode, radix: 8))")
      let warnings = log.all.filter { $0.severity == .warning }.map(\.message)
      #expect(
        warnings.contains { $0.contains(sandbox.storePath) && $0.contains("writable by other users") }, "\(warnings)")
      // A running library notices the chmod (it changes the file's change time).
      #expect(running.authorizationStatus == .notDetermined)
      #expect(throws: LibraryError.self) { try store.answers() }
    }
    #expect(chmod(sandbox.storePath, 0o600) == 0)
    #expect(running.authorizationStatus == .authorized)

    #expect(chmod(sandbox.storePath, 0o666) == 0)
    try store.remember(.denied, for: AccessSandbox.applicationID)
    #expect(permissions(sandbox.storePath) == 0o600)
    #expect(permissions(store.directory.path) == 0o700)
    #expect(running.authorizationStatus == .denied)
  }

  @Test(
    "Answers in a file owned by another user are ignored; the next answer rewrites it",
    .enabled(if: geteuid() == 0, "making a file owned by another user takes root (chown); run as root to test this"))
  func foreignStoreIgnored() throws {
    let sandbox = try AccessSandbox()
    let store = sandbox.store
    try store.remember(.authorized, for: AccessSandbox.applicationID)
    #expect(chmod(store.directory.path, 0o777) == 0)
    // nobody's uid: not ours, whoever runs the tests.
    #expect(chown(sandbox.storePath, 65534, 65534) == 0)
    let log = DiagnosticLog()
    let library = sandbox.library(log: log)
    #expect(library.authorizationStatus == .notDetermined)
    let warnings = log.all.filter { $0.severity == .warning }.map(\.message)
    #expect(warnings.contains { $0.contains(sandbox.storePath) && $0.contains("owned by uid 65534") }, "\(warnings)")
    #expect(throws: LibraryError.self) { try store.answers() }

    try store.remember(.authorized, for: AccessSandbox.applicationID)
    var status = stat()
    #expect(stat(sandbox.storePath, &status) == 0 && status.st_uid == geteuid())
    #expect(library.authorizationStatus == .authorized)
  }

  @Test(
    "A symbolic link at the state folder is refused, not followed: nothing is read, chmod-ed or written where it points"
  )
  func linkedStateFolderRefused() throws {
    let sandbox = try AccessSandbox()
    let store = sandbox.store
    let elsewhere = sandbox.directory.file("elsewhere")
    #expect(mkdir(elsewhere, 0o755) == 0 && chmod(elsewhere, 0o755) == 0)
    #expect(mkdir(sandbox.directory.file("state"), 0o755) == 0)
    #expect(symlink(elsewhere, store.directory.path) == 0)
    // Answers where the link points that would grant access if it were followed.
    try Data(AccessSandbox.answersText(.authorized).utf8).write(to: URL(fileURLWithPath: elsewhere + "/access.json"))
    #expect(chmod(elsewhere + "/access.json", 0o600) == 0)

    let log = DiagnosticLog()
    let library = sandbox.library(log: log)
    #expect(library.authorizationStatus == .notDetermined)
    #expect(log.all.contains { $0.message.contains("\(store.directory.path): a symbolic link") }, "\(log.all)")

    // What `leitmotif access allow APP` does.
    #expect {
      try store.remember(.authorized, for: AccessSandbox.applicationID)
    } throws: { error in
      guard case LibraryError.accessStore(let path, let reason) = error else { return false }
      return path == store.directory.path && reason.contains("a symbolic link (expected a folder")
    }
    #expect(permissions(elsewhere) == 0o755)
    #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere) == ["access.json"])
    #expect(
      try String(contentsOfFile: elsewhere + "/access.json", encoding: .utf8) == AccessSandbox.answersText(.authorized))
    #expect(library.authorizationStatus == .notDetermined)
  }

  @Test(
    "Symbolic links at the answers file and the lock file are not followed: no answer is read through one, no file made where one points"
  )
  func linkedStateFilesRefused() throws {
    let sandbox = try AccessSandbox()
    let store = sandbox.store
    try FileManager.default.createDirectory(at: store.directory, withIntermediateDirectories: true)
    // The lock's O_CREAT would make the file a link points to.
    let victim = sandbox.directory.file("victim")
    #expect(symlink(victim, store.directory.path + "/access.lock") == 0)
    #expect {
      try store.remember(.authorized, for: AccessSandbox.applicationID)
    } throws: { error in
      guard case LibraryError.accessStore(let path, let reason) = error else { return false }
      return path == store.directory.path + "/access.lock"
        && reason.contains("a symbolic link (expected a regular file")
    }
    #expect(!FileManager.default.fileExists(atPath: victim))
    #expect(unlink(store.directory.path + "/access.lock") == 0)

    // An answers file that is a link to answers that would grant access.
    let elsewhere = sandbox.directory.file("granted.json")
    try Data(AccessSandbox.answersText(.authorized).utf8).write(to: URL(fileURLWithPath: elsewhere))
    #expect(chmod(elsewhere, 0o600) == 0)
    #expect(symlink(elsewhere, sandbox.storePath) == 0)
    let log = DiagnosticLog()
    let library = sandbox.library(log: log)
    #expect(library.authorizationStatus == .notDetermined)
    #expect(log.all.contains { $0.message.contains("a symbolic link") }, "\(log.all)")
    // The next answer replaces the link (a rename does not follow it); its target is untouched.
    try store.remember(.denied, for: AccessSandbox.applicationID)
    var status = stat()
    #expect(lstat(sandbox.storePath, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG)
    #expect(try String(contentsOfFile: elsewhere, encoding: .utf8) == AccessSandbox.answersText(.authorized))
    #expect(library.authorizationStatus == .denied)
  }

  @Test("The answers file is mode 0600 in a 0700 folder, replaced atomically, and reads as documented")
  func fileModesAndFormat() throws {
    let sandbox = try AccessSandbox()
    let old = umask(0o022)
    defer { umask(old) }
    #expect(try sandbox.library(prompt: ScriptedPrompt(answer: true)).requestAuthorization() == .authorized)
    #expect(permissions(sandbox.storePath) == 0o600)
    #expect(permissions(sandbox.store.directory.path) == 0o700)
    let contents = try String(contentsOfFile: sandbox.storePath, encoding: .utf8)
    let json = try #require(try JSONSerialization.jsonObject(with: Data(contents.utf8)) as? [String: Any])
    #expect(json["version"] as? Int == 1)
    let entry = try #require((json["applications"] as? [String: Any])?[AccessSandbox.applicationID] as? [String: Any])
    #expect(entry["status"] as? String == "authorized")
    #expect((entry["date"] as? String)?.hasSuffix("Z") == true)
    // No temporary files left beside it.
    let names = try FileManager.default.contentsOfDirectory(atPath: sandbox.store.directory.path).sorted()
    #expect(names == ["access.json", "access.lock"])
  }

  @Test("Writers in parallel (threads of one process here; processes take the same flock) lose no answer")
  func parallelWriters() throws {
    let sandbox = try AccessSandbox()
    let store = sandbox.store
    let failures = Mutex(0)
    DispatchQueue.concurrentPerform(iterations: 16) { index in
      do throws(LibraryError) {
        try store.remember(index % 2 == 0 ? .authorized : .denied, for: "app.\(index)")
      } catch {
        failures.withLock { $0 += 1 }
      }
    }
    #expect(failures.withLock { $0 } == 0)
    #expect(try store.answers().count == 16)
    #expect(try store.forget("app.3"))
    #expect(try !store.forget("app.3"))
    #expect(try store.answers().count == 15)
    #expect(throws: LibraryError.self) { try store.remember(.restricted, for: "app.1") }
  }

  @Test("An answer that cannot be saved holds for this run only, with a warning")
  func unsavedAnswer() throws {
    var sandbox = try AccessSandbox()
    // A regular file where a folder should be: mkdir fails even for root.
    _ = FileManager.default.createFile(atPath: sandbox.directory.file("blocker"), contents: Data())
    sandbox.configuration.stateDirectory = URL(fileURLWithPath: sandbox.directory.file("blocker/leitmotif"))
    let log = DiagnosticLog()
    let prompt = ScriptedPrompt(answer: true)
    let library = sandbox.library(prompt: prompt, log: log)
    #expect(try library.requestAuthorization() == .authorized)
    #expect(library.authorizationStatus == .authorized)
    #expect(try library.requestAuthorization() == .authorized)
    #expect(prompt.callCount == 1)
    #expect(log.all.contains { $0.severity == .warning && $0.message.contains("holds for this run only") })
    #expect(sandbox.library().authorizationStatus == .notDetermined)
  }

  @Test("An administrator's policy restricts: nobody is asked, the reason is shown; a damaged policy fails safe")
  func policyRestricts() throws {
    let sandbox = try AccessSandbox()
    try sandbox.store.remember(.authorized, for: AccessSandbox.applicationID)
    try sandbox.writePolicy(#"{"libraryAccess": "restricted", "reason": "Shared computers in the school library."}"#)
    let prompt = ScriptedPrompt(answer: true)
    let library = sandbox.library(prompt: prompt)
    #expect(library.authorizationStatus == .restricted)
    #expect(library.authorizationReason.contains("Shared computers in the school library."))
    #expect(try library.requestAuthorization() == .restricted)
    let error = try #require(accessError { try library.withIndex { _ in } })
    #expect(error.0 == .restricted)
    #expect(
      LibraryError.accessDenied(error.0, reason: error.1).description.contains(
        "Shared computers in the school library."))

    let verdicts: [(String, AuthorizationStatus, String)] = [
      (#"{"libraryAccess": "allowed"}"#, .authorized, "allowed access on"),
      ("{ libraryAccess: restricted", .restricted, "is damaged"),
      (#"{"libraryAccess": "maybe"}"#, .restricted, "\"maybe\""),
      (#"["restricted"]"#, .restricted, "is damaged"),
      (#"{"libraryAccess": "restricted"}"#, .restricted, "administrator's policy"),
    ]
    for (text, status, reason) in verdicts {
      try sandbox.writePolicy(text)
      // The same library notices the new policy (a new inode, size or time).
      #expect(library.authorizationStatus == status, "\(text)")
      #expect(library.authorizationReason.contains(reason), "\(text): \(library.authorizationReason)")
    }
    try FileManager.default.removeItem(at: sandbox.configuration.policyFile)
    try FileManager.default.createDirectory(at: sandbox.configuration.policyFile, withIntermediateDirectories: true)
    #expect(library.authorizationStatus == .restricted, "a directory where the policy file should be")
    #expect(prompt.callCount == 0)
  }

  @Test(
    "A policy that is a link to nothing, a link loop, a FIFO, unreadable or names a key twice restricts; a link to a policy is followed"
  )
  func policyThatCannotBeReadRestricts() throws {
    let sandbox = try AccessSandbox()
    try sandbox.store.remember(.authorized, for: AccessSandbox.applicationID)
    let policy = sandbox.configuration.policyFile.path
    try FileManager.default.createDirectory(
      atPath: sandbox.directory.file("etc/leitmotif"), withIntermediateDirectories: true)
    let library = sandbox.library()
    #expect(library.authorizationStatus == .authorized)

    // The issue's case: a dangling link was "no policy".
    let target = sandbox.directory.file("etc/leitmotif/site-policy.json")
    #expect(symlink(target, policy) == 0)
    #expect(library.authorizationStatus == .restricted)
    #expect(
      library.authorizationReason.contains("a symbolic link to \(target), which does not exist"),
      "\(library.authorizationReason)")
    #expect(sandbox.library().authorizationStatus == .restricted)
    // The link is followed once its target is there, and a target gone again restricts again.
    try Data(#"{"libraryAccess": "allowed"}"#.utf8).write(to: URL(fileURLWithPath: target))
    #expect(library.authorizationStatus == .authorized)
    try Data(#"{"libraryAccess": "restricted", "reason": "Linked."}"#.utf8).write(to: URL(fileURLWithPath: target))
    #expect(library.authorizationReason.contains("Linked."))
    #expect(unlink(target) == 0)
    #expect(library.authorizationStatus == .restricted)
    #expect(library.authorizationReason.contains("does not exist"))

    #expect(unlink(policy) == 0)
    #expect(symlink(policy, policy) == 0)
    #expect(library.authorizationStatus == .restricted, "a link to itself")
    #expect(unlink(policy) == 0)
    #expect(mkfifo(policy, 0o644) == 0)
    #expect(library.authorizationStatus == .restricted, "a FIFO")
    #expect(library.authorizationReason.contains("not a regular file"))
    #expect(unlink(policy) == 0)
    #expect(library.authorizationStatus == .authorized, "no policy")

    // Two "libraryAccess" keys: JSONDecoder took the first (allowed), other readers the last.
    try sandbox.writePolicy(#"{"libraryAccess": "allowed", "libraryAccess": "restricted"}"#)
    #expect(library.authorizationStatus == .restricted)
    #expect(library.authorizationReason.contains("\"libraryAccess\" appears twice"), "\(library.authorizationReason)")

    // Unreadable: root reads a file of mode 0000 anyway, so only another user can check this.
    if geteuid() != 0 {
      try sandbox.writePolicy(#"{"libraryAccess": "allowed"}"#)
      #expect(chmod(policy, 0) == 0)
      #expect(library.authorizationStatus == .restricted, "an unreadable policy")
      #expect(library.authorizationReason.contains("cannot be read"))
    }
  }

  @Test("LEITMOTIF_LIBRARY_ACCESS=restricted restricts without asking; other values fail safe; allowed does not")
  func environmentRestricts() throws {
    for (value, status) in [
      ("restricted", AuthorizationStatus.restricted), ("nope", .restricted), ("allowed", .denied),
    ] {
      let sandbox = try AccessSandbox(environment: ["LEITMOTIF_LIBRARY_ACCESS": value])
      try sandbox.store.remember(.denied, for: AccessSandbox.applicationID)
      let prompt = ScriptedPrompt(answer: true)
      let library = sandbox.library(prompt: prompt)
      #expect(try library.requestAuthorization() == status, "\(value)")
      #expect(prompt.callCount == 0)
      if status == .restricted {
        #expect(library.authorizationReason.contains("LEITMOTIF_LIBRARY_ACCESS=\(value)"))
      }
    }
    let fresh = try AccessSandbox(environment: ["LEITMOTIF_LIBRARY_ACCESS": "restricted"])
    let prompt = ScriptedPrompt(answer: true)
    #expect(try fresh.library(prompt: prompt).requestAuthorization() == .restricted)
    #expect(prompt.callCount == 0)
    #expect(!FileManager.default.fileExists(atPath: fresh.storePath))
  }

  @Test("Without a usage description asking is an error that says what to set; nobody is asked, nothing is touched")
  func missingUsageDescription() throws {
    for description in [nil, "", "  \n"] as [String?] {
      var sandbox = try AccessSandbox()
      sandbox.configuration.usageDescription = description
      let prompt = ScriptedPrompt(answer: true)
      let library = sandbox.library(prompt: prompt)
      #expect {
        try library.requestAuthorization()
      } throws: { error in
        guard case LibraryError.missingUsageDescription(let application) = error else { return false }
        return application == AccessSandbox.applicationID
          && "\(error)".contains("set MediaLibrary.Configuration.usageDescription")
          && "\(error)".contains("the sentence the player reads when asked")
      }
      #expect(prompt.callCount == 0)
      #expect(!FileManager.default.fileExists(atPath: sandbox.store.directory.path))
      #expect(!FileManager.default.fileExists(atPath: sandbox.directory.file("cache")))
    }
  }

  @Test("A revocation with the access store's code reaches a running library at once, and its observer within a second")
  func revocationWhileRunning() async throws {
    let sandbox = try AccessSandbox()
    let store = sandbox.store
    try store.remember(.authorized, for: AccessSandbox.applicationID)
    let library = sandbox.library()
    try library.withIndex { _ in }
    #expect(FileManager.default.fileExists(atPath: sandbox.configuration.indexPath))

    let seen = Mutex<[(AuthorizationStatus, ContinuousClock.Instant)]>([])
    let observation = library.observeAuthorization { status in
      seen.withLock { $0.append((status, .now)) }
    }
    defer { observation.cancel() }

    // What `leitmotif access deny APP` does.
    let revoked = ContinuousClock.now
    try store.remember(.denied, for: AccessSandbox.applicationID)
    // The next library call already sees it (a stat per check), and reads nothing.
    let bodyRan = Mutex(false)
    #expect(accessError { try library.withIndex { _ in bodyRan.withLock { $0 = true } } }?.0 == .denied)
    #expect(!bodyRan.withLock { $0 })

    // The observer is told within a second, even without a library call. A second library, so
    // that its own poll (not the call above) has to notice.
    let quiet = sandbox.library()
    try store.remember(.authorized, for: AccessSandbox.applicationID)
    let quietSeen = Mutex<[(AuthorizationStatus, ContinuousClock.Instant)]>([])
    let quietObservation = quiet.observeAuthorization { status in quietSeen.withLock { $0.append((status, .now)) } }
    defer { quietObservation.cancel() }
    let revokedAgain = ContinuousClock.now
    try store.remember(.denied, for: AccessSandbox.applicationID)
    // The handler stamps when it was called: this loop (on the test runner's shared threads,
    // which other tests keep busy) may itself wake late without that counting against the library.
    while quietSeen.withLock({ $0.isEmpty }) && ContinuousClock.now - revokedAgain < .seconds(20) {
      try await Task.sleep(for: .milliseconds(20))
    }
    let heardAgain = quietSeen.withLock { $0 }
    #expect(heardAgain.map(\.0) == [.denied])
    let delay = (heardAgain.first?.1 ?? .now) - revokedAgain
    #expect(delay < .seconds(1), "the observer heard of the revocation after \(delay)")

    try await Task.sleep(for: .milliseconds(700))
    let heard = seen.withLock { $0 }
    // The poll samples the state: the allow and deny in between may fall between two polls.
    #expect(heard.first?.0 == .denied, "\(heard.map(\.0))")
    #expect(heard.last?.0 == .denied, "\(heard.map(\.0))")
    if let first = heard.first { #expect(first.1 - revoked < .seconds(1)) }

    // Reset: notDetermined again, and the observer hears it.
    try store.forget(AccessSandbox.applicationID)
    try await Task.sleep(for: .milliseconds(800))
    #expect(seen.withLock { $0.last?.0 } == .notDetermined)

    // After cancelling, nothing more arrives.
    observation.cancel()
    try store.remember(.authorized, for: AccessSandbox.applicationID)
    try await Task.sleep(for: .milliseconds(800))
    #expect(seen.withLock { $0.last?.0 } == .notDetermined)
  }

  @Test("authorizationUpdates yields the changes as an AsyncStream")
  func authorizationUpdatesStream() async throws {
    let sandbox = try AccessSandbox()
    let library = sandbox.library()
    let updates = library.authorizationUpdates
    let store = sandbox.store
    let changer = Task {
      try await Task.sleep(for: .milliseconds(100))
      try store.remember(.authorized, for: AccessSandbox.applicationID)
      try await Task.sleep(for: .milliseconds(800))
      try store.remember(.denied, for: AccessSandbox.applicationID)
    }
    var heard: [AuthorizationStatus] = []
    for await status in updates {
      heard.append(status)
      if heard.count == 2 { break }
    }
    try await changer.value
    #expect(heard == [.authorized, .denied])
  }

  @Test(
    "The library index is made 0600 (its -wal and -shm too) whatever the umask; one an older version left 0644 is tightened"
  )
  func indexIsPrivate() throws {
    let sandbox = try AccessSandbox()
    try sandbox.store.remember(.authorized, for: AccessSandbox.applicationID)
    let old = umask(0o022)
    defer { umask(old) }
    let path = sandbox.configuration.indexPath
    try sandbox.library().withIndex { _ in
      #expect(permissions(path) == 0o600)
      for suffix in ["-wal", "-shm"] {
        #expect(FileManager.default.fileExists(atPath: path + suffix), "\(suffix)")
        #expect(permissions(path + suffix) == 0o600, "\(suffix)")
      }
    }
    let older = sandbox.directory.file("older.sqlite")
    _ = try LibraryIndex(path: older) { _ in }
    #expect(chmod(older, 0o644) == 0)
    _ = try LibraryIndex(path: older) { _ in }
    #expect(permissions(older) == 0o600)
  }

  @Test(
    "Without authorization no file under the library folders is opened (FIFOs that would block) and no index is made")
  func nothingOpenedWithoutAuthorization() throws {
    let sandbox = try AccessSandbox()
    let music = sandbox.directory.file("Music")
    mkdir(music + "/Album", 0o755)
    let traps = [music + "/theme.ogg", music + "/Album/01 Boss.mp3", music + "/playlist.m3u"]
    for trap in traps { try #require(mkfifo(trap, 0o644) == 0) }

    // The trap works: opening one for reading blocks until somebody writes, so a call that
    // opened one would not return.
    #expect(!finishes(within: .milliseconds(300)) { _ = open(traps[0], O_RDONLY) })
    release(traps[0])

    let cases: [(String, AuthorizationStatus, (AccessSandbox) throws -> AccessSandbox)] = [
      ("never asked", .notDetermined, { $0 }),
      (
        "denied", .denied,
        { sandbox in
          try sandbox.store.remember(.denied, for: AccessSandbox.applicationID)
          return sandbox
        }
      ),
      (
        "restricted by policy", .restricted,
        { sandbox in
          try sandbox.store.remember(.authorized, for: AccessSandbox.applicationID)
          try sandbox.writePolicy(#"{"libraryAccess": "restricted", "reason": "test"}"#)
          return sandbox
        }
      ),
    ]
    for (name, expected, setUp) in cases {
      var sandbox = sandbox
      sandbox.configuration.cacheDirectory = URL(fileURLWithPath: sandbox.directory.file("cache-\(expected)"))
      let configured = try setUp(sandbox)
      let library = configured.library(prompt: ScriptedPrompt(answer: nil))
      let outcome = Mutex<(AuthorizationStatus?, Bool)>((nil, false))
      let returned = finishes(within: .seconds(5)) {
        _ = try? library.requestAuthorization()
        let error = accessError {
          // What a library reader does with the index: open every file in the folders.
          try library.withIndex { _ in
            outcome.withLock { $0.1 = true }
            for trap in traps { _ = open(trap, O_RDONLY) }
          }
        }
        outcome.withLock { $0.0 = error?.0 }
      }
      if !returned { traps.forEach(release) }
      #expect(returned, "\(name): a library call blocked on a file in the library folder")
      #expect(outcome.withLock { $0.0 } == expected, "\(name)")
      #expect(!outcome.withLock { $0.1 }, "\(name): the body ran without authorization")
      #expect(!FileManager.default.fileExists(atPath: configured.configuration.indexPath), "\(name)")
      #expect(!FileManager.default.fileExists(atPath: configured.configuration.resolvedCacheDirectory.path))
    }
  }

  /// Runs `body` on a thread of its own; whether it returned within `limit`.
  func finishes(within limit: Duration, _ body: @escaping @Sendable () -> Void) -> Bool {
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      body()
      done.signal()
    }
    let nanoseconds = limit.components.seconds * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000
    return done.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .success
  }

  /// Lets a reader blocked on the FIFO at `path` go (a writer comes and goes).
  func release(_ path: String) {
    let writer = open(path, O_WRONLY | O_NONBLOCK)
    if writer >= 0 { close(writer) }
  }
}

@Suite("LibraryAccess: the `leitmotif access` command")
struct LibraryAccessCLITests {
  func run(_ arguments: [String], stateHome: String, environment extra: [String: String] = [:]) throws
    -> LeitmotifCommand.Run
  {
    var environment = ProcessInfo.processInfo.environment
    environment["XDG_STATE_HOME"] = stateHome
    environment.removeValue(forKey: "LEITMOTIF_LIBRARY_ACCESS")
    return try LeitmotifCommand.run(["access"] + arguments, environment: environment.merging(extra) { $1 })
  }

  @Test(
    "allow, deny, reset and list change and show the answers a running library reads; bad usage is status 2",
    .enabled(if: LeitmotifCommand.executable != nil, "the leitmotif executable is not next to the test bundle"))
  func accessCommand() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-access-cli")
    let stateHome = directory.file("state")
    var configuration = MediaLibrary.Configuration(applicationID: "com.example.dungeon")
    configuration.environment = ["XDG_STATE_HOME": stateHome, "HOME": directory.path]
    configuration.policyFile = URL(fileURLWithPath: directory.file("no-policy.json"))
    let library = MediaLibrary(configuration: configuration)
    #expect(library.authorizationStatus == .notDetermined)

    let allow = try run(["allow", "com.example.dungeon"], stateHome: stateHome)
    #expect(allow.status == 0, "\(allow.errors)")
    #expect(library.authorizationStatus == .authorized)
    #expect(allow.output.contains("com.example.dungeon may now read your music library (authorized"), "\(allow.output)")
    #expect(try run(["deny", "org.example.racer"], stateHome: stateHome).status == 0)

    let list = try run(["list"], stateHome: stateHome)
    #expect(list.status == 0)
    let lines = list.output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
    #expect(lines.map { $0.first } == ["com.example.dungeon", "org.example.racer"])
    #expect(lines.map { $0.dropFirst().first } == ["authorized", "denied"])
    #expect(lines.allSatisfy { $0.last?.hasSuffix("Z") == true && $0.count == 3 }, "\(list.output)")

    let deny = try run(["deny", "com.example.dungeon"], stateHome: stateHome)
    #expect(deny.status == 0)
    #expect(deny.output.contains("may no longer read your music library (denied"), "\(deny.output)")
    #expect(library.authorizationStatus == .denied)
    let reset = try run(["reset", "com.example.dungeon"], stateHome: stateHome)
    #expect(reset.status == 0)
    #expect(reset.output.contains("forgot the answer for com.example.dungeon"), "\(reset.output)")
    #expect(library.authorizationStatus == .notDetermined)
    let again = try run(["reset", "com.example.dungeon"], stateHome: stateHome)
    #expect(again.status == 0)
    #expect(again.errors.contains("had no remembered answer"))
    #expect(try run(["list"], stateHome: stateHome).output.split(separator: "\n").count == 1)
    #expect(permissions(stateHome + "/leitmotif/access.json") == 0o600)

    for bad in [[], ["allow"], ["allow", "a", "b"], ["grant", "x"], ["list", "x"], ["deny", "two words"]] {
      let refused = try run(bad, stateHome: stateHome)
      #expect(refused.status == 2, "\(bad)")
      #expect(refused.errors.contains("leitmotif: "), "\(bad)")
    }

    try Data("{".utf8).write(to: URL(fileURLWithPath: stateHome + "/leitmotif/access.json"))
    let damaged = try run(["list"], stateHome: stateHome)
    #expect(damaged.status == 1)
    #expect(damaged.errors.contains("cannot be used"))
    #expect(try run(["allow", "com.example.dungeon"], stateHome: stateHome).status == 0)
    #expect(library.authorizationStatus == .authorized)

    let restricted = try run(
      ["list"], stateHome: stateHome, environment: ["LEITMOTIF_LIBRARY_ACCESS": "restricted"])
    #expect(restricted.status == 0)
    #expect(restricted.errors.contains("every application is restricted"))

    // A symbolic link at the state folder: refused, and the folder it points to is left as it was.
    let linkedHome = directory.file("linked-state")
    let elsewhere = directory.file("elsewhere")
    #expect(mkdir(linkedHome, 0o755) == 0 && mkdir(elsewhere, 0o755) == 0 && chmod(elsewhere, 0o755) == 0)
    #expect(symlink(elsewhere, linkedHome + "/leitmotif") == 0)
    let linked = try run(["allow", "com.example.dungeon"], stateHome: linkedHome)
    #expect(linked.status == 1)
    #expect(linked.errors.contains("\(linkedHome)/leitmotif: "), "\(linked.errors)")
    #expect(linked.errors.contains("a symbolic link (expected a folder"), "\(linked.errors)")
    #expect(permissions(elsewhere) == 0o755)
    #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty)
  }
}
