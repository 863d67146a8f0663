package internal

import (
	_ "github.com/gin-gonic/gin"
	_ "github.com/prometheus-operator/prometheus-operator/pkg/prometheus"
	_ "github.com/prometheus-operator/prometheus-operator/pkg/k8sutil"
	_ "github.com/prometheus-operator/prometheus-operator/pkg/assets"
	_ "github.com/prometheus-operator/prometheus-operator/pkg/operator"
	_ "github.com/prometheus/prometheus/config"
	_ "github.com/prometheus/prometheus/discovery"
	_ "github.com/prometheus/prometheus/discovery/install"
	_ "github.com/prometheus/prometheus/discovery/targetgroup"
	_ "github.com/prometheus/prometheus/model/labels"
	_ "github.com/prometheus/prometheus/model/relabel"
	_ "sigs.k8s.io/controller-runtime"
)
