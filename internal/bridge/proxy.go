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
type proxy struct {
	addr     string
	log      *slog.Logger
	onChange func()

	mu     sync.Mutex // guards agents, conns, stopped
	agents map[uuid.UUID]*proxyAgent
	conns  map[servertypes.Connection]uuid.UUID

	srv server.OpAMPServer
}

type proxyAgent struct {
	hostName string
	config   *protobufs.AgentConfigFile
	health   *protobufs.ComponentHealth
}

func newProxy(addr string, log *slog.Logger, onChange func()) *proxy {
	return &proxy{
		addr: addr, log: log, onChange: onChange,
		agents: map[uuid.UUID]*proxyAgent{},
		conns:  map[servertypes.Connection]uuid.UUID{},
	}
}

// run serves until ctx ends, then closes every agent connection.
func (p *proxy) run(ctx context.Context) error {
	p.srv = server.New(nil)
	callbacks := servertypes.ConnectionCallbacks{
		OnMessage:         p.onMessage,
		OnConnectionClose: p.onClose,
	}
	err := p.srv.Start(server.StartSettings{
		ListenEndpoint: p.addr,
		Settings: server.Settings{Callbacks: servertypes.Callbacks{
			OnConnecting: func(*http.Request) servertypes.ConnectionResponse {
				return servertypes.ConnectionResponse{Accept: true, ConnectionCallbacks: callbacks}
			},
		}},
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
	conns := p.conns
	p.conns = map[servertypes.Connection]uuid.UUID{}
	p.mu.Unlock()
	for c := range conns {
		err = errors.Join(err, c.Disconnect())
	}
	if err != nil {
		return fmt.Errorf("stop opamp proxy: %w", err)
	}
	return nil
}

func (p *proxy) onMessage(_ context.Context, conn servertypes.Connection, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
	resp := &protobufs.ServerToAgent{InstanceUid: msg.GetInstanceUid()}
	id, err := uuid.FromBytes(msg.GetInstanceUid())
	if err != nil {
		resp.ErrorResponse = &protobufs.ServerErrorResponse{
			Type: protobufs.ServerErrorResponseType_ServerErrorResponseType_BadRequest, ErrorMessage: "instance_uid must be 16 bytes",
		}
		return resp
	}
	p.mu.Lock()
	a, known := p.agents[id]
	if !known {
		a = &proxyAgent{}
		p.agents[id] = a
	}
	p.conns[conn] = id
	changed := !known
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
	if !known && msg.GetAgentDescription() == nil {
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
	id, ok := p.conns[conn]
	delete(p.conns, conn)
	if ok {
		delete(p.agents, id)
	}
	p.mu.Unlock()
	if ok {
		p.onChange()
	}
}

// configs returns the connected agents' effective configs by instance UID.
func (p *proxy) configs() map[string]*protobufs.AgentConfigFile {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]*protobufs.AgentConfigFile{}
	for id, a := range p.agents {
		if a.config != nil {
			out[id.String()] = proto.Clone(a.config).(*protobufs.AgentConfigFile)
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
	for id, a := range p.agents {
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
