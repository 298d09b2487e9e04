package clustertest

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Create makes the table's objects in c, each after the objects it refers to:
// namespaces, service accounts, workloads, the ReplicaSets and Jobs that the
// workloads own, pods, and then the pods' status. Namespaces and service accounts
// that already exist are kept, since every API server has "default" and
// "kube-system"; any other object that exists is an error. c's scheme must know
// the core, apps and batch types.
func Create(ctx context.Context, c client.Client) error {
	for _, ns := range namespaces() {
		if err := createShared(ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	for _, sa := range serviceAccounts() {
		if err := createShared(ctx, c, sa); err != nil {
			return err
		}
	}

	// controllers[i] is the object that controls row i's pods: the workload, or
	// the ReplicaSet or Job that it owns; nil for a bare pod.
	controllers := make([]client.Object, len(table))
	for i, r := range table {
		if owner := newOwner(r); owner != nil {
			if err := create(ctx, c, owner); err != nil {
				return err
			}
			controllers[i] = owner
		}
	}
	for i, r := range table {
		if controllers[i] == nil {
			continue
		}
		ref, err := controllerRef(c, controllers[i])
		if err != nil {
			return err
		}
		if child := newChild(r, *ref); child != nil {
			if err := create(ctx, c, child); err != nil {
				return err
			}
			controllers[i] = child
		}
	}

	var pods []func() error
	for i, r := range table {
		labels := r.labels
		var ref *metav1.OwnerReference
		if controllers[i] != nil {
			labels = templateLabels(controllers[i])
			var err error
			if ref, err = controllerRef(c, controllers[i]); err != nil {
				return err
			}
		}
		for _, p := range r.pods {
			obj := newPod(r, p, labels, ref)
			if err := create(ctx, c, obj); err != nil {
				return err
			}
			pods = append(pods, func() error {
				obj.Status = runningStatus(r, p)
				if err := c.Status().Update(ctx, obj); err != nil {
					return fmt.Errorf("status of pod %s/%s: %w", obj.Namespace, obj.Name, err)
				}
				return nil
			})
		}
	}
	for _, setStatus := range pods {
		if err := setStatus(); err != nil {
			return err
		}
	}
	return nil
}

// controllerRef returns the owner reference by which a controller owns what it
// made, with the UID that the API server gave owner.
func controllerRef(c client.Client, owner client.Object) (*metav1.OwnerReference, error) {
	gvk, err := apiutil.GVKForObject(owner, c.Scheme())
	if err != nil {
		return nil, err
	}
	return metav1.NewControllerRef(owner, gvk), nil
}

func create(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Create(ctx, obj); err != nil {
		return fmt.Errorf("creating %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// createShared creates obj unless it exists.
func createShared(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}
