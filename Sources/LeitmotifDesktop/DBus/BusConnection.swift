import CSystemdBus
import Dispatch
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

// The one file that talks to sd-bus (libsystemd's D-Bus library, LGPL-2.1, linked dynamically).
// Why sd-bus and not libdbus: its licence is plainly LGPL (libdbus is "AFL-2.1 or GPL-2+"), its
// calls that build and read messages take one value at a time (Swift cannot call C's variadic
// functions, and sd-bus has a non-variadic twin for each), and one `sd_bus` used from one
// thread needs no locking at all. Everything here runs on the thread that owns the connection
// (the MPRIS service's); errors become `DesktopBusError` here and nowhere else.

/// What went wrong talking to the desktop's session bus.
public struct DesktopBusError: Error, CustomStringConvertible, Sendable, Equatable {
  public enum Code: Sendable, Equatable {
    /// No session bus to talk to: no `DBUS_SESSION_BUS_ADDRESS` and no `$XDG_RUNTIME_DIR/bus`
    /// (a server, a CI machine), or its address does not answer.
    case noSessionBus
    /// The bus refused the name (another program holds it and does not let go).
    case nameTaken
    /// A call on the bus failed (the error's name and message say why).
    case callFailed
    /// A reply or property did not have the shape the MPRIS specification gives it.
    case badReply
  }

  public var code: Code
  /// What was being done: "connect to unix:path=/run/user/1000/bus", "Player.Play on org.mpris...".
  public var operation: String
  /// sd-bus's or the remote's own words.
  public var detail: String

  public init(_ code: Code, operation: String, detail: String) {
    self.code = code
    self.operation = operation
    self.detail = detail
  }

  public var description: String { "\(operation): \(detail)" }

  /// From sd-bus's negative errno.
  static func errno(_ code: Code, _ operation: String, _ result: Int32) -> DesktopBusError {
    DesktopBusError(code, operation: operation, detail: String(cString: strerror(-result)))
  }
}

/// A value in a D-Bus message: what MPRIS uses (basic types, string arrays, variants, `a{sv}`).
package indirect enum BusValue: Equatable, Sendable {
  case string(String)
  case objectPath(String)
  case boolean(Bool)
  case int32(Int32)
  case int64(Int64)
  case uint32(UInt32)
  case double(Double)
  case stringArray([String])
  case variant(BusValue)
  /// `a{sv}`: MPRIS metadata and property maps, in the order given.
  case dictionary([(String, BusValue)])

  package static func == (lhs: BusValue, rhs: BusValue) -> Bool {
    switch (lhs, rhs) {
    case (.string(let a), .string(let b)), (.objectPath(let a), .objectPath(let b)): return a == b
    case (.boolean(let a), .boolean(let b)): return a == b
    case (.int32(let a), .int32(let b)): return a == b
    case (.int64(let a), .int64(let b)): return a == b
    case (.uint32(let a), .uint32(let b)): return a == b
    case (.double(let a), .double(let b)): return a == b
    case (.stringArray(let a), .stringArray(let b)): return a == b
    case (.variant(let a), .variant(let b)): return a == b
    case (.dictionary(let a), .dictionary(let b)):
      return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    default: return false
    }
  }

  /// The D-Bus type signature.
  package var signature: String {
    switch self {
    case .string: return "s"
    case .objectPath: return "o"
    case .boolean: return "b"
    case .int32: return "i"
    case .int64: return "x"
    case .uint32: return "u"
    case .double: return "d"
    case .stringArray: return "as"
    case .variant: return "v"
    case .dictionary: return "a{sv}"
    }
  }

  package var stringValue: String? {
    switch self {
    case .string(let text), .objectPath(let text): return text
    case .variant(let inner): return inner.stringValue
    default: return nil
    }
  }

  package var doubleValue: Double? {
    switch self {
    case .double(let number): return number
    case .int32(let number): return Double(number)
    case .int64(let number): return Double(number)
    case .uint32(let number): return Double(number)
    case .variant(let inner): return inner.doubleValue
    default: return nil
    }
  }

  package var int64Value: Int64? {
    switch self {
    case .int64(let number): return number
    case .int32(let number): return Int64(number)
    case .uint32(let number): return Int64(number)
    case .double(let number) where number.isFinite && abs(number) < 9e18: return Int64(number)
    case .variant(let inner): return inner.int64Value
    default: return nil
    }
  }

  package var boolValue: Bool? {
    switch self {
    case .boolean(let flag): return flag
    case .variant(let inner): return inner.boolValue
    default: return nil
    }
  }

  package var stringArrayValue: [String]? {
    switch self {
    case .stringArray(let list): return list
    case .string(let text): return [text]
    case .variant(let inner): return inner.stringArrayValue
    default: return nil
    }
  }

  package var dictionaryValue: [(String, BusValue)]? {
    switch self {
    case .dictionary(let entries): return entries
    case .variant(let inner): return inner.dictionaryValue
    default: return nil
    }
  }
}

