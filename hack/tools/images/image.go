package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user every image runs as: distroless' "nonroot", which the chart's
// runAsUser and Kubernetes' restricted pod security standard expect.
const (
	uid      = 65532
	userName = "nonroot"
	// binDir is where the binary goes; the entrypoint is binDir/<name>.
	binDir = "/usr/local/bin"
	// caPath is where Go's crypto/x509 looks first on Linux.
	caPath = "/etc/ssl/certs/ca-certificates.crt"
)

// Annotations of the OCI layout's index, naming the image for tools that
// load it: the OCI tag, and the full reference containerd and podman use.
const (
	annotationRefName        = "org.opencontainers.image.ref.name"
	annotationContainerdName = "io.containerd.image.name"
)

// Spec describes one image.
type Spec struct {
	// Name is the binary's name (allocator, operator, opamp-bridge).
	Name string
	// Binary is the static executable (CGO_ENABLED=0) for Platform.
	Binary []byte
	// Repository is the image repository without tag, e.g. ghcr.io/shardwise/operator.
	Repository string
	// Version tags the image and goes into its labels.
	Version string
	// Revision is the source revision (a git commit) for the labels; optional.
	Revision string
	// Platform is the binary's OS and architecture.
	Platform v1.Platform
	// CACerts is the PEM bundle installed at /etc/ssl/certs/ca-certificates.crt.
	CACerts []byte
	// Created is the image's creation time, also every file's mtime, so that
	// the same inputs give the same digest.
	Created time.Time
}

// Ref is the image's reference: repository:version.
func (s Spec) Ref() string { return s.Repository + ":" + s.Version }

func (s Spec) validate() error {
	var errs []error
	if s.Name == "" || strings.ContainsAny(s.Name, "/ ") {
		errs = append(errs, fmt.Errorf("name %q: want a binary name", s.Name))
	}
	if len(s.Binary) == 0 {
		errs = append(errs, errors.New("no binary"))
	}
	if s.Repository == "" || s.Version == "" {
		errs = append(errs, errors.New("repository and version are required"))
	}
	if s.Platform.OS == "" || s.Platform.Architecture == "" {
		errs = append(errs, errors.New("platform needs an OS and an architecture"))
	}
	if len(s.CACerts) == 0 {
		errs = append(errs, errors.New("no CA certificates"))
	}
	return errors.Join(errs...)
}

// Labels are the image's org.opencontainers.image.* labels.
func (s Spec) Labels() map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "shardwise " + s.Name,
		"org.opencontainers.image.description": descriptions[s.Name],
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.created":     s.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.source":      "https://github.com/shardwise/shardwise",
		"org.opencontainers.image.vendor":      "shardwise",
		"org.opencontainers.image.ref.name":    s.Version,
	}
	if s.Revision != "" {
		l["org.opencontainers.image.revision"] = s.Revision
	}
	if l["org.opencontainers.image.description"] == "" {
		l["org.opencontainers.image.description"] = "shardwise " + s.Name
	}
	return l
}

var descriptions = map[string]string{
	"allocator":    "Prometheus target allocator for OpenTelemetry Collectors (drop-in for the OpenTelemetry Operator's).",
	"operator":     "Kubernetes operator for OpenTelemetryCollector, TargetAllocator, OpAMPBridge and Instrumentation resources.",
	"opamp-bridge": "OpAMP bridge between OpenTelemetryCollector resources and an OpAMP server.",
}

