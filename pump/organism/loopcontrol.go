package organism

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/listeners/llm/aeiou"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// ErrLoopSecretUnset: aeiou.hmac_secret_env names an environment variable
// that is not set, so the HS256 secret the operator asked for is missing.
var ErrLoopSecretUnset = errors.New("organism: the AEIOU HS256 secret variable is not set")

// loopControl is the organism's AEIOU v3 loop control (agents with
// loop_control: aeiou): one aeiou.Host, made on first need from the aeiou:
// section the organism started with. Its keys are fresh at every start —
// two Ed25519 keys, the primary and the abort-only fallback — unless
// hmac_secret_env names an HS256 secret for the primary; a token verifies
// only within its own turn, so nothing needs to outlive the process.
type loopControl struct {
	cfg   config.AEIOU
	obs   aeiou.Observer
	log   *slog.Logger
	clock func() time.Time

	mu   sync.Mutex
	host *aeiou.Host
}

func newLoopControl(cfg *config.Organism, opts Options) (*loopControl, error) {
	l := &loopControl{cfg: cfg.AEIOU, obs: opts.LoopControlObserver, log: opts.Logger, clock: opts.Clock}
	for _, lc := range cfg.Listeners {
		if lc.Agent && lc.LoopControl == config.LoopAEIOU {
			if _, err := l.get(); err != nil {
				return nil, fmt.Errorf("%s: %w", cfg.Pos("aeiou"), err)
			}
			break
		}
	}
	return l, nil
}

// get returns the host, making it on first use.
func (l *loopControl) get() (*aeiou.Host, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.host != nil {
		return l.host, nil
	}
	c := l.cfg
	o := aeiou.Options{Config: aeiou.Config{TTL: c.TTL.D(), ReplayTTL: c.ReplayTTL.D(), ReplayCapacity: c.ReplayCapacity,
		RepeatLimit: c.RepeatLimit}, Observer: l.obs, Logger: l.log, Now: l.clock}
	if c.HMACSecretEnv != "" && c.HMACSecret() == "" {
		return nil, fmt.Errorf("%w: aeiou.hmac_secret_env names %s, which is not set (set it to 32 bytes or more, "+
			"or remove hmac_secret_env to sign with fresh Ed25519 keys)", ErrLoopSecretUnset, c.HMACSecretEnv)
	}
	if secret := c.HMACSecret(); secret != "" {
		keys, err := hmacKeys([]byte(secret), l.clock())
		if err != nil {
			return nil, err
		}
		o.Keys = keys
	}
	h, err := aeiou.New(o)
	if err != nil {
		return nil, fmt.Errorf("organism: AEIOU loop control: %w", err)
	}
	l.host = h
	return h, nil
}

// hmacKeys are the keys of an HS256 primary with a fresh Ed25519 fallback;
// the primary's kid names the secret by a hash prefix, never the secret.
func hmacKeys(secret []byte, now time.Time) (*aeiou.Keys, error) {
	sum := sha256.Sum256(secret)
	primary, err := aeiou.NewHMACSigner("hs256-"+hex.EncodeToString(sum[:4]), secret)
	if err != nil {
		return nil, err
	}
	gen, err := aeiou.GenerateKeys(now)
	if err != nil {
		return nil, err
	}
	fb, ok := gen.Fallback.(*aeiou.Ed25519Signer)
	if !ok {
		return nil, fmt.Errorf("organism: AEIOU fallback signer of type %T", gen.Fallback)
	}
	return aeiou.NewKeys(primary, primary.VerifyKey(), fb, fb.VerifyKey())
}

// equip puts an agent configured with loop_control: aeiou under loop
// control.
func (l *loopControl) equip(a *llm.Agent, lc config.Listener) {
	if lc.LoopControl != config.LoopAEIOU {
		return
	}
	h, err := l.get()
	if err != nil { // checked at assembly and by checkReload
		l.log.Error("agent left without loop control", "agent", lc.Name, "error", err)
		return
	}
	a.LoopControl = h
}

// checkReload makes the host a reload's new loop-controlled agents need.
func (l *loopControl) checkReload(cfg *config.Organism) error {
	for i, lc := range cfg.Listeners {
		if lc.Agent && lc.LoopControl == config.LoopAEIOU {
			if _, err := l.get(); err != nil {
				return fmt.Errorf("%s: %w", cfg.Pos(fmt.Sprintf("listeners[%d].loop_control", i)), err)
			}
			return nil
		}
	}
	return nil
}
