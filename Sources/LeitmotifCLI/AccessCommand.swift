import Foundation
import Leitmotif

/// `leitmotif access list | allow APP | deny APP | reset APP`: the player's say over which
/// applications may read their music library (the analogue of Settings > Privacy). It changes
/// the remembered answers through `LibraryAccessStore`, the code `MediaLibrary` reads them
/// with; a game that is running sees the change within a second.
enum AccessCommand {
  /// `value` as every command's `--app` (and `access`) takes it: a usage error (exit 2) when it
  /// is no application id. Scan and query took any, then said there was no consent (exit 3),
  /// suggesting an `access allow` that refused the same id (a player's trial).
  static func applicationID(_ value: String, for command: String) -> String {
    guard LibraryAccessStore.isValidApplicationID(value) else {
      fail("\(command): \"\(value)\" is not an application id (1 to 255 bytes, no spaces or control characters)")
    }
    return value
  }

  static let usage = """
    usage:
      leitmotif access list          each application id with its answer and when it was given
      leitmotif access allow APP     APP may read your music library (without asking)
      leitmotif access deny APP      APP may not (a running game stops reading within a second)
      leitmotif access reset APP     forget the answer: APP asks again next time
    The answers live in $XDG_STATE_HOME/leitmotif/access.json (default ~/.local/state/leitmotif/).
    exit status: 0 done, 1 the answers file cannot be read or written, 2 a usage error
    """

  static func run(_ arguments: [String]) -> Int32 {
    let store = LibraryAccessStore()
    switch arguments.first {
    case "list":
      guard arguments.count == 1 else { fail("access list takes no arguments\n\(usage)") }
      return list(store)
    case "allow", "deny", "reset":
      let verb = arguments[0]
      guard arguments.count == 2 else { fail("access \(verb) needs one application id (APP)\n\(usage)") }
      let application = arguments[1]
      return change(store, verb: verb, application: applicationID(application, for: "access \(verb)"))
    case "help", "--help", "-h":
      print(usage)
      return 0
    case nil:
      fail("access needs a subcommand\n\(usage)")
    case let other?:
      fail("access: unknown subcommand \"\(other)\"\n\(usage)")
    }
  }

  /// One line per application, sorted by id: `APP  STATUS  DATE` (ISO 8601, UTC).
  private static func list(_ store: LibraryAccessStore) -> Int32 {
    let answers: [String: LibraryAccessStore.Answer]
    do {
      answers = try store.answers()
    } catch {
      fail("\(error)", status: 1)
    }
    noteRestriction()
    if answers.isEmpty {
      FileHandle.standardError.write(Data("leitmotif: no answers remembered (in \(store.file.path))\n".utf8))
      return 0
    }
    let width = answers.keys.map(\.count).max() ?? 0
    let statusWidth = AuthorizationStatus.allCases.map(\.rawValue.count).max() ?? 0
    for (application, answer) in answers.sorted(by: { $0.key < $1.key }) {
      let name = application.padding(toLength: width, withPad: " ", startingAt: 0)
      let status = answer.status.rawValue.padding(toLength: statusWidth, withPad: " ", startingAt: 0)
      say("\(name)  \(status)  \(answer.date.formatted(.iso8601))")
    }
    return 0
  }

  private static func change(_ store: LibraryAccessStore, verb: String, application: String) -> Int32 {
    do {
      // Each says what it did: a player who runs it wants to see that it took.
      switch verb {
      case "allow":
        try store.remember(.authorized, for: application)
        say("\(application) may now read your music library (authorized; remembered in \(store.file.path))")
      case "deny":
        try store.remember(.denied, for: application)
        say("\(application) may no longer read your music library (denied; remembered in \(store.file.path))")
      default:
        if try store.forget(application) {
          say("forgot the answer for \(application): it asks again next time (notDetermined)")
        } else {
          FileHandle.standardError.write(Data("leitmotif: \(application) had no remembered answer\n".utf8))
        }
      }
    } catch {
      fail("\(error)", status: 1)
    }
    noteRestriction()
    return 0
  }

  /// An administrator's policy or LEITMOTIF_LIBRARY_ACCESS overrides every answer: say so (on
  /// standard error, so `list`'s output stays one line per application).
  private static func noteRestriction() {
    let library = MediaLibrary(configuration: MediaLibrary.Configuration(applicationID: "leitmotif"))
    guard library.authorizationStatus == .restricted else { return }
    FileHandle.standardError.write(
      Data(
        "leitmotif: every application is restricted, whatever its answer: \(library.authorizationReason)\n".utf8))
  }
}
