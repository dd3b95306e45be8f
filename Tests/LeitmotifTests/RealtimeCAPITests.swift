import CLeitmotifHeader
import Foundation
import LeitmotifC
import LeitmotifCues
import LeitmotifFixtures
import LeitmotifRealtimeAudit
import Testing

/// The C API's promises to a game that calls it from its audio callback (leitmotif.h says which
/// calls may): `lm_post` and `lm_set_parameter` allocate nothing, and `lm_render` opens and reads
/// no file (the loader does, as soon as a change is scheduled). Counted on the calling thread by
/// the real-time audit (LeitmotifRealtimeAudit), over the demo level's cue file and the C game's
/// scripted minute, rendered one 60 Hz game step (800 frames) at a time.
///
/// In the real-time rules' own suite, which is serialized: the audit's counts are one set for the
/// whole process, so two suites arming it at once would count each other's threads.
extension RealtimeRulesTests {
  /// What the C game (Examples/c-game/game.c) does in its minute: cues with payloads, parameters.
  enum Step {
    case post(String, [(key: String, value: CueValue)])
    case set(String, Double, ramp: Double)
  }

  static let script: [(at: Double, step: Step)] = [
    (2, .post("level.start", [("level", .string("The Old Forest"))])),
    (14, .post("area.dark", [])),
    (20, .post("enemy.spotted", [("threat", .number(1)), ("kind", .string("wolf"))])),
    (24, .post("area.light", [])),
    (30, .post("enemy.spotted", [("threat", .number(3)), ("kind", .string("patrol"))])),
    (33, .set("intensity", 0.8, ramp: 3)),
    (36, .post("player.hit", [("damage", .number(20)), ("critical", .bool(true))])),
    (38, .set("health", 0.2, ramp: 1)),
    (44, .set("health", 1, ramp: 2)),
    (48, .post("combat.end", [])),
    (56, .post("level.complete", [])),
  ]

  /// A cue with its payload as C strings, made before the audit is armed (making them allocates).
  final class PreparedPost {
    let cue: UnsafeMutablePointer<CChar>
    let values: UnsafeMutablePointer<lm_value>
    let count: Int
    private var strings: [UnsafeMutablePointer<CChar>] = []

    init(_ cue: String, _ payload: [(key: String, value: CueValue)]) {
      self.cue = strdup(cue)
      count = payload.count
      values = .allocate(capacity: max(1, payload.count))
      for (index, entry) in payload.enumerated() {
        let key = strdup(entry.key)!
        strings.append(key)
        switch entry.value {
        case .number(let number): values[index] = lm_number(key, number)
        case .string(let string):
          let copy = strdup(string)!
          strings.append(copy)
          values[index] = lm_string(key, copy)
        case .bool(let flag): values[index] = lm_bool(key, flag ? 1 : 0)
        }
      }
    }

    deinit {
      free(cue)
      for string in strings { free(string) }
      values.deallocate()
    }
  }

  func makeEngine(cueFile: String) throws -> OpaquePointer {
    var config = lm_config_defaults()
    let id = strdup("org.leitmotif.tests.realtime-c")
    let cues = strdup(cueFile)
    defer {
      free(id)
      free(cues)
    }
    config.application_id = UnsafePointer(id)
    config.cue_file = UnsafePointer(cues)
    config.output = LM_OUTPUT_OFFLINE
    config.sample_rate = 48_000
    config.render_frames = 256
    var engine: OpaquePointer?
    let created = lmEngineCreateVersioned(
      &config, &engine, LM_VERSION_MAJOR * 10_000 + LM_VERSION_MINOR * 100 + LM_VERSION_PATCH)
    guard created == LM_OK, let engine else {
      throw TestFailure("lm_engine_create: \(String(cString: lmErrorName(created))): \(String(cString: lmLastError()))")
    }
    return engine
  }

  struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
  }

  @Test(
    "A level rendered one game step at a time: lm_post and lm_set_parameter allocate nothing, lm_render opens and reads no file"
  )
  func levelFromAnAudioCallback() throws {
    let engine = try makeEngine(cueFile: CGame.repository + "/Assets/cues.json5")
    defer { _ = lmEngineDestroy(engine) }
    let posts = Self.script.map { entry -> PreparedPost? in
      if case .post(let cue, let payload) = entry.step { return PreparedPost(cue, payload) }
      return nil
    }
    let names = Self.script.map { entry -> UnsafeMutablePointer<CChar>? in
      if case .set(let name, _, _) = entry.step { return strdup(name) }
      return nil
    }
    defer { for name in names { free(name) } }
    let frames = 800
    let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 2 * frames)
    defer { buffer.deallocate() }

    // lm_start opens the first music (file I/O, before the game's audio starts). A first post
    // of each kind of value, a parameter set and a render warm up what the Swift runtime does
    // once per process (it instantiates a generic type's metadata on first use, and allocates
    // for that): a game's loading screen does the same.
    #expect(lmStart(engine, nil) == LM_OK)
    let warmUp = PreparedPost("warm.up", [("n", .number(1)), ("s", .string("x")), ("b", .bool(true))])
    #expect(lmPost(engine, warmUp.cue, warmUp.values, warmUp.count) == LM_OK)
    #expect(lmSetParameter(engine, names.compactMap { $0 }[0], 1, 0) == LM_OK)
    #expect(lmRender(engine, buffer, frames) == LM_OK)

    lm_audit_enter()
    defer { lm_audit_leave() }
    var postCounts = (allocations: 0, fileCalls: 0, lockWaits: 0, calls: 0)
    var renderFileCalls = 0
    var next = 0
    for step in 1..<(60 * 60) {
      let now = Double(step) / 60
      while next < Self.script.count, Self.script[next].at <= now {
        let entry = Self.script[next]
        // Each call made 50 times over: the count is the calls', not one lucky call's.
        var results: [lm_error] = []
        results.reserveCapacity(50)
        lm_audit_arm(1)
        for _ in 0..<50 {
          switch entry.step {
          case .post:
            let post = posts[next]!
            results.append(lmPost(engine, post.cue, post.values, post.count))
          case .set(_, let value, let ramp):
            results.append(lmSetParameter(engine, names[next], value, ramp))
          }
        }
        lm_audit_arm(0)
        let counts = lm_audit_read()
        postCounts.allocations += counts.allocations
        postCounts.fileCalls += counts.fileCalls
        postCounts.lockWaits += counts.lockWaits
        postCounts.calls += results.count
        #expect(results.allSatisfy { $0 == LM_OK }, "at \(now) s: \(String(cString: lmEngineLastError(engine)))")
        next += 1
      }
      // (Not timed here: the audit looks up every allocation's caller, which makes a step of
      // the director's slow. ExamplesTests times the release library's steps.)
      lm_audit_arm(1)
      let rendered = lmRender(engine, buffer, frames)
      lm_audit_arm(0)
      renderFileCalls += lm_audit_read().fileCalls
      #expect(rendered == LM_OK)
    }
    print(
      "lm_post/lm_set_parameter: \(postCounts.calls) calls, \(postCounts.allocations) allocations, \(postCounts.fileCalls) file calls, \(postCounts.lockWaits) lock waits; "
        + "lm_render: \(60 * 60 - 1) steps of \(frames) frames, \(renderFileCalls) file calls")
    #expect(postCounts.calls == 11 * 50)
    #expect(postCounts.allocations == 0, "lm_post and lm_set_parameter allocated \(postCounts.allocations) times")
    #expect(postCounts.fileCalls == 0)
    #expect(postCounts.lockWaits == 0)
    #expect(renderFileCalls == 0, "lm_render made \(renderFileCalls) file calls on its caller's thread")
    // The time a step takes is checked on the release library, which a game ships (this is a
    // debug build): ExamplesTests runs the C game's minute and reads its slowest step.

    // The music followed the cues (so the posts were read back whole from the bus's slots).
    var current = [CChar](repeating: 0, count: 64)
    #expect(lmGetState(engine, &current, current.count, nil, 0) == LM_OK)
    #expect(String(cString: current) == "menu")
  }

  @Test(
    "A post bigger than LM_POST_CAPACITY is refused with a message that gives its size; the bus's slots carry every byte of one that fits"
  )
  func postCapacity() throws {
    let directory = try TemporaryDirectory(prefix: "leitmotif-post-capacity")
    let cues = directory.file("cues.json5")
    try """
    { version: 1, assets: "\(CGame.repository)/Assets/music", start: "a",
      sources: { calm: { bundled: "explore.ogg" }, tense: { bundled: "stealth.ogg" } },
      states: { a: { music: "calm" }, b: { music: "tense" } },
      rules: [ { on: "go", when: { payload: { name: "\(String(repeating: "é", count: 90))" } }, do: { state: "b" } } ] }
    """.write(toFile: cues, atomically: true, encoding: .utf8)
    let engine = try makeEngine(cueFile: cues)
    defer { _ = lmEngineDestroy(engine) }
    #expect(lmStart(engine, nil) == LM_OK)
    let frames = 256
    let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 2 * frames)
    defer { buffer.deallocate() }

    // 4 + 2 ("go") + 3 + 4 ("name") + 2 + 180 (90 two-byte characters) = 195 bytes: fits.
    let fits = PreparedPost("go", [("name", .string(String(repeating: "é", count: 90)))])
    #expect(lmPost(engine, fits.cue, fits.values, fits.count) == LM_OK)
    for _ in 0..<20 { _ = lmRender(engine, buffer, frames) }
    var current = [CChar](repeating: 0, count: 64)
    #expect(lmGetState(engine, &current, current.count, nil, 0) == LM_OK)
    #expect(String(cString: current) == "b", "the rule matched the 180-byte string read back from the slot")

    // 4 + 2 + 3 + 4 + 2 + 300 = 315 bytes: refused, and nothing was posted.
    let tooBig = PreparedPost("go", [("name", .string(String(repeating: "x", count: 300)))])
    #expect(lmPost(engine, tooBig.cue, tooBig.values, tooBig.count) == LM_ERROR_INVALID_ARGUMENT)
    let message = String(cString: lmEngineLastError(engine))
    #expect(message.contains("takes 315 bytes") && message.contains("LM_POST_CAPACITY (256)"), "\(message)")
    // Bad UTF-8 in a key is still named (checked in place, without a String).
    let bad = PreparedPost("go", [("name", .string("ok"))])
    let badKey = strdup("name")!
    defer { free(badKey) }
    badKey[2] = CChar(bitPattern: 0xC3)  // a lead byte followed by 'e': not UTF-8
    bad.values[0].key = UnsafePointer(badKey)
    #expect(lmPost(engine, bad.cue, bad.values, bad.count) == LM_ERROR_INVALID_ARGUMENT)
    #expect(String(cString: lmEngineLastError(engine)).contains("payload[0].key is not valid UTF-8"))
  }
}
