package chart

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubewarden/network-enforcer/internal/charttest"
)

// vals builds chart values from dotted paths: vals("a.b", 1, "a.c", "x").
func vals(kv ...any) map[string]any {
	v := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		set(v, kv[i].(string), kv[i+1])
	}
	return v
}

// set puts val at a dotted path, making the maps on the way.
func set(v map[string]any, path string, val any) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := v[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			v[p] = next
		}
		v = next
	}
	v[parts[len(parts)-1]] = val
}

// merge returns a's paths overlaid with b's.
func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for _, m := range []map[string]any{a, b} {
		for k, val := range m {
			if sub, ok := val.(map[string]any); ok {
				if have, ok := out[k].(map[string]any); ok {
					out[k] = merge(have, sub)
					continue
				}
				out[k] = merge(nil, sub)
				continue
			}
			out[k] = val
		}
	}
	return out
}

// rendered is a rendered release, its objects by kind and name.
type rendered struct {
	objs  []*unstructured.Unstructured
	index map[string]*unstructured.Unstructured
}

func render(t *testing.T, values map[string]any) *rendered {
	t.Helper()
	charttest.Require(t)
	objs, err := charttest.Render(context.Background(), release, namespace, values)
	if err != nil {
		t.Fatal(err)
	}
	r := &rendered{objs: objs, index: map[string]*unstructured.Unstructured{}}
	for _, o := range objs {
		key := o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
		if _, dup := r.index[key]; dup {
			t.Fatalf("%s rendered twice", key)
		}
		r.index[key] = o
	}
	return r
}

// get returns the object of kind, namespace and name, or nil.
func (r *rendered) get(kind, ns, name string) *unstructured.Unstructured {
	return r.index[kind+"/"+ns+"/"+name]
}

func (r *rendered) must(t *testing.T, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	o := r.get(kind, ns, name)
	if o == nil {
		t.Fatalf("no %s %s/%s rendered; have %v", kind, ns, name, r.keys())
	}
	return o
}

func (r *rendered) keys() []string {
	var keys []string
	for k := range r.index {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ofKind returns the objects of a kind.
func (r *rendered) ofKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// config parses a ConfigMap's config.yaml, the key under which the chart puts
// every collector's configuration.
func config(t *testing.T, cm *unstructured.Unstructured) map[string]any {
	t.Helper()
	const key = "config.yaml"
	text, ok, _ := unstructured.NestedString(cm.Object, "data", key)
	if !ok {
		t.Fatalf("ConfigMap %s has no %s", cm.GetName(), key)
	}
	out := map[string]any{}
	if err := yaml.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("ConfigMap %s: %s is not YAML: %v\n%s", cm.GetName(), key, err, text)
	}
	return out
}

// at reads a value at a path of map keys; a missing step gives nil.
func at(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// str reads a string at a path, failing the test when it is not one.
func str(t *testing.T, v any, path ...string) string {
	t.Helper()
	s, ok := at(v, path...).(string)
	if !ok {
		t.Fatalf("%s: not a string: %#v", strings.Join(path, "::"), at(v, path...))
	}
	return s
}

// keysOf returns the sorted keys of the map at path.
func keysOf(v any, path ...string) []string {
	m, _ := at(v, path...).(map[string]any)
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// strings of a list at path.
func list(v any, path ...string) []string {
	l, _ := at(v, path...).([]any)
	out := make([]string, 0, len(l))
	for _, e := range l {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

// fileValues collects every value of a key ending in _file in a configuration.
func fileValues(v any, path string, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := path + "::" + k
			if s, ok := e.(string); ok && strings.HasSuffix(k, "_file") {
				out[p] = s
			}
			fileValues(e, p, out)
		}
	case []any:
		for i, e := range x {
			fileValues(e, fmt.Sprintf("%s[%d]", path, i), out)
		}
	}
}

// podSpec returns the pod template spec of a workload.
func podSpec(t *testing.T, o *unstructured.Unstructured) map[string]any {
	t.Helper()
	spec, ok, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
	if !ok {
		t.Fatalf("%s %s has no pod template", o.GetKind(), o.GetName())
	}
	return spec
}

// volumes of a pod spec, by name.
func volumes(spec map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	l, _ := spec["volumes"].([]any)
	for _, v := range l {
		m := v.(map[string]any)
		out[m["name"].(string)] = m
	}
	return out
}

// mounts of the pod's one container: mount path by volume name.
func mounts(t *testing.T, spec map[string]any) map[string]string {
	t.Helper()
	cs, _ := spec["containers"].([]any)
	if len(cs) != 1 {
		t.Fatalf("%d containers, want 1", len(cs))
	}
	out := map[string]string{}
	l, _ := cs[0].(map[string]any)["volumeMounts"].([]any)
	for _, m := range l {
		mm := m.(map[string]any)
		out[mm["name"].(string)] = mm["mountPath"].(string)
	}
	return out
}

// volumeFor returns the volume whose mount holds path.
func volumeFor(t *testing.T, spec map[string]any, path string) map[string]any {
	t.Helper()
	vols := volumes(spec)
	for name, mountPath := range mounts(t, spec) {
		if strings.HasPrefix(path, strings.TrimSuffix(mountPath, "/")+"/") {
			return vols[name]
		}
	}
	return nil
}
