import Foundation
import Testing

@testable import Leitmotif
@testable import LeitmotifCues
@testable import LeitmotifEngine
@testable import LeitmotifLibrary
@testable import LeitmotifPlayers

#if canImport(FoundationXML)
  import FoundationXML
#endif

@Suite("The timeline picture: a simulated run as an SVG")
struct TimelinePictureTests {
  /// A level of 40 s made by hand: exploring (bundled), a player's song, a fight with a stinger,
  /// a cue with markup characters in its name, and an ignored cue.
  static func handMadeTimeline() -> CueTimeline {
    var timeline = CueTimeline(sampleRate: 48_000, durationSeconds: 40)
    timeline.events = [
      .init(
        at: 5, cue: "enemy.spotted", payload: ["threat": 3, "kind": "patrol", "boss": false], outcome: "fired",
        rule: "fight",
        actions: ["stinger spotted", "state combat"], reason: nil),
      .init(
        at: 5.5, cue: "enemy.spotted", payload: ["threat": 1], outcome: "ignored", rule: nil, actions: [],
        reason: "cooling down"),
      .init(
        at: 20, cue: #"door <"A" & 'B'>"#, payload: [:], outcome: "ignored", rule: nil, actions: [],
        reason: "no rule answers cue \"door\""),
      .init(at: 25, cue: "combat.end", payload: [:], outcome: "fired", rule: "calm down", actions: [], reason: nil),
    ]
    timeline.states = [
      .init(state: "explore", from: 0, to: 5),
      .init(state: "combat", from: 5, to: 25),
      .init(state: "explore", from: 25, to: 40),
    ]
    timeline.items = [
      .init(at: 0, title: "Explore", file: "explore.ogg", source: "calm", userMusic: false),
      .init(at: 5, title: "Combat", file: "combat.ogg", source: "tense", userMusic: false),
      .init(at: 25, title: "My Song", file: "my-song.mp3", source: "mySongs", userMusic: true),
    ]
    timeline.stingers = [.init(at: 5, title: "Spotted", file: "spotted.ogg", source: "spotted", userMusic: false)]
    // Slot 0 plays Explore, fades out at 5 s and plays My Song from 25 s; slot 1 plays Combat from
    // 5 s to 26 s; slot 2 the stinger for a second; slot 3 is prepared and never heard.
    for step in 0...800 {
      let time = Double(step) * 0.05
      var gains: [String: Float] = [:]
      var labels: [String: String] = [:]
      if time < 6 {
        gains["0"] = Float(time < 5 ? 1 : 6 - time)
        // Fading out, the voice is no longer listed by the player: no label.
        if time < 5 { labels["0"] = "Explore" }
      } else if time >= 25 {
        gains["0"] = Float(min(1, time - 25))
        labels["0"] = "My Song"
      }
      if time >= 5, time < 26 {
        gains["1"] = Float(time < 6 ? time - 5 : (time < 25 ? 1 : 26 - time))
        labels["1"] = "Combat"
      }
      if time >= 5, time < 6 {
        gains["2"] = 1
        labels["2"] = "stinger: Spotted"
      }
      if time >= 10, time < 20 {
        // Prepared but never started: silent.
        gains["3"] = 0
        labels["3"] = "Boss"
      }
      timeline.gains.append(.init(at: time, gains: gains, labels: labels))
    }
    return timeline
  }

