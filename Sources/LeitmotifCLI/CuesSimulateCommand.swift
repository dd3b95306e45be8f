import Foundation
import Leitmotif
import Synchronization

/// `leitmotif cues simulate CUES --events SCRIPT --out OUT.wav [--library DIR] [--timeline FILE]
/// [--duration S] [--state NAME]`: renders a scripted level offline through the director,
/// deterministically, and prints the timeline (one line per thing the director did).
/// With `--live` instead of `--out`, plays the same script in real time on the sound device
/// (the director on its own thread, each event posted at its time), printing the director's
/// reports as they come: what a game does, to hear or capture.
///
/// Exit status: 0 rendered; 2 a usage error, or an invalid cue file or script (every problem
/// printed as `FILE:LINE:COLUMN: error: ...`); 1 the render failed (the output could not be written).
enum CuesSimulateCommand {
  static let usage = """
    usage: leitmotif cues simulate CUES --events SCRIPT (--out OUT.wav | --live) [--library DIR [--app ID]]
                                   [--timeline FILE] [--duration SECONDS] [--state NAME]
      --events SCRIPT     a JSON5 list of timed events: [{ at: 12.5, cue: "enemy.spotted", payload: { threat: 2 } }]
      --out OUT.wav       where the render goes (32-bit float, 48 kHz stereo)
      --live              play in real time on the sound device instead (headless without one);
                          edits to the cue file are in force within a second, as in a game
      --lead SECONDS      with --live: how far ahead of the mix the director schedules (default:
                          two device periods and 256 frames, at least 0.021; longer keeps every
                          change on its frame on a busy machine)
      --latency standard|low
                          with --live: how far ahead of OpenAL the music runs (AudioEngine's
                          OutputLatency; low: an immediate change is heard ~17 ms sooner)
      --record SCRIPT     with --live: write the events as the director applied them, each at
                          the exact time (mix frame) it took effect: rendering that script
                          offline gives what was heard, sample for sample
      --library DIR       the player's music for library sources (asks for consent on a terminal);
                          scanned first, as a game does at launch: songs added, changed or
                          removed since the last scan are taken in (quietly)
      --app ID            with --library: whose consent applies (default: leitmotif, asked for on a
                          terminal); your game's id uses the answer given to your game (set one
                          with `leitmotif access allow ID` or `deny ID`)
      --timeline FILE     the timeline: FILE.json (events and what they did, states, items, voice
                          gains), its picture FILE.svg and FILE.png (with a converter), FILE
                          without its extension; the same as leitmotif-demo's --timeline
      --duration SECONDS  how long to render (default: 8 s after the last event)
      --state NAME        the state to start in (default: the cue file's "start")
      --beats             also print every beat and marker (named cue point) of the music as the
                          game's beat and marker callbacks get them
                          (live: when it is heard, with the frame OpenAL was playing then)
    """

