// Package jepsen checks reso the way Jepsen checks databases (issue 35):
// concurrent clients record histories over the real doors of real
// processes (reso nodes of a fleet on a NATS JetStream cluster, or one
// reso on SQLite) while faults come and go, and checkers decide whether
// the histories are allowed.
//
//   - A register per key (PUT, GET, DELETE over the HTTP door) and
//     create-if-absent (POST with an id over the WebSocket door, one
//     `success` and the others `exists`) are checked for linearizability
//     with porcupine (github.com/anishathalye/porcupine).
//   - The notification stream is checked by its own checker (stream.go):
//     per resource, every subscriber on every node sees the same seqs in
//     the same order, and none is missing after a resume with since.
//
// Run drives an Env (env.go) and returns a Result; jepsen_test.go holds
// the short run of go test and the long campaign (-campaign). The
// sabotage switch (RunConfig.Sabotage, RESO_JEPSEN_SABOTAGE=1) makes the
// recorder lie, to show that each check fails when it must.
package jepsen
