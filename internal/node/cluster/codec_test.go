package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func testName(c byte) Name {
	var n Name
	for i := range n {
		n[i] = "0123456789abcdef"[(int(c)+i)%16]
	}
	return n
}

// testHeader returns a header with every field set to a distinct value, so
// that a swapped or misplaced field shows in a round trip.
func testHeader(t MsgType) Header {
	h := Header{
		Port:         7001,
		Type:         t,
		CurrentEpoch: 0x0102030405060708,
		ConfigEpoch:  0x1112131415161718,
		Offset:       0x2122232425262728,
		Sender:       testName(1),
		SlaveOf:      testName(2),
		PPort:        7002,
		CPort:        17001,
		Flags:        FlagMaster | FlagMyself,
		State:        StateFail,
		MFlags:       [3]byte{MFlagPaused, 0x20, 0x30},
	}
	for _, s := range []int{0, 1, 7, 8, 5460, 5461, 16383} {
		h.MySlots.Set(s)
	}
	h.SetIP("127.0.0.1")
	return h
}

func testGossip(n int) []Gossip {
	var g []Gossip
	for i := 0; i < n; i++ {
		e := Gossip{
			Name: testName(byte(10 + i)), PingSent: uint32(1700000000 + i), PongReceived: uint32(1700000100 + i),
			Port: uint16(7000 + i), CPort: uint16(17000 + i), Flags: FlagSlave | FlagPFail, PPort: uint16(8000 + i),
		}
		e.IP = ipField(fmt.Sprintf("10.0.%d.%d", i/256, i%256))
		g = append(g, e)
	}
	return g
}

// wantDecoded is m as Decode returns it after Encode: the computed header
// fields filled in.
func wantDecoded(m Msg) *Msg {
	m.Totlen = uint32(EncodedLen(&m))
	m.Ver = ProtoVer
	if isPingType(m.Type) {
		m.Count = uint16(len(m.Gossip))
		m.Extensions = uint16(len(m.Exts))
		if len(m.Exts) > 0 {
			m.MFlags[0] |= MFlagExtData
		}
	}
	return &m
}

