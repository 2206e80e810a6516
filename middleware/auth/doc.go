// Package auth is the authenticator of reso (docs/wire.md#authentication):
// login records in a [Store] (package sqlitestore keeps them in SQLite), session
// tokens bound to an instance secret, and the checks that turn a request into
// a core.Identity, as middleware that any net/http server can put in front of
// a handler: [Required] for a route that needs an identity, [Optional] for
// one that serves anonymous callers too. The identity reaches the handler in
// the request context (core.IdentityFromContext).
//
// A login record holds an id (0 is reserved for the administrator, who has
// no record), an e-mail, a realm, the hash MD5(<email>:<realm>:<password>)
// in lower-case hex (the HA1 of HTTP Digest) and a token. A token is 32 hex
// characters of MD5 over the instance secret, the decimal id and a timestamp
// part, followed by that timestamp part: 10 hex characters of the Unix time
// in seconds. The administrator's token is MD5(admin::<secret>); see
// [AdminToken].
//
// [Authenticator.Check] runs the checks in this order
// (docs/wire.md#check-order):
//
//  1. Authorization: Basic (RFC 7617), or Digest (RFC 7616, MD5, qop=auth)
//     when [Config].Digest is set. A successful login stores a new token and
//     sets the cookies token and user_id.
//  2. Route groups user_id or email with token, read from the request
//     context of the core router.
//  3. Cookies user_id and token.
//  4. Otherwise 401 Unauthorized with WWW-Authenticate: Basic realm="localhost".
//
// Check writes nothing to the response: it returns a [Result] (the identity,
// or what the answer must carry: the session cookies of a new login, expired
// cookies, the challenge, Retry-After), and [Result.Write] is the separate
// step that sets those headers. [Required] writes every result; [Optional]
// lets a request without any credentials pass with nothing written and
// treats every other request as Required does.
//
// Failures are *core.StatusError values with the exact status lines of
// docs/wire.md#authentication-failures ("401 Not Found", "401 Unauthorized",
// "401 Not Authorized", "401 Not Authorized as Admin", "404 Not Found");
// core.WriteError puts them on the wire.
//
// The session cookies are named token and user_id and have Path=/, HttpOnly,
// SameSite=Lax, and Secure when the request came over TLS; [Config].Cookies
// chooses other names and another path (for an authenticator mounted under
// a prefix of a larger server). With [Config].SignedCookies their values are
// signed with gorilla/securecookie.
//
// Failed logins are throttled ([Config].Throttle, on by default). Failures
// are counted per (account, client address), per client address and per
// account, in bounded in-memory tables. Past 5 failures of one account
// from one address, or 20 from one address over all accounts, the
// authenticator answers "429 Too Many Requests" with a Retry-After header
// (whole seconds) instead of checking the credentials, even right ones,
// for a delay of 1 s that doubles with every further failure up to 15
// minutes. Once an account has 50 failures over all addresses, every
// address that fails on it is delayed from its own first failure; an
// address without failures is never delayed. A success clears the
// failures of its pair. The client address is the host of
// http.Request.RemoteAddr (an IPv6 address by its /64); forwarding headers
// are not trusted. Basic and Digest passwords and the password hash in the
// route-token form are checked against the throttle before they are
// verified; valid session tokens and the administrator token (128-bit
// MACs) pass without a throttle check, and failed ones count against the
// client address.
//
// Store writes (a new token, a logout, a registration) run to their end
// even when the request is cancelled, within a time limit of 10 s; a read
// cut short by a cancelled request returns the context's error.
//
// Verified records are kept in memory, so a cookie session or a repeated
// Basic login costs no database query; every token change and logout is
// written to the store and then to memory, so it is seen at once. The memory
// is per process. Credentials that the copy in memory refuses are checked
// again against the store before they are refused, so a token or password
// set by another process sharing the store is accepted at once. A store that
// is a [Notifier] (the fleet's, package natsstore) reports every change made
// by any process, and [Authenticator.Watch] forgets the records it changes,
// so that what another process replaced (a token, a password) is refused
// too; with a [Changer] (SQLite) the removals and new passwords are.
package auth
