package node

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"unsafe"
)

// zsetValue is a sorted set: members ordered by (score, member bytes).
//
// Small sets (at most zset-max-listpack-entries members, none longer than
// zset-max-listpack-value bytes) are a sorted slice ("listpack"); larger
// ones are a map member→score plus a skip list with spans ("skiplist"),
// which gives rank, select-by-rank and range lookups in O(log n). Like
// Redis, a set never converts back to the small encoding by removals; only
// newly built results (ZUNIONSTORE, ZRANGESTORE ...) pick the small one.
//
// Persistence and replication walk and rebuild values with newZSet, Len,
// Add, Score, Remove and ForEach (in order).
type zsetValue struct {
	// lp holds the small encoding, sorted; used when dict == nil.
	lp []zitem
	// dict and zsl hold the large encoding; member strings are shared.
	// dict maps a member to its skip list node (which holds the score),
	// so a score update starts from the node; it is a chainDict (not a
	// Go map) for ZSCAN's stable cursor.
	dict *chainDict[*zslNode]
	zsl  *skiplist
}

// zitem is one member of the small encoding.
type zitem struct {
	member string
	score  float64
}

// zsetLimits are the small-encoding thresholds of the running server.
type zsetLimits struct {
	entries int // zset-max-listpack-entries
	value   int // zset-max-listpack-value
}

// defaultZSetLimits are Redis's defaults, used by Add.
var defaultZSetLimits = zsetLimits{entries: 128, value: 64}

// zless orders (score, member) pairs as Redis does.
func zless(s1 float64, m1 string, s2 float64, m2 string) bool {
	return s1 < s2 || (s1 == s2 && m1 < m2)
}

// newZSet returns an empty sorted set in the small encoding.
func newZSet() *zsetValue { return &zsetValue{} }

// newZSetLarge returns an empty sorted set in the skiplist encoding.
func newZSetLarge() *zsetValue {
	return &zsetValue{dict: newChainDict[*zslNode](0), zsl: newSkiplist()}
}

// Len is the number of members.
func (z *zsetValue) Len() int {
	if z.dict == nil {
		return len(z.lp)
	}
	return z.dict.len()
}

func (z *zsetValue) isSmall() bool { return z.dict == nil }

// Score returns the score of member.
func (z *zsetValue) Score(member string) (float64, bool) {
	if z.dict == nil {
		if i := z.lpFind(member); i >= 0 {
			return z.lp[i].score, true
		}
		return 0, false
	}
	if n := z.dict.find(member); n != nil {
		return n.val.score, true
	}
	return 0, false
}

func (z *zsetValue) lpFind(member string) int {
	for i := range z.lp {
		if z.lp[i].member == member {
			return i
		}
	}
	return -1
}

// Add inserts member with score or updates its score, converting to the
// skiplist encoding past Redis's default thresholds.
func (z *zsetValue) Add(member string, score float64) {
	z.set(member, score, defaultZSetLimits)
}

// set inserts or updates member, converting to the large encoding when
// the small one would exceed lim. It reports whether member is new.
func (z *zsetValue) set(member string, score float64, lim zsetLimits) bool {
	if z.dict == nil {
		if score == 0 {
			// The listpack encoding stores scores as text, where -0
			// reads back as 0.
			score = 0
		}
		i := z.lpFind(member)
		if i >= 0 {
			if z.lp[i].score == score {
				return false
			}
			z.lp = slices.Delete(z.lp, i, i+1)
		} else if len(z.lp)+1 > lim.entries || len(member) > lim.value {
			z.convertToSkiplist()
			return z.set(member, score, lim)
		}
		j := sort.Search(len(z.lp), func(k int) bool {
			return !zless(z.lp[k].score, z.lp[k].member, score, member)
		})
		z.lp = slices.Insert(z.lp, j, zitem{member, score})
		return i < 0
	}
	n, isNew := z.dict.upsert(member)
	if !isNew {
		if n.val.score != score {
			z.zsl.updateScore(n.val, score)
		}
		return false
	}
	n.val = z.zsl.insert(score, n.key)
	return true
}

// Remove deletes member and reports whether it was present.
func (z *zsetValue) Remove(member string) bool {
	if z.dict == nil {
		i := z.lpFind(member)
		if i < 0 {
			return false
		}
		z.lp[i] = zitem{}
		z.lp = slices.Delete(z.lp, i, i+1)
		return true
	}
	x, ok := z.dict.remove(member)
	if !ok {
		return false
	}
	z.zsl.deleteNode(x)
	return true
}