func roundTrip(t *testing.T, m Msg) []byte {
	t.Helper()
	b := Encode(&m)
	if len(b) != EncodedLen(&m) {
		t.Fatalf("len(Encode) = %d, EncodedLen = %d", len(b), EncodedLen(&m))
	}
	n, err := PacketLen(b[:8])
	if err != nil || n != len(b) {
		t.Fatalf("PacketLen = %d, %v; want %d", n, err, len(b))
	}
	got, err := Decode(b)
	if m.Type >= TypeCount {
		if !errors.Is(err, ErrUnknownType) {
			t.Fatalf("Decode unknown type: err = %v, want ErrUnknownType", err)
		}
	} else if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if want := wantDecoded(m); !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	hostExt := func(h string) []Ext { return []Ext{{Type: ExtHostname, Data: []byte(h)}} }
	cases := []struct {
		name string
		m    Msg
		len  int
	}{
		{"ping/0 gossip", Msg{Header: testHeader(TypePing)}, HeaderLen},
		{"ping/1 gossip", Msg{Header: testHeader(TypePing), Gossip: testGossip(1)}, HeaderLen + GossipLen},
		{"ping/many gossip", Msg{Header: testHeader(TypePing), Gossip: testGossip(300)}, HeaderLen + 300*GossipLen},
		{"pong/hostname", Msg{Header: testHeader(TypePong), Gossip: testGossip(3), Exts: hostExt("host-a")}, HeaderLen + 3*GossipLen + 16},
		{"meet/hostname 7 bytes", Msg{Header: testHeader(TypeMeet), Exts: hostExt("1234567")}, HeaderLen + 16},
		{"meet/hostname 8 bytes", Msg{Header: testHeader(TypeMeet), Exts: hostExt("12345678")}, HeaderLen + 24},
		{"ping/hostname 1 byte", Msg{Header: testHeader(TypePing), Gossip: testGossip(2), Exts: hostExt("h")}, HeaderLen + 2*GossipLen + 16},
		{"ping/hostname 255 bytes", Msg{Header: testHeader(TypePing), Gossip: testGossip(1), Exts: hostExt(strings.Repeat("x", 255))}, HeaderLen + GossipLen + 8 + 256},
		{"pong/hostname and unknown ext", Msg{Header: testHeader(TypePong), Gossip: testGossip(4),
			Exts: []Ext{{Type: ExtHostname, Data: []byte("abc")}, {Type: 77, Data: []byte("12345678abcdefgh")}}}, HeaderLen + 4*GossipLen + 16 + 24},
		{"pong/flag set no ext", Msg{Header: func() Header { h := testHeader(TypePong); h.MFlags[0] |= MFlagExtData; return h }()}, HeaderLen},
		{"fail", Msg{Header: testHeader(TypeFail), FailAbout: testName(9)}, HeaderLen + NameLen},
		{"publish", Msg{Header: testHeader(TypePublish), Channel: []byte("news"), Message: []byte("hello\x00world")}, HeaderLen + 8 + 4 + 11},
		{"publish/empty", Msg{Header: testHeader(TypePublish), Channel: []byte{}, Message: []byte{}}, HeaderLen + 8},
		{"publishshard", Msg{Header: testHeader(TypePublishShard), Channel: []byte("{a}ch"), Message: bytes.Repeat([]byte("m"), 5000)}, HeaderLen + 8 + 5 + 5000},
		{"failover auth request", Msg{Header: func() Header { h := testHeader(TypeFailoverAuthRequest); h.MFlags[0] = MFlagForceAck; return h }()}, HeaderLen},
		{"failover auth ack", Msg{Header: testHeader(TypeFailoverAuthAck)}, HeaderLen},
		{"mfstart", Msg{Header: testHeader(TypeMFStart)}, HeaderLen},
		{"update", Msg{Header: testHeader(TypeUpdate), UpdateConfigEpoch: 0x3132333435363738, UpdateNode: testName(5),
			UpdateSlots: func() *SlotBitmap { var b SlotBitmap; b.Set(3); b.Set(16383); return &b }()}, HeaderLen + 8 + NameLen + 2048},
		{"module", Msg{Header: testHeader(TypeModule), ModuleID: 0x4142434445464748, ModuleType: 200, ModuleData: []byte("payload")}, HeaderLen + 13 + 7},
		{"module/empty", Msg{Header: testHeader(TypeModule), ModuleData: []byte{}}, HeaderLen + 13},
		{"unknown type", Msg{Header: testHeader(MsgType(42)), Body: []byte("whatever follows")}, HeaderLen + 16},
		{"fail with count and extensions", Msg{Header: func() Header { h := testHeader(TypeFail); h.Count, h.Extensions = 3, 4; return h }(), FailAbout: testName(3)}, HeaderLen + NameLen},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := roundTrip(t, c.m)
			if len(b) != c.len {
				t.Fatalf("encoded length %d, want %d", len(b), c.len)
			}
		})
	}
}