  static func run(_ arguments: [String]) -> Int32 {
    var cuesPath: String?
    var eventsPath: String?
    var outputPath: String?
    var timelinePath: String?
    var libraryFolder: String?
    var applicationID = "leitmotif"
    var live = false
    var beats = false
    var recordPath: String?
    var lead: Double?
    var latency: OutputLatency?
    var options = CueSimulation.Options()
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      switch argument {
      case "--help", "-h":
        say(usage)
        return 0
      case "--live":
        live = true
      case "--beats":
        beats = true
      case "--events", "--out", "--timeline", "--library", "--duration", "--state", "--record", "--lead",
        "--latency", "--app":
        guard let value = rest.popFirst(), !value.isEmpty else {
          fail("cues simulate: \(argument) needs a value\n\(usage)")
        }
        switch argument {
        case "--events": eventsPath = value
        case "--out": outputPath = value
        case "--timeline": timelinePath = value
        case "--library": libraryFolder = value
        case "--app": applicationID = AccessCommand.applicationID(value, for: "cues simulate --app")
        case "--record": recordPath = value
        case "--lead":
          guard let seconds = Double(value), seconds.isFinite, seconds >= 0, seconds <= 1 else {
            fail("cues simulate: --lead: expected 0 to 1 seconds, got \"\(value)\"")
          }
          lead = seconds
        case "--latency":
          switch value {
          case "standard": latency = .standard
          case "low": latency = .low
          default: fail("cues simulate: --latency: expected standard or low, got \"\(value)\"")
          }
        case "--state": options.startState = value
        default:
          // Above 0, as `render --duration`: a run of nothing is a typing mistake.
          guard let seconds = Double(value), seconds.isFinite, seconds > 0, seconds <= FrameMath.maximumSeconds else {
            fail("cues simulate: --duration: expected a time above 0, at most 86400 s (one day), got \"\(value)\"")
          }
          options.durationSeconds = seconds
        }
      default:
        if argument.hasPrefix("-") { fail("cues simulate: unknown option \"\(argument)\"\n\(usage)") }
        guard cuesPath == nil else { fail("cues simulate takes one cue file\n\(usage)") }
        cuesPath = argument
      }
    }
    guard let cuesPath else { fail("cues simulate needs a cue file\n\(usage)") }
    guard let eventsPath else { fail("cues simulate needs --events SCRIPT\n\(usage)") }
    guard live || outputPath != nil else { fail("cues simulate needs --out OUT.wav or --live\n\(usage)") }
    guard !(live && outputPath != nil) else { fail("cues simulate: --live plays; it takes no --out\n\(usage)") }
    guard live || recordPath == nil else { fail("cues simulate: --record goes with --live\n\(usage)") }
    guard live || latency == nil else { fail("cues simulate: --latency goes with --live\n\(usage)") }
    // (It wrote nothing and said nothing: the timeline is the offline render's.)
    guard !(live && timelinePath != nil) else {
      fail(
        "cues simulate: --timeline goes with --out; with --live, --record SCRIPT, then render that script with --out and --timeline (the same music, sample for sample)\n\(usage)"
      )
    }
    guard libraryFolder != nil || applicationID == "leitmotif" else {
      fail("cues simulate: --app goes with --library\n\(usage)")
    }

