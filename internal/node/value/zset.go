package value

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"unsafe"
)

// ZSet is a sorted set: members ordered by (score, member bytes).
//
// Small sets (at most zset-max-listpack-entries members, none longer than
// zset-max-listpack-value bytes) are a sorted slice ("listpack"); larger
// ones are a map member→score plus a skip list with spans ("skiplist"),
// which gives rank, select-by-rank and range lookups in O(log n). Like
// Redis, a set never converts back to the small encoding by removals; only
// newly built results (ZUNIONSTORE, ZRANGESTORE ...) pick the small one.
//
// Persistence and replication walk and rebuild values with NewZSet, Len,
// Add, Score, Remove and ForEach (in order).
type ZSet struct {
	// lp holds the small encoding, sorted; used when Dict == nil.
	lp []ZItem
	// Dict and Zsl hold the large encoding; member strings are shared.
	// Dict maps a member to its skip list node (which holds the score),
	// so a score update starts from the node; it is a Dict (not a
	// Go map) for ZSCAN's stable cursor.
	Dict *Dict[*SkipNode]
	Zsl  *Skiplist
}

// ZItem is one member of the small encoding.
type ZItem struct {
	Member string  // the member
	Score  float64 // its score
}

// ZSetLimits are the small-encoding thresholds of the running server.
type ZSetLimits struct {
	Entries int // zset-max-listpack-entries
	Value   int // zset-max-listpack-value
}

// defaultZSetLimits are Redis's defaults, used by Add.
var defaultZSetLimits = ZSetLimits{Entries: 128, Value: 64}

// Zless orders (score, member) pairs as Redis does.
func Zless(s1 float64, m1 string, s2 float64, m2 string) bool {
	return s1 < s2 || (s1 == s2 && m1 < m2)
}

// NewZSet returns an empty sorted set in the small encoding.
func NewZSet() *ZSet { return &ZSet{} }

// NewZSetLarge returns an empty sorted set in the skiplist encoding.
func NewZSetLarge() *ZSet {
	return &ZSet{Dict: newChainDict[*SkipNode](0), Zsl: newSkiplist()}
}

// Len is the number of members.
func (z *ZSet) Len() int {
	if z.Dict == nil {
		return len(z.lp)
	}
	return z.Dict.len()
}

// IsSmall reports whether z is in the small (listpack) encoding.
func (z *ZSet) IsSmall() bool { return z.Dict == nil }

// Score returns the score of member.
func (z *ZSet) Score(member string) (float64, bool) {
	if z.Dict == nil {
		if i := z.lpFind(member); i >= 0 {
			return z.lp[i].Score, true
		}
		return 0, false
	}
	if n := z.Dict.find(member); n != nil {
		return n.Val.Score, true
	}
	return 0, false
}

func (z *ZSet) lpFind(member string) int {
	for i := range z.lp {
		if z.lp[i].Member == member {
			return i
		}
	}
	return -1
}

// Add inserts member with score or updates its score, converting to the
// skiplist encoding past Redis's default thresholds.
func (z *ZSet) Add(member string, score float64) {
	z.Set(member, score, defaultZSetLimits)
}

// Set inserts or updates member, converting to the large encoding when
// the small one would exceed lim. It reports whether member is new.
func (z *ZSet) Set(member string, score float64, lim ZSetLimits) bool {
	if z.Dict == nil {
		if score == 0 {
			// The listpack encoding stores scores as text, where -0
			// reads back as 0.
			score = 0
		}
		i := z.lpFind(member)
		if i >= 0 {
			if z.lp[i].Score == score {
				return false
			}
			z.lp = slices.Delete(z.lp, i, i+1)
		} else if len(z.lp)+1 > lim.Entries || len(member) > lim.Value {
			z.convertToSkiplist()
			return z.Set(member, score, lim)
		}
		j := sort.Search(len(z.lp), func(k int) bool {
			return !Zless(z.lp[k].Score, z.lp[k].Member, score, member)
		})
		z.lp = slices.Insert(z.lp, j, ZItem{member, score})
		return i < 0
	}
	n, isNew := z.Dict.upsert(member)
	if !isNew {
		if n.Val.Score != score {
			z.Zsl.UpdateScore(n.Val, score)
		}
		return false
	}
	n.Val = z.Zsl.insert(score, n.Key)
	return true
}

// Remove deletes member and reports whether it was present.
func (z *ZSet) Remove(member string) bool {
	if z.Dict == nil {
		i := z.lpFind(member)
		if i < 0 {
			return false
		}
		z.lp[i] = ZItem{}
		z.lp = slices.Delete(z.lp, i, i+1)
		return true
	}
	x, ok := z.Dict.remove(member)
	if !ok {
		return false
	}
	z.Zsl.deleteNode(x)
	return true
}

