package format

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"

	"github.com/weirstream/weir/internal/datetime"
	"github.com/weirstream/weir/sql/types"
)

// The text forms of the temporal types and of DECIMAL, shared by the
// formats (json, csv, print): Flink's SQL forms.

const (
	microsPerSecond = 1_000_000
	microsPerDay    = 86_400 * microsPerSecond
)

// The errors name the forms of datetime.Format; the caller names the input.
var (
	errTimestamp = errors.New("not a timestamp of the form " + datetime.Format.Describe(datetime.KindTimestamp))
	errDate      = errors.New("not a date of the form " + datetime.Format.Describe(datetime.KindDate))
	errTime      = errors.New("not a time of the form " + datetime.Format.Describe(datetime.KindTime))
)

// ParseTimestamp reads 'yyyy-MM-dd HH:mm[:ss[.fffffffff]]' (or with a 'T'
// between date and time, as ISO-8601, and an optional trailing 'Z'; the
// forms of datetime.Format) into microseconds since the epoch; fractions
// beyond microseconds are cut off, then the value is truncated to
// precision fractional digits.
func ParseTimestamp(b []byte, precision int) (int64, error) {
	us, err := datetime.ParseTimestamp(b, datetime.Format)
	if err != nil {
		return 0, errTimestamp
	}
	return truncMicros(us, precision), nil
}

func truncMicros(us int64, precision int) int64 {
	if precision >= 6 || precision < 0 {
		return us
	}
	m := int64(1)
	for i := precision; i < 6; i++ {
		m *= 10
	}
	r := us % m
	if r < 0 {
		r += m
	}
	return us - r
}

// ParseDate reads 'yyyy-MM-dd' into days since 1970-01-01.
func ParseDate(b []byte) (int64, error) {
	d, err := datetime.ParseDate(b, datetime.Format)
	if err != nil {
		return 0, errDate
	}
	return d, nil
}

// ParseTime reads 'HH:mm:ss[.fffffffff]' (or 'HH:mm') into microseconds of
// the day.
func ParseTime(b []byte) (int64, error) {
	t, err := datetime.ParseTime(b, datetime.Format)
	if err != nil {
		return 0, errTime
	}
	return t, nil
}

// civilFromDays is the proleptic Gregorian date of z days since
// 1970-01-01.
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return
}

func append2(dst []byte, n int64) []byte { return append(dst, byte('0'+n/10), byte('0'+n%10)) }

// AppendDate appends days since the epoch as 'yyyy-MM-dd'.
func AppendDate(dst []byte, days int64) []byte {
	y, m, d := civilFromDays(days)
	if y >= 0 && y < 10000 {
		dst = append(dst, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10))
	} else {
		dst = strconv.AppendInt(dst, y, 10)
	}
	dst = append(dst, '-')
	dst = append2(dst, m)
	dst = append(dst, '-')
	return append2(dst, d)
}

