package bridge

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	opampclient "github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests"
)

// fieldOwner is the field manager of the bridge's writes.
const fieldOwner = "shardwise-opamp-bridge"

// Options configure a Bridge.
type Options struct {
	// Config is the parsed configuration file.
	Config Config
	// Identity names the bridge; Identity.Name is also the value of
	// LabelManaged that selects its collectors besides "true".
	Identity Identity
	// WatchNamespace limits the bridge to one namespace; empty watches all
	// (and needs cluster-wide RBAC).
	WatchNamespace string
	// HeartbeatInterval is how often health is sent; 0 disables the heartbeat.
	HeartbeatInterval time.Duration
	// RestConfig reaches the Kubernetes API.
	RestConfig *rest.Config
	// Logger receives the bridge's logs; nil discards them.
	Logger *slog.Logger
	// ListenAddr, when set, serves an OpAMP server for collectors whose
	// own opamp extension connects to the bridge (upstream's proxy).
	ListenAddr string
}

// Bridge is a running OpAMP bridge. Create it with New, run it with Run.
type Bridge struct {
	cfg       Config
	id        Identity
	name      string
	namespace string
	heartbeat time.Duration
	log       *slog.Logger
	startTime uint64
	uid       uuid.UUID

	cache  cache.Cache   // watches collectors and collector pods
	reader client.Reader // the cache
	client client.Client // direct, for writes and reads that must be current

	synced atomic.Bool
	proxy  *proxy // nil without a listen address

	report chan struct{} // capacity 1: re-send effective config and health
	remote chan struct{} // capacity 1: a remote config is pending

	mu      sync.Mutex // guards pending
	pending *protobufs.AgentRemoteConfig

	// lastApplied is the hash of the last remote config applied; only the
	// run loop reads and writes it.
	lastApplied []byte
}

// New builds a bridge; it connects to nothing until Run.
func New(o Options) (*Bridge, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	if o.Identity.Name == "" {
		return nil, errors.New("bridge: a name is required")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("bridge scheme: %w", err)
		}
	}
	copts := cache.Options{
		Scheme: scheme,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: labels.SelectorFromSet(labels.Set{manifests.LabelComponent: manifests.ComponentCollector})},
		},
	}
	if o.WatchNamespace != "" {
		copts.DefaultNamespaces = map[string]cache.Config{o.WatchNamespace: {}}
	}
	c, err := cache.New(o.RestConfig, copts)
	if err != nil {
		return nil, fmt.Errorf("bridge cache: %w", err)
	}
	direct, err := client.New(o.RestConfig, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("bridge client: %w", err)
	}
	b := &Bridge{
		cfg:       o.Config,
		id:        o.Identity,
		name:      o.Identity.Name,
		namespace: o.WatchNamespace,
		heartbeat: o.HeartbeatInterval,
		log:       log,
		// A stable identity across restarts: the server sees one agent per
		// bridge, not one per pod it ever ran in.
		uid:    uuid.NewSHA1(uuid.NameSpaceURL, []byte("opentelemetry.io/opamp-bridge/"+o.Identity.Namespace+"/"+o.Identity.Name)),
		cache:  c,
		reader: c,
		client: direct,
		report: make(chan struct{}, 1),
		remote: make(chan struct{}, 1),
	}
	if o.ListenAddr != "" {
		b.proxy = newProxy(o.ListenAddr, log, func() { trigger(b.report) })
	}
	return b, nil
}

// Synced says whether the bridge's watches have synced; /healthz reports it.
func (b *Bridge) Synced() bool { return b.synced.Load() }

// InstanceUID is the bridge's OpAMP instance UID.
func (b *Bridge) InstanceUID() [16]byte { return b.uid }

