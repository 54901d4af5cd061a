package config

import (
	"runtime"
	"strconv"
)

// The directive table: one defConfig row per directive, with Redis 7.0's
// default, value check and CONFIG SET mutability (config.c). The ACL
// directives are in table_acl.go, cluster mode's in
// table_cluster.go. What a change
// does on a running server is the server's (Applier): the rows here only
// say what a value may be.
func init() {
	defConfig("port", "6379", checkIntRange(0, 65535), false)
	defConfig("bind", "* -::*", nil, false)
	defConfig("requirepass", "", nil, false)
	defConfig("masterauth", "", nil, false)
	defConfig("masteruser", "", nil, false)
	defConfig("dir", ".", nil, false).protected = true
	defConfig("dbfilename", "dump.rdb", nil, false).protected = true
	defConfig("databases", "16", checkIntRange(1, 1<<20), true)
	defConfig("maxclients", "10000", checkIntRange(1, 1<<30), false)
	defConfig("timeout", "0", checkIntRange(0, 1<<31-1), false)
	defConfig("tcp-keepalive", "300", checkIntRange(0, 1<<31-1), false)
	defConfig("protected-mode", "yes", checkBool, false)
	defConfig("loglevel", "notice", checkEnum("debug", "verbose", "notice", "warning", "nothing"), false)
	defConfig("logfile", "", nil, true)
	defConfig("maxmemory", "0", checkMemory, false)
	defConfig("maxmemory-clients", "0", checkMemoryOrPercent, false)
	defConfig("maxmemory-policy", "noeviction", checkEnum("volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"), false)
	defConfig("maxmemory-samples", "5", checkIntRange(1, 1<<31-1), false)
	defConfig("maxmemory-eviction-tenacity", "10", checkIntRange(0, 100), false)
	defConfig("lfu-log-factor", "10", checkIntRange(0, 1<<31-1), false)
	defConfig("lfu-decay-time", "1", checkIntRange(0, 1<<31-1), false)
	defConfig("proto-max-bulk-len", "536870912", checkMemoryMin(1024*1024), false)
	defConfig("client-query-buffer-limit", "1073741824", checkMemoryMin(1024*1024), false)
	defConfig("client-output-buffer-limit", "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", checkOutputBufferLimit, false)
	defConfig("hz", "10", checkIntRange(1, 500), false)
	defConfig("dynamic-hz", "yes", checkBool, false)
	defConfig("active-expire-effort", "1", checkIntRange(1, 10), false)
	defConfig("notify-keyspace-events", "", checkNotifyFlags, false)
	defConfig("slowlog-log-slower-than", "10000", checkIntRange(-1, 1<<62), false)
	defConfig("slowlog-max-len", "128", checkIntRange(0, 1<<31-1), false)
	defConfig("latency-monitor-threshold", "0", checkIntRange(0, 1<<62), false)
	defConfig("latency-tracking", "yes", checkBool, false)
	defConfig("lazyfree-lazy-eviction", "no", checkBool, false)
	defConfig("lazyfree-lazy-expire", "no", checkBool, false)
	defConfig("lazyfree-lazy-server-del", "no", checkBool, false)
	defConfig("lazyfree-lazy-user-del", "no", checkBool, false)
	defConfig("lazyfree-lazy-user-flush", "no", checkBool, false)
	defConfig("daemonize", "no", checkBool, true)
	defConfig("pidfile", "", nil, true)
	defConfig("unixsocket", "", nil, true)
	defConfig("tcp-backlog", "511", checkIntRange(0, 1<<31-1), true)
	defConfig("save", "3600 1 300 100 60 10000", checkSave, false)
	defConfig("appendonly", "no", checkBool, false)
	defConfig("appendfilename", "appendonly.aof", nil, true)
	defConfig("appenddirname", "appendonlydir", nil, true)
	defConfig("appendfsync", "everysec", checkEnum("always", "everysec", "no"), false)
	defConfig("auto-aof-rewrite-percentage", "100", checkIntRange(0, 1<<31-1), false)
	defConfig("auto-aof-rewrite-min-size", "67108864", checkMemory, false)
	defConfig("aof-load-truncated", "yes", checkBool, false)
	defConfig("aof-use-rdb-preamble", "yes", checkBool, false)
	defConfig("rdb-save-incremental-fsync", "yes", checkBool, false)
	defConfig("aof-rewrite-incremental-fsync", "yes", checkBool, false)
	defConfig("aof-timestamp-enabled", "no", checkBool, false)
	defConfig("rdbcompression", "yes", checkBool, false)
	defConfig("rdbchecksum", "yes", checkBool, false)
	defConfig("stop-writes-on-bgsave-error", "yes", checkBool, false)
	defConfig("replicaof", "", nil, false).alias = "slaveof"
	defConfig("replica-read-only", "yes", checkBool, false).alias = "slave-read-only"
	defConfig("replica-serve-stale-data", "yes", checkBool, false).alias = "slave-serve-stale-data"
	defConfig("replica-priority", "100", checkIntRange(0, 1<<31-1), false).alias = "slave-priority"
	defConfig("replica-announced", "yes", checkBool, false)
	defConfig("replica-announce-ip", "", nil, false).alias = "slave-announce-ip"
	defConfig("replica-announce-port", "0", checkIntRange(0, 65535), false).alias = "slave-announce-port"
	defConfig("replica-lazy-flush", "no", checkBool, false)
	defConfig("repl-diskless-sync", "yes", checkBool, false)
	defConfig("repl-diskless-sync-delay", "5", checkIntRange(0, 1<<31-1), false)
	defConfig("repl-diskless-sync-max-replicas", "0", checkIntRange(0, 1<<31-1), false)
	defConfig("repl-diskless-load", "disabled", checkEnum("disabled", "on-empty-db", "swapdb"), false)
	defConfig("repl-backlog-size", "1048576", checkMemoryMin(1), false)
	defConfig("repl-backlog-ttl", "3600", checkIntRange(0, 1<<31-1), false)
	defConfig("repl-timeout", "60", checkIntRange(1, 1<<31-1), false)
	defConfig("repl-ping-replica-period", "10", checkIntRange(1, 1<<31-1), false).alias = "repl-ping-slave-period"
	defConfig("repl-disable-tcp-nodelay", "no", checkBool, false)
	defConfig("min-replicas-to-write", "0", checkIntRange(0, 1<<31-1), false).alias = "min-slaves-to-write"
	defConfig("min-replicas-max-lag", "10", checkIntRange(0, 1<<31-1), false).alias = "min-slaves-max-lag"
	defConfig("min-replicas-ack", "0", checkIntRange(0, 1<<31-1), false)            // internal/node/replication_ack.go
	defConfig("min-replicas-ack-timeout", "1000", checkIntRange(1, 1<<31-1), false) // ms
	defConfig("hash-max-listpack-entries", "128", checkIntRange(0, 1<<31-1), false).alias = "hash-max-ziplist-entries"
	defConfig("hash-max-listpack-value", "64", checkIntRange(0, 1<<31-1), false).alias = "hash-max-ziplist-value"
	defConfig("list-max-listpack-size", "-2", checkIntRange(-5, 1<<31-1), false).alias = "list-max-ziplist-size"
	defConfig("list-compress-depth", "0", checkIntRange(0, 1<<31-1), false)
	defConfig("set-max-intset-entries", "512", checkIntRange(0, 1<<31-1), false)
	defConfig("zset-max-listpack-entries", "128", checkIntRange(0, 1<<31-1), false).alias = "zset-max-ziplist-entries"
	defConfig("zset-max-listpack-value", "64", checkIntRange(0, 1<<31-1), false).alias = "zset-max-ziplist-value"
	defConfig("hll-sparse-max-bytes", "3000", checkMemory, false)
	defConfig("stream-node-max-bytes", "4096", checkMemory, false)
	defConfig("stream-node-max-entries", "100", checkIntRange(0, 1<<31-1), false)
	defConfig("activerehashing", "yes", checkBool, false)
	defConfig("lua-time-limit", "5000", checkIntRange(0, 1<<62), false).alias = "busy-reply-threshold"
	defConfig("cluster-enabled", "no", checkBool, true)
	defConfig("cluster-config-file", "nodes.conf", nil, true)
	defConfig("cluster-node-timeout", "15000", checkIntRange(0, 1<<62), false)
	defConfig("enable-debug-command", "no", checkEnum("yes", "no", "local"), true)
	defConfig("enable-protected-configs", "no", checkEnum("yes", "no", "local"), true)
	// io-threads is the number of threads running clients' commands
	// (GOMAXPROCS, set by cmd/shardnode at start). Redis's default is 1
	// (one thread runs every command); shardnode's is one per CPU but one,
	// as its keyspace is sharded (docs/ARCHITECTURE.md "Threads").
	defConfig("io-threads", strconv.Itoa(defaultIOThreads(runtime.GOMAXPROCS(0))), checkIntRange(1, 128), true)
	defConfig("supervised", "no", nil, true)
	defConfig("always-show-logo", "no", checkBool, true)
	defConfig("set-proc-title", "yes", checkBool, true)
	defConfig("crash-log-enabled", "yes", checkBool, false)
	defConfig("jemalloc-bg-thread", "yes", checkBool, false)
	defConfig("activedefrag", "no", checkBool, false)
	defConfig("close-on-replica-write", "yes", checkBool, false)
	defConfig("metrics-addr", "", nil, true).hidden = true
	defConfig("gc-percent", "50", checkIntRange(-1, 1000), false)
	defConfig("gc-min-headroom", "16777216", checkMemory, false) // internal/node/gc.go
	// Accepted for redis.conf compatibility (Redis's test suite sets them);
	// they have no effect here.
	defConfig("no-appendfsync-on-rewrite", "no", checkBool, false)
	defConfig("enable-module-command", "no", checkEnum("yes", "no", "local"), true)
	defConfig("propagation-error-behavior", "ignore", checkEnum("ignore", "panic", "panic-on-replicas"), false)
	defConfig("shutdown-timeout", "10", checkIntRange(0, 1<<31-1), false)
	defConfig("loading-process-events-interval-bytes", "2097152", checkIntRange(1024, 1<<31-1), false).hidden = true
	defConfig("key-load-delay", "0", checkIntRange(-1<<31, 1<<31-1), false).hidden = true
	defConfig("rdb-key-save-delay", "0", checkIntRange(-1<<31, 1<<31-1), false).hidden = true
	defConfig("watchdog-period", "0", checkIntRange(0, 1<<31-1), false).hidden = true
}

// defaultIOThreads is io-threads' default on a machine with cpus usable
// CPUs: every CPU but one, at least 1 and at most 128. The core left over
// runs the kernel's network stack and the clients that share the machine;
// on 2 cores, where redis-benchmark shares the machine, one thread serves
// pipelined SET and GET better than two (docs/BENCHMARKS.md).
func defaultIOThreads(cpus int) int {
	return max(1, min(cpus-1, 128))
}
