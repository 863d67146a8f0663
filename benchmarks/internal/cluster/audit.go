package cluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// The API server's apiserver_request_total has no label naming the client,
// so the requests an allocator makes are counted from the API server's audit
// log, which the run restricts to the allocators' users: one event per
// request (the ResponseComplete stage; a watch also when it starts).

// auditPolicy logs the allocator users' requests at the Metadata level and
// nothing else.
func auditPolicy(users []string) string {
	var b strings.Builder
	b.WriteString("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n  users:\n")
	for _, u := range users {
		fmt.Fprintf(&b, "  - %q\n", u)
	}
	b.WriteString("- level: None\n")
	return b.String()
}

// APIRequests are the requests one client made, from the audit log.
type APIRequests struct {
	Total int `json:"total"`
	// ByVerb counts by "verb resource", e.g. "list pods", "watch endpointslices".
	ByVerb map[string]int `json:"by_verb"`
	// Idle counts those received during the idle window.
	Idle int `json:"idle"`
}

type auditEvent struct {
	Stage     string                    `json:"stage"`
	Verb      string                    `json:"verb"`
	User      struct{ Username string } `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
}

// countRequests reads the audit log at path and counts each user's
// requests; those received within idle[user] (from, to) also count as idle.
func countRequests(path string, idle map[string][2]time.Time) (map[string]*APIRequests, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	defer f.Close()
	out := map[string]*APIRequests{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		// A watch is counted once, when it starts; everything else when done.
		if (e.Verb == "watch") != (e.Stage == "ResponseStarted") || (e.Stage != "ResponseStarted" && e.Stage != "ResponseComplete") {
			continue
		}
		r := out[e.User.Username]
		if r == nil {
			r = &APIRequests{ByVerb: map[string]int{}}
			out[e.User.Username] = r
		}
		what := e.Verb
		if e.ObjectRef != nil {
			what += " " + e.ObjectRef.Resource
			if e.ObjectRef.Subresource != "" {
				what += "/" + e.ObjectRef.Subresource
			}
		}
		r.Total++
		r.ByVerb[what]++
		if w, ok := idle[e.User.Username]; ok && !e.RequestReceived.Before(w[0]) && e.RequestReceived.Before(w[1]) {
			r.Idle++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	return out, nil
}
