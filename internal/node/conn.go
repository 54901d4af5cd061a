package node

import (
	"errors"
	"github.com/shardis/shardis/internal/node/acl"
	"github.com/shardis/shardis/internal/node/config"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardis/shardis/internal/node/cluster"
	"github.com/shardis/shardis/internal/node/keyspace"
	"github.com/shardis/shardis/internal/node/netio"
	"github.com/shardis/shardis/internal/node/repl"
	"github.com/shardis/shardis/internal/resp"
)

// Client flags.
const (
	clientMulti     = 1 << iota // inside MULTI
	clientDirtyCAS              // a watched key was touched
	clientDirtyExec             // a command failed to queue: EXECABORT
	clientMonitor               // MONITOR
	clientReplica               // a replica's link (REPLCONF / SYNC)
	clientMaster                // the link to our master
	clientCloseAfterReply
	clientNoEvict
	clientBlocked
	clientPubSub // has subscriptions (RESP2 restricted context)
	// clientDenyBlocking is the AOF loader (Redis's CLIENT_DENY_BLOCKING):
	// a blocking command runs as if its timeout had expired.
	clientDenyBlocking
	clientParked // waits inside a command for something else than a key (WAIT): sequence.go
	// clientAsking: ASKING was sent (cluster mode); cleared after the
	// next command outside MULTI.
	clientAsking
	// clientReadOnly: READONLY was sent (cluster mode: reads of the
	// master's slots are served on a replica).
	clientReadOnly
)

// Reply modes set by CLIENT REPLY.
const (
	replyOn = iota
	replyOff
	replySkipNext
	replySkip
)

