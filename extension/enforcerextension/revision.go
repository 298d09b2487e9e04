package enforcerextension

import (
	"strings"
	"time"
	"unique"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// The revision that a pod ran, from the compact stores (workload.Revisions):
//
//   - a Deployment's pod ran its ReplicaSet: named as it, with its
//     pod-template-hash (the label that the Deployment controller gives the
//     ReplicaSet and, through its template, each of its pods), its creation
//     and its template's images;
//   - a StatefulSet's or a DaemonSet's pod ran the ControllerRevision that
//     its controller-revision-hash label names: a StatefulSet's pods carry
//     the ControllerRevision's name, <statefulset>-<hash>, a DaemonSet's the
//     hash alone, of the ControllerRevision <daemonset>-<hash>. Its creation
//     is the ControllerRevision's (zero while the cache does not have it);
//     its images are the pod's own;
//   - a CronJob's pod ran its Job's template, <cronjob>-<template hash>
//     (templateHash), which appeared with the first of the cached Jobs of
//     the CronJob that has it.
//
// A Job of its own, a bare pod and a pod on the host network have no
// revision.

// PodRevision is the revision that the pod namespace/name ran, a deleted one
// within its grace period included. Goldmane's "<generateName>*" is the
// revision of the pods of that generateName, when they all ran one.
func (r *resolver) PodRevision(namespace, name string) (workload.Revision, bool) {
	if prefix, ok := strings.CutSuffix(name, "*"); ok {
		return r.generatedRevision(namespace, prefix)
	}
	p := r.stores.podOrEnded(namespace, name)
	if p == nil {
		return workload.Revision{}, false
	}
	return r.podRevision(p)
}

// IPRevision is the revision of the pod that held ip at time at, under the
// rules of ResolveIP: false when no one pod held it then, or the cache
// remembers too little of that time.
func (r *resolver) IPRevision(ip string, at time.Time) (workload.Revision, bool) {
	p, reason := r.holder(ip, at)
	if reason != "" {
		return workload.Revision{}, false
	}
	return r.podRevision(p)
}

// Revision returns the revision namespace/name: a Deployment's ReplicaSet, a
// StatefulSet's or a DaemonSet's ControllerRevision, or a CronJob's
// <cronjob>-<template hash>, in that order when names collide. A
// ControllerRevision's images are those of a pod of it that the cache holds,
// none when there is no such pod.
func (r *resolver) Revision(namespace, name string) (workload.Revision, bool) {
	if rs := r.stores.workload("ReplicaSet", namespace, name); rs != nil && rs.ownerKind == "Deployment" {
		return replicaSetRevision(workload.Ref{Namespace: namespace, Kind: v1alpha1.WorkloadKindDeployment, Name: rs.ownerName}, rs), true
	}
	if cr := r.stores.controllerRevision(namespace, name); cr != nil {
		if rev, ok := r.controllerRevision(cr); ok {
			return rev, true
		}
	}
	return r.cronJobRevision(namespace, name)
}

// podRevision follows p's controller as resolvePod does, to its revision.
func (r *resolver) podRevision(p *podInfo) (workload.Revision, bool) {
	w, reason := r.resolvePod(p)
	if reason != "" {
		return workload.Revision{}, false
	}
	switch w.Kind {
	case v1alpha1.WorkloadKindDeployment:
		// resolvePod found the ReplicaSet.
		return replicaSetRevision(w, r.stores.workload("ReplicaSet", p.Namespace, p.ownerName)), true
	case v1alpha1.WorkloadKindStatefulSet, v1alpha1.WorkloadKindDaemonSet:
		if p.revision == (unique.Handle[template]{}) {
			return workload.Revision{}, false
		}
		t := p.revision.Value()
		rev := workload.Revision{Workload: w, Name: controllerRevisionName(w, t.hash), Hash: t.hash, Images: t.imageList()}
		if cr := r.stores.controllerRevision(w.Namespace, rev.Name); cr != nil && cr.ownerKind == string(w.Kind) && cr.ownerName == w.Name {
			rev.Created = cr.CreationTimestamp.Time
		}
		return rev, true
	case v1alpha1.WorkloadKindCronJob:
		job := r.stores.workload("Job", p.Namespace, p.ownerName)
		if job == nil || job.template == nil {
			return workload.Revision{}, false
		}
		return r.cronJobRevision(p.Namespace, cronJobRevisionName(job.ownerName, job.template.hash))
	case v1alpha1.WorkloadKindJob: // a Job of its own runs once: no revisions
	}
	return workload.Revision{}, false
}

// generatedRevision is the revision of the pods of namespace/generateName,
// the running ones and the newest deleted one: false unless they all ran one
// (a DaemonSet's pods share a generateName across its revisions).
func (r *resolver) generatedRevision(namespace, generateName string) (workload.Revision, bool) {
	pods := r.stores.podsBy(indexGenerateName, namespace+"/"+generateName)
	if p := r.stores.ended.generated(namespace, generateName); p != nil {
		pods = append(pods, p)
	}
	if len(pods) == 0 {
		return workload.Revision{}, false
	}
	first := pods[0]
	for _, p := range pods[1:] {
		if p.ownerKind != first.ownerKind || p.ownerName != first.ownerName || p.revision != first.revision {
			return workload.Revision{}, false
		}
	}
	return r.podRevision(first)
}

// replicaSetRevision is the revision that ReplicaSet rs of Deployment w is.
func replicaSetRevision(w workload.Ref, rs *workloadInfo) workload.Revision {
	rev := workload.Revision{Workload: w, Name: rs.Name, Created: rs.CreationTimestamp.Time}
	if rs.template != nil {
		rev.Hash, rev.Images = rs.template.hash, rs.template.imageList()
	}
	return rev
}

// controllerRevision is the revision that cr is, when a StatefulSet or a
// DaemonSet controls it.
func (r *resolver) controllerRevision(cr *controllerRevisionInfo) (workload.Revision, bool) {
	w := workload.Ref{Namespace: cr.Namespace, Name: cr.ownerName}
	hash := cr.Name
	switch cr.ownerKind {
	case "StatefulSet":
		w.Kind = v1alpha1.WorkloadKindStatefulSet
	case "DaemonSet":
		w.Kind = v1alpha1.WorkloadKindDaemonSet
		hash = strings.TrimPrefix(cr.Name, cr.ownerName+"-")
	default:
		return workload.Revision{}, false
	}
	rev := workload.Revision{Workload: w, Name: cr.Name, Hash: hash, Created: cr.CreationTimestamp.Time}
	for _, p := range r.stores.podsBy(indexRevisionHash, hash) {
		if p.Namespace == cr.Namespace && p.ownerKind == cr.ownerKind && p.ownerName == cr.ownerName {
			rev.Images = p.revision.Value().imageList()
			break
		}
	}
	return rev, true
}

// cronJobRevision is the revision namespace/name, <cronjob>-<template hash>,
// from the cached Jobs that run it: created with the earliest of them.
func (r *resolver) cronJobRevision(namespace, name string) (workload.Revision, bool) {
	var first *workloadInfo
	for _, job := range r.stores.jobsBy(indexCronJobRevision, namespace+"/"+name) {
		if first == nil || job.CreationTimestamp.Before(&first.CreationTimestamp) {
			first = job
		}
	}
	if first == nil {
		return workload.Revision{}, false
	}
	t := first.template
	return workload.Revision{
		Workload: workload.Ref{Namespace: namespace, Kind: v1alpha1.WorkloadKindCronJob, Name: first.ownerName},
		Name:     name, Hash: t.hash, Created: first.CreationTimestamp.Time, Images: t.imageList(),
	}, true
}

// controllerRevisionName is the ControllerRevision that a pod of w with that
// controller-revision-hash ran: a StatefulSet's pods carry its name, a
// DaemonSet's its hash, and the DaemonSet controller names it
// <daemonset>-<hash>.
func controllerRevisionName(w workload.Ref, hash string) string {
	if w.Kind == v1alpha1.WorkloadKindDaemonSet {
		return w.Name + "-" + hash
	}
	return hash
}

// cronJobRevisionName names the revision of a CronJob's Jobs whose template
// has that hash.
func cronJobRevisionName(cronJob, hash string) string { return cronJob + "-" + hash }
