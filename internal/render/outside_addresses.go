package render

import (
	"context"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/termcontroller"
)

// Backends kubernetes and istio have no name for the API server or the nodes:
// they render spec.outside's entities as the addresses these have now, which
// the render controller keeps in step as they change (a new control-plane
// address must not break a protected workload). The API server is the
// addresses and ports of the default/kubernetes EndpointSlices, which the API
// server keeps itself; the nodes are every Node's internal addresses.

// apiServerSlices selects the EndpointSlices of the default/kubernetes Service.
var apiServerSlices = labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: "kubernetes"})

const apiServerNamespace = "default"

// CacheOptions has the shared cache keep only the EndpointSlices of the
// kubernetes Service, and of each Node only its addresses: a Node's status is
// kilobytes, and it changes with every heartbeat.
func CacheOptions() map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&discoveryv1.EndpointSlice{}: {
			Namespaces: map[string]cache.Config{apiServerNamespace: {}},
			Label:      apiServerSlices,
		},
		&corev1.Node{}: {Transform: func(obj any) (any, error) {
			n, ok := obj.(*corev1.Node)
			if !ok {
				return obj, nil // a deletion tombstone
			}
			return &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion},
				Status:     corev1.NodeStatus{Addresses: n.Status.Addresses},
			}, nil
		}},
	}
}

// OutsideTypes are the kinds that outside addresses come from.
func OutsideTypes() []client.Object {
	return []client.Object{&discoveryv1.EndpointSlice{}, &corev1.Node{}}
}

// outsideAddresses are the addresses that the API server and the nodes have
// now, as address blocks of one address each, sorted.
type outsideAddresses struct {
	apiServer []string
	// apiServerPorts are the ports that the API server's endpoints serve.
	apiServerPorts []networkingv1.NetworkPolicyPort
	nodes          []string
}

// readOutsideAddresses reads them from the cache.
func readOutsideAddresses(ctx context.Context, r client.Reader) (outsideAddresses, error) {
	var out outsideAddresses
	var sl discoveryv1.EndpointSliceList
	if err := r.List(ctx, &sl, client.InNamespace(apiServerNamespace), client.MatchingLabelsSelector{Selector: apiServerSlices}); err != nil {
		return out, err
	}
	for _, s := range sl.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				out.apiServer = appendBlock(out.apiServer, a)
			}
		}
		for _, p := range s.Ports {
			if p.Port == nil {
				continue
			}
			np := networkingv1.NetworkPolicyPort{Protocol: p.Protocol, Port: ptr.To(intstr.FromInt32(*p.Port))}
			if !slices.ContainsFunc(out.apiServerPorts, func(have networkingv1.NetworkPolicyPort) bool {
				return *have.Port == *np.Port && protocolOf(have.Protocol) == protocolOf(np.Protocol)
			}) {
				out.apiServerPorts = append(out.apiServerPorts, np)
			}
		}
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return out, err
	}
	for _, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				out.nodes = appendBlock(out.nodes, a.Address)
			}
		}
	}
	slices.Sort(out.apiServer)
	out.apiServer = slices.Compact(out.apiServer)
	slices.Sort(out.nodes)
	out.nodes = slices.Compact(out.nodes)
	return out, nil
}

// appendBlock appends address as a block of itself; an address that does not
// parse is left out.
func appendBlock(blocks []string, address string) []string {
	a, err := netip.ParseAddr(address)
	if err != nil {
		return blocks
	}
	a = a.Unmap().WithZone("")
	return append(blocks, netip.PrefixFrom(a, a.BitLen()).String())
}

// unionPorts is ports and each of more that it lacks, in order.
func unionPorts(ports, more []networkingv1.NetworkPolicyPort) []networkingv1.NetworkPolicyPort {
	out := slices.Clone(ports)
	for _, m := range more {
		if !slices.ContainsFunc(out, func(have networkingv1.NetworkPolicyPort) bool { return samePort(have, m) }) {
			out = append(out, m)
		}
	}
	return out
}

// samePort reports whether two ports of a NetworkPolicy name the same port
// or range of one protocol.
func samePort(a, b networkingv1.NetworkPolicyPort) bool {
	return protocolOf(a.Protocol) == protocolOf(b.Protocol) && (a.Port == nil) == (b.Port == nil) &&
		(a.Port == nil || a.Port.String() == b.Port.String()) && ptr.Equal(a.EndPort, b.EndPort)
}

func protocolOf(p *corev1.Protocol) corev1.Protocol {
	if p == nil {
		return corev1.ProtocolTCP
	}
	return *p
}

// usesEntities reports whether a policy's backend renders spec.outside's
// entities as addresses.
func usesEntities(p *v1alpha1.WorkloadNetworkPolicy) bool {
	if p.Spec.Backend == v1alpha1.BackendCilium {
		return false
	}
	return slices.ContainsFunc(p.Spec.Outside, func(o v1alpha1.OutsidePeer) bool { return o.Entity != "" })
}

// outsideWatches tell the render controller of a change to the API server's or
// the nodes' addresses: every policy that renders entities as addresses is
// rendered again.
func outsideWatches(r client.Reader) []termcontroller.Watch {
	enqueue := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list v1alpha1.WorkloadNetworkPolicyList
		if err := r.List(ctx, &list); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for i := range list.Items {
			if p := &list.Items[i]; usesEntities(p) {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
			}
		}
		return reqs
	})
	nodeAddressesChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, okOld := e.ObjectOld.(*corev1.Node)
		n, okNew := e.ObjectNew.(*corev1.Node)
		return !okOld || !okNew || !slices.Equal(o.Status.Addresses, n.Status.Addresses)
	}}
	return []termcontroller.Watch{
		{Object: &discoveryv1.EndpointSlice{}, Handler: enqueue},
		{Object: &corev1.Node{}, Handler: enqueue, Predicates: []predicate.Predicate{nodeAddressesChanged}},
	}
}

// entityRule is the address blocks and ports that backends kubernetes and
// istio render an entity of spec.outside as in direction d, with the
// addresses it has now: towards the API server, its endpoints' ports (where
// it listens now, which a call to the kubernetes Service reaches after its
// translation) and each port of the entity's own (what was seen, such as
// another port of the node that the API server runs on, which the data
// plane names the API server too); else the entity's own. No blocks when it
// has no address.
func (a *outsideAddresses) entityRule(o *v1alpha1.OutsidePeer, d v1alpha1.Direction) (blocks []string, ports []networkingv1.NetworkPolicyPort) {
	switch o.Entity {
	case v1alpha1.EntityAPIServer:
		if d == v1alpha1.DirectionEgress && len(o.Ports) > 0 {
			return a.apiServer, unionPorts(a.apiServerPorts, o.Ports)
		}
		if d == v1alpha1.DirectionEgress {
			return a.apiServer, a.apiServerPorts
		}
		return a.apiServer, o.Ports
	case v1alpha1.EntityNodes, v1alpha1.EntityHost, v1alpha1.EntityRemoteNodes:
		// A NetworkPolicy or an AuthorizationPolicy selects the workload's
		// pods on every node: the pods' own node and the others are every
		// node's address to it.
		return a.nodes, o.Ports
	default:
		return nil, nil
	}
}