// TestRoundTripPingMatrix round-trips PING, PONG and MEET with 0, 1 and
// many gossip entries and hostnames of every length around the 8-byte
// alignment, checking totlen and the zero padding after the hostname.
func TestRoundTripPingMatrix(t *testing.T) {
	for _, typ := range []MsgType{TypePing, TypePong, TypeMeet} {
		for _, ng := range []int{0, 1, 2, 17} {
			for hl := -1; hl <= 17; hl++ { // -1: no hostname extension
				m := Msg{Header: testHeader(typ), Gossip: testGossip(ng)}
				want := HeaderLen + ng*GossipLen
				if hl >= 0 {
					m.Exts = []Ext{{Type: ExtHostname, Data: []byte(strings.Repeat("h", hl))}}
					want += 8 + (hl+1+7)/8*8
				}
				t.Run(fmt.Sprintf("%s/gossip=%d/hostname=%d", typeName(typ), ng, hl), func(t *testing.T) {
					b := roundTrip(t, m)
					if len(b) != want || len(b)%8 != 0 {
						t.Fatalf("totlen %d, want %d (8-byte aligned)", len(b), want)
					}
					if hl >= 0 {
						ext := b[HeaderLen+ng*GossipLen:]
						if binary.BigEndian.Uint32(ext) != uint32(len(ext)) || !bytes.Equal(ext[8+hl:], make([]byte, len(ext)-8-hl)) {
							t.Fatalf("extension %x", ext)
						}
					}
					if got, _ := Decode(b); got.Hostname() != strings.Repeat("h", max(hl, 0)) {
						t.Fatalf("Hostname() = %q", got.Hostname())
					}
				})
			}
		}
	}
}

// TestEncodeLayout checks the byte positions and byte order of Encode
// against Redis 7.0's clusterMsg (the offsets of cluster.h's static
// asserts), independently of Decode.
func TestEncodeLayout(t *testing.T) {
	m := Msg{Header: testHeader(TypePing), Gossip: testGossip(2), Exts: []Ext{{Type: ExtHostname, Data: []byte("abcdefghi")}}}
	b := Encode(&m)
	be := binary.BigEndian
	checks := []struct {
		name string
		off  int
		got  uint64
		want uint64
	}{
		{"totlen", 4, uint64(be.Uint32(b[4:])), uint64(HeaderLen + 2*GossipLen + 8 + 16)},
		{"ver", 8, uint64(be.Uint16(b[8:])), 1},
		{"port", 10, uint64(be.Uint16(b[10:])), 7001},
		{"type", 12, uint64(be.Uint16(b[12:])), 0},
		{"count", 14, uint64(be.Uint16(b[14:])), 2},
		{"currentEpoch", 16, be.Uint64(b[16:]), 0x0102030405060708},
		{"configEpoch", 24, be.Uint64(b[24:]), 0x1112131415161718},
		{"offset", 32, be.Uint64(b[32:]), 0x2122232425262728},
		{"extensions", 2214, uint64(be.Uint16(b[2214:])), 1},
		{"pport", 2246, uint64(be.Uint16(b[2246:])), 7002},
		{"cport", 2248, uint64(be.Uint16(b[2248:])), 17001},
		{"flags", 2250, uint64(be.Uint16(b[2250:])), uint64(FlagMaster | FlagMyself)},
		{"state", 2252, uint64(b[2252]), 1},
		{"mflags[0]", 2253, uint64(b[2253]), uint64(MFlagPaused | MFlagExtData)},
		{"gossip[1].ping_sent", 2256 + 104 + 40, uint64(be.Uint32(b[2256+104+40:])), 1700000001},
		{"gossip[1].pong_received", 2256 + 104 + 44, uint64(be.Uint32(b[2256+104+44:])), 1700000101},
		{"gossip[1].port", 2256 + 104 + 94, uint64(be.Uint16(b[2256+104+94:])), 7001},
		{"gossip[1].cport", 2256 + 104 + 96, uint64(be.Uint16(b[2256+104+96:])), 17001},
		{"gossip[1].flags", 2256 + 104 + 98, uint64(be.Uint16(b[2256+104+98:])), uint64(FlagSlave | FlagPFail)},
		{"gossip[1].pport", 2256 + 104 + 100, uint64(be.Uint16(b[2256+104+100:])), 8001},
		{"ext.length", 2464, uint64(be.Uint32(b[2464:])), 24},
		{"ext.type", 2468, uint64(be.Uint16(b[2468:])), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s at %d = %#x, want %#x", c.name, c.off, c.got, c.want)
		}
	}
	if string(b[:4]) != "RCmb" {
		t.Errorf("signature %q", b[:4])
	}
	for _, f := range []struct {
		name string
		off  int
		want string
	}{
		{"sender", 40, testName(1).String()}, {"slaveof", 2128, testName(2).String()},
		{"myip", 2168, "127.0.0.1\x00"}, {"gossip[0].name", 2256, testName(10).String()},
		{"gossip[0].ip", 2256 + 48, "10.0.0.0\x00"}, {"hostname", 2472, "abcdefghi\x00\x00\x00\x00\x00\x00\x00"},
	} {
		if got := string(b[f.off : f.off+len(f.want)]); got != f.want {
			t.Errorf("%s at %d = %q, want %q", f.name, f.off, got, f.want)
		}
	}
	// Slot 1 is bit 1 of byte 0, slot 8 bit 0 of byte 1, slot 16383 bit 7 of byte 2047.
	if b[80] != 0x83 || b[81] != 0x01 || b[80+2047] != 0x80 {
		t.Errorf("myslots bytes %#x %#x ... %#x", b[80], b[81], b[80+2047])
	}
	if !bytes.Equal(b[2216:2246], make([]byte, 30)) {
		t.Errorf("reserved bytes not zero: %x", b[2216:2246])
	}

	mod := Encode(&Msg{Header: testHeader(TypeModule), ModuleID: 0x0102030405060708, ModuleType: 9, ModuleData: []byte("xy")})
	if got := binary.LittleEndian.Uint64(mod[2256:]); got != 0x0102030405060708 {
		t.Errorf("module_id (host order, little endian) = %#x", got)
	}
	if got := be.Uint32(mod[2264:]); got != 2 || mod[2268] != 9 || string(mod[2269:]) != "xy" {
		t.Errorf("module len %d type %d data %q", got, mod[2268], mod[2269:])
	}
	pub := Encode(&Msg{Header: testHeader(TypePublish), Channel: []byte("ch"), Message: []byte("msg")})
	if be.Uint32(pub[2256:]) != 2 || be.Uint32(pub[2260:]) != 3 || string(pub[2264:]) != "chmsg" {
		t.Errorf("publish data %x", pub[2256:])
	}
	up := Encode(&Msg{Header: testHeader(TypeUpdate), UpdateConfigEpoch: 7, UpdateNode: testName(4)})
	if be.Uint64(up[2256:]) != 7 || string(up[2264:2304]) != testName(4).String() || len(up) != 4352 {
		t.Errorf("update data: epoch %d node %q len %d", be.Uint64(up[2256:]), up[2264:2304], len(up))
	}
}

