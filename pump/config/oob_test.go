package config

import (
	"strings"
	"testing"
)

// TestOOBBindForms: oob.bind takes a bare host, an IPv6 address in
// brackets and either with a port; loopback is told from the host, and a
// port in bind sets oob.port unless oob.port says otherwise.
func TestOOBBindForms(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		bind     string
		port     int
		errorHas string
	}{
		{"ipv4", `oob: {bind: 127.0.0.1}`, "127.0.0.1", 8766, ""},
		{"bare ipv6", `oob: {bind: "::1"}`, "::1", 8766, ""},
		{"bracketed ipv6", `oob: {bind: "[::1]"}`, "::1", 8766, ""},
		{"bracketed ipv6 with port", `oob: {bind: "[::1]:9100"}`, "::1", 9100, ""},
		{"localhost with port", `oob: {bind: "localhost:9100"}`, "localhost", 9100, ""},
		{"port in bind and the same oob.port", `oob: {bind: "[::1]:9100", port: 9100}`, "::1", 9100, ""},
		{"port in bind and another oob.port", `oob: {bind: "[::1]:9100", port: 9200}`, "", 0,
			`oob.bind: names port 9100 but oob.port is 9200`},
		{"not a port", `oob: {bind: "[::1]:http"}`, "", 0, `oob.bind: "[::1]:http" names no valid port`},
		{"port out of range", `oob: {bind: "127.0.0.1:70000"}`, "", 0, `names no valid port`},
		{"bracketed non-loopback", `oob: {bind: "[2001:db8::1]"}`, "", 0, `oob.bind: "2001:db8::1" is not a loopback address`},
		{"non-loopback with port", `oob: {bind: "192.0.2.1:9100"}`, "", 0, `oob.bind: "192.0.2.1" is not a loopback address`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse("/o/organism.yaml", []byte(tc.src))
			if tc.errorHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errorHas) {
					t.Fatalf("err %v, want it to say %q", err, tc.errorHas)
				}
				if !strings.Contains(err.Error(), "organism.yaml:1") {
					t.Fatalf("err %v does not say where", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.OOB.Bind != tc.bind || o.OOB.Port != tc.port {
				t.Fatalf("bind %q port %d, want %q %d", o.OOB.Bind, o.OOB.Port, tc.bind, tc.port)
			}
		})
	}
}
