// Package tests holds reso's black-box tests: they build ./cmd/reso, start
// it on a free loopback port in a temporary directory and speak only HTTP
// (and raw TCP, where status lines matter). Every test runs in each mode of
// [modes]: compiled in, and with every bundled plugin isolated in a child
// process (-isolate all).
package tests
