/// Why a `RoomStateStore` could not do what it was asked, in words an operator can act on: which database, where, and
/// what went wrong ("PostgreSQL at 127.0.0.1:5432: connection refused"). The drivers' own errors say too little (a
/// `PSQLError` prints a fixed sentence on purpose) or too much (a query with its bindings).
public struct RoomStateStoreError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