// ForEach calls fn for every member in (score, member) order until fn
// returns false.
func (z *zsetValue) ForEach(fn func(member string, score float64) bool) {
	z.rangeByRank(0, z.Len()-1, false, fn)
}

// Rank returns the 0-based ascending rank of member.
func (z *zsetValue) Rank(member string) (int, bool) {
	if z.dict == nil {
		i := z.lpFind(member)
		return i, i >= 0
	}
	n := z.dict.find(member)
	if n == nil {
		return 0, false
	}
	return z.zsl.rank(n.val.score, member) - 1, true
}

// At returns the member of 0-based ascending rank i (0 <= i < Len).
func (z *zsetValue) At(i int) (string, float64) {
	if z.dict == nil {
		return z.lp[i].member, z.lp[i].score
	}
	n := z.zsl.byRank(i + 1)
	return n.member, n.score
}

// countWhile returns how many leading members (in ascending order)
// satisfy pred, which must hold for a prefix of the order only.
func (z *zsetValue) countWhile(pred func(score float64, member string) bool) int {
	if z.dict == nil {
		return sort.Search(len(z.lp), func(k int) bool { return !pred(z.lp[k].score, z.lp[k].member) })
	}
	return z.zsl.countWhile(pred)
}

// rangeByRank calls fn for ascending ranks start..end (inclusive, clamped
// by the caller), in ascending order or, with rev, from end down to start.
func (z *zsetValue) rangeByRank(start, end int, rev bool, fn func(member string, score float64) bool) {
	if start > end || start < 0 || end >= z.Len() {
		return
	}
	if z.dict == nil {
		if rev {
			for i := end; i >= start; i-- {
				if !fn(z.lp[i].member, z.lp[i].score) {
					return
				}
			}
			return
		}
		for i := start; i <= end; i++ {
			if !fn(z.lp[i].member, z.lp[i].score) {
				return
			}
		}
		return
	}
	if rev {
		n := z.zsl.byRank(end + 1)
		for i := end; i >= start && n != nil; i-- {
			if !fn(n.member, n.score) {
				return
			}
			n = n.backward
		}
		return
	}
	n := z.zsl.byRank(start + 1)
	for i := start; i <= end && n != nil; i++ {
		if !fn(n.member, n.score) {
			return
		}
		n = n.lvl0.forward
	}
}

// removeRankRange deletes ascending ranks start..end (inclusive) and
// returns how many were removed.
func (z *zsetValue) removeRankRange(start, end int) int {
	if start > end || start < 0 || end >= z.Len() {
		return 0
	}
	if z.dict == nil {
		clear(z.lp[start : end+1])
		z.lp = slices.Delete(z.lp, start, end+1)
		return end - start + 1
	}
	removed := z.zsl.deleteRankRange(start+1, end+1, func(member string) { z.dict.remove(member) })
	return removed
}

func (z *zsetValue) convertToSkiplist() {
	if z.dict != nil {
		return
	}
	z.dict = newChainDict[*zslNode](len(z.lp))
	z.zsl = newSkiplist()
	for _, it := range z.lp {
		z.insertNew(it.member, it.score)
	}
	z.lp = nil
}

// insertNew adds a member known to be absent to a large set.
func (z *zsetValue) insertNew(member string, score float64) {
	n, _ := z.dict.upsert(member)
	n.val = z.zsl.insert(score, n.key)
}

// shrinkIfSmall converts a large set to the small encoding when it fits
// lim (used for newly built results, as Redis's
// zsetConvertToListpackIfNeeded).
func (z *zsetValue) shrinkIfSmall(lim zsetLimits) {
	if z.dict == nil || z.dict.len() > lim.entries {
		return
	}
	long := false
	z.dict.forEach(func(n *dictNode[*zslNode]) bool {
		long = len(n.key) > lim.value
		return !long
	})
	if long {
		return
	}
	lp := make([]zitem, 0, z.dict.len())
	z.ForEach(func(m string, s float64) bool {
		lp = append(lp, zitem{m, s})
		return true
	})
	z.lp, z.dict, z.zsl = lp, nil, nil
}

