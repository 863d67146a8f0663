package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/require"
)

// hello is a small program standing in for a shardwise binary: like them it
// parses flags and exits 0 on --help.
const hello = `package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	fs := flag.NewFlagSet("hello", flag.ContinueOnError)
	fs.String("greeting", "hello", "What to say.")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			os.Exit(0)
		}
		os.Exit(2)
	}
	fmt.Println("hello")
}
`

// buildHello compiles hello as a static binary for this machine.
func buildHello(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(hello), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.26\n"), 0o600))
	cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-o", "hello", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build hello: %s", out)
	b, err := os.ReadFile(filepath.Join(dir, "hello"))
	require.NoError(t, err)
	return b
}

var testCA = []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")

func helloSpec(t *testing.T) Spec {
	t.Helper()
	return Spec{
		Name: "hello", Binary: buildHello(t), Repository: "registry.example/shardwise/hello", Version: "v9.8.7",
		Revision: "abc123", Platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH}, CACerts: testCA,
		Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

// TestBuildWriteRead builds an image from a small static binary, writes it
// as an OCI layout archive, reads it back and checks what a runtime uses.
func TestBuildWriteRead(t *testing.T) {
	t.Parallel()
	s := helloSpec(t)
	img, err := Build(s)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "hello.tar")
	require.NoError(t, WriteArchive(path, img, s.Ref()))

	a, err := ReadArchive(path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	require.Equal(t, "registry.example/shardwise/hello:v9.8.7", a.Ref)
	want, err := img.Digest()
	require.NoError(t, err)
	got, err := a.Image.Digest()
	require.NoError(t, err)
	require.Equal(t, want, got, "the archive holds the built image")

	checkImage(t, a.Image, "hello", "v9.8.7", runtime.GOARCH)
	cf, err := a.Image.ConfigFile()
	require.NoError(t, err)
	require.Equal(t, "abc123", cf.Config.Labels["org.opencontainers.image.revision"])
	require.Equal(t, "2026-01-02T03:04:05Z", cf.Config.Labels["org.opencontainers.image.created"])

	fsys := flatten(t, a.Image)
	require.Equal(t, testCA, fsys["etc/ssl/certs/ca-certificates.crt"].data)
	require.Equal(t, s.Binary, fsys["usr/local/bin/hello"].data)
	out := runExtracted(t, fsys["usr/local/bin/hello"].data, "--help")
	require.Contains(t, out, "-greeting")
}

// TestReproducible: the same inputs give the same digest.
func TestReproducible(t *testing.T) {
	t.Parallel()
	s := helloSpec(t)
	a, err := Build(s)
	require.NoError(t, err)
	b, err := Build(s)
	require.NoError(t, err)
	da, err := a.Digest()
	require.NoError(t, err)
	db, err := b.Digest()
	require.NoError(t, err)
	require.Equal(t, da, db)

	s.Version = "v9.8.8"
	c, err := Build(s)
	require.NoError(t, err)
	dc, err := c.Digest()
	require.NoError(t, err)
	require.NotEqual(t, da, dc, "the version is in the labels")
}

func TestBuildRefusesBadSpecs(t *testing.T) {
	t.Parallel()
	ok := Spec{Name: "x", Binary: []byte{1}, Repository: "r/x", Version: "v1", Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, CACerts: testCA}
	for name, mutate := range map[string]func(*Spec){
		"no name":     func(s *Spec) { s.Name = "" },
		"slash name":  func(s *Spec) { s.Name = "a/b" },
		"no binary":   func(s *Spec) { s.Binary = nil },
		"no version":  func(s *Spec) { s.Version = "" },
		"no platform": func(s *Spec) { s.Platform = v1.Platform{} },
		"no CA":       func(s *Spec) { s.CACerts = nil },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := ok
			mutate(&s)
			_, err := Build(s)
			require.Error(t, err)
		})
	}
	_, err := Build(ok)
	require.NoError(t, err)
}

// TestPush pushes an archive to an in-process registry (the library's
// registry package) and pulls it back by the printed digest.
func TestPush(t *testing.T) {
	t.Parallel()
	s := helloSpec(t)
	img, err := Build(s)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "hello.tar")
	require.NoError(t, WriteArchive(path, img, s.Ref()))

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"push", "--insecure", path, u.Host + "/shardwise/hello:v9.8.7"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	pushed := strings.TrimSpace(stdout.String())
	want, err := img.Digest()
	require.NoError(t, err)
	require.Equal(t, u.Host+"/shardwise/hello@"+want.String(), pushed)

	for _, ref := range []string{pushed, u.Host + "/shardwise/hello:v9.8.7"} {
		r, err := name.ParseReference(ref, name.Insecure)
		require.NoError(t, err)
		got, err := remote.Image(r, remote.WithContext(t.Context()))
		require.NoError(t, err)
		d, err := got.Digest()
		require.NoError(t, err)
		require.Equal(t, want, d, ref)
	}

	code = run(t.Context(), []string{"push", "--insecure", filepath.Join(t.TempDir(), "none.tar")}, &stdout, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, stderr.String(), "none.tar")
}

