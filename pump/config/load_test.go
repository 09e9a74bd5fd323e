package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// ignoreState skips the unexported bookkeeping (file, positions) in diffs.
var ignoreState = cmpopts.IgnoreUnexported(Organism{})

func absTestdata(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoadPythonOrganism loads the reference's shipped organism.yaml
// unchanged and checks every value, defaults included.
func TestLoadPythonOrganism(t *testing.T) {
	o, err := Load("testdata/valid/python-organism.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := Default()
	want.Organism.Name = "hello-world"
	want.Organism.DataDir = absTestdata(t, "valid/data")
	want.LLM.Backends = []Backend{{
		Provider:      XAI,
		Name:          "xai",
		APIKeyEnv:     "XAI_API_KEY",
		BaseURL:       "https://api.x.ai/v1",
		Priority:      1,
		RateLimitTPM:  100000,
		MaxConcurrent: 20,
		Timeout:       Duration(120 * time.Second),
	}}
	want.Listeners = []Listener{
		{
			Name:         "greeter",
			PayloadClass: "handlers.hello.Greeting",
			Handler:      "handlers.hello.handle_greeting",
			Description:  "Greeting agent - forwards to shouter",
			Agent:        true,
			Peers:        []string{"shouter"},
			Prompt:       "You are a friendly greeter agent.\nWhen someone sends you a greeting, respond enthusiastically.\nKeep your responses short (1-2 sentences).\n",
			Type:         GoListener,
		},
		{
			Name:         "shouter",
			PayloadClass: "handlers.hello.GreetingResponse",
			Handler:      "handlers.hello.handle_shout",
			Description:  "Shouts the greeting in ALL CAPS",
			Type:         GoListener,
		},
		{
			Name:         "response-handler",
			PayloadClass: "handlers.hello.ShoutedResponse",
			Handler:      "handlers.hello.handle_response_print",
			Description:  "Prints responses to console",
			Type:         GoListener,
		},
	}
	if diff := cmp.Diff(want, o, ignoreState); diff != "" {
		t.Errorf("python organism (-want +got):\n%s", diff)
	}
	if got, want := o.File(), "testdata/valid/python-organism.yaml"; got != want {
		t.Errorf("File() = %q, want %q", got, want)
	}
	if got, want := o.Dir(), absTestdata(t, "valid"); got != want {
		t.Errorf("Dir() = %q, want %q", got, want)
	}
}

// TestLoadFull loads a file that sets every key to a non-default value.
func TestLoadFull(t *testing.T) {
	o, err := Load("testdata/valid/full.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	dir := absTestdata(t, "valid")
	adder := Listener{
		Name:         "calculator.add",
		PayloadClass: "examples.calculator.AddPayload",
		Handler:      "examples.calculator.add_handler",
		Description:  "Adds two integers.",
		Broadcast:    true,
		Type:         WasmListener,
		Module:       filepath.Join(dir, "wasm/add.wasm"),
		XSD:          filepath.Join(dir, "schemas/add.xsd"),
		Config: map[string]any{
			"precision": 2,
			"modes":     []any{"fast", "exact"},
			"nested":    map[string]any{"on": true, "label": "x"},
		},
		Group:     "math",
		Retention: Retention{Policy: PruneOnDelivery},
	}
	adder2 := adder
	adder2.Name = "calculator.add2"
	adder2.Module = ""
	adder2.Script = filepath.Join(dir, "wasm/add2.wasm")
	adder2.Config = nil
	adder2.Retention = Retention{Policy: RetainForever}
	want := &Organism{
		Organism: OrganismSection{
			Name:            "research-swarm",
			Port:            9443,
			Bind:            "0.0.0.0",
			Identity:        filepath.Join(dir, "keys/organism.ed25519"),
			TLS:             TLS{Cert: filepath.Join(dir, "certs/fullchain.pem"), Key: "/etc/xmlpipe/privkey.pem"},
			DataDir:         "/var/lib/xmlpipe",
			MaxMessageBytes: 262144,
		},
		MaxConcurrentPipelines: 64,
		MaxConcurrentHandlers:  32,
		MaxConcurrentPerAgent:  4,
		MaxChainDepth:          128,
		MaxInFlight:            1024,
		AdmitWait:              Duration(5 * time.Second),
		MaxQueueWait:           Duration(30 * time.Second),
		ThreadScheduling:       DepthFirst,
		LLM: LLM{
			Strategy:       RoundRobin,
			Retries:        5,
			RetryBaseDelay: Duration(500 * time.Millisecond),
			RetryMaxDelay:  Duration(2 * time.Minute),
			Backends: []Backend{
				{
					Provider:      XAI,
					Name:          "grok-main",
					APIKeyEnv:     "XAI_API_KEY",
					BaseURL:       "https://api.x.ai/v1",
					Model:         "grok-4",
					Priority:      1,
					RateLimitTPM:  200000,
					MaxConcurrent: 10,
					Timeout:       Duration(90 * time.Second),
				},
				{
					Provider:        Ollama,
					Name:            "ollama",
					APIKeyLiteral:   "not-needed",
					BaseURL:         "http://gpu-box:11434",
					Priority:        3,
					RateLimitTPM:    100000,
					MaxConcurrent:   20,
					Timeout:         Duration(5 * time.Minute),
					SupportedModels: []string{"llama3", "mistral"},
				},
			},
		},
		Listeners: []Listener{
			{
				Name:         "researcher",
				PayloadClass: "agents.researcher.ResearchPayload",
				Handler:      "agents.researcher.research_handler",
				Description:  "Primary research agent.",
				Agent:        true,
				Peers:        []string{"calculator.add", "web_search"},
				Prompt:       "You are a careful researcher.\n",
				Model:        "grok-4",
				Tools:        []string{"fetch", "files"},
				ToolConfig: map[string]ToolConfig{
					"fetch": {AllowedDomains: []string{"example.org"}},
					"files": {AllowedPaths: []string{"/srv/notes"}, AllowedRecipients: []string{"ops@example.org"}},
				},
				Type:            GoListener,
				NotifyOnPrune:   true,
				MaxConcurrent:   2,
				Retention:       Retention{Policy: RetainDays, Days: 30},
				Approval:        []string{"files"},
				ApprovalTimeout: Duration(30 * time.Minute),
			},
			adder,
			adder2,
		},
		OOB: OOB{Bind: "::1", Port: 9444, UnixSocket: filepath.Join(dir, "run/oob.sock")},
		Meta: Meta{
			AllowSchemaRequests:  AccessAdmin,
			AllowExampleRequests: AccessNone,
			AllowPromptRequests:  AccessAuthenticated,
			AllowRemote:          true,
		},
		Gateways: []Gateway{{
			Name:            "web_search",
			RemoteURL:       "wss://search.example.org/bus",
			TrustedIdentity: filepath.Join(dir, "pubkeys/search.ed25519.pub"),
			Description:     "Federated web search.",
		}},
		Platform: Platform{
			ContextBuffer: ContextBuffer{MaxSlotsPerThread: 500, MaxThreads: 100, TTLHours: 6,
				NoteTTL: Duration(168 * time.Hour), MaxNotes: 2000},
			PromptRegistry: PromptRegistry{AllowRuntimeUpdate: true},
			LLM:            PlatformLLM{RateLimitPerAgent: 5000, CacheTTLSeconds: 300, MaxTokensPerRequest: 4096},
			ThreadTTL:      Duration(30 * time.Minute),
		},
		Journal:      Journal{Retention: Retention{Policy: RetainDays, Days: 14}, SweepInterval: Duration(10 * time.Minute)},
		Budgets:      Budgets{ThreadTokens: 100000, AgentTokens: 1000000, OnExceed: ExceedWarn, RepeatLimit: 3},
		Constitution: []string{filepath.Join(dir, "CONSTITUTION.md"), filepath.Join(dir, "agents/researcher.md")},
		Governance:   Governance{AlertAfter: 5, AlertWindow: Duration(time.Minute)},
		Memory:       Memory{Consent: ConsentAsk, MaxBytes: DefaultMemoryBytes},
		Auth: Auth{LegacyTOTPLogin: true, SessionTTL: Duration(12 * time.Hour), MaxFailures: 3,
			FailureWindow: Duration(5 * time.Minute), Lockout: Duration(2 * time.Minute), MaxLockout: Duration(24 * time.Hour),
			MaxConcurrentHashes: 1, MaxHashQueue: 4},
		Observability: Observability{Metrics: Metrics{Enabled: true, ScrapeTokenEnv: "XMLPIPE_SCRAPE_TOKEN"},
			Traces: Traces{Enabled: true, OTLPEndpoint: "localhost:4318", OTLPInsecure: true}},
		Routing: defaultRouting(),
	}
	if diff := cmp.Diff(want, o, ignoreState); diff != "" {
		t.Errorf("full organism (-want +got):\n%s", diff)
	}
}

// TestDefaults checks every default, from an empty mapping.
func TestDefaults(t *testing.T) {
	o, err := Parse("conf/organism.yaml", []byte("{}\n"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	dataDir, _ := filepath.Abs("conf/data")
	want := &Organism{
		Organism:               OrganismSection{Name: "unnamed", Port: 8765, Bind: "127.0.0.1", DataDir: dataDir, MaxMessageBytes: 1 << 20},
		MaxConcurrentPipelines: 50,
		MaxConcurrentHandlers:  20,
		MaxConcurrentPerAgent:  5,
		MaxChainDepth:          256,
		MaxInFlight:            4096,
		AdmitWait:              Duration(2 * time.Second),
		MaxQueueWait:           Duration(30 * time.Second),
		ThreadScheduling:       BreadthFirst,
		LLM:                    LLM{Strategy: Failover, Retries: 3, RetryBaseDelay: Duration(time.Second), RetryMaxDelay: Duration(time.Minute)},
		OOB:                    OOB{Enabled: true, Bind: "127.0.0.1", Port: 8766},
		Meta: Meta{
			Enabled: true, AllowListCapabilities: true,
			AllowSchemaRequests: AccessAuthenticated, AllowExampleRequests: AccessAuthenticated, AllowPromptRequests: AccessAuthenticated,
		},
		Platform: Platform{
			ContextBuffer: ContextBuffer{MaxSlotsPerThread: 10000, MaxThreads: 1000, TTLHours: 24,
				NoteTTL: Duration(30 * 24 * time.Hour), MaxNotes: 1000},
			ThreadTTL: Duration(time.Hour),
		},
		Journal:    Journal{Enabled: true, Retention: Retention{Policy: RetainForever}, SweepInterval: Duration(time.Hour)},
		Budgets:    Budgets{OnExceed: ExceedStop, RepeatLimit: 3},
		Governance: Governance{AlertAfter: 3, AlertWindow: Duration(10 * time.Minute)},
		Memory:     Memory{Consent: ConsentAsk, MaxBytes: DefaultMemoryBytes},
		Auth: Auth{SessionTTL: Duration(8 * time.Hour), MaxFailures: 5, FailureWindow: Duration(time.Minute),
			Lockout: Duration(time.Minute), MaxLockout: Duration(time.Hour), MaxConcurrentHashes: 2, MaxHashQueue: 8},
		Observability: Observability{Metrics: Metrics{Enabled: true}},
		Routing:       defaultRouting(),
	}
	if diff := cmp.Diff(want, o, ignoreState); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate of defaults: %v", err)
	}
}

// TestItemDefaults checks the defaults of list items and the values
// derived from other keys.
func TestItemDefaults(t *testing.T) {
	src := `
llm:
  backends:
    - provider: Anthropic
    - provider: openai
    - provider: ollama
listeners:
  - name: a
    payload_class: p
    handler: h
    description: d
organism:
  name: ~
  data_dir: state
`
	o, err := Parse("/etc/xmlpipe/organism.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	base := Backend{Priority: 1, RateLimitTPM: 100000, MaxConcurrent: 20, Timeout: Duration(120 * time.Second)}
	with := func(p Provider, url string) Backend {
		b := base
		b.Provider, b.Name, b.BaseURL = p, string(p), url
		return b
	}
	want := []Backend{
		with(Anthropic, "https://api.anthropic.com/v1"),
		with(OpenAI, "https://api.openai.com/v1"),
		with(Ollama, "http://localhost:11434"),
	}
	if diff := cmp.Diff(want, o.LLM.Backends); diff != "" {
		t.Errorf("backends (-want +got):\n%s", diff)
	}
	wantL := []Listener{{Name: "a", PayloadClass: "p", Handler: "h", Description: "d", Type: GoListener}}
	if diff := cmp.Diff(wantL, o.Listeners); diff != "" {
		t.Errorf("listeners (-want +got):\n%s", diff)
	}
	if got, want := o.Organism.Name, "unnamed"; got != want {
		t.Errorf("null name: got %q, want the default %q", got, want)
	}
	if got, want := o.Organism.DataDir, "/etc/xmlpipe/state"; got != want {
		t.Errorf("relative data_dir: got %q, want %q", got, want)
	}
}

// TestScalarForms covers the accepted spellings of booleans, integers,
// durations and retention policies.
func TestScalarForms(t *testing.T) {
	tests := []struct {
		name string
		src  string
		get  func(*Organism) any
		want any
	}{
		{"bool yes (YAML 1.1)", "oob: {enabled: yes}", func(o *Organism) any { return o.OOB.Enabled }, true},
		{"bool Off (YAML 1.1)", "oob: {enabled: Off}", func(o *Organism) any { return o.OOB.Enabled }, false},
		{"bool TRUE", "meta: {allow_remote: TRUE}", func(o *Organism) any { return o.Meta.AllowRemote }, true},
		{"int hex", "max_concurrent_handlers: 0x10", func(o *Organism) any { return o.MaxConcurrentHandlers }, 16},
		{"int underscore", "organism: {max_message_bytes: 2_000_000}", func(o *Organism) any { return o.Organism.MaxMessageBytes }, 2000000},
		{"int from integral float", "platform: {context_buffer: {max_threads: 1e3}}", func(o *Organism) any { return o.Platform.ContextBuffer.MaxThreads }, 1000},
		{"duration int seconds", "platform: {thread_ttl: 90}", func(o *Organism) any { return o.Platform.ThreadTTL.D() }, 90 * time.Second},
		{"duration float seconds", "llm: {retry_base_delay: 0.25}", func(o *Organism) any { return o.LLM.RetryBaseDelay.D() }, 250 * time.Millisecond},
		{"duration string", "journal: {sweep_interval: 1h30m}", func(o *Organism) any { return o.Journal.SweepInterval.D() }, 90 * time.Minute},
		{"retention scalar", "journal: {retention: prune_on_delivery}", func(o *Organism) any { return o.Journal.Retention }, Retention{Policy: PruneOnDelivery}},
		{"retention days scalar", "journal: {retention: retain_days( 7 )}", func(o *Organism) any { return o.Journal.Retention }, Retention{Policy: RetainDays, Days: 7}},
		{"retention days mapping", "journal: {retention: {retain_days: 3}}", func(o *Organism) any { return o.Journal.Retention }, Retention{Policy: RetainDays, Days: 3}},
		{"strategy underscore", "llm: {strategy: least_loaded}", func(o *Organism) any { return o.LLM.Strategy }, LeastLoaded},
		{"strategy case", "llm: {strategy: FailOver}", func(o *Organism) any { return o.LLM.Strategy }, Failover},
		{"on_exceed case", "budgets: {on_exceed: Warn}", func(o *Organism) any { return o.Budgets.OnExceed }, ExceedWarn},
		{"bind localhost", "oob: {bind: localhost}", func(o *Organism) any { return o.OOB.Bind }, "localhost"},
		{"number as string", "organism: {name: 2024}", func(o *Organism) any { return o.Organism.Name }, "2024"},
		{"tls absolute", "organism: {tls: {cert: /c.pem, key: /k.pem}}", func(o *Organism) any { return o.Organism.TLS }, TLS{Cert: "/c.pem", Key: "/k.pem"}},
		{"anchor and alias", "organism: {port: &p 9000}\noob: {port: 9001}\nmax_concurrent_per_agent: *p", func(o *Organism) any { return o.MaxConcurrentPerAgent }, 9000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := Parse("/o/organism.yaml", []byte(tt.src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, tt.get(o)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestPos checks positions of written keys, the fallback to the nearest
// written ancestor, and Errorf.
func TestPos(t *testing.T) {
	o, err := Load("testdata/valid/python-organism.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	const file = "testdata/valid/python-organism.yaml"
	tests := []struct {
		path string
		want Position
	}{
		{"", Position{file, 12, 1}},
		{"organism.port", Position{file, 14, 3}},
		{"thread_scheduling", Position{file, 22, 1}},
		{"llm.backends[0].api_key_env", Position{file, 30, 7}},
		{"listeners[1]", Position{file, 47, 5}},
		{"listeners[1].payload_class", Position{file, 48, 5}},
		{"listeners[0].peers[0]", Position{file, 40, 13}},
		{"listeners[1].max_concurrent", Position{file, 47, 5}}, // not written: its listener
		{"oob.port", Position{file, 12, 1}},                    // no oob section: the document
	}
	for _, tt := range tests {
		if got := o.Pos(tt.path); got != tt.want {
			t.Errorf("Pos(%q) = %+v, want %+v", tt.path, got, tt.want)
		}
	}
	if got, want := o.Pos("listeners[1].payload_class").String(), file+":48"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	err = o.Errorf("listeners[1].payload_class", "root tag %q already registered by %s", "greetingresponse", "greeter")
	if got, want := err.Error(), file+`:48: listeners[1].payload_class: root tag "greetingresponse" already registered by greeter`; got != want {
		t.Errorf("Errorf = %q, want %q", got, want)
	}
	if !errors.Is(err, ErrConfig) {
		t.Error("Errorf result does not wrap ErrConfig")
	}
}

func TestPositionString(t *testing.T) {
	tests := []struct {
		p    Position
		want string
	}{
		{Position{"organism.yaml", 12, 3}, "organism.yaml:12"},
		{Position{"organism.yaml", 0, 0}, "organism.yaml"},
		{Position{"", 4, 1}, "line 4"},
		{Position{}, ""},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.p, got, tt.want)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/no-such-organism.yaml")
	if err == nil {
		t.Fatal("Load of a missing file succeeded")
	}
	if !errors.Is(err, ErrConfig) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v wraps neither ErrConfig nor fs.ErrNotExist", err)
	}
	if got, want := err.Error(), "testdata/no-such-organism.yaml: no such file or directory"; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
}

func TestRetentionFor(t *testing.T) {
	src := `
journal: {retention: retain_days(30)}
listeners:
  - {name: Tool, payload_class: p, handler: h, description: d, retention: prune_on_delivery}
  - {name: other, payload_class: p2, handler: h, description: d}
`
	o, err := Parse("organism.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	tests := []struct {
		listener string
		want     Retention
	}{
		{"tool", Retention{Policy: PruneOnDelivery}},
		{"other", Retention{Policy: RetainDays, Days: 30}},
		{"not-a-listener", Retention{Policy: RetainDays, Days: 30}},
	}
	for _, tt := range tests {
		if got := o.RetentionFor(tt.listener); got != tt.want {
			t.Errorf("RetentionFor(%q) = %v, want %v", tt.listener, got, tt.want)
		}
	}
}

func TestBackendAPIKey(t *testing.T) {
	t.Setenv("XMLPIPE_TEST_KEY", "from-env")
	os.Unsetenv("XMLPIPE_TEST_UNSET")
	tests := []struct {
		name string
		b    Backend
		want string
	}{
		{"literal", Backend{APIKeyLiteral: "lit"}, "lit"},
		{"env replaces literal", Backend{APIKeyLiteral: "lit", APIKeyEnv: "XMLPIPE_TEST_KEY"}, "from-env"},
		{"unset env gives empty", Backend{APIKeyLiteral: "lit", APIKeyEnv: "XMLPIPE_TEST_UNSET"}, ""},
		{"none", Backend{}, ""},
	}
	for _, tt := range tests {
		if got := tt.b.APIKey(); got != tt.want {
			t.Errorf("%s: APIKey() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestEveryFieldHasYAMLTag guards the promise that every key is spelled
// out: an exported field without a yaml tag would be unreachable.
func TestEveryFieldHasYAMLTag(t *testing.T) {
	idx := keyIndex()
	for _, key := range []string{"organism", "payload_class", "allowed_recipients", "retention", "sweep_interval", "on_exceed", "thread_ttl", "unix_socket", "supported_models"} {
		if len(idx[key]) == 0 {
			t.Errorf("key %q missing from the schema", key)
		}
	}
	checkTags(t, Organism{})
}