extension [(String, BusValue)] {
  /// The value of `key` in an `a{sv}`, without its variant.
  package subscript(bus key: String) -> BusValue? {
    guard let found = first(where: { $0.0 == key })?.1 else { return nil }
    if case .variant(let inner) = found { return inner }
    return found
  }
}

/// One D-Bus message (a call, a reply or a signal); owns its reference and drops it in `deinit`.
package final class BusMessage {
  let handle: OpaquePointer

  /// Takes over a reference the caller owns.
  init(owning handle: OpaquePointer) { self.handle = handle }

  /// Adds a reference to a message sd-bus lends to a callback.
  init(borrowing handle: OpaquePointer) {
    self.handle = handle
    sd_bus_message_ref(handle)
  }

  deinit { sd_bus_message_unref(handle) }

  package var member: String? { sd_bus_message_get_member(handle).map { String(cString: $0) } }
  package var interface: String? { sd_bus_message_get_interface(handle).map { String(cString: $0) } }
  package var path: String? { sd_bus_message_get_path(handle).map { String(cString: $0) } }
  package var sender: String? { sd_bus_message_get_sender(handle).map { String(cString: $0) } }
  package var destination: String? { sd_bus_message_get_destination(handle).map { String(cString: $0) } }
  package var isMethodCall: Bool { sd_bus_message_is_method_call(handle, nil, nil) > 0 }
  /// The error a reply carries (nil for a method return).
  package var error: (name: String, message: String)? {
    guard let error = sd_bus_message_get_error(handle), sd_bus_error_is_set(error) > 0 else { return nil }
    return (
      error.pointee.name.map { String(cString: $0) } ?? "", error.pointee.message.map { String(cString: $0) } ?? ""
    )
  }

  // MARK: Writing

  /// Appends `values` in order. False when sd-bus refused one (out of memory, a bad string).
  @discardableResult
  package func append(_ values: BusValue...) -> Bool { values.allSatisfy { append($0) } }

  @discardableResult
  package func append(_ value: BusValue) -> Bool {
    switch value {
    case .string(let text):
      return text.withCString { sd_bus_message_append_basic(handle, CChar(UInt8(ascii: "s")), $0) } >= 0
    case .objectPath(let text):
      return text.withCString { sd_bus_message_append_basic(handle, CChar(UInt8(ascii: "o")), $0) } >= 0
    case .boolean(let flag):
      var number: Int32 = flag ? 1 : 0
      return sd_bus_message_append_basic(handle, CChar(UInt8(ascii: "b")), &number) >= 0
    case .int32(var number): return sd_bus_message_append_basic(handle, CChar(UInt8(ascii: "i")), &number) >= 0
    case .int64(var number): return sd_bus_message_append_basic(handle, CChar(UInt8(ascii: "x")), &number) >= 0
    case .uint32(var number): return sd_bus_message_append_basic(handle, CChar(UInt8(ascii: "u")), &number) >= 0
    case .double(var number): return sd_bus_message_append_basic(handle, CChar(UInt8(ascii: "d")), &number) >= 0
    case .stringArray(let list):
      guard open("a", "s") else { return false }
      for item in list where !append(.string(item)) { return false }
      return close()
    case .variant(let inner):
      guard open("v", inner.signature), append(inner) else { return false }
      return close()
    case .dictionary(let entries):
      guard open("a", "{sv}") else { return false }
      for (key, entry) in entries {
        let wrapped: BusValue = if case .variant = entry { entry } else { .variant(entry) }
        guard open("e", "sv"), append(.string(key)), append(wrapped), close() else { return false }
      }
      return close()
    }
  }

  private func open(_ type: Unicode.Scalar, _ contents: String) -> Bool {
    contents.withCString { sd_bus_message_open_container(handle, CChar(UInt8(ascii: type)), $0) } >= 0
  }

  private func close() -> Bool { sd_bus_message_close_container(handle) >= 0 }

  // MARK: Reading

  /// Reads the message's arguments from the start: each as a `BusValue` (types MPRIS does not use
  /// come back as nil and end the list).
  package func arguments() -> [BusValue] {
    sd_bus_message_rewind(handle, 1)
    var values: [BusValue] = []
    while let value = readValue() { values.append(value) }
    return values
  }

  private func readValue() -> BusValue? {
    var type: CChar = 0
    var contents: UnsafePointer<CChar>?
    guard sd_bus_message_peek_type(handle, &type, &contents) > 0 else { return nil }
    switch UInt8(bitPattern: type) {
    case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"):
      var text: UnsafePointer<CChar>?
      guard sd_bus_message_read_basic(handle, type, &text) > 0, let text else { return nil }
      let string = String(cString: text)
      return type == CChar(UInt8(ascii: "o")) ? .objectPath(string) : .string(string)
    case UInt8(ascii: "b"):
      var flag: Int32 = 0
      guard sd_bus_message_read_basic(handle, type, &flag) > 0 else { return nil }
      return .boolean(flag != 0)
    case UInt8(ascii: "i"):
      var number: Int32 = 0
      guard sd_bus_message_read_basic(handle, type, &number) > 0 else { return nil }
      return .int32(number)
    case UInt8(ascii: "u"):
      var number: UInt32 = 0
      guard sd_bus_message_read_basic(handle, type, &number) > 0 else { return nil }
      return .uint32(number)
    case UInt8(ascii: "x"):
      var number: Int64 = 0
      guard sd_bus_message_read_basic(handle, type, &number) > 0 else { return nil }
      return .int64(number)
    case UInt8(ascii: "t"):
      var number: UInt64 = 0
      guard sd_bus_message_read_basic(handle, type, &number) > 0 else { return nil }
      return .int64(Int64(clamping: number))
    case UInt8(ascii: "n"):
      var number: Int16 = 0
      guard sd_bus_message_read_basic(handle, type, &number) > 0 else { return nil }
      return .int32(Int32(number))
    case UInt8(ascii: "q"):
      var number: UInt16 = 0
      guard sd_bus_message_read_basic(handle, type, &number) > 0 else { return nil }
      return .int32(Int32(number))
    case UInt8(ascii: "y"):
      var number: UInt8 = 0
      guard sd_bus_message_read_basic(handle, type, &number) > 0 else { return nil }
      return .int32(Int32(number))
    case UInt8(ascii: "d"):
      var number: Double = 0
      guard sd_bus_message_read_basic(handle, type, &number) > 0 else { return nil }
      return .double(number)
    case UInt8(ascii: "v"):
      guard let contents, sd_bus_message_enter_container(handle, type, contents) > 0 else { return nil }
      defer { sd_bus_message_exit_container(handle) }
      return readValue().map { .variant($0) }
    case UInt8(ascii: "a"):
      guard let contents else { return nil }
      let signature = String(cString: contents)
      guard sd_bus_message_enter_container(handle, type, contents) > 0 else { return nil }
      defer { sd_bus_message_exit_container(handle) }
      if signature == "{sv}" || signature == "{ss}" {
        var entries: [(String, BusValue)] = []
        while sd_bus_message_enter_container(handle, CChar(UInt8(ascii: "e")), String(signature.dropFirst().dropLast()))
          > 0
        {
          defer { sd_bus_message_exit_container(handle) }
          guard let key = readValue()?.stringValue, let value = readValue() else { break }
          entries.append((key, value))
        }
        return .dictionary(entries)
      }
      // Strings (and object paths) are kept; elements of other types are read past and left
      // out, so what follows the array still reads right.
      var items: [String] = []
      while sd_bus_message_at_end(handle, 0) == 0, let item = readValue() {
        if let text = item.stringValue { items.append(text) }
      }
      return .stringArray(items)
    default:
      // A type MPRIS does not use here (a struct, a file descriptor): skipped, and stood for by
      // an empty list, so the arguments after it can still be read.
      _ = sd_bus_message_skip(handle, nil)
      return .stringArray([])
    }
  }
}

