#include "textflag.h"

// func One(addr uintptr)
TEXT ·One(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	addr+0(FP), AX
	PREFETCHT0	(AX)
	RET

// func Two(a, b uintptr)
TEXT ·Two(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ	a+0(FP), AX
	MOVQ	b+8(FP), BX
	PREFETCHT0	(AX)
	PREFETCHT0	(BX)
	RET

// func Lines(addr, n uintptr)
TEXT ·Lines(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ	addr+0(FP), AX
	MOVQ	n+8(FP), CX
	ADDQ	AX, CX
loop:
	CMPQ	AX, CX
	JAE	done
	PREFETCHT0	(AX)
	ADDQ	$64, AX
	JMP	loop
done:
	RET
