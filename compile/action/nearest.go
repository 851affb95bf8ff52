package action

// Nearest returns the candidate within edit distance 2 of s, closest
// first, or "".
func Nearest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if dd := editDistance(s, c); dd < bestD && dd > 0 {
			best, bestD = c, dd
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
