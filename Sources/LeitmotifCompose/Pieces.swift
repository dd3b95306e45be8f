import LeitmotifFixtures

// The default soundtrack. Every piece quotes the leitmotif (`Leitmotif` in Score.swift): a bell
// and a flute sing it in major on the menu, the flute stretches it out while exploring, a
// celesta whispers its head in stealth, a lead shouts it in combat, brass growls it for the boss
// and the lead screams it an octave up in phase 2; the victory stinger plays it as a fanfare, the
// defeat stinger lets it fall apart.
//
// Each piece is written section by section (intro, loop body, outro) in bars of its own score;
// `Renderer` places the sections and makes the loop seamless.

enum Soundtrack {
  /// Every piece, in the order they are written.
  static func pieces(seed: UInt64) -> [Piece] {
    [
      menu(seed: seed), explore(seed: seed), stealth(seed: seed), stealthAlert(seed: seed), combat(seed: seed),
      boss(seed: seed, phase: 1),
      boss(seed: seed, phase: 2), spotted(seed: seed), victory(seed: seed), defeat(seed: seed),
    ]
  }

  /// Each piece and section gets its own stream of random numbers, derived from the seed.
  private static func score(_ seed: UInt64, _ piece: UInt64, _ section: UInt64, beatsPerBar: Int = 4) -> Score {
    Score(beatsPerBar: beatsPerBar, seed: SplitMix64Seed.derive(seed, piece * 16 + section))
  }

  // MARK: - Menu: F major, 90 BPM, I-V-vi-IV

  static func menu(seed: UInt64) -> Piece {
    let key = Key.major(53)
    let pad = Instrument(timbre: .pad, gain: 0.55, reverbSend: 0.5)
    let bell = Instrument(timbre: .bell, pan: 0.25, gain: 0.5, reverbSend: 0.4, delaySend: 0.25)
    let flute = Instrument(timbre: .flute, pan: -0.1, gain: 0.7, reverbSend: 0.45, delaySend: 0.15)
    let strings = Instrument(timbre: .strings, pan: -0.35, gain: 0.4, reverbSend: 0.5, brightness: 0.8)
    let bass = Instrument(timbre: .bass, gain: 0.8, reverbSend: 0.05, brightness: 0.7)
    let shaker = Instrument(timbre: .shaker, pan: 0.4, gain: 0.35, reverbSend: 0.2)
    let kick = Instrument(timbre: .kick, gain: 0.55, reverbSend: 0.05)
    let rim = Instrument(timbre: .rim, pan: -0.2, gain: 0.3, reverbSend: 0.3)
    let progression = [key.chord(0), key.chord(4), key.chord(5), key.chord(3)]

    func harmony(_ score: inout Score, bar: Int, chord: Chord, arpeggio: Bool) {
      let voiced = chord.rooted(near: 60)
      score.chord(pad, voiced, at: score.beat(bar: bar), for: 4, velocity: 0.6)
      if arpeggio {
        score.arpeggio(
          bell, voiced, indices: [0, 1, 2, 1, 3, 2, 1, 2], at: score.beat(bar: bar), steps: 8, stepBeats: 0.5,
          velocity: 0.45, spread: 0.35)
      }
      let root = chord.rooted(near: 36).root
      score.play(bass, root, at: score.beat(bar: bar), for: 1.4, velocity: 0.8)
      score.play(bass, root, at: score.beat(bar: bar, 1.5), for: 0.4, velocity: 0.6)
      score.play(bass, root + 7, at: score.beat(bar: bar, 2), for: 0.9, velocity: 0.7)
      score.play(bass, root + 12, at: score.beat(bar: bar, 3), for: 0.9, velocity: 0.65)
    }

    var intro = score(seed, 1, 0)
    intro.chord(pad, key.chord(0).rooted(near: 60), at: 0, for: 4, velocity: 0.6)
    intro.melody(bell, Leitmotif.head, in: key, at: 0, octave: 1, velocity: 0.55)
    intro.chord(pad, key.chord(3).rooted(near: 60), at: 4, for: 4, velocity: 0.6)
    intro.play(bass, key.chord(3).rooted(near: 36).root, at: 4, for: 3.5, velocity: 0.7)
    intro.arpeggio(bell, key.chord(3).rooted(near: 72), indices: [0, 1, 2, 3], at: 6, steps: 4, stepBeats: 0.5)

    var body = score(seed, 1, 1)
    for bar in 0..<16 {
      harmony(&body, bar: bar, chord: progression[bar % 4], arpeggio: bar < 4 || bar >= 12)
      if bar >= 4 {
        body.pattern(shaker, "x.o.x.o.x.o.x.oo", at: body.beat(bar: bar), velocity: 0.7)
        body.pattern(kick, "x.........x.....", at: body.beat(bar: bar), velocity: 0.8)
        body.pattern(rim, "....x.......x...", at: body.beat(bar: bar), velocity: 0.7)
      }
    }
    body.melody(flute, Leitmotif.call.followed(by: Leitmotif.answer), in: key, at: body.beat(bar: 4), octave: 1)
    body.melody(flute, Leitmotif.call.followed(by: Leitmotif.cadence), in: key, at: body.beat(bar: 8), octave: 1)
    // Bars 13-16: the strings hum the motif's head slowly, a third below, while the bell arpeggiates.
    body.melody(strings, Leitmotif.head.shifted(by: 2), in: key, at: body.beat(bar: 12), timeScale: 2, velocity: 0.6)
    body.melody(strings, Leitmotif.head, in: key, at: body.beat(bar: 14), octave: 0, timeScale: 1.5, velocity: 0.5)

    var outro = score(seed, 1, 2)
    outro.chord(pad, key.chord(0).rooted(near: 60), at: 0, for: 7, velocity: 0.6)
    outro.play(bass, key.pitch(0, octave: -1), at: 0, for: 6, velocity: 0.7)
    outro.play(flute, key.pitch(0, octave: 1), at: 0, for: 4, velocity: 0.6)
    outro.arpeggio(bell, key.chord(0).rooted(near: 72), indices: [0, 1, 2, 3], at: 0, steps: 4, stepBeats: 0.5)

    return Piece(
      fileName: "menu.ogg", title: "Leitmotif (Main Menu)", mood: "menu", beatsPerMinute: 90, introBars: 2,
      bodyBars: 16, outroBars: 2, intro: intro.notes, body: body.notes, outro: outro.notes,
      mix: Mix(reverbRoomSize: 0.8, reverbDamping: 0.5, reverbLevel: 1.2, delayBeats: 0.75, targetRMSDecibels: -18))
  }