    let sheet: CueSheet
    let script: CueScript
    do {
      sheet = try CueSheet.load(path: cuesPath)
      script = try CueScript.load(path: eventsPath)
    } catch {
      FileHandle.standardError.write(Data("\(error)\n".utf8))
      return 2
    }
    let scriptProblems = script.problems(against: sheet, path: eventsPath)
    for problem in scriptProblems { FileHandle.standardError.write(Data("\(problem)\n".utf8)) }
    if scriptProblems.contains(where: { $0.severity == .error }) { return 2 }
    if let folder = libraryFolder {
      guard let library = openLibrary(folder, applicationID: applicationID) else { return 2 }
      options.library = library
    }
    if let state = options.startState, sheet.states[state] == nil {
      fail(
        "cues simulate: --state: no state \"\(state)\" in \(cuesPath) (it has: \(sheet.states.keys.sorted().joined(separator: ", ")))"
      )
    }
    if live {
      return playLive(
        sheet: sheet, script: script, options: options, recordPath: recordPath, lead: lead,
        latency: latency ?? .standard, beats: beats)
    }
    let heard = Mutex<[(seconds: Double, line: String)]>([])
    if beats {
      options.onBeat = { beat in heard.withLock { $0.append((beat.seconds, beatLine(beat))) } }
      options.onMarker = { marker in heard.withLock { $0.append((marker.seconds, markerLine(marker))) } }
    }
    guard let outputPath else { return 2 }
    let started = Date()
    let result: CueSimulation.Result
    do {
      result = try CueSimulation.run(
        sheet: sheet, script: script, outputPath: outputPath, options: options, diagnostics: printDiagnostic)
    } catch {
      FileHandle.standardError.write(Data("cues simulate: \(error)\n".utf8))
      return 1
    }
    for line in result.timeline.lines { say(line) }
    for note in result.timeline.notes { say("note: \(note)") }
    for (_, line) in heard.withLock({ $0 }).enumerated().sorted(by: {
      $0.element.seconds != $1.element.seconds ? $0.element.seconds < $1.element.seconds : $0.offset < $1.offset
    }).map(\.element) {
      say(line)
    }
    let seconds = Double(result.framesWritten) / Double(result.sampleRate)
    let elapsed = Date().timeIntervalSince(started)
    say(
      String(
        format: "rendered %.1f s to %@ in %.1f s (%.3gx real time)", seconds, outputPath, elapsed,
        seconds / max(elapsed, 0.001)))
    if let timelinePath {
      do {
        let title = "leitmotif cues simulate: \(URL(fileURLWithPath: eventsPath).lastPathComponent)"
        for file in try TimelinePicture.write(result.timeline, title: title, named: timelinePath) {
          say("timeline: \(file)")
        }
      } catch {
        FileHandle.standardError.write(Data("cues simulate: \(timelinePath): cannot write: \(error)\n".utf8))
        return 1
      }
    }
    return 0
  }

  /// `--live`: the script in real time, as a game would post it.
  private static func playLive(
    sheet: CueSheet, script: CueScript, options: CueSimulation.Options, recordPath: String?, lead: Double?,
    latency: OutputLatency, beats: Bool
  ) -> Int32 {
    let engine: AudioEngine
    do {
      engine = try AudioEngine(output: .defaultDevice, latency: latency, diagnostics: printDiagnostic)
    } catch {
      FileHandle.standardError.write(Data("cues simulate: \(error)\n".utf8))
      return 1
    }
    // Watched, as a game's director is: a designer who edits the cue file while the level plays
    // hears the change within a second (a broken save is reported, and the last good file
    // stays). It used to play the file as it was at the start, and said nothing of the edits.
    let director =
      sheet.path.flatMap { try? Director(engine: engine, cueFile: $0, library: options.library) }
      ?? Director(engine: engine, sheet: sheet, library: options.library)
    let reloads = Atomic<Int>(0)
    if let lead { director.schedulingLead = lead }
    if beats {
      // Said as the game hears of it, with where OpenAL's playback was at that moment.
      director.addBeatObserver { beat in
        say(beatLine(beat) + " (frame \(beat.mixFrame); OpenAL was playing frame \(engine.heardFrame))")
      }
      director.addMarkerObserver { marker in
        say(markerLine(marker) + " (frame \(marker.mixFrame); OpenAL was playing frame \(engine.heardFrame))")
      }
    }
    // Each event once, at the director time it took effect (a frame of the mix clock).
    let applied = Mutex<[UInt64: (time: Double, event: LevelEvent)]>([:])
    director.addObserver { report in
      say(report.description)
      if case .reloaded = report.kind { reloads.add(1, ordering: .relaxed) }
      if let event = report.event {
        applied.withLock { if $0[event.sequence] == nil { $0[event.sequence] = (report.time, event) } }
      }
    }
    // Parameter changes make no report: each is recorded at the step the director took it at.
    let parameterSets = Mutex<[(time: Double, name: String, value: Double, ramp: Double)]>([])
    director.onParametersTaken = { changes, time in
      parameterSets.withLock { sets in
        for change in changes { sets.append((time, change.name, change.value, change.ramp)) }
      }
    }
    let duration = options.durationSeconds ?? (script.lastTime + 8)
    director.start(state: options.startState)
    // The script's times are the director's (0: the start state's music begins, a quarter of a
    // second after `start`), as in an offline render; waiting on the wall clock from `start`
    // applied every event about 0.2 s early.
    // The mix clock follows the device, which on a loaded machine can fall behind the wall
    // clock, so this looks again until the clock is there (giving up after 3 tries posted a step
    // 36 ms early once). Only a clock that stops moving for 5 s (a stalled device) ends the wait.
    func waitUntil(_ time: Double) {
      var last = director.clockTime
      var still = 0.0
      while true {
        let now = director.clockTime
        guard now < time else { return }
        let moved = now > last
        if moved {
          last = now
          still = 0
        } else if still >= 5 {
          return
        }
        let nap = min(max(time - now, 0.001), 0.25)
        usleep(useconds_t(nap * 1e6))
        if !moved { still += nap }
      }
    }
    // A --duration shorter than the script ends the run there, as it ends an offline render.
    for step in script.steps where step.time < duration {
      waitUntil(step.time)
      switch step.kind {
      case .cue(let cue, let payload): _ = director.post(cue, payload)
      case .parameter(let name, let value, let ramp):
        let time = director.clockTime
        director.setParameter(name, value, rampSeconds: ramp)
        say(CueTimeline.parameterLine(at: time, name: name, value: value, rampSeconds: ramp))
      }
    }
    waitUntil(duration)
    director.waitForReports()
    director.shutdown()
    engine.shutdown()
    say(
      String(
        format: "played %.1f s live on \"%@\"; %d scheduled changes came late", duration, engine.initialDevice.name,
        engine.lateCommandCount))
    if let recordPath {
      // Times are written as the shortest text that reads back as the same number: with 9
      // decimals a replay started a parameter ramp a fraction of a nanosecond off, and a low-pass
      // the ramp drove came out a last place apart (the render then differed from the capture by
      // 2e-7, the live test's tolerance being 1e-7).
      let events = applied.withLock { $0.sorted { $0.key < $1.key }.map(\.value) }
      var entries = events.map { entry in
        let payload = entry.event.payload.sorted { $0.key < $1.key }.map { key, value in
          "\(jsonString(key)): \(json(value))"
        }
        return (
          entry.time,
          "  { at: \(entry.time), cue: \(jsonString(entry.event.cue))"
            + (payload.isEmpty ? "" : ", payload: { \(payload.joined(separator: ", ")) }") + " },"
        )
      }
      // Parameter changes among the events, in time order (a stable sort keeps the events' order).
      let sets = parameterSets.withLock { $0 }
      entries += sets.map { set in
        (
          set.time,
          "  { at: \(set.time), set: \(jsonString(set.name)), value: \(json(.number(set.value)))"
            + (set.ramp > 0 ? ", ramp: \(set.ramp)" : "") + " },"
        )
      }
      let lines = entries.enumerated().sorted { ($0.element.0, $0.offset) < ($1.element.0, $1.offset) }.map(\.element.1)
      do {
        try ("[\n" + lines.joined(separator: "\n") + "\n]\n").write(
          toFile: recordPath, atomically: true, encoding: .utf8)
        say(
          "recorded \(events.count) event\(events.count == 1 ? "" : "s")"
            + (sets.isEmpty ? "" : " and \(sets.count) parameter change\(sets.count == 1 ? "" : "s")")
            + " to \(recordPath)")
        let reloaded = reloads.load(ordering: .relaxed)
        if reloaded > 0 {
          // Rendered against one file, the recording replays what was heard only up to the edit.
          say(
            "note: the cue file was reloaded \(reloaded) time\(reloaded == 1 ? "" : "s") while it played: rendering "
              + "the recording gives what was heard with the file as it is now, not as it was before each edit")
        }
      } catch {
        FileHandle.standardError.write(Data("cues simulate: \(recordPath): cannot write: \(error)\n".utf8))
        return 1
      }
    }
    return 0
  }

  /// `  12.500 s beat 3.2 of "Shadows"`: bar and beat, each from 1.
  private static func markerLine(_ marker: MusicMarker) -> String {
    String(format: "%8.3f s ", marker.seconds)
      + "cue  \"\(marker.name)\" at \(String(format: "%.3f", marker.fileSeconds)) s of \"\(marker.item.title ?? marker.item.assetURL.lastPathComponent)\""
  }

  private static func beatLine(_ beat: MusicBeat) -> String {
    String(format: "%8.3f s ", beat.seconds)
      + "\(beat.isDownbeat ? "bar  " : "beat ")\(beat.bar).\(beat.beat) of \"\(beat.item.title ?? beat.item.assetURL.lastPathComponent)\""
  }

  private static func jsonString(_ text: String) -> String {
    let data = (try? JSONSerialization.data(withJSONObject: [text], options: [])) ?? Data("[\"\"]".utf8)
    return String(String(decoding: data, as: UTF8.self).dropFirst().dropLast())
  }

  private static func json(_ value: CueValue) -> String {
    switch value {
    // The shortest text that reads back as the same number (0.8, not 0.80000000000000004).
    case .number(let number): return "\(number)"
    case .string(let text): return jsonString(text)
    case .bool(let flag): return flag ? "true" : "false"
    }
  }

  /// The player's library in `folder`, scanned; consent is asked on a terminal when nobody has
  /// answered yet. Without consent the library stays closed and the director falls back (and says so).
  private static func openLibrary(_ folder: String, applicationID: String) -> MediaLibrary? {
    // As `scan`: the tool asks for its own id on a terminal; another app's consent is that app's
    // to ask for (or `leitmotif access allow ID`).
    let own = applicationID == "leitmotif"
    var configuration = MediaLibrary.Configuration(
      applicationID: applicationID, usageDescription: own ? ScanCommand.usageDescription : nil,
      folders: [URL(fileURLWithPath: folder).standardizedFileURL])
    configuration.applicationName = applicationID
    let library = MediaLibrary(
      configuration: configuration, prompt: own ? TerminalPrompt() : nil, diagnostics: printDiagnostic)
    if own && library.authorizationStatus == .notDetermined { _ = try? library.requestAuthorization() }
    if library.authorizationStatus == .authorized {
      do { _ = try library.scan() } catch {
        FileHandle.standardError.write(Data("cues simulate: the library scan failed: \(error)\n".utf8))
      }
    }
    return library
  }
}
