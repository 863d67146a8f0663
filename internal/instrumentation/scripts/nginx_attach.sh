# Runs in the otel-agent-attach-nginx init container (the module image) as:
# sh -c "<this script>" -- <nginx configuration file name>. The clone init
# container has staged the application's configuration directory, and the
# nginx version, in /opt/opentelemetry-webserver/source-conf; the
# application container mounts that volume over its configuration directory.
#
# Environment: OTEL_NGINX_AGENT_CONF is the module configuration,
# OTEL_NGINX_SERVICE_INSTANCE_ID the pod name, substituted for the instance
# id placeholder.
set -eu
conf_file="$1"
agent=/opt/opentelemetry-webserver/agent
staged=/opt/opentelemetry-webserver/source-conf

cp -r /opt/opentelemetry/* "$agent"
version="$(cat "$staged/version.txt")"

# The SDK's logging configuration, pointing at the agent's log directory.
sed "s|__agent_log_dir__|$agent/logs|g" \
  "$agent/conf/opentelemetry_sdk_log4cxx.xml.template" > "$agent/conf/opentelemetry_sdk_log4cxx.xml"

# The module configuration, read by the http block's include of conf.d.
mkdir -p "$staged/conf.d"
printf '%s\n' "$OTEL_NGINX_AGENT_CONF" | sed "s|<<SID-PLACEHOLDER>>|$OTEL_NGINX_SERVICE_INSTANCE_ID|g" \
  > "$staged/conf.d/opentelemetry_agent.conf"

# Load the module built for this nginx version, and pass the resource
# attributes through to it, at the top of the main configuration file.
main="$staged/$conf_file"
{
  printf 'env OTEL_RESOURCE_ATTRIBUTES;\n'
  printf 'load_module %s/WebServerModule/Nginx/%s/ngx_http_opentelemetry_module.so;\n' "$agent" "$version"
  cat "$main"
} > "$main.otel"
mv "$main.otel" "$main"