// Client is one connection. Its fields are owned by its goroutine unless
// noted; output from other goroutines (pub/sub messages, MONITOR) goes
// through push, which keeps order with the client's own replies.
type Client struct {
	srv  *Server
	id   int64
	conn net.Conn
	io   io.ReadWriter // conn's reads and writes (a netio.Conn for TCP)
	rd   *resp.Reader

	// out collects the replies of the current pipeline batch.
	out   []byte
	proto int
	db    int

	// slotRoute and slotRecheck are what the last slot check saw: the
	// routing it read, and whether a slot of its keys was migrating or
	// importing (cluster_redirect.go, settleLocked).
	slotRoute   *cluster.Routing
	slotRecheck bool

	// Fields read by other goroutines (CLIENT LIST, KILL) are atomics or
	// guarded by infoMu.
	infoMu   sync.Mutex
	name     string
	user     string
	lastCmd  string
	libName  string
	libVer   string
	flags    atomic.Int64
	authed   atomic.Bool
	created  time.Time
	lastIO   atomic.Int64 // unix ms of the last command
	addr     string
	laddr    string
	closed   atomic.Bool
	done     chan struct{} // closed when the client is closed
	doneOnce sync.Once

	replyMode int

	// now is the time of the command being run (ms), cached as Redis does
	// so a command and a MULTI/EXEC see one clock.
	now int64
	// callDepth counts the calls in progress on this client: the commands
	// of an EXEC or a script run at depth > 0 and keep the outer
	// command's now, so keys do not expire in the middle of either (Redis
	// 7.0's fixed_time_expire and script time snapshot).
	callDepth int

	// multi holds queued commands inside MULTI.
	multi   [][][]byte
	watched []watchKey

	// held are the shard locks the running command holds; lockBuf is
	// lockFor's reusable buffer; lastCmdRef is the command last stored in
	// lastCmd (dispatch.go).
	held       []*sync.Mutex
	gated      bool // lockEverything passed the scripting gate
	gatedRead  bool // holds the scripting gate shared (several shard locks)
	inScript   bool // running a script's commands (MONITOR shows "lua")
	lockBuf    []keyspace.ShardRef
	lastCmdRef *command
	propOne    [1][][]byte // call's propagation of the command itself
	// prepared is what the running command's prelock step returned
	// (command.prelock), nil when it had none or runs inside EXEC or a
	// script.
	prepared any
	// restoreW is the restoreWork parseRestore fills (one per client: a
	// RESTORE consumes it before the next one is parsed).
	restoreW restoreWork
	// migW is MIGRATE's per-call slices, reused (migrateScratch).
	migW migrateScratch
	// argsKept: the running request's handler kept an argument the
	// reader let it keep (keepArg); reset by pump before each request.
	argsKept   bool
	stat       statAcc  // commandstats accumulator (perf_hot.go)
	clock      cmdClock // command clock chained through a batch (perf_hot.go)
	errReplies int64    // error replies sent (a command failed if it grew)
	nestedErrs int64    // of which by commands run inside EXEC (dispatch.go)

	// batch and batchArgs hold requests parsed ahead of execution;
	// prefetchSink receives prefetchBatch's loads (perf_prefetch.go).
	batch        []batchReq
	batchArgs    [][]byte
	prefetchSink uint32
	// cmdCache is the command looked up last (lookupCmd).
	cmdCache *command

	// req is the request passing the dispatch checks (dispatch.go).
	req request

	// aclUser is the client's ACL user (nil: an internal client, which
	// may run anything), as of users generation aclGen; aclFree caches
	// aclUser.Unrestricted(); aclDeleted marks a client whose user was
	// deleted (it is being disconnected). aclKeyBuf and aclChanBuf are
	// the check's reusable buffers (aclstate.go).
	aclUser    *acl.User
	aclGen     uint64
	aclFree    bool
	aclDeleted bool
	aclKeyBuf  []acl.KeyRef
	aclChanBuf []acl.ChannelRef

	// cmd is the command running; propArgs overrides what is propagated.
	cmd      *command
	propArgs [][][]byte
	dirty    int
	inExec   bool
	execProp [][][]byte
	// execMask, when not nil, holds the targets of each execProp entry
	// (script.ReplAOF, ReplReplica): a script that called redis.set_repl
	// with AOF or replicas only.
	execMask []uint8
	// execDB is the database execProp's commands apply to so far: a write
	// in another database (after a SELECT inside EXEC or a script) is
	// preceded by a SELECT in execProp.
	execDB int
	// readyKeys are keys that got elements during the command, for
	// serving blocked clients once its locks are released.
	readyKeys []watchKey

	// pending is output pushed by other goroutines, flushed by flushLoop.
	pmu          sync.Mutex
	pending      []byte
	flushing     bool
	pendingLimit pendingLimit
	// spare is flushPending's other buffer between runs (a replica's
	// stream would otherwise regrow one from nothing at every run).
	spare []byte
	// replHello is what a replica's connection announced (REPLCONF).
	replHello repl.Hello
	// ack holds the min-replicas-ack bookkeeping of the client's writes
	// (replication_ack.go).
	ack clientAck

	newMaxBulk int64 // pending reader limits from CONFIG SET
	newQbuf    int
	newLimits  atomic.Bool // newMaxBulk/newQbuf are set
	// info mirrors fields read by CLIENT LIST (commands_client.go).
	info clientInfo
	// wmu serialises writes to conn.
	wmu sync.Mutex
	// raw is io when it is a netio.Conn (TCP), else nil.
	raw *netio.Conn
	// needFill: the read buffer holds no complete request, read more
	// (pump); blockArgs and blockCmd are a blocking command pump leaves
	// to serveLoop to run outside the read loop.
	needFill  bool
	deadline  bool // a read deadline (timeout) is set on conn
	blockArgs [][]byte
	blockCmd  *command
	// ldb is the Lua debugger SCRIPT DEBUG YES|SYNC set up for the next
	// EVAL (ldb.go).
	ldb *ldbSession
}

