// Package command is what the benchmark commands (cmd/...) share around
// their flags: a flag set that writes to the command's stderr, and the exit
// code of -h and of a bad flag.
package command

import (
	"errors"
	"flag"
	"io"
)

// FlagSet returns an empty flag set for the command name that writes its
// usage and errors to stderr and returns parse errors instead of exiting.
func FlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// Parse parses args into fs. When ok is false the command ends with code:
// 0 after -h or -help, 2 for a bad flag; fs has written the usage or the
// error.
func Parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		return 0, false
	default:
		return 2, false
	}
}
