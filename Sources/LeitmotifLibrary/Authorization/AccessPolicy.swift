import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

/// What an administrator (or whoever starts the game) decided, above the player's answer:
/// the policy file (`/etc/leitmotif/policy.json`, `Configuration.policyFile`) and the
/// environment variable `LEITMOTIF_LIBRARY_ACCESS`.
///
/// The policy file is one JSON object:
///
/// ```json
/// { "libraryAccess": "restricted", "reason": "The school's computers do not share music." }
/// ```
///
/// `libraryAccess` is `restricted` (nobody is asked; every application is restricted and
/// `reason` is shown) or `allowed` (the players decide); `reason` is optional. Other keys are
/// ignored. No file means no policy. Anything else at that path fails safe: restricted, with a
/// reason that says what is wrong. That is a file that cannot be read, is not a regular file, is
/// not such an object, names a key twice or has another `libraryAccess` value, and a symbolic
/// link to nothing (the administrator meant a policy to be there; it is not "no policy").
///
/// `LEITMOTIF_LIBRARY_ACCESS=restricted` restricts; unset or empty, or `allowed`, does not; any
/// other value fails safe as restricted, saying the value is not understood.
package struct AccessPolicy: Sendable, Equatable {
  /// Why access is restricted, or nil when it is not.
  var restriction: String?

  static let sizeLimitBytes = 64 << 10
  static let environmentVariable = "LEITMOTIF_LIBRARY_ACCESS"

  private struct Contents: Decodable {
    var libraryAccess: String
    var reason: String?
  }

  /// The policy file's verdict, given what was read from `path` (nil: no file).
  package static func file(_ path: String, read: Result<Data?, StateFileError>) -> AccessPolicy {
    let data: Data
    switch read {
    case .success(nil): return AccessPolicy(restriction: nil)
    case .success(let contents?): data = contents
    case .failure(let error):
      return AccessPolicy(restriction: "the policy file \(path) cannot be read (\(error)), so access is restricted")
    }
    guard let contents = try? JSONDecoder().decode(Contents.self, from: data) else {
      return AccessPolicy(
        restriction:
          "the policy file \(path) is damaged (expected {\"libraryAccess\": \"restricted\" or \"allowed\", \"reason\": \"...\"}), so access is restricted"
      )
    }
    // Two "libraryAccess" keys: the decoder keeps the first, other readers the last. The
    // administrator cannot have meant both; fail safe.
    switch JSONDuplicateKeys.check(data) {
    case .none: break
    case .duplicate(let key, let keyPath):
      return AccessPolicy(
        restriction:
          "the policy file \(path) is damaged (\(JSONDuplicateKeys.describe(key: key, path: keyPath))), so access is restricted"
      )
    case .unreadable(let reason):
      return AccessPolicy(restriction: "the policy file \(path) is damaged (\(reason)), so access is restricted")
    }
    switch contents.libraryAccess {
    case "allowed": return AccessPolicy(restriction: nil)
    case "restricted":
      let reason = contents.reason?.trimmingWhitespaceAndNewlines() ?? ""
      return AccessPolicy(
        restriction: "restricted by the administrator's policy (\(path))" + (reason.isEmpty ? "" : ": \(reason)"))
    default:
      return AccessPolicy(
        restriction:
          "the policy file \(path) says \"libraryAccess\": \"\(contents.libraryAccess)\" (expected restricted or allowed), so access is restricted"
      )
    }
  }

  /// The environment's verdict.
  static func environment(_ environment: [String: String]) -> AccessPolicy {
    switch environment[environmentVariable] {
    case nil, "", "allowed": return AccessPolicy(restriction: nil)
    case "restricted": return AccessPolicy(restriction: "\(environmentVariable)=restricted is set")
    case let value?:
      return AccessPolicy(
        restriction:
          "\(environmentVariable)=\(value) is not understood (expected restricted or allowed), so access is restricted")
    }
  }
}