func trigger(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Run watches the collectors, connects to the OpAMP server and serves until
// ctx ends. opamp-go reconnects with exponential backoff; on every
// (re)connection the bridge sends its effective config and health again, so
// a server that lost its state (a restart) learns it anew.
func (b *Bridge) Run(ctx context.Context) error {
	b.startTime = uint64(max(time.Now().UnixNano(), 0))
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(runCtx)
	g.Go(func() error { return b.cache.Start(gctx) })
	if err := b.watch(gctx); err != nil {
		cancel()
		return errors.Join(err, g.Wait())
	}
	b.synced.Store(true)
	if b.proxy != nil {
		g.Go(func() error { return b.proxy.run(gctx) })
	}

	oc, err := b.startClient(gctx)
	if err != nil {
		cancel()
		return errors.Join(err, g.Wait())
	}
	g.Go(func() error { return b.loop(gctx, oc) })
	err = g.Wait()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if serr := oc.Stop(stopCtx); serr != nil {
		err = errors.Join(err, fmt.Errorf("stop opamp client: %w", serr))
	}
	return err
}

// watch registers the collector watch and waits for the caches to sync.
func (b *Bridge) watch(ctx context.Context) error {
	inf, err := b.cache.GetInformer(ctx, &v1beta1.OpenTelemetryCollector{})
	if err != nil {
		return fmt.Errorf("watch collectors: %w", err)
	}
	relevant := func(obj any) bool {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		c, ok := obj.(*v1beta1.OpenTelemetryCollector)
		return ok && (isReporting(c.Labels) || isManaged(c.Labels, b.name))
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if relevant(obj) {
				trigger(b.report)
			}
		},
		UpdateFunc: func(o, n any) {
			if relevant(o) || relevant(n) {
				trigger(b.report)
			}
		},
		DeleteFunc: func(obj any) {
			if relevant(obj) {
				trigger(b.report)
			}
		},
	}); err != nil {
		return fmt.Errorf("watch collectors: %w", err)
	}
	// Start the pod watch now, so health never waits for it.
	if _, err := b.cache.GetInformer(ctx, &corev1.Pod{}); err != nil {
		return fmt.Errorf("watch pods: %w", err)
	}
	if !b.cache.WaitForCacheSync(ctx) {
		return fmt.Errorf("watch collectors: caches did not sync: %w", context.Cause(ctx))
	}
	return nil
}

func (b *Bridge) startClient(ctx context.Context) (opampclient.OpAMPClient, error) {
	u, err := url.Parse(b.cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("endpoint: %w", err)
	}
	logger := opampLogger{log: b.log}
	var oc opampclient.OpAMPClient
	if u.Scheme == "http" || u.Scheme == "https" {
		oc = opampclient.NewHTTP(logger)
	} else {
		oc = opampclient.NewWebSocket(logger)
	}
	if err := oc.SetAgentDescription(b.cfg.AgentDescription(b.id, b.uid.String())); err != nil {
		return nil, fmt.Errorf("agent description: %w", err)
	}
	if b.cfg.Has(protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth) {
		if err := oc.SetHealth(b.health(ctx)); err != nil {
			return nil, fmt.Errorf("health: %w", err)
		}
	}
	// opamp-go wants the health before the capability that reports it.
	caps := b.cfg.AgentCapabilities()
	if err := oc.SetCapabilities(&caps); err != nil {
		return nil, fmt.Errorf("capabilities: %w", err)
	}
	settings := types.StartSettings{
		OpAMPServerURL: b.cfg.Endpoint,
		Header:         b.cfg.HTTPHeader(),
		InstanceUid:    types.InstanceUid(b.uid),
		Callbacks: types.Callbacks{
			OnConnect: func(context.Context) {
				b.log.Info("connected to the OpAMP server", "endpoint", b.cfg.Endpoint)
				trigger(b.report)
			},
			OnConnectFailed: func(_ context.Context, err error) {
				b.log.Warn("cannot connect to the OpAMP server; retrying with backoff", "endpoint", b.cfg.Endpoint, "err", err)
			},
			OnError: func(_ context.Context, e *protobufs.ServerErrorResponse) {
				b.log.Warn("the OpAMP server reported an error", "err", e.GetErrorMessage(), "type", e.GetType().String())
			},
			OnMessage:          b.onMessage,
			GetEffectiveConfig: b.effectiveConfig,
			OnCommand:          b.onCommand,
		},
	}
	if b.heartbeat > 0 && (u.Scheme == "http" || u.Scheme == "https") {
		hb := b.heartbeat
		settings.HeartbeatInterval = &hb // the HTTP client's polling interval
	}
	if p := b.cfg.Proxy; p != nil && p.URL != "" {
		settings.ProxyURL = p.URL
		settings.ProxyHeaders = toHeader(p.Headers)
	}
	if t := b.cfg.TLS; t != nil && t.InsecureSkipVerify {
		settings.TLSConfig = &tls.Config{InsecureSkipVerify: true} // the user opted in with tls.insecure_skip_verify
	}
	if err := oc.Start(ctx, settings); err != nil {
		return nil, fmt.Errorf("start opamp client: %w", err)
	}
	return oc, nil
}

