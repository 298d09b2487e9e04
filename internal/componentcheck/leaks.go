package componentcheck

import "go.uber.org/goleak"

// LeakOptions are the options of the goleak.VerifyTestMain of every component
// package's TestMain: the goroutines that third-party libraries start and
// offer no way to stop, so that what is left is what a component failed to
// stop at Shutdown. Add one only with a comment that says whose it is and why
// it cannot be stopped.
func LeakOptions() []goleak.Option {
	return []goleak.Option{
		// controller-runtime's multi-namespace cache starts a goroutine per
		// handler registration that waits for every namespace's handler to
		// sync, with no way out: a cache stopped before that leaves it.
		goleak.IgnoreAnyFunction("sigs.k8s.io/controller-runtime/pkg/cache.newMultiNamespaceInformerHandlerRegistration.func1"),
	}
}