func newClient(s *Server, nc net.Conn) *Client {
	c := &Client{
		srv:     s,
		id:      s.nextID.Add(1),
		conn:    nc,
		proto:   resp.RESP2,
		created: s.now(),
		addr:    nc.RemoteAddr().String(),
		laddr:   nc.LocalAddr().String(),
		done:    make(chan struct{}),
		user:    "default",
	}
	c.io = netio.New(nc, &s.seq)
	c.raw, _ = c.io.(*netio.Conn)
	c.rd = resp.NewReader(c.io, resp.ReaderOptions{
		MaxBulkLen:       s.cfg.Int(config.DirProtoMaxBulkLen),
		QueryBufferLimit: int(s.cfg.Int(config.DirClientQueryBufferLimit)),
	})
	s.acl.Mu.Lock()
	def, gen := s.acl.Reg.Default(), s.acl.Gen.Load()
	s.acl.Mu.Unlock()
	c.setClientUser(def, gen)
	// authenticated from the start when the default user needs no
	// password and is on, as Redis's createClient.
	c.authed.Store(def.NoPass() && def.Enabled())
	c.rd.SetUnauthenticated(!c.authed.Load())
	c.lastIO.Store(s.nowMs())
	return c
}

func (c *Client) hasFlag(f int64) bool { return c.flags.Load()&f != 0 }

func (c *Client) setFlag(f int64, on bool) {
	for {
		old := c.flags.Load()
		nw := old &^ f
		if on {
			nw = old | f
		}
		if c.flags.CompareAndSwap(old, nw) {
			return
		}
	}
}

// serve is the connection's read-execute-write loop. Every complete
// request already read is executed before the replies of the batch are
// written with one syscall.
func (c *Client) serve() {
	defer c.close()
	defer c.srv.unregister(c)
	c.stat.batched = true
	defer c.flushStats()
	if c.raw != nil && c.srv.readLoop.Load() {
		c.serveLoop()
		return
	}
	c.pump()
}

// What pump asks of its caller.
const (
	pumpStop     = iota // the connection ends
	pumpWait            // the socket is drained: wait for input, then read
	pumpBlocking        // run the blocking command in c.blockArgs
)

// serveLoop serves a TCP client from inside one RawConn.Read call, as an
// event loop serves a readable socket: a read that returned less than it
// asked for drained the socket, so after the replies go out the goroutine
// waits in the netpoller for the next request instead of reading first.
// Outside such a call every read starts with a system call, because
// RawConn.Read forgets readiness signalled before it was called; with a
// request-reply client that first read finds nothing (EAGAIN) for most
// requests, one wasted system call per request (a third of the reads'
// cost on a VM, where each system call is expensive).
//
// A blocking command (BLPOP, ...) runs outside the call: while it waits,
// a watcher peeks at the socket for a hang-up (watchHangup), which needs
// the read lock the loop holds. Client.close closes a looping client's
// connection from another goroutine, since Close waits for the loop to
// return.
func (c *Client) serveLoop() {
	r := c.raw
	woken := false
	for {
		res := pumpStop
		err := r.ReadLoop(func() bool {
			res = c.pump()
			return res == pumpWait
		})
		if err != nil && !woken && r.HungUp() && errors.Is(err, os.ErrDeadlineExceeded) {
			// The hang-up watch woke the wait: read what is left and
			// the EOF (netio, hangup_linux.go).
			woken = true
			r.ClearWake()
			c.needFill, c.deadline = true, false
			continue
		}
		if err != nil || res == pumpStop {
			return
		}
		args, cmd := c.blockArgs, c.blockCmd
		c.blockArgs, c.blockCmd = nil, nil
		c.executeCmd(args, cmd)
		if !c.afterCommand() {
			return
		}
	}
}

