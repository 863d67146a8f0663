package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/gzip"
)

// compressMin is the smallest body kept compressed: below it gzip's header
// and the reader's set-up cost more than the bytes saved.
const compressMin = 2 << 10

// body is a serialized response with its entity tag. Immutable.
//
// A body of at least compressMin bytes is kept gzip-compressed (fastest
// level) and expanded as it is written: http_sd bodies repeat the same
// Kubernetes label names and most values target after target and shrink
// about 25 times (BenchmarkBody), and at 50k targets the uncompressed bodies
// were the largest part of the allocator's heap (benchmarks/README.md,
// cluster scale). Expanding costs ~1 ns a byte, paid by each request; the
// collectors' http_sd client does not accept gzip.
type body struct {
	data []byte   // the body, or nil when gz holds it
	gz   []byte   // the body gzip-compressed, or nil
	size int      // the body's length
	etag []string // one quoted strong entity tag: a hash of the body
}

// newBody returns the body of data. It does not keep data: the caller may
// reuse it.
func newBody(data []byte) *body {
	b := &body{size: len(data), etag: etagOf(data)}
	if len(data) >= compressMin {
		b.gz = compress(data)
	} else {
		b.data = bytes.Clone(data)
	}
	return b
}

// encode returns the body that build appends to an empty buffer, built in a
// pooled scratch buffer of at least sizeHint bytes.
func encode(sizeHint int, build func([]byte) []byte) *body {
	p, _ := scratch.Get().(*[]byte)
	if p == nil {
		p = new([]byte)
	}
	data := build(slices.Grow((*p)[:0], sizeHint))
	b := newBody(data)
	if cap(data) <= maxScratch {
		*p = data[:0]
		scratch.Put(p)
	}
	return b
}

// maxScratch is the largest scratch buffer kept for reuse; a larger body (a
// job of tens of thousands of targets on one collector) is built in a
// buffer of its own.
const maxScratch = 4 << 20

func etagOf(data []byte) []string {
	tag := make([]byte, 0, 18)
	tag = append(tag, '"')
	tag = strconv.AppendUint(tag, xxhash.Sum64(data), 36)
	tag = append(tag, '"')
	return []string{string(tag)}
}

// stored returns the bytes the body keeps in memory.
func (b *body) stored() int { return len(b.data) + len(b.gz) }

// writeTo writes the body to w.
func (b *body) writeTo(w io.Writer) error {
	if b.gz == nil {
		_, err := w.Write(b.data)
		return err
	}
	r, err := gzipReader(b.gz)
	if err != nil {
		return err
	}
	defer readers.Put(r)
	// gzip.Reader.WriteTo streams through its own window: no buffer the
	// size of the body.
	n, err := r.WriteTo(w)
	if err == nil && n != int64(b.size) {
		err = fmt.Errorf("expanded %d bytes, want %d", n, b.size)
	}
	return err
}

// appendTo appends the body to dst.
func (b *body) appendTo(dst []byte) []byte {
	if b.gz == nil {
		return append(dst, b.data...)
	}
	buf := bytes.NewBuffer(slices.Grow(dst, b.size))
	if err := b.writeTo(buf); err != nil {
		// Only a bug can get here: newBody compressed these bytes and
		// they never change.
		panic(fmt.Sprintf("server: cached body does not expand: %v", err))
	}
	return buf.Bytes()
}

var (
	scratch sync.Pool // *[]byte: bodies being built
	writers sync.Pool // *compressor
	readers sync.Pool // *gzip.Reader
)

// compressor is a gzip writer and its output buffer, reused.
type compressor struct {
	w   *gzip.Writer
	out bytes.Buffer
}

// compress returns data gzip-compressed at the fastest level, in a slice of
// its own length.
func compress(data []byte) []byte {
	c, _ := writers.Get().(*compressor)
	if c == nil {
		c = &compressor{}
		// BestSpeed is a valid level: NewWriterLevel cannot fail.
		c.w, _ = gzip.NewWriterLevel(nil, gzip.BestSpeed)
	}
	defer writers.Put(c)
	c.out.Reset()
	c.w.Reset(&c.out)
	// Writes to a bytes.Buffer do not fail.
	_, _ = c.w.Write(data)
	_ = c.w.Close()
	gz := bytes.Clone(c.out.Bytes())
	if c.out.Cap() > maxScratch {
		c.out = bytes.Buffer{}
	}
	return gz
}

var errNotGzip = errors.New("cached body is not gzip")

func gzipReader(gz []byte) (*gzip.Reader, error) {
	if r, ok := readers.Get().(*gzip.Reader); ok {
		if err := r.Reset(bytes.NewReader(gz)); err != nil {
			return nil, errors.Join(errNotGzip, err)
		}
		return r, nil
	}
	r, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, errors.Join(errNotGzip, err)
	}
	return r, nil
}
