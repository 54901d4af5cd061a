package runner_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardis/shardis/internal/testutil"
)

// End-to-end tests with real processes: redis-server instances managed by
// our sentinel binary (and, in the mixed test, a real redis-sentinel).

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// sentinelBinary builds cmd/sentinel once per test run.
func sentinelBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sentinel-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "sentinel")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/shardis/shardis/cmd/sentinel").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func needE2E(t *testing.T, bins ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	for _, b := range append([]string{"redis-server", "redis-cli"}, bins...) {
		testutil.LookPath(t, b)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

type proc struct {
	t    *testing.T
	name string
	args []string
	cmd  *exec.Cmd
	port int
	log  string
}

func (p *proc) start() {
	p.t.Helper()
	lf, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	p.cmd = exec.Command(p.name, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = lf, lf
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	lf.Close()
	go p.cmd.Wait()
	waitFor(p.t, 10*time.Second, p.name+" listening on "+strconv.Itoa(p.port), func() bool {
		c, err := net.DialTimeout("tcp", addrOf(p.port), 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

func (p *proc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		p.cmd.Process.Kill()
		p.cmd = nil
	}
}

func (p *proc) term() {
	if p.cmd != nil && p.cmd.Process != nil {
		p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() {
			for p.cmd.ProcessState == nil {
				time.Sleep(20 * time.Millisecond)
			}
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			p.cmd.Process.Kill()
		}
		p.cmd = nil
	}
}

func addrOf(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

func startProc(t *testing.T, name string, port int, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, args: args, port: port,
		log: filepath.Join(t.TempDir(), fmt.Sprintf("%s-%d.log", filepath.Base(name), port))}
	p.start()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			if b, err := os.ReadFile(p.log); err == nil {
				lines := strings.Split(string(b), "\n")
				if len(lines) > 40 {
					lines = lines[len(lines)-40:]
				}
				t.Logf("--- %s %d log tail ---\n%s", filepath.Base(name), port, strings.Join(lines, "\n"))
			}
		}
	})
	return p
}

func startRedis(t *testing.T, replicaOf int) *proc { return startServer(t, "redis-server", replicaOf) }

// startServer starts redis-server or shardnode (same flags).
func startServer(t *testing.T, bin string, replicaOf int) *proc {
	port := freePort(t)
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir()}
	if replicaOf != 0 {
		args = append(args, "--replicaof", "127.0.0.1", strconv.Itoa(replicaOf))
	}
	return startProc(t, bin, port, args...)
}

