package crashtest

// Minus returns the lines of a that b lacks, as multisets: a line twice in
// a and once in b is in the result once. Crash tests compare committed
// output with a run without failures by it (missing: Minus(want, got);
// duplicated or extra: Minus(got, want)).
func Minus(a, b []string) []string {
	m := map[string]int{}
	for _, x := range b {
		m[x]++
	}
	var out []string
	for _, x := range a {
		if m[x] > 0 {
			m[x]--
		} else {
			out = append(out, x)
		}
	}
	return out
}
