package checkpoint

import "strings"

// SafeName maps an operator UID to the characters a file name in a
// checkpoint may hold (at most 64 of them).
func SafeName(uid string) string {
	var b strings.Builder
	for _, c := range []byte(uid) {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() > 64 {
		return b.String()[:64]
	}
	return b.String()
}
