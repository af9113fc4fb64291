package bert

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Tile sizes of matMulT: a worker computes a tileM × tileN block of C at
// a time, so that tileN rows of B (at most 64 × 1536 × 4 bytes) stay in
// the L2 cache while the rows of A stream past.
const (
	tileM = 16
	tileN = 64
)

// matMulT computes c[m×n] = a[m×k] · b[n×k]ᵀ (+ bias[n] when bias is not
// nil). B is row-major with k contiguous: the layout of a PyTorch Linear
// weight [out, in], so no transpose is needed. Tiles of C are shared out
// to runtime.GOMAXPROCS goroutines.
func matMulT(c, a, b []float32, m, n, k int, bias []float32) {
	if m == 0 || n == 0 {
		return
	}
	_ = a[m*k-1]
	_ = b[n*k-1]
	_ = c[m*n-1]
	tm, tn := (m+tileM-1)/tileM, (n+tileN-1)/tileN
	tiles := tm * tn
	workers := min(runtime.GOMAXPROCS(0), tiles)
	if 2*m*n*k < 1<<17 {
		workers = 1 // too small to be worth a goroutine
	}
	run := func(next *atomic.Int64) {
		for {
			t := int(next.Add(1) - 1)
			if t >= tiles {
				return
			}
			i0, j0 := (t/tn)*tileM, (t%tn)*tileN
			gemmTile(c, a, b, i0, min(i0+tileM, m), j0, min(j0+tileN, n), n, k, bias)
		}
	}
	var next atomic.Int64
	if workers <= 1 {
		run(&next)
		return
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { run(&next) })
	}
	wg.Wait()
}

// gemmTile computes rows [i0, i1) and columns [j0, j1) of c with a 4×4
// register-blocked kernel, and plain dot products at the edges.
func gemmTile(c, a, b []float32, i0, i1, j0, j1, n, k int, bias []float32) {
	i := i0
	for ; i+4 <= i1; i += 4 {
		j := j0
		for ; j+4 <= j1; j += 4 {
			kernel4x4(c, a, b, i, j, n, k, bias)
		}
		for ; j < j1; j++ {
			for r := i; r < i+4; r++ {
				c[r*n+j] = dot(a[r*k:(r+1)*k], b[j*k:(j+1)*k]) + biasAt(bias, j)
			}
		}
	}
	for ; i < i1; i++ {
		ar := a[i*k : (i+1)*k]
		for j := j0; j < j1; j++ {
			c[i*n+j] = dot(ar, b[j*k:(j+1)*k]) + biasAt(bias, j)
		}
	}
}

func biasAt(bias []float32, j int) float32 {
	if bias == nil {
		return 0
	}
	return bias[j]
}

// kernel4x4 computes the 4×4 block of c at (i, j) as two 2×4 blocks:
// eight running sums over k fit the sixteen SSE registers of amd64 with
// the six loaded values, where sixteen sums would spill to the stack.
func kernel4x4(c, a, b []float32, i, j, n, k int, bias []float32) {
	kernel2x4(c, a, b, i, j, n, k, bias)
	kernel2x4(c, a, b, i+2, j, n, k, bias)
}

// kernel2x4 computes the 2×4 block of c at (i, j).
func kernel2x4(c, a, b []float32, i, j, n, k int, bias []float32) {
	a0 := a[i*k : i*k+k]
	a1 := a[(i+1)*k : (i+1)*k+k]
	b0 := b[j*k : j*k+k]
	b1 := b[(j+1)*k : (j+1)*k+k]
	b2 := b[(j+2)*k : (j+2)*k+k]
	b3 := b[(j+3)*k : (j+3)*k+k]
	// Equal lengths let the compiler drop the bounds checks of the loop.
	a1, b0, b1, b2, b3 = a1[:len(a0)], b0[:len(a0)], b1[:len(a0)], b2[:len(a0)], b3[:len(a0)]
	var c00, c01, c02, c03, c10, c11, c12, c13 float32
	for p, x0 := range a0 {
		x1 := a1[p]
		y0, y1, y2, y3 := b0[p], b1[p], b2[p], b3[p]
		c00 += x0 * y0
		c01 += x0 * y1
		c02 += x0 * y2
		c03 += x0 * y3
		c10 += x1 * y0
		c11 += x1 * y1
		c12 += x1 * y2
		c13 += x1 * y3
	}
	var d0, d1, d2, d3 float32
	if bias != nil {
		d0, d1, d2, d3 = bias[j], bias[j+1], bias[j+2], bias[j+3]
	}
	r := c[i*n+j : i*n+j+4]
	r[0], r[1], r[2], r[3] = c00+d0, c01+d1, c02+d2, c03+d3
	r = c[(i+1)*n+j : (i+1)*n+j+4]
	r[0], r[1], r[2], r[3] = c10+d0, c11+d1, c12+d2, c13+d3
}

// dot is the dot product of two slices of the same length, in four
// independent sums.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	p := 0
	for ; p+4 <= len(a); p += 4 {
		s0 += a[p] * b[p]
		s1 += a[p+1] * b[p+1]
		s2 += a[p+2] * b[p+2]
		s3 += a[p+3] * b[p+3]
	}
	for ; p < len(a); p++ {
		s0 += a[p] * b[p]
	}
	return (s0 + s1) + (s2 + s3)
}
