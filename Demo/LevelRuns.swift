import Foundation
import Leitmotif

/// Prints the director's reports as they come, with the level's clock, and keeps what the
/// progress line shows (the state, what plays).
final class LevelReporter: @unchecked Sendable {
  private let lock = NSLock()
  private var display: LevelDisplay
  /// Level time = director time × speed (the level's script is posted by the director's clock).
  private let speed: Double

  init(levelSeconds: Double, speed: Double = 1) {
    display = LevelDisplay(levelSeconds: levelSeconds)
    self.speed = speed
  }

  func report(_ report: DirectorReport) {
    let line = lock.withLock { display.line(for: report, levelTime: report.time * speed) }
    if let line { Output.shared.print(line) }
  }

  func progress(at levelTime: Double) {
    if let line = lock.withLock({ display.progress(at: levelTime) }) { Output.shared.showProgress(line) }
  }
}

/// No sound card: the whole level rendered offline through `CueSimulation`, faster than real
/// time, to the WAV file.
enum OfflineLevel {
  static func run(
    sheet: CueSheet, script: CueScript, library: MediaLibrary?, picks: MediaItemCollection?, levelSeconds: Double
  ) -> CueTimeline {
    let reporter = LevelReporter(levelSeconds: levelSeconds)
    var simulation = CueSimulation.Options()
    simulation.durationSeconds = levelSeconds
    simulation.library = library
    simulation.picks = picks
    simulation.onReport = { reporter.report($0) }
    let started = Date()
    var lastProgress = Date.distantPast
    let result: CueSimulation.Result
    do {
      result = try CueSimulation.run(
        sheet: sheet, script: script, outputPath: options.outputPath, options: simulation,
        diagnostics: printDiagnostic
      ) { startFrame, _ in
        // Progress a few times a second of wall time (every mix would flood a pipe).
        let now = Date()
        guard now.timeIntervalSince(lastProgress) > 0.2 else { return }
        lastProgress = now
        reporter.progress(at: Double(startFrame) / Double(simulation.sampleRate))
      }
    } catch {
      complain("the render failed: \(error)")
    }
    reporter.progress(at: levelSeconds)
    Output.shared.finishProgress()
    let seconds = Double(result.framesWritten) / Double(result.sampleRate)
    let elapsed = Date().timeIntervalSince(started)
    Output.shared.print(
      String(
        format: "rendered the %.0f s level in %.1f s (%.0fx real time) to %@", seconds, elapsed,
        seconds / max(elapsed, 0.001), options.outputPath))
    return result.timeline
  }
}

/// The signal that ended a real-time run (0: none): Ctrl-C, SIGTERM (a launcher quitting the
/// game) and SIGHUP (its terminal closed) only set it, and the level loop stops there and shuts
/// down in order, as a game should: the player's music app the demo paused is resumed. They
/// ended the process at once before, and the app stayed paused for good (a desktop trial).
nonisolated(unsafe) var stoppedBySignal: sig_atomic_t = 0

/// A sound card (or `--realtime`): the level plays as it would in a game. The director runs on
/// its own thread and watches the cue file; the main thread is the "game": it posts the level's
/// events at their times (sped up by `--speed`) and samples the voices for the timeline.
enum RealtimeLevel {
  static func run(
    engine: AudioEngine, script: CueScript, library: MediaLibrary?, picks: MediaItemCollection?, levelSeconds: Double
  ) -> CueTimeline {
    engine.setDiagnosticsHandler(printDiagnostic)
    let director: Director
    do {
      director = try Director(engine: engine, cueFile: options.cuesPath, library: library)
    } catch {
      FileHandle.standardError.write(Data("\(error)\n".utf8))
      exit(2)
    }
    director.setPicks(picks)
    // On the desktop's media controls, with the media keys and the player's own music app as
    // the cue file says, where there is a session bus.
    var desktop: DesktopMusic?
    if options.desktop {
      let result = Result { () throws(DesktopBusError) in
        try DesktopMusic(director: director, publish: .init(identity: "Leitmotif demo", busName: "leitmotif_demo"))
      }
      desktop = try? result.get()
      Output.shared.print(DesktopMusic.describe(result))
    }
    let speed = options.speed
    let reporter = LevelReporter(levelSeconds: levelSeconds, speed: speed)
    let log = ReportCollector()
    director.addObserver { report in
      log.append(report)
      reporter.report(report)
    }
    Output.shared.print(
      "playing the level in real time "
        + (engine.initialDevice.kind == .headless
          ? "headless (no sound card: nothing is heard)" : "on \"\(engine.initialDevice.name)\"")
        + (speed == 1 ? "" : " at \(speed)x speed") + "; edit \(options.cuesPath) to hear changes; Ctrl-C stops")
    var timeline = CueTimeline(sampleRate: engine.sampleRate, durationSeconds: levelSeconds / speed)
    for number in [SIGINT, SIGTERM, SIGHUP] { signal(number) { stoppedBySignal = $0 } }
    director.start()
    var next = 0
    while stoppedBySignal == 0 {
      // The level's clock is the director's (its time 0 is where the start state's music
      // begins, a quarter of a second after `start()`), as `cues simulate --live` posts by it:
      // counted from a wall clock read before `start()`, every cue went in and was printed that
      // much early, 0.5 s of level time at `--speed 4`.
      let directorTime = max(0, director.clockTime)
      let levelTime = directorTime * speed
      if levelTime >= levelSeconds { break }
      while next < script.steps.count, script.steps[next].time <= levelTime {
        switch script.steps[next].kind {
        case .cue(let cue, let payload): director.post(cue, payload)
        case .parameter(let name, let value, let ramp): director.setParameter(name, value, rampSeconds: ramp / speed)
        }
        next += 1
      }
      timeline.sampleVoices(at: directorTime, engine: engine, director: director)
      reporter.progress(at: levelTime)
      // Until the next step is due (a cue goes in on its time, not up to a poll late: at
      // `--speed 4` a 50 ms poll is 0.2 s of the level), at most 50 ms.
      let untilNext = next < script.steps.count ? (script.steps[next].time - levelTime) / speed : 0.05
      usleep(useconds_t(max(0.001, min(0.05, untilNext)) * 1_000_000))
    }
    Output.shared.finishProgress()
    if stoppedBySignal != 0 {
      Output.shared.print(
        "stopped by signal \(stoppedBySignal): shutting down (the music app paused for the game resumes)")
    }
    director.player.stop()
    desktop?.shutdown()
    director.waitForReports()
    director.shutdown()
    timeline.add(reports: log.all, script: script)
    return timeline
  }
}

final class ReportCollector: @unchecked Sendable {
  private let lock = NSLock()
  private var reports: [DirectorReport] = []
  func append(_ report: DirectorReport) { lock.withLock { reports.append(report) } }
  var all: [DirectorReport] { lock.withLock { reports } }
}
