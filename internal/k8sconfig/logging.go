package k8sconfig

import (
	"sync"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

var routeLogsOnce sync.Once

// RouteKubernetesLogs sends what client-go and controller-runtime log (watch
// errors, leader election) to the collector's logger, so that it reaches the
// collector's log outputs in its format instead of stderr. Both libraries log
// through process-wide loggers, so the first component that starts sets them.
func RouteKubernetesLogs(logger *zap.Logger) {
	routeLogsOnce.Do(func() {
		l := zapr.NewLogger(logger.With(zap.String("source", "kubernetes")))
		klog.SetLogger(l)
		ctrllog.SetLogger(l)
	})
}
