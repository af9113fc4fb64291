package bert

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func naiveMatMulT(a, b []float32, m, n, k int, bias []float32) []float32 {
	c := make([]float32, m*n)
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				s += float64(a[i*k+p]) * float64(b[j*k+p])
			}
			if bias != nil {
				s += float64(bias[j])
			}
			c[i*n+j] = float32(s)
		}
	}
	return c
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

func TestMatMulT(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, sh := range [][3]int{{1, 1, 1}, {3, 5, 7}, {4, 4, 4}, {17, 65, 33}, {64, 96, 32}, {33, 130, 384}, {5, 3, 1}} {
		m, n, k := sh[0], sh[1], sh[2]
		for _, withBias := range []bool{false, true} {
			t.Run(fmt.Sprintf("%dx%dx%d/bias=%v", m, n, k, withBias), func(t *testing.T) {
				a, b := randSlice(r, m*k), randSlice(r, n*k)
				var bias []float32
				if withBias {
					bias = randSlice(r, n)
				}
				want := naiveMatMulT(a, b, m, n, k, bias)
				got := make([]float32, m*n)
				matMulT(got, a, b, m, n, k, bias)
				for i := range want {
					if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*math.Sqrt(float64(k)) {
						t.Fatalf("c[%d] = %g, want %g", i, got[i], want[i])
					}
				}
			})
		}
	}
}

// BenchmarkMatMulT measures the GEMM at the MiniLM layer shapes (m tokens
// × n outputs × k inputs) and reports GFLOP/s.
func BenchmarkMatMulT(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tokens := range []int{32, 1024} {
		for _, nk := range [][2]int{{384, 384}, {1536, 384}, {384, 1536}} {
			m, n, k := tokens, nk[0], nk[1]
			b.Run(fmt.Sprintf("m%d_n%d_k%d", m, n, k), func(b *testing.B) {
				a, w, c := randSlice(r, m*k), randSlice(r, n*k), make([]float32, m*n)
				for b.Loop() {
					matMulT(c, a, w, m, n, k, nil)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
