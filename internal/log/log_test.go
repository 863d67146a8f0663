package log

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
)

func TestFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		defaults Options
		args     []string
		level    slog.Level
		format   string
		err      string // a substring of the parse error; empty for none
	}{
		{name: "defaults", level: slog.LevelInfo, format: FormatText},
		{name: "binary's defaults", defaults: Options{Level: slog.LevelWarn, Format: FormatJSON}, level: slog.LevelWarn, format: FormatJSON},
		{name: "ours", args: []string{"--log-level=debug", "--log-format=json"}, level: slog.LevelDebug, format: FormatJSON},
		{name: "case-insensitive", args: []string{"--log-level=WARN", "--log-format=JSON"}, level: slog.LevelWarn, format: FormatJSON},
		{name: "error level", args: []string{"--log-level=error"}, level: slog.LevelError, format: FormatText},
		{name: "zap debug json", args: []string{"--zap-log-level=debug", "--zap-encoder=json"}, level: slog.LevelDebug, format: FormatJSON},
		{name: "zap verbosity", args: []string{"--zap-log-level=3"}, level: slog.LevelDebug, format: FormatText},
		{name: "zap zero", args: []string{"--zap-log-level=0"}, level: slog.LevelInfo, format: FormatText},
		{name: "zap panic", args: []string{"--zap-log-level=panic"}, level: slog.LevelError, format: FormatText},
		{name: "zap console over json default", defaults: Options{Format: FormatJSON}, args: []string{"--zap-encoder=console"}, level: slog.LevelInfo, format: FormatText},
		{name: "zap devel", defaults: Options{Format: FormatJSON}, args: []string{"--zap-devel"}, level: slog.LevelDebug, format: FormatText},
		{name: "zap devel false", defaults: Options{Format: FormatJSON}, args: []string{"--zap-devel=false"}, level: slog.LevelInfo, format: FormatJSON},
		{name: "zap ignored flags", args: []string{"--zap-stacktrace-level=error", "--zap-time-encoding=iso8601"}, level: slog.LevelInfo, format: FormatText},
		{
			name:  "ours win in any order",
			args:  []string{"--log-level=warn", "--zap-log-level=debug", "--zap-encoder=json", "--log-format=text", "--zap-devel"},
			level: slog.LevelWarn, format: FormatText,
		},
		{name: "bad level", args: []string{"--log-level=loud"}, err: "-log-level"},
		{name: "bad format", args: []string{"--log-format=xml"}, err: "-log-format"},
		{name: "bad zap level", args: []string{"--zap-log-level=loud"}, err: "-zap-log-level"},
		{name: "bad zap encoder", args: []string{"--zap-encoder=xml"}, err: "-zap-encoder"},
		{name: "bad zap devel", args: []string{"--zap-devel=maybe"}, err: "-zap-devel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := tc.defaults
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o.AddFlags(fs)
			err := fs.Parse(tc.args)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.level, o.EffectiveLevel())
			require.Equal(t, tc.format, o.EffectiveFormat())
			_, err = o.Handler(io.Discard)
			require.NoError(t, err)
		})
	}
}

func TestHelpShowsDefaults(t *testing.T) {
	t.Parallel()
	o := Options{Format: FormatJSON}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var help bytes.Buffer
	fs.SetOutput(&help)
	o.AddFlags(fs)
	fs.PrintDefaults()
	require.Contains(t, help.String(), "-log-format format\n")
	require.Contains(t, help.String(), "(default json)")
	require.Contains(t, help.String(), "(default info)")
}

func TestHandlerFormats(t *testing.T) {
	t.Parallel()
	for format, want := range map[string]string{
		FormatJSON: `{"time":`,
		FormatText: `time=`,
	} {
		o := Options{Format: format}
		var buf bytes.Buffer
		h, err := o.Handler(&buf)
		require.NoError(t, err)
		slog.New(h).Info("hello", "k", "v")
		require.Truef(t, bytes.HasPrefix(buf.Bytes(), []byte(want)), "%s: %s", format, buf.String())
	}
	_, err := (&Options{Format: "xml"}).Handler(io.Discard)
	require.ErrorContains(t, err, `"xml"`)
}

// TestSetupRoutesKlog changes klog's process-wide logger, so it is not
// parallel and restores klog when done.
func TestSetupRoutesKlog(t *testing.T) { //nolint:paralleltest // klog's logger is process-wide
	t.Cleanup(func() {
		klog.ClearLogger()
		var kfs flag.FlagSet
		klog.InitFlags(&kfs)
		require.NoError(t, kfs.Set("v", "0"))
	})
	for _, tc := range []struct {
		level string
		want  []string // messages, in order
	}{
		{"info", []string{"klog info", "klog error"}},
		{"debug", []string{"klog info", "klog verbose", "klog error"}},
		{"error", []string{"klog error"}},
	} {
		t.Run(tc.level, func(t *testing.T) {
			o := Options{Format: FormatJSON}
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			o.AddFlags(fs)
			require.NoError(t, fs.Parse([]string{"--log-level=" + tc.level}))
			var buf bytes.Buffer
			_, err := Setup(&buf, &o)
			require.NoError(t, err)

			klog.InfoS("klog info", "pod", "a")
			klog.V(4).InfoS("klog verbose", "pod", "b")
			klog.V(5).InfoS("klog too verbose")
			klog.ErrorS(errors.New("boom"), "klog error", "pod", "c")
			klog.Flush()

			var got []string
			sc := bufio.NewScanner(&buf)
			for sc.Scan() {
				var rec map[string]any
				require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), sc.Text())
				got = append(got, rec["msg"].(string))
				switch rec["msg"] {
				case "klog info":
					require.Equal(t, "INFO", rec["level"])
					require.Equal(t, "a", rec["pod"])
				case "klog error":
					require.Equal(t, "ERROR", rec["level"])
					require.Equal(t, "boom", rec["err"])
				}
			}
			require.Equal(t, tc.want, got)
		})
	}
}
