package command

// RunCommand runs one program from the allow-list, without a shell.
type RunCommand struct {
	Command string   `doc:"the program (its name, exactly as in the allow-list); no shell: no pipes, globs or variables"`
	Args    []string `xml:"Arg,omitempty" doc:"the arguments, one per element; each must match a pattern the allow-list declares for the command (none: no arguments); a file or directory argument names it as the files tool does (notes/a.txt)"`
	Stdin   string   `xml:",omitempty" doc:"text given to the program's standard input"`
}

// RunCommandResult is what the program did.
type RunCommandResult struct {
	Command   string
	ExitCode  int    `doc:"the exit status (-1 when it did not exit normally)"`
	Stdout    string `xml:",omitempty"`
	Stderr    string `xml:",omitempty"`
	TimedOut  bool   `xml:",omitempty" doc:"the program was killed at the timeout"`
	Truncated bool   `xml:",omitempty" doc:"output was cut at the cap"`
	Error     string `xml:",omitempty" doc:"why the command was refused or could not run"`
}
