// Package rendercmd is the distribution's render subcommand:
//
//	network-enforcer render [--mode monitor|protect] [--diff] [-f FILE|-] [--kubeconfig FILE] [--context NAME]
//
// It reads WorkloadNetworkPolicyProposals and WorkloadNetworkPolicies, as
// `kubectl get -o yaml` (or -o json) prints them, one object, a List or
// several YAML documents, and prints the native object that the render
// controller creates for each, by the controller's own code
// (render.RenderPolicy): for a proposal, the object of the policy that its
// promotion in --mode would create. With --diff it prints, for each
// amendment, the unified diff of its policy's native object as the policy is
// and as the amendment would make it (render.AmendmentDiff, which the review
// page shows too).
//
// NewCommand is the subcommand as the distribution's main adds it to the
// collector's root command; Run is the same with its arguments given.
package rendercmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/render"
)

// Name is the subcommand's name, the binary's first argument.
const Name = "render"

// use is the subcommand's use line, after the binary's name.
const use = Name + " [--mode monitor|protect] [--diff] [-f FILE|-] [--kubeconfig FILE] [--context NAME]"

// NewCommand returns the render subcommand, which the distribution's main adds
// to the collector's root command (otelcol.NewCommand). An error prints
// "network-enforcer render: " and the error on standard error, and Execute
// returns it; -h and --help print the usage on standard output.
func NewCommand() *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:           use,
		Short:         "Print the native object that each policy or proposal read would create",
		Long:          description,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			err := o.run(ctx, args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", cmd.CommandPath(), err)
			}
			return err
		},
	}
	o.addFlags(cmd.Flags())
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		fmt.Fprintf(c.ErrOrStderr(), "%s: %v\nRun '%s --help' for usage.\n", c.CommandPath(), err, c.CommandPath())
		return err
	})
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		fmt.Fprint(c.OutOrStderr(), usage(c.CommandPath(), c.Flags()))
		return nil
	})
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) {
		fmt.Fprint(c.OutOrStdout(), usage(c.CommandPath(), c.Flags()))
	})
	return cmd
}

// usage is the subcommand's help: its use line, description and flags;
// commandPath is the command's path, "network-enforcer render".
func usage(commandPath string, fs *pflag.FlagSet) string {
	return "Usage: " + commandPath + strings.TrimPrefix(use, Name) + "\n\n" + description + "\nFlags:\n" + fs.FlagUsages()
}

const description = `Prints, as YAML, the native object (NetworkPolicy, AuthorizationPolicy or
CiliumNetworkPolicy) that the render controller creates for each
WorkloadNetworkPolicyProposal or WorkloadNetworkPolicy read from FILE, or from
standard input when FILE is - or not given, as kubectl get -o yaml (or -o json)
prints them. A proposal is rendered as the policy that its promotion in --mode
would create (an amendment as the policy that it amends, with its spec); a
policy in its spec.mode, or in --mode when given.

With --diff, for each amendment read (a proposal with the label
networkenforcer.kubewarden.io/amends: what learning adds to a policy and removes
from it), it prints the unified diff of the native object of its policy as the
policy is (its revision) and as the promotion of the amendment would make it,
both in the policy's spec.mode or in --mode; then, on lines that start with #,
each edge that the amendment adds with the workload revisions that made it
(LearnedRevision first: a revision that was live while the policy was learned
made it, so review it first) and each rule that it removes with its last use.
The policy is the one of that name read beside the amendment, else the one in
the cluster of the kubeconfig:

  kubectl get -n NS wnp/POLICY wnpp/AMENDMENT -o yaml | network-enforcer render --diff

A mode without an object (monitor for backends kubernetes and cilium) prints
the comments alone and says so on standard error; --mode protect diffs the
object that protect mode creates. A first proposal is said on standard error;
input without an amendment is an error.

Backends kubernetes and istio render spec.outside's entities (the API server,
the nodes) as their addresses in the cluster: those are read from the cluster
of the kubeconfig, found as kubectl finds it (--kubeconfig, $KUBECONFIG,
~/.kube/config, in a pod its ServiceAccount). Other objects need no cluster.
`

// options are the subcommand's flags.
type options struct {
	mode, file, kubeconfig, context string
	diff                            bool
}

func (o *options) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.mode, "mode", "", "the mode to render in: monitor or protect; required for a proposal, a policy's spec.mode otherwise")
	fs.BoolVar(&o.diff, "diff", false, "print what each amendment changes in its policy's native object, as a unified diff")
	fs.StringVarP(&o.file, "file", "f", "-", "the file to read, - for standard input")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "the kubeconfig of the cluster to read entities' addresses from")
	fs.StringVar(&o.context, "context", "", "the kubeconfig context to use")
}

