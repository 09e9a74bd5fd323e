package config

import "testing"

func TestMemoryAndLoopControlKeys(t *testing.T) {
	o, err := Parse("organism.yaml", []byte(`memory: {consent: ALWAYS}
aeiou: {ttl: 90s, repeat_limit: 4}
listeners:
  - {name: a, agent: true, description: A, prompt: A., memory: true, loop_control: AEIOU}
  - {name: b, agent: true, description: B, prompt: B., memory: {consent: never}}
  - {name: c, agent: true, description: C, prompt: C., memory: false}
  - {name: d, agent: true, description: D, prompt: D.}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want Consent
		on   bool
	}{{"a", ConsentAlways, true}, {"b", ConsentNever, true}, {"c", "", false}, {"d", "", false}} {
		l, _ := o.Listener(tc.name)
		if got, on := o.MemoryConsent(l); got != tc.want || on != tc.on {
			t.Errorf("%s: MemoryConsent = %q %v, want %q %v", tc.name, got, on, tc.want, tc.on)
		}
	}
	if l, _ := o.Listener("a"); l.LoopControl != LoopAEIOU {
		t.Errorf("loop_control %q", l.LoopControl)
	}
	if o.AEIOU.TTL.D().Seconds() != 90 || o.AEIOU.RepeatLimit != 4 || o.MemoryBytes() != DefaultMemoryBytes {
		t.Errorf("aeiou %+v, memory bytes %d", o.AEIOU, o.MemoryBytes())
	}
	d := Default()
	if d.Memory.Consent != ConsentAsk {
		t.Errorf("default consent %q", d.Memory.Consent)
	}
	if c, on := d.MemoryConsent(Listener{Memory: AgentMemory{On: true}}); c != ConsentAsk || !on {
		t.Errorf("default agent consent %q %v", c, on)
	}
}
