package console

// pythonCommands are the Python consoles' commands that have no
// counterpart here, each with what to do instead: a migrating user who
// types one learns that, rather than "Unknown command".
var pythonCommands = map[string]string{
	"restart": "reload organism.yaml in place (xmlpipe run: kill -HUP <pid>, or POST /api/v1/organism/reload), " +
		"or stop the organism and start it again.",
	"attach": "this console stays attached until /quit, and xmlpipe console --connect URL attaches to a running organism.",
	"detach": "this console stays attached until /quit, and xmlpipe console --connect URL attaches to a running organism.",
	"passwd": "the console has no password; a bus user's is changed with xmlpipe users passwd NAME (organism stopped).",
	"pause": "/halt stops every agent (/resume lifts it); an admin pauses one listener with " +
		"POST /api/v1/agents/NAME/pause.",
	"configure": "edit organism.yaml (an agent is an entry of listeners:) in your editor, then reload it (/config says how).",
}

// pythonCommand answers a Python console command that has no counterpart
// (see pythonCommands); it reports false for any other name.
func (c *Console) pythonCommand(name string) bool {
	instead, ok := pythonCommands[name]
	if ok {
		c.say("/" + name + " is the Python console's; xmlpipe has none: " + instead)
	}
	return ok
}
