package fakecluster

import (
	"fmt"
	"maps"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Everything below builds objects the size of those in a production cluster:
// two containers with environment, resources, probes and mounts, a security
// context, scheduling constraints, and the status that a kubelet reports. No
// controller or kubelet runs, so nothing ever acts on them.

func (w *workload) meta() metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace: w.namespace, Name: w.name, Labels: w.commonLabels(),
		Annotations: map[string]string{
			"deploy/source-revision": hexDigest(w.name + "/source")[:40],
			"deploy/owner":           w.team,
		},
	}
}

func (w *workload) template(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: w.podAnnotations()},
		Spec:       w.podSpec(),
	}
}

// podAnnotations are the annotations that deployment tooling and monitoring
// commonly put on a pod template.
func (w *workload) podAnnotations() map[string]string {
	return map[string]string{
		"checksum/config":     hexDigest(w.name + "/config"),
		"checksum/secrets":    hexDigest(w.name + "/secrets"),
		"monitoring/scrape":   "true",
		"monitoring/port":     "9090",
		"deploy/restarted-at": time.Date(2026, 3, 1+w.index%28, w.index%24, 0, 0, 0, time.UTC).Format(time.RFC3339),
	}
}

func (w *workload) deployment() *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: w.meta(), Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(int32(w.pods)), Selector: w.selector(),
		Template: w.template(w.commonLabels()),
		Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%")),
		}},
	}}
}

func (w *workload) replicaSet(owner metav1.OwnerReference) *appsv1.ReplicaSet {
	meta := w.meta()
	meta.Name = w.childName()
	meta.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = w.ptHash
	meta.Annotations["deployment.kubernetes.io/revision"] = "1"
	meta.Annotations["deployment.kubernetes.io/desired-replicas"] = strconv.Itoa(w.pods)
	meta.Annotations["deployment.kubernetes.io/max-replicas"] = strconv.Itoa(w.pods + 1)
	meta.OwnerReferences = []metav1.OwnerReference{owner}
	sel := w.selector()
	sel.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = w.ptHash
	labels := w.commonLabels()
	labels[appsv1.DefaultDeploymentUniqueLabelKey] = w.ptHash
	return &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr.To(int32(w.pods)), Selector: sel, Template: w.template(labels),
	}}
}

func (w *workload) statefulSet() *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: w.meta(), Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To(int32(w.pods)), Selector: w.selector(), ServiceName: w.name,
		Template: w.template(w.commonLabels()),
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: resource.MustParse("20Gi"),
				}},
			},
		}},
	}}
}

func (w *workload) daemonSet() *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: w.meta(), Spec: appsv1.DaemonSetSpec{
		Selector: w.selector(), Template: w.template(w.commonLabels()),
	}}
}

func (w *workload) cronJob() *batchv1.CronJob {
	return &batchv1.CronJob{ObjectMeta: w.meta(), Spec: batchv1.CronJobSpec{
		Schedule:          fmt.Sprintf("%d * * * *", w.index%60),
		ConcurrencyPolicy: batchv1.ForbidConcurrent,
		JobTemplate: batchv1.JobTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: w.commonLabels()},
			Spec:       batchv1.JobSpec{BackoffLimit: ptr.To(int32(2)), Template: w.template(w.commonLabels())},
		},
	}}
}

// job is the Job that the CronJob started. It gets no selector: the API server
// generates one from the Job's UID, and the matching template labels, as it does
// for the CronJob controller.
func (w *workload) job(owner metav1.OwnerReference) *batchv1.Job {
	meta := w.meta()
	meta.Name = w.childName()
	meta.OwnerReferences = []metav1.OwnerReference{owner}
	return &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{
		BackoffLimit: ptr.To(int32(2)), Template: w.template(w.commonLabels()),
	}}
}

// pod returns the workload's pod number ordinal; global numbers pods across the
// cluster, for unique names, addresses and nodes.
func (w *workload) pod(ordinal, global, nodes int) *corev1.Pod {
	labels := maps.Clone(w.podLabels)
	name, generateName := w.podName(ordinal, global)
	switch w.kind {
	case kindStatefulSet:
		labels["controller-revision-hash"] = w.revisionHash
		labels["statefulset.kubernetes.io/pod-name"] = name
		labels["apps.kubernetes.io/pod-index"] = strconv.Itoa(ordinal)
	case kindDaemonSet:
		labels["controller-revision-hash"] = randName(hash64(w.name+"/revision"), 10)
		labels["pod-template-generation"] = "1"
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: w.namespace, Name: name, GenerateName: generateName, Labels: labels,
			Annotations:     w.podAnnotations(),
			OwnerReferences: []metav1.OwnerReference{w.controller},
		},
		Spec: w.podSpec(),
	}
	addNode(p, global, nodes)
	return p
}

