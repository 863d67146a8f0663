// Command images builds shardwise's container images without a container
// engine, with github.com/google/go-containerregistry, and pushes them.
//
//	images build --bin-dir DIR --out DIR --version V [--repository R] [--platform os/arch] NAME...
//	images push [--insecure] ARCHIVE [REFERENCE]
//
// build packs each static binary DIR/NAME (CGO_ENABLED=0) into an image on a
// minimal base made in the image itself (passwd and group entries for the
// non-root user 65532, /tmp, the build machine's CA bundle; no base image is
// pulled), with entrypoint /usr/local/bin/NAME and org.opencontainers.image.*
// labels, and writes it as an OCI layout tar file OUT/NAME.tar tagged
// R/NAME:V. make images runs it.
//
// push uploads such a file to a registry, as `crane push` does, with the
// credentials of `docker login` (~/.docker/config.json); REFERENCE defaults
// to the name the archive was built with.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage:
  images build --bin-dir DIR --out DIR --version V [--repository R] [--platform os/arch] [--ca-certs FILE] NAME...
  images push [--insecure] ARCHIVE [REFERENCE]
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "build":
		err = build(args[1:], stdout, stderr)
	case "push":
		err = push(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		err = fmt.Errorf("unknown command %q\n%s", args[0], usage)
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintln(stderr, "images:", err)
		return 1
	}
	return 0
}

func build(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	binDir := fs.String("bin-dir", "", "Directory of the static binaries, one per NAME.")
	out := fs.String("out", "", "Directory the OCI layout tar files are written to.")
	version := fs.String("version", "", "Image tag and org.opencontainers.image.version.")
	revision := fs.String("revision", "", "Source revision for org.opencontainers.image.revision (optional).")
	repo := fs.String("repository", "ghcr.io/shardwise", "Repository prefix; the image is <repository>/<name>:<version>.")
	platform := fs.String("platform", "linux/amd64", "OS/architecture[/variant] of the binaries.")
	caCerts := fs.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "PEM CA bundle of the build machine to install in the images.")
	created := fs.String("created", "", "Creation time (RFC 3339 or Unix seconds); default $SOURCE_DATE_EPOCH, else 1970-01-01, for reproducible digests.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *binDir == "" || *out == "" || *version == "" || fs.NArg() == 0 {
		return errors.New("build needs --bin-dir, --out, --version and at least one NAME")
	}
	plat, err := v1.ParsePlatform(*platform)
	if err != nil {
		return fmt.Errorf("--platform: %w", err)
	}
	when, err := creationTime(*created, os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		return err
	}
	ca, err := os.ReadFile(*caCerts)
	if err != nil {
		return fmt.Errorf("--ca-certs: %w", err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, n := range fs.Args() {
		bin, err := os.ReadFile(filepath.Join(*binDir, n))
		if err != nil {
			return fmt.Errorf("image %s: %w", n, err)
		}
		s := Spec{Name: n, Binary: bin, Repository: strings.TrimSuffix(*repo, "/") + "/" + n, Version: *version,
			Revision: *revision, Platform: *plat, CACerts: ca, Created: when}
		img, err := Build(s)
		if err != nil {
			return err
		}
		path := filepath.Join(*out, n+".tar")
		if err := WriteArchive(path, img, s.Ref()); err != nil {
			return err
		}
		d, err := img.Digest()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\t%s\t%s\n", path, s.Ref(), d)
	}
	return nil
}

// creationTime parses --created, else SOURCE_DATE_EPOCH, else the Unix epoch.
func creationTime(flagValue, epoch string) (time.Time, error) {
	v := flagValue
	if v == "" {
		v = epoch
	}
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Unix(secs, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("creation time %q: want RFC 3339 or Unix seconds", v)
	}
	return t.UTC(), nil
}

func push(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	fs.SetOutput(stderr)
	insecure := fs.Bool("insecure", false, "Allow a plain HTTP registry.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return errors.New("push needs ARCHIVE [REFERENCE]")
	}
	ref, err := Push(ctx, fs.Arg(0), fs.Arg(1), *insecure, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, ref)
	return nil
}

// Push uploads the image of an OCI layout tar file (WriteArchive) to ref, or
// to the reference it was built with when ref is empty, and returns the
// pushed reference with its digest.
func Push(ctx context.Context, archive, ref string, insecure bool, opts ...remote.Option) (string, error) {
	a, err := ReadArchive(archive)
	if err != nil {
		return "", err
	}
	defer a.Close()
	if ref == "" {
		ref = a.Ref
	}
	var nopts []name.Option
	if insecure {
		nopts = append(nopts, name.Insecure)
	}
	r, err := name.ParseReference(ref, nopts...)
	if err != nil {
		return "", fmt.Errorf("push %s: %w", archive, err)
	}
	if err := remote.Write(r, a.Image, append(opts, remote.WithContext(ctx))...); err != nil {
		return "", fmt.Errorf("push %s to %s: %w", archive, r, err)
	}
	d, err := a.Image.Digest()
	if err != nil {
		return "", fmt.Errorf("push %s: %w", archive, err)
	}
	return r.Context().Digest(d.String()).String(), nil
}
