package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1beta1"
)

// Bounds on a remote configuration. opamp-go reads a whole message before
// it hands it over and offers no limit on that; the bridge bounds what it
// parses and writes.
const (
	// MaxRemoteEntries is the most entries a remote configuration may have.
	MaxRemoteEntries = 1000
	// MaxEntryBytes is the largest entry: the API server's limit on an
	// object stored in etcd (1.5 MiB).
	MaxEntryBytes = 3 << 19
)

// entry is one parsed entry of a remote configuration.
type entry struct {
	namespace, name string
	collector       v1beta1.OpenTelemetryCollector
	// spec are the spec's fields as the entry writes them.
	spec map[string]json.RawMessage
}

// parseEntry parses one remote configuration entry: key "<namespace>/<name>",
// body the YAML (or JSON) of an OpenTelemetryCollector. It never panics,
// whatever the input.
func parseEntry(key string, file *protobufs.AgentConfigFile) (entry, error) {
	ns, name, ok := strings.Cut(key, "/")
	if !ok || strings.Contains(name, "/") {
		return entry{}, fmt.Errorf("%q: key must be <namespace>/<name>", key)
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return entry{}, fmt.Errorf("%q: namespace: %s", key, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return entry{}, fmt.Errorf("%q: name: %s", key, strings.Join(errs, "; "))
	}
	if file == nil || len(strings.TrimSpace(string(file.GetBody()))) == 0 {
		return entry{}, fmt.Errorf("%q: empty body", key)
	}
	if n := len(file.GetBody()); n > MaxEntryBytes {
		return entry{}, fmt.Errorf("%q: %d bytes, more than the %d an object may have", key, n, MaxEntryBytes)
	}
	e := entry{namespace: ns, name: name}
	if err := yaml.UnmarshalStrict(file.GetBody(), &e.collector); err != nil {
		return entry{}, fmt.Errorf("%q: not an OpenTelemetryCollector: %w", key, err)
	}
	var raw struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(file.GetBody(), &raw); err != nil {
		return entry{}, fmt.Errorf("%q: not an OpenTelemetryCollector: %w", key, err)
	}
	e.spec = raw.Spec
	c := &e.collector
	if c.APIVersion != "" && c.APIVersion != v1beta1.GroupVersion.String() {
		return entry{}, fmt.Errorf("%q: apiVersion %q, want %s", key, c.APIVersion, v1beta1.GroupVersion)
	}
	if c.Kind != "" && c.Kind != "OpenTelemetryCollector" {
		return entry{}, fmt.Errorf("%q: kind %q, want OpenTelemetryCollector", key, c.Kind)
	}
	if (c.Name != "" && c.Name != name) || (c.Namespace != "" && c.Namespace != ns) {
		return entry{}, fmt.Errorf("%q: metadata names %s/%s, not the key", key, c.Namespace, c.Name)
	}
	if isReporting(c.Labels) {
		return entry{}, fmt.Errorf("%q: a remote configuration cannot set %s=true", key, LabelReporting)
	}
	return e, nil
}

// componentKinds are the kinds componentsAllowed always governs, as
// upstream; connectors and extensions only when componentsAllowed names them.
var componentKinds = []string{"receivers", "processors", "exporters"}

// checkComponents refuses components outside allowed. A component "type/id"
// is allowed when allowed lists "type/id" or "type". Empty allowed allows all.
func checkComponents(cfg *v1beta1.Config, allowed map[string][]string) error {
	if len(allowed) == 0 {
		return nil
	}
	configured := map[string]map[string]any{
		"receivers": cfg.Receivers.Object,
		"exporters": cfg.Exporters.Object,
	}
	if cfg.Processors != nil {
		configured["processors"] = cfg.Processors.Object
	}
	if cfg.Connectors != nil {
		configured["connectors"] = cfg.Connectors.Object
	}
	if cfg.Extensions != nil {
		configured["extensions"] = cfg.Extensions.Object
	}
	var refused []string
	for _, kind := range slices.Sorted(maps.Keys(configured)) {
		list, governed := allowed[kind]
		if !governed && !slices.Contains(componentKinds, kind) {
			continue
		}
		for _, id := range slices.Sorted(maps.Keys(configured[kind])) {
			typ, _, _ := strings.Cut(id, "/")
			if !slices.Contains(list, id) && !slices.Contains(list, typ) {
				refused = append(refused, kind+"."+id)
			}
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("components not allowed: %s", strings.Join(refused, ", "))
	}
	return nil
}

// plan is the writes a remote configuration needs.
type plan struct {
	creates, deletes []*v1beta1.OpenTelemetryCollector
	updates          []update
}

// update is a collector as read and as the remote config wants it.
type update struct {
	current, desired *v1beta1.OpenTelemetryCollector
}

// planRemoteConfig validates a whole remote configuration against the
// bridge's rules and the current collectors and returns the writes it
// needs. Any error means nothing may be written.
func (b *Bridge) planRemoteConfig(ctx context.Context, rc *protobufs.AgentRemoteConfig) (plan, error) {
	var p plan
	if rc.GetConfig() == nil {
		return p, errors.New("remote config has no config map")
	}
	files := rc.GetConfig().GetConfigMap()
	if len(files) > MaxRemoteEntries {
		return p, fmt.Errorf("remote config has %d entries, more than the %d a bridge takes", len(files), MaxRemoteEntries)
	}
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(files)) {
		if _, err := uuid.Parse(key); err == nil {
			// An agent connected through the proxy, as the bridge reports
			// it: the bridge does not configure those.
			continue
		}
		e, err := parseEntry(key, files[key]) // its errors name the key
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := b.planEntry(ctx, &p, e); err != nil {
			errs = append(errs, fmt.Errorf("%q: %w", key, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return plan{}, err
	}
	if err := b.planDeletes(ctx, &p, files); err != nil {
		return plan{}, err
	}
	return p, nil
}

// planEntry adds to p the create or update one entry of a remote
// configuration asks for, or says why the bridge may not make it.
func (b *Bridge) planEntry(ctx context.Context, p *plan, e entry) error {
	if b.namespace != "" && e.namespace != b.namespace {
		return fmt.Errorf("outside the bridge's namespace %s", b.namespace)
	}
	if b.namespace == "" && !b.cfg.mayWriteNamespace(e.namespace) {
		return fmt.Errorf("the OpAMPBridge's remoteConfigNamespaces do not include %s", e.namespace)
	}
	if err := checkComponents(&e.collector.Spec.Config, b.cfg.ComponentsAllowed); err != nil {
		return err
	}
	var current v1beta1.OpenTelemetryCollector
	err := b.client.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: e.name}, &current)
	switch {
	case apierrors.IsNotFound(err):
		c, err := b.newCollector(e)
		if err != nil {
			return err
		}
		p.creates = append(p.creates, c)
	case err != nil:
		return fmt.Errorf("read current collector: %w", err)
	case isReporting(current.Labels):
		return fmt.Errorf("cannot modify a collector labelled %s=true", LabelReporting)
	case !isManaged(current.Labels, b.name):
		return fmt.Errorf("cannot modify a collector without %s=true or %s=%s", LabelManaged, LabelManaged, b.name)
	default:
		spec, err := remoteSpec(&current.Spec, e.spec, b.cfg.remoteFields())
		if err != nil {
			return err
		}
		c := current.DeepCopy()
		c.Spec = spec
		p.updates = append(p.updates, update{current: &current, desired: c})
	}
	return nil
}

// newCollector is the collector an entry naming no existing one creates:
// managed by this bridge and marked as created by it.
func (b *Bridge) newCollector(e entry) (*v1beta1.OpenTelemetryCollector, error) {
	spec, err := remoteSpec(nil, e.spec, b.cfg.remoteFields())
	if err != nil {
		return nil, err
	}
	c := &v1beta1.OpenTelemetryCollector{}
	c.Namespace, c.Name = e.namespace, e.name
	c.Labels = maps.Clone(e.collector.Labels)
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	if !isManaged(c.Labels, b.name) {
		c.Labels[LabelManaged] = b.name
	}
	c.Labels[LabelCreatedBy] = CreatedByBridge
	c.Annotations = maps.Clone(e.collector.Annotations)
	c.Spec = spec
	return c, nil
}

// planDeletes adds to p the collectors the bridge created that the remote
// configuration no longer names, and refuses a configuration that would
// delete every one of them and create none, unless the OpAMPBridge allows it.
func (b *Bridge) planDeletes(ctx context.Context, p *plan, files map[string]*protobufs.AgentConfigFile) error {
	cs, err := b.collectors(ctx, b.client)
	if err != nil {
		return err
	}
	created := 0
	for _, c := range cs {
		if !c.managed || c.obj.Labels[LabelCreatedBy] != CreatedByBridge {
			continue
		}
		if b.namespace == "" && !b.cfg.mayWriteNamespace(c.obj.Namespace) {
			continue // not the bridge's to write, so not its to delete
		}
		created++
		if _, named := files[c.key()]; !named {
			p.deletes = append(p.deletes, c.obj.DeepCopy())
		}
	}
	if created > 0 && len(p.deletes) == created && len(p.creates) == 0 && !b.cfg.RemoteConfigMayDeleteAll {
		return fmt.Errorf("remote config would delete all %d collectors the bridge created and create none (what a server that lost its state sends); set the OpAMPBridge's remoteConfigMayDeleteAll to allow it", created)
	}
	return nil
}

// applyRemoteConfig validates a remote configuration, dry-runs every write
// on the API server, and only then writes. It returns the status to report.
func (b *Bridge) applyRemoteConfig(ctx context.Context, rc *protobufs.AgentRemoteConfig) *protobufs.RemoteConfigStatus {
	failed := func(err error) *protobufs.RemoteConfigStatus {
		return &protobufs.RemoteConfigStatus{
			LastRemoteConfigHash: rc.GetConfigHash(),
			Status:               protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED,
			ErrorMessage:         err.Error(),
		}
	}
	p, err := b.planRemoteConfig(ctx, rc)
	if err != nil {
		return failed(err)
	}
	// Dry-run first: the API server's own validation (schema, CEL) refuses
	// before anything is written.
	if err := b.write(ctx, p, true); err != nil {
		return failed(err)
	}
	if err := b.write(ctx, p, false); err != nil {
		return failed(err)
	}
	return &protobufs.RemoteConfigStatus{
		LastRemoteConfigHash: rc.GetConfigHash(),
		Status:               protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED,
	}
}

// write performs a plan; a dry run writes nothing.
func (b *Bridge) write(ctx context.Context, p plan, dryRun bool) error {
	var errs []error
	for _, c := range p.creates {
		co := []client.CreateOption{client.FieldOwner(fieldOwner)}
		if dryRun {
			co = append(co, client.DryRunAll)
		}
		if err := b.client.Create(ctx, c.DeepCopy(), co...); err != nil {
			errs = append(errs, fmt.Errorf("create %s/%s: %w", c.Namespace, c.Name, err))
		}
	}
	for _, u := range p.updates {
		// A merge patch of the spec alone: the operator's status writes in
		// between do not conflict with it.
		po := []client.PatchOption{client.FieldOwner(fieldOwner)}
		if dryRun {
			po = append(po, client.DryRunAll)
		}
		if err := b.client.Patch(ctx, u.desired.DeepCopy(), client.MergeFrom(u.current), po...); err != nil {
			errs = append(errs, fmt.Errorf("update %s/%s: %w", u.current.Namespace, u.current.Name, err))
		}
	}
	for _, c := range p.deletes {
		do := []client.DeleteOption{client.Preconditions{UID: &c.UID}}
		if dryRun {
			do = append(do, client.DryRunAll)
		}
		if err := b.client.Delete(ctx, c.DeepCopy(), do...); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("delete %s/%s: %w", c.Namespace, c.Name, err))
		}
	}
	return errors.Join(errs...)
}
