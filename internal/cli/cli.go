// Package cli is what the shardwise binaries (allocator, operator,
// opamp-bridge) do between parsing their flags and running: the exit code of
// --help and of a bad flag, --version, and the logger. It writes only to the
// writers it is given.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/shardwise/shardwise/internal/log"
	"github.com/shardwise/shardwise/internal/version"
)

// Start takes the outcome of parsing binary's flags. A parse error ends the
// process with code 2 (0 for --help, whose text the flag package wrote),
// --version prints the build to stdout and ends it with 0; otherwise the
// logger is set up from opts on stderr. When done is true, the binary exits
// with code and logger is nil.
func Start(binary string, parseErr error, printVersion bool, opts *log.Options, stdout, stderr io.Writer) (logger *slog.Logger, code int, done bool) {
	switch {
	case errors.Is(parseErr, flag.ErrHelp):
		return nil, 0, true
	case parseErr != nil:
		fmt.Fprintf(stderr, "%s: %v\n", binary, parseErr)
		return nil, 2, true
	case printVersion:
		fmt.Fprintln(stdout, version.Current().String(binary))
		return nil, 0, true
	}
	logger, err := log.Setup(stderr, opts)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", binary, err)
		return nil, 2, true
	}
	return logger, 0, false
}
