{{/* Names. */}}
{{- define "taas.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "taas.operatorName" -}}{{ include "taas.fullname" . }}-operator{{- end -}}
{{- define "taas.uiName" -}}{{ include "taas.fullname" . }}-ui{{- end -}}

{{- define "taas.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | quote }}
app.kubernetes.io/name: {{ .Chart.Name | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
{{- end -}}

{{- define "taas.operatorSelector" -}}
app.kubernetes.io/name: {{ .Chart.Name | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "taas.uiSelector" -}}
app.kubernetes.io/name: {{ .Chart.Name | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/component: ui
{{- end -}}

{{- define "taas.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "taas.leaseName" -}}
{{ .Values.operator.leaderElection.leaseName | default (include "taas.operatorName" .) }}
{{- end -}}

{{/* Namespaces the UI works in: ui.namespaces, else watchNamespaces, else "default". */}}
{{- define "taas.uiNamespaces" -}}
{{- if .Values.ui.namespaces -}}
{{ join "," .Values.ui.namespaces }}
{{- else if .Values.watchNamespaces -}}
{{ join "," .Values.watchNamespaces }}
{{- else -}}
default
{{- end -}}
{{- end -}}

{{- define "taas.tokenSecretName" -}}
{{ .Values.ui.token.existingSecret | default (printf "%s-token" (include "taas.uiName" .)) }}
{{- end -}}

{{/* Checks of values that the schema cannot express. */}}
{{- define "taas.validate" -}}
{{- if and .Values.watchNamespaces .Values.ui.enabled -}}
{{- range .Values.ui.namespaces -}}
{{- if not (has . $.Values.watchNamespaces) -}}
{{- fail (printf "ui.namespaces: %q is not in watchNamespaces %v; the operator would never run jobs created there" . $.Values.watchNamespaces) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and (gt (int .Values.operator.replicas) 1) (not .Values.operator.leaderElection.enabled) -}}
{{- fail "operator.replicas > 1 needs operator.leaderElection.enabled: two operators without leader election would both reconcile every job" -}}
{{- end -}}
{{- end -}}

{{/* The operator's flags (operator/cmd/main.cc). */}}
{{- define "taas.operatorArgs" -}}
{{- if .Values.watchNamespaces -}}
- --namespaces={{ join "," .Values.watchNamespaces }}
{{ end -}}
- --workers={{ .Values.operator.workers }}
- --health-address=0.0.0.0
- --health-port={{ .Values.operator.healthPort }}
- --log-level={{ .Values.operator.logLevel }}
- --node-failure-seconds={{ .Values.operator.nodeFailureSeconds }}
{{- if .Values.operator.leaderElection.enabled }}
- --leader-elect=true
- --lease-namespace=$(POD_NAMESPACE)
- --lease-name={{ include "taas.leaseName" . }}
- --lease-duration-seconds={{ .Values.operator.leaderElection.leaseDuration }}
- --identity=$(POD_NAME)
{{- else }}
- --leader-elect=false
{{- end }}
{{- end -}}
