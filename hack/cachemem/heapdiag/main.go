// Command heapdiag is a temporary diagnostic: it starts the enforcer extension in
// process on $KUBECONFIG and writes a heap profile once its cache has synced.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
)

func main() {
	f := enforcerextension.NewFactory()
	cfg := f.CreateDefaultConfig().(*enforcerextension.Config)
	cfg.AuthType = enforcerextension.AuthTypeKubeConfig
	cfg.LeaderElection.LeaseName = "heapdiag"
	cfg.LeaderElection.LeaseNamespace = "default"
	set := extension.Settings{ID: component.NewID(f.Type()), TelemetrySettings: componenttest.NewNopTelemetrySettings(),
		BuildInfo: component.NewDefaultBuildInfo()}
	ext, err := f.Create(context.Background(), set, cfg)
	if err != nil {
		panic(err)
	}
	t0 := time.Now()
	if err := ext.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		panic(err)
	}
	fmt.Println("synced in", time.Since(t0))
	pr := func(what string) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		fmt.Printf("%s: HeapAlloc %.1f MiB, HeapInuse %.1f, HeapIdle %.1f, HeapReleased %.1f, Sys %.1f, NextGC %.1f, NumGC %d\n", what,
			float64(m.HeapAlloc)/(1<<20), float64(m.HeapInuse)/(1<<20), float64(m.HeapIdle)/(1<<20), float64(m.HeapReleased)/(1<<20),
			float64(m.Sys)/(1<<20), float64(m.NextGC)/(1<<20), m.NumGC)
	}
	pr("after sync")
	time.Sleep(10 * time.Second)
	pr("after 10s")
	runtime.GC()
	pr("after GC")
	out, _ := os.Create(os.Args[1])
	pprof.Lookup("heap").WriteTo(out, 0)
	out.Close()
	_ = ext.Shutdown(context.Background())
}
