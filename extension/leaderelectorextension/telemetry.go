package leaderelectorextension

import (
	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension/internal/metadata"
)

// MetricTerms counts the terms of leadership this replica began; a standby's
// stays 0.
const MetricTerms = "network_enforcer_leader_terms"

// MetricLeaderObserved counts the times this replica saw the lease change
// hands (itself or another replica taking it): a standby that has counted one
// has competed for the lease and found it held.
const MetricLeaderObserved = "network_enforcer_leader_changes_observed"

// telemetry is the elector's instruments, as its builder makes them.
type telemetry = metadata.TelemetryBuilder

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	return metadata.NewTelemetryBuilder(set)
}
