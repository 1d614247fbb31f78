package wlog

import (
	"os"
	"path/filepath"
	"sync"
)

// A writer checks the whole active segment when it opens (see
// Writer.recover). The exactly-once Sink opens a partition's writer for
// every commit, so the process remembers, per partition, the active
// segment as its last writer closed it, and a writer opened on that same,
// unchanged file skips the check. Any change (another process appended or
// truncated) means a full check.
var verified struct {
	sync.Mutex
	m map[string]checkedPrefix
}

// checkedPrefix is a segment file known to be valid as its writer closed
// it: end bytes, the next offset next, maxTS its largest timestamp.
type checkedPrefix struct {
	file             os.FileInfo // the segment file (its identity)
	base             int64
	end, next, maxTS int64
}

func verifiedKey(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// rememberVerified records that the first end bytes of segment base of dir
// (the file f) are valid.
func rememberVerified(dir string, base int64, f *os.File, end, next, maxTS int64) {
	st, err := f.Stat()
	if err != nil {
		return
	}
	verified.Lock()
	defer verified.Unlock()
	if verified.m == nil {
		verified.m = map[string]checkedPrefix{}
	}
	verified.m[verifiedKey(dir)] = checkedPrefix{file: st, base: base, end: end, next: next, maxTS: maxTS}
}

// verifiedPrefix returns where a scan of segment base of dir (the file f,
// st its stat) may start: at its end if this process's writer closed it
// as it is now (same file, size and modification time), else at 0. The
// index entries before that point (from ents) are kept.
func verifiedPrefix(dir string, base int64, st os.FileInfo, ents []indexEnt) scanResult {
	res := scanResult{nextOffset: base, maxTS: minTS}
	verified.Lock()
	c, ok := verified.m[verifiedKey(dir)]
	verified.Unlock()
	if !ok || c.base != base || c.end != st.Size() || !os.SameFile(c.file, st) || !c.file.ModTime().Equal(st.ModTime()) {
		return res
	}
	res.end, res.nextOffset, res.maxTS = c.end, c.next, c.maxTS
	for _, e := range ents {
		if int64(e.pos) >= c.end {
			break
		}
		res.index = append(res.index, e)
		res.lastIndexd = int64(e.pos)
	}
	return res
}
