package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xml-pipeline/xmlpipe/oob"
	"github.com/xml-pipeline/xmlpipe/oob/keys"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// ctlTimeout bounds one request beyond what the organism itself may wait
// before it answers (oob.AnswerWithin).
const ctlTimeout = 30 * time.Second

// ctlRequestTimeout bounds the request of operation op: longer than the
// organism may take to answer it, so ctl never gives up on an operation
// the organism then completes.
func ctlRequestTimeout(op string) time.Duration {
	return ctlTimeout + oob.AnswerWithin(op)
}

// ctlUsage explains `xmlpipe ctl`, naming every operation of
// privileged-msg.xsd.
func ctlUsage() string {
	return `usage: xmlpipe ctl [--data DIR] [--config organism.yaml] [--endpoint E] [--json] OPERATION [name=value …]
  OPERATION is a privileged-msg.xsd request element:
` + wrapList(oob.OperationNames(), "    ", 100) + `
  Each name=value (or --name value) becomes a child <name>value</name>, put in the XSD's order;
  payload=XML is inserted as XML (inject-message), peer=/tag= go inside peers/import-tags.
  xmlpipe ctl watch [THREAD] [--count N]        stream thread-event pushes
  xmlpipe ctl graph [--format mermaid|dot|svg]  print the topology (svg through Graphviz's dot)
The endpoint is oob.unix_socket of the configuration when set, else oob.bind:oob.port;
the owner key is keys/owner.ed25519 in the data directory (xmlpipe keys init).
Examples:
  xmlpipe ctl list-listeners detailed=true
  xmlpipe ctl get-listener-schema name=greeter format=example
  xmlpipe ctl inject-message to=greeter 'payload=<Greeting xmlns=""><Name>Ada</Name></Greeting>'
  xmlpipe ctl halt scope=agents
  xmlpipe ctl shutdown mode=graceful timeout-seconds=30`
}

// wrapList joins items with ", " into lines of at most width characters,
// each starting with indent.
func wrapList(items []string, indent string, width int) string {
	var b strings.Builder
	line := indent
	for i, it := range items {
		sep := ", "
		if i == len(items)-1 {
			sep = ""
		}
		if line != indent && len(line)+len(it)+len(sep) > width {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line = indent
		}
		line += it + sep
	}
	b.WriteString(line)
	return b.String()
}

// ctlOptions are the common flags of ctl.
type ctlOptions struct {
	data, organism, endpoint string
	json                     bool
}

// runCtl is `xmlpipe ctl …`.
func runCtl(ctx context.Context, args []string, std streams) int {
	var o ctlOptions
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		val := func() (string, bool) {
			if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "--") {
				return v, true
			}
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			return "", false
		}
		name, _, _ := strings.Cut(a, "=")
		var ok bool
		switch name {
		case "--data", "-data":
			o.data, ok = val()
		case "--config", "-config", "--organism", "-organism": // --organism: the alias
			o.organism, ok = val()
		case "--endpoint", "-endpoint":
			o.endpoint, ok = val()
		case "--json", "-json":
			o.json, ok = true, true
		case "-h", "--help", "-help":
			fmt.Fprintln(std.out, ctlUsage())
			return exitOK
		default:
			rest = append(rest, a)
			continue
		}
		if !ok {
			fmt.Fprintf(std.err, "xmlpipe ctl: %s needs a value\n%s\n", a, ctlUsage())
			return exitUsage
		}
	}
	if len(rest) == 0 {
		fmt.Fprintln(std.err, ctlUsage())
		return exitUsage
	}
	op, params := rest[0], rest[1:]
	var body []byte
	if op != "watch" && op != "graph" {
		// A mistyped operation or parameter is reported as such, also
		// when no organism is running.
		var err error
		if body, err = opElement(op, params); err != nil {
			fmt.Fprintf(std.err, "xmlpipe ctl: %v\n", err)
			return exitUsage
		}
	}
	c, err := o.dial(ctx, std.err)
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe ctl: %v\n", err)
		return exitFailure
	}
	defer c.Close()
	switch op {
	case "watch":
		return ctlWatch(ctx, c, o, params, std)
	case "graph":
		return ctlGraph(ctx, c, params, std)
	case "list-approvals":
		return ctlListApprovals(ctx, c, o, body, std)
	}
	return ctlDo(ctx, c, o, op, body, std)
}