/// This process's own MPRIS players (`NowPlayingService`), by `BusConnection.identity` (the bus
/// and the unique name on it: ":1.42" on one bus is another connection on the next), which
/// `SystemMusicPlayer` leaves out: the game's music is not the player's music app. A process
/// may still list another game's Leitmotif, or a test's own player.
package let ownPlayerConnections = Mutex<Set<String>>([])

/// A connection to a bus, owned by one thread (sd-bus objects are not shared between threads);
/// closed in `deinit`. Sendable only to be handed over: made on one thread, then used on the one
/// it was handed to and no other.
package final class BusConnection: @unchecked Sendable {
  private let bus: OpaquePointer
  /// The object handlers: sd-bus calls them from `process()`; each slot is freed with the
  /// connection.
  private var objects: [HandlerRegistration] = []
  private var matches: [HandlerRegistration] = []
  /// What this connection was opened on, for messages.
  package let address: String

  /// The session bus's address: `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus` when
  /// that socket exists; nil when there is neither (never an X11 autolaunch, which would start a
  /// bus of its own or ask for a display).
  package static func sessionBusAddress(environment: [String: String] = ProcessInfo.processInfo.environment)
    -> String?
  {
    if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
    if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
      let socket = runtime + "/bus"
      var info = stat()
      if stat(socket, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK { return "unix:path=" + socket }
    }
    return nil
  }

  /// Connects to the bus at `address` (nil: the session bus) as a client, and says hello.
  package init(address given: String? = nil) throws(DesktopBusError) {
    guard let address = given ?? Self.sessionBusAddress() else {
      throw DesktopBusError(
        .noSessionBus, operation: "connect to the session bus",
        detail: "no DBUS_SESSION_BUS_ADDRESS and no $XDG_RUNTIME_DIR/bus")
    }
    self.address = address
    var made: OpaquePointer?
    var result = sd_bus_new(&made)
    guard result >= 0, let made else { throw .errno(.noSessionBus, "connect to \(address)", result) }
    result = address.withCString { sd_bus_set_address(made, $0) }
    if result >= 0 { result = sd_bus_set_bus_client(made, 1) }
    if result >= 0 { result = sd_bus_start(made) }
    guard result >= 0 else {
      sd_bus_unref(made)
      throw .errno(.noSessionBus, "connect to \(address)", result)
    }
    bus = made
    var id = sd_id128_t()
    busID =
      sd_bus_get_bus_id(made, &id) >= 0
      ? withUnsafeBytes(of: id.bytes) { $0.map { String($0, radix: 16) }.joined(separator: ".") } : address
  }

  deinit {
    for object in objects { sd_bus_slot_unref(object.slot) }
    for match in matches { sd_bus_slot_unref(match.slot) }
    sd_bus_flush_close_unref(bus)
  }

  /// This connection's unique name (":1.42").
  package var uniqueName: String? {
    var name: UnsafePointer<CChar>?
    guard sd_bus_get_unique_name(bus, &name) >= 0, let name else { return nil }
    return String(cString: name)
  }

  /// The bus's own id (the server's, as `dbus-daemon` makes it at start; the address where it
  /// cannot be had).
  package let busID: String

  /// A connection on a bus, unique across buses: the bus's id and `name` (a unique name on it).
  package func identity(of name: String) -> String { busID + "/" + name }

  /// Asks for a well-known name; throws `.nameTaken` when another connection has it.
  package func requestName(_ name: String) throws(DesktopBusError) {
    // Flags 0: no queueing, no replacing; a name taken is an error at once.
    let result = name.withCString { sd_bus_request_name(bus, $0, 0) }
    guard result >= 0 else {
      throw .errno(result == -EEXIST ? .nameTaken : .callFailed, "request the name \(name)", result)
    }
  }

  /// Calls `handler` for every method call on `path` (all its interfaces); the handler replies
  /// (or not, then the caller gets an error). Runs inside `process()`.
  package func addObject(path: String, handler: @escaping (BusMessage) -> Void) throws(DesktopBusError) {
    let registration = HandlerRegistration(handler: handler)
    var slot: OpaquePointer?
    let result = path.withCString { path in
      sd_bus_add_object(
        bus, &slot, path,
        { message, userdata, _ in
          guard let message, let userdata else { return 0 }
          let registration = Unmanaged<HandlerRegistration>.fromOpaque(userdata).takeUnretainedValue()
          let wrapped = BusMessage(borrowing: message)
          guard wrapped.isMethodCall else { return 0 }
          registration.handler(wrapped)
          return 1
        }, Unmanaged.passUnretained(registration).toOpaque())
    }
    guard result >= 0, let slot else { throw .errno(.callFailed, "register the object \(path)", result) }
    registration.slot = slot
    objects.append(registration)
  }

  /// Calls `handler` for every message that matches `rule` (a D-Bus match rule:
  /// "type='signal',interface='org.freedesktop.DBus.Properties'"). Runs inside `process()`.
  package func addMatch(_ rule: String, handler: @escaping (BusMessage) -> Void) throws(DesktopBusError) {
    let registration = HandlerRegistration(handler: handler)
    var slot: OpaquePointer?
    let result = rule.withCString { rule in
      sd_bus_add_match(
        bus, &slot, rule,
        { message, userdata, _ in
          guard let message, let userdata else { return 0 }
          Unmanaged<HandlerRegistration>.fromOpaque(userdata).takeUnretainedValue().handler(
            BusMessage(borrowing: message))
          return 0
        }, Unmanaged.passUnretained(registration).toOpaque())
    }
    guard result >= 0, let slot else { throw .errno(.callFailed, "add the match \(rule)", result) }
    registration.slot = slot
    matches.append(registration)
  }

  /// Does the work waiting (incoming calls and signals go to their handlers, replies out), then
  /// waits for more, at most `timeout` seconds, or until `wakeUp` is signalled (a command from
  /// another thread). Throws `.noSessionBus` once the bus is gone.
  package func process(waitingAtMost timeout: Double, wakeUp: WakeUpSignal? = nil) throws(DesktopBusError) {
    while true {
      let result = sd_bus_process(bus, nil)
      guard result >= 0 else { throw .errno(.noSessionBus, "read from \(address)", result) }
      if result == 0 { break }
    }
    // sd_bus_wait waits on the bus alone; a poll of our own also hears the wake-up signal. The
    // bus says what it waits for (its events) and when its next timeout (a call's) falls due.
    let fd = sd_bus_get_fd(bus)
    guard fd >= 0 else { throw .errno(.noSessionBus, "wait on \(address)", fd) }
    let events = sd_bus_get_events(bus)
    guard events >= 0 else { throw .errno(.noSessionBus, "wait on \(address)", events) }
    var waitMicroseconds = UInt64(max(0, timeout) * 1_000_000)
    var due: UInt64 = 0
    if sd_bus_get_timeout(bus, &due) > 0, due != UInt64.max {
      let now = UInt64(DispatchTime.now().uptimeNanoseconds / 1000)
      waitMicroseconds = min(waitMicroseconds, due > now ? due - now : 0)
    }
    var descriptors = [pollfd(fd: fd, events: Int16(events), revents: 0)]
    if let wakeUp { descriptors.append(pollfd(fd: wakeUp.fileDescriptor, events: Int16(POLLIN), revents: 0)) }
    let result = poll(&descriptors, nfds_t(descriptors.count), Int32(min(waitMicroseconds / 1000 + 1, 60_000)))
    guard result >= 0 || errno == EINTR else {
      throw .errno(.noSessionBus, "wait on \(address)", -errno)
    }
    if let wakeUp, descriptors[1].revents != 0 { wakeUp.clear() }
  }

  // MARK: Messages

  package func methodReturn(to call: BusMessage) -> BusMessage? {
    var made: OpaquePointer?
    guard sd_bus_message_new_method_return(call.handle, &made) >= 0, let made else { return nil }
    return BusMessage(owning: made)
  }

  /// Replies to `call` with the D-Bus error `name` ("org.freedesktop.DBus.Error.NotSupported").
  package func replyError(to call: BusMessage, name: String, message: String) {
    name.withCString { name in
      message.withCString { text in
        var error = sd_bus_error(name: name, message: text, _need_free: 0)
        _ = sd_bus_reply_method_error(call.handle, &error)
      }
    }
  }

  package func signal(path: String, interface: String, member: String) -> BusMessage? {
    var made: OpaquePointer?
    guard sd_bus_message_new_signal(bus, &made, path, interface, member) >= 0, let made else { return nil }
    return BusMessage(owning: made)
  }

  package func methodCall(destination: String, path: String, interface: String, member: String) -> BusMessage? {
    var made: OpaquePointer?
    guard sd_bus_message_new_method_call(bus, &made, destination, path, interface, member) >= 0, let made else {
      return nil
    }
    return BusMessage(owning: made)
  }

  /// Sends a reply or a signal (queued; `process` writes it out).
  @discardableResult
  package func send(_ message: BusMessage) -> Bool { sd_bus_send(bus, message.handle, nil) >= 0 }

  /// Sends `call` and waits for its reply, at most `timeout` seconds (the thread that owns the
  /// connection only; never a game or real-time thread). A D-Bus error reply throws `.callFailed`
  /// with the remote's name and message.
  package func call(_ call: BusMessage, timeout: Double = 2) throws(DesktopBusError) -> BusMessage {
    var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
    defer { sd_bus_error_free(&error) }
    var reply: OpaquePointer?
    let operation = "\(call.interface.map { $0 + "." } ?? "")\(call.member ?? "call")"
    let result = sd_bus_call(bus, call.handle, UInt64(timeout * 1_000_000), &error, &reply)
    guard result >= 0, let reply else {
      let name = error.name.map { String(cString: $0) } ?? String(cString: strerror(-result))
      let message = error.message.map { String(cString: $0) } ?? ""
      throw DesktopBusError(.callFailed, operation: operation, detail: message.isEmpty ? name : "\(name): \(message)")
    }
    return BusMessage(owning: reply)
  }

  /// Sends `call` without waiting for the reply (a command: Play, Pause, ...).
  @discardableResult
  package func callWithoutReply(_ call: BusMessage) -> Bool {
    sd_bus_message_set_expect_reply(call.handle, 0)
    return sd_bus_send(bus, call.handle, nil) >= 0
  }

  /// Sends `call`; `reply` runs inside a later `process()` with the reply, or with the D-Bus
  /// error (a timeout after `timeout` seconds, the remote gone) as a `DesktopBusError`. Nothing
  /// waits: a player that hangs costs its own reply only. False when it could not be sent
  /// (`reply` is then never called).
  @discardableResult
  package func callAsync(
    _ call: BusMessage, timeout: Double = 2, reply: @escaping (Result<BusMessage, DesktopBusError>) -> Void
  ) -> Bool {
    let operation = "\(call.interface.map { $0 + "." } ?? "")\(call.member ?? "call") on \(call.destination ?? "?")"
    let box = Unmanaged.passRetained(PendingReply(operation: operation, handler: reply)).toOpaque()
    var slot: OpaquePointer?
    let result = sd_bus_call_async(
      bus, &slot, call.handle,
      { message, userdata, _ in
        guard let message, let userdata else { return 0 }
        let pending = Unmanaged<PendingReply>.fromOpaque(userdata).takeUnretainedValue()
        let wrapped = BusMessage(borrowing: message)
        if let error = wrapped.error {
          let detail = error.message.isEmpty ? error.name : "\(error.name): \(error.message)"
          pending.handler(.failure(DesktopBusError(.callFailed, operation: pending.operation, detail: detail)))
        } else {
          pending.handler(.success(wrapped))
        }
        return 0
      }, box, UInt64(max(0.001, timeout) * 1_000_000))
    guard result >= 0, let slot else {
      Unmanaged<PendingReply>.fromOpaque(box).release()
      return false
    }
    // The bus keeps the slot until the reply came (or the connection closed), then the destroy
    // callback lets go of the handler.
    sd_bus_slot_set_destroy_callback(slot) { userdata in
      if let userdata { Unmanaged<PendingReply>.fromOpaque(userdata).release() }
    }
    sd_bus_slot_set_floating(slot, 1)
    sd_bus_slot_unref(slot)
    return true
  }

  /// Calls a method of the bus itself (`org.freedesktop.DBus`), and waits for the reply: for
  /// ListNames and GetConnectionUnixProcessID, on the connection's own thread.
  package func callBus(_ member: String, _ arguments: BusValue...) throws(DesktopBusError) -> [BusValue] {
    guard
      let message = methodCall(
        destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
        member: member)
    else { throw DesktopBusError(.callFailed, operation: "org.freedesktop.DBus.\(member)", detail: "out of memory") }
    for argument in arguments { message.append(argument) }
    return try call(message).arguments()
  }
}

