// swift-tools-version:6.0
// The libFuzzer driver: one executable whose target is chosen by LEITMOTIF_FUZZ_TARGET (see
// Sources/LeitmotifFuzzTargets in the main package). A package of its own because it only links
// when built with -sanitize=fuzzer (its `main` calls libFuzzer's driver); `make fuzz` builds it
// in its own scratch path and runs every target.
import Foundation
import PackageDescription

// A path dependency's identity is the last component of its path: the checkout's folder name.
let leitmotif = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().lastPathComponent
  .lowercased()

let package = Package(
  name: "LeitmotifFuzz",
  dependencies: [.package(path: "..")],
  targets: [
    .executableTarget(
      name: "LeitmotifFuzz",
      dependencies: [.product(name: "LeitmotifFuzzTargets", package: leitmotif)])
  ]
)