// podName is the name of the workload's pod number ordinal, and the
// generateName that its controller would give: a StatefulSet's pods are
// numbered, the others' end in a random part (here derived from global), after
// the name of their controller (the ReplicaSet or Job, known before it exists
// by childName).
func (w *workload) podName(ordinal, global int) (name, generateName string) {
	switch w.kind {
	case kindStatefulSet:
		return fmt.Sprintf("%s-%d", w.name, ordinal), ""
	case kindDaemonSet:
		generateName = w.name + "-"
	default:
		generateName = w.childName() + "-"
	}
	return generateName + randName(uint64(global), 5), generateName
}

// barePod is a pod that no workload owns.
func barePod(namespace string, global, nodes int) *corev1.Pod {
	w := &workload{index: global, namespace: namespace, kind: kindDeployment, app: "standalone",
		team: teams[global%len(teams)], env: envs[global%len(envs)], component: "debug", version: "1.0.0"}
	w.name = fmt.Sprintf("standalone-%d", global)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: w.name, Labels: w.commonLabels(), Annotations: w.podAnnotations(),
		},
		Spec: w.podSpec(),
	}
	addNode(p, global, nodes)
	return p
}

// addNode binds the pod to a node and adds the service account token volume
// that admission adds in a real cluster.
func addNode(p *corev1.Pod, global, nodes int) {
	p.Spec.NodeName = NodeName(global % nodes)
	token := "kube-api-access-" + randName(uint64(global)*7919, 5)
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: token, VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To(int32(0o644)), Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To(int64(3607)), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		}},
	}})
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{
			Name: token, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount",
		})
	}
}

// NodeName names the plan's i-th node.
func NodeName(i int) string { return fmt.Sprintf("node-%04d", i) }

// nodeIP is the node's address, in a range apart from the pods'.
func nodeIP(i int) string { return fmt.Sprintf("172.16.%d.%d", i/250, 1+i%250) }

// PodIP is pod global's address, unique for each of up to 16 million pods.
func PodIP(global int) string {
	n := global + 256 // skip 10.0.0.0/24
	return fmt.Sprintf("10.%d.%d.%d", (n>>16)&255, (n>>8)&255, n&255)
}

