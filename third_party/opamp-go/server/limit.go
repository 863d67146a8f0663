// Added by shardwise (third_party/opamp-go.sh).

package server

// MaxMessageBytes is the largest WebSocket message the server reads from an
// agent; a larger one closes the connection. 0 means no limit, opamp-go's
// behaviour.
var MaxMessageBytes int64
