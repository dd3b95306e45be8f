import Foundation
import LeitmotifFuzzTargets
import Testing

/// The fuzzers' committed inputs, replayed (issue 13): the seed corpus of every target and every
/// input a fuzzer crashed or hung on (Fuzz/Crashes), through the same entry points `make fuzz`
/// drives. A crash here is a regression; it takes the test process down, as it should.
@Suite("Fuzz corpus: every committed input of every fuzz target runs to its end")
struct FuzzCorpusTests {
  static let fuzz = CGame.repository + "/Fuzz"

  static func inputs(of target: FuzzTarget) -> [String] {
    ["Corpus", "Crashes"].flatMap { folder -> [String] in
      let directory = "\(fuzz)/\(folder)/\(target.rawValue)"
      let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
      return names.sorted().filter { !$0.hasPrefix(".") }.map { "\(directory)/\($0)" }
    }
  }

  @Test(
    "Each target's corpus and crash inputs run without a trap", .hangGuard, arguments: FuzzTarget.allCases)
  func replay(target: FuzzTarget) throws {
    let inputs = Self.inputs(of: target)
    #expect(!inputs.isEmpty, "no committed input for \(target.rawValue) under \(Self.fuzz)/Corpus")
    for path in inputs {
      let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
      bytes.withUnsafeBytes { target.run($0) }
    }
  }
}
