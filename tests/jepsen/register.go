package jepsen

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// regInput is a register operation as porcupine's model sees it.
type regInput struct {
	kind  string // "put", "get", "delete"
	value int64  // put: the value written
}

// regOutput is a register operation's answer; unknown when the outcome
// was Unknown (then any answer is accepted).
type regOutput struct {
	unknown bool
	output  string // OutOK, OutAbsent
	value   int64  // get: the value read
}

// regAbsent is the register's state when the resource does not exist.
// Values written are positive.
const regAbsent int64 = 0

// registerModel is a register per key (one partition): PUT sets the
// value, DELETE removes it (200 when it was there, 404 when not), GET
// answers the value or 404. Writes of unknown outcome are taken as done;
// since their return is the end of the history, they may also come after
// everything else, which is as if they never happened.
var registerModel = porcupine.Model{
	Init: func() any { return regAbsent },
	Step: func(state, input, output any) (bool, any) {
		s := state.(int64)
		in, out := input.(regInput), output.(regOutput)
		switch in.kind {
		case "put":
			return true, in.value
		case "delete":
			if out.unknown {
				return true, regAbsent
			}
			if out.output == OutOK {
				return s != regAbsent, regAbsent
			}
			return s == regAbsent, regAbsent
		default: // get
			if out.output == OutAbsent {
				return s == regAbsent, s
			}
			return s == out.value, s
		}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regInput), output.(regOutput)
		var ans string
		switch {
		case out.unknown:
			ans = "unknown"
		case in.kind == "get" && out.output == OutOK:
			ans = fmt.Sprint(out.value)
		default:
			ans = out.output
		}
		if in.kind == "put" {
			return fmt.Sprintf("put(%d) -> %s", in.value, ans)
		}
		return fmt.Sprintf("%s() -> %s", in.kind, ans)
	},
	DescribeState: func(state any) string {
		if s := state.(int64); s != regAbsent {
			return fmt.Sprint(s)
		}
		return "absent"
	},
	DescribeOperationMetadata: describeMetadata,
}

// registerOp converts a register operation for porcupine; end is the end
// of the history, the return of unknown outcomes.
func registerOp(op Op, end int64) porcupine.Operation {
	out := regOutput{output: op.Output, value: op.Value}
	ret := op.Return
	if op.Outcome == Unknown {
		out, ret = regOutput{unknown: true}, end
	}
	return porcupine.Operation{
		ClientId: op.Client,
		Input:    regInput{kind: op.Kind, value: op.Input},
		Call:     op.Call,
		Output:   out,
		Return:   ret,
		Metadata: op,
	}
}

// describeMetadata shows an operation's node and door answer in the
// visualization.
func describeMetadata(info any) string {
	op, ok := info.(Op)
	if !ok {
		return ""
	}
	s := fmt.Sprintf("node %d, %s; call %.3f ms, return %.3f ms", op.Node, op.Answer, float64(op.Call)/1e6, float64(op.Return)/1e6)
	if op.Sabotaged {
		s += " (SABOTAGED)"
	}
	return s
}
