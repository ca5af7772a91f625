// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package chart

// chartYAML is Chart.yaml; the version and appVersion are filled in.
const chartYAML = `apiVersion: v2
name: clustergate
description: >-
  clustergate, a Kubernetes aggregated API server: GardenerClusterKubeconfigs
  and time-limited, owner-bound break-glass Sessions whose proxy streams
  kubectl traffic to a target cluster.
type: application
version: %s
appVersion: %s
kubeVersion: ">=1.30.0-0"
home: https://github.com/clustergate/clustergate
sources:
- https://github.com/clustergate/clustergate
keywords:
- gardener
- break-glass
- aggregated-apiserver
`

const helmignore = `.git/
*.orig
*.rej
*~
`

// valuesTemplate is values.yaml; the defaults the artifacts give are
// filled in.
const valuesTemplate = `# Values of the clustergate chart. The chart is generated from the
# kustomize layouts of artifacts/ (make chart) and installs what they do,
# into the release's namespace:
#   helm install clustergate oci://<registry>/clustergate/charts/clustergate \
#     --version <version> -n clustergate-system --create-namespace
# docs/operations.md, "Installing with Helm", says what each value selects.

# clustergate-apiserver's image. A digest, when set, wins over the tag;
# an empty tag is the chart's appVersion. A release's chart pins the
# released digest.
image:
  repository: %s
  tag: ""
  digest: %q

# The server container's resources (docs/operations.md, "Sizing"); no CPU
# limit, which would throttle reconnect bursts and the cuts at expiry.
resources:
%s

# extraArgs are further flags of the server (docs/operations.md, "Flags"),
# for example --gardener-kubeconfig, --gardener-project or --external-url;
# extraVolumes and extraVolumeMounts add the Secrets they name.
extraArgs: []
extraVolumes: []
extraVolumeMounts: []

# highAvailability.enabled: the highly available layout (overlays/ha):
# replicas servers with a rolling update and anti-affinity on a 3-member
# etcd with TLS and snapshots. Off, one server keeps its objects in its
# embedded etcd on the PersistentVolumeClaim clustergate-data.
highAvailability:
  enabled: true
  replicas: %v

# The etcd members and snapshot jobs of the highly available layout.
etcd:
  image:
    repository: %s
    tag: %s
    digest: %q
  resources:
%s

tls:
  # source of the certificates. cert-manager (installed, with its CA
  # injector): a CA of clustergate's own issues the serving certificate
  # and, highly available, etcd's; the injector puts the CA into the
  # APIService. secret: you create existingSecret (tls.crt, tls.key,
  # ca.crt) for the serving certificate of clustergate.<namespace>.svc
  # and, highly available, clustergate-etcd-peer-tls and
  # clustergate-etcd-client-tls (docs/operations.md, "Certificates").
  source: cert-manager
  existingSecret: clustergate-serving-cert
  # caBundle: with source secret, the PEM of the CA the kube-aggregator
  # verifies the server with. Empty, the chart reads ca.crt from
  # existingSecret at install time (which must then exist).
  caBundle: ""

# PodDisruptionBudgets of the servers and etcd members (highly available).
podDisruptionBudget:
  enabled: true

# priorityClassName of every pod: the servers, etcd, the snapshot jobs.
priorityClassName: ""

# storageClassName of every PersistentVolumeClaim; empty, the default.
storageClassName: ""

# monitoring.enabled: the Prometheus Operator's ServiceMonitor and
# PrometheusRule, a Grafana dashboard ConfigMap and the metrics reader
# (artifacts/monitoring; docs/monitoring.md). Needs the
# monitoring.coreos.com CRDs.
monitoring:
  enabled: false
`

