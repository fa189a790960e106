{{/*
The agent sidecar for a Ray head's pod template: merge it into a RayCluster's
spec.headGroupSpec.template (KubeRay mode, agent.sidecar.rayCluster set) or a head Deployment's
spec.template (Deployment mode, a cluster spec ConfigMap). Lists merge by name. The image is the
scaler's (one image, both commands). With the defaults and agent.sidecar.authToken.secretName=demo
it is examples/agent-sidecar.yaml (tests/real/control_plane/test_chart.py keeps them equal).
*/}}
{{- define "krs.agentSidecar" -}}
{{- /* Called with the root context, or (controller) dict "root" <root> "fromPod" true: then the
       fragment fits every cluster: the agent reads its RayCluster's name from its pod's
       ray.io/cluster label (downward API), and the webhook sets the cluster's own ServiceAccount
       and Ray token. */ -}}
{{- $root := .root | default . -}}
{{- $fromPod := .fromPod | default false -}}
{{- $s := $root.Values.agent.sidecar -}}
metadata:
  labels:
    ray.io/node-type: head  # the agent PodMonitor selects this
  annotations:
    prometheus.io/scrape: "true"
    prometheus.io/port: {{ $s.port | quote }}
    prometheus.io/path: /metrics
spec:
  {{- if not $fromPod }}
  serviceAccountName: {{ $root.Values.agent.rbac.serviceAccountName }}
  {{- end }}
  automountServiceAccountToken: false  # the agent container mounts its own token (below)
  containers:
    - name: agent
      # one image, both commands: the scaler's, run as `keda-ray-scaler agent` (no Ray inside)
      image: "{{ $root.Values.image.repository }}:{{ $root.Values.image.tag | default $root.Chart.AppVersion }}"
      args:
        - agent
        {{- if $fromPod }}
        - --raycluster=$(KRS_RAYCLUSTER)  # KubeRay mode: this pod's RayCluster (env below)
        {{- else if $s.rayCluster }}
        - --raycluster={{ $s.rayCluster }}  # KubeRay mode: the groups come from the RayCluster
        {{- else }}
        - --cluster-spec=/etc/keda-ray-scaler/cluster.yaml
        {{- end }}
        - --gcs-address={{ $s.gcsAddress }}
        - --port={{ $s.port }}
        {{- if not (kindIs "invalid" $s.interval) }}
        - --interval={{ $s.interval }}
        {{- end }}
        {{- if not (kindIs "invalid" $s.watchInterval) }}
        - --watch-interval={{ $s.watchInterval }}
        {{- end }}
        - --namespace=$(POD_NAMESPACE)
        {{- if and (not $fromPod) $s.sealKey.secretName }}
        - --seal-key-file=/etc/keda-ray-scaler/seal/{{ $s.sealKey.key }}
        {{- end }}
        - --log-format=json
      env:
        - name: HOME  # the image's; the agent looks for ~/.ray/auth_token there
          value: /tmp
        - name: POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        {{- if $fromPod }}
        - name: KRS_RAYCLUSTER  # KubeRay labels every pod of a cluster with its name
          valueFrom:
            fieldRef:
              fieldPath: metadata.labels['ray.io/cluster']
        {{- end }}
        {{- with (and (not $fromPod) $s.authToken.secretName) }}
        # Ray token authentication: KubeRay makes the Secret for authOptions.mode token, named
        # after the RayCluster, and gives it to the Ray containers only, not to sidecars
        - name: RAY_AUTH_MODE
          value: token
        - name: RAY_AUTH_TOKEN
          valueFrom:
            secretKeyRef:
              name: {{ . }}
              key: {{ $s.authToken.key }}
        {{- end }}
      ports:
        - name: agent-metrics
          containerPort: {{ $s.port }}
      # /healthz (liveness): 503 once the last successful poll of Ray is older than
      # --health-intervals x --interval, at least 30 s; /readyz (readiness): that, or the head's
      # Ray version is not supported (/metrics answers regardless).
      readinessProbe:
        httpGet:
          path: /readyz
          port: agent-metrics
        periodSeconds: 10
        timeoutSeconds: 5
      livenessProbe:
        httpGet:
          path: /healthz
          port: agent-metrics
        periodSeconds: 15
        timeoutSeconds: 5
        failureThreshold: 8
      resources:
        {{- toYaml $s.resources | nindent 8 }}
      securityContext:
        allowPrivilegeEscalation: false
        readOnlyRootFilesystem: true
        runAsNonRoot: true
        runAsUser: 65532  # the image's own non-root user (the Ray containers run as 1000)
        runAsGroup: 65532
        capabilities:
          drop: ["ALL"]
        seccompProfile:
          type: RuntimeDefault
      volumeMounts:
        {{- if not (or $fromPod $s.rayCluster) }}
        - name: cluster-spec
          mountPath: /etc/keda-ray-scaler
          readOnly: true
        {{- end }}
        - name: agent-tmp
          mountPath: /tmp
        {{- if and (not $fromPod) $s.sealKey.secretName }}
        - name: agent-seal-key
          mountPath: /etc/keda-ray-scaler/seal
          readOnly: true
        {{- end }}
        - name: agent-kube-api-access
          mountPath: /var/run/secrets/kubernetes.io/serviceaccount
          readOnly: true
  volumes:
    {{- if not (or $fromPod $s.rayCluster) }}
    - name: cluster-spec
      configMap:
        name: {{ $s.clusterSpecConfigMap }}
    {{- end }}
    - name: agent-tmp
      emptyDir: {}
    {{- with (and (not $fromPod) $s.sealKey.secretName) }}
    - name: agent-seal-key  # this cluster's seal key only (never the scaler's master key)
      secret:
        secretName: {{ . }}
    {{- end }}
    # What the kubelet would mount for automountServiceAccountToken, for the agent only.
    - name: agent-kube-api-access
      projected:
        defaultMode: 0444
        sources:
          - serviceAccountToken:
              path: token
              expirationSeconds: 3607
          - configMap:
              name: kube-root-ca.crt
              items:
                - key: ca.crt
                  path: ca.crt
          - downwardAPI:
              items:
                - path: namespace
                  fieldRef:
                    fieldPath: metadata.namespace
{{- end -}}