// dial connects with the owner key to the endpoint of the organism file;
// warn is told when the file does not load and only its organism: and
// oob: sections are used (ctlConfig).
func (o ctlOptions) dial(ctx context.Context, warn io.Writer) (*oob.Client, error) {
	var pos []string
	if o.organism != "" {
		pos = []string{o.organism}
	}
	cfg, note, err := ctlConfig(resolveConfig(pos))
	if err != nil {
		return nil, err
	}
	if note != "" {
		fmt.Fprintf(warn, "xmlpipe ctl: warning: %s\n", note)
	}
	key, err := keys.OwnerPrivate(keys.PathsFor(dataDir(cfg, o.data), cfg.Organism.Identity))
	if err != nil {
		return nil, err
	}
	ep := o.endpoint
	if ep == "" {
		ep = endpointOf(cfg.OOB)
	}
	tlsConf, err := ctlTLS(cfg.OOB)
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, ctlTimeout)
	defer cancel()
	return oob.DialTLS(dctx, ep, key, tlsConf)
}

// ctlTLS is how ctl verifies a remote channel (allow_remote_oob, served
// with oob.tls): the system roots and the configured certificate itself,
// which is most often self-signed. nil without oob.tls.
func ctlTLS(c config.OOB) (*tls.Config, error) {
	if !c.TLS.Enabled() {
		return nil, nil
	}
	data, err := os.ReadFile(c.TLS.Cert)
	if err != nil {
		return nil, fmt.Errorf("oob.tls.cert: %w", err)
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if !roots.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("oob.tls.cert %s: no PEM certificate in it", c.TLS.Cert)
	}
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS13}, nil
}

// endpointOf is where the OOB channel of c listens.
func endpointOf(c config.OOB) string {
	if c.UnixSocket != "" {
		return "unix:" + c.UnixSocket
	}
	scheme := "ws"
	if c.TLS.Enabled() {
		scheme = "wss"
	}
	return scheme + "://" + net.JoinHostPort(c.Bind, strconv.Itoa(c.Port)) + "/"
}

// opElement builds the operation element from name=value parameters,
// put in the order privileged-msg.xsd requires.
func opElement(op string, params []string) ([]byte, error) {
	order, ok := oob.OperationFields(op)
	if !ok {
		names := oob.OperationNames()
		return nil, fmt.Errorf("%q is not an operation of privileged-msg.xsd%s; the operations are %s, and watch and graph",
			op, config.Suggest(op, append(slices.Clone(names), "watch", "graph")), strings.Join(names, ", "))
	}
	type child struct {
		name string
		xml  string
	}
	var children []child
	var peers, tags []string
	for i := 0; i < len(params); i++ {
		p := strings.TrimPrefix(strings.TrimPrefix(params[i], "--"), "-")
		k, v, ok := strings.Cut(p, "=")
		if !ok && strings.HasPrefix(params[i], "-") && i+1 < len(params) {
			k, v, ok = p, params[i+1], true
			i++
		}
		if !ok || k == "" {
			return nil, fmt.Errorf("parameter %q: want name=value", params[i])
		}
		switch {
		case k == "peer" && slices.Contains(order, "peers"):
			peers = append(peers, v)
		case k == "tag" && slices.Contains(order, "import-tags"):
			tags = append(tags, v)
		case !slices.Contains(order, k) || k == "peers" || k == "import-tags":
			return nil, fmt.Errorf("%s takes %s, not %q%s", op, fieldList(order), k, config.Suggest(k, paramNames(order)))
		case k == "payload":
			children = append(children, child{k, "<payload>" + v + "</payload>"})
		default:
			var b bytes.Buffer
			if err := xml.EscapeText(&b, []byte(v)); err != nil {
				return nil, err
			}
			children = append(children, child{k, "<" + k + ">" + b.String() + "</" + k + ">"})
		}
	}
	list := func(outer, inner string, vs []string) {
		if len(vs) == 0 {
			return
		}
		var b bytes.Buffer
		b.WriteString("<" + outer + ">")
		for _, v := range vs {
			b.WriteString("<" + inner + ">")
			_ = xml.EscapeText(&b, []byte(v))
			b.WriteString("</" + inner + ">")
		}
		b.WriteString("</" + outer + ">")
		children = append(children, child{outer, b.String()})
	}
	list("peers", "peer", peers)
	list("import-tags", "tag", tags)
	slices.SortStableFunc(children, func(a, b child) int {
		return slices.Index(order, a.name) - slices.Index(order, b.name)
	})
	var b bytes.Buffer
	b.WriteString("<" + op + ">")
	for _, c := range children {
		b.WriteString(c.xml)
	}
	b.WriteString("</" + op + ">")
	return b.Bytes(), nil
}