// AppendTime appends microseconds of the day as 'HH:mm:ss' and, when
// precision > 0 and the fraction is not zero, the fraction with its
// trailing zeros removed (Flink's SQL time format).
func AppendTime(dst []byte, us int64, precision int) []byte {
	s := us / microsPerSecond
	dst = append2(dst, s/3600)
	dst = append(dst, ':')
	dst = append2(dst, s/60%60)
	dst = append(dst, ':')
	dst = append2(dst, s%60)
	frac := us % microsPerSecond
	if precision <= 0 || truncMicros(frac, precision) == 0 {
		return dst
	}
	var buf [6]byte
	for i := 5; i >= 0; i-- {
		buf[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := min(precision, 6)
	for n > 1 && buf[n-1] == '0' {
		n--
	}
	dst = append(dst, '.')
	return append(dst, buf[:n]...)
}

// AppendTimestamp appends microseconds since the epoch as
// 'yyyy-MM-dd HH:mm:ss[.fff]' (sep between date and time: ' ' for SQL,
// 'T' for ISO-8601).
func AppendTimestamp(dst []byte, us int64, precision int, sep byte) []byte {
	days := us / microsPerDay
	tod := us % microsPerDay
	if tod < 0 {
		days--
		tod += microsPerDay
	}
	dst = AppendDate(dst, days)
	dst = append(dst, sep)
	return AppendTime(dst, tod, precision)
}

// ParseDecimal reads a decimal number (an optional sign, digits, an
// optional fraction and exponent) exactly into the value of a
// DECIMAL(p, s): the unscaled value in I when p <= 18, a *big.Int in X
// otherwise. Digits beyond the scale are rounded half-up, as Flink's
// DecimalData.fromBigDecimal; a value with more than p digits is an error.
func ParseDecimal(b []byte, t types.Type) (types.Value, error) {
	var stack [48]byte
	ds := stack[:0] // the significant digits
	neg := false
	i := 0
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	fracDigits := 0
	seenDigit, seenPoint := false, false
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			seenDigit = true
			if len(ds) == 0 && c == '0' {
				if seenPoint {
					fracDigits++
				}
				continue
			}
			ds = append(ds, c)
			if seenPoint {
				fracDigits++
			}
		case c == '.' && !seenPoint:
			seenPoint = true
		default:
			goto exp
		}
	}
exp:
	if !seenDigit {
		return types.Value{}, fmt.Errorf("not a decimal number")
	}
	shift := int64(t.Scale - fracDigits)
	if i < len(b) {
		if b[i] != 'e' && b[i] != 'E' {
			return types.Value{}, fmt.Errorf("not a decimal number")
		}
		e, err := strconv.ParseInt(string(b[i+1:]), 10, 32)
		if err != nil {
			return types.Value{}, fmt.Errorf("not a decimal number")
		}
		shift += e
	}
	if len(ds) > 0 && shift > 0 {
		if int64(len(ds))+shift > int64(t.Precision) {
			return types.Value{}, fmt.Errorf("%s does not fit in %s", b, t)
		}
		for ; shift > 0; shift-- {
			ds = append(ds, '0')
		}
	} else if shift < 0 {
		cut := int64(len(ds)) + shift // digits kept
		roundUp := false
		if cut >= 0 {
			roundUp = ds[cut] >= '5'
			ds = ds[:cut]
		} else {
			ds = ds[:0]
		}
		if roundUp {
			j := len(ds) - 1
			for ; j >= 0 && ds[j] == '9'; j-- {
				ds[j] = '0'
			}
			if j >= 0 {
				ds[j]++
			} else {
				ds = append([]byte{'1'}, ds...)
			}
		}
	}
	if len(ds) > t.Precision {
		return types.Value{}, fmt.Errorf("%s does not fit in %s", b, t)
	}
	if t.BigDecimal() {
		u := new(big.Int)
		if len(ds) > 0 {
			u.SetString(string(ds), 10)
		}
		if neg {
			u.Neg(u)
		}
		return types.Value{X: u}, nil
	}
	var u int64
	for _, c := range ds {
		u = u*10 + int64(c-'0')
	}
	if neg {
		u = -u
	}
	return types.Value{I: u}, nil
}

// AppendDecimal appends a DECIMAL value of type t in plain notation with
// exactly t.Scale fractional digits ("12.30").
func AppendDecimal(dst []byte, v types.Value, t types.Type) []byte {
	var stack [48]byte
	var ds []byte
	if t.BigDecimal() {
		if u, _ := v.X.(*big.Int); u != nil {
			ds = u.Append(stack[:0], 10)
		} else {
			ds = strconv.AppendInt(stack[:0], v.I, 10) // the compact form (types.Value.X)
		}
	} else {
		ds = strconv.AppendInt(stack[:0], v.I, 10)
	}
	if len(ds) > 0 && ds[0] == '-' {
		dst = append(dst, '-')
		ds = ds[1:]
	}
	if t.Scale <= 0 {
		return append(dst, ds...)
	}
	if len(ds) <= t.Scale {
		dst = append(dst, '0', '.')
		for i := len(ds); i < t.Scale; i++ {
			dst = append(dst, '0')
		}
		return append(dst, ds...)
	}
	k := len(ds) - t.Scale
	dst = append(dst, ds[:k]...)
	dst = append(dst, '.')
	return append(dst, ds[k:]...)
}
