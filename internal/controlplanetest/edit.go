package controlplanetest

import (
	"context"
	"testing"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Edit changes obj as a person does: edit runs on the API server's newest
// copy, and again on a conflict, since the controllers write the object's
// status and annotations meanwhile. obj holds the object as written.
func Edit[T client.Object](tb testing.TB, c client.Client, obj T, edit func(T)) {
	tb.Helper()
	ctx := context.Background()
	key := client.ObjectKeyFromObject(obj)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, key, obj); err != nil {
			return err
		}
		edit(obj)
		return c.Update(ctx, obj)
	})
	if err != nil {
		tb.Fatal(err)
	}
}