// corrupt returns a copy of b with f applied.
func corruptPkt(b []byte, f func(b []byte) []byte) []byte {
	return f(append([]byte{}, b...))
}

func putLen(b []byte) []byte {
	binary.BigEndian.PutUint32(b[4:], uint32(len(b)))
	return b
}

func TestDecodeMalformed(t *testing.T) {
	be := binary.BigEndian
	ping := Encode(&Msg{Header: testHeader(TypePing), Gossip: testGossip(2), Exts: []Ext{{Type: ExtHostname, Data: []byte("host")}}})
	extOff := HeaderLen + 2*GossipLen
	fail := Encode(&Msg{Header: testHeader(TypeFail), FailAbout: testName(3)})
	pub := Encode(&Msg{Header: testHeader(TypePublish), Channel: []byte("ch"), Message: []byte("msg")})
	update := Encode(&Msg{Header: testHeader(TypeUpdate)})
	module := Encode(&Msg{Header: testHeader(TypeModule), ModuleData: []byte("abc")})
	ack := Encode(&Msg{Header: testHeader(TypeFailoverAuthAck)})
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"7 bytes", ping[:7], ErrShort},
		{"header minus one", putLen(corruptPkt(ping[:HeaderLen-1], func(b []byte) []byte { return b })), ErrShort},
		{"bad signature", corruptPkt(ping, func(b []byte) []byte { b[3] = 'B'; return b }), ErrSignature},
		{"totlen larger than given", corruptPkt(ping, func(b []byte) []byte { be.PutUint32(b[4:], uint32(len(b)+1)); return b }), ErrLength},
		{"totlen smaller than given", corruptPkt(ping, func(b []byte) []byte { be.PutUint32(b[4:], uint32(len(b)-8)); return b }), ErrLength},
		{"truncated packet", ping[:len(ping)-8], ErrLength},
		{"version 0", corruptPkt(ping, func(b []byte) []byte { be.PutUint16(b[8:], 0); return b }), ErrVersion},
		{"version 2", corruptPkt(ack, func(b []byte) []byte { be.PutUint16(b[8:], 2); return b }), ErrVersion},
		{"ping count one too many", corruptPkt(ping, func(b []byte) []byte { be.PutUint16(b[14:], 3); return b }), ErrLength},
		{"ping count beyond packet", corruptPkt(ping, func(b []byte) []byte { be.PutUint16(b[14:], 1000); return b }), ErrLength},
		{"ping count one too few", corruptPkt(ping, func(b []byte) []byte { be.PutUint16(b[14:], 1); return b }), ErrExtension},
		{"ping trailing bytes", putLen(corruptPkt(ping, func(b []byte) []byte { return append(b, make([]byte, 8)...) })), ErrLength},
		{"ping extension not counted", putLen(corruptPkt(ping, func(b []byte) []byte { be.PutUint16(b[offExtensions:], 0); return b })), ErrLength},
		{"ping two extensions counted, one sent", corruptPkt(ping, func(b []byte) []byte { be.PutUint16(b[offExtensions:], 2); return b }), ErrExtension},
		{"ping extensions without flag", corruptPkt(ping, func(b []byte) []byte { b[offMFlags] &^= MFlagExtData; return b }), ErrExtension},
		{"ext length not multiple of 8", corruptPkt(ping, func(b []byte) []byte { be.PutUint32(b[extOff:], 12); return b }), ErrExtension},
		{"ext length zero", corruptPkt(ping, func(b []byte) []byte { be.PutUint32(b[extOff:], 0); return b }), ErrExtension},
		{"ext length beyond packet", corruptPkt(ping, func(b []byte) []byte { be.PutUint32(b[extOff:], 24); return b }), ErrExtension},
		{"ext length 2^16+16 (Redis truncates to 16)", corruptPkt(ping, func(b []byte) []byte { be.PutUint32(b[extOff:], 1<<16+16); return b }), ErrExtension},
		{"ext length smaller than sent", corruptPkt(ping, func(b []byte) []byte { be.PutUint32(b[extOff:], 8); be.PutUint16(b[extOff+4:], 5); return b }), ErrLength},
		{"hostname ext without payload", corruptPkt(ping, func(b []byte) []byte { be.PutUint32(b[extOff:], 8); return b }), ErrExtension},
		{"truncated extension", putLen(corruptPkt(ping, func(b []byte) []byte { return b[:len(b)-8] })), ErrExtension},
		{"extension header cut", putLen(corruptPkt(ping, func(b []byte) []byte { return b[:extOff+4] })), ErrExtension},
		{"hostname without NUL", corruptPkt(ping, func(b []byte) []byte { copy(b[extOff+8:], "hostname"); return b }), ErrExtension},
		{"fail short", putLen(corruptPkt(fail, func(b []byte) []byte { return b[:len(b)-1] })), ErrLength},
		{"fail long", putLen(corruptPkt(fail, func(b []byte) []byte { return append(b, 0) })), ErrLength},
		{"publish channel_len too big", corruptPkt(pub, func(b []byte) []byte { be.PutUint32(b[HeaderLen:], 3); return b }), ErrLength},
		{"publish message_len too small", corruptPkt(pub, func(b []byte) []byte { be.PutUint32(b[HeaderLen+4:], 2); return b }), ErrLength},
		{"publish lengths wrap 32 bits", corruptPkt(pub, func(b []byte) []byte {
			be.PutUint32(b[HeaderLen:], 0xffffffff)
			be.PutUint32(b[HeaderLen+4:], 6) // Redis's uint32 explen wraps to totlen
			return b
		}), ErrLength},
		{"publish without lengths", putLen(corruptPkt(pub, func(b []byte) []byte { return b[:HeaderLen+4] })), ErrLength},
		{"update short", putLen(corruptPkt(update, func(b []byte) []byte { return b[:len(b)-1] })), ErrLength},
		{"auth ack with data", putLen(corruptPkt(ack, func(b []byte) []byte { return append(b, 1, 2, 3, 4, 5, 6, 7, 8) })), ErrLength},
		{"mfstart with data", putLen(corruptPkt(ack, func(b []byte) []byte { be.PutUint16(b[12:], uint16(TypeMFStart)); return append(b, 0) })), ErrLength},
		{"auth request with data", putLen(corruptPkt(ack, func(b []byte) []byte { be.PutUint16(b[12:], uint16(TypeFailoverAuthRequest)); return append(b, 0) })), ErrLength},
		{"module len too big", corruptPkt(module, func(b []byte) []byte { be.PutUint32(b[HeaderLen+8:], 4); return b }), ErrLength},
		{"module len max", corruptPkt(module, func(b []byte) []byte { be.PutUint32(b[HeaderLen+8:], 0xffffffff); return b }), ErrLength},
		{"module without fixed part", putLen(corruptPkt(module, func(b []byte) []byte { return b[:HeaderLen+12] })), ErrLength},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Decode(c.b)
			if !errors.Is(err, c.want) {
				t.Fatalf("Decode err = %v, want %v", err, c.want)
			}
			if m != nil {
				t.Fatalf("Decode returned a message with error %v", err)
			}
			if !strings.HasPrefix(err.Error(), "cluster: ") {
				t.Fatalf("error %q lacks the package prefix", err)
			}
		})
	}
}

