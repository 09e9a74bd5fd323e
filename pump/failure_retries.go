package pump

import "fmt"

// MaxErrorHandlerRetries is how many times in a row an agent's error handler
// hears the refusal of its own output on one thread (a <huh> or SystemError
// about what it sent or answered while handling an error). Its model may
// correct itself — an LLM agent is also bounded by max_iterations — but a
// hand-written one that sends the same refused output again would hear it
// for ever: past this many, its refused output is a dead letter saying so,
// and the conversation ends when nothing else is in flight. A plain
// listener's error handler never hears of its refused output (0 retries).
const MaxErrorHandlerRetries = 3

// quietOutput reports whether a refusal of what l sends handling d is a
// dead letter rather than a <huh> to l: d is an error for a plain
// listener's error handler, which would answer the <huh> again, for ever,
// or for an agent's whose own output was refused MaxErrorHandlerRetries
// times in a row. Below that an agent hears it: its model may correct
// itself.
func (d *delivery) quietOutput(l *listener) bool {
	return d.errPayload != nil && (!l.Agent || d.errRound >= MaxErrorHandlerRetries)
}

// outRound is the errRound of what l's handler sends handling d: for an
// error handler, one more than the refusals in a row that led to d; 0
// otherwise.
func (d *delivery) outRound() int {
	if d.errPayload == nil {
		return 0
	}
	return d.errRound + 1
}

// errOutputRefused is the dead-letter reason for output of l's error
// handler refused with err, round being its work's errRound.
func errOutputRefused(l *listener, round int, err error) string {
	if l.Agent {
		return fmt.Sprintf("error handler output refused %d times in a row (max %d retries), not told again: %v",
			round, MaxErrorHandlerRetries, err)
	}
	return "error handler output refused: " + err.Error()
}
