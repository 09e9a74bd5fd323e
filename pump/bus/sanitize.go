package bus

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"go.yaml.in/yaml/v3"
)

// redacted replaces a secret value.
const redacted = "[redacted]"

// secretKeys are configuration keys whose values are secrets wherever they
// appear (including free-form listener config and tool_config maps).
var secretKeys = []string{"api_key", "apikey", "password", "passwd", "secret", "token", "private_key",
	"credentials", "authorization"}

// isSecretKey reports whether a key names a secret: one of secretKeys, or
// ending in _<one of them> (client_secret, bot_token, …).
func isSecretKey(k string) bool {
	k = strings.ToLower(strings.ReplaceAll(k, "-", "_"))
	for _, s := range secretKeys {
		if k == s || strings.HasSuffix(k, "_"+s) {
			return true
		}
	}
	return false
}

// sanitized renders a configuration value through its YAML form into plain
// maps and lists, with secret values redacted and credentials removed from
// URLs.
func sanitized(v any) (any, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("config to yaml: %w", err)
	}
	var tree any
	if err := yaml.Unmarshal(b, &tree); err != nil {
		return nil, fmt.Errorf("config from yaml: %w", err)
	}
	return redact(tree), nil
}

// writeSanitized answers the configuration value v, sanitized; a failure
// is logged as what and answered 500.
func (s *Server) writeSanitized(w http.ResponseWriter, what string, v any) {
	tree, err := sanitized(v)
	if err != nil {
		s.internalError(w, what, err)
		return
	}
	writeJSON(w, http.StatusOK, tree)
}

func redact(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if isSecretKey(k) && x != nil && x != "" {
				t[k] = redacted
				continue
			}
			t[k] = redact(x)
		}
		return t
	case []any:
		for i, x := range t {
			t[i] = redact(x)
		}
		return t
	case string:
		if u, err := url.Parse(t); err == nil && u.User != nil && u.Scheme != "" {
			u.User = url.User(redacted)
			return u.String()
		}
		return t
	}
	return v
}
