//go:build cluster

package cluster

// hubbleManifests are Cilium's Hubble side on the one node: the agent's Hubble
// server played by the tests' pod program (Peer and Observer on :4244), and
// the real hubble-relay in front of it, serving TLS with the certificate in
// hubble-relay-server-certs and verifying client certificates against its CA,
// as Cilium's own chart sets the relay up with hubble.relay.tls.server.mtls.
// %[1]s is the testpod image, %[2]s the relay image.
const hubbleManifests = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: hubble-agent
  namespace: kube-system
spec:
  replicas: 1
  selector:
    matchLabels: {k8s-app: hubble-agent}
  template:
    metadata:
      labels: {k8s-app: hubble-agent}
    spec:
      containers:
        - name: agent
          image: %[1]s
          imagePullPolicy: Never
          args: [hubble]
          env:
            - name: POD_IP
              valueFrom: {fieldRef: {fieldPath: status.podIP}}
            - name: NODE_NAME
              valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
          ports:
            - {name: hubble, containerPort: 4244}
            - {name: control, containerPort: 8081}
          readinessProbe:
            grpc: {port: 4244}
            periodSeconds: 2
---
apiVersion: v1
kind: Service
metadata:
  name: hubble-peer
  namespace: kube-system
spec:
  selector: {k8s-app: hubble-agent}
  ports:
    - {name: peer-service, port: 443, targetPort: 4244}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: hubble-relay
  namespace: kube-system
spec:
  replicas: 1
  selector:
    matchLabels: {k8s-app: hubble-relay}
  template:
    metadata:
      labels: {k8s-app: hubble-relay}
    spec:
      containers:
        - name: hubble-relay
          image: %[2]s
          imagePullPolicy: Never
          args:
            - serve
            - --peer-service=hubble-peer.kube-system.svc.cluster.local:443
            - --listen-address=:4245
            - --disable-client-tls
            - --tls-relay-server-cert-file=/var/lib/hubble-relay/tls/server.crt
            - --tls-relay-server-key-file=/var/lib/hubble-relay/tls/server.key
            - --tls-relay-client-ca-files=/var/lib/hubble-relay/tls/hubble-server-ca.crt
          ports:
            - {name: grpc, containerPort: 4245}
          readinessProbe:
            grpc: {port: 4222}
            periodSeconds: 2
          livenessProbe:
            grpc: {port: 4222}
          volumeMounts:
            - {name: tls, mountPath: /var/lib/hubble-relay/tls, readOnly: true}
      volumes:
        - name: tls
          projected:
            sources:
              - secret:
                  name: hubble-relay-server-certs
                  items:
                    - {key: tls.crt, path: server.crt}
                    - {key: tls.key, path: server.key}
                    - {key: ca.crt, path: hubble-server-ca.crt}
---
apiVersion: v1
kind: Service
metadata:
  name: hubble-relay
  namespace: kube-system
spec:
  selector: {k8s-app: hubble-relay}
  ports:
    - {name: grpc, port: 443, targetPort: grpc}
`
