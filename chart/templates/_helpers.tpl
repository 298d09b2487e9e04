{{/* Names */}}

{{- define "network-enforcer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "network-enforcer.fullname" -}}
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

{{- define "network-enforcer.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/part-of: network-enforcer
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "enforcer") */}}
{{- define "network-enforcer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "network-enforcer.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "network-enforcer.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The Service that receives ztunnel records (Istio). */}}
{{- define "network-enforcer.otlpService" -}}
{{- printf "%s-otlp" (include "network-enforcer.fullname" .) -}}
{{- end -}}

{{/* The headless Service of the same listeners: a gRPC node agent resolves
every enforcer pod through it and balances its requests over them, so that a
request that a standby refuses is retried on the leader. */}}
{{- define "network-enforcer.otlpHeadlessService" -}}
{{- printf "%s-otlp-headless" (include "network-enforcer.fullname" .) -}}
{{- end -}}

{{/* The default collector's Service. */}}
{{- define "network-enforcer.collectorService" -}}
{{- printf "%s-collector" (include "network-enforcer.fullname" .) -}}
{{- end -}}

{{/* The review page's Service, rendered when the page listens off loopback. */}}
{{- define "network-enforcer.reviewService" -}}
{{- printf "%s-review" (include "network-enforcer.fullname" .) -}}
{{- end -}}

{{/*
"true" when the review page is served on an address other than loopback:
reachable from the network, so it has a Service, a port in the NetworkPolicy
and, by default, TLS.
*/}}
{{- define "network-enforcer.reviewExposed" -}}
{{- $r := .Values.controller.review -}}
{{- if $r.enabled -}}
{{- $host := trimSuffix (printf ":%s" (include "network-enforcer.port" $r.endpoint)) $r.endpoint | trimPrefix "[" | trimSuffix "]" -}}
{{- if not (or (eq $host "localhost") (eq $host "::1") (hasPrefix "127." $host)) -}}
true
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The review page's TLS mode, auto resolved: issuer off loopback, none on it. */}}
{{- define "network-enforcer.reviewTLSMode" -}}
{{- $r := .Values.controller.review -}}
{{- if not $r.enabled -}}
none
{{- else if eq $r.tls.mode "auto" -}}
{{- ternary "issuer" "none" (eq (include "network-enforcer.reviewExposed" .) "true") -}}
{{- else -}}
{{- $r.tls.mode -}}
{{- end -}}
{{- end -}}

{{/* The DNS names of a Service: (dict "root" $ "service" NAME), comma-separated. */}}
{{- define "network-enforcer.serviceDNSNames" -}}
{{- $ns := .root.Release.Namespace -}}
{{- printf "%s,%s.%s,%s.%s.svc,%s.%s.svc.%s" .service .service $ns .service $ns .service $ns .root.Values.clusterDomain -}}
{{- end -}}

{{/* The port of a host:port endpoint. */}}
{{- define "network-enforcer.port" -}}
{{- splitList ":" . | last -}}
{{- end -}}

{{/* Paths inside the pods */}}
{{- define "network-enforcer.configDir" -}}/etc/network-enforcer{{- end -}}
{{- define "network-enforcer.tlsDir" -}}/etc/network-enforcer/tls{{- end -}}

{{/* Pod security: the image's non-root user; the CSI driver gives the key files to its group. */}}
{{- define "network-enforcer.runAsUser" -}}65532{{- end -}}

{{/* Provider and TLS */}}

{{- define "network-enforcer.provider" -}}
{{- .Values.controller.provider.name -}}
{{- end -}}

{{/* The selected provider's values. */}}
{{- define "network-enforcer.providerValues" -}}
{{- toYaml (get .Values.controller.provider (include "network-enforcer.provider" .)) -}}
{{- end -}}

{{/* The TLS mode of the flow-source hop. */}}
{{- define "network-enforcer.flowsMode" -}}
{{- $p := include "network-enforcer.providerValues" . | fromYaml -}}
{{- $p.tls.mode -}}
{{- end -}}

{{/*
The namespace of the flow source's existing Secret: the release namespace
unless the provider's values name another (Calico and Cilium only).
*/}}
{{- define "network-enforcer.flowsSecretNamespace" -}}
{{- $p := include "network-enforcer.providerValues" . | fromYaml -}}
{{- default .Release.Namespace $p.tls.existingSecret.namespace -}}
{{- end -}}

{{/* "true" when the flow source's Secret is read by name in another namespace. */}}
{{- define "network-enforcer.flowsSecretRemote" -}}
{{- if and (eq (include "network-enforcer.flowsMode" .) "existingSecret") (ne (include "network-enforcer.flowsSecretNamespace" .) .Release.Namespace) -}}
true
{{- end -}}
{{- end -}}

{{/* "true" when the chart has cert-manager issue Goldmane's client certificate from Calico's CA. */}}
{{- define "network-enforcer.calicoIssue" -}}
{{- $c := .Values.controller.provider.calico.tls -}}
{{- if and (eq (include "network-enforcer.provider" .) "calico") (eq $c.mode "existingSecret") $c.calicoCA.issue -}}
true
{{- end -}}
{{- end -}}

{{/* The name of the flow source's existing Secret. */}}
{{- define "network-enforcer.flowsSecretName" -}}
{{- $p := include "network-enforcer.providerValues" . | fromYaml -}}
{{- if $p.tls.existingSecret.name -}}
{{- $p.tls.existingSecret.name -}}
{{- else if include "network-enforcer.calicoIssue" . -}}
{{- printf "%s-goldmane-client" (include "network-enforcer.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* The chart's CA Issuer. */}}
{{- define "network-enforcer.caIssuer" -}}
{{- printf "%s-ca" (include "network-enforcer.fullname" .) -}}
{{- end -}}

{{/*
An issuer reference with the chart's CA Issuer for an empty name:
(dict "root" $ "issuer" VALUES), as YAML.
*/}}
{{- define "network-enforcer.issuerRef" -}}
{{- if .issuer.name -}}
name: {{ .issuer.name }}
kind: {{ .issuer.kind }}
group: {{ .issuer.group }}
{{- else -}}
name: {{ include "network-enforcer.caIssuer" .root }}
kind: Issuer
group: cert-manager.io
{{- end -}}
{{- end -}}

{{/* "true" when the telemetry hop of the enforcer uses an issuer. */}}
{{- define "network-enforcer.eventsIssuer" -}}
{{- $t := .Values.telemetry -}}
{{- if or (and (eq $t.collectorStrategy "default") (has $t.default.tls.mode (list "issuer" "csi"))) (and (eq $t.collectorStrategy "external") (has $t.external.tls.mode (list "issuer" "csi"))) -}}
true
{{- end -}}
{{- end -}}

{{/* The issuer values of the telemetry hop. */}}
{{- define "network-enforcer.eventsIssuerValues" -}}
{{- if eq .Values.telemetry.collectorStrategy "default" -}}
{{- toYaml .Values.telemetry.default.tls.issuer -}}
{{- else -}}
{{- toYaml .Values.telemetry.external.tls.issuer -}}
{{- end -}}
{{- end -}}

{{/* "true" when some hop uses the chart's own CA. */}}
{{- define "network-enforcer.needsCA" -}}
{{- $istio := .Values.controller.provider.istio.tls -}}
{{- if and (eq (include "network-enforcer.provider" .) "istio") (has $istio.mode (list "issuer" "csi")) (not $istio.issuer.name) -}}
true
{{- else if and (eq (include "network-enforcer.reviewTLSMode" .) "issuer") (not .Values.controller.review.tls.issuer.name) -}}
true
{{- else if and (include "network-enforcer.scaleOut" .) (has .Values.controller.scaleOut.tls.mode (list "issuer" "csi")) (not .Values.controller.scaleOut.tls.issuer.name) -}}
true
{{- else if include "network-enforcer.eventsIssuer" . -}}
{{- $i := include "network-enforcer.eventsIssuerValues" . | fromYaml -}}
{{- if not $i.name -}}
true
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The key pairs that cert-manager issues, one per hop in issuer or csi mode, by
hop: flows (the enforcer's side of the flow hop: the server of the node
agents' hop with Istio, the client of Goldmane or Hubble Relay otherwise),
nodeAgent (the node agents' client), events (the enforcer's client of the
collector), collector (the default collector's server) and review (the review
page's server, issuer mode only). Each names its
mode, the Certificate and Secret (issuer mode), the issuer and the subject;
the Certificates (certificates.yaml) and the pods' volumes are made from it.
*/}}
{{- define "network-enforcer.issuedHops" -}}
{{- $fullname := include "network-enforcer.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- $c := .Values.controller -}}
{{- $provider := include "network-enforcer.provider" . -}}
{{- $p := include "network-enforcer.providerValues" . | fromYaml -}}
{{- $uid := include "network-enforcer.runAsUser" . -}}
{{- $hops := dict -}}
{{- if has $p.tls.mode (list "issuer" "csi") -}}
{{- if eq $provider "istio" -}}
{{- $svc := include "network-enforcer.otlpService" . -}}
{{- $dnsNames := printf "%s,%s" (include "network-enforcer.serviceDNSNames" (dict "root" . "service" $svc)) (include "network-enforcer.serviceDNSNames" (dict "root" . "service" (include "network-enforcer.otlpHeadlessService" .))) -}}
{{- $_ := set $hops "flows" (dict "mode" $p.tls.mode "name" (printf "%s-otlp-server" $fullname) "issuer" $p.tls.issuer "commonName" (printf "%s.%s.svc" $svc $ns) "dnsNames" $dnsNames "usages" "server auth" "duration" $c.certificateDuration "fsGroup" $uid) -}}
{{- if ne .Values.nodeAgent.mode "none" -}}
{{- $fb := eq .Values.nodeAgent.mode "fluent-bit" -}}
{{- $agent := printf "%s-%s" $fullname (ternary "fluent-bit" "node-agent" $fb) -}}
{{- $_ := set $hops "nodeAgent" (dict "mode" $p.tls.mode "name" (printf "%s-client" $agent) "issuer" $p.tls.issuer "commonName" $agent "usages" "client auth" "duration" (ternary .Values.nodeAgent.fluentBit.certificateDuration $c.certificateDuration $fb)) -}}
{{- end -}}
{{- else -}}
{{- $_ := set $hops "flows" (dict "mode" $p.tls.mode "name" (printf "%s-flows-client" $fullname) "issuer" $p.tls.issuer "commonName" (printf "%s.%s" $fullname $ns) "usages" "client auth" "duration" $c.certificateDuration "fsGroup" $uid) -}}
{{- end -}}
{{- end -}}
{{- if include "network-enforcer.eventsIssuer" . -}}
{{- $t := .Values.telemetry -}}
{{- $mode := ternary $t.default.tls.mode $t.external.tls.mode (eq $t.collectorStrategy "default") -}}
{{- $_ := set $hops "events" (dict "mode" $mode "name" (printf "%s-events-client" $fullname) "issuer" (include "network-enforcer.eventsIssuerValues" . | fromYaml) "commonName" (printf "%s.%s" $fullname $ns) "usages" "client auth" "duration" $c.certificateDuration "fsGroup" $uid) -}}
{{- end -}}
{{- $so := $c.scaleOut -}}
{{- if and (include "network-enforcer.scaleOut" .) (has $so.tls.mode (list "issuer" "csi")) -}}
{{- $leader := include "network-enforcer.leaderServerName" . -}}
{{- $_ := set $hops "peers" (dict "mode" $so.tls.mode "name" (printf "%s-peers" $fullname) "issuer" $so.tls.issuer "commonName" $leader "dnsNames" $leader "usages" "server auth,client auth" "duration" $c.certificateDuration "fsGroup" $uid) -}}
{{- end -}}
{{- $d := .Values.telemetry.default -}}
{{- if and (eq .Values.telemetry.collectorStrategy "default") (has $d.tls.mode (list "issuer" "csi")) -}}
{{- $svc := include "network-enforcer.collectorService" . -}}
{{- $_ := set $hops "collector" (dict "mode" $d.tls.mode "name" (printf "%s-collector-server" $fullname) "issuer" $d.tls.issuer "commonName" (printf "%s.%s.svc" $svc $ns) "dnsNames" (include "network-enforcer.serviceDNSNames" (dict "root" . "service" $svc)) "usages" "server auth" "duration" $c.certificateDuration "fsGroup" $uid) -}}
{{- end -}}
{{- if eq (include "network-enforcer.reviewTLSMode" .) "issuer" -}}
{{- $r := $c.review -}}
{{- $svc := include "network-enforcer.reviewService" . -}}
{{- $dnsNames := join "," (concat (splitList "," (include "network-enforcer.serviceDNSNames" (dict "root" . "service" $svc))) (list "localhost") $r.tls.dnsNames) -}}
{{- $_ := set $hops "review" (dict "mode" "issuer" "name" (printf "%s-review-server" $fullname) "issuer" $r.tls.issuer "commonName" (printf "%s.%s.svc" $svc $ns) "dnsNames" $dnsNames "usages" "server auth" "duration" $c.certificateDuration "fsGroup" $uid) -}}
{{- end -}}
{{- toYaml $hops -}}
{{- end -}}

{{/*
The volume source of a hop's key pair (an entry of issuedHops, with "root"):
the Secret of its Certificate in issuer mode, the CSI driver's in csi mode.
*/}}
{{- define "network-enforcer.issuedVolume" -}}
{{- if eq .mode "csi" -}}
{{- include "network-enforcer.csiVolume" . -}}
{{- else -}}
secret:
  secretName: {{ .name }}
{{- end -}}
{{- end -}}

{{/*
Labels of the Secrets that cert-manager writes for the chart's Certificates.
cert-manager keeps a Secret after its Certificate is deleted (unless it runs
with --enable-certificate-owner-ref), so helm uninstall leaves them: these
labels find them (kubectl delete secret -l app.kubernetes.io/instance=RELEASE).
*/}}
{{- define "network-enforcer.secretTemplate" -}}
secretTemplate:
  labels:
    app.kubernetes.io/name: {{ include "network-enforcer.name" . }}
    app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The Certificate of a hop in issuer mode (an entry of issuedHops, with "root"). */}}
{{- define "network-enforcer.certificate" -}}
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: {{ .name }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "network-enforcer.labels" .root | nindent 4 }}
spec:
  secretName: {{ .name }}
  {{- include "network-enforcer.secretTemplate" .root | nindent 2 }}
  commonName: {{ .commonName | quote }}
  {{- with .dnsNames }}
  dnsNames:
    {{- range splitList "," . }}
    - {{ . | quote }}
    {{- end }}
  {{- end }}
  duration: {{ .duration }}
  usages:
    - digital signature
    - key encipherment
    {{- range splitList "," .usages }}
    - {{ . }}
    {{- end }}
  privateKey:
    algorithm: ECDSA
    size: 256
    # A new key with each renewal, as the CSI driver makes one per pod.
    rotationPolicy: Always
  issuerRef:
    {{- include "network-enforcer.issuerRef" (dict "root" .root "issuer" .issuer) | nindent 4 }}
{{- end -}}

{{/*
A cert-manager CSI volume source:
(dict "root" $ "issuer" VALUES "commonName" CN "dnsNames" "a,b" "usages" "server auth" "duration" D "fsGroup" G)
*/}}
{{- define "network-enforcer.csiVolume" -}}
{{- $ref := include "network-enforcer.issuerRef" (dict "root" .root "issuer" .issuer) | fromYaml -}}
csi:
  driver: csi.cert-manager.io
  readOnly: true
  volumeAttributes:
    csi.cert-manager.io/issuer-name: {{ $ref.name | quote }}
    csi.cert-manager.io/issuer-kind: {{ $ref.kind | quote }}
    csi.cert-manager.io/issuer-group: {{ $ref.group | quote }}
    csi.cert-manager.io/common-name: {{ .commonName | quote }}
    {{- with .dnsNames }}
    csi.cert-manager.io/dns-names: {{ . | quote }}
    {{- end }}
    csi.cert-manager.io/key-usages: {{ printf "digital signature,key encipherment,%s" .usages | quote }}
    csi.cert-manager.io/duration: {{ .duration | quote }}
    csi.cert-manager.io/certificate-file: tls.crt
    csi.cert-manager.io/privatekey-file: tls.key
    csi.cert-manager.io/ca-file: ca.crt
    {{- with .fsGroup }}
    csi.cert-manager.io/fs-group: {{ . | quote }}
    {{- end }}
{{- end -}}

{{/* A ${secret:...} reference, read by the secret confmap provider: (list NAMESPACE NAME KEY) */}}
{{- define "network-enforcer.secretRef" -}}
{{- printf "${secret:%s/%s/%s}" (index . 0) (index . 1) (index . 2) -}}
{{- end -}}

{{/* Checks that refuse combinations that the schema cannot express clearly. */}}
{{- define "network-enforcer.validate" -}}
{{- $provider := include "network-enforcer.provider" . -}}
{{- $p := include "network-enforcer.providerValues" . | fromYaml -}}
{{- include "network-enforcer.validateCluster" . -}}
{{- if and (eq $provider "calico") (eq $p.tls.mode "insecure") -}}
{{- fail "controller.provider.calico.tls.mode: insecure is not allowed: Goldmane accepts mutual TLS only; use issuer or existingSecret" -}}
{{- end -}}
{{- if and (ne $provider "istio") (eq $p.tls.mode "issuer") (not $p.tls.issuer.name) -}}
{{- fail (printf "controller.provider.%s.tls.issuer.name is required in issuer mode: name a cert-manager Issuer or ClusterIssuer whose CA the %s flow source trusts" $provider $provider) -}}
{{- end -}}
{{- if and (eq $p.tls.mode "existingSecret") (not (include "network-enforcer.flowsSecretName" .)) -}}
{{- fail (printf "controller.provider.%s.tls.existingSecret.name is required in existingSecret mode" $provider) -}}
{{- end -}}
{{- if and (eq $provider "istio") (eq $p.tls.mode "existingSecret") (ne .Values.nodeAgent.mode "none") (not $p.tls.existingSecret.clientName) -}}
{{- fail "controller.provider.istio.tls.existingSecret.clientName is required in existingSecret mode: the node agents' client key pair" -}}
{{- end -}}
{{- if and (eq $provider "calico") (or (not $p.tls.existingSecret.certKey) (not $p.tls.existingSecret.keyKey)) -}}
{{- fail "controller.provider.calico.tls.existingSecret.certKey and keyKey are required: Goldmane accepts mutual TLS only" -}}
{{- end -}}
{{- if ne (empty $p.tls.existingSecret.certKey) (empty $p.tls.existingSecret.keyKey) -}}
{{- fail (printf "controller.provider.%s.tls.existingSecret: set both certKey and keyKey, or neither" $provider) -}}
{{- end -}}
{{- $so := .Values.controller.scaleOut -}}
{{- if and (eq $so.mode "nodes") (eq $provider "calico") -}}
{{- fail "controller.scaleOut.mode: nodes shares the nodes among the replicas, with cilium (their Hubble servers) or istio (their node agents); Calico's Goldmane is one stream, which the leader reads" -}}
{{- end -}}
{{- if and (eq $so.mode "nodes") (eq $provider "istio") (ne .Values.nodeAgent.mode "network-enforcer") -}}
{{- fail "controller.scaleOut.mode: nodes with istio needs nodeAgent.mode: network-enforcer, whose node agents join ztunnel's lines on their node: fluent-bit sends raw lines, which must all reach one replica to be joined" -}}
{{- end -}}
{{- if and (eq $so.mode "nodes") (eq $provider "cilium") (eq $p.tls.mode "insecure") -}}
{{- fail "controller.scaleOut.mode: nodes needs controller.provider.cilium.tls: the nodes' Hubble servers accept mutual TLS only (Cilium's relay client certificate)" -}}
{{- end -}}
{{- if and (eq $so.mode "nodes") (eq $so.tls.mode "existingSecret") (not $so.tls.existingSecret.name) -}}
{{- fail "controller.scaleOut.tls.existingSecret.name is required in existingSecret mode: the replicas' key pair for the hop to the leader" -}}
{{- end -}}
{{- $r := .Values.controller.review -}}
{{- if and $r.enabled (eq $r.tls.mode "existingSecret") (not $r.tls.existingSecret.name) -}}
{{- fail "controller.review.tls.existingSecret.name is required in existingSecret mode: the review page's key pair" -}}
{{- end -}}
{{- $t := .Values.telemetry -}}
{{- if and (eq $t.collectorStrategy "external") (not $t.external.endpoint) -}}
{{- fail "telemetry.external.endpoint is required with telemetry.collectorStrategy=external" -}}
{{- end -}}
{{- if and (eq $t.collectorStrategy "default") (eq $t.default.tls.mode "existingSecret") (not $t.default.tls.existingSecret.name) -}}
{{- fail "telemetry.default.tls.existingSecret.name is required in existingSecret mode" -}}
{{- end -}}
{{- if and (eq $t.collectorStrategy "external") (eq $t.external.tls.mode "existingSecret") (not $t.external.tls.existingSecret.name) -}}
{{- fail "telemetry.external.tls.existingSecret.name is required in existingSecret mode" -}}
{{- end -}}
{{- if ne (empty $t.external.tls.existingSecret.certKey) (empty $t.external.tls.existingSecret.keyKey) -}}
{{- fail "telemetry.external.tls.existingSecret: set both certKey and keyKey, or neither" -}}
{{- end -}}
{{- end -}}

{{/*
The keys under a client's `tls:`:
(dict "mode" M "dir" D "remote" BOOL "namespace" NS "name" N "caKey" K "certKey" K "keyKey" K "serverName" S)
issuer and existingSecret in the release namespace read mounted files;
existingSecret in another namespace reads the Secret through the secret confmap
provider.
*/}}
{{- define "network-enforcer.clientTLS" -}}
{{- if eq .mode "insecure" -}}
insecure: true
{{- else -}}
{{- if has .mode (list "issuer" "csi") -}}
ca_file: {{ .dir }}/ca.crt
cert_file: {{ .dir }}/tls.crt
key_file: {{ .dir }}/tls.key
reload_interval: 30s
{{- else if and (eq .mode "existingSecret") .remote -}}
{{- if .caKey }}
ca_pem: {{ include "network-enforcer.secretRef" (list .namespace .name .caKey) | quote }}
{{- end }}
{{- if .certKey }}
cert_pem: {{ include "network-enforcer.secretRef" (list .namespace .name .certKey) | quote }}
key_pem: {{ include "network-enforcer.secretRef" (list .namespace .name .keyKey) | quote }}
{{- end }}
{{- else if eq .mode "existingSecret" -}}
{{- if .caKey }}
ca_file: {{ .dir }}/{{ .caKey }}
{{- end }}
{{- if .certKey }}
cert_file: {{ .dir }}/{{ .certKey }}
key_file: {{ .dir }}/{{ .keyKey }}
reload_interval: 30s
{{- end }}
{{- end }}
{{- with .serverName }}
server_name_override: {{ . | quote }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* The component ID of the enforcer's events exporter. */}}
{{- define "network-enforcer.eventsExporter" -}}
{{- $t := .Values.telemetry -}}
{{- if eq $t.collectorStrategy "default" -}}
otlp_grpc/events
{{- else if eq $t.collectorStrategy "external" -}}
{{- if eq $t.external.protocol "http" -}}otlp_http/events{{- else -}}otlp_grpc/events{{- end -}}
{{- else -}}
nop
{{- end -}}
{{- end -}}

{{/* The component ID of the flow source's receiver. */}}
{{- define "network-enforcer.flowsReceiver" -}}
{{- $provider := include "network-enforcer.provider" . -}}
{{- if eq $provider "istio" -}}ztunnel{{- else if eq $provider "calico" -}}goldmane{{- else -}}hubble{{- end -}}
{{- end -}}

{{/* The Hubble Relay endpoint: port 443 becomes 80 in insecure mode. */}}
{{- define "network-enforcer.hubbleEndpoint" -}}
{{- $c := .Values.controller.provider.cilium -}}
{{- if and (eq $c.tls.mode "insecure") (hasSuffix ":443" $c.endpoint) -}}
{{- printf "%s:80" (trimSuffix ":443" $c.endpoint) -}}
{{- else -}}
{{- $c.endpoint -}}
{{- end -}}
{{- end -}}

{{/* The collector's own metrics for scraping, or none. */}}
{{- define "network-enforcer.serviceTelemetry" -}}
telemetry:
  metrics:
  {{- if .metrics.enabled }}
    level: {{ .metrics.level }}
    readers:
      - pull:
          exporter:
            prometheus:
              host: 0.0.0.0
              port: {{ .metrics.port }}
  {{- else }}
    level: none
  {{- end }}
{{- end -}}

{{/*
GOMEMLIMIT of the enforcer: controller.gc.memLimitPercent of the container's
memory limit, when that is given in Mi or Gi; empty otherwise.
*/}}
{{- define "network-enforcer.goMemLimit" -}}
{{- $pct := int (dig "gc" "memLimitPercent" 0 .Values.controller) -}}
{{- $mem := toString (dig "limits" "memory" "" .Values.controller.resources) -}}
{{- if and (gt $pct 0) (regexMatch "^[0-9]+(Mi|Gi)$" $mem) -}}
{{- $mib := int (trimSuffix "Mi" (trimSuffix "Gi" $mem)) -}}
{{- if hasSuffix "Gi" $mem }}{{ $mib = mul $mib 1024 }}{{ end -}}
{{- div (mul $mib $pct) 100 }}MiB
{{- end -}}
{{- end -}}


{{/*
Checks of what the values need from the cluster, made when helm talks to one
(install, upgrade, --dry-run=server): without them a release would install
and leave pods stuck in ContainerCreating on a volume that never comes, or an
enforcer whose policies render as nothing. A
lookup of kube-system tells whether helm talks to a cluster: `helm template`
and `helm lint` render without one, and skip these checks.
*/}}
{{- define "network-enforcer.validateCluster" -}}
{{- if lookup "v1" "Namespace" "" "kube-system" -}}
{{- $provider := include "network-enforcer.provider" . -}}
{{- $p := include "network-enforcer.providerValues" . | fromYaml -}}
{{- $hops := include "network-enforcer.issuedHops" . | fromYaml -}}
{{- $modes := list -}}
{{- range $hop := $hops }}{{ $modes = append $modes $hop.mode }}{{ end -}}
{{- if and (or $hops (include "network-enforcer.calicoIssue" .)) (not (.Capabilities.APIVersions.Has "cert-manager.io/v1/Certificate")) -}}
{{- fail "cert-manager is not installed in this cluster (it serves no cert-manager.io/v1 Certificate): install cert-manager first, or give every TLS hop a Secret of your own (tls.mode existingSecret; see the chart README's TLS section)" -}}
{{- end -}}
{{- if and (eq $provider "istio") (not (.Capabilities.APIVersions.Has "security.istio.io/v1/AuthorizationPolicy")) -}}
{{- fail "controller.provider.name istio: this cluster serves no security.istio.io/v1 AuthorizationPolicy, which the enforcer renders policies as: install Istio in ambient mode first, or set controller.provider.name to the data plane that the cluster runs (calico, cilium)" -}}
{{- end -}}
{{- if and (eq $provider "cilium") (eq .Values.controller.provider.cilium.backend "cilium") (not (.Capabilities.APIVersions.Has "cilium.io/v2/CiliumNetworkPolicy")) -}}
{{- fail "controller.provider.cilium.backend cilium: this cluster serves no cilium.io/v2 CiliumNetworkPolicy, which the enforcer renders policies as: install Cilium first, or set controller.provider.cilium.backend to kubernetes" -}}
{{- end -}}
{{- if and (has "csi" $modes) (not (lookup "storage.k8s.io/v1" "CSIDriver" "" "csi.cert-manager.io")) -}}
{{- fail "tls.mode csi needs cert-manager's CSI driver (CSIDriver csi.cert-manager.io), which this cluster does not have: install it, or use tls.mode issuer, which needs cert-manager only" -}}
{{- end -}}
{{- if include "network-enforcer.calicoIssue" . -}}
{{- $ca := $p.tls.calicoCA -}}
{{- $ns := include "network-enforcer.flowsSecretNamespace" . -}}
{{- if not (lookup "v1" "Secret" $ns $ca.secretName) -}}
{{- fail (printf "controller.provider.calico.tls.calicoCA: Calico's CA Secret %s/%s does not exist: install Calico with its operator (which keeps that CA), or set calicoCA.issue=false and existingSecret.name to a client certificate that Goldmane trusts" $ns $ca.secretName) -}}
{{- end -}}
{{- else if and (ne $provider "istio") (eq $p.tls.mode "existingSecret") -}}
{{- $ns := include "network-enforcer.flowsSecretNamespace" . -}}
{{- $name := include "network-enforcer.flowsSecretName" . -}}
{{- if not (lookup "v1" "Secret" $ns $name) -}}
{{- if eq $provider "cilium" -}}
{{- fail (printf "controller.provider.cilium.tls.existingSecret: the Secret %s/%s does not exist: turn on Hubble Relay's TLS in Cilium (hubble.relay.tls.server.enabled=true), which makes it, or name another Secret" $ns $name) -}}
{{- else -}}
{{- fail (printf "controller.provider.calico.tls.existingSecret: the Secret %s/%s does not exist: create it with a client certificate that Goldmane trusts" $ns $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* "true" when every replica reads a share of the Cilium nodes (controller.scaleOut.mode: nodes). */}}
{{- define "network-enforcer.scaleOut" -}}
{{- if eq .Values.controller.scaleOut.mode "nodes" -}}true{{- end -}}
{{- end -}}

{{/* The enforcer Deployment's replicas: scaleOut.replicas in nodes mode. */}}
{{- define "network-enforcer.replicas" -}}
{{- ternary .Values.controller.scaleOut.replicas .Values.controller.replicas (eq .Values.controller.scaleOut.mode "nodes") | int -}}
{{- end -}}

{{/* The name that the replicas' key pair carries and that a reader checks in the leader's certificate: the leader is dialled by its pod address. */}}
{{- define "network-enforcer.leaderServerName" -}}
{{- printf "leader.%s.%s" (include "network-enforcer.fullname" .) .Release.Namespace -}}
{{- end -}}
