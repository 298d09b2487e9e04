package main

import "github.com/cilium/cilium/api/v1/observer"

// The outside service that the demo's cart calls: the recording has its
// address only (it was made without DNS visibility), so the demo gives the
// flows to that address the name that an agent with Cilium's DNS proxy on puts
// in destination_names. Learning with outside_peers entities then learns the
// service by its name, which backend cilium renders as toFQDNs.
const (
	outsideAddress = "198.51.100.20"
	outsideName    = "api.payments.example.com"
)

// nameOutsideService names the flows to outsideAddress and returns how many it
// named.
func nameOutsideService(flows []*observer.GetFlowsResponse) int {
	n := 0
	for _, resp := range flows {
		if f := resp.GetFlow(); f != nil && f.GetIP().GetDestination() == outsideAddress {
			f.DestinationNames = []string{outsideName}
			n++
		}
	}
	return n
}