func (w *workload) podSpec() corev1.PodSpec {
	restart := corev1.RestartPolicyAlways
	if w.kind == kindCronJob {
		restart = corev1.RestartPolicyNever
	}
	fieldEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path},
		}}
	}
	resourceEnv := func(name, res string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: res},
		}}
	}
	restricted := &corev1.SecurityContext{
		RunAsNonRoot: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	httpProbe := func(path string, delay int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: path, Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP,
			}},
			InitialDelaySeconds: delay, PeriodSeconds: 10, TimeoutSeconds: 2, SuccessThreshold: 1, FailureThreshold: 3,
		}
	}
	app := corev1.Container{
		Name:            "app",
		Image:           fmt.Sprintf("acme/%s-%s:%s", w.app, w.component, w.version),
		ImagePullPolicy: corev1.PullIfNotPresent,
		Args:            []string{"--config=/etc/app/config.yaml", "--log-format=json", "--listen=:8080", "--metrics-listen=:9090"},
		Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
		},
		Env: []corev1.EnvVar{
			fieldEnv("POD_NAME", "metadata.name"),
			fieldEnv("POD_NAMESPACE", "metadata.namespace"),
			fieldEnv("POD_IP", "status.podIP"),
			fieldEnv("NODE_NAME", "spec.nodeName"),
			resourceEnv("GOMAXPROCS", "limits.cpu"),
			resourceEnv("GOMEMLIMIT", "limits.memory"),
			{Name: "APP_NAME", Value: w.name},
			{Name: "APP_ENV", Value: w.env},
			{Name: "LOG_LEVEL", Value: "info"},
			{Name: "HTTP_TIMEOUT", Value: "30s"},
			{Name: "CACHE_TTL", Value: "300s"},
			{Name: "FEATURE_FLAGS", Value: "new-pricing,async-writes,batch-reads"},
			{Name: "DATABASE_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: w.name + "-secrets"}, Key: "database-password",
			}}},
		},
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: w.name + "-env"}, Optional: ptr.To(true),
		}}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "config", MountPath: "/etc/app", ReadOnly: true},
			{Name: "secrets", MountPath: "/etc/app/secrets", ReadOnly: true},
			{Name: "tmp", MountPath: "/tmp"},
			{Name: "logs", MountPath: "/var/log/app"},
		},
		LivenessProbe:            httpProbe("/healthz", 10),
		ReadinessProbe:           httpProbe("/readyz", 5),
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          restricted,
	}
	sidecar := corev1.Container{
		Name:            "log-forwarder",
		Image:           "acme/log-forwarder:2.4.1",
		ImagePullPolicy: corev1.PullIfNotPresent,
		Args:            []string{"--input=/var/log/app", "--config=/etc/forwarder/forwarder.conf"},
		Ports:           []corev1.ContainerPort{{Name: "forwarder", ContainerPort: 2020, Protocol: corev1.ProtocolTCP}},
		Env: []corev1.EnvVar{
			fieldEnv("POD_NAME", "metadata.name"),
			fieldEnv("POD_NAMESPACE", "metadata.namespace"),
			fieldEnv("NODE_NAME", "spec.nodeName"),
			{Name: "FORWARD_BUFFER", Value: "8MiB"},
			{Name: "FORWARD_FLUSH_INTERVAL", Value: "5s"},
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "logs", MountPath: "/var/log/app", ReadOnly: true},
			{Name: "forwarder-config", MountPath: "/etc/forwarder", ReadOnly: true},
		},
		LivenessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("forwarder")}},
			PeriodSeconds: 20, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
		},
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		SecurityContext:          restricted,
	}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": w.name}}
	return corev1.PodSpec{
		ServiceAccountName:            w.name,
		RestartPolicy:                 restart,
		TerminationGracePeriodSeconds: ptr.To(int64(30)),
		DNSPolicy:                     corev1.DNSClusterFirst,
		ImagePullSecrets:              []corev1.LocalObjectReference{{Name: "registry-credentials"}},
		SecurityContext: &corev1.PodSecurityContext{
			RunAsUser: ptr.To(int64(10001)), RunAsGroup: ptr.To(int64(10001)), FSGroup: ptr.To(int64(10001)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{
					LabelSelector: selector, TopologyKey: "kubernetes.io/hostname",
				},
			}},
		}},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone",
			WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: selector,
		}},
		Tolerations: []corev1.Toleration{
			{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(300))},
			{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(300))},
		},
		Containers: []corev1.Container{app, sidecar},
		Volumes: []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: w.name + "-config"}, DefaultMode: ptr.To(int32(0o444)),
			}}},
			{Name: "secrets", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: w.name + "-secrets", DefaultMode: ptr.To(int32(0o400)),
			}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
				SizeLimit: ptr.To(resource.MustParse("256Mi")),
			}}},
			{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "forwarder-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "log-forwarder-config"},
			}}},
		},
	}
}

// runningStatus is the status that a kubelet reports for the running pod.
func runningStatus(p *corev1.Pod, global, nodes int) corev1.PodStatus {
	now := metav1.Now()
	ip, host := PodIP(global), nodeIP(global%nodes)
	st := corev1.PodStatus{
		Phase:     corev1.PodRunning,
		HostIP:    host,
		HostIPs:   []corev1.HostIP{{IP: host}},
		PodIP:     ip,
		PodIPs:    []corev1.PodIP{{IP: ip}},
		StartTime: &now,
		QOSClass:  corev1.PodQOSBurstable,
	}
	for _, t := range []corev1.PodConditionType{
		"PodReadyToStartContainers", corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled,
	} {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	for _, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name:         c.Name,
			State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			Ready:        true,
			Started:      ptr.To(true),
			Image:        c.Image,
			ImageID:      c.Image + "@sha256:" + hexDigest(c.Image),
			ContainerID:  "cri://" + hexDigest(p.Namespace+"/"+p.Name+"/"+c.Name),
			RestartCount: 0,
		})
	}
	return st
}