// pump runs the requests in the read buffer and reads more until the
// connection ends or, in the read loop, until it must wait for input or
// leave the loop for a blocking command (see the pump constants).
func (c *Client) pump() int {
	loop := c.raw != nil && c.raw.InLoop()
	for {
		if c.needFill {
			had := c.rd.Buffered() // an incomplete request's bytes, counted at their read
			if err := c.rd.Fill(); err != nil {
				if err == netio.ErrWouldBlock {
					return pumpWait
				}
				if errors.Is(err, resp.ErrQueryBufferLimit) {
					c.srv.log.Warn("closing client that reached max query buffer length", "addr", c.addr)
				}
				return pumpStop
			}
			c.needFill = false
			c.srv.stats.netInput.Add(int64(c.rd.Buffered() - had))
			c.markRead() // lastIO, as Redis's lastinteraction: at each read
		}
		args, err := c.rd.Next()
		if err == resp.ErrIncomplete {
			c.inputDone() // sequence.go: all read has run
			if !c.flush() {
				return pumpStop
			}
			if c.hasFlag(clientCloseAfterReply) {
				return pumpStop
			}
			// The socket's deadline is the real clock's: with another
			// clock (WithClock) only clientsCron enforces the timeout.
			if t := c.srv.hot().timeout; t > 0 && c.srv.perf.virt == nil && !c.hasFlag(clientPubSub|clientReplica|clientMaster|clientBlocked) {
				_ = c.conn.SetReadDeadline(time.Now().Add(time.Duration(t) * time.Second))
				c.deadline = true
			} else if c.deadline {
				_ = c.conn.SetReadDeadline(time.Time{})
				c.deadline = false
			}
			c.needFill = true
			if loop {
				// A short read drained the socket, so the netpoller wakes
				// the loop with more input, except for a hang-up that came
				// with the data read (the poller is edge-triggered): with a
				// request left incomplete, read again rather than wait for
				// a wake-up that may never come.
				// A hang-up seen by the watch (netio.Conn.HungUp, checked
				// after the deadline above is set) means read to the EOF.
				if c.raw.Drained() && c.rd.Buffered() == 0 && !c.raw.HungUp() {
					return pumpWait
				}
				continue
			}
			// Let the other ready clients run before reading again: a
			// client that was just answered rarely has its next request
			// here yet, and a read that finds nothing costs a system call
			// plus a park and a netpoll wake-up; after the others' turn
			// the read usually finds data (runtime.Gosched costs no
			// system call, and this client's replies are written already).
			runtime.Gosched()
			continue
		}
		if err != nil {
			var pe *resp.ProtocolError
			if errors.As(err, &pe) {
				c.out = resp.AppendError(c.out, pe.Error())
				c.flush()
			}
			return pumpStop
		}
		cmd := c.lookupCmd(args[0])
		if loop && cmd != nil && (cmd.blocks(args) || c.ldb != nil && cmd.flags&flagLockScript != 0) {
			// Also an EVAL under the Lua debugger, which reads the
			// client's next requests itself (ldb.go).
			c.blockArgs, c.blockCmd = args, cmd
			return pumpBlocking
		}
		keep := c.keptArgs(len(args))
		if batchable(cmd) && (c.rd.Buffered() > 0 || multiKey(cmd, len(args))) && c.authed.Load() {
			if !c.runBatch(args, cmd, keep) {
				return pumpStop
			}
			continue
		}
		c.argsKept = false
		c.executeKept(args, cmd, keep)
		if keep != 0 && !c.argsKept {
			// Nothing of the request is kept: its big bulk's buffer may
			// serve the next one.
			c.rd.Recycle()
		}
		if !c.afterCommand() {
			return pumpStop
		}
	}
}

// afterCommand applies what a command changed in the connection; it
// returns false when serve must stop.
func (c *Client) afterCommand() bool {
	c.applyReaderLimits()
	if c.closed.Load() {
		return false
	}
	if c.hasFlag(clientCloseAfterReply) {
		c.flush()
		return false
	}
	return true
}

