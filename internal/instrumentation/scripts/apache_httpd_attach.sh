# Runs in the otel-agent-attach-apache init container (the Apache module
# image) as: sh -c "<this script>" -- <apache configuration directory>.
# The otel-agent-source-container-clone init container has already copied the
# application's configuration directory into the shared volume mounted at
# /opt/opentelemetry-webserver/source-conf; the application container mounts
# that volume over its configuration directory.
#
# Environment: OTEL_APACHE_AGENT_CONF is the module configuration to write,
# APACHE_SERVICE_INSTANCE_ID the pod name, substituted for the instance id
# placeholder.
set -eu
conf_dir="$1"
agent=/opt/opentelemetry-webserver/agent
staged=/opt/opentelemetry-webserver/source-conf

cp -r /opt/opentelemetry/* "$agent"

# The SDK's logging configuration, pointing at the agent's log directory.
sed "s|__agent_log_dir__|$agent/logs|g" \
  "$agent/conf/opentelemetry_sdk_log4cxx.xml.template" > "$agent/conf/opentelemetry_sdk_log4cxx.xml"

# The module configuration, with this pod's name as service instance id.
printf '%s\n' "$OTEL_APACHE_AGENT_CONF" | sed "s|<<SID-PLACEHOLDER>>|$APACHE_SERVICE_INSTANCE_ID|g" \
  > "$staged/opentelemetry_agent.conf"

# Load it from the application's own httpd.conf.
printf '\nInclude %s/opentelemetry_agent.conf\n' "$conf_dir" >> "$staged/httpd.conf"
