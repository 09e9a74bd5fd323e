package console

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

func TestConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		want    Config
		wantErr bool
	}{
		{"defaults", Config{}, Config{Prompt: DefaultPrompt, ReplyTimeout: DefaultReplyTimeout, LineWait: DefaultLineWait}, false},
		{"kept", Config{Verbose: true, NoLLM: true, Prompt: "xp> ", ReplyTimeout: time.Minute, LineWait: time.Second},
			Config{Verbose: true, NoLLM: true, Prompt: "xp> ", ReplyTimeout: time.Minute, LineWait: time.Second}, false},
		{"line wait within the reply timeout", Config{ReplyTimeout: time.Second},
			Config{Prompt: DefaultPrompt, ReplyTimeout: time.Second, LineWait: time.Second}, false},
		{"negative timeout", Config{ReplyTimeout: -time.Second}, Config{}, true},
		{"negative line wait", Config{LineWait: -time.Second}, Config{}, true},
		{"multi-line prompt", Config{Prompt: "a\nb"}, Config{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr {
				if !errors.Is(err, ErrConfig) {
					t.Fatalf("Validate = %v; want ErrConfig", err)
				}
				if _, err := New(&organism.Local{}, tt.cfg); !errors.Is(err, ErrConfig) {
					t.Fatalf("New accepted an invalid config: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if diff := cmp.Diff(tt.want, tt.cfg.WithDefaults()); diff != "" {
				t.Errorf("WithDefaults (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := New(nil, Config{}); !errors.Is(err, ErrConfig) {
		t.Errorf("New(nil) = %v; want ErrConfig", err)
	}
}
