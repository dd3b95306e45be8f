import LeitmotifFuzzTargets

#if canImport(Glibc)
  import Glibc
#endif

// SwiftPM links every executable's entry point under its module's name (main is defined as
// LeitmotifFuzz_main), so libFuzzer's own `main` is not the one that runs: this one hands
// control to libFuzzer's driver (LLVMFuzzerRunDriver, in the runtime -sanitize=fuzzer links).
// LLVMFuzzerTestOneInput is defined too, as the runtime's archive still refers to it.
@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(
  _ argc: UnsafeMutablePointer<CInt>,
  _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
  _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The target chosen by LEITMOTIF_FUZZ_TARGET; the process ends with a message without one.
let target: FuzzTarget = {
  func complain(_ text: String) -> Never {
    _ = text.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
    exit(2)
  }
  let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
  guard let name = getenv("LEITMOTIF_FUZZ_TARGET").map({ String(cString: $0) }) else {
    complain("set LEITMOTIF_FUZZ_TARGET to one of: \(names)\n")
  }
  guard let target = FuzzTarget(rawValue: name) else { complain("unknown fuzz target \(name); one of: \(names)\n") }
  return target
}()

/// One input.
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  target.run(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
  return 0
}

_ = target  // says what is wrong before libFuzzer starts
var argc = CommandLine.argc
var argv = CommandLine.unsafeArgv
exit(runDriver(&argc, &argv) { data, size in testOneInput(data, size) })
