package jepsen

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Summary adds up the results of runs by their label (the faults
// injected), for the campaign's report.
type Summary struct {
	rows   map[string]*summaryRow
	order  []string
	kinds  map[Kind]*summaryRow // the faults alone, by kind, of every run
	korder []Kind
}

// summaryRow is one label's figures.
type summaryRow struct {
	runs, ops, unknown, violations, problems, undecided int
	time                                                time.Duration
	faults                                              int
	toAck                                               []time.Duration
	noAck                                               int // faults after which no write was acknowledged
	files                                               []string
}

// Add counts r under its label.
func (s *Summary) Add(r Result) {
	if s.rows == nil {
		s.rows = map[string]*summaryRow{}
	}
	row := s.rows[r.Label]
	if row == nil {
		row = &summaryRow{}
		s.rows[r.Label] = row
		s.order = append(s.order, r.Label)
	}
	row.runs++
	row.ops += r.Ops
	row.unknown += r.Unknown
	row.violations += len(r.Violations)
	row.problems += len(r.Problems)
	row.undecided += len(r.Undecided)
	row.time += r.Duration
	if s.kinds == nil {
		s.kinds = map[Kind]*summaryRow{}
	}
	for _, f := range r.Faults {
		k := s.kinds[f.Kind]
		if k == nil {
			k = &summaryRow{}
			s.kinds[f.Kind] = k
			s.korder = append(s.korder, f.Kind)
		}
		for _, x := range []*summaryRow{row, k} {
			x.faults++
			if d, ok := f.ToFirstAck(); ok {
				x.toAck = append(x.toAck, d)
			} else {
				x.noAck++
			}
		}
	}
	if len(r.Violations) > 0 && r.History != "" {
		row.files = append(row.files, r.History)
	}
}

// Violations returns how many violations the runs found in all.
func (s *Summary) Violations() int {
	n := 0
	for _, row := range s.rows {
		n += row.violations
	}
	return n
}

// Write prints one line per label: runs, operations, operations per
// second, unknown outcomes, violations, faults injected and the time from
// each fault's injection to the first acknowledged write invoked after it
// (median and max); then the history files of the runs with violations.
func (s *Summary) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "faults\truns\toperations\tops/s\tunknown\tviolations\tproblems\tundecided\tinjected\tto 1st ack median\tmax\t")
	for _, label := range s.order {
		r := s.rows[label]
		ops := 0.0
		if r.time > 0 {
			ops = float64(r.ops) / r.time.Seconds()
		}
		med, most := r.toFirstAck()
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t\n",
			label, r.runs, r.ops, ops, r.unknown, r.violations, r.problems, r.undecided, r.faults, med, most)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(s.korder) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "fault kind\tinjected\tto 1st ack median\tmax\t")
		for _, k := range s.korder {
			r := s.kinds[k]
			med, most := r.toFirstAck()
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t\n", k, r.faults, med, most)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, label := range s.order {
		if fs := s.rows[label].files; len(fs) > 0 {
			fmt.Fprintf(w, "violations under %s: %s\n", label, strings.Join(fs, " "))
		}
	}
	return nil
}

// toFirstAck returns the median and the max of the times from a fault to
// the first acknowledged write after it, the max followed by how many
// faults saw none.
func (r *summaryRow) toFirstAck() (med, most string) {
	med, most = "-", "-"
	if len(r.toAck) > 0 {
		d := slices.Clone(r.toAck)
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		med, most = fmtDur(median(d)), fmtDur(d[len(d)-1])
	}
	if r.noAck > 0 {
		most += fmt.Sprintf(" (%d none)", r.noAck)
	}
	return med, most
}

// median returns the median of sorted durations.
func median(d []time.Duration) time.Duration {
	n := len(d)
	if n%2 == 1 {
		return d[n/2]
	}
	return (d[n/2-1] + d[n/2]) / 2
}

// fmtDur shows a duration in milliseconds.
func fmtDur(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/1e6) }
