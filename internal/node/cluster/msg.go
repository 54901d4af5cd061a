// Package cluster is shardnode's Redis Cluster logic: the cluster bus codec
// (Redis 7.0's clusterMsg, byte for byte) and a pure state machine driven
// by Tick(now), HandlePacket(now, from, msg) and Ready(), in the shape of
// internal/sentinel. The package does no I/O and never reads the clock: a
// runner owns the bus sockets, the nodes.conf file and time.
package cluster

import (
	"encoding/binary"
	"math/bits"
	"sync"
)

// NameLen is the length of a node name: 40 hex characters (CLUSTER_NAMELEN).
const NameLen = 40

// NumSlots is the number of hash slots (CLUSTER_SLOTS).
const NumSlots = 16384

// IPLen is the size of an IP field on the bus (NET_IP_STR_LEN).
const IPLen = 46

// HeaderLen is the size of clusterMsg without its data union: 2256 bytes.
const HeaderLen = 2256

// GossipLen is the size of one clusterMsgDataGossip entry.
const GossipLen = 104

// ProtoVer is the bus protocol version (CLUSTER_PROTO_VER).
const ProtoVer = 1

// Signature opens every bus message.
const Signature = "RCmb"

// MsgType is a bus message type (CLUSTERMSG_TYPE_*). The values are Redis's
// and append-only.
type MsgType uint16

// Message types of Redis 7.0.
const (
	TypePing                MsgType = 0
	TypePong                MsgType = 1
	TypeMeet                MsgType = 2
	TypeFail                MsgType = 3
	TypePublish             MsgType = 4
	TypeFailoverAuthRequest MsgType = 5
	TypeFailoverAuthAck     MsgType = 6
	TypeUpdate              MsgType = 7
	TypeMFStart             MsgType = 8
	TypeModule              MsgType = 9
	TypePublishShard        MsgType = 10
	// TypeCount is the number of message types (CLUSTERMSG_TYPE_COUNT).
	TypeCount = 11
)

// Node flags (CLUSTER_NODE_*), as sent in the header's and gossip entries'
// flags and kept in a node's Flags.
const (
	FlagMaster     uint16 = 1
	FlagSlave      uint16 = 2
	FlagPFail      uint16 = 4
	FlagFail       uint16 = 8
	FlagMyself     uint16 = 16
	FlagHandshake  uint16 = 32
	FlagNoAddr     uint16 = 64
	FlagMeet       uint16 = 128
	FlagMigrateTo  uint16 = 256
	FlagNoFailover uint16 = 512
)

// Message flags in mflags[0] (CLUSTERMSG_FLAG0_*).
const (
	MFlagPaused   byte = 1 << 0 // master paused for manual failover
	MFlagForceAck byte = 1 << 1 // give ACK to AUTH_REQUEST even if master is up
	MFlagExtData  byte = 1 << 2 // message contains extension data
)

// Cluster states in the header's state byte.
const (
	StateOK   byte = 0
	StateFail byte = 1
)

// Extension types (clusterMsgPingtypes).
const (
	ExtHostname uint16 = 0
)

// Name is a node name: 40 lowercase hex characters, or all zero bytes when
// unknown (CLUSTER_NODE_NULL_NAME).
type Name [NameLen]byte

// String returns the name as text (40 NUL characters for the null name).
func (n Name) String() string { return string(n[:]) }

// IsNull reports whether n is the null name.
func (n Name) IsNull() bool { return n == Name{} }

// SlotBitmap is the 2048-byte bitmap of 16384 slots; bit s is byte s/8,
// bit s%8 (LSB first), as Redis's bitmapTestBit.
type SlotBitmap [NumSlots / 8]byte

// Has reports whether slot s is set.
func (b *SlotBitmap) Has(s int) bool { return b[s>>3]&(1<<(s&7)) != 0 }

// Set sets slot s.
func (b *SlotBitmap) Set(s int) { b[s>>3] |= 1 << (s & 7) }

// Clear clears slot s.
func (b *SlotBitmap) Clear(s int) { b[s>>3] &^= 1 << (s & 7) }

// All yields the slots set, in increasing order, skipping empty bytes.
func (b *SlotBitmap) All() func(yield func(int) bool) {
	return func(yield func(int) bool) {
		for i, c := range b {
			for ; c != 0; c &= c - 1 {
				if !yield(i<<3 + bits.TrailingZeros8(c)) {
					return
				}
			}
		}
	}
}

