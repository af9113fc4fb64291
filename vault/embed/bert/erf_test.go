package bert

import (
	"math"
	"testing"
)

func TestErf32(t *testing.T) {
	worst := 0.0
	for x := -8.0; x <= 8.0; x += 1.0 / 1024 {
		got := float64(erf32(float32(x)))
		want := math.Erf(float64(float32(x)))
		worst = max(worst, math.Abs(got-want))
	}
	if worst > 1e-6 {
		t.Fatalf("erf32: worst error %.3g", worst)
	}
	t.Logf("erf32: worst error %.3g", worst)
}

func BenchmarkErf(b *testing.B) {
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(i-2048) / 512
	}
	b.Run("erf32", func(b *testing.B) {
		var s float32
		for b.Loop() {
			for _, v := range x {
				s += erf32(v)
			}
		}
		_ = s
	})
	b.Run("math.Erf", func(b *testing.B) {
		var s float64
		for b.Loop() {
			for _, v := range x {
				s += math.Erf(float64(v))
			}
		}
		_ = s
	})
}

func TestExp32(t *testing.T) {
	worst := 0.0
	for x := -87.0; x <= 0; x += 1.0 / 512 {
		want := math.Exp(float64(float32(x)))
		got := float64(exp32(float32(x)))
		worst = max(worst, math.Abs(got-want)/want)
	}
	if worst > 1e-6 {
		t.Fatalf("exp32: worst relative error %.3g", worst)
	}
	t.Logf("exp32: worst relative error %.3g", worst)
	if exp32(-100) != 0 || exp32(0) != 1 {
		t.Errorf("exp32(-100) = %v, exp32(0) = %v", exp32(-100), exp32(0))
	}
}
