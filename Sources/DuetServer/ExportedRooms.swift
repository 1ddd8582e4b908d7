// The room logic lives in DuetRooms (so the simulator runs it without the HTTP server); whoever uses the server
// uses its rooms too.
@_exported import DuetRooms
