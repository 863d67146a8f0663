package weights

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/allocation"
)

// fakeAPI answers /api/v1/query with the samples it holds, or fails.
type fakeAPI struct {
	mu      sync.Mutex
	samples map[string]string // instance -> value
	fail    bool
	queries []string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, r.URL.Query().Get("query"))
	if f.fail || r.URL.Path != "/api/v1/query" {
		http.Error(w, `{"status":"error","error":"unavailable"}`, http.StatusServiceUnavailable)
		return
	}
	var result []map[string]any
	for inst, v := range f.samples {
		result = append(result, map[string]any{"metric": map[string]string{"job": "j", "instance": inst}, "value": []any{1.7e9, v}})
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": result}})
}

func (f *fakeAPI) set(samples map[string]string, fail bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.samples, f.fail = samples, fail
}

// TestLearner: weights follow the samples each target reports, on a 10 %
// scale, move at most by 1+MaxChange per refresh, stay through a failing API
// until StaleAfter, then are dropped (counts).
func TestLearner(t *testing.T) {
	t.Parallel()
	api := &fakeAPI{}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	now := time.Unix(1_700_000_000, 0)
	l, err := New(Options{URL: srv.URL, Interval: time.Minute, Now: func() time.Time { return now }})
	require.NoError(t, err)
	key := func(inst string) allocation.LearnedKey { return allocation.LearnedKey{Job: "j", Instance: inst} }

	api.set(map[string]string{"a:1": "50000", "b:1": "50", "c:1": "0.5", "bad:1": "NaN"}, false)
	ws, err := l.Refresh(t.Context())
	require.NoError(t, err)
	require.Equal(t, DefaultQuery, api.queries[0])
	require.InDelta(t, 50000, float64(ws[key("a:1")]), 50000*0.05, "on a 10 % scale")
	require.InDelta(t, 50, float64(ws[key("b:1")]), 50*0.05)
	require.Equal(t, uint32(1), ws[key("c:1")], "at least 1")
	require.NotContains(t, ws, key("bad:1"))

	// A wobble of 3 % changes nothing; a jump moves at most ×1.5 a refresh.
	api.set(map[string]string{"a:1": "51500", "b:1": "5000"}, false)
	ws2, err := l.Refresh(t.Context())
	require.NoError(t, err)
	require.Equal(t, ws[key("a:1")], ws2[key("a:1")])
	require.InDelta(t, 75, float64(ws2[key("b:1")]), 75*0.06)
	require.NotContains(t, ws2, key("c:1"), "a target the API no longer reports weighs 1 again")

	// The API fails: the weights stay for three intervals, then go.
	api.set(nil, true)
	now = now.Add(2 * time.Minute)
	ws3, err := l.Refresh(t.Context())
	require.Error(t, err)
	require.Equal(t, ws2, ws3)
	now = now.Add(time.Minute)
	ws4, err := l.Refresh(t.Context())
	require.Error(t, err)
	require.Nil(t, ws4, "stale: back to counting targets")
}

// TestLearnerRefusesBadAnswers: not an http(s) URL, a matrix, a body that is
// not the API's are errors, never weights.
func TestLearnerRefusesBadAnswers(t *testing.T) {
	t.Parallel()
	_, err := New(Options{URL: "prometheus:9090"})
	require.Error(t, err)
	for _, body := range []string{`{"status":"success","data":{"resultType":"matrix","result":[]}}`, `<html>`, `{"status":"error","error":"bad query"}`} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) }))
		l, err := New(Options{URL: srv.URL})
		require.NoError(t, err)
		ws, err := l.Refresh(t.Context())
		require.Error(t, err, body)
		require.Nil(t, ws)
		srv.Close()
	}
}

// TestLearnerRun: Run applies the first weights and then only changes.
func TestLearnerRun(t *testing.T) {
	t.Parallel()
	api := &fakeAPI{}
	api.set(map[string]string{"a:1": "1000"}, false)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	l, err := New(Options{URL: srv.URL, Interval: 10 * time.Millisecond})
	require.NoError(t, err)
	applied := make(chan map[allocation.LearnedKey]uint32, 10)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { l.Run(ctx, func(ws map[allocation.LearnedKey]uint32) { applied <- ws }); close(done) }()
	first := <-applied
	require.Len(t, first, 1)
	time.Sleep(50 * time.Millisecond) // several refreshes, the same answer
	require.Empty(t, applied)
	cancel()
	<-done
}
