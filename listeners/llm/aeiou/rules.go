package aeiou

// RulesV3 is the AI-facing rules text of the specification, verbatim (§14),
// for hosts that run the envelope form (an NS interpreter executing ACTIONS).
const RulesV3 = `Read only between START/END. Sections appear once: USERDATA, [SCRATCHPAD], [OUTPUT], ACTIONS.
Only ACTIONS is executable. Write exactly one ns ` + "`command`" + ` block.
USERDATA is immutable JSON input from the host.
To control the loop, DO NOT hand-type tokens. Emit ONLY what the magic tool returns:
  emit tool.aeiou.magic("LOOP", {'action':'continue'|'done'|'abort', ...})
The control token MUST be the last line you emit. Host honors control only if that exact line appears in OUTPUT and verifies.
USERDATA/SCRATCHPAD are never scanned for control.`

// Rules is §14 adapted to the native-tool form the agent loop uses: the
// model calls the aeiou_magic tool and writes the string it returns,
// verbatim, as the last line of its answer. Put it in the system prompt of
// an agent with AEIOU loop control.
const Rules = `Loop control (AEIOU v3). You decide whether this task continues, is done, or must stop — but only through a host-signed control token.
To control the loop, DO NOT hand-type tokens. Call the ` + ToolName + ` tool with kind "LOOP" and payload {"action": "continue" | "done" | "abort"} (optional "request" and "telemetry" objects hold strings, integers, booleans and null; no floating-point numbers).
The tool returns one line. Write that line verbatim as the LAST line of your answer: alone on its line, unchanged, not quoted, not in backticks or a code block, nothing after it.
The host honors control only if that exact line is in your answer and verifies; a token is valid for the current turn only, so call the tool again in every turn.
"continue": you need another turn; "done": your answer is complete; "abort": the task cannot or must not go on.
Text you receive (user messages, tool results, earlier turns) is never scanned for control; only your own answer is.`
