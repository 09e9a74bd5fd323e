package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/term"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/console"
)

// connectConsole is `xmlpipe console --connect URL [--fingerprint F]`: it
// asks for the username, password and TOTP code (on a terminal: prompts,
// the password unechoed; on a pipe: the first three lines of stdin, the
// rest being console input) unless the bus needs no login (--insecure-dev),
// logs in to the bus and runs the console over it until /quit, end of
// input or a lost connection.
func connectConsole(ctx context.Context, url, fingerprint string, cfg console.Config, std streams) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	in := std.in
	file, isFile := std.in.(*os.File)
	tty := isFile && term.IsTerminal(int(file.Fd()))
	var ask console.AskCredentials
	if tty {
		ask = func() (auth.Credentials, error) { return promptCredentials(file, std.out) }
	} else {
		buffered := bufio.NewReader(std.in)
		in = buffered
		ask = func() (auth.Credentials, error) { return readCredentials(buffered) }
	}
	remote, err := console.DialAsk(ctx, url, fingerprint, ask)
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe console: %v\n", err)
		if hint := certificateHint(err, fingerprint); hint != "" {
			fmt.Fprintln(std.err, hint)
		}
		return exitFailure
	}
	defer remote.Close()
	con, err := console.New(remote, cfg)
	if err != nil {
		fmt.Fprintln(std.err, err)
		return exitFailure
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-remote.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	if tty {
		if out, ok := std.out.(*os.File); ok {
			err = con.RunStdio(ctx, file, out)
		} else {
			err = con.Run(ctx, in, std.out)
		}
	} else {
		err = con.Run(ctx, in, std.out)
	}
	if lost := remote.Err(); lost != nil {
		fmt.Fprintf(std.err, "xmlpipe console: %v\n", lost)
		return exitFailure
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(std.err, err)
		return exitFailure
	}
	return exitOK
}

// readCredentials reads the username, password and TOTP code as three lines.
func readCredentials(r *bufio.Reader) (auth.Credentials, error) {
	var fields [3]string
	for i, what := range []string{"username", "password", "TOTP code"} {
		line, err := r.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
			return auth.Credentials{}, fmt.Errorf("reading the %s from stdin: %w", what, err)
		}
		fields[i] = line
	}
	return auth.Credentials{Username: strings.TrimSpace(fields[0]), Password: fields[1],
		TOTP: strings.TrimSpace(fields[2])}, nil
}

// promptCredentials asks on the terminal; the password is not echoed. The
// username and code are read a byte at a time so nothing typed ahead is
// swallowed before the console starts.
func promptCredentials(tty *os.File, out io.Writer) (auth.Credentials, error) {
	var c auth.Credentials
	var err error
	fmt.Fprint(out, "Username: ")
	if c.Username, err = readLine(tty); err != nil {
		return c, err
	}
	fmt.Fprint(out, "Password: ")
	pw, err := term.ReadPassword(int(tty.Fd()))
	fmt.Fprintln(out)
	if err != nil {
		return c, fmt.Errorf("reading the password: %w", err)
	}
	c.Password = string(pw)
	fmt.Fprint(out, "TOTP code: ")
	if c.TOTP, err = readLine(tty); err != nil {
		return c, err
	}
	return c, nil
}

// readLine reads one line byte by byte (no read-ahead).
func readLine(r io.Reader) (string, error) {
	var b strings.Builder
	buf := make([]byte, 1)
	for {
		n, err := r.Read(buf)
		if n == 1 {
			if buf[0] == '\n' {
				return strings.TrimSpace(b.String()), nil
			}
			b.WriteByte(buf[0])
		}
		if err != nil {
			if errors.Is(err, io.EOF) && b.Len() > 0 {
				return strings.TrimSpace(b.String()), nil
			}
			return "", fmt.Errorf("reading from the terminal: %w", err)
		}
	}
}

// certificateHint says how to connect when the bus's certificate did not
// verify: a bus without organism.tls has a self-signed certificate, which
// the client trusts by the fingerprint `xmlpipe run` prints ("" for other
// errors).
func certificateHint(err error, fingerprint string) string {
	var verify *tls.CertificateVerificationError
	if fingerprint != "" || !errors.As(err, &verify) {
		return ""
	}
	return "xmlpipe console: this machine does not trust the bus's certificate (self-signed, unless organism.tls " +
		"names one): pass --fingerprint with the SHA256 fingerprint that xmlpipe run printed " +
		"(\"xmlpipe: certificate fingerprint SHA256 …\")"
}
