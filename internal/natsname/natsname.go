// Package natsname names what a reso fleet keeps on NATS JetStream: the
// streams and buckets of fleet NAME are all RESO_<NAME>_<PART>, NAME
// upper-cased with its dashes as underscores (docs/fleet.md). The fleet
// (channel/fleet), the login store (middleware/auth/natsstore) and the
// harnesses that clean up after a fleet name them through it.
package natsname

import "strings"

// Of returns the name of part (LOG, KV, NODES, SNAP, MEMBERS, LOGINS) of
// fleet name; a bucket's stream is named KV_ or OBJ_ and then this.
func Of(fleet, part string) string { return Prefix(fleet) + part }

// Prefix returns what every name of fleet's streams and buckets begins
// with: RESO_<NAME>_.
func Prefix(fleet string) string {
	return "RESO_" + strings.ToUpper(strings.ReplaceAll(fleet, "-", "_")) + "_"
}
