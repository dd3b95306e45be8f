import Foundation
@_spi(Benchmark) import Leitmotif
import LeitmotifFixtures

/// `leitmotif-bench query`: how long media queries take on a library of 100,000 items.
///
/// The index is filled directly with synthetic rows (no audio files are needed to measure a
/// query): 2,000 artists, 10,000 albums, 20 genres, titles with one of 1,000 made-up words, BPM, year
/// and duration spread evenly; then each query runs `--runs` times (after a few warm-up runs),
/// each time with another value so SQLite's page cache is the only help it gets, and its latency
/// is the wall time of `items(matching:)`: SQL, stepping the rows and making the `MediaItem`s.
/// The goal: p99 under 10 ms for equalTo, contains and a range.
struct QueryBenchmark {
  struct Options {
    var itemCount = 100_000
    var runs = 300

    init(parsing arguments: [String]) throws {
      var rest = arguments[...]
      while let argument = rest.popFirst() {
        switch argument {
        case "--items":
          guard let text = rest.popFirst(), let number = Int(text), number >= 1_000 else {
            throw UsageError(description: "--items needs a whole number of 1000 or more")
          }
          itemCount = number
        case "--runs":
          guard let text = rest.popFirst(), let number = Int(text), number > 0 else {
            throw UsageError(description: "--runs needs a positive whole number")
          }
          runs = number
        default: throw UsageError(description: "unknown option \"\(argument)\"")
        }
      }
    }
  }

  static let goalMilliseconds = 10.0
  static let artistCount = 2_000
  static let wordCount = 1_000

  let options: Options

  func run() throws {
    let scratch = try TemporaryDirectory(prefix: "leitmotif-bench-query")
    defer { try? FileManager.default.removeItem(atPath: scratch.path) }
    progress("filling an index with \(options.itemCount) synthetic items")
    let fill = Stopwatch()
    let index = try SyntheticQueryIndex(path: scratch.file("index.sqlite"))
    var generator = SplitMix64(seed: 4)
    var batch: [MediaItem] = []
    for number in 0..<options.itemCount {
      var item = MediaItem(path: "/music/\(number).ogg")
      item.persistentID = UInt64(number + 1)
      let artist = Int(generator.next() % UInt64(Self.artistCount))
      item.artist = number % 10 == 0 ? "The Artist \(Self.padded(artist))" : "Artist \(Self.padded(artist))"
      item.albumTitle = "Album \(Self.padded(Int(generator.next() % 10_000)))"
      item.title = "Song \(number) \(Self.word(Int(generator.next() % UInt64(Self.wordCount))))"
      item.genre = "Genre \(generator.next() % 20)"
      item.beatsPerMinute = 60 + Double(generator.next() % 14_000) / 100
      item.year = 1960 + Int(generator.next() % 66)
      item.playbackDuration = 60 + Double(generator.next() % 54_000) / 100
      item.albumTrackNumber = 1 + Int(generator.next() % 15)
      batch.append(item)
    }
    try index.insert(batch)
    progress(String(format: "filled in %.1f s", fill.seconds))

    typealias Case = (label: String, goal: Bool, make: (inout SplitMix64) -> MediaQuery)
    let cases: [Case] = [
      (
        "equalTo (artist = one of 2,000; ~50 rows)", true,
        { generator in
          MediaQuery(filterPredicates: [
            MediaPropertyPredicate(value: "artist \(Self.padded(Int(generator.next() % 2_000)))", forProperty: .artist)
          ])
        }
      ),
      (
        "contains (title ~ one of 1,000 words; ~100 rows)", true,
        { generator in
          MediaQuery(filterPredicates: [
            MediaPropertyPredicate(
              value: Self.word(Int(generator.next() % 1_000)).uppercased(), forProperty: .title,
              comparisonType: .contains
            )
          ])
        }
      ),
      (
        "range (BPM in a 0.5 BPM band; ~360 rows)", true,
        { generator in
          let low = 60 + Double(generator.next() % 279) / 2
          return MediaQuery(filterPredicates: [
            MediaPropertyPredicate(value: low, forProperty: .beatsPerMinute, comparisonType: .greaterThanOrEqualTo),
            MediaPropertyPredicate(value: low + 0.5, forProperty: .beatsPerMinute, comparisonType: .lessThan),
          ])
        }
      ),
      (
        "range (year = one of 66 and duration < 2 min; ~90 rows)", true,
        { generator in
          MediaQuery(filterPredicates: [
            MediaPropertyPredicate(value: 1960 + Int(generator.next() % 66), forProperty: .year),
            MediaPropertyPredicate(value: 120, forProperty: .playbackDuration, comparisonType: .lessThan),
          ])
        }
      ),
      (
        "wide range (BPM >= 180; ~14% = ~14,000 rows)", false,
        { _ in
          MediaQuery(filterPredicates: [
            MediaPropertyPredicate(value: 180, forProperty: .beatsPerMinute, comparisonType: .greaterThanOrEqualTo)
          ])
        }
      ),
    ]

    var table = TextTable(["query", "rows (mean)", "p50 ms", "p99 ms", "goal p99", "met"], rightAligned: [1, 2, 3, 4])
    for (label, hasGoal, make) in cases {
      var values = SplitMix64(seed: 11)
      progress("measuring \(label)")
      let plan = try index.plan(make(&values))
      for _ in 0..<10 { _ = try index.items(matching: make(&values)) }
      var milliseconds: [Double] = []
      var rows = 0
      let runs = hasGoal ? options.runs : max(10, options.runs / 10)
      for _ in 0..<runs {
        let query = make(&values)
        let stopwatch = Stopwatch()
        rows += try index.items(matching: query).count
        milliseconds.append(stopwatch.seconds * 1_000)
      }
      milliseconds.sort()
      let p50 = milliseconds[milliseconds.count / 2]
      let p99 = milliseconds[min(milliseconds.count - 1, Int((Double(milliseconds.count) * 0.99).rounded(.up)) - 1)]
      table.add([
        label, "\(rows / runs)", String(format: "%.2f", p50), String(format: "%.2f", p99),
        hasGoal ? "< \(Int(Self.goalMilliseconds)) ms" : "(none)",
        hasGoal ? (p99 < Self.goalMilliseconds ? "yes" : "NO") : "",
      ])
      progress("plan: \(plan)")
    }
    print("Query latency at \(options.itemCount) items (\(options.runs) runs each, items(matching:) end to end)")
    print(table.render())
  }

  /// One of 1,000 made-up words of three syllables ("kalomi"): a title word whose trigrams are
  /// spread like a real language's, not shared by every title.
  static func word(_ number: Int) -> String {
    let syllables = ["ka", "lo", "mi", "su", "te", "ra", "no", "vi", "de", "gu"]
    return syllables[number / 100] + syllables[(number / 10) % 10] + syllables[number % 10]
  }

  static func padded(_ number: Int) -> String {
    let text = String(number)
    return String(repeating: "0", count: max(0, 4 - text.count)) + text
  }
}