  @Test("The SVG is well-formed XML with every cue, state and label written out")
  func contents() throws {
    let timeline = Self.handMadeTimeline()
    let svg = TimelinePicture.svg(timeline, title: "The Old Forest")
    let document = try SVGDocument(svg)
    #expect(document.elementCounts["svg"] == 1)
    for name in ["enemy.spotted", "combat.end", #"door <"A" & 'B'>"#] {
      #expect(document.texts.contains(name), "no text \"\(name)\" in \(document.texts)")
    }
    #expect(document.texts.filter { $0 == "enemy.spotted" }.count == 2, "one name per cue, fired or ignored")
    for state in ["explore", "combat"] { #expect(document.texts.contains(state)) }
    for label in ["Explore", "Combat", "My Song", "stinger: Spotted"] {
      #expect(document.texts.contains(label), "no label \"\(label)\" in \(document.texts)")
    }
    #expect(document.texts.contains("The Old Forest"))
    #expect(document.texts.contains("0:10") && document.texts.contains("0:40"), "ticks every 10 s as m:ss")
    // One lane per voice that was heard; the voice only prepared (gain 0) gets none.
    #expect(document.lanes == ["0", "1", "2"])
    #expect(document.texts.contains("voice 2"))
    #expect(!document.texts.contains("Boss") && !document.texts.contains("voice 3"))
    // The fading voice keeps its label: nothing is drawn as unlabelled.
    #expect(!document.texts.contains("unlabelled"))
  }

  @Test("Markup characters in names are escaped")
  func escaping() throws {
    var timeline = Self.handMadeTimeline()
    timeline.states[1].state = "fight & flight"
    let svg = TimelinePicture.svg(timeline, title: "Level <1> & \"2\"")
    #expect(svg.contains("door &lt;&quot;A&quot; &amp; &apos;B&apos;&gt;"))
    #expect(svg.contains("fight &amp; flight"))
    #expect(!svg.contains("door <"))
    let document = try SVGDocument(svg)
    #expect(document.texts.contains("Level <1> & \"2\""))
    #expect(document.texts.contains("fight & flight"))
  }

  @Test("The same timeline gives the same bytes, also after a round trip through JSON")
  func deterministic() throws {
    let timeline = Self.handMadeTimeline()
    let first = TimelinePicture.svg(timeline, title: "Level")
    #expect(first == TimelinePicture.svg(timeline, title: "Level"))
    let decoded = try JSONDecoder().decode(CueTimeline.self, from: try timeline.jsonData())
    #expect(first == TimelinePicture.svg(decoded, title: "Level"))
    // The payload keeps its types in the JSON: numbers, strings and booleans as the game posted them.
    let json = String(decoding: try timeline.jsonData(), as: UTF8.self)
    #expect(
      json.contains(#""threat" : 3"#) && json.contains(#""kind" : "patrol""#) && json.contains(#""boss" : false"#))
    #expect(decoded.events[0].payload == ["threat": 3, "kind": "patrol", "boss": false])
  }

  @Test("Fired and ignored cues are drawn differently; colours tell bundled, user and stinger music apart")
  func styles() throws {
    let svg = TimelinePicture.svg(Self.handMadeTimeline(), title: "Level")
    let lines = svg.split(separator: "\n")
    #expect(lines.filter { $0.hasPrefix("<line") && $0.contains("stroke-dasharray=\"4 3\"") }.count == 3)
    for colour in ["#2f6fb3", "#9b3fb5", "#e0701c"] {
      #expect(lines.contains { $0.hasPrefix("<polyline") && $0.contains(colour) }, "no voice drawn in \(colour)")
    }
  }

  @Test("A simulated level with two states and a stinger: a lane per voice, labelled")
  func simulatedRun() throws {
    let game = try DirectorFixture()
    let sheet = try game.sheet(
      """
      {
        start: "explore",
      \(DirectorFixture.sources)
        states: {
          explore: { music: "calm" },
          combat: { music: "tense", transition: { seconds: 1 } },
        },
        rules: [
          { name: "fight", on: "combat.start", do: { state: "combat" } },
          { name: "hit", on: "player.hit", cooldown: 2, do: { stinger: "hit" } },
        ],
      }
      """)
    let (_, timeline) = try game.simulate(
      sheet, [.cue(2, "combat.start"), .cue(4, "player.hit"), .cue(4.5, "player.hit")], seconds: 7)
    let svg = TimelinePicture.svg(timeline, title: "A short fight")
    let document = try SVGDocument(svg)
    // A lane for each voice heard: the music of each state (the stinger may reuse a voice let go).
    let heard = Set(timeline.gains.flatMap { $0.gains.filter { $0.value > 0 }.keys })
    #expect(Set(document.lanes) == heard && heard.count >= 2, "\(document.lanes) for \(heard)")
    for text in ["explore", "combat", "combat.start", "player.hit", "Explore", "Combat", "stinger: Hit"] {
      #expect(document.texts.contains(text), "no text \"\(text)\" in \(document.texts)\n\(timeline.summary)")
    }
    if let folder = ProcessInfo.processInfo.environment["LEITMOTIF_PICTURE_DIR"] {
      let path = folder + "/short-fight.svg"
      try svg.write(toFile: path, atomically: true, encoding: .utf8)
      _ = TimelinePicture.writePNG(svgPath: path, pngPath: folder + "/short-fight.png")
    }
  }
}

/// An SVG read back with Foundation's `XMLParser`: how many of each element, the text of every
/// `<text>` (without its tooltip), and the slots of the lanes.
struct SVGDocument {
  struct ParseError: Error, CustomStringConvertible {
    var description: String
  }

  var elementCounts: [String: Int] = [:]
  var texts: [String] = []
  var lanes: [String] = []

  init(_ svg: String) throws {
    let reader = Reader()
    let parser = XMLParser(data: Data(svg.utf8))
    parser.delegate = reader
    guard parser.parse() else {
      throw ParseError(description: "not well-formed XML: \(parser.parserError.map { "\($0)" } ?? "?")")
    }
    elementCounts = reader.elementCounts
    texts = reader.texts
    lanes = reader.lanes
  }

  private final class Reader: NSObject, XMLParserDelegate {
    var elementCounts: [String: Int] = [:]
    var texts: [String] = []
    var lanes: [String] = []
    var path: [String] = []
    var currentText: String?
    var currentTitle: String?

    func parser(
      _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
      attributes: [String: String] = [:]
    ) {
      elementCounts[elementName, default: 0] += 1
      path.append(elementName)
      if elementName == "text" { currentText = "" }
      if path == ["svg", "title"] { currentTitle = "" }
      if elementName == "g", attributes["class"] == "lane", let slot = attributes["data-slot"] { lanes.append(slot) }
    }

    func parser(
      _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?
    ) {
      if path == ["svg", "title"], let title = currentTitle {
        texts.append(title)
        currentTitle = nil
      }
      path.removeLast()
      if elementName == "text", let text = currentText {
        texts.append(text)
        currentText = nil
      }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
      // A `<title>` inside a text is its tooltip, not what the picture shows.
      if path.last == "text" { currentText? += string }
      if path == ["svg", "title"] { currentTitle? += string }
    }
  }
}