  // MARK: - Explore: D major, 96 BPM, Imaj7-IVmaj7-vi7-Vsus, two bars each

  static func explore(seed: UInt64) -> Piece {
    let key = Key.major(50)
    let pad = Instrument(timbre: .pad, gain: 0.5, reverbSend: 0.55, brightness: 0.8)
    let pluck = Instrument(timbre: .pluck, pan: 0, gain: 0.35, reverbSend: 0.35, delaySend: 0.35, brightness: 0.7)
    let flute = Instrument(timbre: .flute, pan: 0.15, gain: 0.7, reverbSend: 0.5, delaySend: 0.2)
    let bell = Instrument(timbre: .bell, pan: -0.3, gain: 0.4, reverbSend: 0.5, delaySend: 0.3, brightness: 0.7)
    let bass = Instrument(timbre: .bass, gain: 0.75, reverbSend: 0.05, brightness: 0.6)
    let shaker = Instrument(timbre: .shaker, pan: -0.45, gain: 0.28, reverbSend: 0.25)
    let kick = Instrument(timbre: .kick, gain: 0.45, reverbSend: 0.05)
    let rim = Instrument(timbre: .rim, pan: 0.3, gain: 0.22, reverbSend: 0.4)
    let suspended = Chord(root: key.pitch(4), intervals: [0, 5, 7, 10])
    let chords = [key.chord(0, seventh: true), key.chord(3, seventh: true), key.chord(5, seventh: true), suspended]

    func harmony(_ score: inout Score, bar: Int, chord: Chord) {
      let voiced = chord.rooted(near: 57)
      if bar % 2 == 0 { score.chord(pad, voiced, at: score.beat(bar: bar), for: 8, velocity: 0.55, spread: 0.7) }
      score.arpeggio(
        pluck, chord.rooted(near: 62), indices: [0, 2, 1, 3, 2, 4, 3, 1], at: score.beat(bar: bar), steps: 8,
        stepBeats: 0.5, velocity: 0.55, spread: 0.5)
      let root = chord.rooted(near: 38).root
      score.play(bass, root, at: score.beat(bar: bar), for: 2.8, velocity: 0.75)
      score.play(bass, root + (bar % 2 == 0 ? 7 : 12), at: score.beat(bar: bar, 3), for: 0.9, velocity: 0.6)
    }

    var intro = score(seed, 2, 0)
    intro.play(kick, 36, at: 0, for: 1, velocity: 0.6)
    for bar in 0..<2 { harmony(&intro, bar: bar, chord: suspended) }

    var body = score(seed, 2, 1)
    for bar in 0..<16 {
      harmony(&body, bar: bar, chord: chords[(bar / 2) % 4])
      body.pattern(shaker, "x.o.-.o.x.o.-.o.", at: body.beat(bar: bar), velocity: 0.6)
      body.pattern(kick, "x.......-.......", at: body.beat(bar: bar), velocity: 0.7)
      body.pattern(rim, "............x...", at: body.beat(bar: bar), velocity: 0.6)
    }
    // First half: the bell remembers the motif's head; second half: the flute sings it, stretched.
    body.melody(bell, Leitmotif.head, in: key, at: body.beat(bar: 2), octave: 1, velocity: 0.5)
    body.melody(bell, Leitmotif.head.shifted(by: 1), in: key, at: body.beat(bar: 6), octave: 1, velocity: 0.5)
    body.melody(flute, Leitmotif.call, in: key, at: body.beat(bar: 8), octave: 1, timeScale: 2)
    body.melody(flute, Leitmotif.cadence, in: key, at: body.beat(bar: 12), octave: 1, timeScale: 2, velocity: 0.7)

    var outro = score(seed, 2, 2)
    outro.chord(pad, key.chord(0, seventh: true).rooted(near: 57), at: 0, for: 6, velocity: 0.55, spread: 0.7)
    outro.play(bass, key.pitch(0, octave: -1), at: 0, for: 5, velocity: 0.7)
    outro.arpeggio(
      pluck, key.chord(0, seventh: true).rooted(near: 62), indices: [0, 1, 2, 3, 4], at: 0, steps: 5, stepBeats: 0.5)

    return Piece(
      fileName: "explore.ogg", title: "Open Country (Exploration)", mood: "calm", beatsPerMinute: 96, introBars: 2,
      bodyBars: 16, outroBars: 2, intro: intro.notes, body: body.notes, outro: outro.notes,
      mix: Mix(reverbRoomSize: 0.82, reverbDamping: 0.45, reverbLevel: 1.2, delayBeats: 0.75, targetRMSDecibels: -18))
  }

