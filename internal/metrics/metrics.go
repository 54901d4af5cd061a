// Package metrics exposes shardnode and Sentinel state as Prometheus
// metrics on an HTTP /metrics endpoint.
//
// The collectors read a snapshot (node.Server.Stats, runner.Runner.Stats)
// at scrape time, so nothing is counted twice and the hot paths carry no
// Prometheus code. The series are listed in docs/ARCHITECTURE.md
// ("Metrics").
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shardis/shardis/internal/node"
	"github.com/shardis/shardis/internal/sentinel"
	"github.com/shardis/shardis/internal/sentinel/runner"
)

// Handler returns an http.Handler serving the given collectors plus the Go
// runtime and process collectors in the Prometheus text format.
func Handler(cs ...prometheus.Collector) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	cs = append(cs, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: nil}), nil
}

// Serve listens on addr and serves h at /metrics until ctx ends. It
// returns once listening (the error is a listen error) with the bound
// address.
func Serve(ctx context.Context, addr string, h http.Handler, log *slog.Logger) (net.Addr, error) {
	if log == nil {
		log = slog.Default()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "shardis metrics: see /metrics")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics: serve", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("metrics: serving", "addr", "http://"+ln.Addr().String()+"/metrics")
	return ln.Addr(), nil
}

// ServeNode serves a node's metrics on addr until ctx ends.
func ServeNode(ctx context.Context, addr string, srv *node.Server, log *slog.Logger) (net.Addr, error) {
	h, err := Handler(NewNodeCollector(srv.Stats))
	if err != nil {
		return nil, err
	}
	return Serve(ctx, addr, h, log)
}

// ServeSentinel serves a Sentinel's metrics on addr until ctx ends.
func ServeSentinel(ctx context.Context, addr string, r *runner.Runner, log *slog.Logger) (net.Addr, error) {
	h, err := Handler(NewSentinelCollector(r.Stats))
	if err != nil {
		return nil, err
	}
	return Serve(ctx, addr, h, log)
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// nodeCollector turns node.NodeStats into metrics at scrape time.
type nodeCollector struct {
	stats func() node.NodeStats

	calls, failed, rejected, duration, processed    *prometheus.Desc
	keys, expires, memory, clients, role, linkUp    *prometheus.Desc
	offset, replicas, lagBytes, lagSeconds, ackOffs *prometheus.Desc
}

// NewNodeCollector returns a collector of the node series (prefix
// shardis_node_) read from stats at each scrape.
func NewNodeCollector(stats func() node.NodeStats) prometheus.Collector {
	const p = "shardis_node_"
	return &nodeCollector{
		stats:      stats,
		calls:      desc(p+"commands_total", "Calls per command (INFO commandstats calls).", "command"),
		failed:     desc(p+"command_failed_calls_total", "Calls per command that replied an error.", "command"),
		rejected:   desc(p+"command_rejected_calls_total", "Calls per command refused before running.", "command"),
		duration:   desc(p+"command_duration_seconds", "Time spent executing each command (summary: _sum and _count).", "command"),
		processed:  desc(p+"commands_processed_total", "Commands processed (INFO total_commands_processed)."),
		keys:       desc(p+"keys", "Keys per database.", "db"),
		expires:    desc(p+"expiring_keys", "Keys with an expiry per database.", "db"),
		memory:     desc(p+"used_memory_bytes", "Memory used by the dataset (INFO used_memory)."),
		clients:    desc(p+"connected_clients", "Client connections, replicas excluded."),
		role:       desc(p+"role", "1 for the node's current role (master or slave), 0 for the other.", "role"),
		linkUp:     desc(p+"master_link_up", "On a replica: 1 if the link to its master is up.", "master"),
		offset:     desc(p+"repl_offset_bytes", "Replication offset (master_repl_offset)."),
		replicas:   desc(p+"connected_replicas", "Replicas connected to this node."),
		lagBytes:   desc(p+"replica_lag_bytes", "Per replica: this node's offset minus the replica's acknowledged offset.", "replica"),
		lagSeconds: desc(p+"replica_lag_seconds", "Per replica: time since its last acknowledgement.", "replica"),
		ackOffs:    desc(p+"replica_ack_offset_bytes", "Per replica: the last acknowledged replication offset.", "replica"),
	}
}

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.calls, c.failed, c.rejected, c.duration, c.processed, c.keys, c.expires,
		c.memory, c.clients, c.role, c.linkUp, c.offset, c.replicas, c.lagBytes, c.lagSeconds, c.ackOffs} {
		ch <- d
	}
}

