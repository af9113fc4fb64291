package memstore_test

import (
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/memstore"
	"github.com/ctxkit/ctxkit/store/storetest"
)

func TestFiles(t *testing.T) {
	storetest.RunFiles(t, func(t *testing.T) store.Files { return memstore.NewFiles() })
}
