package core

import (
	"math"
	"strconv"
)

// appendFloat appends f like Python's repr(float) does, and NaN, inf and
// -inf for the non-finite values. bitSize 32 uses the shortest digits that
// identify f as a float32.
func appendFloat(dst []byte, f float64, bitSize int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, 'e', -1, bitSize) // [-]d[.ddd]e±dd
	if b[0] == '-' {
		dst = append(dst, '-')
		b = b[1:]
	}
	e := len(b) - 4
	for b[e] != 'e' {
		e--
	}
	exp := 0
	for _, c := range b[e+2:] {
		exp = exp*10 + int(c-'0')
	}
	if b[e+1] == '-' {
		exp = -exp
	}
	if exp < -4 || exp >= 16 {
		return append(dst, b...) // strconv writes at least two exponent digits, as Python does
	}
	var dbuf [24]byte
	digits := append(dbuf[:0], b[0])
	if e > 1 {
		digits = append(digits, b[2:e]...)
	}
	switch {
	case exp < 0:
		dst = append(dst, '0', '.')
		for range -exp - 1 {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	case len(digits) <= exp+1:
		dst = append(dst, digits...)
		for range exp + 1 - len(digits) {
			dst = append(dst, '0')
		}
		dst = append(dst, '.', '0')
	default:
		dst = append(dst, digits[:exp+1]...)
		dst = append(dst, '.')
		dst = append(dst, digits[exp+1:]...)
	}
	return dst
}

// appendNumber appends the text of v when v is a bool or an integer of a
// predeclared type and reports whether it was.
func appendNumber(dst []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return append(dst, "true"...), true
		}
		return append(dst, "false"...), true
	case int:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int8:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int16:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int64:
		return strconv.AppendInt(dst, x, 10), true
	case uint:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint8:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint16:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint64:
		return strconv.AppendUint(dst, x, 10), true
	case uintptr:
		return strconv.AppendUint(dst, uint64(x), 10), true
	}
	return dst, false
}
