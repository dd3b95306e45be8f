import Foundation
import LeitmotifFixtures
import Testing

/// `make format` on a fresh clone changes nothing: the committed Swift is already formatted.
/// The same folders are copied (with .swift-format) into a temporary folder, formatted there by
/// the toolchain's `swift format`, and compared file by file, so the test never touches the tree.
@Suite("make format changes nothing")
struct FormatTests {
  static let folders = ["Package.swift", "Sources", "Tests", "Demo", "Examples/hello-music"]

  @Test("Every Swift file is as swift format leaves it")
  func formatted() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-format")
    let files = FileManager.default
    var swiftFiles: [String] = []
    for folder in Self.folders {
      let source = CGame.repository + "/" + folder
      if folder.hasSuffix(".swift") {
        swiftFiles.append(folder)
        continue
      }
      let walker = try #require(files.enumerator(atPath: source))
      for case let path as String in walker where path.hasSuffix(".swift") && !path.contains(".build/") {
        swiftFiles.append(folder + "/" + path)
      }
    }
    #expect(swiftFiles.count > 100)
    for file in swiftFiles + [".swift-format"] {
      let copy = directory.file(file)
      try files.createDirectory(
        atPath: (copy as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
      try files.copyItem(atPath: CGame.repository + "/" + file, toPath: copy)
    }
    let run = try CGame.run(
      "/usr/bin/env", ["swift", "format", "--in-place", "--recursive"] + Self.folders, in: directory)
    try #require(run.status == 0, "swift format failed: \(run.errors)")
    var changed: [String] = []
    for file in swiftFiles {
      let original = try Data(contentsOf: URL(fileURLWithPath: CGame.repository + "/" + file))
      let formatted = try Data(contentsOf: URL(fileURLWithPath: directory.file(file)))
      if original != formatted { changed.append(file) }
    }
    #expect(changed.isEmpty, "make format would change \(changed.count) files: \(changed)")
  }
}
