package codec

import "testing"

type benchVal struct {
	A int64
	S string
	F []int32
	M uint16
}

// BenchmarkKeyValue encodes and decodes what a serializing state backend
// does per record: an int64 key, a string key, a struct value.
func BenchmarkKeyValue(b *testing.B) {
	ik, _ := OfType[int64](Key)
	sk, _ := OfType[string](Key)
	vc, _ := OfType[benchVal](Value)
	i, s, v := int64(-12345), "user-42", benchVal{A: 7, S: "value", F: []int32{1, -2, 3}, M: 9}
	buf := make([]byte, 0, 256)
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			buf = ik.Append(buf[:0], &i)
			buf = sk.Append(buf, &s)
			buf = vc.Append(buf, &v)
		}
	})
	enc := vc.Append(sk.Append(ik.Append(nil, &i), &s), &v)
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var i2 int64
			var s2 string
			var v2 benchVal
			rest, _ := ik.Read(enc, &i2)
			rest, _ = sk.Read(rest, &s2)
			if _, err := vc.Read(rest, &v2); err != nil {
				b.Fatal(err)
			}
		}
	})
}
