package controller

// The operator's --metrics-secure (cmd/operator) serves /metrics only to
// clients the API server authenticates and authorizes, which needs these:
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
