package main

import (
	"context"
	"log/slog"

	"github.com/shardis/shardis/internal/metrics"
	"github.com/shardis/shardis/internal/node"
	"github.com/shardis/shardis/internal/node/config"
)

// startMetrics serves Prometheus metrics at http://<metrics-addr>/metrics
// when the metrics-addr directive is set.
func startMetrics(ctx context.Context, srv *node.Server, log *slog.Logger) error {
	addr := srv.Config().Get(config.DirMetricsAddr)
	if addr == "" {
		return nil
	}
	_, err := metrics.ServeNode(ctx, addr, srv, log)
	return err
}
