package bridge

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/open-telemetry/opamp-go/protobufs"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
)

// Config is the bridge's configuration file (remoteconfiguration.yaml):
// the OpAMPBridge's connection settings, the type the operator renders it
// from, with the keys of the upstream bridge's file.
type Config struct {
	v1alpha1.OpAMPBridgeConnection
}

// SystemNamespaces are the namespaces a bridge watching every namespace
// never writes collectors to unless RemoteConfigNamespaces names them.
var SystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// mayWriteNamespace says whether a remote configuration may create or
// change collectors in ns, for a bridge that watches every namespace.
func (c Config) mayWriteNamespace(ns string) bool {
	if len(c.RemoteConfigNamespaces) > 0 {
		return slices.Contains(c.RemoteConfigNamespaces, ns)
	}
	return !slices.Contains(SystemNamespaces, ns)
}

// LoadConfig reads a configuration file, expanding environment variables as
// the upstream bridge does, and validates it.
func LoadConfig(path string) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	return ParseConfig([]byte(os.ExpandEnv(string(raw))))
}

// ParseConfig parses and validates a configuration file's content.
func ParseConfig(raw []byte) (Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(raw, &c); err != nil {
		return Config{}, fmt.Errorf("parse config: %w", err)
	}
	return c, c.Validate()
}

// Validate checks what the bridge cannot start without.
func (c Config) Validate() error {
	u, err := url.Parse(strings.TrimSpace(c.Endpoint))
	if err != nil || u.Host == "" {
		return fmt.Errorf("config: endpoint %q is not a URL", c.Endpoint)
	}
	switch u.Scheme {
	case "ws", "wss", "http", "https":
	default:
		return fmt.Errorf("config: endpoint %q: scheme must be ws, wss, http or https", c.Endpoint)
	}
	plaintext := u.Scheme == "ws" || u.Scheme == "http"
	if plaintext && (c.TLS == nil || !c.TLS.Insecure) {
		return fmt.Errorf("config: endpoint %q sends the collectors' configurations and the headers in plain text; use wss:// or https://, or set tls.insecure: true to accept that", c.Endpoint)
	}
	if c.TLS != nil && c.TLS.Insecure && (u.Scheme == "wss" || u.Scheme == "https") {
		return fmt.Errorf("config: tls.insecure needs a ws:// or http:// endpoint, not %q", c.Endpoint)
	}
	if c.TLS != nil && c.TLS.Insecure && c.TLS.InsecureSkipVerify {
		return errors.New("config: tls.insecure and tls.insecure_skip_verify cannot both be true")
	}
	var errs []error
	if err := checkRemoteConfigFields(c.RemoteConfigFields); err != nil {
		errs = append(errs, err)
	}
	for _, ns := range c.RemoteConfigNamespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("config: remoteConfigNamespaces: %q: %s", ns, strings.Join(msgs, "; ")))
		}
	}
	for name := range c.Capabilities {
		if _, ok := protobufs.AgentCapabilities_value["AgentCapabilities_"+string(name)]; !ok {
			errs = append(errs, fmt.Errorf("config: unknown capability %q", name))
		}
	}
	return errors.Join(errs...)
}

// AgentCapabilities are the capabilities as OpAMP bit flags; ReportsStatus
// is always set.
func (c Config) AgentCapabilities() protobufs.AgentCapabilities {
	caps := protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus
	for name, on := range c.Capabilities {
		if v, ok := protobufs.AgentCapabilities_value["AgentCapabilities_"+string(name)]; ok && on {
			caps |= protobufs.AgentCapabilities(v)
		}
	}
	return caps
}

// Has says whether a capability is on.
func (c Config) Has(capability protobufs.AgentCapabilities) bool {
	return c.AgentCapabilities()&capability != 0
}

// HTTPHeader returns the headers for the OpAMP connection.
func (c Config) HTTPHeader() http.Header { return toHeader(c.Headers) }

func toHeader(m map[string]string) http.Header {
	if len(m) == 0 {
		return nil
	}
	h := http.Header{}
	for k, v := range m {
		h.Set(k, v)
	}
	return h
}

// Identity identifies the running bridge to the OpAMP server.
type Identity struct {
	// Name is the bridge's name (the OpAMPBridge resource's).
	Name string
	// Namespace is the bridge's namespace.
	Namespace string
	// Version is the bridge's version.
	Version string
}

// agentType is the service.name of the bridge, as upstream's.
const agentType = "io.opentelemetry.operator-opamp-bridge"

// AgentDescription is what the bridge reports about itself: upstream's
// identifying and non-identifying attributes plus the configured ones.
func (c Config) AgentDescription(id Identity, instanceID string) *protobufs.AgentDescription {
	host, _ := os.Hostname()
	attrs := map[string]string{"os.family": runtime.GOOS, "host.name": host}
	if id.Namespace != "" {
		attrs["k8s.namespace.name"] = id.Namespace
	}
	if c.Description != nil {
		maps.Copy(attrs, c.Description.NonIdentifyingAttributes)
	}
	attrs["opentelemetry.io/opamp.bridge.mode"] = "operator"
	return &protobufs.AgentDescription{
		IdentifyingAttributes: keyValues(map[string]string{
			"service.name":        agentType,
			"service.instance.id": instanceID,
			"service.version":     id.Version,
		}),
		NonIdentifyingAttributes: keyValues(attrs),
	}
}

func keyValues(m map[string]string) []*protobufs.KeyValue {
	out := make([]*protobufs.KeyValue, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, &protobufs.KeyValue{Key: k, Value: &protobufs.AnyValue{
			Value: &protobufs.AnyValue_StringValue{StringValue: m[k]},
		}})
	}
	return out
}