func TestDecodeUnknownTypeAnyLength(t *testing.T) {
	for _, body := range [][]byte{nil, {1}, bytes.Repeat([]byte{7}, 4000)} {
		b := Encode(&Msg{Header: testHeader(MsgType(TypeCount)), Body: body})
		m, err := Decode(b)
		if !errors.Is(err, ErrUnknownType) || m == nil || m.Type != TypeCount || !bytes.Equal(m.Body, body) {
			t.Fatalf("body %d bytes: m = %v, err = %v", len(body), m, err)
		}
	}
}

func TestPacketLen(t *testing.T) {
	hdr := func(sig string, n uint32) []byte {
		b := append([]byte(sig), 0, 0, 0, 0)
		binary.BigEndian.PutUint32(b[4:], n)
		return b
	}
	cases := []struct {
		name string
		b    []byte
		n    int
		err  error
	}{
		{"header", hdr("RCmb", HeaderLen), HeaderLen, nil},
		{"large", hdr("RCmb", 1<<20), 1 << 20, nil},
		{"max", hdr("RCmb", 0xffffffff), 0xffffffff, nil},
		{"below min", hdr("RCmb", HeaderLen-1), 0, ErrLength},
		{"zero", hdr("RCmb", 0), 0, ErrLength},
		{"signature", hdr("RCmB", HeaderLen), 0, ErrSignature},
		{"resp", []byte("*1\r\n$4\r\nPING"), 0, ErrSignature},
		{"short", []byte("RCmb\x00\x00\x08"), 0, ErrShort},
	}
	for _, c := range cases {
		n, err := PacketLen(c.b)
		if n != c.n || !errors.Is(err, c.err) {
			t.Errorf("%s: PacketLen = %d, %v; want %d, %v", c.name, n, err, c.n, c.err)
		}
	}
}

