package expr

// Flink's temporal functions beyond funcs.go's (see
// funcs_flink_scalar.go). A DATE is days since the epoch, a TIMESTAMP
// microseconds (types.Kind); the session's time zone is UTC.

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

const usPerDay = 86400e6

// unitMicros are the lengths of the units below a month.
var unitMicros = map[string]int64{"MILLISECOND": 1e3, "SECOND": 1e6, "MINUTE": 60e6, "HOUR": 3600e6, "DAY": usPerDay, "WEEK": 7 * usPerDay}

// unitMonths are the lengths of the units of months.
var unitMonths = map[string]int64{"MONTH": 1, "QUARTER": 3, "YEAR": 12}

func isDateTime(t types.Type) bool { return isTimestamp(t) || t.Kind == types.Date }

// toMicros returns how to read a DATE or TIMESTAMP of type t as
// microseconds.
func toMicros(t types.Type) func(v types.Value) int64 {
	if t.Kind == types.Date {
		return func(v types.Value) int64 { return v.I * usPerDay }
	}
	return func(v types.Value) int64 { return v.I }
}

// unitArg reads the unit argument of TIMESTAMPADD, TIMESTAMPDIFF and
// FLOOR/CEIL(... TO unit): a string constant (the parser turns the bare
// word into one).
func unitArg(e *parser.Call, x Expr, i int) (string, error) {
	if !x.Const || !x.Type.IsString() {
		return "", ErrAt(e.Args[i], "%s needs a time unit (SECOND, MINUTE, HOUR, DAY, WEEK, MONTH, QUARTER, YEAR)", e.Name)
	}
	u := strings.TrimPrefix(strings.ToUpper(x.Eval(nil).S), "SQL_TSI_")
	if unitMicros[u] == 0 && unitMonths[u] == 0 {
		return "", ErrAt(e.Args[i], "%s: unknown time unit %s", e.Name, u)
	}
	return u, nil
}

func timeCall(e *parser.Call, xs []Expr) (Expr, bool, error) {
	x, err := func() (Expr, error) {
		switch e.Name {
		case "CURRENT_TIME", "LOCALTIME":
			// the time of day of the session's zone (UTC) as TIME(0), as
			// Flink's; evaluated per row in streaming, as CURRENT_DATE
			if err := wantArgs(e, xs, 0, 0); err != nil {
				return Expr{}, err
			}
			return nonDeterministic(types.Type{Kind: types.Time, NotNull: true}, func([]types.Value) types.Value {
				s := time.Now().Unix()
				return types.IntValue((s - FloorDiv(s, 86400)*86400) * 1e6)
			}), nil
		case "CURRENT_DATE":
			if err := wantArgs(e, xs, 0, 0); err != nil {
				return Expr{}, err
			}
			return nonDeterministic(types.Type{Kind: types.Date, NotNull: true}, func([]types.Value) types.Value {
				return types.IntValue(FloorDiv(time.Now().Unix(), 86400))
			}), nil
		case "QUARTER", "WEEK", "DAYOFYEAR", "DAYOFWEEK":
			if err := wantArgs(e, xs, 1, 1); err != nil {
				return Expr{}, err
			}
			switch e.Name {
			case "DAYOFYEAR":
				return extract("DOY", xs[0], e)
			case "DAYOFWEEK":
				return extract("DOW", xs[0], e) // Sunday is 1, as Flink's
			}
			if !isDateTime(xs[0].Type) {
				return Expr{}, ErrAt(e, "%s needs a DATE or TIMESTAMP, not %s", e.Name, xs[0].Type)
			}
			us := toMicros(xs[0].Type)
			get := func(t time.Time) int64 { return int64(t.Month()-1)/3 + 1 }
			if e.Name == "WEEK" {
				get = func(t time.Time) int64 { _, w := t.ISOWeek(); return int64(w) } // ISO 8601, as Calcite's
			}
			return strFn1(xs, types.BigIntType, func(a0 types.Value) types.Value { return types.IntValue(get(microsToTime(us(a0)))) }), nil
		case "FLOOR", "CEIL", "CEILING":
			// FLOOR(x TO unit) as the parser rewrote it; the numeric forms are
			// funcs.go's
			if len(xs) != 2 || !xs[1].Type.IsString() {
				return Expr{}, errNotMine
			}
			return floorTime(e, xs)
		case "OVERLAPS":
			return overlaps(e, xs)
		case "TIMESTAMPADD":
			return timestampAdd(e, xs)
		case "TIMESTAMPDIFF":
			return timestampDiff(e, xs)
		case "CONVERT_TZ":
			return convertTZ(e, xs)
		}
		return Expr{}, errNotMine
	}()
	if err == errNotMine {
		return Expr{}, false, nil
	}
	return x, true, err
}

