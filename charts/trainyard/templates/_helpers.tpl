{{/*
The name of every object: the release's, or fullnameOverride.
*/}}
{{- define "trainyard.name" -}}
{{- .Values.fullnameOverride | default .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Labels of every object: the same as kustomize/ sets, so both installs make identical objects
(make test-chart). Helm adds app.kubernetes.io/managed-by itself at install.
*/}}
{{- define "trainyard.labels" -}}
app.kubernetes.io/name: trainyard
{{- end -}}

{{/*
The operator's arguments. --leader-elect whenever more than one replica runs.
*/}}
{{- define "trainyard.args" -}}
{{- $o := .Values.operator -}}
{{- if or .Values.leaderElection.enabled (gt (int .Values.replicas) 1) }}
- --leader-elect
{{- end }}
- --metrics-bind-address=:{{ .Values.metrics.port }}
- --health-probe-bind-address=:{{ .Values.health.port }}
{{- with $o.clusterDomain }}
- --cluster-domain={{ . }}
{{- end }}
{{- if not (kindIs "invalid" $o.maxConcurrentReconciles) }}
- --max-concurrent-reconciles={{ int64 $o.maxConcurrentReconciles }}
{{- end }}
{{- if not (kindIs "invalid" $o.kubeAPIQPS) }}
- --kube-api-qps={{ $o.kubeAPIQPS }}
{{- end }}
{{- if not (kindIs "invalid" $o.kubeAPIBurst) }}
- --kube-api-burst={{ int64 $o.kubeAPIBurst }}
{{- end }}
{{- if not (kindIs "invalid" $o.createParallelism) }}
- --create-parallelism={{ int64 $o.createParallelism }}
{{- end }}
{{- if not (kindIs "invalid" $o.maxWritesInFlight) }}
- --max-writes-in-flight={{ int64 $o.maxWritesInFlight }}
{{- end }}
{{- if not (kindIs "invalid" $o.maxUnscheduledPodsPerJob) }}
- --max-unscheduled-pods-per-job={{ int64 $o.maxUnscheduledPodsPerJob }}
{{- end }}
{{- if not (kindIs "invalid" $o.maxUnscheduledPods) }}
- --max-unscheduled-pods={{ int64 $o.maxUnscheduledPods }}
{{- end }}
{{- with $o.statusBatchInterval }}
- --status-batch-interval={{ . }}
{{- end }}
{{- with $o.logLevel }}
- --zap-log-level={{ . }}
{{- end }}
{{- range $o.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}

{{/*
A generated manifest among the chart's files (a copy `make manifests` keeps of kustomize/), as an
object.
*/}}
{{- define "trainyard.fileObject" -}}
{{- $obj := .root.Files.Get .path | fromYaml -}}
{{- if hasKey $obj "Error" -}}
{{- fail (printf "%s: %s" .path $obj.Error) -}}
{{- end -}}
{{- toYaml $obj -}}
{{- end -}}

{{/*
The ClusterRoles of a file of kustomize's user roles (documents separated by ---), named after
the release as every object is: trainyard-job-editor becomes <release>-job-editor.
*/}}
{{- define "trainyard.userRoles" -}}
{{- $name := include "trainyard.name" .root -}}
{{- range $doc := splitList "\n---\n" (.root.Files.Get .path) }}
{{- $role := fromYaml $doc }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ $name }}-{{ trimPrefix "trainyard-" $role.metadata.name }}
  labels:
{{- toYaml $role.metadata.labels | nindent 4 }}
rules:
{{- toYaml $role.rules | nindent 0 }}
{{- end }}
{{- end -}}
