package index

// TokenClassForTest is classOf: 0 separator, 1 token character, 2 dropped
// diacritic.
func TokenClassForTest(r rune) int { return int(classOf(r)) }

// FoldForTest is fold.
func FoldForTest(r rune) rune { return fold(r) }
