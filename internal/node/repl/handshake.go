package repl

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/shardis/shardis/internal/resp"
)

// psyncRequest is what a PSYNC asks: continue replid from offset+1 when
// continuable, else a full resync ("?" -1); failover adds FAILOVER.
type psyncRequest struct {
	replid      string
	offset      int64
	continuable bool
	failover    bool
}

// psyncReply is the master's answer: +FULLRESYNC <replid> <offset>, or
// +CONTINUE [<replid>] (replid "" when the master sent none).
type psyncReply struct {
	full   bool
	replid string
	offset int64
	// prioOK: the master accepted REPLCONF replica-priority.
	prioOK bool
}

// handshake performs Redis's replica handshake on nc: PING, AUTH when
// masterauth is set, REPLCONF listening-port / ip-address / capa, then
// PSYNC, and returns the master's answer.
func handshake(nc net.Conn, br *bufio.Reader, st Settings, log *slog.Logger, req psyncRequest) (psyncReply, error) {
	call := func(args ...string) (resp.Value, error) {
		_ = nc.SetDeadline(time.Now().Add(st.Timeout))
		if _, err := nc.Write(appendCommand(nil, args...)); err != nil {
			return resp.Value{}, err
		}
		return resp.ReadValue(br)
	}
	v, err := call("PING")
	if err != nil {
		return psyncReply{}, handshakeErr(log, "ping", err)
	}
	if v.IsError() && !strings.HasPrefix(v.Str, "NOAUTH") && !strings.HasPrefix(v.Str, "NOPERM") && !strings.HasPrefix(v.Str, "ERR operation not permitted") {
		log.Warn("Error reply to PING from master: '" + v.Str + "'")
		return psyncReply{}, fmt.Errorf("repl: master replied to PING: %s", v.Str)
	}
	log.Info("Master replied to PING, replication can continue...")
	if st.MasterAuth != "" {
		args := []string{"AUTH", st.MasterAuth}
		if st.MasterUser != "" {
			args = []string{"AUTH", st.MasterUser, st.MasterAuth}
		}
		if v, err = call(args...); err != nil || v.IsError() {
			return psyncReply{}, fmt.Errorf("repl: AUTH failed: %v %s", err, v.Str)
		}
	}
	if _, err = call("REPLCONF", "listening-port", st.ListenPort); err != nil {
		return psyncReply{}, fmt.Errorf("repl: REPLCONF: %w", err)
	}
	if st.AnnounceIP != "" {
		_, _ = call("REPLCONF", "ip-address", st.AnnounceIP)
	}
	_, _ = call("REPLCONF", "capa", "eof", "capa", "psync2")
	// Whether we can be promoted, for the master's min-replicas-ack: a
	// redis-server master answers with an error, ignored (it does not
	// count priorities; a shardnode master then never gets it again).
	prioOK := false
	if st.Priority != "" {
		v, err := call("REPLCONF", "replica-priority", st.Priority)
		prioOK = err == nil && !v.IsError()
	}

	psyncID, psyncOff := req.replid, strconv.FormatInt(req.offset+1, 10)
	if !req.continuable {
		psyncID, psyncOff = "?", "-1"
		log.Info("Partial resynchronization not possible (no cached master)")
	} else {
		log.Info("Trying a partial resynchronization (request " + psyncID + ":" + psyncOff + ").")
	}
	// The master may send newlines to keep the link alive before it
	// answers PSYNC (while a diskless sync waits for more replicas).
	_ = nc.SetDeadline(time.Now().Add(st.Timeout))
	psyncArgs := []string{"PSYNC", psyncID, psyncOff}
	if req.failover {
		psyncArgs = append(psyncArgs, "FAILOVER")
	}
	if _, err := nc.Write(appendCommand(nil, psyncArgs...)); err != nil {
		return psyncReply{}, fmt.Errorf("repl: PSYNC: %w", err)
	}
	for {
		_ = nc.SetReadDeadline(time.Now().Add(st.Timeout))
		b, err := br.Peek(1)
		if err != nil {
			return psyncReply{}, handshakeErr(log, "PSYNC", err)
		}
		if b[0] != '\n' && b[0] != '\r' {
			break
		}
		_, _ = br.ReadByte()
	}
	v, err = resp.ReadValue(br)
	if err != nil {
		return psyncReply{}, handshakeErr(log, "PSYNC", err)
	}
	if v.IsError() {
		if req.failover {
			log.Warn("Failover target rejected psync request: " + v.Str)
		} else {
			log.Warn("Unexpected reply to PSYNC from master: " + v.Str)
		}
		return psyncReply{}, fmt.Errorf("repl: PSYNC refused: %s", v.Str)
	}
	reply, err := parsePsyncReply(v.Str)
	reply.prioOK = prioOK
	return reply, err
}

// parsePsyncReply reads +FULLRESYNC <replid> <offset> or +CONTINUE
// [<replid>].
func parsePsyncReply(s string) (psyncReply, error) {
	f := strings.Fields(s)
	switch {
	case len(f) >= 3 && f[0] == "FULLRESYNC":
		off, _ := strconv.ParseInt(f[2], 10, 64)
		return psyncReply{full: true, replid: f[1], offset: off}, nil
	case len(f) >= 1 && f[0] == "CONTINUE":
		r := psyncReply{}
		if len(f) >= 2 {
			r.replid = f[1]
		}
		return r, nil
	}
	return psyncReply{}, fmt.Errorf("repl: unexpected PSYNC reply %q", s)
}

// handshakeErr logs a failed handshake step as Redis does (a timeout is
// "Timeout connecting to the MASTER...") and returns it wrapped.
func handshakeErr(log *slog.Logger, step string, err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		log.Warn("Timeout connecting to the MASTER...")
	} else {
		log.Warn("Error condition on socket for SYNC: " + err.Error())
	}
	return fmt.Errorf("repl: %s: %w", step, err)
}

func appendCommand(b []byte, args ...string) []byte { return resp.AppendCommandStrings(b, args...) }