// ForEach calls fn for every member in (score, member) order until fn
// returns false.
func (z *ZSet) ForEach(fn func(member string, score float64) bool) {
	z.RangeByRank(0, z.Len()-1, false, fn)
}

// Rank returns the 0-based ascending rank of member.
func (z *ZSet) Rank(member string) (int, bool) {
	if z.Dict == nil {
		i := z.lpFind(member)
		return i, i >= 0
	}
	n := z.Dict.find(member)
	if n == nil {
		return 0, false
	}
	return z.Zsl.rank(n.Val.Score, member) - 1, true
}

// At returns the member of 0-based ascending rank i (0 <= i < Len).
func (z *ZSet) At(i int) (string, float64) {
	if z.Dict == nil {
		return z.lp[i].Member, z.lp[i].Score
	}
	n := z.Zsl.byRank(i + 1)
	return n.member, n.Score
}

// CountWhile returns how many leading members (in ascending order)
// satisfy pred, which must hold for a prefix of the order only.
func (z *ZSet) CountWhile(pred func(score float64, member string) bool) int {
	if z.Dict == nil {
		return sort.Search(len(z.lp), func(k int) bool { return !pred(z.lp[k].Score, z.lp[k].Member) })
	}
	return z.Zsl.countWhile(pred)
}

// RangeByRank calls fn for ascending ranks start..end (inclusive, clamped
// by the caller), in ascending order or, with rev, from end down to start.
func (z *ZSet) RangeByRank(start, end int, rev bool, fn func(member string, score float64) bool) {
	if start > end || start < 0 || end >= z.Len() {
		return
	}
	if z.Dict == nil {
		if rev {
			for i := end; i >= start; i-- {
				if !fn(z.lp[i].Member, z.lp[i].Score) {
					return
				}
			}
			return
		}
		for i := start; i <= end; i++ {
			if !fn(z.lp[i].Member, z.lp[i].Score) {
				return
			}
		}
		return
	}
	if rev {
		n := z.Zsl.byRank(end + 1)
		for i := end; i >= start && n != nil; i-- {
			if !fn(n.member, n.Score) {
				return
			}
			n = n.backward
		}
		return
	}
	n := z.Zsl.byRank(start + 1)
	for i := start; i <= end && n != nil; i++ {
		if !fn(n.member, n.Score) {
			return
		}
		n = n.lvl0.forward
	}
}

// RemoveRankRange deletes ascending ranks start..end (inclusive) and
// returns how many were removed.
func (z *ZSet) RemoveRankRange(start, end int) int {
	if start > end || start < 0 || end >= z.Len() {
		return 0
	}
	if z.Dict == nil {
		clear(z.lp[start : end+1])
		z.lp = slices.Delete(z.lp, start, end+1)
		return end - start + 1
	}
	removed := z.Zsl.deleteRankRange(start+1, end+1, func(member string) { z.Dict.remove(member) })
	return removed
}

func (z *ZSet) convertToSkiplist() {
	if z.Dict != nil {
		return
	}
	z.Dict = newChainDict[*SkipNode](len(z.lp))
	z.Zsl = newSkiplist()
	for _, it := range z.lp {
		z.InsertNew(it.Member, it.Score)
	}
	z.lp = nil
}

// InsertNew adds a member known to be absent to a large set.
func (z *ZSet) InsertNew(member string, score float64) {
	n, _ := z.Dict.upsert(member)
	n.Val = z.Zsl.insert(score, n.Key)
}

// ShrinkIfSmall converts a large set to the small encoding when it fits
// lim (used for newly built results, as Redis's
// zsetConvertToListpackIfNeeded).
func (z *ZSet) ShrinkIfSmall(lim ZSetLimits) {
	if z.Dict == nil || z.Dict.len() > lim.Entries {
		return
	}
	long := false
	z.Dict.ForEach(func(n *DictNode[*SkipNode]) bool {
		long = len(n.Key) > lim.Value
		return !long
	})
	if long {
		return
	}
	lp := make([]ZItem, 0, z.Dict.len())
	z.ForEach(func(m string, s float64) bool {
		lp = append(lp, ZItem{m, s})
		return true
	})
	z.lp, z.Dict, z.Zsl = lp, nil, nil
}

// ---- Value ----------------------------------------------------------

// TypeName returns "zset" (TYPE).
func (z *ZSet) TypeName() string { return "zset" }

// Encoding returns the OBJECT ENCODING name of the current encoding.
func (z *ZSet) Encoding() string {
	if z.Dict == nil {
		return "listpack"
	}
	return "skiplist"
}

// Length is Len, for the Value interface.
func (z *ZSet) Length() int { return z.Len() }

