// Package js holds reso.js, the JavaScript client of the channel, and its
// TypeScript declarations (docs/clients.md), embedded so that the server
// can serve them to the apps it hosts (package www).
package js

import _ "embed"

// Module is reso.js, an ES module.
//
//go:embed reso.js
var Module []byte

// Declarations is reso.d.ts, the module's TypeScript declarations.
//
//go:embed reso.d.ts
var Declarations []byte
