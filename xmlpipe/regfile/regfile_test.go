package regfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRefusesWhatIsNoRegularFile: a FIFO (with no writer), a directory or a
// device is refused at once with ErrNotRegular by Open, OpenIn and Read,
// never blocking the caller; a regular file is read whole.
func TestRefusesWhatIsNoRegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("content"), 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()

	readVia := map[string]func(path string) ([]byte, error){
		"Read": Read,
		"Open": func(path string) ([]byte, error) { return readOpened(Open(path)) },
		"OpenIn": func(path string) ([]byte, error) {
			return readOpened(OpenIn(root, filepath.Base(path)))
		},
	}
	for via, read := range readVia {
		for _, tc := range []struct {
			path    string
			want    string
			refused bool
		}{
			{path: fifo, refused: true},
			{path: sub, refused: true},
			{path: file, want: "content"},
		} {
			done := make(chan struct{})
			var got []byte
			var err error
			go func() {
				defer close(done)
				got, err = read(tc.path)
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				// Let the blocked open end: a writer comes and goes.
				if w, werr := os.OpenFile(fifo, os.O_WRONLY, 0); werr == nil {
					_ = w.Close()
				}
				<-done
				t.Fatalf("%s(%s) still blocked after 30s", via, tc.path)
			}
			if tc.refused {
				if !errors.Is(err, ErrNotRegular) {
					t.Errorf("%s(%s): err = %v, want ErrNotRegular", via, tc.path, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s(%s): %v", via, tc.path, err)
				continue
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("%s(%s) (-want +got):\n%s", via, tc.path, diff)
			}
		}
	}
	// A device (no root needed to open /dev/null) is refused too.
	if _, err := Read(os.DevNull); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Read(%s): err = %v, want ErrNotRegular", os.DevNull, err)
	}
}

// readOpened reads and closes a file Open or OpenIn returned.
func readOpened(f *os.File, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 64)
	n, err := f.Read(b)
	return b[:n], err
}