// Clone returns a deep copy in the same encoding (COPY).
func (z *ZSet) Clone() Value {
	if z.Dict == nil {
		return &ZSet{lp: slices.Clone(z.lp)}
	}
	n := NewZSetLarge()
	z.ForEach(func(m string, s float64) bool {
		n.InsertNew(m, s)
		return true
	})
	return n
}

func (z *ZSet) MemUsage() int64 {
	var total int64 = 48
	if z.Dict == nil {
		total += int64(cap(z.lp)) * 24
		for _, it := range z.lp {
			total += int64(len(it.Member))
		}
		return total
	}
	// The dict is sampled (its nodes and member bytes); each skip list
	// node adds its fixed part (with level 0) and 0.33 more levels on
	// average.
	total += z.Dict.memUsage(nil)
	total += int64(z.Dict.len()) * (int64(unsafe.Sizeof(SkipNode{})) + 6)
	return total
}

// ---- skip list -----------------------------------------------------------

const zslMaxLevel = 32

type zslLevel struct {
	forward *SkipNode
	span    int // number of level-0 links this link jumps
}

// SkipNode is a skip list node. Its levels are stored inline: level 0 is
// lvl0 and levels 1.. follow it in the same allocation (see newZslNode),
// so a search step touches one or two cache lines of a node instead of a
// node plus a separate level array (and the node is 32 bytes smaller).
type SkipNode struct {
	// Score is the member's score.
	Score    float64
	backward *SkipNode
	member   string
	lvl0     zslLevel
}

// lv returns level i of n, which must be below n's height.
func (n *SkipNode) lv(i int) *zslLevel {
	return (*zslLevel)(unsafe.Add(unsafe.Pointer(&n.lvl0), uintptr(i)*unsafe.Sizeof(zslLevel{})))
}

// Skiplist is Pugh's skip list with spans (rank support) and backward
// links, ordered by (score, member).
type Skiplist struct {
	header *SkipNode
	tail   *SkipNode
	Length int // number of nodes
	level  int
}

func newSkiplist() *Skiplist {
	return &Skiplist{header: newZslNode(zslMaxLevel), level: 1}
}

