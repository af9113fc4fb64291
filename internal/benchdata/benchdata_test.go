package benchdata

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestWriteList(t *testing.T) {
	var b bytes.Buffer
	if err := WriteList(&b, 1000); err != nil {
		t.Fatal(err)
	}
	var items []map[string]any
	if err := json.Unmarshal(b.Bytes(), &items); err != nil || len(items) != 1000 {
		t.Fatalf("%d items, %v", len(items), err)
	}
	if per := b.Len() / 1000; per < 350 || per > 450 {
		t.Errorf("%d bytes per item, want about 400", per)
	}
	var again bytes.Buffer
	_ = WriteList(&again, 1000)
	if !bytes.Equal(b.Bytes(), again.Bytes()) {
		t.Error("the list is not deterministic")
	}
}

func TestWriteText(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, 100_000); err != nil {
		t.Fatal(err)
	}
	if n := b.Len(); n < 100_000 || n > 100_200 {
		t.Errorf("%d bytes, want about 100,000", n)
	}
	if !bytes.Contains(b.Bytes(), []byte(".\n\n")) {
		t.Error("no paragraph breaks")
	}
}
