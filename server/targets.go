package server

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"
	"weak"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/shardwise/shardwise/allocation"
)

// Header values shared by every response. net/http never modifies header
// value slices and their capacity equals their length, so an append by a
// caller copies rather than writes into them.
var (
	contentTypeJSON = []string{"application/json"}
	emptyList       = newBody([]byte("[]"))
)

// sliceSize estimates the encoded size of a slice, so the body is allocated
// once: with ~40 Kubernetes meta labels a target takes ~2.7 KB, and growing a
// buffer from a fixed guess allocated about five times the response. Up to
// sizeSamples targets spread over the slice stand for all of them: summing
// every target's labels cost a fifth of the encoding itself.
func sliceSize(sl *allocation.Slice) int {
	ts := sl.Targets
	step := max(1, len(ts)/sizeSamples)
	n, sampled := 0, 0
	for i := 0; i < len(ts); i += step {
		t := ts[i]
		count, size := t.Labels.Footprint()
		n += 2*len(t.Address) + 36 + size + 6*count // {"targets":["…"],"labels":{…}},
		sampled++
	}
	if sampled > 0 {
		n = n / sampled * len(ts)
	}
	return 2 + n + n/16 // escapes, and targets larger than the sampled ones
}

const sizeSamples = 16

// appendSlice appends the http_sd JSON of a slice:
// [{"targets":["<address>"],"labels":{...}},...], one entry per target in
// the slice's (stable) order.
func appendSlice(b []byte, sl *allocation.Slice) []byte {
	b = append(b, '[')
	for i, t := range sl.Targets {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendTarget(b, t)
	}
	return append(b, ']')
}

func appendTarget(b []byte, t *allocation.Target) []byte {
	b = append(b, `{"targets":[`...)
	b = appendString(b, t.Address)
	b = append(b, `],"labels":`...)
	b = appendLabels(b, t.Labels)
	return append(b, '}')
}

