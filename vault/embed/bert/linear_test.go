package bert

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestLinearBothKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, sh := range [][3]int{{1, 1, 1}, {3, 5, 7}, {4, 16, 4}, {17, 65, 33}, {64, 96, 32}, {33, 130, 384}, {8, 1536, 384}} {
		m, n, k := sh[0], sh[1], sh[2]
		a, w, bias := randSlice(r, m*k), randSlice(r, n*k), randSlice(r, n)
		want := naiveMatMulT(a, w, m, n, k, bias)
		for _, simd := range []bool{false, true} {
			if simd && !hasSIMD {
				continue
			}
			t.Run(fmt.Sprintf("%dx%dx%d/simd=%v", m, n, k, simd), func(t *testing.T) {
				got := make([]float32, m*n)
				newLinear(w, n, k, simd).apply(got, a, m, bias)
				for i := range want {
					if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*math.Sqrt(float64(k)) {
						t.Fatalf("c[%d] = %g, want %g", i, got[i], want[i])
					}
				}
			})
		}
	}
}

// BenchmarkLinear measures the GEMM of the model at the MiniLM layer
// shapes (m tokens × n outputs × k inputs), with the vector kernel when
// the CPU has one, and reports GFLOP/s.
func BenchmarkLinear(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tokens := range []int{32, 1024} {
		for _, nk := range [][2]int{{384, 384}, {1152, 384}, {1536, 384}, {384, 1536}} {
			m, n, k := tokens, nk[0], nk[1]
			b.Run(fmt.Sprintf("m%d_n%d_k%d_simd=%v", m, n, k, hasSIMD), func(b *testing.B) {
				a, c := randSlice(r, m*k), make([]float32, m*n)
				l := newLinear(randSlice(r, n*k), n, k, hasSIMD)
				for b.Loop() {
					l.apply(c, a, m, nil)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
