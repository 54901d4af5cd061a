// Package sentinel implements the Redis Sentinel failover logic as a pure
// state machine.
//
// The machine owns no goroutines, sockets or clocks: the caller drives it
// with Tick(now) for timers and Step(now, msg) for observations (PING and
// INFO replies, hello messages, IS-MASTER-DOWN-BY-ADDR replies, link state),
// then collects the resulting actions and events with Ready. The network
// runner lives in the sibling package runner.
//
// The semantics follow redis-sentinel 7.0: per master, the loop checks
// subjective down, objective down, starts a failover when needed and then
// runs one method per failover state. Events carry the exact pub/sub
// payloads redis-sentinel publishes.
package sentinel
