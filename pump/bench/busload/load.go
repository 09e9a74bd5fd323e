package busload

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/xml-pipeline/xmlpipe/pump/bus/wire"
)

// Defaults of LoadConfig.
const (
	DefaultClients  = 200
	DefaultDuration = 10 * time.Second
	DefaultGrace    = 5 * time.Second
	DefaultRequest  = "@greeter Dan"
	DefaultReply    = "HELLO, DAN!"
)

// redialEvery is the pause between attempts to reopen a dropped socket
// (LoadConfig.Reconnect).
const redialEvery = 50 * time.Millisecond

// ErrInvalidConfig reports an unusable LoadConfig.
var ErrInvalidConfig = errors.New("busload: invalid configuration")

// LoadConfig configures Drive.
type LoadConfig struct {
	// Target is where every client connects.
	Target Target
	// Clients is the number of concurrent sockets (default 200).
	Clients int
	// Duration is how long clients send (default 10 s).
	Duration time.Duration
	// Rate, when positive, is the total sends per second across all clients
	// (open loop: each client sends at Rate/Clients whatever the replies);
	// zero is a closed loop (each client sends its next request when the
	// previous conversation's output arrived).
	Rate float64
	// Grace is how long after Duration the clients wait for outstanding
	// replies before counting them lost (default 5 s).
	Grace time.Duration
	// Request is the raw send text (default "@greeter Dan") and Reply the
	// output text that answers it (default "HELLO, DAN!").
	Request, Reply string
	// AllEvents makes every socket get every event of its conversations (no
	// subscribe request), as a client that reads them all would; by default
	// each subscribes to the only events the load generator reads, output
	// frames (Target.Events, when set, wins).
	AllEvents bool
	// ClientThreads makes every request begin its conversation on a thread
	// id the client chose (a fresh UUID, as the Python reference's clients
	// do) instead of letting the bus choose it: the bus then checks that the
	// id was never used (pump.ThreadHistory) before accepting it.
	ClientThreads bool
	// Reconnect reopens a socket that drops (a server restart) instead of
	// ending its client; requests outstanding on the dropped socket are
	// counted as Unanswered, not Lost.
	Reconnect bool
	// Connected, when set, is called once every client's socket is open
	// (and subscribed), just before the clients start sending: the start of
	// the steady state, where Run begins its per-reply counts so that the
	// connections' setup (TLS handshakes, upgrades, subscriptions) is not
	// charged to the replies.
	Connected func()
	// Acked, when set, is called (from the clients' goroutines) for every
	// "sent" frame, the server's acknowledgement, with its conversation id
	// and message id ("" when the server does not send one).
	Acked func(client int, conv, messageID string)
	// Logger receives client errors (default: discard).
	Logger *slog.Logger
}

// Validate reports negative values (Drive also needs Target.URL).
func (c LoadConfig) Validate() error {
	switch {
	case c.Clients < 0:
		return fmt.Errorf("%w: clients %d is negative", ErrInvalidConfig, c.Clients)
	case c.Duration < 0:
		return fmt.Errorf("%w: duration %s is negative", ErrInvalidConfig, c.Duration)
	case c.Rate < 0:
		return fmt.Errorf("%w: rate %g is negative", ErrInvalidConfig, c.Rate)
	case c.Grace < 0:
		return fmt.Errorf("%w: grace %s is negative", ErrInvalidConfig, c.Grace)
	}
	return nil
}

// WithDefaults returns c with every zero field set to its default.
func (c LoadConfig) WithDefaults() LoadConfig {
	if c.Clients == 0 {
		c.Clients = DefaultClients
	}
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.Request == "" {
		c.Request = DefaultRequest
	}
	if c.Reply == "" {
		c.Reply = DefaultReply
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Target.Events == nil && !c.AllEvents {
		c.Target.Events = []string{wire.TypeOutput}
	}
	return c
}

// Tally is what the clients saw.
type Tally struct {
	// Sent requests, Acked ones ("sent" frames), Replies (the output frame
	// of an acknowledged conversation) and InWindow, the replies that
	// arrived within Duration.
	Sent, Acked, Replies, InWindow int64
	// Refused requests (an error frame answered them).
	Refused int64
	// Lost requests: sent, never answered (reply or error) by the end of
	// Grace on a socket that stayed open.
	Lost int64
	// Unanswered requests: outstanding when their socket dropped
	// (Reconnect), so whether the server answered is unknown to the client.
	Unanswered int64
	// WrongReply counts output frames of an acknowledged conversation with
	// another text than Reply; Errors counts socket and protocol errors
	// (dial failures, drops, undecodable frames) and Reconnects the sockets
	// reopened.
	WrongReply, Errors, Reconnects int64
	// Latencies are the send→output times of every reply, ascending.
	Latencies []time.Duration
	// AckLatencies are the send→"sent" times of every acknowledged request
	// and RefusalLatencies the send→error times of every refused one,
	// ascending: how long the server took to admit or refuse.
	AckLatencies, RefusalLatencies []time.Duration
	// Elapsed is the sending window (Duration, or less when ctx ended).
	Elapsed time.Duration
	// FirstErrors are up to 5 error texts, for the report.
	FirstErrors []string
}

// Percentile returns the q-quantile (0..1) of the latencies.
func (t *Tally) Percentile(q float64) time.Duration { return Quantile(t.Latencies, q) }

// Quantile returns the q-quantile (0..1) of the ascending durations ds (0
// for none).
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}

