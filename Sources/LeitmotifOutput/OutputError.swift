/// Why the audio output failed: which OpenAL operation, on which device, and OpenAL's own code.
public struct OutputError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What kind of failure it was.
  public enum Reason: Sendable, Equatable {
    /// `alcOpenDevice` (or the loopback open) returned nothing.
    case deviceUnavailable
    /// `alcCreateContext` failed, or the context could not be made current.
    case contextFailed
    /// The loopback device cannot render this format.
    case formatUnsupported
    /// An `al*` call set an error.
    case callFailed
  }
  /// What kind of failure it was.
  public var reason: Reason
  /// The OpenAL call or step that failed, e.g. "alSourceQueueBuffers".
  public var operation: String
  /// The device's name, when known.
  public var device: String?
  /// The `AL_*` or `ALC_*` error code that caused it.
  public var code: Int32?

  /// An error of `reason` in `operation`, on `device` (when known), with OpenAL's `code`.
  public init(_ reason: Reason, operation: String, device: String? = nil, code: Int32? = nil) {
    self.reason = reason
    self.operation = operation
    self.device = device
    self.code = code
  }

  /// The failure in a sentence: the call, the device and the code.
  public var description: String {
    var text = "\(operation) failed"
    if let device { text += " on device \"\(device)\"" }
    switch reason {
    case .deviceUnavailable: text += ": the device could not be opened"
    case .contextFailed: text += ": no OpenAL context"
    case .formatUnsupported: text += ": format not supported by the loopback device"
    case .callFailed: break
    }
    if let code { text += " (\(OpenAL.errorName(code)))" }
    return text
  }
}