func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	counter := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...)
	}
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	for _, cs := range st.Commands {
		counter(c.calls, float64(cs.Calls), cs.Name)
		counter(c.failed, float64(cs.Failed), cs.Name)
		counter(c.rejected, float64(cs.Rejected), cs.Name)
		ch <- prometheus.MustNewConstSummary(c.duration, uint64(cs.Calls), float64(cs.Usec)/1e6, nil, cs.Name)
	}
	counter(c.processed, float64(st.CommandsProcessed))
	for _, db := range st.Keys {
		gauge(c.keys, float64(db.Keys), strconv.Itoa(db.DB))
		gauge(c.expires, float64(db.Expires), strconv.Itoa(db.DB))
	}
	gauge(c.memory, float64(st.UsedMemory))
	gauge(c.clients, float64(st.ConnectedClients))
	for _, r := range []string{"master", "slave"} {
		v := 0.0
		if st.Role == r {
			v = 1
		}
		gauge(c.role, v, r)
	}
	if st.MasterAddr != "" {
		v := 0.0
		if st.MasterLinkUp {
			v = 1
		}
		gauge(c.linkUp, v, st.MasterAddr)
	}
	gauge(c.offset, float64(st.ReplOffset))
	gauge(c.replicas, float64(len(st.Replicas)))
	for _, r := range st.Replicas {
		gauge(c.lagBytes, float64(r.LagBytes), r.Addr)
		gauge(c.lagSeconds, r.LagSeconds, r.Addr)
		gauge(c.ackOffs, float64(r.AckOffset), r.Addr)
	}
}

// sentinelCollector turns runner.Stats into metrics at scrape time.
type sentinelCollector struct {
	stats func() runner.Stats

	epoch, tilt, info, sdown, odown, replicas, sentinels *prometheus.Desc
	quorum, configEpoch, inProgress, failovers, led      *prometheus.Desc
}

// NewSentinelCollector returns a collector of the Sentinel series (prefix
// shardis_sentinel_) read from stats at each scrape.
func NewSentinelCollector(stats func() runner.Stats) prometheus.Collector {
	const p = "shardis_sentinel_"
	return &sentinelCollector{
		stats:       stats,
		epoch:       desc(p+"current_epoch", "The Sentinel's current epoch."),
		tilt:        desc(p+"tilt", "1 while the Sentinel is in TILT mode."),
		info:        desc(p+"master_info", "Always 1; labels: the master's current address.", "master", "addr"),
		sdown:       desc(p+"master_sdown", "1 if this Sentinel sees the master subjectively down.", "master"),
		odown:       desc(p+"master_odown", "1 if the master is objectively down (quorum agrees).", "master"),
		replicas:    desc(p+"known_replicas", "Replicas this Sentinel knows for the master.", "master"),
		sentinels:   desc(p+"known_sentinels", "Sentinels monitoring the master, this one included.", "master"),
		quorum:      desc(p+"master_quorum", "Configured quorum.", "master"),
		configEpoch: desc(p+"master_config_epoch", "The master's configuration epoch.", "master"),
		inProgress:  desc(p+"failover_in_progress", "1 while this Sentinel leads a failover of the master.", "master"),
		failovers:   desc(p+"failovers_total", "Master switches (+switch-master) since the Sentinel started.", "master"),
		led:         desc(p+"failovers_led_total", "Failovers this Sentinel led to the end (+failover-end).", "master"),
	}
}

func (c *sentinelCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.epoch, c.tilt, c.info, c.sdown, c.odown, c.replicas, c.sentinels,
		c.quorum, c.configEpoch, c.inProgress, c.failovers, c.led} {
		ch <- d
	}
}

func (c *sentinelCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	gauge(c.epoch, float64(st.CurrentEpoch))
	gauge(c.tilt, b(st.Tilt))
	for _, m := range st.Masters {
		gauge(c.info, 1, m.Name, m.Addr)
		gauge(c.sdown, b(m.Status != "ok"), m.Name)
		gauge(c.odown, b(m.Status == "odown"), m.Name)
		gauge(c.replicas, float64(m.Replicas), m.Name)
		gauge(c.sentinels, float64(m.Sentinels), m.Name)
		gauge(c.quorum, float64(m.Quorum), m.Name)
		gauge(c.configEpoch, float64(m.ConfigEpoch), m.Name)
		gauge(c.inProgress, b(m.FailoverInProgress), m.Name)
		ch <- prometheus.MustNewConstMetric(c.failovers, prometheus.CounterValue, float64(m.Switches), m.Name)
		ch <- prometheus.MustNewConstMetric(c.led, prometheus.CounterValue, float64(m.FailoversLed), m.Name)
	}
}

// SentinelHook is a runner.FileOptions.OnStart that serves the Sentinel's
// metrics when its configuration has a "metrics-addr host:port" directive
// (or the --metrics-addr flag).
func SentinelHook(ctx context.Context, r *runner.Runner, f *sentinel.File) error {
	addr := runner.Directive(f, "metrics-addr")
	if addr == "" {
		return nil
	}
	_, err := ServeSentinel(ctx, addr, r, nil)
	return err
}