// Build builds the image: a base layer made here (passwd and group entries
// for the non-root user, /tmp, the CA bundle; no base image is pulled) and a
// layer with the binary, with an OCI manifest and config.
func Build(s Spec) (v1.Image, error) {
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("image %s: %w", s.Name, err)
	}
	base, err := layer(s.Created, baseFiles(s.CACerts))
	if err != nil {
		return nil, fmt.Errorf("image %s: base layer: %w", s.Name, err)
	}
	bin, err := layer(s.Created, []file{
		{name: "usr/", mode: fs.ModeDir | 0o755},
		{name: "usr/local/", mode: fs.ModeDir | 0o755},
		{name: "usr/local/bin/", mode: fs.ModeDir | 0o755},
		{name: strings.TrimPrefix(binDir, "/") + "/" + s.Name, mode: 0o755, data: s.Binary},
	})
	if err != nil {
		return nil, fmt.Errorf("image %s: binary layer: %w", s.Name, err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: s.Created}, CreatedBy: "shardwise images: base (passwd, group, /tmp, CA certificates)"}},
		mutate.Addendum{Layer: bin, History: v1.History{Created: v1.Time{Time: s.Created}, CreatedBy: "shardwise images: " + binDir + "/" + s.Name}},
	)
	if err != nil {
		return nil, fmt.Errorf("image %s: append layers: %w", s.Name, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image %s: config: %w", s.Name, err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = s.Platform.OS, s.Platform.Architecture, s.Platform.Variant
	cf.Created = v1.Time{Time: s.Created}
	cf.Author = "shardwise"
	cf.Config = v1.Config{
		Entrypoint: []string{binDir + "/" + s.Name},
		User:       fmt.Sprintf("%d:%d", uid, uid),
		WorkingDir: "/home/" + userName,
		Env: []string{
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"SSL_CERT_FILE=" + caPath,
			"HOME=/home/" + userName,
		},
		Labels: s.Labels(),
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image %s: set config: %w", s.Name, err)
	}
	return img, nil
}

// baseFiles is a minimal root file system for static Go binaries.
func baseFiles(caCerts []byte) []file {
	home := "home/" + userName + "/"
	return []file{
		{name: "etc/", mode: fs.ModeDir | 0o755},
		{name: "etc/passwd", mode: 0o644, data: fmt.Appendf(nil,
			"root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:/%s:/sbin/nologin\n", userName, uid, uid, userName, strings.TrimSuffix(home, "/"))},
		{name: "etc/group", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:\n%s:x:%d:\n", userName, uid)},
		// Go's resolver reads it to order files and DNS.
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/ssl/", mode: fs.ModeDir | 0o755},
		{name: "etc/ssl/certs/", mode: fs.ModeDir | 0o755},
		{name: strings.TrimPrefix(caPath, "/"), mode: 0o644, data: caCerts},
		{name: "home/", mode: fs.ModeDir | 0o755},
		{name: home, mode: fs.ModeDir | 0o700, uid: uid},
		{name: "root/", mode: fs.ModeDir | 0o700},
		{name: "tmp/", mode: fs.ModeDir | fs.ModeSticky | 0o777},
	}
}

// file is one tar entry of a layer.
type file struct {
	name string
	mode fs.FileMode
	data []byte
	uid  int
}

// layer is a gzipped OCI layer of files, with every mtime
// set to t so that the digest depends on the contents only.
func layer(t time.Time, files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name: f.name, Mode: int64(f.mode.Perm()), Uid: f.uid, Gid: f.uid, ModTime: t,
			Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(f.data)),
		}
		if f.mode&fs.ModeSticky != 0 {
			h.Mode |= 0o1000
		}
		if f.mode.IsDir() {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("tar %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("tar: %w", err)
	}
	// The library gzips it without a time or name in the gzip header, so the
	// digest stays reproducible.
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return l, nil
}

// WriteArchive writes img as an OCI image layout (oci-layout, index.json,
// blobs/) packed in a tar file at path, the format `skopeo copy
// oci-archive:`, `podman load` and this tool's push read. The index names
// the image with ref (repository:tag).
func WriteArchive(path string, img v1.Image, ref string) error {
	dir, err := os.MkdirTemp("", "shardwise-oci-")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("write %s: layout: %w", path, err)
	}
	tag := ref[strings.LastIndex(ref, ":")+1:]
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{annotationRefName: tag, annotationContainerdName: ref})); err != nil {
		return fmt.Errorf("write %s: layout: %w", path, err)
	}
	if err := tarDir(dir, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// tarDir packs dir into a tar file at out with sorted entries, zero times
// and root ownership, so that the archive is reproducible.
func tarDir(dir, out string) error {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			names = append(names, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(names)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, p := range names {
		st, err := os.Stat(p)
		if err != nil {
			return errors.Join(err, f.Close())
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return errors.Join(err, f.Close())
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: time.Unix(0, 0), Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: st.Size()}
		if st.IsDir() {
			h.Name, h.Mode, h.Typeflag, h.Size = h.Name+"/", 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return errors.Join(err, f.Close())
		}
		if !st.IsDir() {
			if err := copyFile(tw, p); err != nil {
				return errors.Join(err, f.Close())
			}
		}
	}
	if err := tw.Close(); err != nil {
		return errors.Join(err, f.Close())
	}
	return f.Close()
}

func copyFile(w io.Writer, p string) error {
	in, err := os.Open(p)
	if err != nil {
		return err
	}
	defer in.Close()
	_, err = io.Copy(w, in)
	return err
}

// Archive is an OCI layout read back from WriteArchive's tar file.
type Archive struct {
	// Image is the layout's one image.
	Image v1.Image
	// Ref is the reference the index names it with (io.containerd.image.name).
	Ref string
	dir string
}

// Close removes the unpacked layout.
func (a *Archive) Close() error { return os.RemoveAll(a.dir) }

// ReadArchive unpacks an OCI layout tar file and returns its one image.
func ReadArchive(path string) (*Archive, error) {
	dir, err := os.MkdirTemp("", "shardwise-oci-")
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	a := &Archive{dir: dir}
	if err := untar(path, dir); err != nil {
		return nil, errors.Join(fmt.Errorf("read %s: %w", path, err), a.Close())
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("read %s: not an OCI layout: %w", path, err), a.Close())
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("read %s: index: %w", path, err), a.Close())
	}
	if len(m.Manifests) != 1 {
		return nil, errors.Join(fmt.Errorf("read %s: the index has %d manifests, want 1", path, len(m.Manifests)), a.Close())
	}
	desc := m.Manifests[0]
	if a.Image, err = idx.Image(desc.Digest); err != nil {
		return nil, errors.Join(fmt.Errorf("read %s: image: %w", path, err), a.Close())
	}
	a.Ref = desc.Annotations[annotationContainerdName]
	return a, nil
}

// untar unpacks a tar file of regular files and directories into dir,
// refusing entries that would land outside it.
func untar(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean("/" + h.Name)[1:]
		if name == "" || !filepath.IsLocal(name) {
			return fmt.Errorf("entry %q is outside the archive", h.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil {
				return errors.Join(err, out.Close())
			}
			if err := out.Close(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %q: unsupported type %c", h.Name, h.Typeflag)
		}
	}
}
