package bert

import "golang.org/x/sys/cpu"

// hasSIMD reports whether kern4x16 can run: AVX2 and FMA.
var hasSIMD = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// kern4x16 is written in gemm_amd64.s.
//
//go:noescape
func kern4x16(a *float32, lda int, b *float32, k int, c *float32, ldc int)
