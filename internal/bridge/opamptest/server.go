// Package opamptest is an OpAMP server for tests: opamp-go's own, on a
// loopback address, recording what the agents report (effective config,
// health, remote config status) and pushing remote configurations and
// commands to them.
package opamptest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	servertypes "github.com/open-telemetry/opamp-go/server/types"
	"github.com/stretchr/testify/require"
)

// WaitFor bounds every wait of the server's helpers.
const WaitFor = 30 * time.Second

const tick = 50 * time.Millisecond

// Server is an in-process OpAMP server (opamp-go's) that records what the
// agents report and sends what a test tells it to.
type Server struct {
	srv server.OpAMPServer
	// Addr is the address it listens on.
	Addr string

	mu        sync.Mutex // guards the fields below
	conns     map[servertypes.Connection]bool
	effective map[string]string // the last effective config, by key
	reports   int               // effective configs received
	health    *protobufs.ComponentHealth
	status    *protobufs.RemoteConfigStatus
	// connects counts the connections agents opened.
	connects int
	// statuses are every status received, by the hash it reports on.
	statuses map[string]*protobufs.RemoteConfigStatus
	uid      []byte
	stopped  bool
}

// Start starts a server on addr (127.0.0.1:0 picks a port), stopped when
// the test ends.
func Start(t *testing.T, addr string) *Server {
	t.Helper()
	s := &Server{srv: server.New(nil), conns: map[servertypes.Connection]bool{}}
	callbacks := servertypes.ConnectionCallbacks{
		OnConnected: func(_ context.Context, c servertypes.Connection) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.stopped {
				_ = c.Disconnect()
				return
			}
			s.conns[c] = true
			s.connects++
		},
		OnConnectionClose: func(c servertypes.Connection) {
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(s.conns, c)
		},
		OnMessage: func(_ context.Context, _ servertypes.Connection, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.uid = msg.GetInstanceUid()
			if ec := msg.GetEffectiveConfig(); ec != nil {
				s.reports++
				s.effective = map[string]string{}
				for k, f := range ec.GetConfigMap().GetConfigMap() {
					s.effective[k] = string(f.GetBody())
				}
			}
			if h := msg.GetHealth(); h != nil {
				s.health = h
			}
			if st := msg.GetRemoteConfigStatus(); st != nil {
				s.status = st
				if s.statuses == nil {
					s.statuses = map[string]*protobufs.RemoteConfigStatus{}
				}
				s.statuses[string(st.GetLastRemoteConfigHash())] = st
			}
			return &protobufs.ServerToAgent{InstanceUid: msg.GetInstanceUid()}
		},
	}
	require.NoError(t, s.srv.Start(server.StartSettings{
		ListenEndpoint: addr,
		Settings: server.Settings{Callbacks: servertypes.Callbacks{
			OnConnecting: func(*http.Request) servertypes.ConnectionResponse {
				return servertypes.ConnectionResponse{Accept: true, ConnectionCallbacks: callbacks}
			},
		}},
	}))
	s.Addr = s.srv.Addr().String()
	t.Cleanup(func() { s.Stop(t) })
	return s
}

// Stop closes the agents' connections and the listener, as a server
// process that exits would. Stopping twice is a no-op.
func (s *Server) Stop(t *testing.T) {
	t.Helper()
	// Close the listener first, so no agent reconnects to this server, then
	// the connections it has (Stop leaves hijacked WebSockets open).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.srv.Stop(ctx))
	s.mu.Lock()
	s.stopped = true
	conns := s.conns
	s.conns = map[servertypes.Connection]bool{}
	s.mu.Unlock()
	for c := range conns {
		_ = c.Disconnect()
	}
}

// Snapshot is what the agents reported last: the effective config by key,
// how many effective configs came, the health and the remote config status.
func (s *Server) Snapshot() (effective map[string]string, reports int, health *protobufs.ComponentHealth, status *protobufs.RemoteConfigStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.effective, s.reports, s.health, s.status
}

// Connects is how many connections agents have opened so far.
func (s *Server) Connects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connects
}

// StatusOf is the status an agent reported for the remote configuration
// with hash, or nil when none did.
func (s *Server) StatusOf(hash []byte) *protobufs.RemoteConfigStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statuses[string(hash)]
}

// Push sends a remote configuration to every connected agent and returns
// its hash.
func (s *Server) Push(t *testing.T, files map[string]string) []byte {
	t.Helper()
	hash, err := s.TryPush(t, files)
	require.NoError(t, err)
	return hash
}

// TryPush is Push that returns the agents' send error (an agent may close
// the connection on what it is sent).
func (s *Server) TryPush(t *testing.T, files map[string]string) ([]byte, error) {
	t.Helper()
	cm := map[string]*protobufs.AgentConfigFile{}
	hash := fmt.Sprintf("%d", time.Now().UnixNano())
	for k, v := range files {
		cm[k] = &protobufs.AgentConfigFile{Body: []byte(v), ContentType: "yaml"}
	}
	rc := &protobufs.AgentRemoteConfig{Config: &protobufs.AgentConfigMap{ConfigMap: cm}, ConfigHash: []byte(hash)}
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.conns) > 0
	}, WaitFor, tick, "no agent connected")
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for c := range s.conns {
		errs = append(errs, c.Send(t.Context(), &protobufs.ServerToAgent{InstanceUid: s.uid, RemoteConfig: rc}))
	}
	return []byte(hash), errors.Join(errs...)
}

// Restart sends the restart command to every connected agent.
func (s *Server) Restart(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotEmpty(t, s.conns)
	for c := range s.conns {
		require.NoError(t, c.Send(t.Context(), &protobufs.ServerToAgent{InstanceUid: s.uid, Command: &protobufs.ServerToAgentCommand{Type: protobufs.CommandType_CommandType_Restart}}))
	}
}

// WaitStatus waits for the agent's status of the remote config with hash.
func (s *Server) WaitStatus(t *testing.T, hash []byte) *protobufs.RemoteConfigStatus {
	t.Helper()
	var got *protobufs.RemoteConfigStatus
	require.Eventually(t, func() bool {
		_, _, _, st := s.Snapshot()
		if st != nil && string(st.GetLastRemoteConfigHash()) == string(hash) {
			got = st
			return true
		}
		return false
	}, WaitFor, tick, "no status for remote config %s", hash)
	return got
}