  // MARK: - Stealth: E minor, 100 BPM, i-bII-i-iv-i-bVI-iv-V, two bars each

  static func stealth(seed: UInt64) -> Piece {
    let key = Key.minor(40)
    let pad = Instrument(timbre: .pad, gain: 0.5, reverbSend: 0.6, brightness: 0.45)
    let sub = Instrument(timbre: .subBass, gain: 0.85, reverbSend: 0)
    let bell = Instrument(timbre: .bell, pan: 0.35, gain: 0.45, reverbSend: 0.6, delaySend: 0.45, brightness: 0.6)
    let strings = Instrument(timbre: .strings, pan: -0.3, gain: 0.45, reverbSend: 0.5, brightness: 0.6)
    let pluck = Instrument(timbre: .pluck, pan: -0.4, gain: 0.3, reverbSend: 0.4, delaySend: 0.4, brightness: 0.5)
    let hat = Instrument(timbre: .closedHat, pan: 0.45, gain: 0.22, reverbSend: 0.15)
    let kick = Instrument(timbre: .kick, gain: 0.6, reverbSend: 0.1)
    let rim = Instrument(timbre: .rim, pan: -0.35, gain: 0.3, reverbSend: 0.5, delaySend: 0.3)
    let chords = [
      key.chord(0), Chord.major(41), key.chord(0), key.chord(3),
      key.chord(0), key.chord(5), key.chord(3), Chord.major(47),
    ]

    func bar(_ score: inout Score, _ bar: Int, chord: Chord, drums: Bool) {
      if bar % 2 == 0 { score.chord(pad, chord.rooted(near: 52), at: score.beat(bar: bar), for: 8, velocity: 0.6) }
      let root = chord.rooted(near: 28).root
      for step in 0..<8 {
        let pitch = step == 6 ? root + 12 : root
        score.play(
          sub, pitch, at: score.beat(bar: bar, Double(step) * 0.5), for: 0.3, velocity: step % 2 == 0 ? 0.8 : 0.5)
      }
      if drums {
        score.pattern(hat, "x-o-x-o-x-o-x-oo", at: score.beat(bar: bar), velocity: 0.6)
        score.pattern(kick, "xo..............", at: score.beat(bar: bar), velocity: 0.7)
        score.pattern(rim, bar % 2 == 0 ? "..........x....." : "......x.......x.", at: score.beat(bar: bar))
      }
    }

    var intro = score(seed, 3, 0)
    bar(&intro, 0, chord: key.chord(0), drums: false)
    bar(&intro, 1, chord: Chord.major(47), drums: true)
    intro.play(bell, key.pitch(4, octave: 1), at: 4, for: 2, velocity: 0.5)

    var body = score(seed, 3, 1)
    for index in 0..<16 { bar(&body, index, chord: chords[index / 2], drums: true) }
    // The motif's head, whispered by the celesta and answered by a muted pluck.
    for start in [2, 6] {
      body.melody(bell, Leitmotif.head, in: key, at: body.beat(bar: start), octave: 2, velocity: 0.55)
      body.melody(
        pluck, Leitmotif.head.shifted(by: -2), in: key, at: body.beat(bar: start + 1), octave: 1, velocity: 0.5)
    }
    // Bars 9-12: the low strings creep through the whole call, slowly; bars 13-16 the head again.
    body.melody(strings, Leitmotif.call, in: key, at: body.beat(bar: 8), octave: 1, timeScale: 2, velocity: 0.6)
    body.melody(bell, Leitmotif.head.shifted(by: 2), in: key, at: body.beat(bar: 12), octave: 2, velocity: 0.5)
    body.melody(bell, Leitmotif.head, in: key, at: body.beat(bar: 14), octave: 2, timeScale: 1.5, velocity: 0.5)

    var outro = score(seed, 3, 2)
    outro.chord(pad, key.chord(0).rooted(near: 52), at: 0, for: 6, velocity: 0.6)
    outro.play(sub, key.pitch(0, octave: -1), at: 0, for: 4, velocity: 0.8)
    outro.play(bell, key.pitch(0, octave: 2), at: 0, for: 2, velocity: 0.5)

    return Piece(
      fileName: "stealth.ogg", title: "Shadows (Stealth)", mood: "tense", beatsPerMinute: 100, introBars: 2,
      bodyBars: 16, outroBars: 2, intro: intro.notes, body: body.notes, outro: outro.notes,
      mix: Mix(reverbRoomSize: 0.85, reverbDamping: 0.6, reverbLevel: 1.3, delayBeats: 0.75, targetRMSDecibels: -18.5))
  }