// Run runs the subcommand with args (those after its name), reading objects
// from stdin unless args name a file, printing the native objects on stdout
// and, for each object whose mode asks for none, why on stderr. It parses the
// flags as the command does; -h returns pflag.ErrHelp once the usage is
// printed on stderr.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var o options
	fs := pflag.NewFlagSet(Name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	o.addFlags(fs)
	fs.Usage = func() { fmt.Fprint(stderr, usage("network-enforcer "+Name, fs)) }
	if err := fs.Parse(args); err != nil {
		return err
	}
	return o.run(ctx, fs.Args(), stdin, stdout, stderr)
}

// run renders or diffs what o names with args, the arguments left after the
// flags.
func (o *options) run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected arguments %q: give the file with -f", args)
	}
	m, err := parseMode(o.mode)
	if err != nil {
		return err
	}
	in := stdin
	if o.file != "-" {
		f, err := os.Open(o.file)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	objs, err := Parse(in)
	if err != nil {
		return err
	}
	c := &cluster{kubeconfig: o.kubeconfig, context: o.context}
	if o.diff {
		return Diff(ctx, objs, m, c, stdout, stderr)
	}
	return Render(ctx, objs, m, c, stdout, stderr)
}

// parseMode returns the mode that --mode names; "" when not given.
func parseMode(s string) (v1alpha1.PolicyMode, error) {
	switch m := v1alpha1.PolicyMode(s); m {
	case "", v1alpha1.PolicyModeMonitor, v1alpha1.PolicyModeProtect:
		return m, nil
	}
	return "", fmt.Errorf("invalid mode %q: must be one of %s, %s", s, v1alpha1.PolicyModeMonitor, v1alpha1.PolicyModeProtect)
}

