package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	servertypes "github.com/open-telemetry/opamp-go/server/types"
	"google.golang.org/protobuf/proto"
)

// proxy is an OpAMP server (opamp-go's) on the bridge's listen address for
// collectors whose own opamp extension connects to the bridge, as upstream's
// bridge offers. The bridge reports each such agent's effective config under
// its instance UID and its health under the pod of the same host name, or
// under its UID when no such pod is known.
//
// Anyone who reaches the address can connect, so what a client can make the
// bridge hold is bounded: a WebSocket connection is one agent (a new
// instance_uid on it replaces the old one, and closing it removes it), an
// agent polling over plain HTTP is kept for httpAgentTTL after its last
// message, at most maxProxyAgents are held, and an HTTP message is at most
// maxProxyMessageBytes.
type proxy struct {
	addr     string
	log      *slog.Logger
	onChange func()
	now      func() time.Time

	mu sync.Mutex // guards agents
	// agents are keyed by their WebSocket connection, or by their instance
	// UID for plain HTTP agents, whose every poll is a new connection.
	agents map[agentKey]*proxyAgent

	srv server.OpAMPServer
}

// The proxy's bounds.
const (
	maxProxyAgents       = 1000
	maxProxyMessageBytes = 4 << 20
	httpAgentTTL         = 3 * time.Minute
)

// agentKey identifies a proxied agent: by connection over WebSocket, by
// instance UID over plain HTTP.
type agentKey struct {
	conn servertypes.Connection
	uid  uuid.UUID
}

type proxyAgent struct {
	uid      uuid.UUID
	hostName string
	config   *protobufs.AgentConfigFile
	health   *protobufs.ComponentHealth
	// lastSeen is when a plain HTTP agent last polled.
	lastSeen time.Time
}

func newProxy(addr string, log *slog.Logger, onChange func()) *proxy {
	return &proxy{addr: addr, log: log, onChange: onChange, now: time.Now, agents: map[agentKey]*proxyAgent{}}
}

// run serves until ctx ends, then closes every agent connection.
func (p *proxy) run(ctx context.Context) error {
	p.srv = server.New(nil)
	err := p.srv.Start(server.StartSettings{
		ListenEndpoint: p.addr,
		Settings: server.Settings{Callbacks: servertypes.Callbacks{
			OnConnecting: func(r *http.Request) servertypes.ConnectionResponse {
				return servertypes.ConnectionResponse{Accept: true, ConnectionCallbacks: p.callbacks(isWebSocket(r))}
			},
		}},
		HTTPMiddleware: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.Body = http.MaxBytesReader(w, r.Body, maxProxyMessageBytes)
				next.ServeHTTP(w, r)
			})
		},
	})
	if err != nil {
		return fmt.Errorf("opamp proxy on %s: %w", p.addr, err)
	}
	p.log.Info("serving collectors' OpAMP connections", "listen-addr", p.srv.Addr().String())
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err = p.srv.Stop(stopCtx)
	p.mu.Lock()
	agents := p.agents
	p.agents = map[agentKey]*proxyAgent{}
	p.mu.Unlock()
	for k := range agents {
		if k.conn != nil {
			err = errors.Join(err, k.conn.Disconnect())
		}
	}
	if err != nil {
		return fmt.Errorf("stop opamp proxy: %w", err)
	}
	return nil
}

func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// callbacks are a connection's callbacks: WebSocket agents live as long as
// their connection, plain HTTP ones until httpAgentTTL after their last poll.
func (p *proxy) callbacks(ws bool) servertypes.ConnectionCallbacks {
	return servertypes.ConnectionCallbacks{
		OnMessage: func(ctx context.Context, conn servertypes.Connection, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
			return p.onMessage(ctx, conn, ws, msg)
		},
		OnConnectionClose: func(conn servertypes.Connection) {
			if ws {
				p.onClose(conn)
			}
		},
	}
}

