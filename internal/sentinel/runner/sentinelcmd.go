package runner

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shardis/shardis/internal/resp"
	"github.com/shardis/shardis/internal/sentinel"
)

// appendFields renders name/value pairs as a map (RESP3) or flat array.
func appendFields(b []byte, proto int, f []string) []byte {
	b = resp.AppendMapLen(b, proto, len(f)/2)
	for _, s := range f {
		b = resp.AppendBulkString(b, s)
	}
	return b
}

func appendErr(b []byte, err error) []byte {
	if re, ok := err.(sentinel.ReplyError); ok {
		return resp.AppendError(b, string(re))
	}
	return resp.AppendError(b, "ERR "+err.Error())
}

// flushAndReply rewrites the config now and replies OK or Redis's error.
func (r *Runner) flushAndReply(b []byte) []byte {
	out := sentinel.Render(r.raw, r.m.Config(), r.file.Port)
	if err := writeAtomic(r.opt.ConfigPath, out); err != nil {
		r.log.Error("sentinel: rewrite config", "err", err)
		return resp.AppendError(b, "ERR Failed to save config file: "+errors.Unwrap(err).Error())
	}
	r.raw = out
	return resp.AppendOK(b)
}

// cmdSentinel serves SENTINEL <subcommand>.
func (r *Runner) cmdSentinel(c *client, args []string) []byte {
	if len(args) < 2 {
		return resp.AppendError(nil, errArity("sentinel"))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.processLocked()
	now := time.Now()
	proto := c.proto
	sub := strings.ToLower(args[1])
	arity := func(n int) bool { return len(args) == n }
	numErr := resp.AppendError(nil, fmt.Sprintf("ERR wrong number of arguments for 'sentinel|%s' command", sub))
	var b []byte
	switch sub {
	case "masters":
		if !arity(2) {
			return numErr
		}
		names := r.m.MasterNames()
		b = resp.AppendArrayLen(b, len(names))
		for _, n := range names {
			f, _ := r.m.MasterFields(now, n)
			b = appendFields(b, proto, f)
		}
		return b
	case "master":
		if !arity(3) {
			return numErr
		}
		f, err := r.m.MasterFields(now, args[2])
		if err != nil {
			return appendErr(b, err)
		}
		return appendFields(b, proto, f)
	case "replicas", "slaves", "sentinels":
		if !arity(3) {
			return numErr
		}
		get := r.m.ReplicaFields
		if sub == "sentinels" {
			get = r.m.SentinelFields
		}
		list, err := get(now, args[2])
		if err != nil {
			return appendErr(b, err)
		}
		b = resp.AppendArrayLen(b, len(list))
		for _, f := range list {
			b = appendFields(b, proto, f)
		}
		return b
	case "myid":
		if !arity(2) {
			return numErr
		}
		return resp.AppendBulkString(b, r.m.MyID())
	case "get-master-addr-by-name":
		if !arity(3) {
			return numErr
		}
		a, ok := r.m.MasterAddr(args[2])
		if !ok {
			return resp.AppendNullArray(b, proto)
		}
		b = resp.AppendArrayLen(b, 2)
		b = resp.AppendBulkString(b, a.IP)
		return resp.AppendBulkString(b, strconv.Itoa(a.Port))
	case "is-master-down-by-addr":
		if !arity(6) {
			return numErr
		}
		port, err1 := strconv.Atoi(args[3])
		epoch, err2 := strconv.ParseUint(args[4], 10, 64)
		if err1 != nil || err2 != nil {
			return resp.AppendError(b, "ERR value is not an integer or out of range")
		}
		down, leader, lepoch := r.m.IsMasterDownByAddr(now, sentinel.Addr{IP: args[2], Port: port}, epoch, args[5])
		b = resp.AppendArrayLen(b, 3)
		if down {
			b = resp.AppendInt(b, 1)
		} else {
			b = resp.AppendInt(b, 0)
		}
		b = resp.AppendBulkString(b, leader)
		return resp.AppendInt(b, int64(lepoch))
	case "reset":
		if !arity(3) {
			return numErr
		}
		return resp.AppendInt(b, int64(r.m.Reset(now, args[2])))
	case "failover":
		if !arity(3) {
			return numErr
		}
		if err := r.m.Failover(now, args[2]); err != nil {
			return appendErr(b, err)
		}
		r.log.Warn("sentinel: executing user requested FAILOVER", "master", args[2])
		return resp.AppendOK(b)
	case "monitor":
		if !arity(6) {
			return numErr
		}
		quorum, err := strconv.Atoi(args[5])
		if err != nil {
			return resp.AppendError(b, "ERR Invalid quorum")
		}
		port, err := strconv.Atoi(args[4])
		if err != nil {
			return resp.AppendError(b, "ERR Invalid port")
		}
		if quorum <= 0 {
			return appendErr(b, sentinel.ErrQuorumTooSmall)
		}
		if net.ParseIP(args[3]) == nil && !r.m.Config().ResolveHostnames {
			return resp.AppendError(b, "ERR Invalid IP address or hostname specified")
		}
		if err := r.m.Monitor(now, sentinel.MasterConfig{Name: args[2], Addr: sentinel.Addr{IP: args[3], Port: port}, Quorum: quorum}); err != nil {
			return appendErr(b, err)
		}
		return r.flushAndReply(b)
	case "flushconfig":
		if !arity(2) {
			return numErr
		}
		return r.flushAndReply(b)
	case "remove":
		if !arity(3) {
			return numErr
		}
		if err := r.m.Remove(args[2]); err != nil {
			return appendErr(b, err)
		}
		return r.flushAndReply(b)
	case "ckquorum":
		if !arity(3) {
			return numErr
		}
		s, err := r.m.CKQuorum(args[2])
		if err != nil {
			return appendErr(b, err)
		}
		return resp.AppendSimple(b, s)
	case "set":
		if len(args) < 5 {
			return numErr
		}
		for j := 3; j+1 < len(args); j += 2 {
			opt, val := strings.ToLower(args[j]), args[j+1]
			if val != "" && opt == "notification-script" && syscall.Access(val, 1) != nil {
				return resp.AppendError(b, "ERR Notification script seems non existing or non executable")
			}
			if val != "" && opt == "client-reconfig-script" && syscall.Access(val, 1) != nil {
				return resp.AppendError(b, "ERR Client reconfiguration script seems non existing or non executable")
			}
		}
		if err := r.m.Set(args[2], args[3:]); err != nil {
			return appendErr(b, err)
		}
		return r.flushAndReply(b)
	case "config":
		switch {
		case len(args) == 4 && strings.EqualFold(args[2], "get"):
			return appendFields(b, proto, r.m.ConfigGet(args[3]))
		case len(args) == 5 && strings.EqualFold(args[2], "set"):
			if err := r.m.ConfigSet(args[3], args[4]); err != nil {
				return appendErr(b, err)
			}
			return resp.AppendOK(b)
		}
		return resp.AppendError(b, "ERR Only SENTINEL CONFIG GET <option> / SET <option> <value> are supported.")
	case "info-cache":
		names := args[2:]
		if len(names) == 0 {
			names = r.m.MasterNames()
		}
		var out []byte
		n := 0
		for _, name := range names {
			cache, ok := r.m.InfoCache(now, name)
			if !ok {
				continue
			}
			n++
			out = resp.AppendBulkString(out, name)
			out = resp.AppendArrayLen(out, len(cache))
			for _, ic := range cache {
				out = resp.AppendArrayLen(out, 2)
				out = resp.AppendInt(out, ic.Age.Milliseconds())
				if ic.Has {
					out = resp.AppendBulkString(out, ic.Text)
				} else {
					out = resp.AppendNull(out, proto)
				}
			}
		}
		b = resp.AppendArrayLen(b, 2*n)
		return append(b, out...)
	case "simulate-failure":
		var f sentinel.SimFailure
		for _, a := range args[2:] {
			switch strings.ToLower(a) {
			case "crash-after-election":
				f |= sentinel.SimCrashAfterElection
			case "crash-after-promotion":
				f |= sentinel.SimCrashAfterPromotion
			case "help":
				b = resp.AppendArrayLen(b, 2)
				b = resp.AppendBulkString(b, "crash-after-election")
				return resp.AppendBulkString(b, "crash-after-promotion")
			default:
				return resp.AppendError(b, "ERR Unknown failure simulation specified")
			}
		}
		r.m.SimulateFailure(f)
		return resp.AppendOK(b)
	case "debug":
		if len(args) == 2 {
			return appendFields(b, proto, r.m.Debug())
		}
		if err := r.m.SetDebug(args[2:]); err != nil {
			return appendErr(b, err)
		}
		return resp.AppendOK(b)
	case "pending-scripts":
		return resp.AppendArrayLen(b, 0)
	case "help":
		help := []string{"CKQUORUM <master-name>", "CONFIG SET <param> <value>", "CONFIG GET <param>",
			"DEBUG [<param> <value> ...]", "GET-MASTER-ADDR-BY-NAME <master-name>", "FAILOVER <master-name>",
			"FLUSHCONFIG", "INFO-CACHE <master-name>", "IS-MASTER-DOWN-BY-ADDR <ip> <port> <current-epoch> <runid>",
			"MASTER <master-name>", "MASTERS", "MONITOR <name> <ip> <port> <quorum>", "MYID", "PENDING-SCRIPTS",
			"REMOVE <master-name>", "REPLICAS <master-name>", "RESET <pattern>", "SENTINELS <master-name>",
			"SET <master-name> <option> <value> [<option> <value> ...]", "SIMULATE-FAILURE [CRASH-AFTER-ELECTION] [CRASH-AFTER-PROMOTION] [HELP]"}
		b = resp.AppendArrayLen(b, len(help))
		for _, h := range help {
			b = resp.AppendSimple(b, h)
		}
		return b
	}
	return resp.AppendError(b, fmt.Sprintf("ERR unknown subcommand '%s'. Try SENTINEL HELP.", args[1]))
}
