package memstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// KV is an in-memory [store.KV].
type KV struct {
	mu sync.Mutex
	m  map[string]kvEntry
}

type kvEntry struct {
	value   []byte
	expires time.Time // zero: never
}

var _ store.KV = (*KV)(nil)

// NewKV returns an empty key-value store.
func NewKV() *KV { return &KV{m: map[string]kvEntry{}} }

// Get returns a copy of key's value unless it has expired at now.
func (kv *KV) Get(_ context.Context, key string, now time.Time) ([]byte, error) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	e, ok := kv.m[key]
	if !ok || (!e.expires.IsZero() && !now.Before(e.expires)) {
		return nil, fmt.Errorf("key %q: %w", key, store.ErrNotFound)
	}
	return slices.Clone(e.value), nil
}

// Put sets key.
func (kv *KV) Put(_ context.Context, key string, value []byte, now time.Time, ttl time.Duration) error {
	e := kvEntry{value: slices.Clone(value)}
	if ttl > 0 {
		e.expires = now.Add(ttl)
	}
	kv.mu.Lock()
	defer kv.mu.Unlock()
	kv.m[key] = e
	return nil
}

// Delete removes key.
func (kv *KV) Delete(_ context.Context, key string) error {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	delete(kv.m, key)
	return nil
}

// DeleteExpired removes the keys expired at now.
func (kv *KV) DeleteExpired(_ context.Context, now time.Time) (int, error) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	n := 0
	for k, e := range kv.m {
		if !e.expires.IsZero() && !now.Before(e.expires) {
			delete(kv.m, k)
			n++
		}
	}
	return n, nil
}

// Each calls fn with every key not expired at now, by key, with a copy of
// its value; fn runs without the store's lock, so it may use the store.
func (kv *KV) Each(ctx context.Context, now time.Time, fn func(key string, value []byte, expires time.Time) error) error {
	kv.mu.Lock()
	keys := make([]string, 0, len(kv.m))
	entries := make(map[string]kvEntry, len(kv.m))
	for k, e := range kv.m {
		if e.expires.IsZero() || now.Before(e.expires) {
			keys = append(keys, k)
			entries[k] = kvEntry{value: slices.Clone(e.value), expires: e.expires}
		}
	}
	kv.mu.Unlock()
	slices.Sort(keys)
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		e := entries[k]
		if e.value == nil {
			e.value = []byte{}
		}
		if err := fn(k, e.value, e.expires); err != nil {
			return err
		}
	}
	return nil
}