  // MARK: - Stealth, alert layer: a stem of the stealth piece, bar for bar

  /// What the stealth music gains as the guards grow suspicious: a stem with the same bars,
  /// loop and outro as `stealth`, meant to be mixed over it sample-locked (a state's `layers`)
  /// and brought in by the `alert` parameter. Low toms and a ghosted snare in sixteenths,
  /// a taiko on the downbeats, an open hat on the offbeats and tremolo strings on the chords'
  /// roots and fifths; nothing melodic, so it fits every bar of the piece.
  static func stealthAlert(seed: UInt64) -> Piece {
    let key = Key.minor(40)
    let tom = Instrument(timbre: .tom, pan: -0.2, gain: 0.45, reverbSend: 0.25)
    let snare = Instrument(timbre: .snare, pan: 0.15, gain: 0.3, reverbSend: 0.3)
    let taiko = Instrument(timbre: .taiko, gain: 0.6, reverbSend: 0.35)
    let hat = Instrument(timbre: .openHat, pan: 0.4, gain: 0.18, reverbSend: 0.2)
    let strings = Instrument(timbre: .strings, pan: 0.3, gain: 0.35, reverbSend: 0.45, brightness: 0.7)
    // The stealth piece's chords, two bars each.
    let chords = [
      key.chord(0), Chord.major(41), key.chord(0), key.chord(3),
      key.chord(0), key.chord(5), key.chord(3), Chord.major(47),
    ]

    func bar(_ score: inout Score, _ bar: Int, chord: Chord, full: Bool) {
      score.pattern(taiko, bar % 2 == 0 ? "x.......x......." : "x.....x.........", at: score.beat(bar: bar), pitch: 43)
      score.pattern(
        tom, full ? "..x.-.x...x.-x.x" : "..x.....x.......", at: score.beat(bar: bar), pitch: 45, velocity: 0.7)
      if full {
        score.pattern(snare, "-.--.-.--.-.-.--", at: score.beat(bar: bar), velocity: 0.45)
        score.pattern(hat, "..x...x...x...x.", at: score.beat(bar: bar), velocity: 0.6)
      }
      let root = chord.rooted(near: 52).root
      for step in 0..<16 {
        let pitch = step % 4 == 3 ? root + 7 : root
        score.play(
          strings, pitch, at: score.beat(bar: bar, Double(step) * 0.25), for: 0.2, velocity: step % 4 == 0 ? 0.6 : 0.4)
      }
    }

    var intro = score(seed, 10, 0)
    bar(&intro, 0, chord: key.chord(0), full: false)
    bar(&intro, 1, chord: Chord.major(47), full: true)
    var body = score(seed, 10, 1)
    for index in 0..<16 { bar(&body, index, chord: chords[index / 2], full: index % 8 != 0) }
    var outro = score(seed, 10, 2)
    outro.play(taiko, 43, at: 0, for: 1, velocity: 0.8)
    outro.play(strings, key.chord(0).rooted(near: 52).root, at: 0, for: 2, velocity: 0.5)

    return Piece(
      fileName: "stealth-alert.ogg", title: "Shadows, Alert (Stealth layer)", mood: "alert", beatsPerMinute: 100,
      introBars: 2, bodyBars: 16, outroBars: 2, intro: intro.notes, body: body.notes, outro: outro.notes,
      mix: Mix(reverbRoomSize: 0.85, reverbDamping: 0.6, reverbLevel: 1.3, delayBeats: 0.75, targetRMSDecibels: -21))
  }

  // MARK: - Combat: A minor, 144 BPM, i-VI-III-VII, one bar each