// paramNames are the parameter names an operation takes, as they are
// typed: peer= and tag= for the repeated peers and import-tags.
func paramNames(order []string) []string {
	names := make([]string, 0, len(order))
	for _, f := range order {
		switch f {
		case "peers":
			names = append(names, "peer")
		case "import-tags":
			names = append(names, "tag")
		default:
			names = append(names, f)
		}
	}
	return names
}

// fieldList names an operation's parameters for an error message.
func fieldList(order []string) string {
	var out []string
	for _, f := range order {
		switch f {
		case "peers":
			out = append(out, "peer= (repeatable)")
		case "import-tags":
			out = append(out, "tag= (repeatable)")
		default:
			out = append(out, f+"=")
		}
	}
	if len(out) == 0 {
		return "no parameters"
	}
	return strings.Join(out, " ")
}

// ctlDo sends one operation and prints the response.
func ctlDo(ctx context.Context, c *oob.Client, o ctlOptions, op string, body []byte, std streams) int {
	_, code := ctlRequest(ctx, c, o, op, body, std)
	return code
}

// ctlRequest sends one operation and prints the response; the response is
// nil unless the exit code is exitOK.
func ctlRequest(ctx context.Context, c *oob.Client, o ctlOptions, op string, body []byte, std streams) (*oob.Response, int) {
	d := ctlRequestTimeout(op)
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	r, raw, err := c.Do(rctx, body)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		fmt.Fprintf(std.err, "xmlpipe ctl: %s: no answer within %s; the organism may still complete it (its log says)\n", op, d)
		return nil, exitFailure
	}
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe ctl: %v\n", err)
		return nil, exitFailure
	}
	if err := printDoc(std.out, r, raw, o.json); err != nil {
		fmt.Fprintf(std.err, "xmlpipe ctl: %v\n", err)
		return nil, exitFailure
	}
	if err := r.Err(); err != nil {
		fmt.Fprintf(std.err, "xmlpipe ctl: %v\n", err)
		return nil, exitFailure
	}
	return r, exitOK
}

// listApprovalsOp is a <list-approvals> element as ctl sends it.
type listApprovalsOp struct {
	XMLName xml.Name `xml:"list-approvals"`
	oob.ListApprovals
}

// ctlListApprovals is `xmlpipe ctl list-approvals`: the organism answers a
// page at a time (oob.MaxApprovalsPageBytes at most), and ctl prints each
// page as its own document as it comes, following each page's next until
// the last — unless limit= asked for one page: then it prints that page
// and says how to ask for the next.
func ctlListApprovals(ctx context.Context, c *oob.Client, o ctlOptions, body []byte, std streams) int {
	var q listApprovalsOp
	if err := xml.Unmarshal(body, &q); err != nil {
		fmt.Fprintf(std.err, "xmlpipe ctl: list-approvals: %v\n", err)
		return exitUsage
	}
	for {
		r, code := ctlRequest(ctx, c, o, "list-approvals", body, std)
		if code != exitOK {
			return code
		}
		if r.Payload.Approvals == nil || r.Payload.Approvals.Next == "" {
			return exitOK
		}
		next := r.Payload.Approvals.Next
		if q.Limit != 0 {
			fmt.Fprintf(std.err, "xmlpipe ctl: more approvals follow: add after=%s for the next page\n", next)
			return exitOK
		}
		q.After = next
		b, err := xml.Marshal(q)
		if err != nil {
			fmt.Fprintf(std.err, "xmlpipe ctl: list-approvals: %v\n", err)
			return exitFailure
		}
		body = b
	}
}

