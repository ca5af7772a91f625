{{/*
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
