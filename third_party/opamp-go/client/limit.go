// Added by shardwise (third_party/opamp-go.sh).

package client

// MaxMessageBytes is the largest message the WebSocket client reads from the
// server; a larger one closes the connection (which the client then dials
// again). 0 means no limit, opamp-go's behaviour.
var MaxMessageBytes int64
