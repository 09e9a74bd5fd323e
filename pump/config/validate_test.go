package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestValidateBuiltInCode checks Validate on configurations built in code:
// no file, so messages carry the path only.
func TestValidateBuiltInCode(t *testing.T) {
	valid := func() *Organism {
		o := Default()
		o.Listeners = []Listener{
			{Name: "greeter", PayloadClass: "p.Greeting", Handler: "p.greet", Description: "d", Agent: true, Peers: []string{"Shouter"}, Type: GoListener},
			{Name: "shouter", PayloadClass: "p.GreetingResponse", Handler: "p.shout", Description: "d"},
		}
		return o
	}
	tests := []struct {
		name   string
		mutate func(*Organism)
		want   []string
	}{
		{"valid", func(*Organism) {}, nil},
		{"admission and timeouts", func(o *Organism) {
			o.MaxInFlight, o.AdmitWait, o.MaxQueueWait = 0, -1, -1
			o.Listeners[1].Timeout = Duration(-time.Second)
		}, []string{
			"max_in_flight: must be positive, got 0",
			"admit_wait: must not be negative, got -1ns",
			"max_queue_wait: must not be negative, got -1ns",
			"listeners[1].timeout: must not be negative, got -1s (0 or unset: the default)",
		}},
		{"unset journal retention", func(o *Organism) { o.Journal.Retention = Retention{} }, []string{
			"journal.retention: must be set",
		}},
		{"retention built wrong", func(o *Organism) {
			o.Journal.Retention = Retention{Policy: "keep"}
			o.Listeners[0].Retention = Retention{Policy: RetainDays}
			o.Listeners[1].Retention = Retention{Policy: RetainForever, Days: 3}
		}, []string{
			`listeners[0].retention: retain_days: want a positive number of days, got 0`,
			`listeners[1].retention: retain_forever takes no days or window`,
			`journal.retention: unknown policy "keep" (want retain_forever, prune_on_delivery, retain_days or window)`,
		}},
		{"non-canonical enum", func(o *Organism) { o.LLM.Strategy = "Failover" }, []string{
			`llm.strategy: unknown strategy "Failover" (want failover, round-robin or least-loaded)`,
		}},
		{"peer and agent broadcast", func(o *Organism) {
			o.Listeners[0].Peers = append(o.Listeners[0].Peers, "ghost")
			o.Listeners[0].Broadcast = true
		}, []string{
			`listeners[0].broadcast: an agent cannot be a broadcast listener (agents need a unique root tag)`,
			`listeners[0].peers[1]: "ghost" names no listener or gateway`,
		}},
		{"gateway as peer", func(o *Organism) {
			o.Gateways = []Gateway{{Name: "remote", RemoteURL: "wss://r.example.org", TrustedIdentity: "/k.pub"}}
			o.Listeners[0].Peers = []string{"REMOTE"}
		}, nil},
		{"a callable's call as peer", func(o *Organism) {
			o.Listeners[1].Callable = Callable{Description: "Shouts on request", Parameters: []Parameter{{Name: "Text"}}}
			o.Listeners[0].Peers = []string{"Shouter.Call"}
		}, nil},
		{"the call of a listener that is not callable", func(o *Organism) {
			o.Listeners[0].Peers = []string{"shouter.call"}
		}, []string{
			`listeners[0].peers[0]: "shouter.call" names no listener or gateway`,
		}},
		{"gateway tags and limits", func(o *Organism) {
			o.Gateways = []Gateway{{Name: "remote", TrustedIdentity: "/k.pub", Export: []string{"Greeting", "pm:shutdown", "Greeting"},
				Import: []string{"tools.Calc", "1st"}, QueueLimit: -1, CallTimeout: -1}}
		}, []string{
			`gateways[0].queue_limit: must not be negative, got -1`,
			`gateways[0].call_timeout: must not be negative, got -1ns`,
			`gateways[0].export[1]: "pm:shutdown" is not a payload root tag (an XML name without a prefix)`,
			`gateways[0].export[2]: "Greeting" is listed twice`,
			`gateways[0].import[1]: "1st" is not a payload root tag (an XML name without a prefix)`,
		}},
		{"one tag imported by two gateways", func(o *Organism) {
			o.Gateways = []Gateway{{Name: "b", TrustedIdentity: "/b.pub", Import: []string{"Calc"}},
				{Name: "c", TrustedIdentity: "/c.pub", Import: []string{"Echo", "Calc"}}}
		}, []string{
			`gateways[1].import[1]: "Calc" is imported already (gateways[0].import[0]): one gateway per imported tag`,
		}},
		{"gateway without remote_url accepts the peer's link", func(o *Organism) {
			o.Gateways = []Gateway{{Name: "inbound", TrustedIdentity: "/k.pub", Export: []string{"Greeting"}}}
		}, nil},
		{"llm base_url and supported_models", func(o *Organism) {
			o.LLM.Backends = []Backend{
				{Provider: OpenAI, Name: "local", BaseURL: "http://localhost:8000/v1", SupportedModels: []string{"Qwen/Qwen2.5-7B"},
					RateLimitTPM: 1, MaxConcurrent: 1, Timeout: Duration(1)},
				{Provider: OpenAI, Name: "azure", BaseURL: "https://x.example/v1?api-version=2024", SupportedModels: []string{"a", " ", "A"},
					RateLimitTPM: 1, MaxConcurrent: 1, Timeout: Duration(1)},
				{Provider: Ollama, Name: "frag", BaseURL: "http://gpu:11434/#x", RateLimitTPM: 1, MaxConcurrent: 1, Timeout: Duration(1)},
			}
		}, []string{
			`llm.backends[1].base_url: want a URL without query or fragment (the provider's path is appended to it), got "https://x.example/v1?api-version=2024"`,
			`llm.backends[1].supported_models[1]: empty model name`,
			`llm.backends[1].supported_models[2]: "A" is listed twice (also supported_models[0]; names are compared without case)`,
			`llm.backends[2].base_url: want a URL without query or fragment (the provider's path is appended to it), got "http://gpu:11434/#x"`,
		}},
		{"bind every interface", func(o *Organism) { o.Organism.Bind = "0.0.0.0" }, nil},
		{"bind ipv6 loopback", func(o *Organism) { o.Organism.Bind = "[::1]" }, nil},
		{"bind a host name", func(o *Organism) { o.Organism.Bind = "example.org" }, []string{
			`organism.bind: want an IP address (127.0.0.1, ::1, 0.0.0.0) or localhost, got "example.org"`,
		}},
		{"oob disabled may share a port", func(o *Organism) { o.OOB.Enabled = false; o.OOB.Port = o.Organism.Port }, nil},
		{"oob ipv6 loopback", func(o *Organism) { o.OOB.Bind = "::1" }, nil},
		{"oob hostname", func(o *Organism) { o.OOB.Bind = "example.org" }, []string{
			`oob.bind: "example.org" is not a loopback address (the OOB channel is local only: bind it to 127.0.0.1 or ::1, or set oob.allow_remote_oob: true with oob.tls)`,
		}},
		{"oob remote without tls", func(o *Organism) { o.OOB.Bind = "0.0.0.0"; o.OOB.AllowRemote = true }, []string{
			`oob.tls: a remote OOB channel (oob.allow_remote_oob) requires oob.tls.cert and oob.tls.key`,
		}},
		{"oob remote with tls", func(o *Organism) {
			o.OOB.Bind, o.OOB.AllowRemote, o.OOB.TLS = "0.0.0.0", true, TLS{Cert: "/c.pem", Key: "/k.pem"}
		}, nil},
		{"oob unix socket only", func(o *Organism) { o.OOB.Port = 0; o.OOB.UnixSocket = "/run/x/oob.sock" }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.mutate(o)
			err := o.Validate()
			var got []string
			if err != nil {
				if !errors.Is(err, ErrConfig) {
					t.Errorf("error does not wrap ErrConfig: %v", err)
				}
				got = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateJoinsEveryProblem checks that each problem is its own
// *Error inside the joined error.
func TestValidateJoinsEveryProblem(t *testing.T) {
	_, err := Parse("organism.yaml", []byte("max_concurrent_handlers: 0\nmax_concurrent_per_agent: 0\n"))
	if err == nil {
		t.Fatal("Parse succeeded")
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("error %T does not join its problems", err)
	}
	var paths []string
	for _, e := range joined.Unwrap() {
		ce, ok := errors.AsType[*Error](e)
		if !ok {
			t.Fatalf("problem %T is not a *Error", e)
		}
		paths = append(paths, ce.Path+"@"+ce.Pos.String())
	}
	want := []string{"max_concurrent_handlers@organism.yaml:1", "max_concurrent_per_agent@organism.yaml:2"}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// A lua listener (the Python reference's proposal) is refused saying what
// to write instead, and alone: its missing payload_class and handler,
// which no lua listener would have, are not reported besides.
func TestLuaListenerSaysWhatToDo(t *testing.T) {
	src := `organism: {name: x}
listeners:
  - name: luaer
    type: lua
    script: calc.lua
    description: d
`
	_, err := Parse("o.yaml", []byte(src))
	if err == nil {
		t.Fatal("a lua listener was accepted")
	}
	want := "o.yaml:4: listeners[0].type: lua listeners are not supported (the Python reference only proposed them): " +
		"write the listener in Go, or build it as WebAssembly (type: wasm, module: FILE.wasm; README: Write a tool in WebAssembly)"
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}
