{{/* Names, labels and the RBAC rules shared by several templates. */}}

{{- define "syncer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "syncer.fullname" -}}
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

{{- define "syncer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "syncer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "syncer.labels" -}}
{{ include "syncer.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "syncer.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "syncer.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "syncer.stateNamespace" -}}
{{- default .Release.Namespace .Values.agent.stateNamespace -}}
{{- end -}}

{{/* True (non-empty) when the pod runs the controller. */}}
{{- define "syncer.controllerEnabled" -}}
{{- if or (eq .Values.mode "controller") .Values.controller.enabled -}}true{{- end -}}
{{- end -}}

{{/* repository@digest when a digest is set (with :tag before it if one is given), else repository:tag. */}}
{{- define "syncer.image" -}}
{{- if .Values.image.digest -}}
{{- if .Values.image.tag -}}
{{- printf "%s:%s@%s" .Values.image.repository .Values.image.tag .Values.image.digest -}}
{{- else -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- end -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
What the RedisCluster controller calls, in the namespaces it watches. Keep in step with README.md
(a test compares the table there with the rendered rules).
*/}}
{{- define "syncer.controllerRules" -}}
- apiGroups: ["redis.syncer.dev"]
  resources: ["redisclusters"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["redis.syncer.dev"]
  resources: ["redisclusters/status"]
  verbs: ["patch"]
- apiGroups: ["redis.syncer.dev"]
  resources: ["redisclusters/finalizers"]
  verbs: ["update"]
- apiGroups: ["apps"]
  resources: ["statefulsets"]
  verbs: ["list", "watch", "create", "patch", "delete"]
- apiGroups: ["apps"]
  resources: ["controllerrevisions"]
  verbs: ["get"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["list", "watch", "create", "patch"]
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["list", "watch", "create", "patch"]
- apiGroups: ["policy"]
  resources: ["poddisruptionbudgets"]
  verbs: ["list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["list", "delete"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "list", "watch"]
{{- if .Values.controller.topology }}
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "patch"]
{{- end }}
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch", "update"]
{{- end -}}

{{/* What the agent calls in every cluster it syncs: the kinds a fleet repository holds, and Events. */}}
{{- define "syncer.agentRules" -}}
- apiGroups: ["redis.syncer.dev"]
  resources: ["redisclusters"]
  verbs: ["get", "list", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["get", "list", "create", "patch", "delete"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch", "update"]
{{- end -}}

{{/* The agent's sync-state ConfigMap, by name, in the state namespace. */}}
{{- define "syncer.stateRules" -}}
- apiGroups: [""]
  resources: ["configmaps"]
  resourceNames: ["syncer-sync-state"]
  verbs: ["get", "create", "patch"]
{{- end -}}

{{/* Leader election among the replicas, in the release namespace. */}}
{{- define "syncer.leaseRules" -}}
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "create", "update"]
{{- end -}}
