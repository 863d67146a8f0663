# Runs in the otel-agent-source-container-clone init container (the
# application's own image) as: sh -c "<this script>" -- <nginx configuration
# directory>. It stages the configuration directory in the shared volume and
# records the nginx version, which picks the module build.
set -eu
staged=/opt/opentelemetry-webserver/source-conf
cp -r "$1"/* "$staged"
version="$( { nginx -v; } 2>&1 )"
printf '%s\n' "${version##*/}" > "$staged/version.txt"
