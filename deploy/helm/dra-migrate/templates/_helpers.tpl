{{/* Names: "dra-migrate" for a release named dra-migrate, as in deploy/base. */}}
{{- define "dra-migrate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "dra-migrate.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "dra-migrate.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "dra-migrate.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels every object carries (deploy/base's, plus Helm's own). */}}
{{- define "dra-migrate.labels" -}}
app.kubernetes.io/name: {{ include "dra-migrate.name" . }}
app.kubernetes.io/part-of: dra-migrate
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The webhook pods; also the selector of the Deployment, Service, PDB and NetworkPolicy. */}}
{{- define "dra-migrate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dra-migrate.name" . }}
app.kubernetes.io/component: webhook
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "dra-migrate.webhookLabels" -}}
{{ include "dra-migrate.labels" . }}
app.kubernetes.io/component: webhook
{{- end -}}

{{- define "dra-migrate.tlsSecretName" -}}
{{- printf "%s-tls" (include "dra-migrate.fullname" .) -}}
{{- end -}}

{{/*
The configuration file as a dict: `config` (a map, or YAML text from --set-file) with the
mode/targetVersion/strategy shortcuts applied.
*/}}
{{- define "dra-migrate.configDict" -}}
{{- $config := dict -}}
{{- if kindIs "string" .Values.config -}}
{{- $config = fromYaml .Values.config -}}
{{- if hasKey $config "Error" -}}
{{- fail (printf "config: not a YAML mapping: %s" (get $config "Error")) -}}
{{- end -}}
{{- else if .Values.config -}}
{{- $config = deepCopy .Values.config -}}
{{- end -}}
{{- if .Values.targetVersion -}}
{{- $_ := set $config "targetVersion" (toString .Values.targetVersion) -}}
{{- end -}}
{{- if .Values.strategy -}}
{{- $_ := set $config "strategy" .Values.strategy -}}
{{- end -}}
{{- $webhook := default (dict) (get $config "webhook") -}}
{{- if .Values.mode -}}
{{- $_ := set $webhook "mode" .Values.mode -}}
{{- end -}}
{{- /* the names the MutatingWebhookConfiguration's namespaceSelector excludes, for direct POSTs too */ -}}
{{- if not (hasKey $webhook "excludedNamespaces") -}}
{{- $_ := set $webhook "excludedNamespaces" (list "kube-system" .Release.Namespace) -}}
{{- end -}}
{{- $_ := set $config "webhook" $webhook -}}
{{- toYaml $config -}}
{{- end -}}

{{/*
matchConditions: the value (a list, or YAML text from --set-file), else the shipped conditions,
which were generated for the built-in mappings only and are refused for any other configuration.
*/}}
{{- define "dra-migrate.matchConditions" -}}
{{- $conditions := .Values.matchConditions -}}
{{- if kindIs "string" $conditions -}}
{{- $conditions = fromYamlArray $conditions -}}
{{- end -}}
{{- if not $conditions -}}
{{- $config := include "dra-migrate.configDict" . | fromYaml -}}
{{- $scope := (get (default (dict) (get $config "nodeName")) "scope") | default "claims" -}}
{{- $builtin := ternary true (get $config "builtinMappings") (not (hasKey $config "builtinMappings")) -}}
{{- if or (get $config "mappings") (not $builtin) (ne $scope "claims") -}}
{{- fail "matchConditions: the configuration changes the mapping table or nodeName.scope, so the shipped conditions do not fit it; generate them: dra-migrate webhook match-conditions --config <your config> > match-conditions.yaml, then --set-file matchConditions=match-conditions.yaml" -}}
{{- end -}}
{{- $conditions = .Files.Get "files/match-conditions.yaml" | fromYamlArray -}}
{{- end -}}
{{- toYaml $conditions -}}
{{- end -}}
