package info

import (
	"strings"
	"sync"
)

// ErrorStats counts error replies by their code (the first word) for INFO
// errorstats, at most 128 codes (a code already counted keeps counting).
// Its zero value is empty and safe for concurrent use.
type ErrorStats struct {
	mu     sync.Mutex
	byCode map[string]int64
}

// Count counts the error reply msg.
func (e *ErrorStats) Count(msg string) {
	code := msg
	if i := strings.IndexByte(msg, ' '); i > 0 {
		code = msg[:i]
	}
	e.mu.Lock()
	if e.byCode == nil {
		e.byCode = make(map[string]int64)
	}
	if len(e.byCode) < 128 || e.byCode[code] > 0 {
		e.byCode[code]++
	}
	e.mu.Unlock()
}

// Reset forgets every count (CONFIG RESETSTAT).
func (e *ErrorStats) Reset() {
	e.mu.Lock()
	e.byCode = nil
	e.mu.Unlock()
}

// Write writes the errorstat lines (WriteErrorStats).
func (e *ErrorStats) Write(b *strings.Builder) {
	e.mu.Lock()
	WriteErrorStats(b, e.byCode)
	e.mu.Unlock()
}
