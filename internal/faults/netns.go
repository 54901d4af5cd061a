package faults

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Prefix starts the name of every network namespace the harness creates,
// so that Cleanup can find what a crashed run left behind.
const Prefix = "shf-"

// AdminIP is the harness's own address on the main bridge (root
// namespace), from which it sets up, watches and reads the deployment.
const AdminIP = "10.77.0.2"

// adminLink is the root namespace's end of the admin link.
const adminLink = "shfadm"

// bridgeNS is the namespace holding the bridges every host is plugged into.
const bridgeNS = Prefix + "br"

// Net is a set of network namespaces, one per host, each with one veth
// link to a bridge in the bridge namespace. Hosts get the addresses
// 10.77.0.<10+i> in the order they were given. A partition moves the
// bridge ends of some hosts' links to a separate bridge: packets between
// the groups are dropped silently, as on a cut cable, and the hosts keep
// their carrier (no reset reaches any socket).
type Net struct {
	// Hosts are the host names in address order.
	Hosts []string
	// IPs maps a host name to its address.
	IPs map[string]string
	// groups is the number of extra bridges created by Partition.
	groups int
	// cuts are the blackhole routes Cut added: host, destination address.
	cuts [][2]string
}

// ns returns the namespace name of a host.
func ns(host string) string { return Prefix + host }

// port returns the name of host's link end in the bridge namespace; the
// end inside the host is named the same with the "b" replaced by "h".
func port(i int) string     { return "shfb" + strconv.Itoa(i) }
func hostLink(i int) string { return "shfh" + strconv.Itoa(i) }

// ip runs the ip(8) command with args and returns its error with output.
func ip(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("faults: ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// NewNet creates the bridge namespace and one namespace per host. On error
// it removes what it created.
func NewNet(hosts []string) (*Net, error) {
	n := &Net{Hosts: hosts, IPs: map[string]string{}}
	if err := n.create(); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

func (n *Net) create() error {
	if err := ip("netns", "add", bridgeNS); err != nil {
		return err
	}
	steps := [][]string{
		{"-n", bridgeNS, "link", "add", "br0", "type", "bridge"},
		{"-n", bridgeNS, "link", "set", "br0", "up"},
		// The harness itself (in the root namespace) reaches every host
		// over an admin link on the main bridge.
		{"link", "add", adminLink, "type", "veth", "peer", "name", adminLink + "b", "netns", bridgeNS},
		{"addr", "add", AdminIP + "/24", "dev", adminLink},
		{"link", "set", adminLink, "up"},
		{"-n", bridgeNS, "link", "set", adminLink + "b", "master", "br0"},
		{"-n", bridgeNS, "link", "set", adminLink + "b", "up"},
	}
	for i, h := range n.Hosts {
		addr := "10.77.0." + strconv.Itoa(10+i)
		n.IPs[h] = addr
		steps = append(steps,
			[]string{"netns", "add", ns(h)},
			[]string{"link", "add", hostLink(i), "netns", ns(h), "type", "veth", "peer", "name", port(i), "netns", bridgeNS},
			[]string{"-n", ns(h), "addr", "add", addr + "/24", "dev", hostLink(i)},
			[]string{"-n", ns(h), "link", "set", "lo", "up"},
			[]string{"-n", ns(h), "link", "set", hostLink(i), "up"},
			[]string{"-n", bridgeNS, "link", "set", port(i), "master", "br0"},
			[]string{"-n", bridgeNS, "link", "set", port(i), "up"},
		)
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return err
		}
	}
	return nil
}

func (n *Net) index(host string) int {
	for i, h := range n.Hosts {
		if h == host {
			return i
		}
	}
	panic("faults: unknown host " + host)
}

// Partition cuts the network into groups: every host listed in groups[i]
// is moved to its own bridge, so it reaches only the hosts of the same
// group; the hosts not listed stay together on the main bridge.
func (n *Net) Partition(groups ...[]string) error {
	for len(groups) > n.groups {
		n.groups++
		br := "br" + strconv.Itoa(n.groups)
		if err := ip("-n", bridgeNS, "link", "add", br, "type", "bridge"); err != nil {
			return err
		}
		if err := ip("-n", bridgeNS, "link", "set", br, "up"); err != nil {
			return err
		}
	}
	for g, hosts := range groups {
		for _, h := range hosts {
			if err := ip("-n", bridgeNS, "link", "set", port(n.index(h)), "master", "br"+strconv.Itoa(g+1)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Cut severs every host of a from every host of b, both ways, while both
// keep reaching everyone else (a partial partition, which moving links
// between bridges cannot make): each host gets a blackhole route to each
// address of the other side. Packets in flight vanish, as on a cut cable;
// unlike a cable, a host's own sends to the other side fail at once
// (EINVAL) rather than time out, so a new connection fails at once too.
// (This kernel has no netfilter for a silent drop.)
func (n *Net) Cut(a, b []string) error {
	for _, x := range a {
		for _, y := range b {
			for _, c := range [][2]string{{x, n.IPs[y]}, {y, n.IPs[x]}} {
				if err := ip("-n", ns(c[0]), "route", "add", "blackhole", c[1]+"/32"); err != nil {
					return err
				}
				n.cuts = append(n.cuts, c)
			}
		}
	}
	return nil
}

// Heal puts every host back on the main bridge and removes Cut's routes.
func (n *Net) Heal() error {
	for i := range n.Hosts {
		if err := ip("-n", bridgeNS, "link", "set", port(i), "master", "br0"); err != nil {
			return err
		}
	}
	for _, c := range n.cuts {
		if err := ip("-n", ns(c[0]), "route", "del", "blackhole", c[1]+"/32"); err != nil {
			return err
		}
	}
	n.cuts = nil
	return nil
}

// Close kills every process left in the namespaces and removes them.
func (n *Net) Close() {
	for _, h := range n.Hosts {
		removeNS(ns(h))
	}
	removeNS(bridgeNS)
	_ = exec.Command("ip", "link", "del", adminLink).Run()
}

// removeNS kills the processes inside a namespace and deletes it; errors
// (a namespace that was never created) are ignored.
func removeNS(name string) {
	if out, err := exec.Command("ip", "netns", "pids", name).Output(); err == nil {
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	_ = exec.Command("ip", "netns", "del", name).Run()
}

// Cleanup removes every namespace whose name starts with Prefix (what a
// crashed run left behind) and returns their names.
func Cleanup() ([]string, error) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("faults: ip netns list: %w", err)
	}
	var removed []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], Prefix) {
			removeNS(f[0])
			removed = append(removed, f[0])
		}
	}
	_ = exec.Command("ip", "link", "del", adminLink).Run()
	return removed, nil
}