// onMessage hands a remote config to the run loop; a newer one replaces a
// pending one. It returns at once, as opamp-go asks of its callbacks.
func (b *Bridge) onMessage(_ context.Context, msg *types.MessageData) {
	if msg.RemoteConfig == nil || !b.cfg.Has(protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig) {
		return
	}
	b.mu.Lock()
	b.pending = msg.RemoteConfig
	b.mu.Unlock()
	trigger(b.remote)
}

// onCommand runs a command of the server: restart rolls the managed
// collectors' pods; others are refused. opamp-go calls it only with
// AcceptsRestartCommand on, and reports nothing of its result, so the
// result is logged.
func (b *Bridge) onCommand(ctx context.Context, cmd *protobufs.ServerToAgentCommand) error {
	if cmd.GetType() != protobufs.CommandType_CommandType_Restart {
		err := fmt.Errorf("command %s is not supported", cmd.GetType())
		b.log.Warn("refused command", "err", err)
		return err
	}
	if err := b.restart(ctx); err != nil {
		b.log.Error("restart collectors", "err", err)
		return err
	}
	b.log.Info("restarted the managed collectors")
	return nil
}

func (b *Bridge) loop(ctx context.Context, oc opampclient.OpAMPClient) error {
	var tick <-chan time.Time
	if b.heartbeat > 0 {
		t := time.NewTicker(b.heartbeat)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
			b.sendHealth(ctx, oc)
		case <-b.report:
			b.sendEffectiveConfig(ctx, oc)
			b.sendHealth(ctx, oc)
		case <-b.remote:
			b.mu.Lock()
			rc := b.pending
			b.pending = nil
			b.mu.Unlock()
			if rc != nil {
				b.handleRemoteConfig(ctx, oc, rc)
			}
		}
	}
}

func (b *Bridge) sendHealth(ctx context.Context, oc opampclient.OpAMPClient) {
	if !b.cfg.Has(protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth) {
		return
	}
	if err := oc.SetHealth(b.health(ctx)); err != nil {
		b.log.Error("send health", "err", err)
	}
}

func (b *Bridge) sendEffectiveConfig(ctx context.Context, oc opampclient.OpAMPClient) {
	if !b.cfg.Has(protobufs.AgentCapabilities_AgentCapabilities_ReportsEffectiveConfig) {
		return
	}
	if err := oc.UpdateEffectiveConfig(ctx); err != nil {
		b.log.Error("send effective config", "err", err)
	}
}

func (b *Bridge) handleRemoteConfig(ctx context.Context, oc opampclient.OpAMPClient, rc *protobufs.AgentRemoteConfig) {
	if b.lastApplied != nil && bytes.Equal(b.lastApplied, rc.GetConfigHash()) {
		return // already applied; the server repeats itself
	}
	status := b.applyRemoteConfig(ctx, rc)
	if status.LastRemoteConfigHash == nil {
		status.LastRemoteConfigHash = []byte{} // opamp-go refuses nil
	}
	if status.Status == protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED {
		b.lastApplied = rc.GetConfigHash()
		b.log.Info("applied remote config", "hash", fmt.Sprintf("%x", rc.GetConfigHash()))
	} else {
		b.log.Warn("refused remote config", "hash", fmt.Sprintf("%x", rc.GetConfigHash()), "err", status.ErrorMessage)
	}
	if err := oc.SetRemoteConfigStatus(status); err != nil {
		b.log.Error("send remote config status", "err", err)
	}
	b.sendEffectiveConfig(ctx, oc)
}

// opampLogger adapts slog to opamp-go's logger.
type opampLogger struct{ log *slog.Logger }

func (l opampLogger) Debugf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, fmt.Sprintf(format, v...))
}

func (l opampLogger) Errorf(ctx context.Context, format string, v ...any) {
	l.log.ErrorContext(ctx, fmt.Sprintf(format, v...))
}
