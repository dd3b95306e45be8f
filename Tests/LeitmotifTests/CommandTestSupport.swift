import Foundation

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

/// Runs the `leitmotif` executable SwiftPM built next to this test bundle (`swift test` rebuilds
/// it, so it is never stale) and collects what it printed.
enum LeitmotifCommand {
  /// The binary, if there is one next to the test bundle.
  static let executable: URL? = executable(named: "leitmotif")

  /// A program SwiftPM built next to the test bundle (`leitmotif`, `leitmotif-demo`).
  static func executable(named name: String) -> URL? {
    var candidates: [URL] = []
    if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
      candidates.append(URL(fileURLWithPath: path).deletingLastPathComponent())
    }
    candidates.append(Bundle.main.bundleURL)
    candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
    return candidates.map { $0.appendingPathComponent(name) }
      .first { FileManager.default.isExecutableFile(atPath: $0.path) }
  }

  struct Run {
    var status: Int32
    var output: String
    var errors: String
  }

  struct NotBuilt: Error, CustomStringConvertible {
    var program = "leitmotif"
    var description: String { "the \(program) executable is not next to the test bundle" }
  }

  /// Runs `leitmotif ARGUMENTS` with `environment` (nil: this process's) and waits for it.
  static func run(
    _ arguments: [String], program: String = "leitmotif", environment: [String: String]? = nil,
    input: FileHandle? = nil
  ) throws -> Run {
    guard let executable = executable(named: program) else { throw NotBuilt(program: program) }
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let environment { process.environment = environment }
    if let input { process.standardInput = input }
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return Run(
      status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
      errors: String(decoding: errorData, as: UTF8.self))
  }
}

extension MediaLibrary.Configuration {
  /// A library configuration that keeps everything inside `root`: answers in root/state, the
  /// index in root/cache, HOME at root (so no XDG setting of the machine leaks in), and a policy
  /// file that does not exist.
  static func sandboxed(
    applicationID: String, root: String, music: String, usageDescription: String? = "Your music plays in tests."
  ) -> MediaLibrary.Configuration {
    var configuration = MediaLibrary.Configuration(
      applicationID: applicationID, usageDescription: usageDescription, folders: [URL(fileURLWithPath: music)])
    configuration.stateDirectory = URL(fileURLWithPath: root + "/state")
    configuration.cacheDirectory = URL(fileURLWithPath: root + "/cache")
    configuration.environment = ["HOME": root]
    configuration.policyFile = URL(fileURLWithPath: root + "/no-policy.json")
    return configuration
  }
}
