package app

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"

	"github.com/reso-project/reso/middleware/auth"
)

const userUsage = `usage: reso user add EMAIL [-db FILE]      register a user (password from standard input)
       reso user passwd EMAIL [-db FILE]   change a user's password (from standard input)
       reso user remove EMAIL [-db FILE]   delete a user; its sessions end
       reso user list [-db FILE]           list the users (never hashes or tokens)
The logins of a fleet: -nats URL[,URL...] [-fleet NAME] instead of -db.`

// runUser manages the login records of -db: reso user add|passwd|remove|list.
// Passwords are read from standard input (one line; without echo on a
// terminal), never from the command line, where other users could see them.
func runUser(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("%s", userUsage)
	}
	cmd, rest := args[0], args[1:]
	fs := newFlagSet("reso user " + cmd)
	db := fs.String("db", "", "SQLite file of the login records (default <state>/reso.db)")
	var fo fleetOptions
	fleetFlags(fs, &fo, false)
	// The e-mail may come before or after the flags.
	var email string
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		email, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, userUsage)
		}
		return parseError(err)
	}
	if email == "" && fs.NArg() > 0 {
		email = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return usagef("reso user %s: unexpected argument %q", cmd, fs.Arg(0))
	}
	switch cmd {
	case "add", "passwd", "remove":
		if email == "" || fs.NArg() > 1 {
			return usagef("usage: reso user %s EMAIL [-db FILE]", cmd)
		}
	case "list":
		if email != "" {
			return usagef("usage: reso user list [-db FILE]")
		}
	default:
		return usagef("unknown user command %q\n%s", cmd, userUsage)
	}
	if *db == ":memory:" {
		return usagef("reso user %s: -db :memory: keeps nothing; give a file", cmd)
	}
	if err := fo.validate(); err != nil {
		return err
	}
	a, where, closeStore, err := userStore(ctx, *db, &fo, stderr)
	if err != nil {
		return err
	}
	defer closeStore()
	db = &where

	switch cmd {
	case "list":
		return listUsers(ctx, a, stdout)
	case "remove":
		if err := a.Remove(ctx, email); errors.Is(err, auth.ErrNoRecord) {
			return fmt.Errorf("user remove: no user %q in %s", email, *db)
		} else if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed %s\n", email)
		return nil
	}
	_, err = a.Lookup(ctx, email)
	switch {
	case cmd == "add" && err == nil:
		return fmt.Errorf("user add: %q exists in %s (use reso user passwd)", email, *db)
	case cmd == "passwd" && errors.Is(err, auth.ErrNoRecord):
		return fmt.Errorf("user passwd: no user %q in %s (use reso user add)", email, *db)
	case err != nil && !errors.Is(err, auth.ErrNoRecord):
		return err
	}
	pw, err := readPassword(stdin, stderr)
	if err != nil {
		return fmt.Errorf("user %s: %w", cmd, err)
	}
	id, err := a.Register(ctx, email, pw)
	if err != nil {
		return err
	}
	if cmd == "add" {
		fmt.Fprintf(stdout, "added %s (id %d)\n", email, id)
	} else {
		fmt.Fprintf(stdout, "changed the password of %s; its sessions ended\n", email)
	}
	return nil
}

// listUsers prints id, e-mail, realm and whether a session is open.
func listUsers(ctx context.Context, a *auth.Authenticator, stdout io.Writer) error {
	recs, err := a.Users(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEMAIL\tREALM\tSESSION")
	for _, r := range recs {
		session := "no"
		if r.Token != "" {
			session = "yes"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", r.ID, r.Email, r.Realm, session)
	}
	return tw.Flush()
}

// readPassword reads one line from stdin: without echo and twice on a
// terminal, as is from a pipe (a trailing CR LF or LF is dropped).
func readPassword(stdin io.Reader, stderr io.Writer) (string, error) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(stderr, "password: ")
		a, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", err
		}
		fmt.Fprint(stderr, "again: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", err
		}
		if string(a) != string(b) {
			return "", errors.New("the passwords differ")
		}
		return string(a), nil
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		return "", errors.New("no password on standard input (echo PASSWORD | reso user ...)")
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// userStore opens the login records the user subcommands manage: the
// fleet's with -nats, else the SQLite file db. It returns the
// authenticator over them and how to name them in messages.
func userStore(ctx context.Context, db string, fo *fleetOptions, stderr io.Writer) (*auth.Authenticator, string, func(), error) {
	if fo.on() {
		nc, err := fo.connect(slog.New(slog.NewTextHandler(stderr, nil)))
		if err != nil {
			return nil, "", nil, err
		}
		st, secret, err := fo.openLogins(ctx, nc)
		if err != nil {
			nc.Close()
			return nil, "", nil, err
		}
		a, closeStore, err := newAuth(st, secret, nil)
		if err != nil {
			nc.Close()
			return nil, "", nil, err
		}
		return a, "fleet " + fo.name, func() { closeStore(); nc.Close() }, nil
	}
	secret := ""
	if err := statePaths(&db, &secret); err != nil {
		return nil, "", nil, err
	}
	a, closeStore, err := openAuth(ctx, db, secret, nil)
	if err != nil {
		return nil, "", nil, err
	}
	return a, db, closeStore, nil
}
