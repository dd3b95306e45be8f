// The C API's mounts (leitmotif.h, "Music from memory or the game's own archive"): the C side of
// `MountedFiles`. A folder mount's reader calls the game's lm_file_callbacks.

import CLeitmotifHeader
import Leitmotif

/// The game's callbacks, copied at mount time. Their user_data is the game's to keep thread-safe,
/// as the header says.
private struct FileCallbacks: @unchecked Sendable {
  var callbacks: lm_file_callbacks
}

/// One file of a folder mount, open in the game's reader: closed through its callback once, when
/// the decoder that read it lets it go.
private final class CallbackFileReader: MountedFileReader {
  let sizeBytes: Int64
  private let file: UnsafeMutableRawPointer
  private let callbacks: lm_file_callbacks

  init?(name: String, callbacks: lm_file_callbacks) {
    var size: Int64 = -1
    guard let open = callbacks.open, let file = name.withCString({ open($0, &size, callbacks.user_data) }) else {
      return nil
    }
    self.file = file
    self.callbacks = callbacks
    // A file the game says has no size is one that cannot be read: the decoder reports it empty.
    sizeBytes = max(0, size)
  }

  deinit { callbacks.close?(file, callbacks.user_data) }

  func read(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) -> Int {
    guard let read = callbacks.read else { return -1 }
    let got = read(file, offset, buffer, count, callbacks.user_data)
    // More than asked for would be the game's bug; never trust it past the buffer.
    return got < 0 ? -1 : Int(min(got, Int64(count)))
  }
}

/// A mount refusal as C sees it: always the caller's argument (the path or a name).
private func mountError(_ error: MountedFiles.MountError) -> CAPIError { .invalidArgument(error.description) }

@_cdecl("lm_mount_memory")
public func lmMountMemory(_ path: UnsafePointer<CChar>?, _ data: UnsafeRawPointer?, _ size: Int) -> lm_error {
  withoutEngine { () throws(CAPIError) in
    let path = try CString.nonEmpty(path, "path")
    guard try cSize(size, "size") > 0 else { throw .invalidArgument("size is 0: a mounted file needs bytes") }
    let data = try required(data, "data")
    let bytes = [UInt8](UnsafeRawBufferPointer(start: data, count: size))
    do throws(MountedFiles.MountError) {
      try MountedFiles.mount(contents: bytes, at: path)
    } catch {
      throw mountError(error)
    }
  }
}

@_cdecl("lm_mount_files")
public func lmMountFiles(
  _ path: UnsafePointer<CChar>?, _ names: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int,
  _ callbacks: UnsafePointer<lm_file_callbacks>?
) -> lm_error {
  withoutEngine { () throws(CAPIError) in
    let path = try CString.nonEmpty(path, "path")
    let callbacks = try required(callbacks, "callbacks")
    try checkedSize(
      UnsafeRawPointer(callbacks).load(as: Int.self), of: "lm_file_callbacks", MemoryLayout<lm_file_callbacks>.size)
    let copied = FileCallbacks(callbacks: callbacks.pointee)
    guard copied.callbacks.open != nil else { throw .invalidArgument("callbacks->open is NULL") }
    guard copied.callbacks.read != nil else { throw .invalidArgument("callbacks->read is NULL") }
    _ = try cSize(count, "name_count")
    var files: [String] = []
    if count > 0 {
      let names = try required(names, "names")
      for index in 0..<count { files.append(try CString.nonEmpty(names[index], "names[\(index)]")) }
    }
    do throws(MountedFiles.MountError) {
      try MountedFiles.mount(folder: path, files: files) { name in
        CallbackFileReader(name: name, callbacks: copied.callbacks)
      }
    } catch {
      throw mountError(error)
    }
  }
}

@_cdecl("lm_unmount")
public func lmUnmount(_ path: UnsafePointer<CChar>?) -> lm_error {
  withoutEngine { () throws(CAPIError) in
    let path = try CString.nonEmpty(path, "path")
    do throws(MountedFiles.MountError) {
      try MountedFiles.unmount(path)
    } catch {
      throw mountError(error)
    }
  }
}