// ---- typedValue ----------------------------------------------------------

func (z *zsetValue) typeName() string { return "zset" }

func (z *zsetValue) encoding() string {
	if z.dict == nil {
		return "listpack"
	}
	return "skiplist"
}

func (z *zsetValue) length() int { return z.Len() }

func (z *zsetValue) clone() typedValue {
	if z.dict == nil {
		return &zsetValue{lp: slices.Clone(z.lp)}
	}
	n := newZSetLarge()
	z.ForEach(func(m string, s float64) bool {
		n.insertNew(m, s)
		return true
	})
	return n
}

func (z *zsetValue) memUsage() int64 {
	var total int64 = 48
	if z.dict == nil {
		total += int64(cap(z.lp)) * 24
		for _, it := range z.lp {
			total += int64(len(it.member))
		}
		return total
	}
	// The dict is sampled (its nodes and member bytes); each skip list
	// node adds its fixed part (with level 0) and 0.33 more levels on
	// average.
	total += z.dict.memUsage(nil)
	total += int64(z.dict.len()) * (int64(unsafe.Sizeof(zslNode{})) + 6)
	return total
}

// ---- skip list -----------------------------------------------------------

const zslMaxLevel = 32

type zslLevel struct {
	forward *zslNode
	span    int // number of level-0 links this link jumps
}

// zslNode is a skip list node. Its levels are stored inline: level 0 is
// lvl0 and levels 1.. follow it in the same allocation (see newZslNode),
// so a search step touches one or two cache lines of a node instead of a
// node plus a separate level array (and the node is 32 bytes smaller).
type zslNode struct {
	score    float64
	backward *zslNode
	member   string
	lvl0     zslLevel
}

// lv returns level i of n, which must be below n's height.
func (n *zslNode) lv(i int) *zslLevel {
	return (*zslLevel)(unsafe.Add(unsafe.Pointer(&n.lvl0), uintptr(i)*unsafe.Sizeof(zslLevel{})))
}

// skiplist is Pugh's skip list with spans (rank support) and backward
// links, ordered by (score, member).
type skiplist struct {
	header *zslNode
	tail   *zslNode
	length int
	level  int
}

func newSkiplist() *skiplist {
	return &skiplist{header: newZslNode(zslMaxLevel), level: 1}
}

// newZslNode allocates a node of height lvl with its levels inline: exact
// sizes for the common heights (a node has more than 4 levels with
// probability 1/256), the maximum height for taller ones.
func newZslNode(lvl int) *zslNode {
	switch lvl {
	case 1:
		return &zslNode{}
	case 2:
		return &(&struct {
			n zslNode
			l [1]zslLevel
		}{}).n
	case 3:
		return &(&struct {
			n zslNode
			l [2]zslLevel
		}{}).n
	case 4:
		return &(&struct {
			n zslNode
			l [3]zslLevel
		}{}).n
	}
	return &(&struct {
		n zslNode
		l [zslMaxLevel - 1]zslLevel
	}{}).n
}

func zslRandomLevel() int {
	lvl := 1
	for lvl < zslMaxLevel && rand.Uint32()&0xFFFF < 0xFFFF/4 {
		lvl++
	}
	return lvl
}

// insert adds (score, member), which must not be present.
func (zl *skiplist) insert(score float64, member string) *zslNode {
	lvl := zslRandomLevel()
	n := newZslNode(lvl)
	n.member, n.score = member, score
	zl.insertNode(n, lvl)
	return n
}

// zslPath is where a key goes in a skip list: for each level i below the
// list's level, prev[i] is the last node at that level ordered before the
// key (the header if none) and rank[i] is prev[i]'s 1-based rank (0 for
// the header).
type zslPath struct {
	prev [zslMaxLevel]*zslNode
	rank [zslMaxLevel]int
}

// insertNode links n, of height lvl (score and member set, links
// ignored), at its place.
func (zl *skiplist) insertNode(n *zslNode, lvl int) {
	score, member := n.score, n.member
	var p zslPath
	x := zl.header
	r := 0
	var stop *zslNode // not before n: a level below needs no compare with it
	for i := zl.level - 1; i >= 0; i-- {
		for f := x.lv(i).forward; f != stop && f != nil && zless(f.score, f.member, score, member); f = x.lv(i).forward {
			r += x.lv(i).span
			x = f
		}
		stop = x.lv(i).forward
		p.prev[i], p.rank[i] = x, r
	}
	zl.link(n, lvl, &p)
}

