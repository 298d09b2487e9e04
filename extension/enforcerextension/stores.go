package enforcerextension

import (
	"context"
	"fmt"
	"time"
	"unique"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// Index names of the compact stores.
const (
	// indexPodIP indexes pods by each of their IPs, finished ones included:
	// a finished pod held its address until it ended (podInfo.heldAt).
	indexPodIP = "podIP"
	// indexGenerateName indexes pods by "<namespace>/<generateName>", for
	// Goldmane's aggregates.
	indexGenerateName = "generateName"
	// indexNode indexes pods that have not finished by their node.
	indexNode = "node"
	// indexRevisionHash indexes the pods of StatefulSets and DaemonSets by
	// their controller-revision-hash, for the images of a ControllerRevision
	// (whose data the cache does not keep).
	indexRevisionHash = "revisionHash"
	// indexCronJobRevision indexes the Jobs of CronJobs by
	// "<namespace>/<cronjob>-<template hash>", the revision that they run.
	indexCronJobRevision = "cronJobRevision"
)

// stores are client-go informers whose stores hold compact records: pods,
// namespaces, the workload kinds, by kind, and the ControllerRevisions of
// StatefulSets and DaemonSets.
type stores struct {
	factory    informers.SharedInformerFactory
	pods       toolscache.SharedIndexInformer
	namespaces toolscache.SharedIndexInformer
	workloads  map[string]toolscache.SharedIndexInformer
	revisions  toolscache.SharedIndexInformer
	// ended keeps the deleted pods for their grace period.
	ended *tombstones
}

func newStores(cs kubernetes.Interface, grace time.Duration) (*stores, error) {
	in := &interner{}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(in.compact))
	s := &stores{
		factory:    f,
		pods:       f.Core().V1().Pods().Informer(),
		namespaces: f.Core().V1().Namespaces().Informer(),
		workloads: map[string]toolscache.SharedIndexInformer{
			"ReplicaSet":  f.Apps().V1().ReplicaSets().Informer(),
			"Deployment":  f.Apps().V1().Deployments().Informer(),
			"StatefulSet": f.Apps().V1().StatefulSets().Informer(),
			"DaemonSet":   f.Apps().V1().DaemonSets().Informer(),
			"Job":         f.Batch().V1().Jobs().Informer(),
			"CronJob":     f.Batch().V1().CronJobs().Informer(),
		},
		revisions: f.Apps().V1().ControllerRevisions().Informer(),
	}
	err := s.pods.AddIndexers(toolscache.Indexers{
		indexPodIP: func(obj any) ([]string, error) {
			p, ok := obj.(*podInfo)
			if !ok {
				return nil, nil
			}
			return p.ips, nil
		},
		indexNode: func(obj any) ([]string, error) {
			p, ok := obj.(*podInfo)
			if !ok || p.finished() || p.nodeName == "" {
				return nil, nil
			}
			return []string{p.nodeName}, nil
		},
		indexGenerateName: func(obj any) ([]string, error) {
			p, ok := obj.(*podInfo)
			if !ok || p.GenerateName == "" {
				return nil, nil
			}
			return []string{p.Namespace + "/" + p.GenerateName}, nil
		},
		indexRevisionHash: func(obj any) ([]string, error) {
			p, ok := obj.(*podInfo)
			if !ok || p.revision == (unique.Handle[template]{}) {
				return nil, nil
			}
			return []string{p.revision.Value().hash}, nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("pod indexes: %w", err)
	}
	err = s.workloads["Job"].AddIndexers(toolscache.Indexers{
		indexCronJobRevision: func(obj any) ([]string, error) {
			w, ok := obj.(*workloadInfo)
			if !ok || w.ownerKind != "CronJob" || w.template == nil {
				return nil, nil
			}
			return []string{w.Namespace + "/" + cronJobRevisionName(w.ownerName, w.template.hash)}, nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("job indexes: %w", err)
	}
	s.ended = newTombstones(grace, time.Now)
	if _, err := s.pods.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: s.podDeleted}); err != nil {
		return nil, fmt.Errorf("pod deletions: %w", err)
	}
	return s, nil
}

// podDeleted keeps a deleted pod as a tombstone: a flow that it made may
// still arrive.
func (s *stores) podDeleted(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if p, ok := obj.(*podInfo); ok {
		s.ended.deleted(p)
	}
}

// start runs the informers until ctx ends and waits for their first lists.
func (s *stores) start(ctx, syncCtx context.Context) error {
	s.factory.Start(ctx.Done())
	for typ, ok := range s.factory.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			return fmt.Errorf("%v did not sync", typ)
		}
	}
	return nil
}

// pod returns the pod namespace/name that the cache holds.
func (s *stores) pod(namespace, name string) *podInfo {
	obj, ok, err := s.pods.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	p, _ := obj.(*podInfo)
	return p
}

// podUID returns the UID of the pod namespace/name, for the membership Lease
// that the pod owns (membership.PodLookup).
func (s *stores) podUID(namespace, name string) (types.UID, bool) {
	p := s.pod(namespace, name)
	if p == nil {
		return "", false
	}
	return p.UID, true
}

// podOrEnded returns the pod namespace/name, or the deleted one within its
// grace period.
func (s *stores) podOrEnded(namespace, name string) *podInfo {
	if p := s.pod(namespace, name); p != nil {
		return p
	}
	return s.ended.pod(namespace, name)
}

func (s *stores) podsBy(index, value string) []*podInfo {
	objs, err := s.pods.GetIndexer().ByIndex(index, value)
	if err != nil {
		return nil
	}
	out := make([]*podInfo, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*podInfo); ok {
			out = append(out, p)
		}
	}
	return out
}

// runningPods returns the pods that have not finished: on node, or on any
// node for "".
func (s *stores) runningPods(node string) []*podInfo {
	if node != "" {
		return s.podsBy(indexNode, node)
	}
	var out []*podInfo
	for _, o := range s.pods.GetIndexer().List() {
		if p, ok := o.(*podInfo); ok && !p.finished() {
			out = append(out, p)
		}
	}
	return out
}

// controllerRevision returns the ControllerRevision namespace/name that the
// cache holds.
func (s *stores) controllerRevision(namespace, name string) *controllerRevisionInfo {
	obj, ok, err := s.revisions.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	r, _ := obj.(*controllerRevisionInfo)
	return r
}

// jobsBy returns the Jobs that the Job store's index holds under value.
func (s *stores) jobsBy(index, value string) []*workloadInfo {
	objs, err := s.workloads["Job"].GetIndexer().ByIndex(index, value)
	if err != nil {
		return nil
	}
	out := make([]*workloadInfo, 0, len(objs))
	for _, o := range objs {
		if w, ok := o.(*workloadInfo); ok {
			out = append(out, w)
		}
	}
	return out
}

func (s *stores) workload(kind, namespace, name string) *workloadInfo {
	inf, ok := s.workloads[kind]
	if !ok {
		return nil
	}
	obj, ok, err := inf.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	w, _ := obj.(*workloadInfo)
	return w
}
