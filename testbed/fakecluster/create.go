package fakecluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
)

// Create makes the plan's objects, each after the objects it refers to:
// namespaces, workloads, the ReplicaSets and Jobs that workloads own, and pods,
// each pod's status right after the pod. No controller runs, so this writes what
// the controllers and kubelets would.
func (p *Plan) Create(ctx context.Context, cs kubernetes.Interface, workers int) error {
	Logf("creating %d namespaces, %d workloads, %d pods with %d workers", len(p.namespaces), len(p.workloads), p.PodCount(), workers)
	create := metav1.CreateOptions{}
	err := parallel(ctx, workers, "namespaces", len(p.namespaces), func(ctx context.Context, i int) error {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.namespaces[i], Labels: map[string]string{
			"team": teams[i%len(teams)], "environment": envs[i%len(envs)],
		}}}
		_, err := createOrGet(ctx, func(ctx context.Context) (*corev1.Namespace, error) {
			return cs.CoreV1().Namespaces().Create(ctx, ns, create)
		}, func(ctx context.Context) (*corev1.Namespace, error) {
			return cs.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		})
		return err
	})
	if err != nil {
		return err
	}

	// tops[i] is the reference by which workload i owns what it made.
	tops := make([]metav1.OwnerReference, len(p.workloads))
	err = parallel(ctx, workers, "workloads", len(p.workloads), func(ctx context.Context, i int) error {
		ref, err := p.workloads[i].createTop(ctx, cs)
		tops[i] = ref
		return err
	})
	if err != nil {
		return err
	}

	var parents []int
	for i, w := range p.workloads {
		if w.childName() != "" {
			parents = append(parents, i)
		}
	}
	err = parallel(ctx, workers, "ReplicaSets and Jobs", len(parents), func(ctx context.Context, i int) error {
		w := p.workloads[parents[i]]
		return w.createChild(ctx, cs, tops[parents[i]])
	})
	if err != nil {
		return err
	}

	// pods[j] is the workload and ordinal of pod j; a nil workload is a bare pod.
	type podRef struct {
		w       *workload
		ordinal int
	}
	pods := make([]podRef, 0, p.PodCount())
	for _, w := range p.workloads {
		for o := range w.pods {
			pods = append(pods, podRef{w, o})
		}
	}
	for range p.bare {
		pods = append(pods, podRef{})
	}
	return parallel(ctx, workers, "pods", len(pods), func(ctx context.Context, j int) error {
		var pod *corev1.Pod
		if r := pods[j]; r.w != nil {
			pod = r.w.pod(r.ordinal, j, p.Nodes)
		} else {
			pod = barePod(p.namespaces[j%len(p.namespaces)], j, p.Nodes)
		}
		api := cs.CoreV1().Pods(pod.Namespace)
		created, err := createOrGet(ctx, func(ctx context.Context) (*corev1.Pod, error) {
			return api.Create(ctx, pod, create)
		}, func(ctx context.Context) (*corev1.Pod, error) {
			return api.Get(ctx, pod.Name, metav1.GetOptions{})
		})
		if err != nil {
			return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		created.Status = runningStatus(created, j, p.Nodes)
		err = retry(ctx, func(ctx context.Context, attempt int) error {
			if attempt > 0 {
				// Pods allow an unconditional update, which keeps a retry of an
				// update that did succeed from conflicting with itself.
				created.ResourceVersion = ""
			}
			_, err := api.UpdateStatus(ctx, created, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		return nil
	})
}

// createTop creates the workload and returns the reference by which it owns
// its ReplicaSet or Job. A workload that owns its pods itself is their
// controller, and then its pods' labels are its template's.
func (w *workload) createTop(ctx context.Context, cs kubernetes.Interface) (metav1.OwnerReference, error) {
	get := metav1.GetOptions{}
	var obj metav1.Object
	var gvk = appsv1.SchemeGroupVersion.WithKind(w.kind)
	var err error
	switch w.kind {
	case kindDeployment:
		api := cs.AppsV1().Deployments(w.namespace)
		obj, err = createOrGet(ctx, func(ctx context.Context) (*appsv1.Deployment, error) {
			return api.Create(ctx, w.deployment(), metav1.CreateOptions{})
		}, func(ctx context.Context) (*appsv1.Deployment, error) { return api.Get(ctx, w.name, get) })
	case kindStatefulSet:
		api := cs.AppsV1().StatefulSets(w.namespace)
		var sts *appsv1.StatefulSet
		sts, err = createOrGet(ctx, func(ctx context.Context) (*appsv1.StatefulSet, error) {
			return api.Create(ctx, w.statefulSet(), metav1.CreateOptions{})
		}, func(ctx context.Context) (*appsv1.StatefulSet, error) { return api.Get(ctx, w.name, get) })
		if err == nil {
			obj, w.podLabels = sts, sts.Spec.Template.Labels
		}
	case kindDaemonSet:
		api := cs.AppsV1().DaemonSets(w.namespace)
		var ds *appsv1.DaemonSet
		ds, err = createOrGet(ctx, func(ctx context.Context) (*appsv1.DaemonSet, error) {
			return api.Create(ctx, w.daemonSet(), metav1.CreateOptions{})
		}, func(ctx context.Context) (*appsv1.DaemonSet, error) { return api.Get(ctx, w.name, get) })
		if err == nil {
			obj, w.podLabels = ds, ds.Spec.Template.Labels
		}
	case kindCronJob:
		gvk = batchv1.SchemeGroupVersion.WithKind(w.kind)
		api := cs.BatchV1().CronJobs(w.namespace)
		obj, err = createOrGet(ctx, func(ctx context.Context) (*batchv1.CronJob, error) {
			return api.Create(ctx, w.cronJob(), metav1.CreateOptions{})
		}, func(ctx context.Context) (*batchv1.CronJob, error) { return api.Get(ctx, w.name, get) })
	}
	if err != nil {
		return metav1.OwnerReference{}, fmt.Errorf("%s %s/%s: %w", w.kind, w.namespace, w.name, err)
	}
	ref := *metav1.NewControllerRef(obj, gvk)
	if w.podLabels != nil {
		w.controller = ref
	}
	return ref, nil
}

// createChild creates the ReplicaSet or Job between the workload and its pods,
// which then is their controller.
func (w *workload) createChild(ctx context.Context, cs kubernetes.Interface, owner metav1.OwnerReference) error {
	get := metav1.GetOptions{}
	name := w.childName()
	var err error
	switch w.kind {
	case kindDeployment:
		api := cs.AppsV1().ReplicaSets(w.namespace)
		var rs *appsv1.ReplicaSet
		rs, err = createOrGet(ctx, func(ctx context.Context) (*appsv1.ReplicaSet, error) {
			return api.Create(ctx, w.replicaSet(owner), metav1.CreateOptions{})
		}, func(ctx context.Context) (*appsv1.ReplicaSet, error) { return api.Get(ctx, name, get) })
		if err == nil {
			w.controller = *metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
			w.podLabels = rs.Spec.Template.Labels
		}
	case kindCronJob:
		api := cs.BatchV1().Jobs(w.namespace)
		var job *batchv1.Job
		job, err = createOrGet(ctx, func(ctx context.Context) (*batchv1.Job, error) {
			return api.Create(ctx, w.job(owner), metav1.CreateOptions{})
		}, func(ctx context.Context) (*batchv1.Job, error) { return api.Get(ctx, name, get) })
		if err == nil {
			w.controller = *metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))
			w.podLabels = job.Spec.Template.Labels
		}
	}
	if err != nil {
		return fmt.Errorf("child of %s %s/%s: %w", w.kind, w.namespace, w.name, err)
	}
	return nil
}

// parallel calls f for 0 ≤ i < n on workers goroutines, stops at the first error
// and reports progress every ten seconds.
func parallel(ctx context.Context, workers int, what string, n int, f func(ctx context.Context, i int) error) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(ctx, i); err != nil {
					cancel(err)
					return
				}
				done.Add(1)
			}
		})
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	start := time.Now()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			d := done.Load()
			Logf("  %s: %d/%d (%.0f/s)", what, d, n, float64(d)/time.Since(start).Seconds())
			continue
		case <-finished:
		}
		break
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	Logf("  %s: %d in %s", what, n, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// maxAttempts bounds the retries of one request: an API server that is
// overloaded for a while recovers, one that keeps failing will not.
const maxAttempts = 10

// retry calls f until it succeeds, fails with an error that a retry cannot
// cure, or has failed maxAttempts times.
func retry(ctx context.Context, f func(ctx context.Context, attempt int) error) error {
	delay := 200 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := f(ctx, attempt)
		if err == nil || attempt+1 >= maxAttempts || !transient(err) {
			return err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// createOrGet creates an object, retrying transient failures. A retry that
// finds the object was created by an attempt whose answer was lost gets it.
func createOrGet[T any](ctx context.Context, create, get func(context.Context) (T, error)) (T, error) {
	var out T
	err := retry(ctx, func(ctx context.Context, attempt int) error {
		var err error
		out, err = create(ctx)
		if attempt > 0 && apierrors.IsAlreadyExists(err) {
			out, err = get(ctx)
		}
		return err
	})
	return out, err
}

func transient(err error) bool {
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) ||
		utilnet.IsConnectionReset(err) || utilnet.IsConnectionRefused(err) || utilnet.IsProbableEOF(err) ||
		errors.Is(err, io.ErrUnexpectedEOF)
}