// Drive runs cfg.Clients clients against cfg.Target for cfg.Duration (or
// until ctx ends), waits up to Grace for outstanding replies and returns the
// tally. It fails only when no client could connect at all.
func Drive(ctx context.Context, cfg LoadConfig) (Tally, error) {
	if err := cfg.Validate(); err != nil {
		return Tally{}, err
	}
	if cfg.Target.URL == "" {
		return Tally{}, fmt.Errorf("%w: no target URL", ErrInvalidConfig)
	}
	cfg = cfg.WithDefaults()
	conns := make([]*Conn, cfg.Clients)
	errs := make([]error, cfg.Clients)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conns[i], errs[i] = Dial(ctx, cfg.Target)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range conns {
			if c != nil {
				c.Abort()
			}
		}
		return Tally{}, err
	}

	if cfg.Connected != nil {
		cfg.Connected()
	}
	sh := &shared{cfg: cfg}
	start := time.Now()
	sh.window = start.Add(cfg.Duration)
	sendCtx, stopSending := context.WithDeadline(ctx, sh.window)
	defer stopSending()
	waitCtx, stopWaiting := context.WithDeadline(ctx, sh.window.Add(cfg.Grace))
	defer stopWaiting()
	clients := make([]*client, cfg.Clients)
	for i := range clients {
		clients[i] = &client{n: i, sh: sh, conn: conns[i]}
		wg.Add(1)
		go func() {
			defer wg.Done()
			clients[i].run(sendCtx, waitCtx)
		}()
	}
	wg.Wait()
	elapsed := min(time.Since(start), cfg.Duration)

	t := Tally{Elapsed: elapsed}
	for _, c := range clients {
		t.Sent += c.sent
		t.Acked += c.acked
		t.Replies += c.replies
		t.InWindow += c.inWindow
		t.Refused += c.refused
		t.Lost += c.lost
		t.Unanswered += c.unanswered
		t.WrongReply += c.wrong
		t.Errors += c.errors
		t.Reconnects += c.reconnects
		t.Latencies = append(t.Latencies, c.latencies...)
		t.AckLatencies = append(t.AckLatencies, c.ackLatencies...)
		t.RefusalLatencies = append(t.RefusalLatencies, c.refusalLatencies...)
	}
	slices.Sort(t.Latencies)
	slices.Sort(t.AckLatencies)
	slices.Sort(t.RefusalLatencies)
	sh.mu.Lock()
	t.FirstErrors = sh.firstErrors
	sh.mu.Unlock()
	return t, nil
}

// shared is what the clients of one Drive share.
type shared struct {
	cfg    LoadConfig
	window time.Time // end of the sending window
	ids    atomic.Int64

	mu          sync.Mutex
	firstErrors []string
}

// noteError keeps the first few error texts.
func (sh *shared) noteError(client int, err error) {
	sh.cfg.Logger.Debug("client error", "client", client, "error", err)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.firstErrors) < 5 {
		sh.firstErrors = append(sh.firstErrors, fmt.Sprintf("client %d: %v", client, err))
	}
}

// client is one socket's sender and reader, and its counts.
type client struct {
	n    int
	sh   *shared
	conn *Conn

	// owned by run
	sent, acked, replies, inWindow, refused, lost, unanswered, wrong, errors, reconnects int64
	latencies, ackLatencies, refusalLatencies                                            []time.Duration
}

// outstanding are the requests of one socket waiting for an answer: by
// request id until "sent", then by conversation until the output.
type outstanding struct {
	mu     sync.Mutex
	byID   map[int64]time.Time
	byConv map[string]time.Time
	// answered is signalled (capacity 1) whenever a request is answered,
	// refused, or the socket ends: the closed loop's cue to send again.
	answered chan struct{}
}

func newOutstanding() *outstanding {
	return &outstanding{byID: map[int64]time.Time{}, byConv: map[string]time.Time{}, answered: make(chan struct{}, 1)}
}

func (o *outstanding) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.byID) + len(o.byConv)
}

func (o *outstanding) signal() {
	select {
	case o.answered <- struct{}{}:
	default:
	}
}

// run drives the client: sessions on its socket (reopened after a drop with
// Reconnect) until sendCtx ends, then waits for the outstanding answers
// until waitCtx ends.
func (c *client) run(sendCtx, waitCtx context.Context) {
	for {
		dropped := c.session(sendCtx, waitCtx)
		if !dropped || !c.sh.cfg.Reconnect || sendCtx.Err() != nil {
			return
		}
		for {
			conn, err := Dial(sendCtx, c.sh.cfg.Target)
			if err == nil {
				c.conn = conn
				c.reconnects++
				break
			}
			select {
			case <-sendCtx.Done():
				return
			case <-time.After(redialEvery):
			}
		}
	}
}

