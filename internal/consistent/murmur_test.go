package consistent

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// vectorsPath is the Jedis vector file (a copy of the project's
// shared/testdata one, so that the test runs from a plain checkout).
var vectorsPath = filepath.Join("testdata", "jedis_sharding_vectors.tsv")

func unescapeVector(t *testing.T, s string) string {
	t.Helper()
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		default:
			t.Fatalf("bad escape \\%c in %q", s[i], s)
		}
	}
	return b.String()
}

func parseShards(t *testing.T, spec string) []Shard {
	t.Helper()
	var shards []Shard
	for _, f := range strings.Split(spec, ",") {
		name, w, ok := strings.Cut(f, ":")
		if !ok {
			t.Fatalf("bad shard %q", f)
		}
		weight, err := strconv.Atoi(w)
		if err != nil {
			t.Fatalf("bad weight in %q: %v", f, err)
		}
		if name == "-" {
			name = ""
		}
		shards = append(shards, Shard{Name: name, Weight: weight})
	}
	return shards
}

// TestJedisVectors checks every row of the vector file produced by the real
// Jedis classes: the hash vectors (#H lines) and the key placements.
func TestJedisVectors(t *testing.T) {
	f, err := os.Open(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	rings := map[string]*Murmur{}
	var hashes, placements int
	perRing := map[string]int{}
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if strings.HasPrefix(text, "#H\t") {
			fields := strings.Split(text, "\t")
			if len(fields) != 3 {
				t.Fatalf("line %d: bad hash vector %q", line, text)
			}
			key := unescapeVector(t, fields[1])
			want, err := strconv.ParseInt(fields[2], 10, 64)
			if err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
			if got := MurmurHash64A([]byte(key), murmurSeed); got != want {
				t.Errorf("line %d: MurmurHash64A(%q) = %d, want %d", line, key, got, want)
			}
			if got := murmurString(key); got != want {
				t.Errorf("line %d: murmurString(%q) = %d, want %d", line, key, got, want)
			}
			hashes++
			continue
		}
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Split(text, "\t")
		if len(fields) != 5 {
			t.Fatalf("line %d: %d fields, want 5: %q", line, len(fields), text)
		}
		id, spec, tags, key := fields[0], fields[1], fields[2], unescapeVector(t, fields[3])
		want, err := strconv.Atoi(fields[4])
		if err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		ringKey := id + "\t" + spec + "\t" + tags
		r := rings[ringKey]
		if r == nil {
			opt := MurmurOptions{KeyTags: tags == "tag"}
			switch {
			case tags != "tag" && tags != "notag":
				t.Fatalf("line %d: bad key-tag mode %q", line, tags)
			case strings.HasSuffix(id, "-jedis2"):
				opt.Labels = LabelsJedis2
			}
			r = NewMurmur(parseShards(t, spec), opt)
			rings[ringKey] = r
		}
		if got := r.Get(key); got != want {
			t.Errorf("line %d: ring %s Get(%q) = %d, want %d", line, id, key, got, want)
		}
		placements++
		perRing[id]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if hashes == 0 || placements == 0 {
		t.Fatalf("read %d hash vectors and %d placements; the file looks truncated", hashes, placements)
	}
	t.Logf("checked %d hash vectors and %d placements over %d rings: %v", hashes, placements, len(rings), perRing)
}

func TestMurmurHashKnown(t *testing.T) {
	// Lengths 0..17 cover every tail size and several full blocks; the
	// reference values are from the []byte and string variants agreeing
	// with each other plus the Jedis vectors above.
	for n := 0; n <= 17; n++ {
		s := strings.Repeat("x", n)
		if a, b := MurmurHash64A([]byte(s), murmurSeed), murmurString(s); a != b {
			t.Errorf("len %d: []byte %d != string %d", n, a, b)
		}
	}
	if got, want := murmurString("foo"), int64(-7063922479176959649); got != want {
		t.Errorf("hash(foo) = %d, want %d", got, want)
	}
}

func TestJedisKeyTag(t *testing.T) {
	tests := []struct{ key, want string }{
		{"foo", "foo"},
		{"{user1000}.following", "user1000"},
		{"foo{bar}", "bar"},
		{"{}x}", "}x"},
		{"{{x}}", "{x"},
		{"x{}y{z}", "}y{z"},
		{"{a}{b}", "a"},
		{"{}", "{}"},
		{"{", "{"},
		{"}{", "}{"},
		{"{a\n}{b}", "b"},
		{"{\n}", "{\n}"},
		{"{\r}x", "{\r}x"},
		{"{a\u2028b}{c}", "c"},
		{"{a\u0085}", "{a\u0085}"},
		{"{日本}", "日本"},
		{"{é}", "é"},
		{"a{b", "a{b"},
	}
	for _, tt := range tests {
		if got := JedisKeyTag(tt.key); got != tt.want {
			t.Errorf("JedisKeyTag(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestMurmurDuplicatePointLaterShardWins(t *testing.T) {
	// Two unnamed rings differ only in labels; two shards with the same
	// name produce identical points, and the later one must own them all.
	r := NewMurmur([]Shard{{Name: "same"}, {Name: "same"}}, MurmurOptions{})
	for i := range 1000 {
		if got := r.Get(strconv.Itoa(i)); got != 1 {
			t.Fatalf("key %d on shard %d, want 1 (later shard overwrites)", i, got)
		}
	}
	if len(r.points) != vnodesPerWeight {
		t.Fatalf("%d points, want %d", len(r.points), vnodesPerWeight)
	}
}

func TestMurmurWeightZeroIsOne(t *testing.T) {
	a := NewMurmur([]Shard{{}, {Weight: 0}, {Weight: 1}}, MurmurOptions{})
	b := NewMurmur([]Shard{{Weight: 1}, {Weight: 1}, {Weight: 1}}, MurmurOptions{})
	for i := range 2000 {
		k := fmt.Sprintf("key:%d", i)
		if a.Get(k) != b.Get(k) {
			t.Fatalf("weight 0 differs from weight 1 for %q", k)
		}
	}
}

func TestMurmurWrapsToFirstPoint(t *testing.T) {
	r := NewMurmur([]Shard{{}, {}, {}}, MurmurOptions{})
	last := r.points[len(r.points)-1]
	// Find a key hashing above the last point; it must go to the owner of
	// the first point.
	for i := range 1_000_000 {
		k := "wrap" + strconv.Itoa(i)
		if murmurString(k) > last {
			if got, want := r.Get(k), int(r.owners[0]); got != want {
				t.Fatalf("Get(%q) = %d, want first point's owner %d", k, got, want)
			}
			return
		}
	}
	t.Fatal("no key hashed above the last point")
}

// TestMurmurDistribution checks that equal shards get about equal shares
// and that weights scale the share.
func TestMurmurDistribution(t *testing.T) {
	const keys = 200_000
	for _, tc := range []struct {
		name    string
		shards  []Shard
		weights []float64
	}{
		{"4 equal", []Shard{{}, {}, {}, {}}, []float64{1, 1, 1, 1}},
		{"named", []Shard{{Name: "a"}, {Name: "b"}, {Name: "c"}}, []float64{1, 1, 1}},
		{"weighted 1:2:3", []Shard{{Weight: 1}, {Weight: 2}, {Weight: 3}}, []float64{1, 2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewMurmur(tc.shards, MurmurOptions{})
			counts := make([]int, len(tc.shards))
			for i := range keys {
				counts[r.Get("user:"+strconv.Itoa(i))]++
			}
			var total float64
			for _, w := range tc.weights {
				total += w
			}
			for i, c := range counts {
				want := keys * tc.weights[i] / total
				if dev := (float64(c) - want) / want; dev > 0.25 || dev < -0.25 {
					t.Errorf("shard %d got %d keys, want about %.0f (%.1f%% off)", i, c, want, dev*100)
				}
			}
			t.Logf("counts %v", counts)
		})
	}
}

// TestMurmurRemapping checks that adding a shard at the end of an unnamed
// ring moves about 1/N of the keys, all of them to the new shard.
func TestMurmurRemapping(t *testing.T) {
	const keys = 100_000
	for n := 2; n <= 8; n++ {
		before := NewMurmur(make([]Shard, n), MurmurOptions{})
		after := NewMurmur(make([]Shard, n+1), MurmurOptions{})
		moved := 0
		for i := range keys {
			k := "k" + strconv.Itoa(i)
			a, b := before.Get(k), after.Get(k)
			if a != b {
				moved++
				if b != n {
					t.Fatalf("n=%d: %q moved from %d to old shard %d", n, k, a, b)
				}
			}
		}
		frac, want := float64(moved)/keys, 1/float64(n+1)
		if frac < want*0.7 || frac > want*1.3 {
			t.Errorf("n=%d -> %d: moved %.3f of keys, want about %.3f", n, n+1, frac, want)
		}
	}
}

func BenchmarkMurmurGet(b *testing.B) {
	for _, tc := range []struct {
		name string
		opt  MurmurOptions
	}{{"notag", MurmurOptions{}}, {"tag", MurmurOptions{KeyTags: true}}} {
		b.Run(tc.name, func(b *testing.B) {
			r := NewMurmur([]Shard{{}, {}, {}, {}, {}, {}, {}, {}}, tc.opt)
			keys := make([]string, 1024)
			for i := range keys {
				keys[i] = "user:" + strconv.Itoa(i*7919)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				_ = r.Get(keys[i&1023])
			}
		})
	}
}
