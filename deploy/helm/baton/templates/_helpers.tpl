{{/*
Names, labels and the small decisions several templates share.
*/}}

{{/* The chart's name, or nameOverride. */}}
{{- define "baton.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The fully qualified name of every object: fullnameOverride, or the release name (with the
chart's name appended unless the release name already contains it). 63 characters at most
(DNS label).
*/}}
{{- define "baton.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "baton.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels that select Baton's pods; never change them on an installed release. */}}
{{- define "baton.selectorLabels" -}}
app.kubernetes.io/name: {{ include "baton.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "baton.labels" -}}
helm.sh/chart: {{ include "baton.chart" . }}
{{ include "baton.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: baton
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "baton.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "baton.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "baton.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) -}}
{{- end -}}

{{/* The Service's name inside the cluster: what KEDA dials and Baton's certificate must name. */}}
{{- define "baton.serviceHost" -}}
{{- printf "%s.%s.svc.%s" (include "baton.fullname" .) .Release.Namespace .Values.clusterDomain -}}
{{- end -}}

{{/* The name the TLS probes dial (mapped to 127.0.0.1 in the pod by hostAliases). */}}
{{- define "baton.probeHost" -}}
{{- default (include "baton.serviceHost" .) .Values.tls.probeHost -}}
{{- end -}}

{{/*
Which Redis: "url", "secret" or "embedded"; fails with the fix when none is chosen. A
production install names its Redis; the embedded Redis (a private redis-server in the pod, on
an emptyDir) is for trying the chart only, and must be asked for.
*/}}
{{- define "baton.redisMode" -}}
{{- $r := .Values.redis -}}
{{- if and $r.url $r.existingSecret -}}
{{- fail "redis: set redis.url or redis.existingSecret, not both" -}}
{{- else if $r.url -}}
url
{{- else if $r.existingSecret -}}
secret
{{- else if $r.embedded -}}
embedded
{{- else -}}
{{- fail "redis: Baton needs a Redis. Set redis.url (e.g. redis://redis-master:6379) or redis.existingSecret (a Secret whose key redis.existingSecretKey holds the URL, password included), or, to try the chart without one, redis.embedded=true (a private redis-server per pod on an emptyDir: one replica, nothing survives the pod)" -}}
{{- end -}}
{{- end -}}

{{/* The path of the CA file the probes trust ("" = the system's roots). */}}
{{- define "baton.tlsCaPath" -}}
{{- if .Values.tls.caKey -}}/etc/baton/tls/{{ .Values.tls.caKey }}{{- end -}}
{{- end -}}

{{/*
The probe command over TLS: `baton probe` (grpc.health.v1 Check, exit 0 when SERVING), as
Kubernetes' native grpc probes cannot speak TLS. Called with (dict "ctx" $ "timeoutMs" N).
*/}}
{{- define "baton.execProbe" -}}
{{- $ := .ctx -}}
exec:
  command:
    - /usr/local/bin/baton
    - probe
    - --addr
    - https://{{ include "baton.probeHost" $ }}:50051
    - --timeout-ms
    - {{ .timeoutMs | quote }}
    {{- with include "baton.tlsCaPath" $ }}
    - --ca-file
    - {{ . }}
    {{- end }}
    {{- if $.Values.tls.clientAuth.enabled }}
    {{- if $.Values.tls.clientAuth.probeSecret }}
    - --client-cert
    - /etc/baton/probe-tls/tls.crt
    - --client-key
    - /etc/baton/probe-tls/tls.key
    {{- else }}
    - --client-cert
    - /etc/baton/tls/tls.crt
    - --client-key
    - /etc/baton/tls/tls.key
    {{- end }}
    {{- end }}
{{- end -}}
