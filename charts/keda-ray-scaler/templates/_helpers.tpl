{{/* The release's full name: the chart's name unless the release is called otherwise. */}}
{{- define "krs.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "krs.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: scaler
{{- end -}}

{{- define "krs.labels" -}}
{{ include "krs.selectorLabels" . }}
app.kubernetes.io/part-of: keda-ray-scaler
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "krs.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "krs.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The issuer of both certificates: the user's, or the CA ClusterIssuer the chart makes. */}}
{{- define "krs.issuerRef" -}}
{{- if .Values.certManager.issuerRef.name -}}
name: {{ .Values.certManager.issuerRef.name }}
kind: {{ .Values.certManager.issuerRef.kind }}
group: {{ .Values.certManager.issuerRef.group }}
{{- else -}}
name: {{ include "krs.fullname" . }}-ca
kind: Issuer
group: cert-manager.io
{{- end -}}
{{- end -}}

{{/* A file from a Secret key: "<mount dir>/<secret>/<key>". */}}
{{- define "krs.promFile" -}}
/etc/keda-ray-scaler/prometheus/{{ .name }}/{{ .key }}
{{- end -}}
