//go:build wasip1

// Command ops performs the one operation its payload names — on the
// filesystem the sandbox gives it, or on itself — and reports how it went:
// <Ops><Do/><Path/><Arg/></Ops> in, <Done><OK/><Result/><Error/></Done> out.
// A failed operation is an answer too (OK false, Error the guest's error
// text), so tests can tell what the guest was refused.
//
// Operations: ping; read, write (Arg the content), append (Arg the
// content), stat, lstat, readlink, list (the names in a directory, comma
// separated), mkdir, remove, symlink (a link at Path whose target is Arg),
// link (a hard link at Arg to Path), rename (Path to Arg), truncate (to
// Arg bytes), writeat (Arg "offset:content", into the file made if
// missing, at the offset: past its end leaves a hole), many (Arg files
// named Path0, Path1, … each holding "x"; Result is how many were made),
// orphan (makes Path, writes Arg, removes Path while open and writes Arg
// again), mustwrite (as write, but a failure panics: the call fails);
// env (the value
// of the environment variable Path); hog (allocates Arg megabytes in one
// allocation and uses every page, so that a request over the memory cap
// fails at once, however slowly the guest runs); hold (opens Path Arg
// times and keeps every file open; Result is how many opened); random (16
// bytes from crypto/rand, in hex); inroot (Arg, as "read:NAME", performed
// through os.OpenRoot(Path): see inRoot); exit (answers, then exits with
// status Arg, as os.Exit: a reactor's instance ends); spin (loops until
// interrupted).
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

type ops struct {
	Do   string
	Path string
	Arg  string
}

type done struct {
	XMLName xml.Name `xml:"Done"`
	OK      bool
	Result  string
	Error   string
}

var (
	spins int
	hog   []byte
	held  []*os.File
)

func do(o ops) (string, error) {
	switch o.Do {
	case "ping":
		return "pong", nil
	case "read":
		b, err := os.ReadFile(o.Path)
		return string(b), err
	case "write":
		return "", os.WriteFile(o.Path, []byte(o.Arg), 0o644)
	case "append":
		f, err := os.OpenFile(o.Path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return "", err
		}
		_, err = f.WriteString(o.Arg)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return "", err
	case "stat", "lstat":
		stat := os.Stat
		if o.Do == "lstat" {
			stat = os.Lstat
		}
		fi, err := stat(o.Path)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s %d", fi.Mode().Type(), fi.Size()), nil
	case "readlink":
		return os.Readlink(o.Path)
	case "list":
		es, err := os.ReadDir(o.Path)
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		return strings.Join(names, ","), err
	case "mkdir":
		return "", os.Mkdir(o.Path, 0o755)
	case "remove":
		return "", os.Remove(o.Path)
	case "symlink":
		return "", os.Symlink(o.Arg, o.Path)
	case "link":
		return "", os.Link(o.Path, o.Arg)
	case "rename":
		return "", os.Rename(o.Path, o.Arg)
	case "mustwrite":
		if err := os.WriteFile(o.Path, []byte(o.Arg), 0o644); err != nil {
			panic(err)
		}
		return "", nil
	case "truncate":
		n, err := strconv.ParseInt(o.Arg, 10, 64)
		if err != nil {
			return "", err
		}
		return "", os.Truncate(o.Path, n)
	case "writeat":
		offset, content, _ := strings.Cut(o.Arg, ":")
		off, err := strconv.ParseInt(offset, 10, 64)
		if err != nil {
			return "", err
		}
		f, err := os.OpenFile(o.Path, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return "", err
		}
		_, err = f.WriteAt([]byte(content), off)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return "", err
	case "many":
		n, err := strconv.Atoi(o.Arg)
		if err != nil {
			return "", err
		}
		made := 0
		for ; made < n; made++ {
			if err := os.WriteFile(o.Path+strconv.Itoa(made), []byte("x"), 0o644); err != nil {
				return strconv.Itoa(made), err
			}
		}
		return strconv.Itoa(made), nil
	case "orphan":
		f, err := os.Create(o.Path)
		if err != nil {
			return "", err
		}
		defer f.Close()
		if _, err := f.WriteString(o.Arg); err != nil {
			return "", err
		}
		if err := os.Remove(o.Path); err != nil {
			return "", err
		}
		_, err = f.WriteString(o.Arg)
		return "", err
	case "env":
		return os.Getenv(o.Path), nil
	case "hog":
		mb, err := strconv.Atoi(o.Arg)
		if err != nil {
			return "", err
		}
		hog = make([]byte, mb<<20)
		for i := 0; i < len(hog); i += 4096 {
			hog[i] = byte(i)
		}
		hog = nil
		return o.Arg, nil
	case "hold":
		n, err := strconv.Atoi(o.Arg)
		if err != nil {
			return "", err
		}
		opened := 0
		for ; opened < n; opened++ {
			f, err := os.Open(o.Path)
			if err != nil {
				return strconv.Itoa(opened), err
			}
			held = append(held, f)
		}
		return strconv.Itoa(opened), nil
	case "random":
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return "", err
		}
		return hex.EncodeToString(b), nil
	case "inroot":
		return inRoot(o.Path, o.Arg)
	case "exit":
		code, err := strconv.Atoi(o.Arg)
		if err != nil {
			return "", err
		}
		b, _ := xml.Marshal(done{OK: true, Result: "exiting"})
		os.Stdout.Write(b)
		os.Exit(code)
	case "spin":
		for {
			spins++
		}
	}
	return "", fmt.Errorf("unknown operation %q", o.Do)
}

// inRoot performs op (Arg of an inroot operation) through os.OpenRoot(dir),
// so every path is resolved relative to the directory's own descriptor
// (openat and the other *at calls): "read:NAME", "write:NAME:CONTENT",
// "stat:NAME", "mkdir:NAME", "remove:NAME" or "list:NAME" (the names in the
// directory NAME of the root, "." the root itself, sorted, comma separated).
func inRoot(dir, op string) (string, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer r.Close()
	verb, rest, _ := strings.Cut(op, ":")
	switch verb {
	case "read":
		b, err := r.ReadFile(rest)
		return string(b), err
	case "write":
		name, content, _ := strings.Cut(rest, ":")
		return "", r.WriteFile(name, []byte(content), 0o644)
	case "stat":
		fi, err := r.Stat(rest)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s %d", fi.Mode().Type(), fi.Size()), nil
	case "mkdir":
		return "", r.Mkdir(rest, 0o755)
	case "remove":
		return "", r.Remove(rest)
	case "list":
		f, err := r.Open(rest)
		if err != nil {
			return "", err
		}
		defer f.Close()
		es, err := f.ReadDir(-1)
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		slices.Sort(names)
		return strings.Join(names, ","), err
	}
	return "", fmt.Errorf("unknown inroot operation %q", verb)
}

func run() int32 {
	in, _ := io.ReadAll(os.Stdin)
	var o ops
	if err := xml.Unmarshal(in, &o); err != nil {
		fmt.Fprintln(os.Stderr, "bad payload:", err)
		return 1
	}
	res, err := do(o)
	out := done{OK: err == nil, Result: res}
	if err != nil {
		out.Error = err.Error()
	}
	b, _ := xml.Marshal(out)
	os.Stdout.Write(b)
	return 0
}

//go:wasmexport handle
func handle() int32 { return run() }

func main() { os.Exit(int(run())) }
