package render

import (
	"context"
	"testing"

	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/internal/clustertest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/termcontroller"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// env is the control plane the package's tests share, with the fixtures'
// cluster created in it.
var env *controlplanetest.Env

func TestMain(m *testing.M) {
	controlplanetest.Main(m, controlplanetest.Options{}, &env, func(e *controlplanetest.Env) error {
		return clustertest.Create(context.Background(), e.Client)
	})
}

// startRender runs the render controller on the test control plane until the
// test ends, as one term of leadership, with a cache of its own.
func startRender(t *testing.T) {
	t.Helper()
	startRenderOn(t, env)
}

// startRenderOn runs the render controller as startRender does, on control
// plane cp: what it renders follows what cp serves.
func startRenderOn(t *testing.T, cp *controlplanetest.Env) {
	t.Helper()
	controlplanetest.Require(t)
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	served, err := DiscoverKinds(cs.Discovery())
	if err != nil {
		t.Fatal(err)
	}
	informers, err := cache.New(cp.Config, cache.Options{Scheme: scheme, ByObject: CacheOptions()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	t.Cleanup(func() { cancel(); <-done; <-done })
	go func() { defer func() { done <- struct{}{} }(); _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	// A recorder without a sink: the tests read conditions and objects.
	ctrl := NewController(zap.NewNop(), informers, c, &record.FakeRecorder{}, served)
	go func() {
		defer func() { done <- struct{}{} }()
		ctrl.Run(ctx, termcontroller.Env{Logger: zap.NewNop(), Informers: informers})
	}()
}

// proposal is clustertest.CartProposal.
var proposal = clustertest.CartProposal

// waitFor waits for cond (testwait.For).
var waitFor = testwait.For
