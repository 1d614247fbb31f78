package datetime

import (
	"fmt"
	"strings"
)

// JavaLayout converts a Java date-time pattern (SimpleDateFormat's or
// DateTimeFormatter's, as Flink's DATE_FORMAT and its partition-time
// extractor take them) to a Go time layout: y, M, d, H, h, m, s, S, a, E
// and quoted literals. Other letters are kept as they are in the layout,
// and the error names the first of them (DATE_FORMAT ignores it; a
// partition-time formatter is refused).
func JavaLayout(p string) (string, error) {
	var b strings.Builder
	var unknown string
	for i := 0; i < len(p); {
		ch := p[i]
		j := i
		for j < len(p) && p[j] == ch {
			j++
		}
		n := j - i
		switch ch {
		case 'y', 'u':
			if n == 2 {
				b.WriteString("06")
			} else {
				b.WriteString("2006")
			}
		case 'M':
			switch n {
			case 1:
				b.WriteString("1")
			case 2:
				b.WriteString("01")
			case 3:
				b.WriteString("Jan")
			default:
				b.WriteString("January")
			}
		case 'd':
			b.WriteString(padded(n, "2", "02"))
		case 'H':
			b.WriteString("15")
		case 'h':
			b.WriteString(padded(n, "3", "03"))
		case 'm':
			b.WriteString(padded(n, "4", "04"))
		case 's':
			b.WriteString(padded(n, "5", "05"))
		case 'S':
			b.WriteString(strings.Repeat("0", n))
		case 'a':
			b.WriteString("PM")
		case 'E':
			if n >= 4 {
				b.WriteString("Monday")
			} else {
				b.WriteString("Mon")
			}
		case '\'':
			k := strings.IndexByte(p[i+1:], '\'')
			if k < 0 {
				b.WriteString(p[i+1:])
				return b.String(), fmt.Errorf("unclosed quote in '%s'", p)
			}
			b.WriteString(p[i+1 : i+1+k])
			i += k + 2
			continue
		default:
			if unknown == "" && ('a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z') {
				unknown = p[i:j]
			}
			b.WriteString(p[i:j])
		}
		i = j
	}
	if unknown != "" {
		return b.String(), fmt.Errorf("the field '%s' of '%s' is not supported (y, M, d, H, h, m, s, S, a and E are)", unknown, p)
	}
	return b.String(), nil
}

func padded(n int, unpadded, zeroPadded string) string {
	if n == 1 {
		return unpadded
	}
	return zeroPadded
}