func appendLabels(b []byte, ls allocation.Discovered) []byte {
	b = append(b, '{')
	first := true
	ls.Range(func(l labels.Label) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, l.Name)
		b = append(b, ':')
		b = appendString(b, l.Value)
	})
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does; HTML characters are left alone.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none needs a second look: label
		// names and values are nearly always plain ASCII.
		for i+8 <= len(s) && plain8(word(s[i:])) {
			i += 8
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// word returns the first eight bytes of s (at least eight long) as one
// word; one load, with a single bounds check.
func word(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// plain8 reports whether the eight bytes of w are all ASCII, printable
// (>= 0x20) and neither '"' nor '\\', that is, copied as they are into a JSON
// string. Each test is the exact "some byte is less than n" bit trick for
// n <= 128; byte order does not matter.
func plain8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	ctl := (w - ones*0x20) &^ w
	q := w ^ (ones * '"')
	quote := (q - ones) &^ q
	bs := w ^ (ones * '\\')
	back := (bs - ones) &^ bs
	return (w|ctl|quote|back)&highs == 0
}

var errDuplicateParam = errors.New("collector_id given more than once")

// jobTargets serves /jobs/:job/targets[?collector_id=X], the http_sd
// endpoint the collector's Prometheus receiver polls. The hot path (with a
// collector) writes precomputed bytes and does no encoding: a body of 2 KiB
// or more is expanded from its compressed form as it is written, with
// pooled readers (a few small allocations per request, BenchmarkJobTargets;
// none per target).
func (s *Server) jobTargets(c *gin.Context) {
	// The router matched on the escaped path and left the segment escaped:
	// the client query-escaped the job name into it.
	job, err := url.QueryUnescape(c.Param("job"))
	if err != nil {
		s.writeError(c, http.StatusBadRequest, "job name is not query-escaped: "+err.Error())
		return
	}
	if job == "" {
		s.writeError(c, http.StatusBadRequest, "empty job name")
		return
	}
	collector, ok, err := queryParam(c.Request.URL.RawQuery, "collector_id")
	if err != nil {
		s.writeError(c, http.StatusBadRequest, "malformed query: "+err.Error())
		return
	}
	snap := s.opts.Assignments.Snapshot()
	if !ok {
		s.writeBody(c, s.wholeJob(snap, job))
		return
	}
	b := emptyList
	if sl := snap.Slice(collector, job); sl != nil && len(sl.Targets) > 0 {
		b = s.cache.slice(snap, sl)
	}
	s.writeBody(c, b)
	if po, ok := s.opts.Assignments.(PollObserver); ok {
		po.Polled(collector, job, snap)
	}
}

// wholeJob returns the object served without collector_id, cached per
// snapshot. A job the snapshot does not know is answered without caching
// (every collector with no targets), so made-up job names cannot push real
// bodies out of the cache; its cost is one link per collector.
func (s *Server) wholeJob(snap *allocation.Snapshot, job string) *body {
	if _, known := slices.BinarySearch(snap.Jobs(), job); !known {
		return newBody(s.appendCollectors(nil, snap, job))
	}
	return s.cache.job(snap, job, func(b []byte) []byte { return s.appendCollectors(b, snap, job) })
}

// appendCollectors appends the object served without collector_id: every
// collector, including those without targets of the job, with a link to its
// own endpoint and its targets.
func (s *Server) appendCollectors(b []byte, snap *allocation.Snapshot, job string) []byte {
	link := "/jobs/" + url.QueryEscape(job) + "/targets?collector_id="
	b = append(b, '{')
	for i, col := range snap.Collectors() {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, col)
		b = append(b, `:{"_link":`...)
		b = appendString(b, link+url.QueryEscape(col))
		b = append(b, `,"targets":`...)
		if sl := snap.Slice(col, job); sl != nil && len(sl.Targets) > 0 {
			b = s.cache.slice(snap, sl).appendTo(b)
		} else {
			b = append(b, "[]"...)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// jobsCache holds the /jobs response of the latest snapshot served.
type jobsCache struct {
	cur atomic.Pointer[jobsEntry]
}

// jobsEntry is keyed by the snapshot itself: generations of different
// allocators collide. The weak pointer does not keep the snapshot alive.
type jobsEntry struct {
	snap weak.Pointer[allocation.Snapshot]
	body *body
}

// jobList serves /jobs: {"<job>":{"_link":"/jobs/<escaped job>/targets"}}
// for every job with targets.
func (s *Server) jobList(c *gin.Context) {
	snap := s.opts.Assignments.Snapshot()
	key := weak.Make(snap)
	e := s.jobs.cur.Load()
	if e == nil || e.snap != key {
		b := []byte{'{'}
		for i, job := range snap.Jobs() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, job)
			b = append(b, `:{"_link":`...)
			b = appendString(b, "/jobs/"+url.QueryEscape(job)+"/targets")
			b = append(b, '}')
		}
		b = append(b, '}')
		e = &jobsEntry{snap: key, body: newBody(b)}
		s.jobs.cur.Store(e)
	}
	s.writeBody(c, e.body)
}

// writeBody writes a JSON body with its ETag, or 304 when the client
// already holds it.
func (s *Server) writeBody(c *gin.Context, b *body) {
	h := c.Writer.Header()
	h["Content-Type"] = contentTypeJSON
	h["Etag"] = b.etag
	if inm := c.Request.Header["If-None-Match"]; len(inm) > 0 && etagMatch(inm, b.etag[0]) {
		c.Status(http.StatusNotModified)
		return
	}
	h["Content-Length"] = []string{strconv.Itoa(b.size)}
	c.Status(http.StatusOK)
	if err := b.writeTo(c.Writer); err != nil {
		s.log.Debug("write response", "path", c.Request.URL.Path, "err", err)
	}
}

// etagMatch reports whether an If-None-Match header matches etag, using the
// weak comparison RFC 9110 prescribes for If-None-Match.
func etagMatch(values []string, etag string) bool {
	for _, v := range values {
		for v != "" {
			var tag string
			tag, v, _ = strings.Cut(v, ",")
			tag = strings.TrimSpace(tag)
			if tag == "*" {
				return true
			}
			tag = strings.TrimPrefix(tag, "W/")
			if tag == etag {
				return true
			}
		}
	}
	return false
}

// queryParam returns the value of key in a raw query string without
// allocating in the common case. A malformed query (bad escape, semicolon)
// or a repeated key is an error.
func queryParam(raw, key string) (value string, ok bool, err error) {
	for raw != "" {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		if kv == "" {
			continue
		}
		if strings.IndexByte(kv, ';') >= 0 {
			return "", false, errors.New("invalid semicolon separator in query")
		}
		k, v, _ := strings.Cut(kv, "=")
		if k, err = url.QueryUnescape(k); err != nil {
			return "", false, err
		}
		if v, err = url.QueryUnescape(v); err != nil {
			return "", false, err
		}
		if k != key {
			continue
		}
		if ok {
			return "", false, errDuplicateParam
		}
		value, ok = v, true
	}
	return value, ok, nil
}
