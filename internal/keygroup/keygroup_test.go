package keygroup

import "testing"

// The hash is part of the savepoint format: these values must never change.
func TestHashIsStable(t *testing.T) {
	hs, _ := Hasher[string]()
	hi, _ := Hasher[int64]()
	type pair struct {
		A string
		B int32
	}
	hp, err := Hasher[pair]()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"xxhash of empty string (published constant)", hs(""), 0xef46db3751d8e999},
		{"string ad-42", hs("ad-42"), 0x233097569d3f6630},
		{"int64 42", hi(42), 0xbdd732262feb6e95},
		{"int64 -1", hi(-1), 0xe4d971771b652c20},
	} {
		if c.got != c.want {
			t.Errorf("%s: hash = %#x, want %#x", c.name, c.got, c.want)
		}
	}
	if hp(pair{"x", 7}) == hp(pair{"x", 8}) || hp(pair{"x", 7}) != hp(pair{"x", 7}) {
		t.Fatalf("struct hash not a function of the fields")
	}
}

func TestUnsupportedKey(t *testing.T) {
	if _, err := Hasher[*int](); err == nil {
		t.Fatal("pointer keys must be rejected")
	}
	type withPtr struct{ P *int }
	if _, err := Hasher[withPtr](); err == nil {
		t.Fatal("struct with pointer must be rejected")
	}
}

func TestRangeInvertsSubtask(t *testing.T) {
	for _, max := range []int{1, 7, 128} {
		for p := 1; p <= max && p <= 16; p++ {
			for i := 0; i < p; i++ {
				s, e := Range(i, p, max)
				for kg := 0; kg < max; kg++ {
					in := kg >= s && kg < e
					if (Subtask(kg, p, max) == i) != in {
						t.Fatalf("max=%d p=%d i=%d kg=%d: Subtask=%d range=[%d,%d)", max, p, i, kg, Subtask(kg, p, max), s, e)
					}
				}
			}
		}
	}
}