func (p *proxy) onMessage(_ context.Context, conn servertypes.Connection, ws bool, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
	resp := &protobufs.ServerToAgent{InstanceUid: msg.GetInstanceUid()}
	id, err := uuid.FromBytes(msg.GetInstanceUid())
	if err != nil {
		resp.ErrorResponse = &protobufs.ServerErrorResponse{
			Type: protobufs.ServerErrorResponseType_ServerErrorResponseType_BadRequest, ErrorMessage: "instance_uid must be 16 bytes",
		}
		return resp
	}
	key := agentKey{uid: id}
	if ws {
		key = agentKey{conn: conn}
	}
	p.mu.Lock()
	p.expire()
	a, known := p.agents[key]
	if !known && len(p.agents) >= maxProxyAgents {
		p.mu.Unlock()
		resp.ErrorResponse = &protobufs.ServerErrorResponse{
			Type: protobufs.ServerErrorResponseType_ServerErrorResponseType_Unavailable, ErrorMessage: fmt.Sprintf("the bridge holds %d agents, its limit", maxProxyAgents),
		}
		return resp
	}
	fresh := !known || a.uid != id
	if fresh {
		// New, or a WebSocket connection that now speaks for another agent.
		a = &proxyAgent{uid: id}
		p.agents[key] = a
	}
	if !ws {
		a.lastSeen = p.now()
	}
	changed := fresh
	if d := msg.GetAgentDescription(); d != nil {
		for _, kv := range d.GetNonIdentifyingAttributes() {
			if kv.GetKey() == "host.name" {
				a.hostName = kv.GetValue().GetStringValue()
			}
		}
	}
	if ec := msg.GetEffectiveConfig(); ec != nil {
		a.config = ec.GetConfigMap().GetConfigMap()[""]
		changed = true
	}
	if h := msg.GetHealth(); h != nil {
		a.health = h
		changed = true
	}
	if fresh && msg.GetAgentDescription() == nil {
		// An agent we have not heard from in full: ask for its state.
		resp.Flags = uint64(protobufs.ServerToAgentFlags_ServerToAgentFlags_ReportFullState)
	}
	p.mu.Unlock()
	if changed {
		p.onChange()
	}
	return resp
}

func (p *proxy) onClose(conn servertypes.Connection) {
	p.mu.Lock()
	_, ok := p.agents[agentKey{conn: conn}]
	delete(p.agents, agentKey{conn: conn})
	p.mu.Unlock()
	if ok {
		p.onChange()
	}
}

// expire drops the plain HTTP agents that have not polled for
// httpAgentTTL. The caller holds mu.
func (p *proxy) expire() {
	for k, a := range p.agents {
		if k.conn == nil && p.now().Sub(a.lastSeen) > httpAgentTTL {
			delete(p.agents, k)
		}
	}
}

// configs returns the connected agents' effective configs by instance UID.
func (p *proxy) configs() map[string]*protobufs.AgentConfigFile {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expire()
	out := map[string]*protobufs.AgentConfigFile{}
	for _, a := range p.agents {
		if a.config != nil {
			out[a.uid.String()] = proto.Clone(a.config).(*protobufs.AgentConfigFile)
		}
	}
	return out
}

// addHealth puts the connected agents' health into root: under the pod
// component "<namespace>/<host name>" of a reported collector when there is
// one, else at the top level under the agent's UID.
func (p *proxy) addHealth(root *protobufs.ComponentHealth) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expire()
	for _, a := range p.agents {
		id := a.uid
		if a.health == nil {
			continue
		}
		h := proto.Clone(a.health).(*protobufs.ComponentHealth)
		placed := false
		for _, collector := range root.GetComponentHealthMap() {
			for podKey, pod := range collector.GetComponentHealthMap() {
				if a.hostName != "" && strings.HasSuffix(podKey, "/"+a.hostName) {
					if pod.ComponentHealthMap == nil {
						pod.ComponentHealthMap = map[string]*protobufs.ComponentHealth{}
					}
					pod.ComponentHealthMap[id.String()] = h
					placed = true
				}
			}
		}
		if !placed {
			root.ComponentHealthMap[id.String()] = h
		}
	}
}
