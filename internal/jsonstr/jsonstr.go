// Package jsonstr reads the body of a JSON string (RFC 8259): the bytes up
// to the closing quote, with escapes and UTF-16 surrogate pairs decoded;
// and writes one, never with invalid UTF-8. The hand-written JSON codecs
// (package nexmark's events and the SQL layer's json format) share it, so
// both accept, refuse and write the same strings.
package jsonstr

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// Error is a malformed string at byte offset Offset of the input.
type Error struct {
	Offset int
	Msg    string
}

func (e *Error) Error() string { return fmt.Sprintf("offset %d: %s", e.Offset, e.Msg) }

// Read reads the string whose body starts at b[i] (just after the opening
// quote) and returns it and the offset after its closing quote. A string
// without escapes is returned as a slice of b, with no copy; one with
// escapes is decoded into scratch[:0] (grown as needed; nil allocates).
func Read(b []byte, i int, scratch []byte) ([]byte, int, *Error) {
	start := i
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			return b[start:i], i + 1, nil
		case c == '\\':
			return unescape(b, start, i, scratch)
		case c < 0x20:
			return nil, i, &Error{i, fmt.Sprintf("control character 0x%02x in a string", c)}
		}
		i++
	}
	return nil, i, &Error{i, "unterminated string"}
}

// unescape decodes from the first escape at b[i] on; b[start:i] is plain.
func unescape(b []byte, start, i int, scratch []byte) ([]byte, int, *Error) {
	out := append(scratch[:0], b[start:i]...)
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return out, i + 1, nil
		case c < 0x20:
			return nil, i, &Error{i, fmt.Sprintf("control character 0x%02x in a string", c)}
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(b) {
			break
		}
		e := b[i+1]
		i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(b, i)
			if !ok {
				return nil, i, &Error{i, "invalid \\u escape"}
			}
			i += 4
			if utf16.IsSurrogate(r) {
				// A high surrogate pairs with a following \u low one; a
				// lone surrogate decodes to U+FFFD, and an escape after it
				// that does not pair is read on its own (as encoding/json).
				r2 := rune(-1)
				if i+5 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
					r2, _ = hex4(b, i+2)
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, i - 1, &Error{i - 1, fmt.Sprintf("invalid escape '\\%c'", e)}
		}
	}
	return nil, len(b), &Error{len(b), "unterminated string"}
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// Append appends s as a JSON string, with its quotes: '"', '\\' and control
// characters escaped, and each byte that is not part of valid UTF-8 written
// as U+FFFD.
func Append[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst, _ = AppendStrict(dst, s, false)
	return dst
}

// AppendStrict appends s as Append does, or, with fail, ends the append at
// the first byte that is not part of valid UTF-8: bad is then its offset
// in s, else -1. Strict JSON parsers refuse invalid UTF-8, so it is never
// written raw; U+FFFD is what Flink's JSON format writes (its strings are
// decoded into Java strings with replacement before Jackson writes them).
func AppendStrict[S ~string | ~[]byte](dst []byte, s S, fail bool) (out []byte, bad int) {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			if c >= 0x20 && c != '"' && c != '\\' {
				continue
			}
			dst = append(dst, s[start:i-1]...)
			dst = appendEscape(dst, c)
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		if r == utf8.RuneError && size == 1 {
			if fail {
				return dst, i
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\ufffd"...)
			start = i + 1
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), -1
}

func appendEscape(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	const hex = "0123456789abcdef"
	return append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
}
