// swift-tools-version:6.0
// Leitmotif's layers, lowest first; no layer names a type of one above it:
//   C libraries (COpenAL, CVorbisFile, CMPG123, CFLAC, COpusFile, CSndFile, CSQLite, CSampleRate, CSoxr, CSoundTouch,
//                CEbur128, CSystemdBus)  one target each
//   LeitmotifDecoding   streaming decoders (Ogg Vorbis, MP3, FLAC, Opus, WAV/AIFF), tags
//                                                 -> CVorbisFile, CMPG123, CFLAC, COpusFile, CSndFile
//   LeitmotifOutput     OpenAL devices, sources, buffers, loopback, WAV        -> COpenAL
//   LeitmotifEngine     the mixer and voices: mix clock, voice handles, music bus, resampling
//                                                                       -> Decoding, Output, CSampleRate, CSoxr, CSoundTouch
//   LeitmotifAnalysis   what a whole song tells: loudness (EBU R128), tempo and beats, energy
//                                                                              -> Decoding, CEbur128
//   LeitmotifLibrary    the player's music library: index (SQLite), queries, consent, picker, analysis at scan
//                                                          -> Engine (diagnostics), Analysis, CSQLite
//   LeitmotifPlayers    Player, QueuePlayer, transitions, offline rendering    -> Engine, Library
//   LeitmotifCues       cue files (JSON5), the level-event bus, the music director -> Players
//   LeitmotifDesktop    the session bus: MPRIS both ways (now playing, media keys, the player's music apps)
//                                                                              -> Cues, CSystemdBus
//   Leitmotif           re-exports them all: a game writes `import Leitmotif`
//   LeitmotifC          the C API (include/leitmotif.h), libLeitmotifC.so      -> Leitmotif, CLeitmotifHeader
//   leitmotif (CLI), leitmotif-bench, leitmotif-demo (Demo/)                   executables on top
//   leitmotif-compose   makes the bundled default music in Assets/music        -> Fixtures (libvorbisenc)
// LeitmotifFixtures (test and benchmark material: tones, libvorbisenc, libFLAC's and libopus's encoders) is
// not a product.
import PackageDescription

