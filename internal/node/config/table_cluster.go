package config

import (
	"errors"
	"strings"
)

// clusterDirectives are the directives whose changes by CONFIG SET on a
// running cluster node reach the cluster machine (ClusterDirectives).
var clusterDirectives []Directive

// ClusterDirectives returns the directives whose changes by CONFIG SET on
// a running cluster node reach the cluster machine: every mutable cluster-*
// directive of Redis 7.0 but the whole-slot migration ones.
func ClusterDirectives() []Directive { return append([]Directive(nil), clusterDirectives...) }

// Cluster mode's directives, beside the three in table.go
// (cluster-enabled, cluster-config-file, cluster-node-timeout), with Redis
// 7.0's defaults, ranges and mutability (config.c).
func init() {
	mod := func(name, def string, check func(string) (string, error)) *configDef {
		d := defConfig(name, def, check, false)
		clusterDirectives = append(clusterDirectives, d.id)
		return d
	}
	defConfig("cluster-port", "0", checkIntRange(0, 65535), true)
	mod("cluster-announce-ip", "", nil)
	mod("cluster-announce-port", "0", checkIntRange(0, 65535))
	mod("cluster-announce-bus-port", "0", checkIntRange(0, 65535))
	mod("cluster-announce-tls-port", "0", checkIntRange(0, 65535))
	mod("cluster-announce-hostname", "", checkAnnouncedHostname)
	mod("cluster-preferred-endpoint-type", "ip", checkEnum("ip", "hostname", "unknown-endpoint"))
	mod("cluster-require-full-coverage", "yes", checkBool)
	mod("cluster-allow-reads-when-down", "no", checkBool)
	mod("cluster-allow-pubsubshard-when-down", "yes", checkBool)
	mod("cluster-replica-validity-factor", "10", checkIntRange(0, 1<<31-1)).alias = "cluster-slave-validity-factor"
	mod("cluster-migration-barrier", "1", checkIntRange(0, 1<<31-1))
	mod("cluster-allow-replica-migration", "yes", checkBool)
	mod("cluster-replica-no-failover", "no", checkBool).alias = "cluster-slave-no-failover"
	mod("cluster-link-sendbuf-limit", "0", checkMemory)
	clusterDirectives = append(clusterDirectives, configDefs["cluster-node-timeout"].id)

	// Whole-slot migration's directives, with Redis 8.4's names and
	// defaults (CLUSTER MIGRATION's "Related configuration").
	//
	// cluster-slot-migration-write-pause-timeout bounds, in milliseconds,
	// how long the source holds writes to the migrating slots waiting for
	// the target to take them over (docs/ARCHITECTURE.md, "Whole-slot
	// migration": past it the source asks the target to abort).
	defConfig("cluster-slot-migration-write-pause-timeout", "10000", checkIntRange(1, 1<<31-1), false)
	// cluster-slot-migration-handoff-max-lag-bytes: the source pauses
	// writes only once the stream it has not yet sent to the target is at
	// most this long, so the pause lasts about the time to send that much.
	defConfig("cluster-slot-migration-handoff-max-lag-bytes", "1048576", checkMemory, false)
}

// checkAnnouncedHostname is Redis's isValidAnnouncedHostname.
func checkAnnouncedHostname(v string) (string, error) {
	if len(v) >= 256 {
		return "", errors.New("Hostnames must be less than 256 characters")
	}
	if strings.IndexFunc(v, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.')
	}) >= 0 {
		return "", errors.New("Hostnames may only contain alphanumeric characters, hyphens or dots")
	}
	return v, nil
}
