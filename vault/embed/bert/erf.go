package bert

import "math"

// erf32 is the error function in float32: the rational approximation
// erf(x) ≈ x·P(x²)/Q(x²) on [-4, 4] (the coefficients of Eigen's and
// XLA's float erf), ±1 beyond. Its error against math.Erf stays below
// 1e-6 (TestErf32), and it is several times faster than math.Erf, which
// works in float64 and dominated the GELU.
func erf32(x float32) float32 {
	x = max(-4, min(4, x))
	x2 := x * x
	p := float32(-2.72614225801306e-10)
	p = p*x2 + 2.77068142495902e-08
	p = p*x2 + -2.10102402082508e-06
	p = p*x2 + -5.69250639462346e-05
	p = p*x2 + -7.34990630326855e-04
	p = p*x2 + -2.95459980854025e-03
	p = p*x2 + -1.60960333262415e-02
	p *= x
	q := float32(-1.45660718464996e-05)
	q = q*x2 + -2.13374055278905e-04
	q = q*x2 + -1.68282697438203e-03
	q = q*x2 + -7.37332916720468e-03
	q = q*x2 + -1.42647390514189e-02
	return p / q
}

// exp32 is e^x in float32 for x ≤ 0 (the shifted scores of a softmax):
// x = n·ln2 + r with |r| ≤ ln2/2 (ln2 split in two for exactness), e^r
// by Cephes' degree-6 polynomial, then scaled by 2^n through the exponent
// bits. Relative error below 1e-6 (TestExp32); below -87 it returns 0.
func exp32(x float32) float32 {
	if x < -87 {
		return 0
	}
	t := x * 1.44269504088896341
	var n int32
	if t < 0 {
		n = int32(t - 0.5)
	} else {
		n = int32(t + 0.5)
	}
	fn := float32(n)
	r := x - fn*0.693359375 - fn*-2.12194440e-4
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	e := p*r*r + r + 1
	return e * math.Float32frombits(uint32(n+127)<<23)
}
