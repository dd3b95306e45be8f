import CSQLite
import FoundationEssentials
import LeitmotifDecoding
import LeitmotifEngine
import LeitmotifOutput

#if canImport(Glibc)
  import Glibc
#endif

/// The one file that talks to SQLite (3.40 on Debian 12). Every result code is turned into a
/// `SQLiteError` here, once; every handle is owned by one Swift object that frees it.
///
/// Thread safety: a connection is used by one thread at a time (callers hold the library's
/// lock). The database runs in WAL mode so a reader in another process (the `leitmotif` tool)
/// never blocks a writer.
package final class SQLiteDatabase {
  let path: String
  private var handle: OpaquePointer?

  /// Opens (creating if missing, with mode 0600) the database at `path`.
  /// - Throws: `SQLiteError` when it cannot be opened.
  init(path: String, readOnly: Bool = false) throws(SQLiteError) {
    self.path = path
    if !readOnly { try Self.createPrivately(path) }
    let flags = (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_NOMUTEX
    let code = sqlite3_open_v2(path, &handle, flags, nil)
    guard code == SQLITE_OK else {
      let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
      sqlite3_close_v2(handle)
      handle = nil
      throw SQLiteError(path: path, code: code, message: message, statement: nil)
    }
    // A second scan in another process waits up to 5 s for the write lock instead of failing.
    sqlite3_busy_timeout(handle, 5_000)
  }

  deinit { sqlite3_close_v2(handle) }

  /// Makes the file at `path`, empty and mode 0600, unless it exists; tightens one that an
  /// earlier version left readable by others. SQLite would create it 0644 (less the umask), and
  /// the index lists the player's music, play counts and ratings: nobody else's business. The
  /// -wal, -shm and -journal files SQLite makes beside it take this file's mode.
  private static func createPrivately(_ path: String) throws(SQLiteError) {
    // O_EXCL never opens an existing file nor follows a link; the mode is set with fchmod,
    // which the umask does not filter.
    var descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    if descriptor < 0 {
      let code = errno
      guard code == EEXIST else {
        throw SQLiteError(
          path: path, code: SQLITE_CANTOPEN, message: "cannot create it: \(String(cString: strerror(code)))",
          statement: nil)
      }
      // There already: SQLite opens it as it is; only a regular file of ours is tightened.
      descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
      guard descriptor >= 0 else { return }
      defer { close(descriptor) }
      var status = stat()
      if fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, status.st_uid == geteuid(),
        status.st_mode & 0o077 != 0
      {
        _ = fchmod(descriptor, 0o600)
      }
      return
    }
    defer { close(descriptor) }
    guard fchmod(descriptor, 0o600) == 0 else {
      let code = errno
      throw SQLiteError(
        path: path, code: SQLITE_CANTOPEN, message: "cannot set its mode to 0600: \(String(cString: strerror(code)))",
        statement: nil)
    }
  }

  /// Runs one or more statements that return no rows.
  func execute(_ sql: String) throws(SQLiteError) {
    var error: UnsafeMutablePointer<CChar>?
    let code = sqlite3_exec(handle, sql, nil, nil, &error)
    if code != SQLITE_OK {
      let message = error.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
      sqlite3_free(error)
      throw SQLiteError(path: path, code: code, message: message, statement: sql)
    }
  }

  /// Compiles `sql`; bind parameters with `bind`, then `step` through the rows.
  func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
    var statement: OpaquePointer?
    let code = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
    guard code == SQLITE_OK, let statement else {
      throw SQLiteError(path: path, code: code, message: String(cString: sqlite3_errmsg(handle)), statement: sql)
    }
    return SQLiteStatement(database: self, handle: statement, sql: sql)
  }

  /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
  func transaction<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
    try execute("BEGIN IMMEDIATE")
    do {
      let result = try body()
      try execute("COMMIT")
      return result
    } catch {
      try? execute("ROLLBACK")
      throw error
    }
  }

  var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
  var changes: Int { Int(sqlite3_changes(handle)) }

  fileprivate func error(code: Int32, sql: String?) -> SQLiteError {
    SQLiteError(path: path, code: code, message: String(cString: sqlite3_errmsg(handle)), statement: sql)
  }
}

