package node

import (
	"strconv"

	"github.com/shardis/shardis/internal/node/config"
	"github.com/shardis/shardis/internal/node/keyopts"
)

// Expiry commands (Redis's expire.c): EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT
// with NX|XX|GT|LT, TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST. Expiries
// are propagated as absolute PEXPIREAT, and a time already in the past
// deletes the key (propagated as DEL), as Redis 7.0 does.

func registerExpireCommands(t *commandTable) {
	add := func(name string, arity int, flags cmdFlag, fn handlerFunc, since string) {
		t.add(&command{name: name, arity: arity, flags: flags, first: 1, last: 1, step: 1, fn: fn, group: "generic", since: since})
	}
	add("expire", -3, flagWrite|flagFast, cmdExpire, "1.0.0")
	add("pexpire", -3, flagWrite|flagFast, cmdPExpire, "2.6.0")
	add("expireat", -3, flagWrite|flagFast, cmdExpireAt, "1.2.0")
	add("pexpireat", -3, flagWrite|flagFast, cmdPExpireAt, "2.6.0")
	add("ttl", 2, flagReadOnly|flagFast, cmdTTL, "1.0.0")
	add("pttl", 2, flagReadOnly|flagFast, cmdPTTL, "2.6.0")
	add("expiretime", 2, flagReadOnly|flagFast, cmdExpireTime, "7.0.0")
	add("pexpiretime", 2, flagReadOnly|flagFast, cmdPExpireTime, "7.0.0")
	add("persist", 2, flagWrite|flagFast, cmdPersist, "2.2.0")
}

// EXPIRE key seconds [NX|XX|GT|LT]
func cmdExpire(c *Client, args [][]byte) { expireGeneric(c, args, c.now, true) }

// PEXPIRE key milliseconds [NX|XX|GT|LT]
func cmdPExpire(c *Client, args [][]byte) { expireGeneric(c, args, c.now, false) }

// EXPIREAT key unix-time-seconds [NX|XX|GT|LT]
func cmdExpireAt(c *Client, args [][]byte) { expireGeneric(c, args, 0, true) }

// PEXPIREAT key unix-time-milliseconds [NX|XX|GT|LT]
func cmdPExpireAt(c *Client, args [][]byte) { expireGeneric(c, args, 0, false) }

// expireGeneric is Redis's expireGenericCommand: basetime is 0 for the *AT
// variants, now for relative ones (keyopts has the grammar and the times).
func expireGeneric(c *Client, args [][]byte, basetime int64, seconds bool) {
	flags, err := keyopts.ParseExpireFlags(args[3:])
	if err != nil {
		c.addError(err.Error())
		return
	}
	when, err := keyopts.ExpireTime(args[2], basetime, seconds, c.cmd.name)
	if err != nil {
		c.addError(err.Error())
		return
	}
	db := c.curDB()
	e := db.Lookup(bstr(args[1]), c.now)
	if e == nil || keyopts.ExpireSkipped(flags, e.Expire, when) {
		c.addInt(0)
		return
	}
	key := e.Key
	if c.alreadyExpired(when) {
		db.Remove(key)
		c.keyChangedAs(notifyGeneric, "del", key, [][]byte{c.delVerb(config.DirLazyfreeLazyExpire), args[1]})
		c.addInt(1)
		return
	}
	if when == 0 {
		// 0 means "no expiry" in entry.expire; the epoch itself is long
		// past, so only a replica or a load can get here. Keep it expired.
		when = -1
	}
	db.SetExpire(e, when)
	c.addInt(1)
	prop := [][]byte{[]byte("PEXPIREAT"), args[1], strconv.AppendInt(nil, when, 10)}
	c.keyChangedAs(notifyGeneric, "expire", key, prop)
}

// delVerb is how a deletion is propagated: UNLINK when the lazyfree
// setting applies, DEL otherwise, as Redis does.
func (c *Client) delVerb(lazyfree config.Directive) []byte {
	if c.srv.cfg.Bool(lazyfree) {
		return []byte("UNLINK")
	}
	return []byte("DEL")
}

// ttlGeneric implements TTL, PTTL, EXPIRETIME and PEXPIRETIME.
func ttlGeneric(c *Client, key []byte, ms, abs bool) {
	if e := c.lookupNoTouch(key); e != nil {
		c.addInt(keyopts.TTL(e.Expire, c.now, ms, abs))
	} else {
		c.addInt(-2)
	}
}

// TTL key
func cmdTTL(c *Client, args [][]byte) { ttlGeneric(c, args[1], false, false) }

// PTTL key
func cmdPTTL(c *Client, args [][]byte) { ttlGeneric(c, args[1], true, false) }

// EXPIRETIME key
func cmdExpireTime(c *Client, args [][]byte) { ttlGeneric(c, args[1], false, true) }

// PEXPIRETIME key
func cmdPExpireTime(c *Client, args [][]byte) { ttlGeneric(c, args[1], true, true) }

// PERSIST key
func cmdPersist(c *Client, args [][]byte) {
	db := c.curDB()
	e := db.Lookup(bstr(args[1]), c.now)
	if e == nil || e.Expire == 0 {
		c.addInt(0)
		return
	}
	db.SetExpire(e, 0)
	c.keyChanged(notifyGeneric, "persist", e.Key)
	c.addInt(1)
}
