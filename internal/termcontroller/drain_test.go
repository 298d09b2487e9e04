package termcontroller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// TestADrainThatTheAPIServerRefusesEndsAtOnce: on the way out, keys whose
// writes the API server refuses for the replica's token (Unauthorized) or
// rights (Forbidden), as after an uninstall deleted the ServiceAccount and
// its bindings, are not waited for until HandOffTimeout: Stop returns as soon
// as the others are written, with an error that names the refused keys, and
// no hand-off. A key that fails otherwise is still waited for (the writers'
// drain test).
func TestADrainThatTheAPIServerRefusesEndsAtOnce(t *testing.T) {
	defer func(d time.Duration) { HandOffTimeout = d }(HandOffTimeout)
	// Far beyond the test's own wait: a Stop that waits it out fails the
	// test rather than passing late.
	HandOffTimeout = time.Hour
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "shop", Name: name} }
	proposals := schema.GroupResource{Group: "networkenforcer.kubewarden.io", Resource: "workloadnetworkpolicyproposals"}
	c := New("drain-test", nil, func(_ context.Context, k types.NamespacedName) error {
		switch k.Name {
		case "token-revoked":
			return apierrors.NewUnauthorized("Unauthorized")
		case "binding-deleted":
			return apierrors.NewForbidden(proposals, k.Name, errors.New("cannot get resource"))
		}
		return nil
	})
	done := runTerm(t, c)
	c.Enqueue(key("started"), 0)
	testwait.For(t, "the term's first reconcile", 30*time.Second, func() bool { return c.Rounds(key("started")) > 0 })

	stopped := make(chan error, 1)
	go func() {
		stopped <- c.Stop(context.Background(), []types.NamespacedName{key("token-revoked"), key("written"), key("binding-deleted")})
	}()
	var err error
	select {
	case err = <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("Stop waited on for keys that the API server refuses")
	}
	if err == nil || !strings.Contains(err.Error(), "2 objects not written") {
		t.Fatalf("Stop: %v, want the 2 refused keys not written", err)
	}
	if c.Rounds(key("written")) == 0 {
		t.Error("the key that the API server takes was not written on the way out")
	}
	if c.HandedOff() {
		t.Error("HandedOff after refused writes: the next leader must read the backfill")
	}
	<-done
}

// runTerm runs a term of c until the test ends or Stop; the channel closes
// when the term has ended.
func runTerm(t *testing.T, c *Controller) <-chan struct{} {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, Env{Logger: zap.NewNop()})
	}()
	return done
}
