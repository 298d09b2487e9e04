package ztunnelreceiver

import (
	"context"
	"fmt"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/stanza/adapter"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/stanza/fileconsumer"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/stanza/fileconsumer/attrs"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/receiver"
)

// fileInput tails ztunnel's container log files with contrib's file consumer:
// it finds the files, follows rotation and keeps the read offsets in a storage
// extension, so that a restart neither reads a line twice nor skips one.
type fileInput struct {
	cfg     *FileConfig
	id      component.ID
	manager *fileconsumer.Manager
	client  storage.Client
}

func newFileInput(set receiver.Settings, cfg *FileConfig, r *ztunnelReceiver) (*fileInput, error) {
	fc := cfg.Config
	// The path keys the joining of CRI partial lines, file by file.
	fc.Resolver = attrs.Resolver{IncludeFilePath: true}
	m, err := fc.Build(set.TelemetrySettings, r.consumeFileLines)
	if err != nil {
		return nil, fmt.Errorf("file input: %w", err)
	}
	return &fileInput{cfg: cfg, id: set.ID, manager: m}, nil
}

// Start opens the checkpoint storage and starts tailing.
func (f *fileInput) Start(ctx context.Context, host component.Host) error {
	client, err := adapter.GetStorageClient(ctx, host, f.cfg.Storage, f.id)
	if err != nil {
		return fmt.Errorf("file input: %w", err)
	}
	f.client = client
	return f.manager.Start(client)
}

// Shutdown stops tailing, which saves the offsets, and closes the storage.
func (f *fileInput) Shutdown(ctx context.Context) error {
	if f.client == nil {
		return nil
	}
	err := f.manager.Stop()
	if cerr := f.client.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

// consumeFileLines takes a batch of CRI lines from one file.
func (r *ztunnelReceiver) consumeFileLines(ctx context.Context, tokens [][]byte, attributes map[string]any, _ int64, _ []int64) error {
	path, _ := attributes[attrs.LogFilePath].(string)
	var out joined
	now := time.Now()
	b := getBatch()
	defer b.release()
	for _, tok := range tokens {
		var l line
		switch result, reason := r.decodeText(path, tok, false, &l); result {
		case textLine:
			r.take(b, &l, inputFile, now, &out)
		case textMalformed:
			out.drops = append(out.drops, reason)
		case textPartial: // held until its final part arrives
		}
	}
	r.join(b, &out)
	return r.emit(ctx, &out)
}
