package console

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// command is one /command: its usage, its one-line help and what it does.
type command struct {
	name, args, help string
	run              func(c *Console, ctx context.Context, arg string)
}

// monitorAllSlots is how many of each thread's last messages /monitor * shows.
const monitorAllSlots = 5

// commands lists every /command in /help order (/quit and /exit end the
// session and are handled by Exec). It is a function because /help lists it.
func commands() []command {
	return []command{
		{"help", "", "this help", (*Console).cmdHelp},
		{"status", "", "organism, uptime, listeners, threads, messages", (*Console).cmdStatus},
		{"listeners", "", "registered listeners and their payload root tags", (*Console).cmdListeners},
		{"targets", "", "the same as /listeners", (*Console).cmdListeners},
		{"config", "[--show]", "the organism's name, ports, scheduling and limits, and its file (read-only)", (*Console).cmdConfig},
		{"threads", "", "this console's conversations and the live threads", (*Console).cmdThreads},
		{"new", "[agent]", "begin a new conversation with the agent (with every agent: none named)", (*Console).cmdNew},
		{"monitor", "<tid>|*", "message history of a thread (id prefix) or of every thread", (*Console).cmdMonitor},
		{"buffer", "<tid>", "one thread's context buffer: every message, with its payload", (*Console).cmdBuffer},
		{"usage", "", "LLM tokens per agent and per backend", (*Console).cmdUsage},
		{"approvals", "[status]", "calls waiting for a human (status: approved, denied, expired, all)", (*Console).cmdApprovals},
		{"approve", "<id> [why]", "let a waiting call run", (*Console).cmdApprove},
		{"deny", "<id> <why>", "refuse a waiting call (its agent gets the reason)", (*Console).cmdDeny},
		{"cancel", "[agent|tid]", "stop an answer and keep its conversation (none named: every answer coming)", (*Console).cmdCancel},
		{"kill", "<agent>|<tid>", "stop a conversation for good (an agent's: this console's with it)", (*Console).cmdKill},
		{"halt", "[all|LISTENER]", "emergency stop: the agents (or every listener, or that one) stop at once", (*Console).cmdHalt},
		{"resume", "[LISTENER]", "lift the halt (or that listener's)", (*Console).cmdResume},
		{"memory", "[words]", "the memories agents kept (best first when words are given)", (*Console).cmdMemory},
		{"forget", "<id>", "delete a memory", (*Console).cmdForget},
		{"clear", "", "clear the screen (a terminal's; nothing on a pipe)", (*Console).cmdClear},
	}
}

// Exec runs one input line. It reports whether the line ends the session and
// the conversation an @ line started ("" for none).
func (c *Console) Exec(ctx context.Context, line string) (quit bool, conv string) {
	line = strings.TrimSpace(line)
	switch {
	case line == "":
		return false, ""
	case strings.HasPrefix(line, "@"):
		return false, c.send(ctx, line[1:])
	case !strings.HasPrefix(line, "/"):
		c.say("Use @listener message or /command")
		return false, ""
	}
	name, arg, _ := strings.Cut(line[1:], " ")
	name, arg = strings.ToLower(name), strings.TrimSpace(arg)
	if name == "quit" || name == "exit" {
		return true, ""
	}
	for _, cmd := range commands() {
		if cmd.name == name {
			cmd.run(c, ctx, arg)
			return false, ""
		}
	}
	if c.pythonCommand(name) {
		return false, ""
	}
	names := []string{"quit", "exit"}
	for _, cmd := range commands() {
		names = append(names, cmd.name)
	}
	c.say("Unknown command: /"+name+suggest(name, names, "/"), "Type /help for available commands.")
	return false, ""
}