// runBatch parses the requests already buffered behind args while they
// are batchable, prefetches their keys, and runs them in order
// (perf_prefetch.go). It returns false when serve must stop.
func (c *Client) runBatch(args [][]byte, cmd *command, keep argMask) bool {
	c.batch = c.batch[:0]
	c.batchArgs = append(c.batchArgs[:0], args...)
	c.batch = append(c.batch, batchReq{args: c.batchArgs[:len(args):len(args)], cmd: cmd, keep: keep})
	kept := keep != 0
	var perr error
	for len(c.batch) < maxBatch && batchable(cmd) {
		next, err := c.rd.Next()
		if err != nil {
			if err != resp.ErrIncomplete {
				perr = err
			}
			break
		}
		cmd = c.lookupCmd(next[0])
		start := len(c.batchArgs)
		c.batchArgs = append(c.batchArgs, next...)
		k := c.keptArgs(len(next))
		kept = kept || k != 0
		c.batch = append(c.batch, batchReq{args: c.batchArgs[start:len(c.batchArgs):len(c.batchArgs)], cmd: cmd, keep: k})
	}
	if kept {
		// The batch's copies of the arguments must not keep a big
		// argument's buffer alive once the commands have run.
		defer func() {
			clear(c.batchArgs[:cap(c.batchArgs)])
			clear(c.batch[:cap(c.batch)])
		}()
	}
	c.prefetchBatch(c.batch)
	for i := range c.batch {
		c.executeKept(c.batch[i].args, c.batch[i].cmd, c.batch[i].keep)
		if !c.afterCommand() {
			return false
		}
	}
	if perr != nil {
		var pe *resp.ProtocolError
		if errors.As(perr, &pe) {
			c.out = resp.AppendError(c.out, pe.Error())
			c.flush()
		}
		return false
	}
	if cap(c.batchArgs) > 4096 {
		c.batchArgs = nil
	}
	return true
}