// valuesSchema makes Helm refuse values the chart does not know, with the
// path of the value, before it renders anything.
const valuesSchema = `{
  "$schema": "https://json-schema.org/draft-07/schema#",
  "type": "object",
  "additionalProperties": false,
  "definitions": {
    "image": {
      "type": "object",
      "additionalProperties": false,
      "required": ["repository"],
      "properties": {
        "repository": {"type": "string", "minLength": 1},
        "tag": {"type": "string"},
        "digest": {"type": "string", "pattern": "^(sha256:[a-f0-9]{64})?$"}
      }
    },
    "resources": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "requests": {"type": "object"},
        "limits": {"type": "object"},
        "claims": {"type": "array"}
      }
    }
  },
  "properties": {
    "global": {"type": "object"},
    "image": {"$ref": "#/definitions/image"},
    "resources": {"$ref": "#/definitions/resources"},
    "extraArgs": {"type": "array", "items": {"type": "string", "pattern": "^--"}},
    "extraVolumes": {"type": "array", "items": {"type": "object", "required": ["name"]}},
    "extraVolumeMounts": {"type": "array", "items": {"type": "object", "required": ["name", "mountPath"]}},
    "highAvailability": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "enabled": {"type": "boolean"},
        "replicas": {"type": "integer", "minimum": 2}
      }
    },
    "etcd": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "image": {"$ref": "#/definitions/image"},
        "resources": {"$ref": "#/definitions/resources"}
      }
    },
    "tls": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "source": {"enum": ["cert-manager", "secret"]},
        "existingSecret": {"type": "string", "minLength": 1},
        "caBundle": {"type": "string"}
      }
    },
    "podDisruptionBudget": {
      "type": "object",
      "additionalProperties": false,
      "properties": {"enabled": {"type": "boolean"}}
    },
    "priorityClassName": {"type": "string"},
    "storageClassName": {"type": "string"},
    "monitoring": {
      "type": "object",
      "additionalProperties": false,
      "properties": {"enabled": {"type": "boolean"}}
    }
  }
}
`

// helpers are the chart's named templates.
const helpers = `{{/*
clustergate.image prints (list $ image) as repository@digest, or
repository:tag with the chart's appVersion for an empty tag.
*/}}
{{- define "clustergate.image" -}}
{{- $root := index . 0 -}}
{{- $image := index . 1 -}}
{{- if $image.digest -}}
{{- printf "%s@%s" $image.repository $image.digest -}}
{{- else -}}
{{- printf "%s:%s" $image.repository ($image.tag | default $root.Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/*
clustergate.servingSecret is the Secret with the serving certificate.
*/}}
{{- define "clustergate.servingSecret" -}}
{{- if eq $.Values.tls.source "cert-manager" -}}
clustergate-serving-cert
{{- else -}}
{{- $.Values.tls.existingSecret -}}
{{- end -}}
{{- end -}}

{{/*
clustergate.caBundle is the APIService's caBundle without cert-manager:
tls.caBundle, else ca.crt of the existing Secret at install time.
*/}}
{{- define "clustergate.caBundle" -}}
{{- if $.Values.tls.caBundle -}}
{{- $.Values.tls.caBundle | b64enc -}}
{{- else -}}
{{- $ca := dig "data" "ca.crt" "" (lookup "v1" "Secret" $.Release.Namespace $.Values.tls.existingSecret) -}}
{{- if not $ca -}}
{{- fail (printf "tls.source is secret: set tls.caBundle to the PEM of the CA that issued the serving certificate, or create the Secret %s/%s with ca.crt before installing" $.Release.Namespace $.Values.tls.existingSecret) -}}
{{- end -}}
{{- $ca -}}
{{- end -}}
{{- end -}}
`

const notes = `clustergate {{ .Chart.AppVersion }} is installed in {{ .Release.Namespace }}
({{ if .Values.highAvailability.enabled }}{{ .Values.highAvailability.replicas }} replicas on a 3-member etcd{{ else }}one replica on its embedded etcd{{ end }}).

It serves once the kube-aggregator reaches it:
  kubectl wait --for=condition=Available apiservice/v1alpha1.clustergate.dev --timeout=5m
  kubectl api-resources --api-group=clustergate.dev

Then grant users the roles clustergate:session-user and friends
(docs/usage.md) and open a session:
  kubectl session open <target> --ttl=1h
`
