package main

import (
	"reflect"
	"testing"
)

func TestDirectiveLines(t *testing.T) {
	got, err := directiveLines([]string{"--port", "26380", "--sentinel", "monitor m 127.0.0.1 6379 2", "--bind", "127.0.0.1", "::1", "--metrics-addr", "127.0.0.1:9000"})
	want := []string{"port 26380", "sentinel monitor m 127.0.0.1 6379 2", "bind 127.0.0.1 ::1", "metrics-addr 127.0.0.1:9000"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("directiveLines = %q, %v; want %q", got, err, want)
	}
	if _, err := directiveLines([]string{"26380"}); err == nil {
		t.Error("a value without a directive was accepted")
	}
}
