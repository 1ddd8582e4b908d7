// Subprocesses, the heavy-work queue and TestFailure live in DuetTestBasics (which does not link the server), so
// the simulator's and the room rules' tests can use them; every user of the test server gets them too.
@_exported import DuetTestBasics
