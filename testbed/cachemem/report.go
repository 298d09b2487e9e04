package main

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// report prints what the API server holds, counted by the server rather than
// by us, and the size of a pod as it stores it, so that a result can be judged
// by the cluster it was measured on.
func report(ctx context.Context, cs kubernetes.Interface) error {
	one := metav1.ListOptions{Limit: 1}
	// count returns the number of objects of a list from one item and the
	// server's count of the rest.
	count := func(items int, m metav1.ListMeta) int64 {
		n := int64(items)
		if m.RemainingItemCount != nil {
			n += *m.RemainingItemCount
		}
		return n
	}
	var parts []string
	add := func(what string, items int, m metav1.ListMeta, err error) error {
		if err != nil {
			return fmt.Errorf("counting %s: %w", what, err)
		}
		parts = append(parts, fmt.Sprintf("%d %s", count(items, m), what))
		return nil
	}
	ns, err := cs.CoreV1().Namespaces().List(ctx, one)
	if err := add("namespaces", len(ns.Items), ns.ListMeta, err); err != nil {
		return err
	}
	deploy, err := cs.AppsV1().Deployments("").List(ctx, one)
	if err := add("Deployments", len(deploy.Items), deploy.ListMeta, err); err != nil {
		return err
	}
	rs, err := cs.AppsV1().ReplicaSets("").List(ctx, one)
	if err := add("ReplicaSets", len(rs.Items), rs.ListMeta, err); err != nil {
		return err
	}
	sts, err := cs.AppsV1().StatefulSets("").List(ctx, one)
	if err := add("StatefulSets", len(sts.Items), sts.ListMeta, err); err != nil {
		return err
	}
	ds, err := cs.AppsV1().DaemonSets("").List(ctx, one)
	if err := add("DaemonSets", len(ds.Items), ds.ListMeta, err); err != nil {
		return err
	}
	cj, err := cs.BatchV1().CronJobs("").List(ctx, one)
	if err := add("CronJobs", len(cj.Items), cj.ListMeta, err); err != nil {
		return err
	}
	jobs, err := cs.BatchV1().Jobs("").List(ctx, one)
	if err := add("Jobs", len(jobs.Items), jobs.ListMeta, err); err != nil {
		return err
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, one)
	if err := add("pods", len(pods.Items), pods.ListMeta, err); err != nil {
		return err
	}
	logf("the API server holds %s", strings.Join(parts, ", "))

	if len(pods.Items) == 0 {
		return nil
	}
	p := pods.Items[0]
	raw, err := cs.CoreV1().RESTClient().Get().
		AbsPath("/api/v1/namespaces", p.Namespace, "pods", p.Name).
		SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("reading pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	logf("a pod, such as %s/%s: %.1f KiB as JSON (managed fields included), %d labels, %d annotations, %d containers",
		p.Namespace, p.Name, float64(len(raw))/1024, len(p.Labels), len(p.Annotations), len(p.Spec.Containers))
	return nil
}
