// Package middleware holds reso's net/http middleware, each a
// func(http.Handler) http.Handler usable in any net/http server and in alice
// chains: [Recover] turns panics into 500 answers, [Log] logs requests with
// slog, and [Cookies] drops Set-Cookie headers for cookies the request
// already carries unchanged (docs/wire.md#responses), and [Admit] refuses new
// long-lived connections (WebSocket handshakes, GETs kept open) at once
// while a check fails. The authenticator is in package auth below this one.
package middleware