  static func combat(seed: UInt64) -> Piece {
    let key = Key.minor(45)
    let lead = Instrument(timbre: .lead, pan: 0.1, gain: 0.55, reverbSend: 0.25, delaySend: 0.15)
    let brass = Instrument(timbre: .brass, pan: -0.2, gain: 0.45, reverbSend: 0.3)
    let strings = Instrument(timbre: .strings, pan: 0.3, gain: 0.35, reverbSend: 0.3)
    let pluck = Instrument(timbre: .pluck, gain: 0.3, reverbSend: 0.2, delaySend: 0.1, brightness: 0.9)
    let bass = Instrument(timbre: .bass, gain: 0.8, reverbSend: 0, brightness: 1.1)
    let kick = Instrument(timbre: .kick, gain: 0.85, reverbSend: 0.05)
    let snare = Instrument(timbre: .snare, pan: 0.05, gain: 0.6, reverbSend: 0.3)
    let hat = Instrument(timbre: .closedHat, pan: 0.35, gain: 0.22, reverbSend: 0.1)
    let openHat = Instrument(timbre: .openHat, pan: 0.35, gain: 0.25, reverbSend: 0.1)
    let crash = Instrument(timbre: .crash, pan: -0.3, gain: 0.4, reverbSend: 0.2)
    let tom = Instrument(timbre: .tom, pan: -0.2, gain: 0.6, reverbSend: 0.2)
    let chords = [key.chord(0), key.chord(5), key.chord(2), key.chord(6)]

    func groove(_ score: inout Score, bar: Int, chord: Chord, fill: Bool) {
      let start = score.beat(bar: bar)
      score.pattern(kick, "x..x..x...x..x..", at: start)
      score.pattern(snare, fill ? "....x.......xoxx" : "....x.......x..-", at: start, velocity: 0.85)
      score.pattern(hat, "x-o-x-o-x-o-x-o.", at: start, velocity: 0.8)
      score.pattern(openHat, "..............x.", at: start, velocity: 0.7)
      let root = chord.rooted(near: 33).root
      for step in 0..<8 {
        let pitch = step % 2 == 1 ? root + 12 : root
        score.play(bass, pitch, at: start + Double(step) * 0.5, for: 0.4, velocity: step % 2 == 0 ? 0.9 : 0.7)
      }
      score.arpeggio(
        pluck, chord.rooted(near: 57), indices: [0, 1, 2, 3, 2, 1, 0, 1], at: start, steps: 16, stepBeats: 0.25,
        velocity: 0.5, spread: 0.6, gateBeats: 0.18)
      score.chord(strings, chord.rooted(near: 57), at: start, for: 3.9, velocity: 0.55, spread: 0.6)
    }

    var intro = score(seed, 4, 0)
    intro.pattern(snare, "x.o.o.o.o-o-oooo", at: 0, velocity: 0.8)
    intro.pattern(kick, "x.......x.......", at: 0)
    intro.play(bass, 33, at: 0, for: 3.5, velocity: 0.8)
    intro.chord(brass, key.chord(6).rooted(near: 55), at: 4, for: 0.4, velocity: 0.8)
    intro.chord(brass, key.chord(6).rooted(near: 55), at: 5.5, for: 2, velocity: 0.8)
    intro.pattern(tom, "x.....x.....oooo", at: 4, pitch: 50, velocity: 0.8)
    intro.play(bass, 43, at: 4, for: 3.8, velocity: 0.8)
    intro.pattern(kick, "x.....x.........", at: 4)

    var body = score(seed, 4, 1)
    for bar in 0..<16 {
      groove(&body, bar: bar, chord: chords[bar % 4], fill: bar % 4 == 3)
      if bar % 4 == 0 { body.play(crash, 60, at: body.beat(bar: bar), for: 1, velocity: 0.8) }
    }
    body.pattern(tom, "........xoxoxxxx", at: body.beat(bar: 15), pitch: 47, velocity: 0.7)
    // Brass stabs on the first half; the lead sings the leitmotif in bars 5-8 and 13-16.
    for bar in 0..<4 {
      let chord = chords[bar % 4].rooted(near: 55)
      body.chord(brass, chord, at: body.beat(bar: bar), for: 0.4, velocity: 0.8)
      body.chord(brass, chord, at: body.beat(bar: bar, 1.5), for: 1, velocity: 0.7)
    }
    body.melody(lead, Leitmotif.call.followed(by: Leitmotif.answer), in: key, at: body.beat(bar: 4), octave: 1)
    body.melody(brass, Leitmotif.call.shifted(by: 2), in: key, at: body.beat(bar: 8), octave: 0, timeScale: 2)
    body.melody(lead, Leitmotif.call.followed(by: Leitmotif.cadence), in: key, at: body.beat(bar: 12), octave: 2)

    var outro = score(seed, 4, 2)
    outro.play(crash, 60, at: 0, for: 1)
    outro.pattern(kick, "x...............", at: 0)
    outro.chord(brass, key.chord(0).rooted(near: 57), at: 0, for: 3, velocity: 0.85)
    outro.play(bass, 33, at: 0, for: 3, velocity: 0.9)
    outro.play(tom, 43, at: 0, for: 1, velocity: 0.9)

    return Piece(
      fileName: "combat.ogg", title: "Steel and Sparks (Combat)", mood: "combat", beatsPerMinute: 144, introBars: 2,
      bodyBars: 16, outroBars: 2, intro: intro.notes, body: body.notes, outro: outro.notes,
      mix: Mix(reverbRoomSize: 0.6, reverbDamping: 0.5, reverbLevel: 0.8, delayBeats: 0.75, targetRMSDecibels: -17))
  }

  // MARK: - Boss: D minor, 150 BPM; phase 2 keeps key, tempo, bars and loop points

