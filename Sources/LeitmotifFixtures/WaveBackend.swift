import Foundation

/// OpenAL Soft's wave backend, for capturing what the real-time engine really plays: a child
/// process started with `environment(capturingTo:configuration:)` writes its output to `file`
/// (a WAV of 32-bit floats at 48 kHz; the sizes stay 0xFFFFFFFF until the device closes) instead
/// of a sound card. See ../shared/NOTES.md.
public enum WaveBackend {
  /// This process's environment, with OpenAL Soft told to use the wave backend writing to
  /// `file`; its configuration is written to `configuration`.
  public static func environment(capturingTo file: String, configuration: String) throws -> [String: String] {
    try "[general]\ndrivers=wave\nfrequency=48000\n[wave]\nfile=\(file)\n".write(
      toFile: configuration, atomically: true, encoding: .utf8)
    var environment = ProcessInfo.processInfo.environment
    environment["ALSOFT_DRIVERS"] = "wave"
    environment["ALSOFT_CONF"] = configuration
    return environment
  }
}
