package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// RunKV runs the key-value suite, each subtest against a new, empty store
// returned by open; open registers whatever cleanup the store needs.
// Times and lifetimes are whole microseconds, as everywhere in the suite.
func RunKV(t *testing.T, open func(t *testing.T) store.KV) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, store.KV)
	}{
		{"PutGetDelete", testKVPutGetDelete},
		{"Values", testKVValues},
		{"Expiry", testKVExpiry},
		{"DeleteExpired", testKVDeleteExpired},
		{"Concurrent", testKVConcurrent},
		{"Each", testKVEach},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

func kvPut(t *testing.T, kv store.KV, key string, value []byte, now time.Time, ttl time.Duration) {
	t.Helper()
	if err := kv.Put(t.Context(), key, value, now, ttl); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

// kvHas checks that key holds want at now.
func kvHas(t *testing.T, kv store.KV, key string, now time.Time, want []byte) {
	t.Helper()
	got, err := kv.Get(t.Context(), key, now)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("Get(%q) at %s = %q, %v; want %q", key, now.Format(time.RFC3339Nano), got, err, want)
	}
}

// kvGone checks that key holds nothing at now.
func kvGone(t *testing.T, kv store.KV, key string, now time.Time) {
	t.Helper()
	got, err := kv.Get(t.Context(), key, now)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(%q) at %s = %q, %v; want an error wrapping store.ErrNotFound", key, now.Format(time.RFC3339Nano), got, err)
	}
}

func testKVPutGetDelete(t *testing.T, kv store.KV) {
	ctx := t.Context()
	keys := []string{"guard/digest/abc", "k", "ünï cøde/ key", "a\x00b", strings.Repeat("long/", 200)}
	for _, k := range keys {
		kvGone(t, kv, k, t0)
	}
	for i, k := range keys {
		kvPut(t, kv, k, fmt.Appendf(nil, "value %d", i), t0, 0)
	}
	for i, k := range keys {
		kvHas(t, kv, k, t0, fmt.Appendf(nil, "value %d", i))
	}
	kvGone(t, kv, "guard/digest/ab", t0)
	kvGone(t, kv, "guard/digest/abcd", t0)
	kvGone(t, kv, "K", t0)

	kvPut(t, kv, "k", []byte("replaced"), t0.Add(time.Second), 0)
	kvHas(t, kv, "k", t0, []byte("replaced"))
	if err := kv.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	kvGone(t, kv, "k", t0)
	if err := kv.Delete(ctx, "k"); err != nil {
		t.Errorf("Delete of a missing key: %v", err)
	}
	kvHas(t, kv, keys[0], t0, []byte("value 0"))
}

func testKVValues(t *testing.T, kv store.KV) {
	binary := make([]byte, 512)
	for i := range binary {
		binary[i] = byte(i)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	for _, tc := range []struct {
		key   string
		value []byte
	}{
		{"binary", binary},
		{"invalid-utf8", []byte{0xff, 0xfe, 0x00, 'a', 0xc3}},
		{"empty", []byte{}},
		{"nil", nil},
		{"big", big},
		{"json", []byte(`{"summary": "x"}`)},
	} {
		in := bytes.Clone(tc.value)
		kvPut(t, kv, tc.key, in, t0, time.Hour)
		for i := range in {
			in[i] ^= 0xff // the store keeps its own copy
		}
		got, err := kv.Get(t.Context(), tc.key, t0)
		if err != nil || !bytes.Equal(got, tc.value) {
			t.Errorf("%s: Get = %d bytes, %v; want the %d put", tc.key, len(got), err, len(tc.value))
			continue
		}
		for i := range got {
			got[i] ^= 0xff // and hands out a copy
		}
		kvHas(t, kv, tc.key, t0, tc.value)
	}
}

func testKVExpiry(t *testing.T, kv store.KV) {
	const ttl = time.Hour
	kvPut(t, kv, "k", []byte("v"), t0, ttl)
	kvHas(t, kv, "k", t0, []byte("v"))
	kvHas(t, kv, "k", t0.Add(-24*time.Hour), []byte("v"))
	kvHas(t, kv, "k", t0.Add(ttl-time.Microsecond), []byte("v"))
	kvGone(t, kv, "k", t0.Add(ttl))
	kvGone(t, kv, "k", t0.Add(ttl+time.Microsecond))
	kvGone(t, kv, "k", t0.Add(1000*ttl))

	// Put again: the lifetime counts from the new put; no ttl (0, or
	// negative) never expires.
	kvPut(t, kv, "k", []byte("v2"), t0.Add(ttl), ttl)
	kvHas(t, kv, "k", t0.Add(2*ttl-time.Microsecond), []byte("v2"))
	kvGone(t, kv, "k", t0.Add(2*ttl))
	kvPut(t, kv, "k", []byte("v3"), t0, 0)
	kvHas(t, kv, "k", t0.Add(100*365*24*time.Hour), []byte("v3"))
	kvPut(t, kv, "neg", []byte("v"), t0, -time.Second)
	kvHas(t, kv, "neg", t0.Add(100*365*24*time.Hour), []byte("v"))
	// A key that never expired gets a lifetime when put with one.
	kvPut(t, kv, "k", []byte("v4"), t0, time.Microsecond)
	kvHas(t, kv, "k", t0, []byte("v4"))
	kvGone(t, kv, "k", t0.Add(time.Microsecond))
}

func testKVDeleteExpired(t *testing.T, kv store.KV) {
	ctx := t.Context()
	kvPut(t, kv, "a", []byte("1h"), t0, time.Hour)
	kvPut(t, kv, "b", []byte("2h"), t0, 2*time.Hour)
	kvPut(t, kv, "c", []byte("never"), t0, 0)
	kvPut(t, kv, "d", []byte("1h from 30m"), t0.Add(30*time.Minute), time.Hour)
	kvPut(t, kv, "e", []byte("1h too"), t0, time.Hour)
	for _, step := range []struct {
		at   time.Duration
		n    int
		gone []string
	}{
		{0, 0, nil},
		{time.Hour - time.Microsecond, 0, nil},
		{time.Hour, 2, []string{"a", "e"}},
		{time.Hour, 0, nil},
		{90 * time.Minute, 1, []string{"d"}},
		{1000 * time.Hour, 1, []string{"b"}},
	} {
		now := t0.Add(step.at)
		n, err := kv.DeleteExpired(ctx, now)
		if err != nil || n != step.n {
			t.Errorf("DeleteExpired at t0+%v = %d, %v; want %d", step.at, n, err, step.n)
		}
		// What was deleted is gone even at a time it had not expired.
		for _, k := range step.gone {
			kvGone(t, kv, k, t0)
		}
	}
	kvHas(t, kv, "c", t0.Add(1000*time.Hour), []byte("never"))
}

func testKVConcurrent(t *testing.T, kv store.KV) {
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			key := fmt.Sprintf("k%d", i)
			for j := range 5 {
				if err := kv.Put(t.Context(), key, fmt.Appendf(nil, "%d-%d", i, j), t0, 0); err != nil {
					t.Errorf("Put(%s): %v", key, err)
				}
			}
			if err := kv.Put(t.Context(), "shared", []byte("x"), t0, 0); err != nil {
				t.Errorf("Put(shared): %v", err)
			}
		})
	}
	wg.Wait()
	for i := range n {
		kvHas(t, kv, fmt.Sprintf("k%d", i), t0, fmt.Appendf(nil, "%d-4", i))
	}
	kvHas(t, kv, "shared", t0, []byte("x"))
}

