{{/* The chart name, or nameOverride. */}}
{{- define "shardwise.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The prefix of every object name: fullnameOverride, else the release name, with the chart name unless
the release name contains it. */}}
{{- define "shardwise.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "shardwise.operatorName" -}}{{ include "shardwise.fullname" . }}-operator{{- end }}
{{- define "shardwise.webhookService" -}}{{ include "shardwise.fullname" . }}-webhook-service{{- end }}
{{- define "shardwise.webhookSecret" -}}{{ include "shardwise.fullname" . }}-webhook-server-cert{{- end }}
{{- define "shardwise.webhookConfiguration" -}}{{ include "shardwise.fullname" . }}-mutating-webhook-configuration{{- end }}
{{- define "shardwise.certificate" -}}{{ include "shardwise.fullname" . }}-serving-cert{{- end }}
{{- define "shardwise.issuer" -}}{{ include "shardwise.fullname" . }}-selfsigned-issuer{{- end }}

{{- define "shardwise.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "shardwise.operatorName" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "shardwise.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "shardwise.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select the operator's pods. */}}
{{- define "shardwise.selectorLabels" -}}
app.kubernetes.io/name: {{ include "shardwise.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/* An image reference from {repository, tag}; an empty tag is the chart's appVersion. */}}
{{- define "shardwise.image" -}}
{{- $img := index . 0 }}{{ $root := index . 1 -}}
{{ $img.repository }}:{{ default $root.Chart.AppVersion $img.tag }}
{{- end }}

{{/* Leader election is on with more than one replica, or when asked for. */}}
{{- define "shardwise.leaderElect" -}}
{{- if or .Values.leaderElection.enabled (gt (int .Values.replicas) 1) }}true{{ end }}
{{- end }}

{{/* The documents of a generated file (files/), as a list of maps. */}}
{{- define "shardwise.generated" -}}
{{- $docs := list }}
{{- range regexSplit "(?m)^---\\s*$" (.Files.Get .path) -1 }}
{{- if trim . }}{{ $docs = append $docs (fromYaml .) }}{{ end }}
{{- end }}
{{- toYaml (dict "docs" $docs) }}
{{- end }}
