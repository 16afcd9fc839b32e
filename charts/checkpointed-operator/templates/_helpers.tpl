{{/* Names, labels and the lists of namespaces every template agrees on. */}}

{{- define "cjob.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "cjob.fullname" -}}
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

{{- define "cjob.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels on every resource; pass (dict "ctx" $ "component" "...") */}}
{{- define "cjob.labels" -}}
helm.sh/chart: {{ include "cjob.chart" .ctx }}
app.kubernetes.io/name: {{ include "cjob.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: checkpointed-jobs
app.kubernetes.io/component: {{ .component }}
{{- with .ctx.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels; pass (dict "ctx" $ "component" "...") */}}
{{- define "cjob.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cjob.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "cjob.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "cjob.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "cjob.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* "true" when the operator watches only the listed namespaces. */}}
{{- define "cjob.namespaced" -}}
{{- if .Values.watchNamespaces }}true{{ end -}}
{{- end -}}

{{/* Namespaces with driver RBAC and job NetworkPolicies, as a JSON list. */}}
{{- define "cjob.driverNamespaces" -}}
{{- $list := .Values.driver.namespaces -}}
{{- if not $list -}}
{{- $list = .Values.watchNamespaces | default (list .Release.Namespace) -}}
{{- end -}}
{{- $list | uniq | toJson -}}
{{- end -}}

{{/* Pod labels of the job pods the operator creates (see cjob_operator.manifests). */}}
{{- define "cjob.jobPodSelector" -}}
matchLabels:
  app.kubernetes.io/managed-by: cjob-operator
{{- end -}}

{{- define "cjob.minioFullname" -}}
{{- printf "%s-minio" (include "cjob.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
