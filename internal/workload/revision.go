package workload

import "time"

// Revision is one revision of a workload: the pod template that a pod ran,
// as the workload's controller keeps it. A Deployment's is its ReplicaSet
// (pod-template-hash), a StatefulSet's or DaemonSet's its ControllerRevision
// (controller-revision-hash), a CronJob's the template of its Jobs (a hash
// of it, since Jobs carry no revision).
type Revision struct {
	// Workload is the workload that the revision is of.
	Workload Ref
	// Name names the revision: the ReplicaSet, the ControllerRevision, or
	// <cronjob>-<hash>.
	Name string
	// Hash is the pods' revision label, or the template's hash.
	Hash string
	// Created is when the revision appeared: its object's creation, or the
	// first Job of the template that the cache knows; zero when unknown.
	Created time.Time
	// Images are the container images that the template asks for.
	Images []string
}

// Revisions finds the revision that a pod ran. The violation processor ties
// each edge that a policy does not allow to the revisions of its ends, and
// the writer reads a revision's details when it writes an amendment.
type Revisions interface {
	// PodRevision is the revision that the pod ran, an ended pod within
	// the cache's grace period included; false when the pod is not known,
	// or its workload keeps no revisions (a bare pod, a Job of its own).
	PodRevision(namespace, pod string) (Revision, bool)
	// IPRevision is the revision of the pod that held ip at time at, under
	// the rules of Resolver.ResolveIP; false when that is not one pod.
	IPRevision(ip string, at time.Time) (Revision, bool)
	// Revision returns the revision of that name in namespace, as
	// Revision.Name names it; false when the cache does not know it.
	Revision(namespace, name string) (Revision, bool)
}
