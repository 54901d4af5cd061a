package node

import (
	"errors"
	"strings"
)

// Cluster mode's directives, beside the three in config.go
// (cluster-enabled, cluster-config-file, cluster-node-timeout), with Redis
// 7.0's defaults, ranges and mutability (config.c). Changes made by CONFIG
// SET on a running cluster node reach the cluster machine through
// applyClusterConfig.
func init() {
	mod := func(name, def string, check func(string) (string, error)) *configDef {
		d := defConfig(name, def, check, false)
		d.apply = applyClusterConfig
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
	configDefs["cluster-node-timeout"].apply = applyClusterConfig
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