func TestDecodeDoesNotAlias(t *testing.T) {
	b := Encode(&Msg{Header: testHeader(TypePublish), Channel: []byte("ch"), Message: []byte("msg")})
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := HeaderLen; i < len(b); i++ {
		b[i] = 'X'
	}
	if string(m.Channel) != "ch" || string(m.Message) != "msg" {
		t.Fatalf("decoded message changed with its buffer: %q %q", m.Channel, m.Message)
	}
}

func TestHostnameLastWins(t *testing.T) {
	m := Msg{Header: testHeader(TypePing), Exts: []Ext{{Type: ExtHostname, Data: []byte("first")}, {Type: 5, Data: make([]byte, 8)}, {Type: ExtHostname, Data: []byte("second")}}}
	got, err := Decode(Encode(&m))
	if err != nil {
		t.Fatal(err)
	}
	if got.Hostname() != "second" {
		t.Fatalf("Hostname() = %q", got.Hostname())
	}
	if (&Msg{}).Hostname() != "" {
		t.Fatal("Hostname of a message without extensions")
	}
}

func FuzzDecode(f *testing.F) {
	for _, m := range []Msg{
		{Header: testHeader(TypePing), Gossip: testGossip(2), Exts: []Ext{{Type: ExtHostname, Data: []byte("host")}, {Type: 3, Data: make([]byte, 8)}}},
		{Header: testHeader(TypeMeet)},
		{Header: testHeader(TypeFail), FailAbout: testName(3)},
		{Header: testHeader(TypePublish), Channel: []byte("c"), Message: []byte("m")},
		{Header: testHeader(TypeUpdate)},
		{Header: testHeader(TypeModule), ModuleData: []byte("x")},
		{Header: testHeader(TypeMFStart)},
		{Header: testHeader(MsgType(99)), Body: []byte("b")},
	} {
		f.Add(Encode(&m))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil && !errors.Is(err, ErrUnknownType) {
			if m != nil {
				t.Fatalf("message with error %v", err)
			}
			return
		}
		b2 := Encode(m)
		m2, err2 := Decode(b2)
		if (err2 == nil) != (err == nil) {
			t.Fatalf("re-decode: err %v, first %v", err2, err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-encoded message decodes differently:\n%+v\n%+v", m, m2)
		}
		if len(b2) > len(b) {
			t.Fatalf("re-encoded %d bytes from %d", len(b2), len(b))
		}
	})
}