  static func boss(seed: UInt64, phase: Int) -> Piece {
    let intense = phase == 2
    let key = Key.minor(38)
    let brass = Instrument(timbre: .brass, pan: -0.15, gain: 0.55, reverbSend: 0.35)
    let lead = Instrument(timbre: .lead, pan: 0.15, gain: 0.5, reverbSend: 0.3, delaySend: 0.15, brightness: 1.1)
    let strings = Instrument(timbre: .strings, pan: 0.35, gain: 0.4, reverbSend: 0.3, brightness: intense ? 1.1 : 0.9)
    let pad = Instrument(timbre: .pad, gain: 0.45, reverbSend: 0.5, brightness: 0.9)
    let bass = Instrument(timbre: .bass, gain: 0.85, reverbSend: 0, brightness: intense ? 1.2 : 0.9)
    let kick = Instrument(timbre: .kick, gain: 0.85, reverbSend: 0.05)
    let snare = Instrument(timbre: .snare, pan: 0.05, gain: 0.6, reverbSend: 0.35)
    let hat = Instrument(timbre: .closedHat, pan: -0.35, gain: 0.2, reverbSend: 0.1)
    let taiko = Instrument(timbre: .taiko, pan: -0.1, gain: 0.8, reverbSend: 0.35)
    let tom = Instrument(timbre: .tom, pan: 0.25, gain: 0.55, reverbSend: 0.3)
    let crash = Instrument(timbre: .crash, pan: 0.3, gain: 0.4, reverbSend: 0.25)
    let dominant = Chord.major(45)
    let neapolitan = Chord.major(39)
    let chords = [
      key.chord(0), key.chord(0), key.chord(5), key.chord(6), key.chord(0), key.chord(0), key.chord(3), dominant,
      key.chord(0), neapolitan, key.chord(0), neapolitan, key.chord(5), key.chord(6), dominant, dominant,
    ]

    func bar(_ score: inout Score, _ bar: Int, chord: Chord) {
      let start = score.beat(bar: bar)
      let root = chord.rooted(near: 38).root
      if intense {
        score.pattern(kick, "x.x.x.x.x.x.x.x.", at: start, velocity: 0.85)
        score.pattern(snare, bar % 4 == 3 ? "....x.......xoxx" : "....x.......x...", at: start)
        score.pattern(hat, "xoxoxoxoxoxoxoxo", at: start, velocity: 0.7)
        score.pattern(taiko, "x.....x.........", at: start, velocity: 0.8)
        if bar % 2 == 0 { score.play(crash, 60, at: start, for: 1, velocity: 0.8) }
        // The ostinato in sixteenths: root, root, fifth, root, flat sixth over minor chords.
        let cell = [0, 0, 7, 0, 8, 0, 7, 12]
        for step in 0..<16 {
          score.play(
            strings, root + 12 + cell[step % 8], at: start + Double(step) * 0.25, for: 0.2,
            velocity: step % 4 == 0 ? 0.8 : 0.6, pan: step % 2 == 0 ? -0.3 : 0.3)
        }
        for step in 0..<8 {
          score.play(bass, step % 2 == 0 ? root : root + 12, at: start + Double(step) * 0.5, for: 0.4, velocity: 0.9)
        }
      } else {
        // Half time: the snare on beat 3, taiko on the big beats.
        score.pattern(kick, "x.....x...x.....", at: start)
        score.pattern(snare, "........x.......", at: start)
        score.pattern(hat, "x.o.x.o.x.o.x.o.", at: start, velocity: 0.7)
        score.pattern(taiko, bar % 2 == 0 ? "x.....x.....x..." : "x.....x...x.x.x.", at: start, velocity: 0.9)
        if bar % 4 == 0 { score.play(crash, 60, at: start, for: 1, velocity: 0.7) }
        let cell = [0, 0, 12, 0, 7, 0, 8, 7]
        for step in 0..<8 {
          score.play(
            strings, root + 12 + cell[step], at: start + Double(step) * 0.5, for: 0.4,
            velocity: step % 2 == 0 ? 0.75 : 0.55, pan: step % 2 == 0 ? -0.25 : 0.25)
        }
        score.play(bass, root, at: start, for: 1.4, velocity: 0.9)
        score.play(bass, root, at: start + 1.5, for: 1, velocity: 0.8)
        score.play(bass, root + 12, at: start + 3, for: 0.4, velocity: 0.7)
        score.play(bass, root, at: start + 3.5, for: 0.4, velocity: 0.75)
      }
    }

    var intro = score(seed, 5, UInt64(phase) * 4)
    intro.play(taiko, 40, at: 0, for: 1, velocity: 1)
    intro.play(crash, 60, at: 0, for: 1, velocity: 0.7)
    intro.play(bass, 26, at: 0, for: 3.5, velocity: 0.9)
    intro.chord(pad, key.chord(0).rooted(near: 50), at: 0, for: 4, velocity: 0.6)
    intro.pattern(taiko, intense ? "x..x..x.x.x.xxxx" : "x.....x.....x.x.", at: 0, velocity: 0.8)
    intro.chord(brass, dominant.rooted(near: 45), at: 4, for: 3.5, velocity: 0.85)
    intro.pattern(tom, intense ? "x.x.x.x.xxxxxxxx" : "x.......x.x.xxxx", at: 4, pitch: 45, velocity: 0.75)
    intro.play(bass, 33, at: 4, for: 3.5, velocity: 0.9)
    if intense { intro.pattern(snare, "........--oooxxx", at: 4) }

    var body = score(seed, 5, UInt64(phase) * 4 + 1)
    for index in 0..<16 { bar(&body, index, chord: chords[index]) }
    if intense {
      // Phase 2: the lead screams the motif an octave up, the brass doubles it a third below.
      body.melody(lead, Leitmotif.call.followed(by: Leitmotif.answer), in: key, at: 0, octave: 2, velocity: 0.85)
      body.melody(brass, Leitmotif.call.followed(by: Leitmotif.answer).shifted(by: -2), in: key, at: 0, octave: 1)
      for index in 4..<8 { body.chord(brass, chords[index].rooted(near: 50), at: body.beat(bar: index), for: 3.8) }
      body.melody(lead, Leitmotif.call.followed(by: Leitmotif.cadence), in: key, at: body.beat(bar: 8), octave: 2)
      body.melody(
        brass, Leitmotif.call.followed(by: Leitmotif.cadence).shifted(by: -2), in: key, at: body.beat(bar: 8), octave: 1
      )
      for index in 12..<16 {
        body.arpeggio(
          lead, chords[index].rooted(near: 62), indices: [0, 1, 2, 3, 4, 3, 2, 1], at: body.beat(bar: index), steps: 16,
          stepBeats: 0.25, velocity: 0.55, spread: 0.3, gateBeats: 0.2)
        body.chord(pad, chords[index].rooted(near: 50), at: body.beat(bar: index), for: 4, velocity: 0.55)
      }
    } else {
      // Phase 1: the brass growls the motif low; a pad holds the chords in between.
      body.melody(brass, Leitmotif.call.followed(by: Leitmotif.answer), in: key, at: 0, octave: 1, velocity: 0.85)
      body.melody(
        brass, Leitmotif.call.followed(by: Leitmotif.cadence), in: key, at: body.beat(bar: 8), octave: 1,
        velocity: 0.85)
      for index in [4, 5, 6, 7, 12, 13, 14, 15] {
        body.chord(pad, chords[index].rooted(near: 50), at: body.beat(bar: index), for: 4, velocity: 0.6)
      }
      body.melody(lead, Leitmotif.head, in: key, at: body.beat(bar: 12), octave: 2, timeScale: 2, velocity: 0.6)
    }

    var outro = score(seed, 5, UInt64(phase) * 4 + 2)
    outro.play(taiko, 40, at: 0, for: 1, velocity: 1)
    outro.play(crash, 60, at: 0, for: 1, velocity: 0.8)
    outro.play(kick, 36, at: 0, for: 1)
    outro.chord(brass, key.chord(0).rooted(near: 50), at: 0, for: 3, velocity: 0.9)
    outro.play(bass, 26, at: 0, for: 4, velocity: 0.9)
    outro.pattern(taiko, "......x.....x...", at: 0, velocity: 0.7)

    return Piece(
      fileName: intense ? "boss-phase2.ogg" : "boss.ogg",
      title: intense ? "The Tyrant, Unbound (Boss, Phase 2)" : "The Tyrant (Boss, Phase 1)", mood: "boss",
      beatsPerMinute: 150, introBars: 2, bodyBars: 16, outroBars: 2, intro: intro.notes, body: body.notes,
      outro: outro.notes,
      mix: Mix(reverbRoomSize: 0.7, reverbDamping: 0.5, reverbLevel: 0.9, delayBeats: 0.75, targetRMSDecibels: -17))
  }

