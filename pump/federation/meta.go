package federation

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/xml-pipeline/xmlpipe/gen/xmltext"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/federation/envsig"
	"github.com/xml-pipeline/xmlpipe/schemas"
)

// MetaAnswerer answers a peer's meta introspection question (a payload of
// schemas.MetaNS) as "core" answers a local one, under the organism's meta:
// flags for a remote caller that may see only the exported root tags. A
// refused question returns an error whose text is the canned refusal.
// profile is the gateway's security profile, which bounds what its peer
// may see ("" none), as it bounds the peer's calls.
type MetaAnswerer interface {
	AnswerRemote(gateway, profile string, exported func(rootTag string) bool, question []byte) (answer []byte, err error)
}

// metaTimeout bounds one meta question to the peer.
const metaTimeout = 10 * time.Second

// ErrMeta: the peer refused a meta question or its answer is unusable.
var ErrMeta = errors.New("federation: meta introspection")

// onMeta answers a peer's question on the live link, or hands an answer to
// the question this side waits on. Meta traffic is never queued: a
// question asked while the link is down fails at once.
func (g *gateway) onMeta(c *conn, e *envelope) {
	if e.Link.Kind == KindMetaAnswer {
		g.mu.Lock()
		ch := g.questions[e.Link.Ref]
		delete(g.questions, e.Link.Ref)
		g.mu.Unlock()
		if ch != nil {
			ch <- e
		}
		return
	}
	a := &envelope{From: g.m.opts.Organism, Thread: e.Thread, Link: link{ID: uuid.NewString(), Kind: KindMetaAnswer,
		Ref: e.Link.ID, Sent: g.m.now()}}
	switch {
	case e.PayloadNS != schemas.MetaNS:
		g.log.Warn("federation: security: meta envelope without a meta question refused", "root", e.PayloadName)
		a.Link.Error = "not a meta question"
	case g.m.opts.Meta == nil:
		a.Link.Error = "meta introspection is off"
	default:
		ans, err := g.m.opts.Meta.AnswerRemote(g.name, g.offer().profile, g.exported, e.Payload)
		if err != nil {
			a.Link.Error = err.Error()
		} else {
			a.Payload = ans
		}
	}
	signed, err := envsig.Sign(g.m.opts.Key, a.build())
	if err != nil {
		g.log.Error("federation: meta answer", "error", err)
		return
	}
	if c.write(signed) == nil {
		g.envelopeSeen(DirectionOut, KindMetaAnswer)
	}
}

// ask sends a meta question to the peer and returns its answer's payload.
func (g *gateway) ask(ctx context.Context, question string) ([]byte, error) {
	g.mu.Lock()
	c := g.conn
	g.mu.Unlock()
	if c == nil {
		return nil, fmt.Errorf("%w: gateway %s: the link is down", ErrMeta, g.name)
	}
	id := uuid.NewString()
	e := &envelope{From: g.m.opts.Organism, Thread: uuid.NewString(), Link: link{ID: id, Kind: KindMeta, Sent: g.m.now()},
		Payload: []byte(question)}
	signed, err := envsig.Sign(g.m.opts.Key, e.build())
	if err != nil {
		return nil, err
	}
	ch := make(chan *envelope, 1)
	g.mu.Lock()
	g.questions[id] = ch
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.questions, id)
		g.mu.Unlock()
	}()
	if err := c.write(signed); err != nil {
		return nil, fmt.Errorf("%w: gateway %s: %w", ErrMeta, g.name, err)
	}
	g.envelopeSeen(DirectionOut, KindMeta)
	ctx, cancel := context.WithTimeout(ctx, metaTimeout)
	defer cancel()
	select {
	case a := <-ch:
		if a.Link.Error != "" {
			return nil, fmt.Errorf("%w: gateway %s: the peer refused: %s", ErrMeta, g.name, a.Link.Error)
		}
		return a.Payload, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: gateway %s: no answer: %w", ErrMeta, g.name, ctx.Err())
	case <-c.done:
		return nil, fmt.Errorf("%w: gateway %s: the link went down", ErrMeta, g.name)
	}
}