// TestBuildCommand runs `images build` as make images does.
func TestBuildCommand(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "hello"), buildHello(t), 0o755))
	ca := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(ca, testCA, 0o600))
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"build", "--bin-dir", bin, "--out", out, "--version", "v1.2.3", "--repository", "example.com/sw",
		"--platform", "linux/" + runtime.GOARCH, "--ca-certs", ca, "--created", "1700000000", "hello"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.Contains(t, stdout.String(), "example.com/sw/hello:v1.2.3")
	a, err := ReadArchive(filepath.Join(out, "hello.tar"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	require.Equal(t, "example.com/sw/hello:v1.2.3", a.Ref)
	checkImage(t, a.Image, "hello", "v1.2.3", runtime.GOARCH)

	for _, args := range [][]string{
		{"build", "--out", out, "hello"},
		{"build", "--bin-dir", bin, "--out", out, "--version", "v1", "--platform", "linux/" + runtime.GOARCH, "--ca-certs", ca, "missing"},
		{"build", "--bin-dir", bin, "--out", out, "--version", "v1", "--created", "yesterday", "--ca-certs", ca, "hello"},
		{"nope"},
	} {
		stderr.Reset()
		require.NotEqual(t, 0, run(t.Context(), args, &stdout, &stderr), "%v", args)
		require.NotEmpty(t, stderr.String(), "%v says why", args)
	}
}

// TestMadeImages checks the images make images wrote (SHARDWISE_IMAGES_DIR,
// with SHARDWISE_VERSION): each is the real binary, static, and runs --help.
func TestMadeImages(t *testing.T) {
	t.Parallel()
	dir, version := os.Getenv("SHARDWISE_IMAGES_DIR"), os.Getenv("SHARDWISE_VERSION")
	if dir == "" || version == "" {
		t.Skip("SHARDWISE_IMAGES_DIR and SHARDWISE_VERSION are not set: run make test-images")
	}
	for _, n := range []string{"allocator", "operator", "opamp-bridge"} {
		t.Run(n, func(t *testing.T) {
			t.Parallel()
			a, err := ReadArchive(filepath.Join(dir, n+".tar"))
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, a.Close()) })
			require.Equal(t, "ghcr.io/shardwise/"+n+":"+version, a.Ref)
			cf, err := a.Image.ConfigFile()
			require.NoError(t, err)
			checkImage(t, a.Image, n, version, cf.Architecture)
			fsys := flatten(t, a.Image)
			bin := fsys["usr/local/bin/"+n].data
			ef, err := elf.NewFile(bytes.NewReader(bin))
			require.NoError(t, err, "%s is an ELF binary", n)
			for _, p := range ef.Progs {
				require.NotEqual(t, elf.PT_INTERP, p.Type, "%s is static (CGO_ENABLED=0): no program interpreter", n)
			}
			if cf.Architecture != runtime.GOARCH {
				t.Skipf("image is for %s, this machine is %s: not running it", cf.Architecture, runtime.GOARCH)
			}
			out := runExtracted(t, bin, "--help")
			require.Contains(t, out, helpFlag[n], "%s --help prints its flags", n)
		})
	}
}

// helpFlag is a flag each binary's --help lists.
var helpFlag = map[string]string{
	"allocator":    "-config-file",
	"operator":     "-webhook-cert-management",
	"opamp-bridge": "-config-file",
}

// checkImage checks the config and manifest every shardwise image has.
func checkImage(t *testing.T, img v1.Image, bin, version, arch string) {
	t.Helper()
	mt, err := img.MediaType()
	require.NoError(t, err)
	require.Equal(t, types.OCIManifestSchema1, mt)
	m, err := img.Manifest()
	require.NoError(t, err)
	require.Equal(t, types.OCIConfigJSON, m.Config.MediaType)
	require.Len(t, m.Layers, 2, "base and binary")
	for _, l := range m.Layers {
		require.Equal(t, types.OCILayer, l.MediaType)
	}
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	require.Equal(t, "linux", cf.OS)
	require.Equal(t, arch, cf.Architecture)
	require.Equal(t, []string{"/usr/local/bin/" + bin}, cf.Config.Entrypoint)
	require.Equal(t, "65532:65532", cf.Config.User)
	require.Contains(t, cf.Config.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt")
	require.Equal(t, version, cf.Config.Labels["org.opencontainers.image.version"])
	require.Equal(t, "shardwise "+bin, cf.Config.Labels["org.opencontainers.image.title"])
	require.NotEmpty(t, cf.Config.Labels["org.opencontainers.image.description"])
	require.NotEmpty(t, cf.Config.Labels["org.opencontainers.image.source"])
	require.NotEmpty(t, cf.Config.Labels["org.opencontainers.image.created"])

	fsys := flatten(t, img)
	require.Contains(t, string(fsys["etc/passwd"].data), "nonroot:x:65532:65532:")
	require.Contains(t, string(fsys["etc/group"].data), "nonroot:x:65532:")
	tmp := fsys["tmp"]
	require.Equal(t, byte(tar.TypeDir), tmp.typ)
	require.Equal(t, int64(0o1777), tmp.mode, "/tmp is world-writable with the sticky bit")
	require.Equal(t, 65532, fsys["home/nonroot"].uid)
	ep := fsys["usr/local/bin/"+bin]
	require.Equal(t, int64(0o755), ep.mode)
	require.NotEmpty(t, ep.data)
	require.NotEmpty(t, fsys["etc/ssl/certs/ca-certificates.crt"].data)
}

type entry struct {
	typ  byte
	mode int64
	uid  int
	data []byte
}

// flatten reads the image's file system (mutate.Extract: later layers win),
// keyed by path without a leading or trailing slash.
func flatten(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]entry{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		out[strings.TrimSuffix(h.Name, "/")] = entry{typ: h.Typeflag, mode: h.Mode, uid: h.Uid, data: b}
	}
}

// runExtracted writes an image's binary to disk and runs it.
func runExtracted(t *testing.T, bin []byte, args ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bin")
	require.NoError(t, os.WriteFile(path, bin, 0o755))
	out, err := exec.CommandContext(t.Context(), path, args...).CombinedOutput()
	require.NoError(t, err, "%s %v: %s", path, args, out)
	return string(out)
}