// Render prints the native object of each of objs in mode ("" for a policy's
// own), YAML documents separated by ---, reading entities' addresses from r
// when an object needs them. An object that gets none is said on stderr. It
// renders every object before it prints any: an error prints nothing.
func Render(ctx context.Context, objs []Object, mode v1alpha1.PolicyMode, r client.Reader, stdout, stderr io.Writer) error {
	var docs [][]byte
	var notes []string
	for _, o := range objs {
		n, err := renderObject(ctx, o, mode, r)
		if err != nil {
			return fmt.Errorf("%s: %w", o, err)
		}
		if n.Object == nil {
			notes = append(notes, fmt.Sprintf("%s: no %s: %s", o, n.Kind, n.Message))
			continue
		}
		b, err := n.YAML()
		if err != nil {
			return fmt.Errorf("%s: %w", o, err)
		}
		docs = append(docs, b)
	}
	for _, note := range notes {
		fmt.Fprintln(stderr, note)
	}
	for i, b := range docs {
		if i > 0 {
			if _, err := io.WriteString(stdout, "---\n"); err != nil {
				return err
			}
		}
		if _, err := stdout.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func renderObject(ctx context.Context, o Object, mode v1alpha1.PolicyMode, r client.Reader) (render.Native, error) {
	if o.Proposal != nil {
		if mode == "" {
			return render.Native{}, fmt.Errorf("a proposal is rendered as the policy that its promotion creates: give its mode with --mode %s or --mode %s",
				v1alpha1.PolicyModeMonitor, v1alpha1.PolicyModeProtect)
		}
		if render.AmendedPolicyName(o.Proposal) != "" {
			// Its promotion changes the policy that it amends.
			return render.RenderPolicy(ctx, r, render.AmendmentPolicy(o.Proposal, mode))
		}
		return render.RenderProposal(ctx, r, o.Proposal, mode)
	}
	p := o.Policy
	if mode != "" {
		p = p.DeepCopy()
		p.Spec.Mode = mode
	}
	return render.RenderPolicy(ctx, r, p)
}

// Diff prints, for each amendment among objs, what it changes in the policy
// it amends (render.AmendmentDiff.Text): the unified diff of the policy's
// native object as it is and as the amendment would make it, both in mode
// (the policy's spec.mode when ""), and the attribution of each added edge and
// removed rule as comments; one amendment after another, a blank line
// between. The policy is the one among objs of the amendment's namespace and
// policy name, else the one that r reads. What has nothing to diff (a first
// proposal, a mode without an object) is said on stderr; input without an
// amendment is an error. It diffs every amendment before it prints any: an
// error prints nothing.
func Diff(ctx context.Context, objs []Object, mode v1alpha1.PolicyMode, r client.Reader, stdout, stderr io.Writer) error {
	policies := map[types.NamespacedName]*v1alpha1.WorkloadNetworkPolicy{}
	for _, o := range objs {
		if o.Policy != nil {
			policies[types.NamespacedName{Namespace: o.Policy.Namespace, Name: o.Policy.Name}] = o.Policy
		}
	}
	var texts, notes []string
	for _, o := range objs {
		if o.Proposal == nil {
			continue
		}
		name := render.AmendedPolicyName(o.Proposal)
		if name == "" {
			notes = append(notes, fmt.Sprintf("%s: a first proposal, not an amendment: nothing to diff (render it without --diff)", o))
			continue
		}
		key := types.NamespacedName{Namespace: o.Proposal.Namespace, Name: name}
		policy, ok := policies[key]
		if !ok {
			var err error
			if policy, err = readPolicy(ctx, r, key); err != nil {
				return fmt.Errorf("%s: %w", o, err)
			}
		}
		d, err := render.NewAmendmentDiff(policy, o.Proposal, mode, func(p *v1alpha1.WorkloadNetworkPolicy) (render.Native, error) {
			return render.RenderPolicy(ctx, r, p)
		})
		if err != nil {
			return fmt.Errorf("%s: %w", o, err)
		}
		if d.None != "" {
			hint := ""
			if d.Mode != v1alpha1.PolicyModeProtect {
				hint = ": give --mode protect to diff the " + d.Kind + " that protect mode creates"
			}
			notes = append(notes, fmt.Sprintf("%s: no %s to diff: %s%s", o, d.Kind, d.None, hint))
		}
		texts = append(texts, d.Text())
	}
	if len(texts) == 0 {
		return fmt.Errorf("no amendment among the objects read: --diff shows what an amendment (a proposal with the label %s) changes in its policy",
			v1alpha1.AmendsLabel)
	}
	for _, note := range notes {
		fmt.Fprintln(stderr, note)
	}
	_, err := io.WriteString(stdout, strings.Join(texts, "\n"))
	return err
}

// readPolicy reads the policy key from the cluster, when it was not read
// beside its amendment.
func readPolicy(ctx context.Context, r client.Reader, key types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicy, error) {
	get := fmt.Sprintf("kubectl get -n %s wnp/%s -o yaml", key.Namespace, key.Name)
	if r == nil {
		return nil, fmt.Errorf("it amends WorkloadNetworkPolicy %s, which is not among the objects read: give it beside the amendment (%s)", key, get)
	}
	var p v1alpha1.WorkloadNetworkPolicy
	err := r.Get(ctx, key, &p)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("it amends WorkloadNetworkPolicy %s, which is neither among the objects read nor in the cluster", key)
	}
	if err != nil {
		return nil, fmt.Errorf("it amends WorkloadNetworkPolicy %s, which is not among the objects read (give it beside the amendment: %s), "+
			"and reading it from the cluster: %w", key, get, err)
	}
	return &p, nil
}

// cluster is the cluster of the kubeconfig, as kubectl finds it, which it
// reads only when asked: most objects need none. Each list is read once a
// run, so that a List of many objects costs one read of the nodes and of the
// API server's addresses, and all of them render against the same view.
type cluster struct {
	kubeconfig, context string
	once                sync.Once
	client              client.Client
	err                 error
	lists               map[string]client.ObjectList
}

func (c *cluster) connect() (client.Client, error) {
	c.once.Do(func() {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = c.kubeconfig
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
			&clientcmd.ConfigOverrides{CurrentContext: c.context}).ClientConfig()
		if clientcmd.IsEmptyConfig(err) {
			c.err = errors.New("no cluster to read from: give its kubeconfig with --kubeconfig FILE (or set KUBECONFIG)")
			return
		}
		if err != nil {
			c.err = fmt.Errorf("the kubeconfig: %w", err)
			return
		}
		cfg.UserAgent = "network-enforcer-render"
		// The scheme knows the policies, which --diff reads.
		s, err := render.NewScheme()
		if err != nil {
			c.err = err
			return
		}
		c.client, c.err = client.New(cfg, client.Options{Scheme: s})
	})
	return c.client, c.err
}

func (c *cluster) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	cl, err := c.connect()
	if err != nil {
		return err
	}
	return cl.Get(ctx, key, obj, opts...)
}

func (c *cluster) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	key := fmt.Sprintf("%T %v", list, opts)
	if read, ok := c.lists[key]; ok {
		reflect.ValueOf(list).Elem().Set(reflect.ValueOf(read.DeepCopyObject()).Elem())
		return nil
	}
	cl, err := c.connect()
	if err != nil {
		return err
	}
	if err := cl.List(ctx, list, opts...); err != nil {
		return err
	}
	if c.lists == nil {
		c.lists = map[string]client.ObjectList{}
	}
	c.lists[key] = list.DeepCopyObject().(client.ObjectList)
	return nil
}

// String names an object as kubectl does: kind namespace/name.
func (o Object) String() string {
	switch {
	case o.Proposal != nil:
		return "WorkloadNetworkPolicyProposal " + strings.TrimPrefix(o.Proposal.Namespace+"/"+o.Proposal.Name, "/")
	case o.Policy != nil:
		return "WorkloadNetworkPolicy " + strings.TrimPrefix(o.Policy.Namespace+"/"+o.Policy.Name, "/")
	}
	return "no object"
}