// sentinelConf writes a sentinel.conf monitoring masterPort.
func sentinelConf(t *testing.T, port, masterPort int, extra string) string {
	path := filepath.Join(t.TempDir(), "sentinel.conf")
	conf := fmt.Sprintf("port %d\nbind 127.0.0.1\nsentinel monitor mymaster 127.0.0.1 %d 2\n"+
		"sentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 6000\n%s", port, masterPort, extra)
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func startOurSentinel(t *testing.T, masterPort int) (*proc, string) {
	port := freePort(t)
	conf := sentinelConf(t, port, masterPort, "")
	return startProc(t, sentinelBinary(t), port, conf), conf
}

func startRedisSentinel(t *testing.T, masterPort int) *proc {
	port := freePort(t)
	conf := sentinelConf(t, port, masterPort, "")
	return startProc(t, "redis-sentinel", port, conf)
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timeout after %v waiting for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func sentinelClient(t *testing.T, port int) *redis.SentinelClient {
	c := redis.NewSentinelClient(&redis.Options{Addr: addrOf(port), DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// masterAddrByCLI asks a sentinel through redis-cli, as operators do.
func masterAddrByCLI(t *testing.T, port int) string {
	out, err := exec.Command("redis-cli", "-p", strconv.Itoa(port), "SENTINEL", "get-master-addr-by-name", "mymaster").Output()
	if err != nil {
		t.Fatalf("redis-cli: %v", err)
	}
	return strings.Join(strings.Fields(string(out)), ":")
}

// waitGroupFormed waits until every sentinel knows the replicas and the
// other sentinels.
func waitGroupFormed(t *testing.T, ports []int, replicas int) {
	t.Helper()
	ctx := context.Background()
	for _, p := range ports {
		sc := sentinelClient(t, p)
		waitFor(t, 30*time.Second, fmt.Sprintf("sentinel %d to discover its group", p), func() bool {
			m, err := sc.Master(ctx, "mymaster").Result()
			return err == nil && m["num-slaves"] == strconv.Itoa(replicas) && m["num-other-sentinels"] == strconv.Itoa(len(ports)-1)
		})
	}
}

// subscribeSwitch subscribes to +switch-master on a sentinel and returns a
// channel of payloads.
func subscribeSwitch(t *testing.T, port int) <-chan string {
	c, err := net.Dial("tcp", addrOf(port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "SUBSCRIBE +switch-master\r\n")
	ch := make(chan string, 4)
	go func() {
		br := bufio.NewReader(c)
		var lines []string
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			lines = append(lines, strings.TrimRight(l, "\r\n"))
			// *3 $7 message $14 +switch-master $N payload
			if n := len(lines); n >= 7 && lines[n-5] == "message" {
				ch <- lines[n-1]
				lines = nil
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)
	return ch
}

func TestE2EFailoverRealRedis(t *testing.T) {
	needE2E(t)
	master := startRedis(t, 0)
	r1 := startRedis(t, master.port)
	r2 := startRedis(t, master.port)
	var ports []int
	var confs []string
	for i := 0; i < 3; i++ {
		s, conf := startOurSentinel(t, master.port)
		ports = append(ports, s.port)
		confs = append(confs, conf)
	}
	waitGroupFormed(t, ports, 2)

	ctx := context.Background()
	var addrs []string
	for _, p := range ports {
		addrs = append(addrs, addrOf(p))
	}
	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: addrs,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1})
	defer fc.Close()
	if err := fc.Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatalf("write through FailoverClient: %v", err)
	}
	switched := subscribeSwitch(t, ports[0])

	killed := time.Now()
	master.kill()
	var payload string
	select {
	case payload = <-switched:
	case <-time.After(30 * time.Second):
		t.Fatal("no +switch-master within 30s")
	}
	toSwitch := time.Since(killed)
	want := []string{addrOf(r1.port), addrOf(r2.port)}
	f := strings.Fields(payload)
	if len(f) != 5 || f[0] != "mymaster" || f[2] != strconv.Itoa(master.port) {
		t.Fatalf("+switch-master payload %q", payload)
	}
	newMaster := f[3] + ":" + f[4]
	if newMaster != want[0] && newMaster != want[1] {
		t.Fatalf("new master %s is not one of the replicas %v", newMaster, want)
	}
	for _, p := range ports {
		waitFor(t, 15*time.Second, "redis-cli sees the new master", func() bool { return masterAddrByCLI(t, p) == newMaster })
	}
	waitFor(t, 15*time.Second, "a write through FailoverClient", func() bool {
		return fc.Set(ctx, "k", "v2", 0).Err() == nil
	})
	toWrite := time.Since(killed)
	t.Logf("kill -9 -> +switch-master %v, -> first write %v", toSwitch.Round(time.Millisecond), toWrite.Round(time.Millisecond))
	// The write landed on the new master.
	nm := redis.NewClient(&redis.Options{Addr: newMaster})
	defer nm.Close()
	if v, err := nm.Get(ctx, "k").Result(); err != nil || v != "v2" {
		t.Fatalf("new master has k=%q (%v)", v, err)
	}
	if role, _ := nm.Do(ctx, "ROLE").Slice(); len(role) == 0 || role[0] != "master" {
		t.Fatalf("new master ROLE %v", role)
	}

	// The old master comes back and is turned into a replica.
	master.start()
	old := redis.NewClient(&redis.Options{Addr: addrOf(master.port)})
	defer old.Close()
	waitFor(t, 40*time.Second, "the old master to be reconfigured as a replica", func() bool {
		info, err := old.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "role:slave") &&
			strings.Contains(info, "master_port:"+strings.Split(newMaster, ":")[1])
	})

	t.Run("RestartKeepsState", func(t *testing.T) { testRestartKeepsState(t, ports[2], confs[2]) })
}

// testRestartKeepsState stops a sentinel, checks its rewritten config, and
// restarts it: epochs and peers come back before any hello is received.
func testRestartKeepsState(t *testing.T, port int, conf string) {
	ctx := context.Background()
	sc := sentinelClient(t, port)
	before, err := sc.Master(ctx, "mymaster").Result()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, want := range []string{"sentinel myid ", "sentinel known-sentinel mymaster", "sentinel known-replica mymaster",
		"sentinel config-epoch mymaster " + before["config-epoch"]} {
		if !strings.Contains(text, want) {
			t.Fatalf("config lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "sentinel current-epoch 0\n") {
		t.Fatalf("current epoch not persisted:\n%s", text)
	}
	myidCmd := redis.NewStringCmd(ctx, "SENTINEL", "MYID")
	_ = sc.Process(ctx, myidCmd)
	myID := myidCmd.Val()
	// Stop: we cannot reach the process from here, so kill by port owner.
	p := &proc{t: t, name: sentinelBinary(t), args: []string{conf}, port: port,
		log: filepath.Join(t.TempDir(), "restart.log")}
	out, _ := exec.Command("redis-cli", "-p", strconv.Itoa(port), "SHUTDOWN").CombinedOutput()
	_ = out
	waitFor(t, 5*time.Second, "sentinel to stop", func() bool {
		c, err := net.DialTimeout("tcp", addrOf(port), 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	p.start()
	t.Cleanup(p.kill)
	sc2 := sentinelClient(t, port)
	after, err := sc2.Master(ctx, "mymaster").Result()
	if err != nil {
		t.Fatal(err)
	}
	if after["config-epoch"] != before["config-epoch"] || after["num-other-sentinels"] != "2" ||
		after["ip"]+":"+after["port"] != before["ip"]+":"+before["port"] {
		t.Fatalf("after restart %v, before %v", after, before)
	}
	idCmd := redis.NewStringCmd(ctx, "SENTINEL", "MYID")
	_ = sc2.Process(ctx, idCmd)
	if id := idCmd.Val(); id != myID || id == "" {
		t.Fatalf("myid changed %s -> %s", myID, id)
	}
}

func TestE2EMixedGroup(t *testing.T) {
	needE2E(t, "redis-sentinel")
	master := startRedis(t, 0)
	r1 := startRedis(t, master.port)
	s1, _ := startOurSentinel(t, master.port)
	s2, _ := startOurSentinel(t, master.port)
	s3 := startRedisSentinel(t, master.port)
	ports := []int{s1.port, s2.port, s3.port}
	waitGroupFormed(t, ports, 1)
	master.kill()
	for _, p := range ports {
		waitFor(t, 40*time.Second, fmt.Sprintf("sentinel %d to switch to the replica", p), func() bool {
			return masterAddrByCLI(t, p) == addrOf(r1.port)
		})
	}
	// All three agree on the epoch of the new configuration.
	ctx := context.Background()
	var epochs []string
	for _, p := range ports {
		m, err := sentinelClient(t, p).Master(ctx, "mymaster").Result()
		if err != nil {
			t.Fatal(err)
		}
		epochs = append(epochs, m["config-epoch"])
	}
	if epochs[0] == "0" || epochs[0] != epochs[1] || epochs[1] != epochs[2] {
		t.Fatalf("config epochs differ: %v", epochs)
	}
}

func TestE2EConfigEdit(t *testing.T) {
	needE2E(t)
	master := startRedis(t, 0)
	other := startRedis(t, 0)
	s, conf := startOurSentinel(t, master.port)
	sc := sentinelClient(t, s.port)
	ctx := context.Background()
	waitFor(t, 10*time.Second, "config rewritten with myid", func() bool {
		b, _ := os.ReadFile(conf)
		return strings.Contains(string(b), "sentinel myid ")
	})
	// An invalid edit is ignored as a whole.
	b, _ := os.ReadFile(conf)
	bad := string(b) + fmt.Sprintf("sentinel monitor other 127.0.0.1 %d 1\nsentinel bogus-directive\n", other.port)
	if err := os.WriteFile(conf, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond) // nothing to wait for: the edit must not apply
	if ms, _ := sc.Masters(ctx).Result(); len(ms) != 1 {
		t.Fatalf("invalid edit applied: %d masters", len(ms))
	}
	// A valid edit: add a master and change a setting.
	good := strings.Replace(string(b), "sentinel down-after-milliseconds mymaster 1000", "sentinel down-after-milliseconds mymaster 1500", 1) +
		fmt.Sprintf("sentinel monitor other 127.0.0.1 %d 1\n", other.port)
	if err := os.WriteFile(conf, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the edit to apply", func() bool {
		m, err := sc.Master(ctx, "other").Result()
		if err != nil || m["port"] != strconv.Itoa(other.port) {
			return false
		}
		mm, err := sc.Master(ctx, "mymaster").Result()
		return err == nil && mm["down-after-milliseconds"] == "1500"
	})
	// Removing it from the file stops monitoring it.
	if err := os.WriteFile(conf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the removal to apply", func() bool {
		_, err := sc.Master(ctx, "other").Result()
		return err != nil && strings.Contains(err.Error(), "No such master")
	})
}

var (
	shardnodeOnce sync.Once
	shardnodePath string
	shardnodeErr  error
)

// shardnodeBinary builds cmd/shardnode once; tests skip if it does not
// build (it is developed alongside).
func shardnodeBinary(t *testing.T) string {
	t.Helper()
	shardnodeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "shardnode-bin")
		if err != nil {
			shardnodeErr = err
			return
		}
		shardnodePath = filepath.Join(dir, "shardnode")
		out, err := exec.Command("go", "build", "-o", shardnodePath, "github.com/shardis/shardis/cmd/shardnode").CombinedOutput()
		if err != nil {
			shardnodeErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if shardnodeErr != nil {
		testutil.Missing(t, fmt.Sprintf("cmd/shardnode does not build: %v", shardnodeErr))
	}
	return shardnodePath
}

// failoverShardnode runs a shardnode master and replica under three
// Sentinels of the given kind, kills the master and checks that every
// Sentinel and a go-redis FailoverClient follow the replica.
func failoverShardnode(t *testing.T, kind string) {
	bin := shardnodeBinary(t)
	master := startServer(t, bin, 0)
	replica := startServer(t, bin, master.port)
	var ports []int
	var addrs []string
	for i := 0; i < 3; i++ {
		var p *proc
		if kind == "redis-sentinel" {
			p = startRedisSentinel(t, master.port)
		} else {
			p, _ = startOurSentinel(t, master.port)
		}
		ports = append(ports, p.port)
		addrs = append(addrs, addrOf(p.port))
	}
	waitGroupFormed(t, ports, 1)
	ctx := context.Background()
	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: addrs,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, MaxRetries: -1})
	defer fc.Close()
	if err := fc.Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(&redis.Options{Addr: addrOf(replica.port)})
	defer rc.Close()
	waitFor(t, 10*time.Second, "the replica to sync", func() bool {
		v, err := rc.Get(ctx, "k").Result()
		return err == nil && v == "before"
	})
	master.kill()
	for _, p := range ports {
		waitFor(t, 40*time.Second, fmt.Sprintf("sentinel %d to switch to the replica", p), func() bool {
			return masterAddrByCLI(t, p) == addrOf(replica.port)
		})
	}
	waitFor(t, 15*time.Second, "a write through FailoverClient", func() bool { return fc.Set(ctx, "k", "after", 0).Err() == nil })
	nm := redis.NewClient(&redis.Options{Addr: addrOf(replica.port)})
	defer nm.Close()
	if role, _ := nm.Do(ctx, "ROLE").Slice(); len(role) == 0 || role[0] != "master" {
		t.Fatalf("promoted shardnode ROLE %v", role)
	}
}

func TestE2EOurSentinelsShardnode(t *testing.T) {
	needE2E(t)
	failoverShardnode(t, "shardis")
}

func TestE2ERedisSentinelsShardnode(t *testing.T) {
	needE2E(t, "redis-sentinel")
	failoverShardnode(t, "redis-sentinel")
}