// capabilityList is what list-capabilities answers.
type capabilityList struct {
	Capability []struct {
		Name        string `xml:"name"`
		Description string `xml:"description"`
		RootTag     string `xml:"root-tag"`
		Namespace   string `xml:"namespace"`
	} `xml:"capability"`
}

// ErrQualifiedImport: the peer exports an imported root tag only in a
// namespace. An import's listener is a field list, whose root has none, and
// only unqualified root tags cross a gateway (the peer refuses a call whose
// root has a namespace), so it is not imported.
var ErrQualifiedImport = errors.New("only unqualified root tags can be imported")

// ErrNotExported: the peer does not export an imported root tag at all (a
// typo in import:, or a listener the peer has not registered yet).
var ErrNotExported = errors.New("the peer does not export it")

// fetchImports asks the peer for the capabilities behind the gateway's
// imported root tags and their schemas. gone are the imported tags the
// peer's capability list lacks unqualified: it does not export them (any
// more), or exports them only in a namespace — qualified counts those
// (ErrQualifiedImport), which asking again cannot change; absent are
// those it does not export at all (ErrNotExported). err joins why each tag
// not in list could not be imported, an absent one with the root tags the
// peer does export, the closest first.
func (g *gateway) fetchImports(ctx context.Context) (list []imported, gone []string, qualified int, absent []string, err error) {
	b, err := g.ask(ctx, `<list-capabilities xmlns="`+schemas.MetaNS+`"/>`)
	if err != nil {
		return nil, nil, 0, nil, err
	}
	var caps capabilityList
	if err := xml.Unmarshal(b, &caps); err != nil {
		return nil, nil, 0, nil, fmt.Errorf("%w: gateway %s: capabilities: %w", ErrMeta, g.name, err)
	}
	var offered []string // the unqualified root tags the peer exports
	for _, c := range caps.Capability {
		if c.Namespace == "" && !slices.Contains(offered, c.RootTag) {
			offered = append(offered, c.RootTag)
		}
	}
	var out []imported
	var errs []error
	for _, tag := range g.offer().imports {
		found := false
		var namespaces []string // where the peer exports tag qualified
		for _, c := range caps.Capability {
			if c.RootTag != tag {
				continue
			}
			if c.Namespace != "" {
				namespaces = append(namespaces, c.Namespace)
				continue
			}
			found = true
			ans, err := g.ask(ctx, `<request-schema xmlns="`+schemas.MetaNS+`"><capability>`+string(xmltext.AppendText(nil, c.Name))+
				`</capability></request-schema>`)
			if err != nil {
				errs = append(errs, err)
				break
			}
			var sr struct {
				Schema string `xml:"schema"`
			}
			if err := xml.Unmarshal(ans, &sr); err != nil {
				errs = append(errs, fmt.Errorf("%w: gateway %s: schema of %s: %w", ErrMeta, g.name, c.Name, err))
				break
			}
			if strings.TrimSpace(sr.Schema) == "" {
				errs = append(errs, fmt.Errorf("%w: gateway %s: schema of %s: the peer answered no schema", ErrMeta, g.name, c.Name))
				break
			}
			out = append(out, imported{Tag: tag, Name: c.Name, Description: c.Description, XSD: []byte(sr.Schema)})
			break
		}
		switch {
		case found:
		case len(namespaces) > 0:
			gone = append(gone, tag)
			qualified++
			errs = append(errs, fmt.Errorf("%w: gateway %s: the peer exports <%s> only in namespace %q: %w "+
				"(an import's listener is a field list, whose root has no namespace, and the peer refuses a call whose "+
				"root has one): not imported; the peer's listener needs an unqualified root tag",
				ErrMeta, g.name, tag, strings.Join(namespaces, `", "`), ErrQualifiedImport))
		default:
			gone = append(gone, tag)
			absent = append(absent, tag)
			exports := "no unqualified root tag"
			if len(offered) > 0 {
				exports = "<" + strings.Join(config.ByCloseness(tag, offered), ">, <") + ">"
			}
			errs = append(errs, fmt.Errorf("%w: gateway %s: import <%s>: %w; it exports %s", ErrMeta, g.name, tag,
				ErrNotExported, exports))
		}
	}
	return out, gone, qualified, absent, errors.Join(errs...)
}
