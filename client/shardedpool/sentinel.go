package shardedpool

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/resp"
	"github.com/shardis/shardis/internal/sentinel"
)

// The Sentinel subscription speaks RESP2 over a raw connection so that the
// pool sees every disconnect and reconnect (go-redis's PubSub hides them).
// A Sentinel sends only small replies; larger ones end the session.
var sentinelReplyLimits = resp.ValueLimits{MaxBulkLen: 64 << 10, MaxElems: 64, MaxDepth: 2}

// readSentinelReply reads one reply of the subscription connection.
func readSentinelReply(r *bufio.Reader) (resp.Value, error) {
	v, err := resp.ReadValueLimited(r, sentinelReplyLimits)
	if err != nil {
		return v, fmt.Errorf("shardedpool: read sentinel reply: %w", err)
	}
	return v, nil
}

func (p *Pool) newSentinelClient(addr string) *redis.SentinelClient {
	t := p.opt.SentinelTimeout
	return redis.NewSentinelClient(&redis.Options{
		Addr:          addr,
		Username:      p.opt.SentinelUsername,
		Password:      p.opt.SentinelPassword,
		DialTimeout:   t,
		ReadTimeout:   t,
		WriteTimeout:  t,
		MaxRetries:    -1,
		DialerRetries: 1, // a dead Sentinel must not slow the others' answers
		PoolSize:      2,
		TLSConfig:     p.opt.TLSConfig,
		Protocol:      2,
	})
}

// sentinelAnswer is one Sentinel's view of a master.
type sentinelAnswer struct {
	sentinel string
	addr     string
	epoch    int64 // config-epoch, -1 when the Sentinel did not report it
}

// querySentinels asks every Sentinel, concurrently and with the short
// per-Sentinel timeout, where the master of name is. Sentinels that fail or
// do not know the master are left out.
func (p *Pool) querySentinels(ctx context.Context, name string) []sentinelAnswer {
	answers := make([]*sentinelAnswer, len(p.sentinels))
	var wg sync.WaitGroup
	for i, sc := range p.sentinels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			qctx, cancel := context.WithTimeout(ctx, p.opt.SentinelTimeout)
			defer cancel()
			a, err := askSentinel(qctx, sc, name)
			if err != nil {
				p.log.Debug("shardedpool: sentinel query failed", "sentinel", p.opt.SentinelAddrs[i], "master", name, "err", err)
				return
			}
			a.sentinel = p.opt.SentinelAddrs[i]
			answers[i] = a
		}()
	}
	wg.Wait()
	var out []sentinelAnswer
	for _, a := range answers {
		if a != nil {
			out = append(out, *a)
		}
	}
	return out
}

// askSentinel asks one Sentinel with SENTINEL MASTER (address and config
// epoch), falling back to SENTINEL GET-MASTER-ADDR-BY-NAME for Sentinels
// that do not implement it.
func askSentinel(ctx context.Context, sc *redis.SentinelClient, name string) (*sentinelAnswer, error) {
	m, err := sc.Master(ctx, name).Result()
	if err == nil {
		ip, port := m["ip"], m["port"]
		if ip == "" || port == "" {
			return nil, fmt.Errorf("shardedpool: SENTINEL MASTER %s: no ip/port", name)
		}
		if strings.Contains(m["flags"], "o_down") {
			// The failover has not happened yet; the old master is dead.
			return nil, fmt.Errorf("shardedpool: SENTINEL MASTER %s: master is objectively down", name)
		}
		epoch := int64(-1)
		if e, err := strconv.ParseInt(m["config-epoch"], 10, 64); err == nil {
			epoch = e
		}
		return &sentinelAnswer{addr: net.JoinHostPort(ip, port), epoch: epoch}, nil
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) || strings.Contains(strings.ToLower(err.Error()), "no such master") {
		return nil, err
	}
	hp, err := sc.GetMasterAddrByName(ctx, name).Result()
	if err != nil {
		return nil, err
	}
	if len(hp) != 2 {
		return nil, fmt.Errorf("shardedpool: GET-MASTER-ADDR-BY-NAME %s: %d fields", name, len(hp))
	}
	return &sentinelAnswer{addr: net.JoinHostPort(hp[0], hp[1]), epoch: -1}, nil
}

