// Package migrate is the sending side of MIGRATE (Redis's cluster.c):
// the grammar of its arguments, the cache of connections to targets (one
// per address, closed after 10 seconds unused, at most 64), and the
// exchange that pipelines AUTH, SELECT and one RESTORE per key and reads
// the target's answers. It does socket I/O but knows no client, server or
// keyspace: the node serialises the keys, calls Send, and deletes what the
// target acknowledged.
package migrate

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardis/shardis/internal/node/netio"
	"github.com/shardis/shardis/internal/node/value"
	"github.com/shardis/shardis/internal/resp"
)

// Errors of MIGRATE's arguments, in Redis's words.
var (
	// ErrSyntax is Redis's generic syntax error.
	ErrSyntax = errors.New("ERR syntax error")
	// ErrNotInt refuses a database or timeout that is not an integer.
	ErrNotInt = errors.New("ERR value is not an integer or out of range")
	// ErrKeysWithKey refuses KEYS with a non-empty key argument.
	ErrKeysWithKey = errors.New("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
)

func eqFold(a []byte, s string) bool { return strings.EqualFold(string(a), s) }

// Keys returns the positions of MIGRATE's keys in args: the key at 3, or
// the keys after KEYS when it is "".
func Keys(args [][]byte) []int {
	if len(args) > 3 && len(args[3]) == 0 {
		for j := 6; j < len(args); j++ {
			if eqFold(args[j], "keys") {
				pos := make([]int, 0, len(args)-j-1)
				for k := j + 1; k < len(args); k++ {
					pos = append(pos, k)
				}
				return pos
			}
			if eqFold(args[j], "auth") {
				j++
			} else if eqFold(args[j], "auth2") {
				j += 2
			}
		}
		return nil
	}
	if len(args) > 3 {
		return []int{3}
	}
	return nil
}

// Options are MIGRATE's parsed arguments.
type Options struct {
	// Addr is the target's host:port.
	Addr string
	// DB is the target's database.
	DB int64
	// Timeout bounds each connect, write and read.
	Timeout time.Duration
	// Copy keeps the keys; Replace overwrites them on the target.
	Copy, Replace bool
	// Auth is AUTH's arguments (password, or username and password).
	Auth [][]byte
	// Keys are the keys to move.
	Keys [][]byte
}

// Parse parses MIGRATE's arguments (the whole command).
func Parse(args [][]byte) (Options, error) {
	o := Options{Keys: args[3:4]}
	for j := 6; j < len(args); j++ {
		more := len(args) - j - 1
		switch {
		case eqFold(args[j], "copy"):
			o.Copy = true
		case eqFold(args[j], "replace"):
			o.Replace = true
		case eqFold(args[j], "auth"):
			if more < 1 {
				return o, ErrSyntax
			}
			j++
			o.Auth = [][]byte{args[j]}
		case eqFold(args[j], "auth2"):
			if more < 2 {
				return o, ErrSyntax
			}
			o.Auth = [][]byte{args[j+1], args[j+2]}
			j += 2
		case eqFold(args[j], "keys"):
			if len(args[3]) != 0 {
				return o, ErrKeysWithKey
			}
			o.Keys = args[j+1:]
			j = len(args)
		default:
			return o, ErrSyntax
		}
	}
	timeoutMs, ok := value.ParseInt(args[5])
	if !ok {
		return o, ErrNotInt
	}
	if o.DB, ok = value.ParseInt(args[4]); !ok {
		return o, ErrNotInt
	}
	if timeoutMs <= 0 {
		timeoutMs = 1000
	}
	o.Timeout = time.Duration(timeoutMs) * time.Millisecond
	o.Addr = net.JoinHostPort(string(args[1]), string(args[2]))
	return o, nil
}

// Item is one key MIGRATE moves.
type Item struct {
	// Key is the key's name; TTL its remaining time to live in ms (0 none).
	Key string
	TTL int64
	// Payload is the key's DUMP payload; with Body set, the payload is
	// Payload ‖ Body ‖ Tail (rdb.StringDump: a big string sent from the
	// entry itself).
	Payload    []byte
	Body, Tail []byte
	// Acked is set when the target acknowledged the key's RESTORE.
	Acked bool
}

// Result is what the target answered.
type Result struct {
	// IOErr is the IOERR to reply ("" none), after a socket error.
	IOErr string
	// TargetErr is the target's first error reply ("" none).
	TargetErr string
}

// Cached MIGRATE connections, as Redis's migrate_cached_sockets: one per
// target address, closed after 10 seconds unused, at most 64.
const (
	cacheTTL   = 10 * time.Second
	cacheItems = 64
	// chunk is the size of the writes of a MIGRATE's request, each
	// with its own timeout (Redis writes 64 kB at a time).
	chunk = 64 << 10
)

// conn is a cached connection to a MIGRATE target.
type conn struct {
	nc net.Conn
	// rw reads and writes nc with raw system calls (netio.NewRaw);
	// deadlines are set on nc.
	rw io.ReadWriter
	br *bufio.Reader
	// lastDB is the database the target has selected, -1 unknown.
	lastDB int
	// used is when the connection was last released to the cache.
	used time.Time
	// reap closes the connection once it stays unused for cacheTTL
	// (armed again at each release: one timer per connection).
	reap *time.Timer
	// buf is the request buffer the last MIGRATE on this connection
	// left, reused by the next (at most keepBuf bytes are kept).
	buf []byte
}

// keepBuf is the largest request buffer a connection keeps for its next
// MIGRATE; a bigger one (many or big keys) is left to the collector.
const keepBuf = 256 << 10

// cache holds the idle connections; a MIGRATE takes its target's
// connection out while it uses it, so two MIGRATEs never share one.
var cache = struct {
	sync.Mutex
	conns map[string]*conn
}{conns: map[string]*conn{}}

// get returns the cached connection to addr (reused: true) or a
// new one.
func get(addr string, timeout time.Duration) (mc *conn, reused bool, err error) {
	cache.Lock()
	mc = cache.conns[addr]
	delete(cache.conns, addr)
	cache.Unlock()
	if mc != nil && time.Since(mc.used) < cacheTTL {
		return mc, true, nil
	}
	if mc != nil {
		mc.nc.Close()
	}
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, false, err
	}
	rw := netio.NewRaw(nc)
	return &conn{nc: nc, rw: rw, br: bufio.NewReader(rw), lastDB: -1}, false, nil
}

