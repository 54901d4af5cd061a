package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Byte offsets inside clusterMsg (src/cluster.h of Redis 7.0, checked there
// by static asserts) and inside its data union.
const (
	offTotlen       = 4
	offVer          = 8
	offPort         = 10
	offType         = 12
	offCount        = 14
	offCurrentEpoch = 16
	offConfigEpoch  = 24
	offOffset       = 32
	offSender       = 40
	offMySlots      = 80
	offSlaveOf      = 2128
	offMyIP         = 2168
	offExtensions   = 2214
	offPPort        = 2246 // after 30 reserved bytes (notused1) at 2216
	offCPort        = 2248
	offFlags        = 2250
	offState        = 2252
	offMFlags       = 2253

	// clusterMsgDataGossip.
	gOffPingSent     = 40
	gOffPongReceived = 44
	gOffIP           = 48
	gOffPort         = 94
	gOffCPort        = 96
	gOffFlags        = 98
	gOffPPort        = 100 // then 2 unused bytes

	// FailLen is the length of a FAIL message: header + one node name.
	failLen = HeaderLen + NameLen
	// publishFixed is the header plus PUBLISH's channel_len and message_len.
	publishFixed = HeaderLen + 8
	// updateLen is the length of an UPDATE: header + configEpoch + name + bitmap.
	updateLen = HeaderLen + 8 + NameLen + NumSlots/8
	// moduleFixed is the header plus MODULE's module_id, len and type.
	moduleFixed = HeaderLen + 8 + 4 + 1

	// ExtHeaderLen is the size of a ping extension's header
	// (clusterMsgPingExt without its payload): length u32, type u16,
	// unused u16.
	ExtHeaderLen = 8
)

// Errors reported by [Decode] and [PacketLen]. Decode wraps them with the
// details; test the kind with errors.Is. Redis drops a packet that fails
// Decode's checks and keeps the link; it closes the link when the first 8
// bytes fail PacketLen's.
var (
	// ErrShort: fewer bytes than the field being read (a packet shorter
	// than the 2256-byte header, or fewer than 8 bytes given to PacketLen).
	ErrShort = errors.New("cluster: bus message too short")
	// ErrSignature: the message does not start with "RCmb".
	ErrSignature = errors.New("cluster: bad bus message signature")
	// ErrLength: totlen is below the header's size, differs from the
	// bytes given, or differs from the length its type and contents imply
	// (Redis's explen).
	ErrLength = errors.New("cluster: bad bus message length")
	// ErrVersion: the protocol version is not ProtoVer.
	ErrVersion = errors.New("cluster: unsupported bus protocol version")
	// ErrExtension: a ping extension is malformed (length not a multiple
	// of 8, shorter than its header, beyond the packet, or a hostname
	// without its NUL).
	ErrExtension = errors.New("cluster: bad ping extension")
	// ErrUnknownType: a well-formed message of a type this version does
	// not know (Type >= TypeCount). Redis accepts such a message with any
	// length and ignores it; Decode returns it together with the decoded
	// message so that a caller can count it and drop it.
	ErrUnknownType = errors.New("cluster: unknown bus message type")
)

// typeName is Redis's name for a message type (clusterGetMessageTypeString),
// as in CLUSTER INFO's cluster_stats_messages_<name>_sent.
func typeName(t MsgType) string {
	switch t {
	case TypePing:
		return "ping"
	case TypePong:
		return "pong"
	case TypeMeet:
		return "meet"
	case TypeFail:
		return "fail"
	case TypePublish:
		return "publish"
	case TypePublishShard:
		return "publishshard"
	case TypeFailoverAuthRequest:
		return "auth-req"
	case TypeFailoverAuthAck:
		return "auth-ack"
	case TypeUpdate:
		return "update"
	case TypeMFStart:
		return "mfstart"
	case TypeModule:
		return "module"
	}
	return "unknown"
}

// isPingType reports whether t carries a gossip section and extensions.
func isPingType(t MsgType) bool {
	return t == TypePing || t == TypePong || t == TypeMeet
}

// align8 rounds n up to a multiple of 8 (EIGHT_BYTE_ALIGN).
func align8(n int) int { return (n + 7) &^ 7 }

// extWireLen is the number of bytes ext takes on the wire, header and
// padding included. A hostname carries its terminating NUL.
func extWireLen(e *Ext) int {
	if e.Type == ExtHostname {
		return ExtHeaderLen + align8(len(e.Data)+1)
	}
	return ExtHeaderLen + align8(len(e.Data))
}

// EncodedLen returns the length of m on the wire, the totlen that Encode
// writes.
func EncodedLen(m *Msg) int {
	switch {
	case isPingType(m.Type):
		n := HeaderLen + GossipLen*len(m.Gossip)
		for i := range m.Exts {
			n += extWireLen(&m.Exts[i])
		}
		return n
	case m.Type == TypeFail:
		return failLen
	case m.Type == TypePublish || m.Type == TypePublishShard:
		return publishFixed + len(m.Channel) + len(m.Message)
	case m.Type == TypeUpdate:
		return updateLen
	case m.Type == TypeModule:
		return moduleFixed + len(m.ModuleData)
	case m.Type == TypeFailoverAuthRequest || m.Type == TypeFailoverAuthAck || m.Type == TypeMFStart:
		return HeaderLen
	}
	return HeaderLen + len(m.Body)
}

// Encode returns m in Redis 7.0's clusterMsg layout. See [AppendMsg].
func Encode(m *Msg) []byte { return AppendMsg(nil, m) }

// AppendMsg appends m in Redis 7.0's clusterMsg layout to dst and returns
// the extended slice, as clusterBuildMessageHdr and the clusterSend*
// functions build it: integers in network byte order (htons, htonl,
// htonu64) except the MODULE module_id, which Redis copies in host order
// and which is written little endian (what every x86 and arm64 Redis
// sends); reserved bytes zero.
//
// Encode computes and writes, ignoring m's values: the signature, Totlen,
// Ver (always ProtoVer) and, for PING, PONG and MEET, Count = len(Gossip)
// and Extensions = len(Exts), with MFlagExtData added to MFlags[0] when
// Exts is not empty. For the other types Count and Extensions are written
// as given (Redis sends 0). Each extension is its 8-byte header followed by
// Data padded with zero bytes to a multiple of 8; a hostname is written
// with its terminating NUL (Data must not contain a NUL). The fields of
// other types than m.Type are not written. For a type >= TypeCount the
// header is followed by Body.
//
// AppendMsg panics if a PING, PONG or MEET has more than 65535 gossip
// entries or extensions: that is a bug in the caller, not network input.
func AppendMsg(dst []byte, m *Msg) []byte {
	n := EncodedLen(m)
	count, exts := m.Count, m.Extensions
	mflags := m.MFlags
	if isPingType(m.Type) {
		if len(m.Gossip) > 0xffff || len(m.Exts) > 0xffff {
			panic(fmt.Sprintf("cluster: encode %s: %d gossip entries, %d extensions", typeName(m.Type), len(m.Gossip), len(m.Exts)))
		}
		count, exts = uint16(len(m.Gossip)), uint16(len(m.Exts))
		if len(m.Exts) > 0 {
			mflags[0] |= MFlagExtData
		}
	}

	start := len(dst)
	dst = append(dst, make([]byte, n)...)
	b := dst[start:]
	be := binary.BigEndian
	copy(b, Signature)
	be.PutUint32(b[offTotlen:], uint32(n))
	be.PutUint16(b[offVer:], ProtoVer)
	be.PutUint16(b[offPort:], m.Port)
	be.PutUint16(b[offType:], uint16(m.Type))
	be.PutUint16(b[offCount:], count)
	be.PutUint64(b[offCurrentEpoch:], m.CurrentEpoch)
	be.PutUint64(b[offConfigEpoch:], m.ConfigEpoch)
	be.PutUint64(b[offOffset:], m.Offset)
	copy(b[offSender:], m.Sender[:])
	copy(b[offMySlots:], m.MySlots[:])
	copy(b[offSlaveOf:], m.SlaveOf[:])
	copy(b[offMyIP:], m.MyIP[:])
	be.PutUint16(b[offExtensions:], exts)
	be.PutUint16(b[offPPort:], m.PPort)
	be.PutUint16(b[offCPort:], m.CPort)
	be.PutUint16(b[offFlags:], m.Flags)
	b[offState] = m.State
	copy(b[offMFlags:], mflags[:])

	d := b[HeaderLen:]
	switch {
	case isPingType(m.Type):
		for i := range m.Gossip {
			putGossip(d[i*GossipLen:], &m.Gossip[i])
		}
		p := d[len(m.Gossip)*GossipLen:]
		for i := range m.Exts {
			e := &m.Exts[i]
			l := extWireLen(e)
			be.PutUint32(p, uint32(l))
			be.PutUint16(p[4:], e.Type)
			copy(p[ExtHeaderLen:], e.Data) // padding (and a hostname's NUL) already zero
			p = p[l:]
		}
	case m.Type == TypeFail:
		copy(d, m.FailAbout[:])
	case m.Type == TypePublish || m.Type == TypePublishShard:
		be.PutUint32(d, uint32(len(m.Channel)))
		be.PutUint32(d[4:], uint32(len(m.Message)))
		copy(d[8:], m.Channel)
		copy(d[8+len(m.Channel):], m.Message)
	case m.Type == TypeUpdate:
		be.PutUint64(d, m.UpdateConfigEpoch)
		copy(d[8:], m.UpdateNode[:])
		if m.UpdateSlots != nil {
			copy(d[8+NameLen:], m.UpdateSlots[:])
		}
	case m.Type == TypeModule:
		binary.LittleEndian.PutUint64(d, m.ModuleID)
		be.PutUint32(d[8:], uint32(len(m.ModuleData)))
		d[12] = m.ModuleType
		copy(d[13:], m.ModuleData)
	case m.Type == TypeFailoverAuthRequest || m.Type == TypeFailoverAuthAck || m.Type == TypeMFStart:
	default:
		copy(d, m.Body)
	}
	return dst
}

func putGossip(p []byte, g *Gossip) {
	be := binary.BigEndian
	copy(p, g.Name[:])
	be.PutUint32(p[gOffPingSent:], g.PingSent)
	be.PutUint32(p[gOffPongReceived:], g.PongReceived)
	copy(p[gOffIP:], g.IP[:])
	be.PutUint16(p[gOffPort:], g.Port)
	be.PutUint16(p[gOffCPort:], g.CPort)
	be.PutUint16(p[gOffFlags:], g.Flags)
	be.PutUint16(p[gOffPPort:], g.PPort)
}

func getGossip(p []byte) Gossip {
	be := binary.BigEndian
	var g Gossip
	copy(g.Name[:], p)
	g.PingSent = be.Uint32(p[gOffPingSent:])
	g.PongReceived = be.Uint32(p[gOffPongReceived:])
	copy(g.IP[:], p[gOffIP:])
	g.Port = be.Uint16(p[gOffPort:])
	g.CPort = be.Uint16(p[gOffCPort:])
	g.Flags = be.Uint16(p[gOffFlags:])
	g.PPort = be.Uint16(p[gOffPPort:])
	return g
}

// PacketLen returns the total length of the bus message whose first 8 bytes
// (signature and totlen) are hdr, with the checks of Redis's
// clusterReadHandler: the signature is "RCmb" and totlen is at least
// HeaderLen (CLUSTERMSG_MIN_LEN). On an error Redis closes the link. Like
// Redis it sets no upper bound; a reader that needs one applies its own.
func PacketLen(hdr []byte) (int, error) {
	if len(hdr) < 8 {
		return 0, fmt.Errorf("%w: %d bytes of the 8 that hold the length", ErrShort, len(hdr))
	}
	if string(hdr[:4]) != Signature {
		return 0, fmt.Errorf("%w: %q", ErrSignature, hdr[:4])
	}
	n := binary.BigEndian.Uint32(hdr[offTotlen:])
	if n < HeaderLen {
		return 0, fmt.Errorf("%w: totlen %d below the %d-byte header", ErrLength, n, HeaderLen)
	}
	return int(n), nil
}

// Decode parses one whole bus message, b holding exactly totlen bytes, with
// the checks of Redis 7.0's clusterReadHandler and clusterProcessPacket:
// signature, totlen at least HeaderLen and equal to len(b), protocol
// version, and the length each type implies (explen): the gossip count and
// the extensions of PING, PONG and MEET, PUBLISH's channel and message
// lengths, MODULE's payload length, the fixed sizes of the others.
//
// Decode is stricter than Redis where Redis would read past the packet or
// overflow: the lengths are summed without 32-bit wrap-around; an
// extension's length is taken as the 32 bits on the wire (Redis truncates
// it to 16 bits while checking), must cover its 8-byte header and fit in
// the packet; a hostname extension must hold its NUL; a non-zero
// extensions count without MFlagExtData is refused (Redis checks nothing
// then but still walks that many extensions). Extensions of unknown types
// are kept with their padded payload, as Redis skips them.
//
// A message of an unknown type (>= TypeCount) is accepted with any length,
// as Redis does, and returned with Body set and an error wrapping
// ErrUnknownType. Any other error comes with a nil Msg. Decode never
// panics; the returned Msg does not alias b.
func Decode(b []byte) (*Msg, error) {
	if len(b) < HeaderLen {
		return nil, fmt.Errorf("%w: %d bytes, header is %d", ErrShort, len(b), HeaderLen)
	}
	if string(b[:4]) != Signature {
		return nil, fmt.Errorf("%w: %q", ErrSignature, b[:4])
	}
	be := binary.BigEndian
	m := newMsg() // a released message's gossip and extension arrays are reused
	g, exts := m.Gossip[:0], m.Exts[:0]
	m.Gossip, m.Exts = nil, nil
	h := &m.Header
	h.Totlen = be.Uint32(b[offTotlen:])
	if uint64(h.Totlen) != uint64(len(b)) {
		return nil, fmt.Errorf("%w: totlen %d, %d bytes given", ErrLength, h.Totlen, len(b))
	}
	h.Ver = be.Uint16(b[offVer:])
	if h.Ver != ProtoVer {
		return nil, fmt.Errorf("%w: %d", ErrVersion, h.Ver)
	}
	h.Port = be.Uint16(b[offPort:])
	h.Type = MsgType(be.Uint16(b[offType:]))
	h.Count = be.Uint16(b[offCount:])
	h.CurrentEpoch = be.Uint64(b[offCurrentEpoch:])
	h.ConfigEpoch = be.Uint64(b[offConfigEpoch:])
	h.Offset = be.Uint64(b[offOffset:])
	copy(h.Sender[:], b[offSender:])
	copy(h.MySlots[:], b[offMySlots:])
	copy(h.SlaveOf[:], b[offSlaveOf:])
	copy(h.MyIP[:], b[offMyIP:])
	h.Extensions = be.Uint16(b[offExtensions:])
	h.PPort = be.Uint16(b[offPPort:])
	h.CPort = be.Uint16(b[offCPort:])
	h.Flags = be.Uint16(b[offFlags:])
	h.State = b[offState]
	copy(h.MFlags[:], b[offMFlags:])

	d := b[HeaderLen:]
	total := uint64(len(b))
	wrongLen := func(explen uint64) error {
		return fmt.Errorf("%w: %s message of %d bytes, expected %d", ErrLength, typeName(h.Type), total, explen)
	}
	switch {
	case isPingType(h.Type):
		explen := uint64(HeaderLen) + uint64(GossipLen)*uint64(h.Count)
		if explen > total {
			return nil, wrongLen(explen)
		}
		if h.Count > 0 {
			if cap(g) >= int(h.Count) {
				m.Gossip = g[:h.Count]
			} else {
				m.Gossip = make([]Gossip, h.Count)
			}
			for i := range m.Gossip {
				m.Gossip[i] = getGossip(d[i*GossipLen:])
			}
		}
		if h.MFlags[0]&MFlagExtData == 0 {
			if h.Extensions != 0 {
				return nil, fmt.Errorf("%w: %d extensions without the EXT_DATA flag", ErrExtension, h.Extensions)
			}
		} else if h.Extensions > 0 {
			if cap(exts) >= int(h.Extensions) {
				m.Exts = exts
			} else {
				m.Exts = make([]Ext, 0, h.Extensions)
			}
			for i := 0; i < int(h.Extensions); i++ {
				if total-explen < ExtHeaderLen {
					return nil, fmt.Errorf("%w: extension %d of %d: header beyond the %d-byte %s message", ErrExtension, i, h.Extensions, total, typeName(h.Type))
				}
				p := b[explen:]
				l := be.Uint32(p)
				if l%8 != 0 {
					return nil, fmt.Errorf("%w: extension %d: length %d not a multiple of 8", ErrExtension, i, l)
				}
				if l < ExtHeaderLen {
					return nil, fmt.Errorf("%w: extension %d: length %d shorter than its header", ErrExtension, i, l)
				}
				if uint64(l) > total-explen {
					return nil, fmt.Errorf("%w: extension %d: length %d exceeds the %d-byte %s message", ErrExtension, i, l, total, typeName(h.Type))
				}
				e := Ext{Type: be.Uint16(p[4:])}
				payload := p[ExtHeaderLen:l]
				if e.Type == ExtHostname {
					end := -1
					for j, c := range payload {
						if c == 0 {
							end = j
							break
						}
					}
					if end < 0 {
						return nil, fmt.Errorf("%w: extension %d: hostname without its NUL", ErrExtension, i)
					}
					payload = payload[:end]
				}
				e.Data = append([]byte{}, payload...)
				m.Exts = append(m.Exts, e)
				explen += uint64(l)
			}
		}
		if explen != total {
			return nil, wrongLen(explen)
		}
	case h.Type == TypeFail:
		if total != failLen {
			return nil, wrongLen(failLen)
		}
		copy(m.FailAbout[:], d)
	case h.Type == TypePublish || h.Type == TypePublishShard:
		if total < publishFixed {
			return nil, wrongLen(publishFixed)
		}
		cl, ml := be.Uint32(d), be.Uint32(d[4:])
		explen := uint64(publishFixed) + uint64(cl) + uint64(ml)
		if explen != total {
			return nil, wrongLen(explen)
		}
		m.Channel = append([]byte{}, d[8:8+cl]...)
		m.Message = append([]byte{}, d[8+cl:]...)
	case h.Type == TypeFailoverAuthRequest || h.Type == TypeFailoverAuthAck || h.Type == TypeMFStart:
		if total != HeaderLen {
			return nil, wrongLen(HeaderLen)
		}
	case h.Type == TypeUpdate:
		if total != updateLen {
			return nil, wrongLen(updateLen)
		}
		m.UpdateConfigEpoch = be.Uint64(d)
		copy(m.UpdateNode[:], d[8:])
		m.UpdateSlots = new(SlotBitmap)
		copy(m.UpdateSlots[:], d[8+NameLen:])
	case h.Type == TypeModule:
		if total < moduleFixed {
			return nil, wrongLen(moduleFixed)
		}
		explen := uint64(moduleFixed) + uint64(be.Uint32(d[8:]))
		if explen != total {
			return nil, wrongLen(explen)
		}
		m.ModuleID = binary.LittleEndian.Uint64(d)
		m.ModuleType = d[12]
		m.ModuleData = append([]byte{}, d[13:]...)
	default:
		m.Body = append([]byte{}, d...)
		return m, fmt.Errorf("%w: %d", ErrUnknownType, h.Type)
	}
	return m, nil
}
