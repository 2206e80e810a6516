package jepsen

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// createInput is a create-if-absent operation as porcupine's model sees
// it: a POST of a child with a given id whose entity carries the
// poster's mark, or a GET of that child.
type createInput struct {
	kind string // "post", "get"
	mark int64  // post: the mark of the entity written
}

// createOutput is the answer; unknown when the outcome was Unknown.
type createOutput struct {
	unknown bool
	output  string // post: OutCreated, OutExists; get: OutOK, OutAbsent
	mark    int64  // get: the mark read
}

// createModel is a child created at most once (one partition per child):
// the first POST answers `success` and the child holds its mark; every
// later one answers `exists`; a GET answers 404 before the first and the
// winner's mark after. A POST of unknown outcome creates the child if it
// is absent and changes nothing otherwise. Marks are positive; the
// state 0 is "absent".
var createModel = porcupine.Model{
	Init: func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		s := state.(int64)
		in, out := input.(createInput), output.(createOutput)
		switch {
		case in.kind == "post" && out.unknown:
			if s == 0 {
				return true, in.mark
			}
			return true, s
		case in.kind == "post" && out.output == OutCreated:
			return s == 0, in.mark
		case in.kind == "post":
			return s != 0, s
		case out.output == OutAbsent:
			return s == 0, s
		default:
			return s == out.mark, s
		}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(createInput), output.(createOutput)
		ans := out.output
		switch {
		case out.unknown:
			ans = "unknown"
		case in.kind == "get" && out.output == OutOK:
			ans = fmt.Sprint(out.mark)
		}
		if in.kind == "post" {
			return fmt.Sprintf("post(%d) -> %s", in.mark, ans)
		}
		return "get() -> " + ans
	},
	DescribeState: func(state any) string {
		if s := state.(int64); s != 0 {
			return fmt.Sprintf("created by %d", s)
		}
		return "absent"
	},
	DescribeOperationMetadata: describeMetadata,
}

// createOp converts a create-if-absent operation for porcupine; end is
// the end of the history, the return of unknown outcomes.
func createOp(op Op, end int64) porcupine.Operation {
	out := createOutput{output: op.Output, mark: op.Value}
	ret := op.Return
	if op.Outcome == Unknown {
		out, ret = createOutput{unknown: true}, end
	}
	return porcupine.Operation{
		ClientId: op.Client,
		Input:    createInput{kind: op.Kind, mark: op.Input},
		Call:     op.Call,
		Output:   out,
		Return:   ret,
		Metadata: op,
	}
}
