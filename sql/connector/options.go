package connector

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Options reads a table's WITH options for a factory and records which keys
// the factory supports: every key it asks for, whether present or not.
// Err then reports what is wrong in one error. Options are not safe for
// concurrent use.
type Options struct {
	table     string
	connector string
	m         map[string]string
	supported map[string]bool // keys asked for
	prefixes  []string        // prefixes asked for ("properties.")
	errs      []error
}

// NewOptions starts reading t's options for the connector it names.
func NewOptions(t *Table) *Options {
	o := &Options{table: t.Name, connector: t.Options["connector"], m: t.Options, supported: map[string]bool{}}
	o.supported["connector"] = true
	return o
}

// Table returns the table's name; Connector the connector's identifier.
func (o *Options) Table() string     { return o.table }
func (o *Options) Connector() string { return o.connector }

// Declare marks keys as supported without reading them (options a factory
// reads only in some configurations).
func (o *Options) Declare(keys ...string) {
	for _, k := range keys {
		o.supported[k] = true
	}
}

// Lookup returns the value of key and whether it is set.
func (o *Options) Lookup(key string) (string, bool) {
	o.supported[key] = true
	v, ok := o.m[key]
	return v, ok
}

// Has reports whether key is set.
func (o *Options) Has(key string) bool {
	_, ok := o.Lookup(key)
	return ok
}

// String returns the value of key, or def if it is not set.
func (o *Options) String(key, def string) string {
	if v, ok := o.Lookup(key); ok {
		return v
	}
	return def
}

// Required returns the value of key, recording an error if it is missing
// or empty.
func (o *Options) Required(key string) string {
	v, ok := o.Lookup(key)
	if !ok || v == "" {
		o.errs = append(o.errs, &missingError{key})
	}
	return v
}

// Invalid records that the value of key is wrong, saying why.
func (o *Options) Invalid(key, why string, args ...any) {
	o.errs = append(o.errs, &invalidError{key, fmt.Sprintf("option '%s' = '%s': %s", key, o.m[key], fmt.Sprintf(why, args...))})
}

// Errorf records an error about the options as a whole.
func (o *Options) Errorf(format string, args ...any) {
	o.errs = append(o.errs, fmt.Errorf(format, args...))
}

// Int returns the integer value of key, or def.
func (o *Options) Int(key string, def int64) int64 {
	v, ok := o.Lookup(key)
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		o.Invalid(key, "not an integer")
		return def
	}
	return n
}

// Float returns the floating-point value of key, or def.
func (o *Options) Float(key string, def float64) float64 {
	v, ok := o.Lookup(key)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		o.Invalid(key, "not a number")
		return def
	}
	return f
}

// Bool returns the value of key ('true' or 'false', any case), or def.
func (o *Options) Bool(key string, def bool) bool {
	v, ok := o.Lookup(key)
	if !ok {
		return def
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true
	case "false":
		return false
	}
	o.Invalid(key, "must be 'true' or 'false'")
	return def
}

// Enum returns the value of key, which must be one of allowed, or def.
func (o *Options) Enum(key, def string, allowed ...string) string {
	v, ok := o.Lookup(key)
	if !ok {
		return def
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	o.Invalid(key, "must be one of '%s'", strings.Join(allowed, "', '"))
	return def
}

// Duration returns the value of key as a duration written as Flink writes
// them ("10 s", "500ms", "1 min", "2h", "100" = milliseconds), or def.
func (o *Options) Duration(key string, def time.Duration) time.Duration {
	v, ok := o.Lookup(key)
	if !ok {
		return def
	}
	d, err := ParseDuration(v)
	if err != nil {
		o.Invalid(key, "%v", err)
		return def
	}
	return d
}

// ParseDuration reads a duration as Flink's TimeUtils.parseDuration: a
// number and an optional unit (ms, s, min, h, d and their long forms;
// milliseconds without a unit).
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("not a duration (a number and a unit, as '10 s')")
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a duration: %v", err)
	}
	unit := strings.ToLower(strings.TrimSpace(s[i:]))
	var u time.Duration
	switch unit {
	case "", "ms", "milli", "millis", "millisecond", "milliseconds":
		u = time.Millisecond
	case "us", "µs", "micro", "micros", "microsecond", "microseconds":
		u = time.Microsecond
	case "ns", "nano", "nanos", "nanosecond", "nanoseconds":
		u = time.Nanosecond
	case "s", "sec", "secs", "second", "seconds":
		u = time.Second
	case "m", "min", "mins", "minute", "minutes":
		u = time.Minute
	case "h", "hour", "hours":
		u = time.Hour
	case "d", "day", "days":
		u = 24 * time.Hour
	default:
		return 0, fmt.Errorf("unknown time unit '%s'", unit)
	}
	return time.Duration(n) * u, nil
}

