package config

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHomeExpanded checks that a path written with a leading ~ (as the
// Python server's files under ~/.xml-pipeline and ~/.agent_server are
// named) means the user's home directory, not a directory called "~"
// beside organism.yaml.
func TestHomeExpanded(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	dir := t.TempDir()
	src := `organism:
  name: home
  identity: ~/.agent_server/identity.ed25519
  data_dir: "~"
  tls: {cert: ~/tls/cert.pem, key: ./~/key.pem}
oob:
  unix_socket: ~user/oob.sock
listeners:
  - name: greeter
    payload_class: handlers.hello.Greeting
    handler: handlers.hello.handle_greeting
    description: d
`
	o, err := Parse(filepath.Join(dir, "organism.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got := []string{o.Organism.Identity, o.Organism.DataDir, o.Organism.TLS.Cert, o.Organism.TLS.Key, o.OOB.UnixSocket}
	want := []string{
		filepath.Join(home, ".agent_server/identity.ed25519"),
		home,
		filepath.Join(home, "tls/cert.pem"),
		filepath.Join(dir, "~/key.pem"),      // ./~ is a directory called ~
		filepath.Join(dir, "~user/oob.sock"), // ~user is not expanded
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
}