// Ranges appends the runs of consecutive slots set, as [first, last]
// pairs in increasing order, to dst.
func (b *SlotBitmap) Ranges(dst [][2]int) [][2]int {
	start := -1
	for i := 0; i < len(b); i += 8 {
		w, base := binary.LittleEndian.Uint64(b[i:]), i<<3
		// Bit k of w is slot base+k; pos is the first bit not looked at.
		for pos := 0; pos < 64; {
			above := ^uint64(0) << pos
			if start < 0 {
				ones := w & above
				if ones == 0 {
					break
				}
				pos = bits.TrailingZeros64(ones)
				start = base + pos
			} else {
				zeros := ^w & above
				if zeros == 0 {
					break // the run goes on into the next word
				}
				pos = bits.TrailingZeros64(zeros)
				dst = append(dst, [2]int{start, base + pos - 1})
				start = -1
			}
		}
	}
	if start >= 0 {
		dst = append(dst, [2]int{start, NumSlots - 1})
	}
	return dst
}

// Count returns the number of slots set.
func (b *SlotBitmap) Count() int {
	n := 0
	for _, c := range b {
		for ; c != 0; c &= c - 1 {
			n++
		}
	}
	return n
}

// Header is clusterMsg's fixed part. Encode computes Totlen and Ver and, for
// PING, PONG and MEET, Count and Extensions; Decode fills them all in. The
// 30 reserved bytes after Extensions are not kept (Redis sends zeros).
type Header struct {
	Totlen       uint32
	Ver          uint16
	Port         uint16 // client port (TLS port when TLS is on)
	Type         MsgType
	Count        uint16 // gossip entries in PING/PONG/MEET
	CurrentEpoch uint64
	ConfigEpoch  uint64 // sender's, or its master's if it is a replica
	Offset       uint64 // replication offset
	Sender       Name
	MySlots      SlotBitmap
	SlaveOf      Name // null when the sender is a master
	MyIP         [IPLen]byte
	Extensions   uint16
	PPort        uint16 // plaintext client port when Port is TLS
	CPort        uint16 // cluster bus port
	Flags        uint16
	State        byte
	MFlags       [3]byte
}

// IP returns MyIP up to its first NUL ("" when all zero).
func (h *Header) IP() string { return cstring(h.MyIP[:]) }

// SetIP stores ip in MyIP, NUL padded (truncated to IPLen-1 bytes).
func (h *Header) SetIP(ip string) { h.MyIP = ipField(ip) }

// Gossip is one clusterMsgDataGossip entry of a PING, PONG or MEET.
type Gossip struct {
	Name         Name
	PingSent     uint32 // seconds
	PongReceived uint32 // seconds
	IP           [IPLen]byte
	Port         uint16
	CPort        uint16
	Flags        uint16
	PPort        uint16
}

// Ext is one ping extension (clusterMsgPingExt). Data is the payload
// without the 8-byte extension header and without alignment padding; for
// ExtHostname it is the hostname without its terminating NUL.
type Ext struct {
	Type uint16
	Data []byte
}

// Msg is one decoded bus message: the header plus the data of its type.
// Only the fields of Header.Type are meaningful.
type Msg struct {
	Header
	// PING, PONG, MEET.
	Gossip []Gossip
	Exts   []Ext
	// FAIL: the failing node.
	FailAbout Name
	// PUBLISH, PUBLISHSHARD.
	Channel, Message []byte
	// UPDATE.
	UpdateConfigEpoch uint64
	UpdateNode        Name
	// UpdateSlots is a pointer so that the other messages, nearly all of
	// them, do not carry (and allocate) a second 2 kB bitmap; nil on an
	// UPDATE encodes as no slots.
	UpdateSlots *SlotBitmap
	// MODULE.
	ModuleID   uint64 // Redis sends it in host order: decoded little endian
	ModuleType uint8
	ModuleData []byte
	// Body is the data after the header of a message of an unknown type
	// (Type >= TypeCount), kept as received.
	Body []byte
}

// msgPool holds messages the runner sent (ReleaseMsg) for buildHeader to
// reuse: a PING or PONG is a 2 kB header and its gossip, and a reshard
// makes thousands of them (every closed import broadcasts a PONG).
var msgPool sync.Pool

// newMsg returns a zero message, reused when one was released.
func newMsg() *Msg {
	if p, ok := msgPool.Get().(*Msg); ok {
		return p
	}
	return &Msg{}
}

// ReleaseMsg gives back a message of Ready.Sends once it is encoded, or
// one from Decode once HandlePacket returned (the machine copies what it
// keeps of a packet): the machine and Decode may build their next
// messages in it. The caller must not use msg, nor what its slices hold,
// afterwards, and releases each message once; releasing none is always
// correct.
func ReleaseMsg(msg *Msg) {
	g, e := msg.Gossip[:0], msg.Exts[:0]
	*msg = Msg{Gossip: g, Exts: e}
	msgPool.Put(msg)
}

// Hostname returns the hostname extension's value, or "" when there is
// none. Of several, the last one counts, as in Redis's
// clusterProcessPingExtensions.
func (m *Msg) Hostname() string {
	h := ""
	for _, e := range m.Exts {
		if e.Type == ExtHostname {
			h = string(e.Data)
		}
	}
	return h
}

func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func ipField(ip string) [IPLen]byte {
	var f [IPLen]byte
	copy(f[:IPLen-1], ip)
	return f
}