// printDoc prints a response or push: indented XML, or JSON.
func printDoc(w io.Writer, v any, raw []byte, asJSON bool) error {
	if asJSON {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	b, err := prettyXML(raw)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// prettyXML re-indents a document.
func prettyXML(raw []byte) ([]byte, error) {
	d := xml.NewDecoder(bytes.NewReader(raw))
	var out bytes.Buffer
	e := xml.NewEncoder(&out)
	e.Indent("", "  ")
	for {
		tok, err := d.RawToken()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.CharData:
			if len(bytes.TrimSpace(t)) == 0 {
				continue
			}
		case xml.ProcInst:
			continue
		}
		if err := e.EncodeToken(xml.CopyToken(tok)); err != nil {
			return nil, err
		}
	}
	if err := e.Flush(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// ctlWatch subscribes and prints pushes until interrupted (or --count).
func ctlWatch(ctx context.Context, c *oob.Client, o ctlOptions, params []string, std streams) int {
	count := 0
	var thread string
	for i := 0; i < len(params); i++ {
		switch p := params[i]; {
		case p == "--count" && i+1 < len(params):
			n, err := strconv.Atoi(params[i+1])
			if err != nil || n < 1 {
				fmt.Fprintf(std.err, "xmlpipe ctl watch: --count %q: want a positive number\n", params[i+1])
				return exitUsage
			}
			count = n
			i++
		case thread == "" && !strings.HasPrefix(p, "-"):
			thread = p
		default:
			fmt.Fprintf(std.err, "xmlpipe ctl watch: unexpected %q\n", p)
			return exitUsage
		}
	}
	body := []byte("<subscribe-thread><include-payloads>true</include-payloads></subscribe-thread>")
	if thread != "" {
		var b bytes.Buffer
		_ = xml.EscapeText(&b, []byte(thread))
		body = []byte("<subscribe-thread><thread-id>" + b.String() + "</thread-id><include-payloads>true</include-payloads></subscribe-thread>")
	}
	if code := ctlDo(ctx, c, o, "subscribe-thread", body, std); code != exitOK {
		return code
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	for n := 0; count == 0 || n < count; n++ {
		p, raw, err := c.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return exitOK
			}
			fmt.Fprintf(std.err, "xmlpipe ctl watch: %v\n", err)
			return exitFailure
		}
		if err := printDoc(std.out, p, raw, o.json); err != nil {
			fmt.Fprintf(std.err, "xmlpipe ctl watch: %v\n", err)
			return exitFailure
		}
	}
	return exitOK
}

// ctlGraph prints the topology: mermaid, dot, or svg through Graphviz.
func ctlGraph(ctx context.Context, c *oob.Client, params []string, std streams) int {
	format := "mermaid"
	remote := false
	for i := 0; i < len(params); i++ {
		switch p := params[i]; {
		case p == "--format" && i+1 < len(params):
			format = params[i+1]
			i++
		case strings.HasPrefix(p, "--format="):
			format = strings.TrimPrefix(p, "--format=")
		case p == "--remote":
			remote = true
		default:
			fmt.Fprintf(std.err, "xmlpipe ctl graph: unexpected %q\n", p)
			return exitUsage
		}
	}
	wire := map[string]string{"mermaid": "mermaid", "dot": "graphviz", "svg": "graphviz", "json": "json"}[format]
	if wire == "" {
		fmt.Fprintf(std.err, "xmlpipe ctl graph: --format %q: want mermaid, dot, svg or json\n", format)
		return exitUsage
	}
	var dot string
	if format == "svg" {
		var err error
		if dot, err = exec.LookPath("dot"); err != nil {
			fmt.Fprintln(std.err, "xmlpipe ctl graph: --format svg needs Graphviz's dot on PATH (install graphviz), "+
				"or use --format dot and render it elsewhere")
			return exitFailure
		}
	}
	rctx, cancel := context.WithTimeout(ctx, ctlTimeout)
	defer cancel()
	r, _, err := c.Do(rctx, []byte("<get-organism-graph><format>"+wire+"</format><include-remote>"+
		strconv.FormatBool(remote)+"</include-remote></get-organism-graph>"))
	if err == nil {
		err = r.Err()
	}
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe ctl graph: %v\n", err)
		return exitFailure
	}
	g := r.Payload.OrganismGraph
	if g == nil {
		fmt.Fprintln(std.err, "xmlpipe ctl graph: the response holds no graph")
		return exitFailure
	}
	if format != "svg" {
		fmt.Fprint(std.out, g.Graph)
		if !strings.HasSuffix(g.Graph, "\n") {
			fmt.Fprintln(std.out)
		}
		return exitOK
	}
	cmd := exec.CommandContext(ctx, dot, "-Tsvg")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(g.Graph), std.out, std.err
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(std.err, "xmlpipe ctl graph: dot: %v\n", err)
		return exitFailure
	}
	return exitOK
}
