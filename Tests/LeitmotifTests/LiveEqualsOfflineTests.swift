import Foundation
import LeitmotifFixtures
import Testing

@testable import Leitmotif

/// What the real-time engine really plays, captured from OpenAL Soft's wave backend, against the
/// offline render of the same level: the mixer runs on one sample clock, and beat and bar
/// transitions are found from the playing music's own position, so the two are the same, sample
/// for sample (no tolerance: the same voices are summed in the same order).
@Suite("Live equals offline: the wave backend's capture against the offline render")
struct LiveEqualsOfflineTests {
  static let assets = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Assets/music").path

  /// A level of the bundled music whose changes all wait for the playing music's grid: a bar
  /// (96 BPM, 2.5 s), a beat (144 BPM), a bar (100 BPM, 2.4 s). The cues fall mid-bar and
  /// mid-beat, so the line each one waits for is the same whenever, within ±0.1 s, it arrives.
  static let level = """
    {
      assets: "\(assets)",
      start: "intro",
      sources: {
        calm: { bundled: "explore.ogg" },
        fight: { bundled: "combat.ogg" },
        sneak: { bundled: "stealth.ogg" },
      },
      states: {
        intro: { music: "calm", transition: { seconds: 0 } },
        explore: { music: "calm", transition: { seconds: 1, at: "bar" } },
        combat: { music: "fight", transition: { seconds: 0.5, at: "bar" } },
        stealth: { music: "sneak", transition: { seconds: 0.75, curve: "s-curve", at: "beat" } },
      },
      rules: [
        { on: "fight", do: { state: "combat" } },
        { on: "hide", do: { state: "stealth" } },
        { on: "calm", do: { state: "explore" } },
      ],
    }
    """
  static let script = """
    [
      { at: 3.3, cue: "fight" },
      { at: 8.6, cue: "hide" },
      { at: 13.4, cue: "calm" },
    ]
    """

  /// Stereo Float32 frames of a WAV file (the wave backend leaves its sizes at 0xFFFFFFFF until
  /// the device closes: everything after the `data` tag is read).
  static func frames(_ path: String) throws -> [Float] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    guard let range = data.range(of: Data("data".utf8)) else { return [] }
    let start = range.upperBound + 4
    let count = (data.count - start) / 4
    return data[start...].withUnsafeBytes { raw in
      (0..<count).map { raw.loadUnaligned(fromByteOffset: $0 * 4, as: Float.self) }
    }
  }

  @Test("20 s of a level with bar and beat transitions: the live capture is the offline render, sample for sample")
  func liveEqualsOffline() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-live")
    let cues = directory.file("level.json5")
    let events = directory.file("script.json5")
    let capture = directory.file("live.wav")
    let offline = directory.file("offline.wav")
    let configuration = directory.file("wave.conf")
    try Self.level.write(toFile: cues, atomically: true, encoding: .utf8)
    try Self.script.write(toFile: events, atomically: true, encoding: .utf8)
    try "[general]\ndrivers=wave\nfrequency=48000\n[wave]\nfile=\(capture)\n".write(
      toFile: configuration, atomically: true, encoding: .utf8)
    var environment = ProcessInfo.processInfo.environment
    environment["ALSOFT_DRIVERS"] = "wave"
    environment["ALSOFT_CONF"] = configuration

    let live = try LeitmotifCommand.run(
      ["cues", "simulate", cues, "--events", events, "--live", "--duration", "20"], environment: environment)
    #expect(live.status == 0, "\(live.errors)")
    let rendered = try LeitmotifCommand.run(
      ["cues", "simulate", cues, "--events", events, "--out", offline, "--duration", "20"])
    #expect(rendered.status == 0, "\(rendered.errors)")
    // The same three changes, in the same order, each on its line.
    func changes(_ output: String) -> [String] {
      output.split(separator: "\n").filter { $0.contains("] state \"") }.map {
        String($0[$0.range(of: "state \"")!.lowerBound...])
      }
    }
    #expect(changes(live.output).count == 3, "\(live.output)")
    #expect(changes(live.output) == changes(rendered.output))

    let heard = try Self.frames(capture)
    let expected = try Self.frames(offline)
    // The capture starts when the device opened; the music starts on the first frame it mixed.
    let lead = try #require((0..<(heard.count / 2)).first { heard[2 * $0] != 0 || heard[2 * $0 + 1] != 0 })
    let first = try #require((0..<(expected.count / 2)).first { expected[2 * $0] != 0 || expected[2 * $0 + 1] != 0 })
    let compared = min(heard.count / 2 - lead, expected.count / 2 - first)
    #expect(compared >= 19 * 48_000, "the capture holds \(compared) frames after its first sound")
    var differing = 0
    var firstDifference: Int?
    for frame in 0..<compared {
      let a = 2 * (lead + frame)
      let b = 2 * (first + frame)
      if heard[a] != expected[b] || heard[a + 1] != expected[b + 1] {
        differing += 1
        if firstDifference == nil { firstDifference = frame }
      }
    }
    #expect(
      differing == 0,
      "\(differing) of \(compared) frames differ, the first at \(Double(firstDifference ?? 0) / 48_000) s")
  }
}