// session sends on c.conn until sendCtx ends, waits for what is outstanding
// until waitCtx, and closes the socket. It reports whether the socket
// dropped under it.
func (c *client) session(sendCtx, waitCtx context.Context) (dropped bool) {
	o := newOutstanding()
	readDone := make(chan struct{})
	var readErr error
	go func() {
		defer close(readDone)
		defer o.signal()
		readErr = c.read(o)
	}()
	c.send(sendCtx, o, readDone)
	// Sending is over (or the socket dropped): wait for the answers.
	for o.len() > 0 {
		select {
		case <-readDone:
		case <-waitCtx.Done():
		case <-o.answered:
			continue
		}
		break
	}
	select {
	case <-readDone:
		dropped = true
		if c.sh.cfg.Reconnect {
			c.unanswered += int64(o.len())
		} else {
			c.lost += int64(o.len())
		}
		c.errors++
		c.sh.noteError(c.n, fmt.Errorf("socket dropped: %w", readErr))
		_ = c.conn.Abort()
	default:
		c.lost += int64(o.len())
		_ = c.conn.Close() // ends read
		<-readDone
	}
	return dropped
}

// send sends requests until ctx ends or the socket drops: one at a time in
// a closed loop, else paced at Rate/Clients.
func (c *client) send(ctx context.Context, o *outstanding, readDone <-chan struct{}) {
	cfg := c.sh.cfg
	var pace time.Duration
	if cfg.Rate > 0 {
		pace = time.Duration(float64(time.Second) * float64(cfg.Clients) / cfg.Rate)
	}
	next := time.Now()
	if pace > 0 { // spread the clients' first sends over one period
		next = next.Add(time.Duration(int64(pace) * int64(c.n) / int64(cfg.Clients)))
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		if pace > 0 {
			timer.Reset(time.Until(next))
			select {
			case <-ctx.Done():
				return
			case <-readDone:
				return
			case <-timer.C:
			}
			next = next.Add(pace)
		}
		if ctx.Err() != nil {
			return
		}
		id := c.sh.ids.Add(1)
		o.mu.Lock()
		o.byID[id] = time.Now()
		o.mu.Unlock()
		var thread string
		if cfg.ClientThreads {
			thread = uuid.NewString()
		}
		if err := c.conn.SendOn(id, cfg.Request, thread); err != nil {
			o.mu.Lock()
			delete(o.byID, id)
			o.mu.Unlock()
			return // the reader sees the drop
		}
		c.sent++
		if pace == 0 {
			for o.len() > 0 { // the conversation's output, not just its "sent"
				select {
				case <-ctx.Done():
					return
				case <-readDone:
					return
				case <-o.answered:
				}
			}
		}
	}
}

// read handles frames until the socket ends: acknowledgements, refusals and
// outputs, each looked at in the socket's read buffer (readRaw). The
// counters it writes are its own (send writes only sent); they are read
// once the reader has returned.
func (c *client) read(o *outstanding) error {
	cfg := c.sh.cfg
	for {
		f, err := c.conn.readRaw()
		if err != nil {
			return err
		}
		now := time.Now()
		switch f.Type {
		case wire.TypeSent:
			o.mu.Lock()
			t0, ok := o.byID[f.ID]
			if ok {
				delete(o.byID, f.ID)
				o.byConv[string(f.ThreadID)] = t0
			}
			o.mu.Unlock()
			if ok {
				c.acked++
				c.ackLatencies = append(c.ackLatencies, now.Sub(t0))
				if cfg.Acked != nil {
					cfg.Acked(c.n, string(f.ThreadID), string(f.MessageID))
				}
			}
		case wire.TypeError:
			o.mu.Lock()
			t0, ok := o.byID[f.ID]
			delete(o.byID, f.ID)
			o.mu.Unlock()
			if ok {
				c.refused++
				c.refusalLatencies = append(c.refusalLatencies, now.Sub(t0))
				c.sh.noteError(c.n, fmt.Errorf("refused: %s (%s)", f.Error, f.Code))
				o.signal()
			}
		case wire.TypeOutput:
			o.mu.Lock()
			t0, ok := o.byConv[string(f.ThreadID)]
			if ok {
				delete(o.byConv, string(f.ThreadID))
			}
			o.mu.Unlock()
			if !ok {
				continue
			}
			if string(f.Text) != cfg.Reply {
				c.wrong++
				c.sh.noteError(c.n, fmt.Errorf("reply %q, want %q", f.Text, cfg.Reply))
			}
			c.replies++
			if now.Before(c.sh.window) {
				c.inWindow++
			}
			c.latencies = append(c.latencies, now.Sub(t0))
			o.signal()
		}
	}
}