private final class PendingReply {
  let operation: String
  let handler: (Result<BusMessage, DesktopBusError>) -> Void
  init(operation: String, handler: @escaping (Result<BusMessage, DesktopBusError>) -> Void) {
    self.operation = operation
    self.handler = handler
  }
}

/// Wakes a thread that waits in `BusConnection.process`: a command for the bus from another
/// thread. A non-blocking pipe (Swift's Glibc module does not show `eventfd`): `signal` writes a
/// byte, never blocks (a full pipe is already a wake-up) and allocates nothing.
package final class WakeUpSignal: Sendable {
  private let readEnd: Int32
  private let writeEnd: Int32

  package init() {
    var ends: [Int32] = [-1, -1]
    // pipe2 needs _GNU_SOURCE, which Swift's Glibc module is built without.
    if pipe(&ends) == 0 {
      for end in ends {
        _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        _ = fcntl(end, F_SETFD, FD_CLOEXEC)
      }
    }
    readEnd = ends[0]
    writeEnd = ends[1]
  }

  deinit {
    if readEnd >= 0 { close(readEnd) }
    if writeEnd >= 0 { close(writeEnd) }
  }

  var fileDescriptor: Int32 { readEnd }

  /// Thread safety: any thread.
  package func signal() {
    var byte: UInt8 = 1
    _ = write(writeEnd, &byte, 1)
  }

  func clear() {
    var bytes = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
    while withUnsafeMutableBytes(of: &bytes, { read(readEnd, $0.baseAddress, $0.count) }) > 0 {}
  }
}

/// An object's or a match's handler, and the sd-bus slot that calls it (freed with the
/// connection).
private final class HandlerRegistration {
  let handler: (BusMessage) -> Void
  var slot: OpaquePointer?
  init(handler: @escaping (BusMessage) -> Void) { self.handler = handler }
}
