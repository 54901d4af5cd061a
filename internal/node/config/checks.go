package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The value checks of the directive table: each normalises a value to
// what CONFIG GET shows, or refuses it with Redis's text.

func checkIntRange(lo, hi int64) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := parseMemory(v)
		if err != nil {
			return "", errors.New("argument couldn't be parsed into an integer")
		}
		if n < lo || n > hi {
			return "", fmt.Errorf("argument must be between %d and %d inclusive", lo, hi)
		}
		return strconv.FormatInt(n, 10), nil
	}
}

func checkBool(v string) (string, error) {
	switch strings.ToLower(v) {
	case "yes", "1", "true":
		return "yes", nil
	case "no", "0", "false":
		return "no", nil
	}
	return "", errors.New("argument must be 'yes' or 'no'")
}

func checkEnum(values ...string) func(string) (string, error) {
	return func(v string) (string, error) {
		lv := strings.ToLower(v)
		for _, ok := range values {
			if lv == ok {
				return ok, nil
			}
		}
		return "", errors.New("argument(s) must be one of the following: " + strings.Join(values, ", "))
	}
}

func checkMemory(v string) (string, error) {
	n, err := parseMemory(v)
	if err != nil || n < 0 {
		return "", errors.New("argument must be a memory value")
	}
	return strconv.FormatInt(n, 10), nil
}

// checkMemoryOrPercent accepts a memory value or a percentage of
// maxmemory ("10%"), as Redis's PERCENT_CONFIG directives do.
func checkMemoryOrPercent(v string) (string, error) {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < 0 {
			return "", errors.New("argument must be a memory or percent value")
		}
		if n > 100 {
			return "", errors.New("percentage argument must be less or equal to 100")
		}
		return strconv.FormatInt(n, 10) + "%", nil
	}
	return checkMemory(v)
}

func checkMemoryMin(min int64) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := parseMemory(v)
		if err != nil || n < min {
			return "", errors.New("argument must be a memory value")
		}
		return strconv.FormatInt(n, 10), nil
	}
}

// parseMemory parses "100", "1kb", "2mb", "1gb", "1k" ... as Redis's
// memtoull does.
func parseMemory(v string) (int64, error) {
	lv := strings.ToLower(strings.TrimSpace(v))
	mul := int64(1)
	for _, u := range []struct {
		s string
		m int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1000 * 1000 * 1000}, {"m", 1000 * 1000}, {"k", 1000}, {"b", 1}} {
		if strings.HasSuffix(lv, u.s) {
			lv = strings.TrimSuffix(lv, u.s)
			mul = u.m
			break
		}
	}
	n, err := strconv.ParseInt(lv, 10, 64)
	if err != nil {
		return 0, err
	}
	return n * mul, nil
}

func checkSave(v string) (string, error) {
	f := strings.Fields(v)
	if len(f)%2 != 0 {
		return "", errors.New("Invalid save parameters")
	}
	for _, x := range f {
		if _, err := strconv.ParseInt(x, 10, 64); err != nil {
			return "", errors.New("Invalid save parameters")
		}
	}
	return strings.Join(f, " "), nil
}

func checkOutputBufferLimit(v string) (string, error) {
	f := strings.Fields(v)
	if len(f)%4 != 0 {
		return "", errors.New("Wrong number of arguments in buffer limit configuration.")
	}
	cur := map[string][3]string{}
	for i := 0; i < len(f); i += 4 {
		class := strings.ToLower(f[i])
		if class == "replica" {
			class = "slave"
		}
		if class != "normal" && class != "slave" && class != "pubsub" {
			return "", errors.New("Invalid client class specified in buffer limit configuration.")
		}
		var vals [3]string
		for j := 0; j < 3; j++ {
			n, err := parseMemory(f[i+1+j])
			if err != nil || n < 0 {
				return "", errors.New("Error in hard, soft or soft-seconds setting in buffer limit configuration.")
			}
			vals[j] = strconv.FormatInt(n, 10)
		}
		cur[class] = vals
	}
	// Always print all three classes, as CONFIG GET does.
	def := map[string][3]string{"normal": {"0", "0", "0"}, "slave": {"268435456", "67108864", "60"}, "pubsub": {"33554432", "8388608", "60"}}
	var out []string
	for _, class := range []string{"normal", "slave", "pubsub"} {
		vals, ok := cur[class]
		if !ok {
			vals = def[class]
		}
		out = append(out, class, vals[0], vals[1], vals[2])
	}
	return strings.Join(out, " "), nil
}
