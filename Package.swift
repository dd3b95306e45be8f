// swift-tools-version:6.0
// Leitmotif's layers, lowest first:
//   C libraries (COpenAL, CVorbisFile, CMPG123, CSQLite, CSampleRate) one system-library target each
//   LeitmotifDecoding   streaming decoders (Ogg Vorbis, MP3), tags         -> CVorbisFile, CMPG123
//   LeitmotifOutput     OpenAL devices, sources, buffers, loopback, WAV    -> COpenAL
//   Leitmotif           the mixer, players, the music library (SQLite)     -> Decoding, Output, CSQLite, CSampleRate
//   LeitmotifC          the C API (include/leitmotif.h), libLeitmotifC.so  -> Leitmotif, CLeitmotifHeader
//   leitmotif (CLI), leitmotif-bench, leitmotif-demo (Demo/)               executables on top
//   leitmotif-compose   makes the bundled default music in Assets/music    -> Fixtures (libvorbisenc)
// LeitmotifFixtures (test and benchmark material: tones, libvorbisenc) is not a product.
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
    .systemLibrary(
      name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
    // libsamplerate, BSD-2-Clause: the mixer's resampler (file rate and playback rate to mix frames).
    .systemLibrary(
      name: "CSampleRate", pkgConfig: "samplerate", providers: [.apt(["libsamplerate0-dev"])]),

    .target(name: "LeitmotifDecoding", dependencies: ["CVorbisFile", "CMPG123"]),
    .target(name: "LeitmotifOutput", dependencies: ["COpenAL"]),
    .target(name: "Leitmotif", dependencies: ["LeitmotifDecoding", "LeitmotifOutput", "CSQLite", "CSampleRate"]),

    // The C API: the header's declarations for the Swift side, and the @_cdecl functions.
    .systemLibrary(name: "CLeitmotifHeader"),
    .target(name: "LeitmotifC", dependencies: ["Leitmotif", "CLeitmotifHeader"]),

    .executableTarget(name: "LeitmotifCLI", dependencies: ["Leitmotif"]),
    // Tests only: counts allocations, lock waits and file I/O on the engine's streaming thread.
    .target(name: "LeitmotifRealtimeAudit"),
    .target(name: "LeitmotifFixtures", dependencies: ["CVorbisEnc", "LeitmotifDecoding", "LeitmotifOutput"]),
    .executableTarget(
      name: "LeitmotifBench",
      dependencies: ["Leitmotif", "LeitmotifFixtures", "CVorbisFile", "CMPG123"]),

    .executableTarget(
      name: "LeitmotifDemo", dependencies: ["Leitmotif"], path: "Demo",
      exclude: ["README.md", "level.json5", "c-game"]),
    .executableTarget(name: "LeitmotifCompose", dependencies: ["LeitmotifFixtures"]),

    .testTarget(
      name: "LeitmotifTests",
      dependencies: ["Leitmotif", "LeitmotifFixtures", "LeitmotifRealtimeAudit", "CVorbisFile", "CMPG123"],
      resources: [.copy("Fixtures")]),
  ]
)