// send handles "@target text", "@target {json object}" and "@target
// <Payload>…". A line to an agent continues the console's current
// conversation with it (see conversations), else begins one.
func (c *Console) send(ctx context.Context, rest string) string {
	target, text, _ := strings.Cut(strings.TrimSpace(rest), " ")
	target, text = strings.ToLower(target), strings.TrimSpace(text)
	if target == "" {
		c.say("Usage: @listener message")
		return ""
	}
	payload, structured, err := organism.StructuredPayload(text)
	if err != nil {
		c.say("Invalid JSON payload: " + err.Error())
		return ""
	}
	agent := c.convs.isAgent(ctx, c.b, target)
	conv := ""
	if agent {
		conv = c.convs.currentOf(target)
	}
	if conv != "" && c.convs.isRunning(conv) {
		if !c.settle(ctx, target, conv) {
			return ""
		}
		// The wait may have ended the conversation for good (a kill seen
		// meanwhile): the line goes to the one current now, or begins one.
		conv = c.convs.currentOf(target)
	}
	if c.cfg.Verbose {
		// Before sending: the conversation's output may arrive before Send returns.
		if conv != "" {
			c.say("[continuing " + label(target, conv) + "]")
		} else {
			c.say("[sending to " + target + "]")
		}
	}
	if conv == "" {
		conv = stage.NewThreadID()
	}
	m := organism.Message{Target: target, Text: text, Thread: conv}
	if structured {
		m.Text, m.Payload = "", payload
	}
	turn := c.convs.sending(target, conv)
	thread, err := c.b.Send(ctx, m)
	c.convs.sent(target, conv, turn, agent, err)
	var rej *organism.Rejection
	switch {
	case errors.Is(err, organism.ErrUnknownListener):
		c.say("Unknown listener: "+target+c.suggestListener(ctx, target), "Use /listeners to see available listeners.")
	case errors.Is(err, organism.ErrNoTextField):
		c.say("Cannot create payload for "+target,
			"Send its fields as JSON (@"+target+" {…}) or XML (@"+target+" <Payload>…</Payload>); /listeners shows its root tag.")
	case errors.Is(err, organism.ErrBadPayload):
		c.say(capitalize(err.Error()))
	case errors.Is(err, organism.ErrConversationKilled):
		// Killed elsewhere (the API, the dashboard, OOB): a kill is final,
		// so the agent's next line begins a new conversation.
		c.say(c.convs.endedEarly(conv, "conversation was killed"))
	case errors.As(err, &rej):
		c.huh(rej.Huh, rej.Diagnostics)
	case errors.Is(err, pump.ErrCannotJournal):
		c.say(storageRefusedText(err))
	case errors.Is(err, pump.ErrNotDurable):
		c.say(notJournaledText) // the cause is in the log, once: one line per line sent
	case err != nil:
		c.say("Error: " + err.Error())
	}
	if err != nil {
		return ""
	}
	return thread
}

// settle handles a line that would continue conv while its last message is
// still being answered: a piped session waits for the answer (until
// Config.ReplyTimeout after the conversation's line began), unless conv
// waits for a human — then, as on a terminal, the line is not sent and the
// user is told why (the /approve that would let it go on comes later in
// the input). It reports whether the line may be sent now.
func (c *Console) settle(ctx context.Context, target, conv string) bool {
	if s, ok := c.sess.take(conv); ok {
		done, approval := c.awaitOrHuman(ctx, conv, time.Until(s.at.Add(c.cfg.ReplyTimeout)))
		if done {
			return true
		}
		if approval != "" {
			c.sess.track(s) // still running: /quit and the end of input wait for it
			c.say(fmt.Sprintf("%s waits for a human (approval %s): line not sent; /approve %s or /deny %s <reason> first",
				label(target, conv), approval, approval, approval))
			return false
		}
		c.out.release(conv)
		c.say(fmt.Sprintf("%s is still answering after %v; line not sent", label(target, conv), c.cfg.ReplyTimeout))
		return false
	}
	c.say(label(target, conv) + " is still answering: wait for its answer, or /new " + target + " to begin another conversation")
	return false
}

// capitalize upper-cases the first letter of a message.
func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

func (c *Console) cmdHelp(context.Context, string) {
	lines := []string{"Commands:"}
	for _, cmd := range commands() {
		lines = append(lines, fmt.Sprintf("  %-20s %s", strings.TrimSpace("/"+cmd.name+" "+cmd.args), cmd.help))
	}
	lines = append(lines, fmt.Sprintf("  %-20s %s", "/quit, /exit", "leave the console"),
		"Send a message with @listener text, e.g. @greeter Dan; further @ lines to an agent continue its conversation",
		`or its fields as JSON or XML: @greeter {"Name": "Dan"}, @greeter <Greeting><Name>Dan</Name></Greeting>`)
	c.say(lines...)
}

