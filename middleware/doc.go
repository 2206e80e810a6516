// Package middleware holds reso's net/http middleware, each a
// func(http.Handler) http.Handler usable in any net/http server and in alice
// chains: [Recover] turns panics into 500 answers, [Log] logs requests with
// slog, [Cookies] drops Set-Cookie headers for cookies the request
// already carries unchanged (docs/wire.md#responses), [Metrics] reports
// each request to a [Recorder], and [Admit] refuses new long-lived
// connections (WebSocket handshakes, GETs kept open) at once while a check
// fails. Those of them that a request goes through share one wrapper of
// its ResponseWriter: the first wraps, the others find that wrapper and use
// it, so a request costs one wrapper however many of them it passes, and
// none is allocated on a connection of core.Listen. The authenticator is in
// package auth below this one.
package middleware
