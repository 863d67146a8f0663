package bridge

import (
	opampclient "github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/server"
)

// MaxServerMessageBytes is the largest WebSocket message the bridge reads
// from the OpAMP server: a remote configuration of many collectors fits; a
// larger message closes the connection before it is read (opamp-go then
// dials again), so a hostile server cannot make the bridge hold more.
const MaxServerMessageBytes = 64 << 20

// The read limits, set once for the process: opamp-go (patched,
// third_party/opamp-go.sh) reads them when it opens a WebSocket connection.
// The agent server's is maxProxyMessageBytes, as for its plain-HTTP agents.
func init() {
	opampclient.MaxMessageBytes = MaxServerMessageBytes
	server.MaxMessageBytes = maxProxyMessageBytes
}
