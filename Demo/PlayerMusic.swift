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
    let arguments = [
      "pick", "--multiple", "--json", "--library", folder, "--app", applicationID, "--prompt",
      "Pick the songs for exploring",
    ]
    guard let data = runInForeground(executable.path, arguments) else {
      Output.shared.print("--pick: the picker could not start")
      return nil
    }
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

/// Runs `path` with `arguments` in this process's group, so that it may read the terminal (the
/// picker draws on /dev/tty and reads its keys there), and returns what it wrote to standard
/// output. Foundation's `Process` puts the child in a process group of its own, where reading
/// the terminal stops it (SIGTTIN); `posix_spawn` without that flag does not.
private func runInForeground(_ path: String, _ arguments: [String]) -> Data? {
  var pipeEnds: [Int32] = [0, 0]
  guard pipe(&pipeEnds) == 0 else { return nil }
  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], STDOUT_FILENO)
  posix_spawn_file_actions_addclose(&actions, pipeEnds[0])
  let argv = ([path] + arguments).map { strdup($0) } + [nil]
  defer { argv.forEach { free($0) } }
  var child: pid_t = 0
  let spawned = posix_spawn(&child, path, &actions, nil, argv, environ)
  close(pipeEnds[1])
  defer { close(pipeEnds[0]) }
  guard spawned == 0 else { return nil }
  var output = Data()
  var buffer = [UInt8](repeating: 0, count: 4096)
  while true {
    let count = read(pipeEnds[0], &buffer, buffer.count)
    if count > 0 {
      output.append(contentsOf: buffer[0..<count])
    } else if count == 0 || errno != EINTR {
      break
    }
  }
  var status: Int32 = 0
  while waitpid(child, &status, 0) < 0 && errno == EINTR {}
  return output
}