// kvEntry is what Each gives for one key.
type kvEntry struct {
	value   string
	expires time.Time
}

// kvEach returns what Each gives at now, in its order.
func kvEach(t *testing.T, kv store.KV, now time.Time) ([]string, map[string]kvEntry) {
	t.Helper()
	var keys []string
	got := map[string]kvEntry{}
	err := kv.Each(t.Context(), now, func(key string, value []byte, expires time.Time) error {
		keys = append(keys, key)
		got[key] = kvEntry{string(value), expires}
		return nil
	})
	if err != nil {
		t.Fatalf("Each at %s: %v", now.Format(time.RFC3339Nano), err)
	}
	return keys, got
}

// testKVEach: Each gives every live key in key order, with its value and
// expiry, skips expired ones, and stops at fn's error.
func testKVEach(t *testing.T, kv store.KV) {
	if keys, _ := kvEach(t, kv, t0); len(keys) != 0 {
		t.Errorf("Each of an empty store gave %q", keys)
	}
	kvPut(t, kv, "b", []byte("two"), t0, time.Hour)
	kvPut(t, kv, "a", []byte("one"), t0, 0)
	kvPut(t, kv, "c/x", []byte{}, t0, 0)
	kvPut(t, kv, "a\x00b", []byte{0xff, 0}, t0, 0)
	kvPut(t, kv, "gone", []byte("old"), t0.Add(-2*time.Hour), time.Hour)
	kvPut(t, kv, "B", []byte("upper"), t0.Add(time.Minute), 90*time.Minute)

	keys, got := kvEach(t, kv, t0)
	if want := []string{"B", "a", "a\x00b", "b", "c/x"}; !slices.Equal(keys, want) {
		t.Fatalf("Each gave keys %q, want %q (live ones, by key)", keys, want)
	}
	for k, want := range map[string]kvEntry{
		"a":      {"one", time.Time{}},
		"a\x00b": {"\xff\x00", time.Time{}},
		"b":      {"two", t0.Add(time.Hour)},
		"B":      {"upper", t0.Add(time.Minute + 90*time.Minute)},
		"c/x":    {"", time.Time{}},
	} {
		e := got[k]
		if e.value != want.value || !e.expires.Equal(want.expires) {
			t.Errorf("Each: %q = %q expiring %v; want %q expiring %v", k, e.value, e.expires, want.value, want.expires)
		}
	}
	if keys, _ := kvEach(t, kv, t0.Add(time.Hour)); !slices.Equal(keys, []string{"B", "a", "a\x00b", "c/x"}) {
		t.Errorf("Each at t0+1h gave %q: an expired key is not given", keys)
	}

	stop := errors.New("stop")
	n := 0
	if err := kv.Each(t.Context(), t0, func(string, []byte, time.Time) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("Each with fn failing: %v after %d calls; want fn's error at once", err, n)
	}
	// fn may use the store.
	err := kv.Each(t.Context(), t0, func(key string, value []byte, _ time.Time) error {
		return kv.Put(t.Context(), "copy/"+key, value, t0, 0)
	})
	if err != nil {
		t.Fatalf("Each writing to the store: %v", err)
	}
	kvHas(t, kv, "copy/b", t0, []byte("two"))
}