// daysIn is the number of days of a month.
func daysIn(y int, m time.Month) int { return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day() }

// addMonths adds n months to microseconds us, the day kept but for the
// months too short for it (Jan 31 + 1 month is Feb 28 or 29), as
// Calcite's.
func addMonths(us, n int64) int64 {
	t := microsToTime(us)
	y, m := t.Year(), int64(t.Month()-1)+n
	y += int(FloorDiv(m, 12))
	mo := time.Month(m-FloorDiv(m, 12)*12) + 1
	d := min(t.Day(), daysIn(y, mo))
	tod := us - FloorDiv(us, usPerDay)*usPerDay
	return time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).UnixMicro() + tod
}

// floorTime is FLOOR and CEIL(x TO unit) of a DATE or TIMESTAMP: weeks
// start on Sunday, as Calcite's.
func floorTime(e *parser.Call, xs []Expr) (Expr, error) {
	x := xs[0]
	if !isDateTime(x.Type) {
		return Expr{}, ErrAt(e, "%s(... TO unit) needs a DATE or TIMESTAMP, not %s", e.Name, x.Type)
	}
	unit, err := unitArg(e, xs[1], 1)
	if err != nil {
		return Expr{}, err
	}
	ceil := e.Name != "FLOOR"
	date := x.Type.Kind == types.Date
	us := toMicros(x.Type)
	floor := func(v int64) (lo, hi int64) {
		switch unit {
		case "WEEK":
			d := FloorDiv(v, usPerDay)
			dow := (d + 4) % 7 // 1970-01-01 was a Thursday; Sunday is 0
			if dow < 0 {
				dow += 7
			}
			lo = (d - dow) * usPerDay
			return lo, lo + 7*usPerDay
		case "MONTH", "QUARTER", "YEAR":
			t := microsToTime(v)
			m := t.Month()
			switch unit {
			case "QUARTER":
				m = (m-1)/3*3 + 1
			case "YEAR":
				m = 1
			}
			lo = time.Date(t.Year(), m, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
			return lo, addMonths(lo, unitMonths[unit])
		}
		n := unitMicros[unit]
		lo = FloorDiv(v, n) * n
		return lo, lo + n
	}
	t := x.Type
	t.TimeAttr = 0
	f := x.Eval
	return Expr{Type: t, Const: x.Const, Col: -1, Eval: func(r []types.Value) types.Value {
		v := f(r)
		if v.Null {
			return v
		}
		in := us(v)
		out, next := floor(in)
		if ceil && out != in {
			out = next
		}
		if date {
			return types.IntValue(FloorDiv(out, usPerDay))
		}
		return types.IntValue(out)
	}}, nil
}

// overlaps is (s1, e1) OVERLAPS (s2, e2), the parser's OVERLAPS(s1, e1,
// s2, e2): each end a time point or an interval after the start; the
// periods (their ends in order) overlap when each starts no later than
// the other ends.
func overlaps(e *parser.Call, xs []Expr) (Expr, error) {
	if err := wantArgs(e, xs, 4, 4); err != nil {
		return Expr{}, err
	}
	type end func(r []types.Value, start int64, startOK bool) (int64, bool)
	point := func(i int) (func(r []types.Value) (int64, bool), error) {
		x := xs[i]
		if !isDateTime(x.Type) {
			return nil, ErrAt(e.Args[i], "OVERLAPS needs time points, not %s", x.Type)
		}
		f, us := x.Eval, toMicros(x.Type)
		return func(r []types.Value) (int64, bool) {
			v := f(r)
			return us(v), !v.Null
		}, nil
	}
	endOf := func(i int) (end, error) {
		x := xs[i]
		if x.Type.Kind == types.Interval {
			f, months := x.Eval, x.Type.Months
			return func(r []types.Value, start int64, startOK bool) (int64, bool) {
				v := f(r)
				if v.Null || !startOK {
					return 0, false
				}
				if months {
					return addMonths(start, v.I), true
				}
				return start + v.I*1000, true
			}, nil
		}
		p, err := point(i)
		if err != nil {
			return nil, err
		}
		return func(r []types.Value, _ int64, _ bool) (int64, bool) { return p(r) }, nil
	}
	s1, err := point(0)
	if err != nil {
		return Expr{}, err
	}
	e1, err := endOf(1)
	if err != nil {
		return Expr{}, err
	}
	s2, err := point(2)
	if err != nil {
		return Expr{}, err
	}
	e2, err := endOf(3)
	if err != nil {
		return Expr{}, err
	}
	// as Calcite's convertOverlaps: the ends of each period put in order
	// (s <= e, else swapped, which a NULL also does), then
	// (e1 >= s2) AND (e2 >= s1) in three-valued logic
	type pt struct {
		v  int64
		ok bool
	}
	period := func(r []types.Value, s func([]types.Value) (int64, bool), e end) (lo, hi pt) {
		a, aok := s(r)
		b, bok := e(r, a, aok)
		if aok && bok && a <= b {
			return pt{a, true}, pt{b, true}
		}
		return pt{b, bok}, pt{a, aok}
	}
	ge := func(x, y pt) (val, known bool) { return x.v >= y.v, x.ok && y.ok }
	return Expr{Type: types.Type{Kind: types.Boolean, NotNull: allNotNull(xs)}, Const: allKonst(xs), Col: -1, Eval: func(r []types.Value) types.Value {
		a1, b1 := period(r, s1, e1)
		a2, b2 := period(r, s2, e2)
		c1, k1 := ge(b1, a2)
		c2, k2 := ge(b2, a1)
		switch {
		case k1 && !c1, k2 && !c2:
			return types.BoolValue(false)
		case k1 && k2:
			return types.BoolValue(true)
		}
		return types.NullValue
	}}, nil
}

// timestampAdd is TIMESTAMPADD(unit, n, x): x's type, but a DATE plus
// hours, minutes or seconds is a TIMESTAMP, as Calcite types it.
func timestampAdd(e *parser.Call, xs []Expr) (Expr, error) {
	if err := wantArgs(e, xs, 3, 3); err != nil {
		return Expr{}, err
	}
	unit, err := unitArg(e, xs[0], 0)
	if err != nil {
		return Expr{}, err
	}
	if err := intArgs(e, xs, 1); err != nil {
		return Expr{}, err
	}
	x := xs[2]
	if !isDateTime(x.Type) {
		return Expr{}, ErrAt(e.Args[2], "TIMESTAMPADD needs a DATE or TIMESTAMP, not %s", x.Type)
	}
	t := x.Type
	t.TimeAttr = 0
	date := t.Kind == types.Date
	if date && unitMicros[unit] != 0 && unitMicros[unit] < usPerDay {
		t, date = types.Type{Kind: types.Timestamp, Precision: 0}, false
		if unit == "MILLISECOND" {
			t.Precision = 3
		}
	}
	us := toMicros(x.Type)
	step, months := unitMicros[unit], unitMonths[unit]
	return strFn(xs[1:], t, func(a []types.Value) types.Value {
		v := us(a[1])
		if months != 0 {
			v = addMonths(v, a[0].I*months)
		} else {
			v += a[0].I * step
		}
		if date {
			return types.IntValue(FloorDiv(v, usPerDay))
		}
		return types.IntValue(v)
	}), nil
}

// timestampDiff is TIMESTAMPDIFF(unit, x1, x2): the whole units from x1
// to x2 (negative when x2 is earlier), an INT; months counted as
// Calcite's subtractMonths does.
func timestampDiff(e *parser.Call, xs []Expr) (Expr, error) {
	if err := wantArgs(e, xs, 3, 3); err != nil {
		return Expr{}, err
	}
	unit, err := unitArg(e, xs[0], 0)
	if err != nil {
		return Expr{}, err
	}
	for i := 1; i <= 2; i++ {
		if !isDateTime(xs[i].Type) {
			return Expr{}, ErrAt(e.Args[i], "TIMESTAMPDIFF needs DATEs or TIMESTAMPs, not %s", xs[i].Type)
		}
	}
	u1, u2 := toMicros(xs[1].Type), toMicros(xs[2].Type)
	step, months := unitMicros[unit], unitMonths[unit]
	return strFn(xs[1:], types.IntType, func(a []types.Value) types.Value {
		t1, t2 := u1(a[0]), u2(a[1])
		if months != 0 {
			return types.IntValue(int64(int32(subtractMonths(t2, t1) / months)))
		}
		return types.IntValue(int64(int32((t2 - t1) / step)))
	}), nil
}

// subtractMonths is Calcite's DateTimeUtils.subtractMonths of two
// timestamps (microseconds): the months from t1 to t0.
func subtractMonths(t0, t1 int64) int64 {
	d0, d1 := FloorDiv(t0, usPerDay), FloorDiv(t1, usPerDay)
	tod0, tod1 := t0-d0*usPerDay, t1-d1*usPerDay
	x := subtractMonthsDays(d0, d1)
	if addMonths(d1*usPerDay, x)/usPerDay == d0 && tod0 < tod1 {
		x--
	}
	return x
}

func subtractMonthsDays(d0, d1 int64) int64 {
	if d0 < d1 {
		return -subtractMonthsDays(d1, d0)
	}
	m := (d0 - d1) / 31
	for {
		if addMonths(d1*usPerDay, m)/usPerDay >= d0 {
			return m
		}
		if addMonths(d1*usPerDay, m+1)/usPerDay > d0 {
			return m
		}
		m++
	}
}

// javaShortZones are the three-letter zone IDs Java's TimeZone knows
// (ZoneId.SHORT_IDS).
var javaShortZones = map[string]string{
	"ACT": "Australia/Darwin", "AET": "Australia/Sydney", "AGT": "America/Argentina/Buenos_Aires",
	"ART": "Africa/Cairo", "AST": "America/Anchorage", "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka",
	"CAT": "Africa/Harare", "CNT": "America/St_Johns", "CST": "America/Chicago", "CTT": "Asia/Shanghai",
	"EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris", "IET": "America/Indiana/Indianapolis",
	"IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "MIT": "Pacific/Apia", "NET": "Asia/Yerevan",
	"NST": "Pacific/Auckland", "PLT": "Asia/Karachi", "PNT": "America/Phoenix", "PRT": "America/Puerto_Rico",
	"PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal", "VST": "Asia/Ho_Chi_Minh",
}

// javaFixedZones are the short IDs of fixed offsets.
var javaFixedZones = map[string]int{"EST": -5 * 3600, "MST": -7 * 3600, "HST": -10 * 3600}

// javaZone is the zone Java's TimeZone.getTimeZone(id) gives: a region,
// a short ID, GMT/UTC with an offset ("GMT-08:00", "GMT+8"), else GMT.
func javaZone(id string) *time.Location {
	if off, ok := javaFixedZones[id]; ok {
		return time.FixedZone(id, off)
	}
	if r, ok := javaShortZones[id]; ok {
		id = r
	}
	if rest, ok := strings.CutPrefix(id, "GMT"); ok && rest != "" {
		if off, ok := parseZoneOffset(rest); ok {
			return time.FixedZone(id, off)
		}
		return time.UTC
	}
	if id == "" || id == "Local" {
		return time.UTC
	}
	loc, err := time.LoadLocation(id)
	if err != nil {
		return time.UTC
	}
	return loc
}

// parseZoneOffset reads "+8", "-08:00", "+0830" as seconds.
func parseZoneOffset(s string) (int, bool) {
	if len(s) < 2 || (s[0] != '+' && s[0] != '-') {
		return 0, false
	}
	sign := 1
	if s[0] == '-' {
		sign = -1
	}
	h, m := s[1:], ""
	switch {
	case strings.Contains(h, ":"):
		h, m, _ = strings.Cut(h, ":")
	case len(h) > 2:
		h, m = h[:len(h)-2], h[len(h)-2:]
	}
	hh, err := strconv.Atoi(h)
	if err != nil || hh > 23 || len(h) > 2 {
		return 0, false
	}
	mm := 0
	if m != "" {
		if mm, err = strconv.Atoi(m); err != nil || mm > 59 || len(m) != 2 {
			return 0, false
		}
	}
	return sign * (hh*3600 + mm*60), true
}

// zoneCache keeps the last zone a CONVERT_TZ argument named (a zone is
// mostly a constant; loading one reads the zone database).
type zoneCache struct {
	last atomic.Pointer[struct {
		id  string
		loc *time.Location
	}]
}

func (c *zoneCache) get(id string) *time.Location {
	if l := c.last.Load(); l != nil && l.id == id {
		return l.loc
	}
	loc := javaZone(id)
	c.last.Store(&struct {
		id  string
		loc *time.Location
	}{id, loc})
	return loc
}

// convertTZ is CONVERT_TZ(s, from, to): the time 'yyyy-MM-dd HH:mm:ss' s
// in zone from, written in zone to; NULL when s does not parse. A zone
// Java does not know is GMT, as Java's TimeZone has it.
func convertTZ(e *parser.Call, xs []Expr) (Expr, error) {
	if err := wantArgs(e, xs, 3, 3); err != nil {
		return Expr{}, err
	}
	if err := stringArgs(e, xs, 0, 1, 2); err != nil {
		return Expr{}, err
	}
	var from, to zoneCache
	const layout = "2006-01-02 15:04:05"
	return strFn(xs, types.StringType, func(a []types.Value) types.Value {
		t, err := time.ParseInLocation(layout, strings.TrimSpace(a[0].S), from.get(a[1].S))
		if err != nil {
			return types.NullValue
		}
		return types.StringValue(t.In(to.get(a[2].S)).Format(layout))
	}).nullable(), nil
}
