// swift-tools-version:6.0
// hello-music: the smallest Swift game on Leitmotif. It depends on the Leitmotif package by path
// (this repository, two folders up); a game of yours writes its own path, or a URL and a
// version once Leitmotif is published.
import PackageDescription

let package = Package(
  name: "hello-music",
  dependencies: [.package(name: "Leitmotif", path: "../..")],
  targets: [
    .executableTarget(
      name: "hello-music", dependencies: [.product(name: "Leitmotif", package: "Leitmotif")], path: "Sources"),
    // The whole program of the documentation's "Getting started" page, as it is there (a test
    // checks that the page shows this file), so the page's program is built with the examples.
    .executableTarget(
      name: "getting-started", dependencies: [.product(name: "Leitmotif", package: "Leitmotif")],
      path: "GettingStarted"),
  ]
)
