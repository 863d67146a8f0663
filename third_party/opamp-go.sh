#!/usr/bin/env bash
# Regenerates third_party/opamp-go: github.com/open-telemetry/opamp-go v0.23.0,
# copied from the module cache with one patch: a read limit on WebSocket
# messages, in the client and in the server. opamp-go reads a whole message
# into memory before it hands it over and offers no limit, so an OpAMP
# server (or whoever controls the connection) could make the bridge hold any
# amount, and so could any client of the bridge's agent server. The patch
# adds client.MaxMessageBytes and server.MaxMessageBytes (0, the default,
# keeps opamp-go's behaviour) and sets them on each connection
# (gorilla/websocket's SetReadLimit: a larger message closes it). What would
# let it go: the same option in opamp-go. The main module replaces the
# module with this copy; make verify runs this script and fails on a diff.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=v0.23.0
dst="$root/third_party/opamp-go"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$root/go.mod" "$tmp/go.mod"
cp "$root/go.sum" "$tmp/go.sum"
go mod edit -dropreplace=github.com/open-telemetry/opamp-go "$tmp/go.mod"
src=$(cd "$root" && GOFLAGS=-mod=mod go mod download -modfile="$tmp/go.mod" -json "github.com/open-telemetry/opamp-go@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[[ -d "$src" ]] || { echo "opamp-go $version not in the module cache" >&2; exit 1; }

rm -rf "$dst"
mkdir -p "$dst"
cp "$src/go.mod" "$src/go.sum" "$src/LICENSE" "$dst/"
(cd "$src" && find . -type f -name '*.go' ! -name '*_test.go' ! -path '*/testdata/*' ! -path './internal/examples/*' \
  -print0 | xargs -0 cp --parents -t "$dst")
chmod -R u+w "$dst"

cat > "$dst/client/limit.go" <<'GO'
// Added by shardwise (third_party/opamp-go.sh).

package client

// MaxMessageBytes is the largest message the WebSocket client reads from the
// server; a larger one closes the connection (which the client then dials
// again). 0 means no limit, opamp-go's behaviour.
var MaxMessageBytes int64
GO
sed -i 's/^\tc.conn = conn$/\tif MaxMessageBytes > 0 {\n\t\tconn.SetReadLimit(MaxMessageBytes)\n\t}\n\tc.conn = conn/' "$dst/client/wsclient.go"
grep -q 'conn.SetReadLimit(MaxMessageBytes)' "$dst/client/wsclient.go"

cat > "$dst/server/limit.go" <<'GO'
// Added by shardwise (third_party/opamp-go.sh).

package server

// MaxMessageBytes is the largest WebSocket message the server reads from an
// agent; a larger one closes the connection. 0 means no limit, opamp-go's
// behaviour.
var MaxMessageBytes int64
GO
perl -0pi -e 's/(\tconn, err := s.wsUpgrader.Upgrade\(w, req, nil\)\n\tif err != nil \{\n(?:.*\n)*?\t\treturn\n\t\}\n)/$1\tif MaxMessageBytes > 0 {\n\t\tconn.SetReadLimit(MaxMessageBytes)\n\t}\n/' "$dst/server/serverimpl.go"
grep -q 'conn.SetReadLimit(MaxMessageBytes)' "$dst/server/serverimpl.go"
