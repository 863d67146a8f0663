package log

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"k8s.io/klog/v2"
)

// The log formats.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// klogDebugVerbosity is the klog verbosity enabled at the debug level: 4 is
// "debug level verbosity" in the Kubernetes logging conventions. Below debug,
// klog's V(1) and higher stay off.
const klogDebugVerbosity = "4"

// Options are the logging settings. Level and Format hold the defaults until
// flags registered by AddFlags are parsed; read the effective values with
// EffectiveLevel and EffectiveFormat.
type Options struct {
	// Level is the least level written.
	Level slog.Level
	// Format is FormatText or FormatJSON.
	Format string

	levelSet, formatSet bool
	zap                 zapOptions
}

// zapOptions are controller-runtime's zap flags as the upstream programs
// take them; each set flag is already translated into our terms.
type zapOptions struct {
	level     slog.Level
	levelSet  bool
	format    string
	formatSet bool
	devel     bool
}

// AddFlags registers --log-level and --log-format, with o's Level and Format
// as defaults, and the upstream zap flags mapped onto them. Invalid values
// fail the parse with a message naming the flag.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	if o.Format == "" {
		o.Format = FormatText
	}
	fs.Var(levelFlag{o}, "log-level", "Log `level`: debug, info, warn or error. debug also turns on client-go's verbose (V(4)) messages.")
	fs.Var(formatFlag{o}, "log-format", "Log `format`: text or json.")
	fs.Func("zap-log-level", "Upstream compatibility: debug, info, error, panic or a verbosity number; sets --log-level unless it is given.", func(v string) error {
		l, err := zapLevel(v)
		if err != nil {
			return err
		}
		o.zap.level, o.zap.levelSet = l, true
		return nil
	})
	fs.Func("zap-encoder", "Upstream compatibility: console or json; sets --log-format (console is text) unless it is given.", func(v string) error {
		switch strings.ToLower(v) {
		case "console":
			o.zap.format = FormatText
		case FormatJSON:
			o.zap.format = FormatJSON
		default:
			return fmt.Errorf("want console or json, got %q", v)
		}
		o.zap.formatSet = true
		return nil
	})
	fs.BoolFunc("zap-devel", "Upstream compatibility: debug level and text format unless set otherwise.", func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want a boolean, got %q", v)
		}
		o.zap.devel = b
		return nil
	})
	fs.Func("zap-stacktrace-level", "Upstream compatibility: accepted and ignored.", func(string) error { return nil })
	fs.Func("zap-time-encoding", "Upstream compatibility: accepted and ignored.", func(string) error { return nil })
}

// zapLevel translates a zap level: zap's numeric levels count verbosity
// upwards (1 and more are debug and beyond), panic and fatal are logged as
// errors.
func zapLevel(v string) (slog.Level, error) {
	switch strings.ToLower(v) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "0":
		return slog.LevelInfo, nil
	case "error", "dpanic", "panic", "fatal":
		return slog.LevelError, nil
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return slog.LevelDebug, nil
	}
	return 0, fmt.Errorf("want debug, info, error, panic or a number, got %q", v)
}

// EffectiveLevel is --log-level if given, else what the zap flags say, else
// the default.
func (o *Options) EffectiveLevel() slog.Level {
	switch {
	case o.levelSet:
		return o.Level
	case o.zap.levelSet:
		return o.zap.level
	case o.zap.devel:
		return slog.LevelDebug
	}
	return o.Level
}

// EffectiveFormat is --log-format if given, else what the zap flags say, else
// the default.
func (o *Options) EffectiveFormat() string {
	switch {
	case o.formatSet:
		return o.Format
	case o.zap.formatSet:
		return o.zap.format
	case o.zap.devel:
		return FormatText
	}
	return o.Format
}

// Handler returns the slog handler the options describe, writing to w.
func (o *Options) Handler(w io.Writer) (slog.Handler, error) {
	hopts := &slog.HandlerOptions{Level: o.EffectiveLevel()}
	switch f := o.EffectiveFormat(); f {
	case FormatText:
		return slog.NewTextHandler(w, hopts), nil
	case FormatJSON:
		return slog.NewJSONHandler(w, hopts), nil
	default:
		return nil, fmt.Errorf("log format: want text or json, got %q", f)
	}
}

// Setup returns the logger the options describe, writing to w, and makes it
// the destination of klog (client-go's logger) too. Call it once, before
// anything logs: klog's settings are process-wide.
func Setup(w io.Writer, o *Options) (*slog.Logger, error) {
	h, err := o.Handler(w)
	if err != nil {
		return nil, err
	}
	logger := slog.New(h)
	verbosity := "0"
	if o.EffectiveLevel() <= slog.LevelDebug {
		verbosity = klogDebugVerbosity
	}
	klogMu.Lock()
	defer klogMu.Unlock()
	var kfs flag.FlagSet
	klog.InitFlags(&kfs)
	if err := kfs.Set("v", verbosity); err != nil {
		return nil, fmt.Errorf("set klog verbosity: %w", err)
	}
	klog.SetSlogLogger(logger)
	return logger, nil
}

// klogMu serializes Setup's changes to klog's process-wide settings (tests
// of the binaries run several in parallel).
var klogMu sync.Mutex

// levelFlag is the flag.Value of --log-level.
type levelFlag struct{ o *Options }

func (f levelFlag) String() string {
	if f.o == nil {
		return ""
	}
	return strings.ToLower(f.o.Level.String())
}

func (f levelFlag) Set(v string) error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(v)); err != nil {
		return fmt.Errorf("want debug, info, warn or error, got %q", v)
	}
	f.o.Level, f.o.levelSet = l, true
	return nil
}

// formatFlag is the flag.Value of --log-format.
type formatFlag struct{ o *Options }

func (f formatFlag) String() string {
	if f.o == nil {
		return ""
	}
	return f.o.Format
}

func (f formatFlag) Set(v string) error {
	switch v = strings.ToLower(v); v {
	case FormatText, FormatJSON:
		f.o.Format, f.o.formatSet = v, true
		return nil
	}
	return fmt.Errorf("want text or json, got %q", v)
}