// Prefixed returns the options whose keys start with prefix, keyed by the
// rest of the key ('properties.' -> {"bootstrap.servers": ...}), and marks
// every such key as supported.
func (o *Options) Prefixed(prefix string) map[string]string {
	o.prefixes = append(o.prefixes, prefix)
	out := map[string]string{}
	for k, v := range o.m {
		if strings.HasPrefix(k, prefix) {
			out[k[len(prefix):]] = v
		}
	}
	return out
}

// invalidError is an option whose value is wrong.
type invalidError struct{ key, msg string }

func (e *invalidError) Error() string     { return e.msg }
func (e *invalidError) optionKey() string { return e.key }

type missingError struct{ key string }

func (e *missingError) Error() string     { return "missing required option '" + e.key + "'" }
func (e *missingError) optionKey() string { return e.key }

// keysOf returns the keys of the errors of type E among errs.
func keysOf[E interface {
	error
	optionKey() string
}](errs []error) []string {
	var keys []string
	for _, err := range errs {
		var e E
		if errors.As(err, &e) {
			keys = append(keys, e.optionKey())
		}
	}
	return keys
}

// Err returns nil if the options are good, or one error naming the table
// and the connector that lists the missing required options, the invalid
// values and the unsupported options (with the supported ones).
func (o *Options) Err() error {
	var unsupported []string
	for k := range o.m {
		if o.supported[k] {
			continue
		}
		ok := false
		for _, p := range o.prefixes {
			if strings.HasPrefix(k, p) {
				ok = true
				break
			}
		}
		if !ok {
			unsupported = append(unsupported, k)
		}
	}
	if len(o.errs) == 0 && len(unsupported) == 0 {
		return nil
	}
	sort.Strings(unsupported)
	var msgs []string
	for _, e := range o.errs {
		msgs = append(msgs, e.Error())
	}
	if len(unsupported) > 0 {
		msgs = append(msgs, fmt.Sprintf("unsupported options found for '%s': '%s' (supported options: %s)",
			o.connector, strings.Join(unsupported, "', '"), strings.Join(o.Supported(), ", ")))
	}
	return &OptionsError{Table: o.table, Connector: o.connector, Unsupported: unsupported, Errs: o.errs,
		msg: fmt.Sprintf("table '%s' (connector '%s'): %s", o.table, o.connector, strings.Join(msgs, "; "))}
}

// Supported returns the supported keys, sorted; prefixes end with '*'.
func (o *Options) Supported() []string {
	var keys []string
	for k := range o.supported {
		keys = append(keys, k)
	}
	for _, p := range o.prefixes {
		keys = append(keys, p+"*")
	}
	sort.Strings(keys)
	return keys
}

// OptionsError is what Options.Err returns.
type OptionsError struct {
	Table, Connector string
	// Unsupported lists the keys no factory asked for.
	Unsupported []string
	// Errs are the missing and invalid options.
	Errs []error
	msg  string
}

func (e *OptionsError) Error() string   { return e.msg }
func (e *OptionsError) Unwrap() []error { return e.Errs }

// Keys returns the keys of the options that are wrong, in the order of
// the message: the invalid values, then the unsupported keys. A missing
// option has no key in the WITH clause and is not among them.
func (e *OptionsError) Keys() []string {
	return append(keysOf[*invalidError](e.Errs), e.Unsupported...)
}

// Missing returns the missing required options' keys.
func (e *OptionsError) Missing() []string { return keysOf[*missingError](e.Errs) }

// MemorySize returns the value of key as a size in bytes written as
// Flink writes them ("128MB", "64 kb", "1gb", "1024" = bytes), or def.
func (o *Options) MemorySize(key string, def int64) int64 {
	v, ok := o.Lookup(key)
	if !ok {
		return def
	}
	n, err := ParseMemorySize(v)
	if err != nil {
		o.Invalid(key, "%v", err)
		return def
	}
	return n
}

// ParseMemorySize reads a size in bytes written as Flink writes them
// ("128MB", "64 kb", "1gb", "1024" = bytes).
func ParseMemorySize(v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, errors.New("not a memory size (a number and a unit, as '128MB')")
	}
	var m int64
	switch strings.TrimSpace(s[i:]) {
	case "", "b", "bytes":
		m = 1
	case "k", "kb", "kibibytes":
		m = 1 << 10
	case "m", "mb", "mebibytes":
		m = 1 << 20
	case "g", "gb", "gibibytes":
		m = 1 << 30
	case "t", "tb", "tebibytes":
		m = 1 << 40
	default:
		return 0, fmt.Errorf("unknown memory unit '%s'", strings.TrimSpace(s[i:]))
	}
	return n * m, nil
}
