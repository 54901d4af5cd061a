module github.com/shardis/shardis/scripts/traceprobe

go 1.26.0

require golang.org/x/exp v0.0.0-20261113113407-e3970619a1a4