// TestDecodeIntoReleasedMessages: Decode reuses released messages' gossip
// and extension arrays; a message decoded into one holds exactly what a
// fresh decode holds (no entry, extension or field of the message before).
func TestDecodeIntoReleasedMessages(t *testing.T) {
	host := func(h string) []Ext { return []Ext{{Type: ExtHostname, Data: []byte(h)}} }
	seq := []Msg{
		{Header: testHeader(TypePing), Gossip: testGossip(300), Exts: []Ext{{Type: ExtHostname, Data: []byte("abc")}, {Type: 77, Data: []byte("12345678abcdefgh")}}},
		{Header: testHeader(TypePong), Gossip: testGossip(1)},
		{Header: testHeader(TypeFail), FailAbout: testName(9)},
		{Header: testHeader(TypeMeet), Exts: host("h")},
		{Header: testHeader(TypeUpdate), UpdateConfigEpoch: 7, UpdateNode: testName(5), UpdateSlots: func() *SlotBitmap { var b SlotBitmap; b.Set(9); return &b }()},
		{Header: testHeader(TypePing), Gossip: testGossip(3), Exts: host("host-b")},
		{Header: testHeader(TypePublish), Channel: []byte("c"), Message: []byte("m")},
		{Header: testHeader(TypePing)},
	}
	for round := range 3 {
		for i, m := range seq {
			got, err := Decode(Encode(&m))
			if err != nil {
				t.Fatalf("round %d, message %d: %v", round, i, err)
			}
			if want := wantDecoded(m); !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d, message %d decoded into a released one:\n got %+v\nwant %+v", round, i, got, want)
			}
			ReleaseMsg(got)
		}
	}
}