// link inserts n, of height lvl, at path p of the list without n.
func (zl *skiplist) link(n *zslNode, lvl int, p *zslPath) {
	if lvl > zl.level {
		for i := zl.level; i < lvl; i++ {
			p.rank[i] = 0
			p.prev[i] = zl.header
			p.prev[i].lv(i).span = zl.length
		}
		zl.level = lvl
	}
	r0 := p.rank[0]
	for i := 0; i < lvl; i++ {
		u := p.prev[i].lv(i)
		l := n.lv(i)
		l.forward = u.forward
		u.forward = n
		l.span = u.span - (r0 - p.rank[i])
		u.span = r0 - p.rank[i] + 1
	}
	for i := lvl; i < zl.level; i++ {
		p.prev[i].lv(i).span++
	}
	n.backward = nil
	if p.prev[0] != zl.header {
		n.backward = p.prev[0]
	}
	if f := n.lvl0.forward; f != nil {
		f.backward = n
	} else {
		zl.tail = n
	}
	zl.length++
}

func (zl *skiplist) unlink(x *zslNode, update *[zslMaxLevel]*zslNode) {
	for i := 0; i < zl.level; i++ {
		if update[i].lv(i).forward == x {
			update[i].lv(i).span += x.lv(i).span - 1
			update[i].lv(i).forward = x.lv(i).forward
		} else {
			update[i].lv(i).span--
		}
	}
	if x.lv(0).forward != nil {
		x.lv(0).forward.backward = x.backward
	} else {
		zl.tail = x.backward
	}
	for zl.level > 1 && zl.header.lv(zl.level-1).forward == nil {
		zl.level--
	}
	zl.length--
}

// deleteNode unlinks x, which must be in the list.
func (zl *skiplist) deleteNode(x *zslNode) {
	var update [zslMaxLevel]*zslNode
	score, member := x.score, x.member
	p := zl.header
	var stop *zslNode
	for i := zl.level - 1; i >= 0; i-- {
		for f := p.lv(i).forward; f != x && f != stop && f != nil && zless(f.score, f.member, score, member); f = p.lv(i).forward {
			p = f
		}
		stop = p.lv(i).forward
		update[i] = p
	}
	zl.unlink(x, &update)
}

// updateScore gives node x, which is in the list, the score nu.
//
// When x stays between its neighbours only its score changes (no search).
// Otherwise one descent from the header walks two paths side by side (the
// nodes before x's old place and the nodes before its new place, both in
// the list as it is), so the cache misses of the two walks overlap instead
// of following each other; x is then unlinked and linked again at the new
// place with its height, without allocating.
func (zl *skiplist) updateScore(x *zslNode, nu float64) {
	member := x.member
	b, f := x.backward, x.lvl0.forward
	if (b == nil || zless(b.score, b.member, nu, member)) &&
		(f == nil || zless(nu, member, f.score, f.member)) {
		x.score = nu
		return
	}
	old := x.score
	var oldPrev [zslMaxLevel]*zslNode
	var oldRank [zslMaxLevel]int
	var p zslPath
	po, pn := zl.header, zl.header
	ro, rn := 0, 0
	// so and sn are nodes known not to be before the old and the new
	// place: a front compares a node once, also across levels.
	var so, sn *zslNode
	for i := zl.level - 1; i >= 0; i-- {
		for {
			fo, fn := po.lv(i).forward, pn.lv(i).forward
			mo := fo != so && fo != x && fo != nil && zless(fo.score, fo.member, old, member)
			mn := fn != sn && fn != nil && zless(fn.score, fn.member, nu, member)
			if mo {
				ro += po.lv(i).span
				po = fo
			} else {
				so = fo
			}
			if mn {
				rn += pn.lv(i).span
				pn = fn
			} else {
				sn = fn
			}
			if !mo && !mn {
				break
			}
		}
		oldPrev[i], oldRank[i] = po, ro
		p.prev[i], p.rank[i] = pn, rn
	}
	// x's height: the levels at which its old predecessor links to it.
	h := 1
	for h < zl.level && oldPrev[h].lv(h).forward == x {
		h++
	}
	// The new path was taken with x still linked: where it stopped on x,
	// x's own predecessor takes its place, and ranks past x drop by one.
	xr := oldRank[0] + 1
	for i := 0; i < zl.level; i++ {
		if p.prev[i] == x {
			p.prev[i], p.rank[i] = oldPrev[i], oldRank[i]
		} else if p.rank[i] > xr {
			p.rank[i]--
		}
	}
	zl.unlink(x, &oldPrev)
	x.score = nu
	zl.link(x, h, &p)
}

