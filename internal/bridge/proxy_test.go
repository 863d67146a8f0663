package bridge

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/stretchr/testify/require"
)

// conn stands for one OpAMP connection; comparable, as opamp-go requires.
type conn struct{ id int }

func (*conn) Connection() net.Conn                                 { return nil }
func (*conn) Send(context.Context, *protobufs.ServerToAgent) error { return nil }
func (*conn) Disconnect() error                                    { return nil }

func agentMessage(id uuid.UUID, config string) *protobufs.AgentToServer {
	return &protobufs.AgentToServer{
		InstanceUid: id[:],
		EffectiveConfig: &protobufs.EffectiveConfig{ConfigMap: &protobufs.AgentConfigMap{
			ConfigMap: map[string]*protobufs.AgentConfigFile{"": {Body: []byte(config)}},
		}},
	}
}

func newTestProxy() (*proxy, *time.Time) {
	now := time.Unix(1_700_000_000, 0)
	p := newProxy("127.0.0.1:0", slog.New(slog.DiscardHandler), func() {})
	p.now = func() time.Time { return now }
	return p, &now
}

// TestProxyAgentPerConnection: instance UIDs sent on one WebSocket
// connection are one agent, gone when the connection closes.
func TestProxyAgentPerConnection(t *testing.T) {
	t.Parallel()
	p, _ := newTestProxy()
	c := &conn{1}
	for range 50 {
		p.onMessage(t.Context(), c, true, agentMessage(uuid.New(), "receivers: {}"))
	}
	require.Len(t, p.configs(), 1, "one connection, one agent, whatever UIDs it sends")
	p.onClose(c)
	require.Empty(t, p.configs())
}

// TestProxyHTTPAgents: plain HTTP agents (a new connection per poll)
// survive the end of each poll and expire when they stop polling.
func TestProxyHTTPAgents(t *testing.T) {
	t.Parallel()
	p, now := newTestProxy()
	id := uuid.New()
	cb := p.callbacks(false)
	poll := &conn{2}
	cb.OnMessage(t.Context(), poll, agentMessage(id, "a"))
	cb.OnConnectionClose(poll)
	require.Contains(t, p.configs(), id.String(), "kept after its poll")

	*now = now.Add(httpAgentTTL / 2)
	cb.OnMessage(t.Context(), &conn{3}, agentMessage(id, "b"))
	require.Equal(t, []byte("b"), p.configs()[id.String()].GetBody())

	*now = now.Add(httpAgentTTL + time.Second)
	require.Empty(t, p.configs(), "gone once it stops polling")
}

// TestProxyAgentCap: past maxProxyAgents a new agent is refused.
func TestProxyAgentCap(t *testing.T) {
	t.Parallel()
	p, _ := newTestProxy()
	for i := range maxProxyAgents {
		resp := p.onMessage(t.Context(), &conn{i}, true, agentMessage(uuid.New(), "x"))
		require.Nil(t, resp.GetErrorResponse())
	}
	resp := p.onMessage(t.Context(), &conn{-1}, false, agentMessage(uuid.New(), "x"))
	require.Equal(t, protobufs.ServerErrorResponseType_ServerErrorResponseType_Unavailable, resp.GetErrorResponse().GetType())
	require.Len(t, p.configs(), maxProxyAgents)
}
