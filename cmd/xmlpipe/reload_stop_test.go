package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestRunReloadRacesShutdown: reloads over the API keep coming while
// SIGTERM stops `xmlpipe run`: the process stops cleanly (exit 0, no
// panic), and every reload is answered 200, or — once the stop began — a
// clear refusal, never a 500.
func TestRunReloadRacesShutdown(t *testing.T) {
	dir := helloDir(t)
	s := startRun(t, dir, filepath.Join(dir, "data"), "--insecure-dev")
	c := &http.Client{Timeout: 60 * time.Second}
	var (
		mu     sync.Mutex
		counts = map[string]int{}
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Post(s.url+"/api/v1/organism/reload", "application/json", nil)
				key := "connection refused or closed"
				if err == nil {
					var b strings.Builder
					buf := make([]byte, 512)
					n, _ := resp.Body.Read(buf)
					b.Write(buf[:n])
					resp.Body.Close()
					key = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(b.String()))
				}
				mu.Lock()
				counts[key]++
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	// Let a few reloads through first.
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n := counts[`200 {"status":"reloaded"}`]
		mu.Unlock()
		if n >= 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code := s.wait(t)
	close(stop)
	wg.Wait()
	var keys []string
	for k, n := range counts {
		keys = append(keys, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(keys)
	t.Logf("reload answers: %s", strings.Join(keys, "; "))
	if code != 0 {
		t.Errorf("exit %d\n%s", code, s.stderr)
	}
	for k := range counts {
		if strings.HasPrefix(k, "5") && !strings.HasPrefix(k, "503") {
			t.Errorf("a reload racing the stop was answered %s", k)
		}
		if strings.HasPrefix(k, "422") {
			t.Errorf("a reload racing the stop was refused as if the file were wrong: %s", k)
		}
	}
	if log := s.stderr.String(); strings.Contains(log, "panic") {
		t.Errorf("the log shows a panic:\n%s", log)
	}
}
