package console

import (
	"context"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// suggest returns the " (did you mean …?)" suffix naming, after prefix, the
// candidate a mistyped name is closest to ("" when none is close enough).
func suggest(name string, candidates []string, prefix string) string {
	s := config.Suggest(name, candidates)
	if s == "" || prefix == "" {
		return s
	}
	return strings.Replace(s, `"`, `"`+prefix, 1)
}

// suggestListener is suggest over the organism's listeners ("" when they
// cannot be listed).
func (c *Console) suggestListener(ctx context.Context, target string) string {
	ls, err := c.b.Listeners(ctx)
	if err != nil {
		return ""
	}
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.Name
	}
	return suggest(target, names, "@")
}
