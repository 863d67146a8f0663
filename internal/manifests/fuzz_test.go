package manifests_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests"
)

// FuzzBuildCollector decodes arbitrary bytes as an OpenTelemetryCollector and
// builds its objects and those of its TargetAllocator: bad input is an error,
// never a panic, and a build is a pure function of its input.
func FuzzBuildCollector(f *testing.F) {
	f.Add([]byte(upstreamExample))
	f.Add([]byte(`{"spec":{"mode":"statefulset","config":{"receivers":{"prometheus":null}}}}`))
	f.Add([]byte(`{"spec":{"mode":"statefulset","targetAllocator":{"enabled":true},"config":{"receivers":{"prometheus":{"config":{"scrape_configs":[{"job_name":1}]}}}}}}`))
	f.Add([]byte(`{"spec":{"mode":"statefulset","config":{"receivers":{"otlp":{"protocols":{"grpc":{"endpoint":":99999"}}}},"service":{"pipelines":{"m":{"receivers":["otlp"]}}}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var c v1beta1.OpenTelemetryCollector
		if err := yaml.Unmarshal(b, &c); err != nil {
			return
		}
		built, err := manifests.BuildCollector(&c, settings, nil)
		again, errAgain := manifests.BuildCollector(&c, settings, nil)
		require.Equal(t, err, errAgain)
		if err != nil {
			return
		}
		require.Equal(t, built, again, "same input, same objects")
		for _, o := range built.Objects {
			ta, ok := o.(*v1alpha1.TargetAllocator)
			if !ok {
				continue
			}
			_, _ = manifests.BuildTargetAllocator(manifests.AllocatorInput{TargetAllocator: ta, CollectorSelector: built.Selector}, settings)
		}
	})
}

// FuzzBuildTargetAllocator decodes arbitrary bytes as a TargetAllocator and
// builds its objects, with and without cluster-wide grants.
func FuzzBuildTargetAllocator(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"a","namespace":"b"},"spec":{"prometheusCR":{"enabled":true,"allowNamespaces":["b","c"],"secretNamespaces":["d"]}}}`))
	f.Add([]byte(`{"metadata":{"name":"a","namespace":"b"},"spec":{"scrapeConfigs":[{"job_name":"x","static_configs":[{"targets":["a:1"]}]}]}}`))
	f.Add([]byte(`{"spec":{"scrapeConfigs":[null, 3, "x"],"collectorNotReadyGracePeriod":"-1s"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var ta v1alpha1.TargetAllocator
		if err := yaml.Unmarshal(b, &ta); err != nil {
			return
		}
		for _, grants := range []bool{false, true} {
			s := settings
			s.AllowClusterWideGrants = grants
			_, _ = manifests.BuildTargetAllocator(manifests.AllocatorInput{TargetAllocator: &ta}, s)
		}
	})
}
