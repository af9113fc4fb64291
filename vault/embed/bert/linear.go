package bert

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// panelW is the width of a packed panel of B: two 8-float vectors.
const panelW = 16

// linear is the weight W [n, k] of a Linear layer, in the layout its
// GEMM wants: as is for the portable kernel, or packed in panels of 16
// output features for the vector kernel (panel q holds, for each p < k,
// W[16q..16q+15][p] contiguously; the last panel is padded with zeros).
type linear struct {
	n, k   int
	raw    []float32 // [n, k], for the portable kernel
	panels []float32 // [ceil(n/16), k, 16], for the vector kernel
}

// newLinear lays out w [n, k] for the vector kernel when simd is set,
// else keeps it as is.
func newLinear(w []float32, n, k int, simd bool) *linear {
	l := &linear{n: n, k: k}
	if !simd {
		l.raw = w
		return l
	}
	np := (n + panelW - 1) / panelW
	l.panels = packRows(make([]float32, np*k*panelW), w, n, k)
	return l
}

// packRows packs the n rows of w [n, k] (the output features) into
// panels of 16, zero-padding the last: dst[(q*k+p)*16+c] = w[(16q+c)*k+p].
func packRows(dst, w []float32, n, k int) []float32 {
	np := (n + panelW - 1) / panelW
	dst = dst[:np*k*panelW]
	if n%panelW != 0 {
		clear(dst[(np-1)*k*panelW:])
	}
	for j := range n {
		q, c := j/panelW, j%panelW
		panel := dst[q*k*panelW : (q+1)*k*panelW]
		for p, v := range w[j*k : (j+1)*k] {
			panel[p*panelW+c] = v
		}
	}
	return dst
}

// packCols packs w [k, n] (k rows of n features, row stride ld) into
// panels of 16 features: dst[(q*k+p)*16+c] = w[p*ld+16q+c].
func packCols(dst, w []float32, k, n, ld int) []float32 {
	np := (n + panelW - 1) / panelW
	dst = dst[:np*k*panelW]
	for q := range np {
		w16 := min(panelW, n-q*panelW)
		for p := range k {
			d := dst[(q*k+p)*panelW : (q*k+p+1)*panelW]
			copy(d, w[p*ld+q*panelW:p*ld+q*panelW+w16])
			clear(d[w16:])
		}
	}
	return dst
}

// mulPacked computes rows [i0, i1) and panels [q0, q1) of
// c[i*ldc+j] = Σp a[i*lda+p]·B[j][p], with B (n features of k) packed in
// panels; four rows at a time with kern4x16, the rest in Go.
func mulPacked(c []float32, ldc int, a []float32, lda, i0, i1 int, panels []float32, n, k, q0, q1 int) {
	var tmp [4 * panelW]float32
	for q := q0; q < q1; q++ {
		panel := panels[q*k*panelW : (q+1)*k*panelW]
		j0 := q * panelW
		w := min(panelW, n-j0)
		i := i0
		for ; i+4 <= i1; i += 4 {
			_ = a[(i+3)*lda+k-1]
			if w == panelW {
				_ = c[(i+3)*ldc+j0+panelW-1]
				kern4x16(&a[i*lda], lda, &panel[0], k, &c[i*ldc+j0], ldc)
			} else {
				kern4x16(&a[i*lda], lda, &panel[0], k, &tmp[0], panelW)
				for r := range 4 {
					copy(c[(i+r)*ldc+j0:(i+r)*ldc+j0+w], tmp[r*panelW:r*panelW+w])
				}
			}
		}
		for ; i < i1; i++ { // the last rows, one at a time
			acc := tmp[:panelW]
			clear(acc)
			for p, x := range a[i*lda : i*lda+k] {
				for cc, y := range panel[p*panelW : (p+1)*panelW] {
					acc[cc] += x * y
				}
			}
			copy(c[i*ldc+j0:i*ldc+j0+w], acc[:w])
		}
	}
}

// apply computes c[m, n] = a[m, k] · Wᵀ + bias, over all cores.
func (l *linear) apply(c, a []float32, m int, bias []float32) {
	if l.panels == nil {
		matMulT(c, a, l.raw, m, l.n, l.k, bias)
		return
	}
	if m == 0 {
		return
	}
	n, k := l.n, l.k
	_ = a[m*k-1]
	_ = c[m*n-1]
	np := (n + panelW - 1) / panelW
	const rowsPerTile, panelsPerTile = 16, 4
	tm, tn := (m+rowsPerTile-1)/rowsPerTile, (np+panelsPerTile-1)/panelsPerTile
	tiles := tm * tn
	workers := min(runtime.GOMAXPROCS(0), tiles)
	var next atomic.Int64
	run := func() {
		for {
			t := int(next.Add(1) - 1)
			if t >= tiles {
				return
			}
			i0, q0 := (t/tn)*rowsPerTile, (t%tn)*panelsPerTile
			i1, q1 := min(i0+rowsPerTile, m), min(q0+panelsPerTile, np)
			mulPacked(c, n, a, k, i0, i1, l.panels, n, k, q0, q1)
			if bias != nil {
				j0, j1 := q0*panelW, min(q1*panelW, n)
				for r := i0; r < i1; r++ {
					row := c[r*n+j0 : r*n+j1]
					for cc := range row {
						row[cc] += bias[j0+cc]
					}
				}
			}
		}
	}
	if workers <= 1 || 2*m*n*k < 1<<17 {
		run()
		return
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(run)
	}
	wg.Wait()
}
