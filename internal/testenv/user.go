package testenv

import (
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// UserConfig returns the client configuration of a new user of the control
// plane, authenticated by a client certificate and allowed only what RBAC
// grants name or groups: for tests of code that runs with restricted rights.
func (e *Env) UserConfig(tb testing.TB, name string, groups ...string) *rest.Config {
	tb.Helper()
	u, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, e.Config)
	if err != nil {
		tb.Fatalf("add user %s: %v", name, err)
	}
	return u.Config()
}
