package fakecluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kinds of the workloads, spelled as owner references spell them.
const (
	kindDeployment  = "Deployment"
	kindStatefulSet = "StatefulSet"
	kindDaemonSet   = "DaemonSet"
	kindCronJob     = "CronJob"
)

// kindMix is one round of the workload mix, by workload index modulo its length:
// 70% Deployments, 10% StatefulSets, 5% DaemonSets, 15% CronJobs, about what a
// large multi-tenant cluster runs.
var kindMix = [20]string{
	kindDeployment, kindDeployment, kindDeployment, kindDeployment, kindDeployment,
	kindDeployment, kindDeployment, kindDeployment, kindDeployment, kindDeployment,
	kindDeployment, kindDeployment, kindDeployment, kindDeployment,
	kindStatefulSet, kindStatefulSet,
	kindDaemonSet,
	kindCronJob, kindCronJob, kindCronJob,
}

var (
	apps  = []string{"checkout", "catalog", "payments", "ledger", "search", "inventory", "shipping", "pricing", "accounts", "notifications", "recommendations", "reviews", "identity", "billing", "reporting", "gateway"}
	teams = []string{"commerce", "platform", "data", "growth", "core", "risk", "fulfilment", "support"}
	envs  = []string{"production", "staging", "qa"}
	// components are the usual roles of each kind's workloads.
	components = map[string][]string{
		kindDeployment:  {"api", "web", "worker", "grpc", "consumer"},
		kindStatefulSet: {"db", "cache", "queue"},
		kindDaemonSet:   {"agent", "node-exporter", "log-shipper"},
		kindCronJob:     {"cleanup", "report", "backup", "sync"},
	}
)

// Plan is the cluster to create: which workloads live where and how many pods
// each one runs.
type Plan struct {
	namespaces []string
	workloads  []*workload
	// bare is the number of pods that no workload owns, made only when there are
	// no workloads at all, for measuring pods alone.
	bare int
	// Nodes is the number of nodes that the pods are spread over: NewPlan
	// puts about a hundred pods on a node; set it before Create for another
	// spread. Pod j runs on node j mod Nodes, named by NodeName.
	Nodes int
}

// workload is one workload of the plan, and what its creation learnt.
type workload struct {
	index                           int
	namespace, kind, name           string
	app, team, env, component       string
	version                         string
	ptHash                          string // the pod-template-hash of a Deployment's ReplicaSet
	revisionHash                    string // the controller-revision-hash of a StatefulSet's pods
	jobSuffix                       int    // the scheduled time in a CronJob's Job name
	pods                            int
	labelsCache, selectorLabelCache map[string]string

	// controller is the owner reference of the pods, and podLabels the labels of
	// its pod template as the API server stored it, once the controller exists.
	controller metav1.OwnerReference
	podLabels  map[string]string
}

// NewPlan spreads workloads over namespaces and pods over the workloads.
func NewPlan(pods, workloads, namespaces int) *Plan {
	p := &Plan{Nodes: max(1, pods/100)}
	for i := range namespaces {
		p.namespaces = append(p.namespaces, fmt.Sprintf("%s-%s-%02d", teams[i%len(teams)], envs[i%len(envs)], i))
	}
	for i := range workloads {
		kind := kindMix[i%len(kindMix)]
		comps := components[kind]
		ns := p.namespaces[i%len(p.namespaces)]
		w := &workload{
			index: i, namespace: ns, kind: kind,
			app:       apps[(i/len(kindMix))%len(apps)],
			team:      teams[(i%len(p.namespaces))%len(teams)],
			env:       envs[(i%len(p.namespaces))%len(envs)],
			component: comps[(i/len(kindMix)/len(apps))%len(comps)],
			version:   fmt.Sprintf("1.%d.%d", i%23, i%7),
		}
		w.name = fmt.Sprintf("%s-%s-%d", w.app, w.component, i)
		w.ptHash = randName(hash64(w.name+"/template"), 10)
		w.revisionHash = w.name + "-" + randName(hash64(w.name+"/revision"), 10)
		w.jobSuffix = 29000000 + i%100000
		p.workloads = append(p.workloads, w)
	}
	p.spreadPods(pods)
	return p
}

// spreadPods gives each CronJob's Job one pod, as a running Job has, and the rest
// of the pods in turn to the other workloads.
func (p *Plan) spreadPods(pods int) {
	var others []*workload
	for _, w := range p.workloads {
		if w.kind == kindCronJob && pods > 0 {
			w.pods++
			pods--
		} else if w.kind != kindCronJob {
			others = append(others, w)
		}
	}
	if len(others) == 0 {
		others = p.workloads
	}
	for i := 0; pods > 0 && len(others) > 0; i++ {
		others[i%len(others)].pods++
		pods--
	}
	p.bare = pods
}

// PodCount is the number of pods of the plan.
func (p *Plan) PodCount() int {
	n := p.bare
	for _, w := range p.workloads {
		n += w.pods
	}
	return n
}

// commonLabels are the labels of the workload, its template and so its pods:
// the recommended app.kubernetes.io set and the team's own, thirteen in all; the
// controllers add two to four more to each pod.
func (w *workload) commonLabels() map[string]string {
	if w.labelsCache == nil {
		w.labelsCache = map[string]string{
			"app.kubernetes.io/name":       w.name,
			"app.kubernetes.io/instance":   w.name + "-" + w.env,
			"app.kubernetes.io/version":    w.version,
			"app.kubernetes.io/component":  w.component,
			"app.kubernetes.io/part-of":    w.app,
			"app.kubernetes.io/managed-by": "platform-deployer",
			"chart":                        w.app + "-" + w.version,
			"app":                          w.name,
			"version":                      "v" + w.version,
			"team":                         w.team,
			"environment":                  w.env,
			"tier":                         tier(w.kind),
			"cost-center":                  fmt.Sprintf("cc-%04d", 1000+w.index%250),
		}
	}
	return maps.Clone(w.labelsCache)
}

func (w *workload) selector() *metav1.LabelSelector {
	if w.selectorLabelCache == nil {
		l := w.commonLabels()
		w.selectorLabelCache = map[string]string{
			"app.kubernetes.io/name":     l["app.kubernetes.io/name"],
			"app.kubernetes.io/instance": l["app.kubernetes.io/instance"],
		}
	}
	return &metav1.LabelSelector{MatchLabels: maps.Clone(w.selectorLabelCache)}
}

func tier(kind string) string {
	switch kind {
	case kindStatefulSet:
		return "data"
	case kindDaemonSet:
		return "node"
	case kindCronJob:
		return "batch"
	}
	return "service"
}

// childName is the name of the ReplicaSet or Job between the workload and its
// pods, as their controllers name them.
func (w *workload) childName() string {
	switch w.kind {
	case kindDeployment:
		return w.name + "-" + w.ptHash
	case kindCronJob:
		return fmt.Sprintf("%s-%d", w.name, w.jobSuffix)
	}
	return ""
}

// randAlphabet is the alphabet of the random parts of generated Kubernetes
// names: no vowels, so that no word is spelled by chance.
const randAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// randName spells n in randAlphabet with width characters; distinct n below
// 27^width give distinct names, which keeps pod names unique without retries.
func randName(n uint64, width int) string {
	b := make([]byte, width)
	for i := width - 1; i >= 0; i-- {
		b[i] = randAlphabet[n%uint64(len(randAlphabet))]
		n /= uint64(len(randAlphabet))
	}
	return string(b)
}

func hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// hexDigest is a 64-digit hex string derived from s, for image digests,
// container IDs and checksums.
func hexDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