let package = Package(
  name: "Leitmotif",
  products: [
    .library(name: "Leitmotif", targets: ["Leitmotif"]),
    .library(name: "LeitmotifC", type: .dynamic, targets: ["LeitmotifC"]),
    .executable(name: "leitmotif", targets: ["LeitmotifCLI"]),
    .executable(name: "leitmotif-bench", targets: ["LeitmotifBench"]),
    .executable(name: "leitmotif-demo", targets: ["LeitmotifDemo"]),
    .executable(name: "leitmotif-compose", targets: ["LeitmotifCompose"]),
    // For Fuzz/Package.swift (`make fuzz`), which can only use products; not for games.
    .library(name: "LeitmotifFuzzTargets", targets: ["LeitmotifFuzzTargets"]),
  ],
  targets: [
    .systemLibrary(
      name: "COpenAL", pkgConfig: "openal", providers: [.apt(["libopenal-dev"])]),
    .systemLibrary(
      name: "CVorbisFile", pkgConfig: "vorbisfile", providers: [.apt(["libvorbis-dev"])]),
    .systemLibrary(
      name: "CVorbisEnc", pkgConfig: "vorbisenc", providers: [.apt(["libvorbis-dev"])]),
    .systemLibrary(
      name: "CMPG123", pkgConfig: "libmpg123", providers: [.apt(["libmpg123-dev"])]),
    // libFLAC, BSD-3-Clause: FLAC decoding (and encoding, for the test material).
    .systemLibrary(name: "CFLAC", pkgConfig: "flac", providers: [.apt(["libflac-dev"])]),
    // libsndfile, LGPL-2.1-or-later (linked dynamically): WAV and AIFF decoding, with their loop points.
    .systemLibrary(name: "CSndFile", pkgConfig: "sndfile", providers: [.apt(["libsndfile1-dev"])]),
    // opusfile and libopus, BSD-3-Clause: Ogg Opus decoding; libopus's encoder for the test material.
    .systemLibrary(name: "COpusFile", pkgConfig: "opusfile", providers: [.apt(["libopusfile-dev"])]),
    .systemLibrary(name: "COpus", pkgConfig: "opus", providers: [.apt(["libopus-dev"])]),
    .systemLibrary(
      name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
    // libsamplerate, BSD-2-Clause: the mixer's resampler (file rate and playback rate to mix frames).
    .systemLibrary(
      name: "CSampleRate", pkgConfig: "samplerate", providers: [.apt(["libsamplerate0-dev"])]),
    // libsoxr, LGPL-2.1 (linked dynamically): the decode threads' fixed-ratio resampler, from a
    // file's rate to the mix rate.
    .systemLibrary(name: "CSoxr", pkgConfig: "soxr", providers: [.apt(["libsoxr-dev"])]),
    // SoundTouch, LGPL-2.1 (linked dynamically, through its C API libSoundTouchDll): the voices'
    // time-stretcher, tempo that keeps pitch. Its pkg-config file names the C++ library only.
    .systemLibrary(name: "CSoundTouch", providers: [.apt(["libsoundtouch-dev"])]),
    // libebur128, MIT: EBU R128 loudness, loudness range and true peak of each scanned song.
    .systemLibrary(name: "CEbur128", pkgConfig: "libebur128", providers: [.apt(["libebur128-dev"])]),
    // sd-bus from libsystemd, LGPL-2.1 (linked dynamically): MPRIS on the session bus.
    .systemLibrary(name: "CSystemdBus", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
    // glibc's <malloc.h> (the C library itself): heap statistics for the soak benchmark.
    .systemLibrary(name: "CMalloc"),

    .target(name: "LeitmotifDecoding", dependencies: ["CVorbisFile", "CMPG123", "CFLAC", "COpusFile", "CSndFile"]),
    .target(name: "LeitmotifOutput", dependencies: ["COpenAL"]),
    .target(
      name: "LeitmotifEngine",
      dependencies: ["LeitmotifDecoding", "LeitmotifOutput", "CSampleRate", "CSoxr", "CSoundTouch"]),
    .target(name: "LeitmotifAnalysis", dependencies: ["LeitmotifDecoding", "CEbur128"]),
    .target(name: "LeitmotifLibrary", dependencies: ["LeitmotifEngine", "LeitmotifAnalysis", "CSQLite"]),
    .target(name: "LeitmotifPlayers", dependencies: ["LeitmotifEngine", "LeitmotifLibrary"]),
    .target(name: "LeitmotifCues", dependencies: ["LeitmotifPlayers"]),
    .target(name: "LeitmotifDesktop", dependencies: ["LeitmotifCues", "CSystemdBus"]),
    .target(
      name: "Leitmotif",
      dependencies: [
        "LeitmotifDecoding", "LeitmotifOutput", "LeitmotifEngine", "LeitmotifAnalysis", "LeitmotifLibrary",
        "LeitmotifPlayers", "LeitmotifCues", "LeitmotifDesktop",
      ]),

    // The C API: the header's declarations for the Swift side, and the @_cdecl functions.
    .systemLibrary(name: "CLeitmotifHeader"),
    .target(name: "LeitmotifC", dependencies: ["Leitmotif", "CLeitmotifHeader"]),

    .executableTarget(name: "LeitmotifCLI", dependencies: ["Leitmotif"]),
    // The fuzzers' entry points: the libFuzzer driver in Fuzz/ (`make fuzz`) and the tests'
    // replay of the committed corpus call the same code.
    .target(name: "LeitmotifFuzzTargets", dependencies: ["LeitmotifCues", "LeitmotifLibrary", "LeitmotifDecoding"]),
    // Tests only: counts allocations, lock waits and file I/O on the engine's streaming thread.
    .target(name: "LeitmotifRealtimeAudit"),
    .target(
      name: "LeitmotifFixtures",
      dependencies: ["CVorbisEnc", "CFLAC", "COpus", "LeitmotifDecoding", "LeitmotifOutput"]),
    .executableTarget(
      name: "LeitmotifBench",
      dependencies: ["Leitmotif", "LeitmotifFixtures", "CVorbisFile", "CMPG123", "CMalloc"],
      // The peers (SFML, SDL_mixer) are C and C++ programs the bench builds itself when run.
      exclude: ["Peers"]),

    .executableTarget(
      name: "LeitmotifDemo", dependencies: ["Leitmotif"], path: "Demo",
      exclude: ["README.md", "level.json5"]),
    .executableTarget(name: "LeitmotifCompose", dependencies: ["LeitmotifFixtures"]),

    .testTarget(
      name: "LeitmotifTests",
      dependencies: [
        "Leitmotif", "LeitmotifEngine", "LeitmotifAnalysis", "LeitmotifLibrary", "LeitmotifPlayers", "LeitmotifCues",
        "LeitmotifFixtures",
        "LeitmotifRealtimeAudit", "LeitmotifFuzzTargets", "CVorbisFile", "CMPG123", "LeitmotifC", "CLeitmotifHeader",
      ],
      resources: [.copy("Fixtures")]),
  ]
)