// newZslNode allocates a node of height lvl with its levels inline: exact
// sizes for the common heights (a node has more than 4 levels with
// probability 1/256), the maximum height for taller ones.
func newZslNode(lvl int) *SkipNode {
	switch lvl {
	case 1:
		return &SkipNode{}
	case 2:
		return &(&struct {
			n SkipNode
			l [1]zslLevel
		}{}).n
	case 3:
		return &(&struct {
			n SkipNode
			l [2]zslLevel
		}{}).n
	case 4:
		return &(&struct {
			n SkipNode
			l [3]zslLevel
		}{}).n
	}
	return &(&struct {
		n SkipNode
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
func (zl *Skiplist) insert(score float64, member string) *SkipNode {
	lvl := zslRandomLevel()
	n := newZslNode(lvl)
	n.member, n.Score = member, score
	zl.insertNode(n, lvl)
	return n
}

// zslPath is where a key goes in a skip list: for each level i below the
// list's level, prev[i] is the last node at that level ordered before the
// key (the header if none) and rank[i] is prev[i]'s 1-based rank (0 for
// the header).
type zslPath struct {
	prev [zslMaxLevel]*SkipNode
	rank [zslMaxLevel]int
}

// insertNode links n, of height lvl (score and member set, links
// ignored), at its place.
func (zl *Skiplist) insertNode(n *SkipNode, lvl int) {
	score, member := n.Score, n.member
	var p zslPath
	x := zl.header
	r := 0
	var stop *SkipNode // not before n: a level below needs no compare with it
	for i := zl.level - 1; i >= 0; i-- {
		for f := x.lv(i).forward; f != stop && f != nil && Zless(f.Score, f.member, score, member); f = x.lv(i).forward {
			r += x.lv(i).span
			x = f
		}
		stop = x.lv(i).forward
		p.prev[i], p.rank[i] = x, r
	}
	zl.link(n, lvl, &p)
}

// link inserts n, of height lvl, at path p of the list without n.
func (zl *Skiplist) link(n *SkipNode, lvl int, p *zslPath) {
	if lvl > zl.level {
		for i := zl.level; i < lvl; i++ {
			p.rank[i] = 0
			p.prev[i] = zl.header
			p.prev[i].lv(i).span = zl.Length
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
	zl.Length++
}

func (zl *Skiplist) unlink(x *SkipNode, update *[zslMaxLevel]*SkipNode) {
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
	zl.Length--
}

// deleteNode unlinks x, which must be in the list.
func (zl *Skiplist) deleteNode(x *SkipNode) {
	var update [zslMaxLevel]*SkipNode
	score, member := x.Score, x.member
	p := zl.header
	var stop *SkipNode
	for i := zl.level - 1; i >= 0; i-- {
		for f := p.lv(i).forward; f != x && f != stop && f != nil && Zless(f.Score, f.member, score, member); f = p.lv(i).forward {
			p = f
		}
		stop = p.lv(i).forward
		update[i] = p
	}
	zl.unlink(x, &update)
}

// UpdateScore gives node x, which is in the list, the score nu.
//
// When x stays between its neighbours only its score changes (no search).
// Otherwise one descent from the header walks two paths side by side (the
// nodes before x's old place and the nodes before its new place, both in
// the list as it is), so the cache misses of the two walks overlap instead
// of following each other; x is then unlinked and linked again at the new
// place with its height, without allocating.
func (zl *Skiplist) UpdateScore(x *SkipNode, nu float64) {
	member := x.member
	b, f := x.backward, x.lvl0.forward
	if (b == nil || Zless(b.Score, b.member, nu, member)) &&
		(f == nil || Zless(nu, member, f.Score, f.member)) {
		x.Score = nu
		return
	}
	old := x.Score
	var oldPrev [zslMaxLevel]*SkipNode
	var oldRank [zslMaxLevel]int
	var p zslPath
	po, pn := zl.header, zl.header
	ro, rn := 0, 0
	// so and sn are nodes known not to be before the old and the new
	// place: a front compares a node once, also across levels.
	var so, sn *SkipNode
	for i := zl.level - 1; i >= 0; i-- {
		for {
			fo, fn := po.lv(i).forward, pn.lv(i).forward
			mo := fo != so && fo != x && fo != nil && Zless(fo.Score, fo.member, old, member)
			mn := fn != sn && fn != nil && Zless(fn.Score, fn.member, nu, member)
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
	x.Score = nu
	zl.link(x, h, &p)
}

// rank returns the 1-based rank of (score, member), 0 if absent.
func (zl *Skiplist) rank(score float64, member string) int {
	r := 0
	x := zl.header
	var stop *SkipNode // after (score, member): no compare again below
	for i := zl.level - 1; i >= 0; i-- {
		for f := x.lv(i).forward; f != stop && f != nil && !Zless(score, member, f.Score, f.member); f = x.lv(i).forward {
			r += x.lv(i).span
			x = f
		}
		stop = x.lv(i).forward
		if x != zl.header && x.member == member && x.Score == score {
			return r
		}
	}
	return 0
}

// byRank returns the node of 1-based rank r, or nil.
func (zl *Skiplist) byRank(r int) *SkipNode {
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
func (zl *Skiplist) countWhile(pred func(score float64, member string) bool) int {
	n := 0
	x := zl.header
	for i := zl.level - 1; i >= 0; i-- {
		for f := x.lv(i).forward; f != nil && pred(f.Score, f.member); f = x.lv(i).forward {
			n += x.lv(i).span
			x = f
		}
	}
	return n
}

// deleteRankRange removes 1-based ranks start..end, calling onDelete for
// each removed member.
func (zl *Skiplist) deleteRankRange(start, end int, onDelete func(member string)) int {
	var update [zslMaxLevel]*SkipNode
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

// PrefetchZSetMembers is the pipelined member prefetch for a large sorted
// set: it loads the dict bucket, dict node and member bytes of each of ms
// (as prefetchDict), then the member's skip list node and its two level-0
// neighbours, which a score update reads first (the in-place check), each
// step for all members before the next so the misses overlap. A dict node
// is taken by its hash alone (a rare wrong guess only wastes loads). The
// sum only keeps the loads.
func PrefetchZSetMembers(d *Dict[*SkipNode], ms [][]byte) uint32 {
	if len(d.Buckets) == 0 {
		return 0
	}
	var hs [MaxPrefetch]uint32
	var heads [MaxPrefetch]*DictNode[*SkipNode]
	for i, m := range ms {
		hs[i] = DictHash(bstr(m))
		heads[i] = d.Buckets[d.BucketOf(hs[i])]
	}
	var xs [MaxPrefetch]*SkipNode
	var sink uint64
	k := 0
	for i := range ms {
		for n := heads[i]; n != nil; n = n.next {
			if n.Hash == hs[i] {
				if len(n.Key) > 0 {
					sink += uint64(*unsafe.StringData(n.Key))
				}
				xs[k] = n.Val
				k++
				break
			}
		}
	}
	for _, x := range xs[:k] {
		sink += math.Float64bits(x.Score)
	}
	for _, x := range xs[:k] {
		if b := x.backward; b != nil {
			sink += math.Float64bits(b.Score)
		}
		if f := x.lvl0.forward; f != nil {
			sink += math.Float64bits(f.Score)
		}
	}
	return uint32(sink)
}
