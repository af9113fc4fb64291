//go:build !amd64

package bert

// hasSIMD is false: only amd64 has a vector kernel so far.
const hasSIMD = false

func kern4x16(a *float32, lda int, b *float32, k int, c *float32, ldc int) {
	panic("bert: kern4x16 without SIMD")
}