func (c *Console) cmdStatus(ctx context.Context, _ string) {
	st, err := c.b.Status(ctx)
	if err != nil {
		c.say("Error: " + err.Error())
		return
	}
	lines := []string{"Organism: " + st.Organism,
		"Uptime: " + clock(st.Uptime),
		fmt.Sprintf("Listeners: %d", st.Listeners),
		fmt.Sprintf("Threads: %d active, %d idle, %d slots total", st.Threads, st.Idle, st.Slots),
		fmt.Sprintf("Messages: %d processed, %d failed, %d in flight", st.Processed, st.Failed, st.InFlight)}
	for _, g := range st.Gateways {
		lines = append(lines, "Gateway "+g)
	}
	if st.Halted != "" {
		lines = append(lines, "Halted ("+st.Halted+"): queued messages wait; /resume lifts the halt.")
	}
	for _, n := range st.HaltedListeners {
		lines = append(lines, "Halted listener "+n+": its messages wait; /resume "+n+" lifts its halt.")
	}
	c.say(lines...) // one block: output arriving meanwhile goes before or after it
}

func (c *Console) cmdListeners(ctx context.Context, _ string) {
	ls, err := c.b.Listeners(ctx)
	if err != nil {
		c.say("Error: " + err.Error())
		return
	}
	lines := []string{"Listeners:"}
	for _, l := range ls {
		lines = append(lines, listenerLine(l))
	}
	c.say(lines...)
}

// listenerLine is l's line in /listeners: its name, kind, description (one
// line of printable text: Cell) and root tag.
func listenerLine(l organism.ListenerInfo) string {
	tag := ""
	if l.Agent {
		tag = "[agent] "
	}
	if l.Broadcast {
		tag += "[broadcast] "
	}
	return fmt.Sprintf("  %-20s %s%s  <%s>", l.Name, tag, Cell(l.Description), l.RootTag)
}

func (c *Console) cmdNew(_ context.Context, arg string) {
	target := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(arg), "@"))
	dropped := c.convs.forget(target)
	switch {
	case len(dropped) == 0 && target == "":
		c.say("No current conversation; the next @agent line begins one.")
	case len(dropped) == 0:
		c.say("No current conversation with " + target + "; the next @" + target + " line begins one.")
	case target == "":
		c.say("Left " + strings.Join(dropped, ", ") + "; the next @agent line begins a new conversation.")
	default:
		c.say("Left " + strings.Join(dropped, ", ") + "; the next @" + target + " line begins a new conversation.")
	}
}

func (c *Console) cmdThreads(ctx context.Context, _ string) {
	ts, err := c.b.Threads(ctx)
	if err != nil {
		c.say("Error: " + err.Error())
		return
	}
	if convs := c.convs.list(); len(convs) > 0 {
		c.say(append([]string{"Conversations (an @agent line continues its own; /new begins another):"}, convs...)...)
	}
	if len(ts) == 0 {
		c.say("No active threads.")
		return
	}
	lines := []string{"Threads:"}
	for _, t := range ts {
		last := "(empty)"
		if t.LastFrom != "" || t.LastTo != "" {
			last = t.LastFrom + " -> " + t.LastTo
		}
		if t.Ended {
			lines = append(lines, fmt.Sprintf("  %s  ended  messages=%d  idle=%s  %s", short(t.ID), t.Slots,
				clock(t.Idle), last))
			continue
		}
		lines = append(lines, fmt.Sprintf("  %s  depth=%d  slots=%d  idle=%s  %s", short(t.ID), t.Depth, t.Slots,
			clock(t.Idle), last))
	}
	c.say(lines...)
}

func (c *Console) cmdMonitor(ctx context.Context, arg string) {
	if arg == "" {
		c.say("Usage: /monitor <tid> or /monitor *")
		return
	}
	notFound := "No thread matching " + arg
	if arg == "*" {
		notFound = "No active threads."
	}
	hs, ok := c.histories(ctx, arg, notFound)
	if !ok {
		return
	}
	var lines []string
	for _, h := range hs {
		lines = append(lines, fmt.Sprintf("--- Thread %s ---", short(h.ID)))
		slots := h.Slots
		if arg == "*" && len(slots) > monitorAllSlots {
			lines = append(lines, fmt.Sprintf("  ... (%d earlier messages)", len(slots)-monitorAllSlots))
			slots = slots[len(slots)-monitorAllSlots:]
		}
		if len(slots) == 0 {
			lines = append(lines, "  (empty)")
		}
		for _, s := range slots {
			lines = append(lines, fmt.Sprintf("  [%s -> %s] %s", s.From, s.To, s.PayloadType))
		}
	}
	c.say(lines...)
}

// clock renders a duration as H:MM:SS.
func clock(d time.Duration) string {
	s := int64(d / time.Second)
	return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
}
