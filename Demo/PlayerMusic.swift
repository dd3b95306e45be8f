import Foundation
import Leitmotif

/// The player's own music for the demo: their consent first (asked on the terminal), then the
/// index, and, with `--pick`, the songs they pick in `leitmotif pick`.
enum PlayerMusic {
  static let applicationID = "leitmotif-demo"
  static let usageDescription = "The Leitmotif demo plays your music while you explore its level."

  /// The library in `folder`, scanned if the player agrees. Without consent the level plays the
  /// bundled music, and the director says why.
  static func open(folder: String) -> MediaLibrary {
    var configuration = MediaLibrary.Configuration(
      applicationID: applicationID, usageDescription: usageDescription,
      folders: [URL(fileURLWithPath: folder).standardizedFileURL])
    configuration.applicationName = "Leitmotif demo"
    let library = MediaLibrary(configuration: configuration, prompt: TerminalPrompt(), diagnostics: printDiagnostic)
    if library.authorizationStatus == .notDetermined { _ = try? library.requestAuthorization() }
    let status = library.authorizationStatus
    guard status == .authorized else {
      Output.shared.print("your music: access is \(status): the level plays the bundled music")
      return library
    }
    do {
      let report = try library.scan()
      Output.shared.print("your music: \(folder) indexed (\(report))")
    } catch {
      Output.shared.print("your music: the scan failed (\(error)): the level plays the bundled music")
    }
    return library
  }

  /// Runs the terminal picker (`leitmotif pick`, built beside this program) and returns what was
  /// picked; nil when the player cancels or the picker cannot run (said on the way).
  static func pick(library: MediaLibrary, folder: String) -> MediaItemCollection? {
    guard library.authorizationStatus == .authorized else { return nil }
    let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
      .deletingLastPathComponent().appendingPathComponent("leitmotif")
    guard FileManager.default.isExecutableFile(atPath: executable.path) else {
      Output.shared.print("--pick: the picker (leitmotif) is not built; run `swift build --product leitmotif` first")
      return nil
    }
    let process = Process()
    process.executableURL = executable
    process.arguments = [
      "pick", "--multiple", "--json", "--library", folder, "--app", applicationID,
      "--prompt", "Pick the songs for exploring",
    ]
    let output = Pipe()
    process.standardOutput = output
    do { try process.run() } catch {
      Output.shared.print("--pick: the picker could not start: \(error)")
      return nil
    }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    struct Picked: Decodable { var assetURL: String }
    let items = String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line -> MediaItem? in
      guard let picked = try? JSONDecoder().decode(Picked.self, from: Data(line.utf8)),
        let url = URL(string: picked.assetURL)
      else { return nil }
      return try? MediaItem.load(path: url.path)
    }
    guard !items.isEmpty else {
      Output.shared.print("--pick: nothing picked: exploring plays your library (or the bundled music)")
      return nil
    }
    Output.shared.print("--pick: \(items.count) song\(items.count == 1 ? "" : "s") for exploring")
    return MediaItemCollection(items: items, name: "Picks")
  }
}
