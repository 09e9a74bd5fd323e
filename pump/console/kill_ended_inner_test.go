package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Fork is what forkListeners' fork takes: a conversation's first line, or
// quick's answer ("done").
type Fork struct {
	Text string
}

// ForkQuick is what quick takes: it answers at once, ending its thread.
type ForkQuick struct {
	Text string
}

// ForkHold is what hold takes: it runs until its call is cancelled.
type ForkHold struct {
	Text string
}

// forkBuild is the console tests' organism with three Go listeners: fork
// sends each conversation's first line to quick, which answers at once
// (its thread ends) and reports that thread on hops, and to hold, which
// runs until cancelled — a conversation still running after one of its
// inner threads ended. The ids of the threads that end go to ended.
func forkBuild(hops, ended chan<- string) func(organism.Options) (*organism.Organism, error) {
	fork := organism.Func("fork", "Forks work", func(_ context.Context, p *Fork, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		if p.Text == "done" {
			return nil, nil
		}
		return xmlpipe.SendAll(&xmlpipe.SendResponse{To: "quick", Payload: &ForkQuick{Text: p.Text}},
			&xmlpipe.SendResponse{To: "hold", Payload: &ForkHold{Text: p.Text}}), nil
	})
	quick := organism.Func("quick", "Answers at once", func(_ context.Context, _ *ForkQuick, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		hops <- md.ThreadID
		return xmlpipe.Respond(&Fork{Text: "done"}), nil
	})
	hold := organism.Func("hold", "Runs until cancelled", func(ctx context.Context, _ *ForkHold, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return func(o organism.Options) (*organism.Organism, error) {
		o.Listeners = append(o.Listeners, fork, quick, hold)
		org, err := organism.Load("testdata/organism.yaml", o)
		if err != nil {
			return nil, err
		}
		org.Pump.Threads().OnEnd(func(ids []string) {
			for _, id := range ids {
				select {
				case ended <- id:
				default:
				}
			}
		})
		return org, nil
	}
}

// endedHop waits for quick's thread on hops and for it to end.
func endedHop(t *testing.T, hops, ended <-chan string) string {
	t.Helper()
	var inner string
	select {
	case inner = <-hops:
	case <-time.After(remoteWait):
		t.Fatal("quick never ran")
	}
	for id := ""; id != inner; {
		select {
		case id = <-ended:
		case <-time.After(remoteWait):
			t.Fatal("quick's thread never ended")
		}
	}
	return inner
}

// TestConsoleKillNamingEndedInnerThread: /kill naming the full id of an
// inner thread that ended while its conversation still runs kills that
// conversation — in process, and over --connect by its owner — and says
// so, once, as for its root; another operator over --connect is told they
// may not stop it, and it keeps running.
func TestConsoleKillNamingEndedInnerThread(t *testing.T) {
	killed := regexp.MustCompile(`Killed: \[[0-9a-f]{8}\] conversation killed`)
	// toldOnce checks, once the session ended (it waits for the killed
	// conversation's completion), that the kill was told once.
	toldOnce := func(t *testing.T, out *transcript) {
		t.Helper()
		told := regexp.MustCompile(`\[[0-9a-f]{8}\] conversation killed`).FindAllString(out.String(), -1)
		if len(told) != 1 {
			t.Errorf("the kill was told %d times, want once:\n%s", len(told), out)
		}
	}

	t.Run("in process", func(t *testing.T) {
		hops, ended := make(chan string, 4), make(chan string, 64)
		l, err := organism.Assemble(organism.Options{Logger: slog.New(slog.DiscardHandler)}, forkBuild(hops, ended))
		if err != nil {
			t.Fatal(err)
		}
		o := l.Organism()
		if err := o.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = o.Shutdown(context.Background()) })
		in, out, done := interactive(t, l)
		fmt.Fprintln(in, "@fork go")
		inner := endedHop(t, hops, ended)
		fmt.Fprintln(in, "/kill "+inner)
		out.waitFor(t, killed)
		fmt.Fprintln(in, "/quit")
		if err := <-done; err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
		toldOnce(t, out)
		if n := o.Pump.Stats().InFlight; n != 0 {
			t.Errorf("%d messages still in flight after the kill:\n%s", n, out)
		}
	})

	t.Run("over --connect", func(t *testing.T) {
		hops, ended := make(chan string, 4), make(chan string, 64)
		b := startBusWith(t, forkBuild(hops, ended))
		olga := b.dial(t, "olga", b.user(t, "olga", auth.Operator))
		bob := b.dial(t, "bob", b.user(t, "bob", auth.Operator))
		in, out, done := interactive(t, olga)
		fmt.Fprintln(in, "@fork go")
		inner := endedHop(t, hops, ended)
		bin, bout, bdone := interactive(t, bob)
		fmt.Fprintln(bin, "/kill "+inner)
		bout.waitFor(t, regexp.MustCompile(`Cannot kill `+inner+`: no live conversation you may stop has that thread`))
		fmt.Fprintln(bin, "/quit")
		if err := <-bdone; err != nil {
			t.Fatalf("run: %v\n%s", err, bout)
		}
		fmt.Fprintln(in, "/kill "+inner)
		out.waitFor(t, killed)
		fmt.Fprintln(in, "/quit")
		if err := <-done; err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
		toldOnce(t, out)
	})
}
