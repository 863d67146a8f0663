package v1beta1

// Hub marks OpenTelemetryCollector v1beta1, the storage version, as the
// version every other served version converts through
// (sigs.k8s.io/controller-runtime/pkg/conversion.Hub).
func (*OpenTelemetryCollector) Hub() {}