// rank returns the 1-based rank of (score, member), 0 if absent.
func (zl *skiplist) rank(score float64, member string) int {
	r := 0
	x := zl.header
	var stop *zslNode // after (score, member): no compare again below
	for i := zl.level - 1; i >= 0; i-- {
		for f := x.lv(i).forward; f != stop && f != nil && !zless(score, member, f.score, f.member); f = x.lv(i).forward {
			r += x.lv(i).span
			x = f
		}
		stop = x.lv(i).forward
		if x != zl.header && x.member == member && x.score == score {
			return r
		}
	}
	return 0
}

// byRank returns the node of 1-based rank r, or nil.
func (zl *skiplist) byRank(r int) *zslNode {
	traversed := 0
	x := zl.header
	for i := zl.level - 1; i >= 0; i-- {
		for x.lv(i).forward != nil && traversed+x.lv(i).span <= r {
			traversed += x.lv(i).span
			x = x.lv(i).forward
		}
		if traversed == r {
			if x == zl.header {
				return nil
			}
			return x
		}
	}
	return nil
}

// countWhile counts the leading nodes satisfying a prefix predicate.
func (zl *skiplist) countWhile(pred func(score float64, member string) bool) int {
	n := 0
	x := zl.header
	for i := zl.level - 1; i >= 0; i-- {
		for f := x.lv(i).forward; f != nil && pred(f.score, f.member); f = x.lv(i).forward {
			n += x.lv(i).span
			x = f
		}
	}
	return n
}

// deleteRankRange removes 1-based ranks start..end, calling onDelete for
// each removed member.
func (zl *skiplist) deleteRankRange(start, end int, onDelete func(member string)) int {
	var update [zslMaxLevel]*zslNode
	traversed := 0
	x := zl.header
	for i := zl.level - 1; i >= 0; i-- {
		for x.lv(i).forward != nil && traversed+x.lv(i).span < start {
			traversed += x.lv(i).span
			x = x.lv(i).forward
		}
		update[i] = x
	}
	traversed++
	x = x.lv(0).forward
	removed := 0
	for x != nil && traversed <= end {
		next := x.lv(0).forward
		zl.unlink(x, &update)
		onDelete(x.member)
		removed++
		traversed++
		x = next
	}
	return removed
}

// prefetchZSetMembers is the pipelined member prefetch for a large sorted
// set: it loads the dict bucket, dict node and member bytes of each of ms
// (as prefetchDict), then the member's skip list node and its two level-0
// neighbours, which a score update reads first (the in-place check), each
// step for all members before the next so the misses overlap. A dict node
// is taken by its hash alone (a rare wrong guess only wastes loads). The
// sum only keeps the loads.
func prefetchZSetMembers(d *chainDict[*zslNode], ms [][]byte) uint32 {
	if len(d.buckets) == 0 {
		return 0
	}
	var hs [maxPrefetch]uint32
	var heads [maxPrefetch]*dictNode[*zslNode]
	for i, m := range ms {
		hs[i] = dictHash(bstr(m))
		heads[i] = d.buckets[d.bucketOf(hs[i])]
	}
	var xs [maxPrefetch]*zslNode
	var sink uint64
	k := 0
	for i := range ms {
		for n := heads[i]; n != nil; n = n.next {
			if n.hash == hs[i] {
				if len(n.key) > 0 {
					sink += uint64(*unsafe.StringData(n.key))
				}
				xs[k] = n.val
				k++
				break
			}
		}
	}
	for _, x := range xs[:k] {
		sink += math.Float64bits(x.score)
	}
	for _, x := range xs[:k] {
		if b := x.backward; b != nil {
			sink += math.Float64bits(b.score)
		}
		if f := x.lvl0.forward; f != nil {
			sink += math.Float64bits(f.score)
		}
	}
	return uint32(sink)
}