/// A compiled statement, finalized when released.
package final class SQLiteStatement {
  private let database: SQLiteDatabase
  private let handle: OpaquePointer
  let sql: String

  fileprivate init(database: SQLiteDatabase, handle: OpaquePointer, sql: String) {
    self.database = database
    self.handle = handle
    self.sql = sql
  }

  deinit { sqlite3_finalize(handle) }

  /// A value to bind or read.
  package enum Value: Equatable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
  }

  /// Binds parameters 1...n (clearing earlier bindings) and rewinds the statement.
  @discardableResult
  func bind(_ values: [Value]) throws(SQLiteError) -> SQLiteStatement {
    sqlite3_reset(handle)
    sqlite3_clear_bindings(handle)
    for (offset, value) in values.enumerated() {
      let index = Int32(offset + 1)
      let code: Int32
      switch value {
      case .null: code = sqlite3_bind_null(handle, index)
      case .integer(let number): code = sqlite3_bind_int64(handle, index, number)
      case .real(let number): code = sqlite3_bind_double(handle, index, number)
      case .text(let text):
        // SQLITE_TRANSIENT: SQLite copies the bytes (the Swift string's storage is temporary).
        code = sqlite3_bind_text(handle, index, text, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
      }
      guard code == SQLITE_OK else { throw database.error(code: code, sql: sql) }
    }
    return self
  }

  /// Advances to the next row; false when done.
  func step() throws(SQLiteError) -> Bool {
    let code = sqlite3_step(handle)
    switch code {
    case SQLITE_ROW: return true
    case SQLITE_DONE: return false
    default: throw database.error(code: code, sql: sql)
    }
  }

  /// Runs a statement that returns no rows.
  func run(_ values: [Value] = []) throws(SQLiteError) {
    try bind(values)
    while try step() {}
  }

  /// Every row, each as its columns.
  func rows(_ values: [Value] = []) throws(SQLiteError) -> [[Value]] {
    try bind(values)
    var result: [[Value]] = []
    while try step() { result.append((0..<columnCount).map { column($0) }) }
    return result
  }

  var columnCount: Int { Int(sqlite3_column_count(handle)) }

  func column(_ index: Int) -> Value {
    let column = Int32(index)
    switch sqlite3_column_type(handle, column) {
    case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, column))
    case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, column))
    case SQLITE_NULL: return .null
    default:
      guard let text = sqlite3_column_text(handle, column) else { return .null }
      return .text(String(cString: text))
    }
  }

  func text(_ index: Int) -> String? { if case .text(let value) = column(index) { value } else { nil } }
  func integer(_ index: Int) -> Int64? {
    switch column(index) {
    case .integer(let value): return value
    case .real(let value): return Int64(value)
    default: return nil
    }
  }
  func real(_ index: Int) -> Double? {
    switch column(index) {
    case .real(let value): return value
    case .integer(let value): return Double(value)
    default: return nil
    }
  }
}

/// A failed SQLite call: which database, SQLite's code and message, and the statement.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
  /// The database file.
  public let path: String
  /// SQLite's result code (its low byte is the primary code, e.g. `SQLITE_BUSY`).
  public let code: Int32
  /// SQLite's message (`sqlite3_errmsg`).
  public let message: String
  /// The SQL statement that failed, when there was one.
  public let statement: String?

  /// The database file is damaged or not a database (SQLITE_CORRUPT, SQLITE_NOTADB).
  public var isDamage: Bool { code & 0xff == SQLITE_CORRUPT || code & 0xff == SQLITE_NOTADB }
  /// Another connection holds the lock (SQLITE_BUSY, SQLITE_LOCKED).
  public var isBusy: Bool { code & 0xff == SQLITE_BUSY || code & 0xff == SQLITE_LOCKED }

  /// "PATH: SQLite error CODE: MESSAGE", with the statement's start when there is one.
  public var description: String {
    "\(path): SQLite error \(code): \(message)" + (statement.map { " (in: \($0.prefix(80)))" } ?? "")
  }
}