  // MARK: - Stingers

  /// Spotted: a sforzando hit in E minor (the stealth key), a tritone cluster and the motif's
  /// first leap, rising.
  static func spotted(seed: UInt64) -> Piece {
    let key = Key.minor(40)
    var score = score(seed, 6, 0)
    let brass = Instrument(timbre: .brass, gain: 0.6, reverbSend: 0.5)
    let strings = Instrument(timbre: .strings, pan: 0.3, gain: 0.5, reverbSend: 0.5, brightness: 1.2)
    score.play(Instrument(timbre: .taiko, gain: 0.9, reverbSend: 0.5), 40, at: 0, for: 1, velocity: 1)
    score.play(Instrument(timbre: .kick, gain: 0.8), 36, at: 0, for: 1, velocity: 1)
    score.play(Instrument(timbre: .crash, pan: -0.3, gain: 0.45, reverbSend: 0.4), 60, at: 0, for: 1)
    score.chord(brass, Chord(pitches: [40, 46, 52, 53]), at: 0, for: 1.2, velocity: 0.9, spread: 0.6)
    score.play(Instrument(timbre: .subBass, gain: 0.8), 28, at: 0, for: 1.5, velocity: 0.9)
    // Tremolo strings climbing the motif's leap, then the bell answers with its head.
    for step in 0..<12 {
      let pitch = step < 6 ? key.pitch(0, octave: 2) : key.pitch(4, octave: 2)
      score.play(strings, pitch, at: 0.5 + Double(step) * 0.125, for: 0.11, velocity: 0.4 + 0.04 * Double(step))
    }
    score.melody(
      Instrument(timbre: .bell, pan: -0.3, gain: 0.5, reverbSend: 0.6, delaySend: 0.4), Leitmotif.head, in: key,
      at: 2, octave: 2, timeScale: 0.5, velocity: 0.6)
    return Piece(
      fileName: "stinger-spotted.ogg", title: "Spotted! (Stinger)", mood: "spotted", beatsPerMinute: 100,
      introBars: 0, bodyBars: 0, outroBars: 0, intro: score.notes, body: [], outro: [], oneShotSeconds: 3,
      mix: Mix(reverbRoomSize: 0.8, reverbLevel: 1.2, delayBeats: 0.5, targetRMSDecibels: -15))
  }