// pickMaster chooses among answers: the highest config epoch wins; among
// answers with that epoch (or when no epoch is known) the address most
// Sentinels report. votes is how many Sentinels reported the winner.
func pickMaster(answers []sentinelAnswer) (best sentinelAnswer, votes int, ok bool) {
	if len(answers) == 0 {
		return best, 0, false
	}
	top := int64(-1)
	for _, a := range answers {
		top = max(top, a.epoch)
	}
	count := map[string]int{}
	for _, a := range answers {
		if a.epoch == top {
			count[a.addr]++
		}
	}
	for _, a := range answers {
		if a.epoch == top && count[a.addr] > votes {
			best, votes = a, count[a.addr]
		}
	}
	return best, votes, true
}

// isMaster asks addr's server for its ROLE (INFO replication for servers
// without ROLE) and reports whether it is a master.
func isMaster(ctx context.Context, c *redis.Client) (bool, error) {
	v, err := c.Do(ctx, "ROLE").Slice()
	if err == nil {
		if len(v) == 0 {
			return false, errors.New("shardedpool: empty ROLE reply")
		}
		role, _ := v[0].(string)
		return role == "master", nil
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false, err
	}
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return false, err
	}
	return strings.Contains(info, "role:master"), nil
}

// resolveAll resolves every shard's master at start-up, concurrently,
// retrying with backoff until ctx ends.
func (p *Pool) resolveAll(ctx context.Context) error {
	errs := make([]error, len(p.shards))
	var wg sync.WaitGroup
	for i, s := range p.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.resolveInitial(ctx, s)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (p *Pool) resolveInitial(ctx context.Context, s *shard) error {
	backoff := 50 * time.Millisecond
	var last error
	for {
		best, _, ok := pickMaster(p.querySentinels(ctx, s.name))
		if ok {
			c := p.newShardClient(best.addr)
			master, err := p.checkRole(ctx, c)
			if err == nil && master {
				s.setConn(newShardConn(c, best.addr, best.epoch))
				p.log.Info("shardedpool: resolved master", "shard", s.name, "addr", best.addr, "epoch", best.epoch)
				return nil
			}
			_ = c.Close()
			last = fmt.Errorf("%s is not a master (err %v)", best.addr, err)
		} else {
			last = errors.New("no Sentinel answered")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("shardedpool: resolve master %s: %w (last: %v)", s.name, ctx.Err(), last)
		case <-time.After(jitter(backoff)):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

func (p *Pool) checkRole(ctx context.Context, c *redis.Client) (bool, error) {
	t := p.opt.SentinelTimeout * 2
	rctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	return isMaster(rctx, c)
}

func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// recheckResult says what a recheck did.
type recheckResult int

const (
	recheckUnchanged recheckResult = iota // current master confirmed or stale answer ignored
	recheckSwitched                       // switched to a new master
	recheckRetry                          // undecided (no answer, new master not ready): try again soon
)

// recheck re-reads the shard's master from the Sentinels and switches if a
// newer master is confirmed. Only the shard's worker calls it.
func (p *Pool) recheck(ctx context.Context, s *shard, reason string) recheckResult {
	answers := p.querySentinels(ctx, s.name)
	best, votes, ok := pickMaster(answers)
	if !ok {
		p.log.Debug("shardedpool: no Sentinel reports a usable master", "shard", s.name, "reason", reason)
		return recheckRetry
	}
	cur := s.conn()
	p.log.Debug("shardedpool: recheck", "shard", s.name, "reason", reason, "best", best.addr, "epoch", best.epoch, "current", cur.addr, "answers", len(answers))
	if best.addr == cur.addr {
		if best.epoch > cur.epoch {
			s.setConn(newShardConn(cur.client, cur.addr, best.epoch))
		}
		return recheckUnchanged
	}
	// An equal epoch naming another address is stale unless the current
	// master stepped down: the leader of a failover reports the new epoch
	// with the old address between the promotion and its switch, and the
	// pool may have adopted that epoch for the old address.
	if best.epoch >= 0 && cur.epoch >= 0 && (best.epoch < cur.epoch ||
		(best.epoch == cur.epoch && p.stillMaster(ctx, cur.client))) {
		p.counts.stale.Add(1)
		p.log.Warn("shardedpool: ignoring stale master", "shard", s.name, "current", cur.addr,
			"epoch", cur.epoch, "stale", best.addr, "stale_epoch", best.epoch, "sentinel", best.sentinel)
		return recheckUnchanged
	}
	if best.epoch < 0 && 2*votes <= len(p.sentinels) {
		p.log.Warn("shardedpool: no Sentinel majority for new master", "shard", s.name,
			"candidate", best.addr, "votes", votes, "sentinels", len(p.sentinels))
		return recheckRetry
	}
	c := p.newShardClient(best.addr)
	master, err := p.checkRole(ctx, c)
	if err != nil || !master {
		_ = c.Close()
		p.counts.unconfirmed.Add(1)
		p.log.Info("shardedpool: new master not confirmed yet", "shard", s.name, "candidate", best.addr, "err", err)
		return recheckRetry
	}
	p.switchTo(s, c, best.addr, best.epoch, reason)
	return recheckSwitched
}

// stillMaster reports whether the current master still says it is one
// (an unreachable one counts as still master: nothing proves otherwise).
func (p *Pool) stillMaster(ctx context.Context, c *redis.Client) bool {
	master, err := p.checkRole(ctx, c)
	return err != nil || master
}

// shardWorker serializes the rechecks and switches of one shard, so shards
// fail over independently and concurrently.
func (p *Pool) shardWorker(s *shard) {
	defer p.wg.Done()
	var taken int64 // requests taken from wake
	for {
		s.handled.Store(taken)
		var reason string
		select {
		case <-p.ctx.Done():
			return
		case reason = <-s.wake:
			taken++
		}
		backoff := 20 * time.Millisecond
		for attempt := 0; ; attempt++ {
			if p.recheck(p.ctx, s, reason) != recheckRetry || attempt == 50 {
				break
			}
			select {
			case <-p.ctx.Done():
				return
			case r := <-s.wake:
				reason = r
				taken++
			case <-time.After(jitter(backoff)):
			}
			backoff = min(backoff*2, time.Second)
		}
	}
}

func (p *Pool) recheckAll(reason string) {
	for _, s := range p.shards {
		s.requestRecheck(reason)
	}
}

func (p *Pool) periodicRecheck() {
	defer p.wg.Done()
	t := time.NewTicker(p.opt.RecheckInterval)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			p.recheckAll("periodic recheck")
		}
	}
}

// watchSentinel keeps a +switch-master subscription open on one Sentinel,
// reconnecting with backoff, and re-queries every master after each
// (re)connection since events may have been missed meanwhile.
func (p *Pool) watchSentinel(addr string) {
	defer p.wg.Done()
	backoff := 50 * time.Millisecond
	failures := 0
	for p.ctx.Err() == nil {
		start := time.Now()
		err := p.subscribeOnce(addr)
		if p.ctx.Err() != nil {
			return
		}
		if time.Since(start) > 5*time.Second {
			backoff, failures = 50*time.Millisecond, 0
		}
		// Warn once per outage; the retries of a dead Sentinel go to Debug.
		level := slog.LevelWarn
		if failures > 0 {
			level = slog.LevelDebug
		}
		failures++
		p.log.Log(p.ctx, level, "shardedpool: sentinel subscription lost", "sentinel", addr, "err", err, "attempt", failures)
		select {
		case <-p.ctx.Done():
			return
		case <-time.After(jitter(backoff)):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

func tlsDial(ctx context.Context, d *net.Dialer, network, addr string, cfg *tls.Config) (net.Conn, error) {
	td := &tls.Dialer{NetDialer: d, Config: cfg}
	return td.DialContext(ctx, network, addr)
}

// subscribeOnce runs one subscription session until it fails.
func (p *Pool) subscribeOnce(addr string) error {
	d := &net.Dialer{Timeout: p.opt.SentinelTimeout}
	var conn net.Conn
	var err error
	if p.opt.TLSConfig != nil {
		conn, err = tlsDial(p.ctx, d, "tcp", addr, p.opt.TLSConfig)
	} else {
		conn, err = d.DialContext(p.ctx, "tcp", addr)
	}
	if err != nil {
		return err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-p.ctx.Done():
		case <-done:
		}
		conn.Close()
	}()
	r := bufio.NewReader(conn)
	var wmu sync.Mutex
	send := func(args ...string) error {
		wmu.Lock()
		defer wmu.Unlock()
		_ = conn.SetWriteDeadline(time.Now().Add(p.opt.SentinelTimeout))
		_, err := conn.Write(resp.AppendCommandStrings(nil, args...))
		return err
	}
	if p.opt.SentinelPassword != "" {
		args := []string{"AUTH", p.opt.SentinelPassword}
		if p.opt.SentinelUsername != "" {
			args = []string{"AUTH", p.opt.SentinelUsername, p.opt.SentinelPassword}
		}
		if err := send(args...); err != nil {
			return err
		}
		_ = conn.SetReadDeadline(time.Now().Add(p.opt.SentinelTimeout))
		v, err := readSentinelReply(r)
		if err != nil {
			return err
		}
		if v.IsError() {
			return fmt.Errorf("shardedpool: sentinel AUTH: %s", v.Str)
		}
	}
	if err := send("SUBSCRIBE", "+switch-master"); err != nil {
		return err
	}
	_ = conn.SetReadDeadline(time.Now().Add(p.opt.SentinelTimeout))
	v, err := readSentinelReply(r)
	if err != nil {
		return err
	}
	if v.Type != '*' || len(v.Elems) < 1 || v.Elems[0].Str != "subscribe" {
		return fmt.Errorf("shardedpool: unexpected SUBSCRIBE reply %+v", v)
	}
	p.log.Debug("shardedpool: subscribed to sentinel", "sentinel", addr)
	p.recheckAll("sentinel " + addr + " connected")
	p.counts.subscribed.Add(1)

	go func() {
		t := time.NewTicker(p.opt.SentinelPingInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if send("PING") != nil {
					return
				}
			}
		}
	}()
	for {
		_ = conn.SetReadDeadline(time.Now().Add(3 * p.opt.SentinelPingInterval))
		v, err := readSentinelReply(r)
		if err != nil {
			return err
		}
		switch {
		case v.Type == '*' || v.Type == '>':
			if len(v.Elems) == 3 && v.Elems[0].Str == "message" {
				p.handleSwitchMessage(addr, v.Elems[2].Str)
			}
		case v.IsError():
			return fmt.Errorf("shardedpool: sentinel error: %s", v.Str)
		}
	}
}

// handleSwitchMessage handles "+switch-master <name> <oldip> <oldport>
// <newip> <newport>". Malformed messages are logged and ignored.
func (p *Pool) handleSwitchMessage(from, payload string) {
	sm, err := sentinel.ParseSwitchMaster(payload)
	if err != nil {
		p.counts.malformed.Add(1)
		p.log.Warn("shardedpool: ignoring malformed +switch-master", "sentinel", from, "payload", payload)
		return
	}
	s := p.byName[sm.Name]
	if s == nil {
		return // another deployment's master
	}
	to := sm.NewAddr.String()
	if to == s.conn().addr {
		p.counts.duplicates.Add(1)
		p.log.Debug("shardedpool: duplicate +switch-master", "shard", s.name, "to", to, "sentinel", from)
		return
	}
	p.log.Debug("shardedpool: +switch-master received", "shard", s.name, "to", to, "sentinel", from)
	s.requestRecheck("+switch-master from " + from)
}