// release puts mc back in the cache and schedules its closing
// when it stays unused for cacheTTL.
func release(addr string, mc *conn) {
	_ = mc.nc.SetDeadline(time.Time{})
	mc.used = time.Now()
	cache.Lock()
	if old := cache.conns[addr]; old != nil {
		old.nc.Close()
	} else if len(cache.conns) >= cacheItems {
		for a, c := range cache.conns { // Redis drops a random one
			c.nc.Close()
			delete(cache.conns, a)
			break
		}
	}
	cache.conns[addr] = mc
	cache.Unlock()
	if mc.reap != nil {
		mc.reap.Reset(cacheTTL + time.Second)
		return
	}
	mc.reap = time.AfterFunc(cacheTTL+time.Second, func() {
		cache.Lock()
		if cur := cache.conns[addr]; cur == mc && time.Since(mc.used) >= cacheTTL {
			delete(cache.conns, addr)
			mc.nc.Close()
		}
		cache.Unlock()
	})
}

// Send sends items to o's target and reads its replies, marking
// the acknowledged items. A socket error on a cached connection before
// any reply is retried once on a new connection (the target may have
// closed an idle one), unless it was a timeout, as Redis does.
func Send(o *Options, items []Item, clusterMode bool) Result {
	restore := []byte("RESTORE")
	if clusterMode {
		restore = []byte("RESTORE-ASKING")
	}
	for attempt := 0; ; attempt++ {
		mc, _, err := get(o.Addr, o.Timeout)
		if err != nil {
			return Result{IOErr: "IOERR error or timeout connecting to the client"}
		}
		req := request{cur: mc.buf[:0]}
		mc.buf = nil
		if o.Auth != nil {
			req.command(append([][]byte{[]byte("AUTH")}, o.Auth...)...)
		}
		selectDB := mc.lastDB != int(o.DB)
		if selectDB {
			req.command([]byte("SELECT"), strconv.AppendInt(nil, o.DB, 10))
		}
		for _, it := range items {
			req.restore(restore, it, o.Replace)
		}
		out := req.done()
		res, retry := exchange(mc, o, out, selectDB, items)
		if first := out[0]; cap(first) <= keepBuf {
			mc.buf = first[:0]
		}
		if res.IOErr != "" {
			mc.nc.Close()
			if retry && attempt == 0 {
				continue
			}
			return res
		}
		if res.TargetErr != "" {
			mc.lastDB = -1
		} else {
			mc.lastDB = int(o.DB)
		}
		release(o.Addr, mc)
		return res
	}
}

// A request is a pipeline of commands in RESP as a list of segments:
// the small parts are copied into shared buffers, an argument of at
// least chunk bytes (a big key's payload) is referenced where it is, so
// a 50 MB payload is written from the DUMP buffer without a copy.
type request struct {
	segs [][]byte
	cur  []byte // the segment being filled, not yet in segs
}

