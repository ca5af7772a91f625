// Copyright The clustergate Authors.
// SPDX-License-Identifier: Apache-2.0

package workloads

// manifests are the test's workloads; IMAGE is the podserver image.
const manifests = `
apiVersion: v1
kind: Namespace
metadata: {name: wl}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: wl}
stringData: {password: s3cret}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: wl}
data: {greeting: hello}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: wl}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 10
      containers:
      - name: server
        image: IMAGE
        args: ["--listen=:8080", "--term-delay=1s"]
        workingDir: /tmp
        ports: [{name: http, containerPort: 8080}]
        env:
        - {name: GREETING, valueFrom: {configMapKeyRef: {name: settings, key: greeting}}}
        - {name: PASSWORD, valueFrom: {secretKeyRef: {name: creds, key: password}}}
        - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: EXPANDED, value: "$(GREETING)-world"}
        # Generous timeouts: the test shares two cores with builds that run
        # at a higher priority, and a starved probe is not what it tests.
        readinessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 1, timeoutSeconds: 5}
        livenessProbe: {tcpSocket: {port: 8080}, periodSeconds: 5, timeoutSeconds: 5}
        volumeMounts:
        - {name: secret, mountPath: /etc/secret, readOnly: true}
        - {name: config, mountPath: /etc/config}
        - {name: podinfo, mountPath: /etc/podinfo}
        - {name: scratch, mountPath: /scratch}
        - {name: token, mountPath: /var/run/secrets/tokens}
      volumes:
      - {name: secret, secret: {secretName: creds}}
      - {name: config, configMap: {name: settings}}
      - name: podinfo
        downwardAPI:
          items:
          - {path: name, fieldRef: {fieldPath: metadata.name}}
          - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {name: scratch, emptyDir: {}}
      - name: token
        projected:
          sources:
          - serviceAccountToken: {path: audience-token, audience: test, expirationSeconds: 600}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: wl}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: wl}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: wl}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 8080}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: wl}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 5
      securityContext: {fsGroup: 65532}
      containers:
      - name: server
        image: IMAGE
        readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1, timeoutSeconds: 5}
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Mi}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: flaky, namespace: wl}
spec:
  replicas: 1
  selector: {matchLabels: {app: flaky}}
  template:
    metadata: {labels: {app: flaky}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: server
        image: IMAGE
        args: ["--fail-liveness-after=3s"]
        # The delay lets the server install its SIGTERM handler first.
        livenessProbe: {httpGet: {path: /livez, port: 8080}, initialDelaySeconds: 2, periodSeconds: 1, failureThreshold: 1}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: slow, namespace: wl}
spec:
  replicas: 1
  selector: {matchLabels: {app: slow}}
  template:
    metadata: {labels: {app: slow}}
    spec:
      containers:
      - name: server
        image: IMAGE
        args: ["--term-delay=60s"]
        readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1, timeoutSeconds: 5}
---
apiVersion: v1
kind: Pod
metadata: {name: once, namespace: wl}
spec:
  restartPolicy: Never
  containers:
  - name: server
    image: IMAGE
    args: ["--exit-after=1s", "--exit-code=3"]
---
apiVersion: batch/v1
kind: Job
metadata: {name: job, namespace: wl}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: server
        image: IMAGE
        args: ["--exit-after=1s"]
`