// flush writes the batch's replies. It returns false if the connection is
// gone.
func (c *Client) flush() bool {
	c.flushStats()
	if len(c.ack.segs) > 0 {
		c.awaitAcks() // replication_ack.go: min-replicas-ack
	}
	if c.srv.repl != nil && c.srv.repl.StreamDirty() {
		c.srv.repl.WriteStreamsNow()
	}
	if c.hasFlag(clientPubSub|clientMonitor|clientReplica) || c.pendingLen() > 0 {
		// Keep order with pushed messages.
		c.pmu.Lock()
		c.pending = append(c.pending, c.out...)
		c.pmu.Unlock()
		c.out = c.out[:0]
		c.flushPending()
		return !c.closed.Load()
	}
	if len(c.out) == 0 {
		return true
	}
	c.wmu.Lock()
	n, err := c.io.Write(c.out)
	c.wmu.Unlock()
	c.srv.stats.netOutput.Add(int64(n))
	if cap(c.out) > 64*1024 {
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
	return err == nil
}

func (c *Client) pendingLen() int {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	return len(c.pending)
}

// push appends output produced by another goroutine (a published message,
// a MONITOR line, an unblocking reply) and makes sure it gets written.
// Output buffer limits apply: a client that does not read is disconnected.
func (c *Client) push(fn func(b []byte) []byte) {
	if c.closed.Load() {
		return
	}
	c.pmu.Lock()
	c.pending = fn(c.pending)
	c.pushed()
}

// pushBytes is push of bytes already encoded (a replica's stream): no
// closure to allocate per write.
func (c *Client) pushBytes(b []byte) {
	if c.closed.Load() {
		return
	}
	c.pmu.Lock()
	c.pending = append(c.pending, b...)
	c.pushed()
}

// pushed ends push with c.pmu held (it unlocks it): it applies the output
// buffer limits and starts the writer if none runs.
func (c *Client) pushed() {
	over := c.pendingLimit.exceeded(c, len(c.pending))
	start := !c.flushing
	if start {
		c.flushing = true
	}
	c.pmu.Unlock()
	if over {
		c.srv.log.Warn("client scheduled to be closed ASAP for overcoming of output buffer limits", "addr", c.addr)
		go c.close() // push may run under the pub/sub hub's lock
		return
	}
	if start {
		go c.flushPending()
	}
}

// flushPending writes pushed output until none is left.
func (c *Client) flushPending() {
	replica := c.hasFlag(clientReplica)
	for {
		if replica {
			// A replica's stream: let the clients already runnable
			// propagate first, so their writes leave in one system call
			// (Redis writes to replicas once per event-loop pass); they
			// may also write it themselves before replying
			// (writeStreamNow).
			runtime.Gosched()
		}
		c.wmu.Lock()
		c.pmu.Lock()
		if len(c.pending) == 0 {
			c.flushing = false
			c.pmu.Unlock()
			c.wmu.Unlock()
			return
		}
		buf := c.spare
		c.spare = nil
		buf, c.pending = c.pending, buf[:0]
		c.flushing = true
		c.pmu.Unlock()
		_ = c.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
		var n int
		var err error
		if replica && c.raw != nil {
			// What the socket takes now, then the rest, waiting.
			n, err = c.raw.TryWrite(buf)
			if err == nil && n < len(buf) {
				var m int
				m, err = c.io.Write(buf[n:])
				n += m
			}
		} else {
			n, err = c.io.Write(buf) // raw: no syscall state (netio)
		}
		_ = c.conn.SetWriteDeadline(time.Time{})
		c.srv.stats.netOutput.Add(int64(n))
		c.pmu.Lock()
		if err != nil {
			c.pending = nil
			c.flushing = false
		} else if c.spare == nil && cap(buf) <= 1<<20 {
			c.spare = buf[:0]
		}
		c.pmu.Unlock()
		c.wmu.Unlock()
		if err != nil {
			c.close()
			return
		}
	}
}

// writeStreamNow writes a replica's pending stream from the calling
// goroutine (a client about to send its replies), as far as the socket
// takes it without waiting; flushPending, started by the push, writes
// whatever is left. It does nothing while another goroutine writes.
func (c *Client) writeStreamNow() {
	if c.raw == nil || c.closed.Load() || !c.wmu.TryLock() {
		return
	}
	defer c.wmu.Unlock()
	for {
		c.pmu.Lock()
		if len(c.pending) == 0 {
			c.pmu.Unlock()
			return
		}
		buf := c.spare
		c.spare = nil
		buf, c.pending = c.pending, buf[:0]
		c.pmu.Unlock()
		n, err := c.raw.TryWrite(buf)
		c.srv.stats.netOutput.Add(int64(n))
		if err != nil {
			go c.close()
			return
		}
		c.pmu.Lock()
		if n < len(buf) {
			// Socket full: the rest goes back in front of what was
			// pushed meanwhile, for flushPending.
			k := copy(buf, buf[n:])
			buf = append(buf[:k], c.pending...)
			buf, c.pending = c.pending, buf
			if c.spare == nil && cap(buf) <= 1<<20 {
				c.spare = buf[:0]
			}
			if !c.flushing {
				c.flushing = true
				go c.flushPending()
			}
			c.pmu.Unlock()
			return
		}
		if c.spare == nil && cap(buf) <= 1<<20 {
			c.spare = buf[:0]
		}
		c.pmu.Unlock()
	}
}

// close tears the connection down; safe from any goroutine.
func (c *Client) close() {
	c.doneOnce.Do(func() {
		c.closed.Store(true)
		close(c.done)
		if c.raw != nil {
			c.raw.Release() // out of the hang-up watch before the socket closes
		}
		if c.raw != nil && c.raw.Looping() {
			// Close waits for the read loop to return (serveLoop),
			// which may be this goroutine.
			go c.conn.Close()
		} else {
			_ = c.conn.Close()
		}
		c.srv.pubsub.unsubscribeAll(c)
		c.srv.watches.unwatchAll(c)
		c.srv.monitor.remove(c)
		c.srv.unregister(c)
		if c.hasFlag(clientReplica) {
			c.srv.repl.removeReplica(c)
		}
	})
}

// Done is closed when the client disconnects or is killed.
func (c *Client) Done() <-chan struct{} { return c.done }

// ---- reply helpers -------------------------------------------------------

func (c *Client) replying() bool { return c.replyMode == replyOn }

func (c *Client) addOK() {
	if c.replying() {
		c.out = resp.AppendOK(c.out)
	}
}

func (c *Client) addSimple(s string) {
	if c.replying() {
		c.out = resp.AppendSimple(c.out, s)
	}
}

// addError replies with an error; msg includes its code ("ERR ...").
func (c *Client) addError(msg string) {
	c.srv.stats.countError(msg)
	c.errReplies++
	if c.replying() {
		c.out = resp.AppendError(c.out, msg)
	}
}

func (c *Client) addInt(n int64) {
	if c.replying() {
		c.out = resp.AppendInt(c.out, n)
	}
}

func (c *Client) addBulk(b []byte) {
	if c.replying() {
		c.out = resp.AppendBulk(c.out, b)
	}
}

func (c *Client) addBulkString(s string) {
	if c.replying() {
		c.out = resp.AppendBulkString(c.out, s)
	}
}

func (c *Client) addBulkInt(n int64) {
	if c.replying() {
		c.out = resp.AppendBulkString(c.out, strconv.FormatInt(n, 10))
	}
}

func (c *Client) addNull() {
	if c.replying() {
		c.out = resp.AppendNull(c.out, c.proto)
	}
}

func (c *Client) addNullArray() {
	if c.replying() {
		c.out = resp.AppendNullArray(c.out, c.proto)
	}
}

func (c *Client) addArrayLen(n int) {
	if c.replying() {
		c.out = resp.AppendArrayLen(c.out, n)
	}
}

func (c *Client) addSetLen(n int) {
	if c.replying() {
		c.out = resp.AppendSetLen(c.out, c.proto, n)
	}
}

func (c *Client) addMapLen(n int) {
	if c.replying() {
		c.out = resp.AppendMapLen(c.out, c.proto, n)
	}
}

func (c *Client) addDouble(f float64) {
	if c.replying() {
		c.out = resp.AppendDouble(c.out, c.proto, f)
	}
}

func (c *Client) addBool(v bool) {
	if c.replying() {
		c.out = resp.AppendBool(c.out, c.proto, v)
	}
}

func (c *Client) addVerbatim(text string) {
	if c.replying() {
		c.out = resp.AppendVerbatim(c.out, c.proto, "txt", text)
	}
}

// addBulks replies with an array of bulk strings.
func (c *Client) addBulks(items [][]byte) {
	c.addArrayLen(len(items))
	for _, it := range items {
		c.addBulk(it)
	}
}

// addStrings replies with an array of bulk strings.
func (c *Client) addStrings(items []string) {
	c.addArrayLen(len(items))
	for _, it := range items {
		c.addBulkString(it)
	}
}

// rawWrite is used by replication to stream bytes outside the reply path.
func (c *Client) rawWrite(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.conn.Write(b)
	return err
}

// rdLimits updates the reader limits; the reader belongs to the client's
// goroutine, so the change is picked up between requests.
func (c *Client) rdLimits(maxBulk int64, qbuf int) {
	c.pmu.Lock()
	c.newMaxBulk, c.newQbuf = maxBulk, qbuf
	c.newLimits.Store(true)
	c.pmu.Unlock()
}

func (c *Client) applyReaderLimits() {
	if !c.newLimits.Load() {
		return
	}
	c.pmu.Lock()
	c.newLimits.Store(false)
	mb, qb := c.newMaxBulk, c.newQbuf
	c.newMaxBulk, c.newQbuf = 0, 0
	c.pmu.Unlock()
	if mb > 0 {
		c.rd.SetMaxBulkLen(mb)
	}
	if qb > 0 {
		c.rd.SetQueryBufferLimit(qb)
	}
}