// command appends one command of args.
func (r *request) command(args ...[]byte) {
	r.cur = appendHeader(r.cur, '*', len(args))
	for _, a := range args {
		r.cur = appendHeader(r.cur, '$', len(a))
		r.part(a)
		r.cur = append(r.cur, '\r', '\n')
	}
}

// restore appends one RESTORE (or RESTORE-ASKING) of it: name key ttl
// payload [REPLACE], as command would, without building its arguments.
func (r *request) restore(name []byte, it Item, replace bool) {
	n := 4
	if replace {
		n = 5
	}
	r.cur = appendHeader(r.cur, '*', n)
	r.cur = append(appendHeader(r.cur, '$', len(name)), name...)
	r.cur = append(appendHeader(append(r.cur, '\r', '\n'), '$', len(it.Key)), it.Key...)
	r.cur = strconv.AppendInt(appendHeader(append(r.cur, '\r', '\n'), '$', digits(it.TTL)), it.TTL, 10)
	r.cur = appendHeader(append(r.cur, '\r', '\n'), '$', len(it.Payload)+len(it.Body)+len(it.Tail))
	r.part(it.Payload)
	r.part(it.Body)
	r.part(it.Tail)
	r.cur = append(r.cur, '\r', '\n')
	if replace {
		r.cur = append(r.cur, "$7\r\nREPLACE\r\n"...)
	}
}

// appendHeader appends a RESP array or bulk header: kind, n, CRLF.
func appendHeader(b []byte, kind byte, n int) []byte {
	b = strconv.AppendInt(append(b, kind), int64(n), 10)
	return append(b, '\r', '\n')
}

// part appends an argument's bytes: copied when small, referenced as a
// segment of its own from chunk bytes on (a big payload is written from
// where it is).
func (r *request) part(b []byte) {
	if len(b) >= chunk {
		r.segs = append(r.segs, r.cur, b)
		r.cur = nil
		return
	}
	r.cur = append(r.cur, b...)
}

// digits is the length of v in decimal (with its sign).
func digits(v int64) int {
	n := 1
	if v < 0 {
		n++
	}
	for v <= -10 || v >= 10 {
		v /= 10
		n++
	}
	return n
}

// done returns the segments.
func (r *request) done() [][]byte {
	if len(r.cur) > 0 {
		r.segs = append(r.segs, r.cur)
	}
	return r.segs
}

// exchange writes out and reads the replies of the AUTH, SELECT
// and RESTOREs it holds; retry reports a socket error before any reply
// that was not a timeout.
func exchange(mc *conn, o *Options, out [][]byte, selectDB bool, items []Item) (res Result, retry bool) {
	isTimeout := func(err error) bool {
		var ne net.Error
		return errors.As(err, &ne) && ne.Timeout()
	}
	// Writes of at most chunk bytes, each with its own timeout, as Redis
	// writes a MIGRATE's request.
	for _, seg := range out {
		for pos := 0; pos < len(seg); pos += chunk {
			_ = mc.nc.SetWriteDeadline(time.Now().Add(o.Timeout))
			if _, err := mc.rw.Write(seg[pos:min(pos+chunk, len(seg))]); err != nil {
				return Result{IOErr: "IOERR error or timeout writing to target instance"}, !isTimeout(err)
			}
		}
	}
	read := func() (string, error) {
		_ = mc.nc.SetReadDeadline(time.Now().Add(o.Timeout))
		v, err := resp.ReadValue(mc.br)
		if err != nil {
			return "", err
		}
		if v.IsError() {
			return v.Str, nil
		}
		return "", nil
	}
	readErr := "IOERR error or timeout reading to target instance"
	// An AUTH or SELECT error fails every key, as in Redis.
	var setupErr string
	if o.Auth != nil {
		m, err := read()
		if err != nil {
			return Result{IOErr: readErr}, !isTimeout(err)
		}
		setupErr = m
	}
	if selectDB {
		m, err := read()
		if err != nil {
			return Result{IOErr: readErr}, !isTimeout(err)
		}
		if setupErr == "" {
			setupErr = m
		}
	}
	for i := range items {
		m, err := read()
		if err != nil {
			return Result{IOErr: readErr, TargetErr: res.TargetErr}, i == 0 && res.TargetErr == "" && !isTimeout(err)
		}
		switch {
		case setupErr != "":
			if res.TargetErr == "" {
				res.TargetErr = setupErr
			}
		case m != "":
			if res.TargetErr == "" {
				res.TargetErr = m
			}
		default:
			items[i].Acked = true
		}
	}
	return res, false
}