  /// Victory: the leitmotif as a fanfare in A major (combat's key turned bright), ending on a held
  /// tonic with a timpani-like roll.
  static func victory(seed: UInt64) -> Piece {
    let key = Key.major(57)
    var score = score(seed, 7, 0)
    let lead = Instrument(timbre: .lead, pan: 0.15, gain: 0.5, reverbSend: 0.4, brightness: 1.1)
    let brass = Instrument(timbre: .brass, pan: -0.2, gain: 0.5, reverbSend: 0.4)
    let fanfare = Phrase(steps: [(0, 0.5), (4, 0.5), (3, 0.25), (2, 0.25), (3, 0.5), (4, 0.5), (7, 2.5)])
    score.melody(lead, fanfare, in: key, at: 0, octave: 0)
    score.melody(brass, fanfare.shifted(by: -2), in: key, at: 0, octave: 0)
    score.chord(brass, key.chord(0).rooted(near: 57), at: 2.5, for: 2.5, velocity: 0.85)
    score.chord(
      Instrument(timbre: .strings, gain: 0.45, reverbSend: 0.5), key.chord(0).rooted(near: 64), at: 2.5, for: 2.5)
    score.play(Instrument(timbre: .bass, gain: 0.8), 33, at: 0, for: 2.2, velocity: 0.8)
    score.play(Instrument(timbre: .bass, gain: 0.8), 45, at: 2.5, for: 2.5, velocity: 0.9)
    let tom = Instrument(timbre: .tom, pan: 0.25, gain: 0.6, reverbSend: 0.3)
    score.pattern(tom, "x.o.x.o.x-------oooo", at: 0, pitch: 45, stepBeats: 0.125, velocity: 0.8)
    score.play(Instrument(timbre: .crash, pan: -0.3, gain: 0.45, reverbSend: 0.3), 60, at: 2.5, for: 1)
    score.play(Instrument(timbre: .kick, gain: 0.8), 36, at: 0, for: 1)
    score.play(Instrument(timbre: .kick, gain: 0.8), 36, at: 2.5, for: 1)
    score.arpeggio(
      Instrument(timbre: .bell, gain: 0.4, reverbSend: 0.5, delaySend: 0.3), key.chord(0).rooted(near: 81),
      indices: [0, 1, 2, 3, 4, 5], at: 2.5, steps: 6, stepBeats: 0.125)
    return Piece(
      fileName: "stinger-victory.ogg", title: "Victory (Stinger)", mood: "victory", beatsPerMinute: 120,
      introBars: 0, bodyBars: 0, outroBars: 0, intro: score.notes, body: [], outro: [], oneShotSeconds: 4,
      mix: Mix(reverbRoomSize: 0.75, reverbLevel: 1.0, delayBeats: 0.5, targetRMSDecibels: -15))
  }

  /// Defeat: the motif's head, slowed and sinking in D minor (the boss key), over a dark chord.
  static func defeat(seed: UInt64) -> Piece {
    let key = Key.minor(50)
    var score = score(seed, 8, 0)
    let flute = Instrument(timbre: .flute, gain: 0.6, reverbSend: 0.6, delaySend: 0.2)
    let fall = Phrase(steps: [(4, 0.5), (3, 0.5), (2, 0.5), (1, 0.5), (-1, 2)])
    score.melody(flute, fall, in: key, at: 0, octave: 0, velocity: 0.7)
    let strings = Instrument(timbre: .strings, gain: 0.45, reverbSend: 0.6, brightness: 0.6)
    score.chord(strings, key.chord(3).rooted(near: 55), at: 0, for: 2, velocity: 0.6)
    score.chord(strings, Chord(root: 49, intervals: [0, 4, 7]), at: 2, for: 1.6, velocity: 0.6)
    score.play(Instrument(timbre: .pad, gain: 0.6, reverbSend: 0.6, brightness: 0.5), 38, at: 0, for: 3.5)
    score.play(Instrument(timbre: .subBass, gain: 0.7), 31, at: 0, for: 2, velocity: 0.8)
    score.play(Instrument(timbre: .subBass, gain: 0.7), 26, at: 2, for: 1.8, velocity: 0.8)
    score.play(Instrument(timbre: .taiko, gain: 0.75, reverbSend: 0.6), 40, at: 0, for: 1, velocity: 0.8)
    score.play(Instrument(timbre: .taiko, gain: 0.75, reverbSend: 0.6), 40, at: 2, for: 1, velocity: 0.9)
    score.chord(
      Instrument(timbre: .brass, gain: 0.4, reverbSend: 0.6, brightness: 0.6), Chord.minor(38).rooted(near: 38), at: 2,
      for: 1.6, velocity: 0.7)
    return Piece(
      fileName: "stinger-defeat.ogg", title: "Defeat (Stinger)", mood: "defeat", beatsPerMinute: 70,
      introBars: 0, bodyBars: 0, outroBars: 0, intro: score.notes, body: [], outro: [], oneShotSeconds: 4,
      mix: Mix(reverbRoomSize: 0.85, reverbLevel: 1.3, delayBeats: 0.5, targetRMSDecibels: -17))
  }
}

/// Seeds for independent streams from one seed.
enum SplitMix64Seed {
  static func derive(_ seed: UInt64, _ stream: UInt64) -> UInt64 { SplitMix64.value(seed: seed, index: stream) }
}
