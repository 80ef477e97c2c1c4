package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A sizes run writes its figures to <dir>/figures.json beside results.md; --side-by-side then
// reads those of several runs (Trainyard, the peer tuned, the peer at its defaults, each played by
// its own invocation on the same harness: the peer needs its own CRD) and sets them side by side,
// as issue 19's table does.

// figuresFileName is the file a sizes run writes its figures to, in --dir.
const figuresFileName = "figures.json"

// figuresFile is a sizes run's figures.
type figuresFile struct {
	// Operator says what played: the binary and its flags.
	Operator string
	// Header is results.md's header: the commit, the machine, its load, the cluster, the runs.
	Header string
	Tables []figuresTable
}

// figuresTable is one API at one size.
type figuresTable struct {
	API, Size, Title string
	Rows             []figuresRow
}

// figuresRow is one figure: as results.md spells it, and its medians (sizeRow.values).
type figuresRow struct {
	Figure, Measured, Target string
	Values                   []float64 `json:",omitempty"`
}

// figuresOf collects the run's figures, as markdown's tables show them.
func (c *comparison) figuresOf(header string, audit auditSummary) figuresFile {
	f := figuresFile{Operator: strings.TrimSpace(c.o.operatorBin + " " + strings.Join(c.o.operatorFlags, " ")), Header: header}
	for _, rs := range c.sizes {
		t := figuresTable{API: string(rs[0].api), Size: rs[0].size.String(), Title: rs[0].size.title()}
		for _, x := range c.sizeRows(rs, audit) {
			t.Rows = append(t.Rows, figuresRow{Figure: x.figure, Measured: x.measured, Target: x.target, Values: x.values})
		}
		f.Tables = append(f.Tables, t)
	}
	return f
}

func writeFigures(dir string, f figuresFile) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, figuresFileName), b, 0o644)
}

// player is one column of the side-by-side: a label and the --dir of its run.
type player struct {
	label, dir string
	figures    figuresFile
}

// parseSideBySide reads --side-by-side: label=dir pairs, comma-separated, at least two.
func parseSideBySide(v string) ([]player, error) {
	var ps []player
	for _, part := range strings.Split(v, ",") {
		label, dir, ok := strings.Cut(part, "=")
		if !ok || strings.TrimSpace(label) == "" || strings.TrimSpace(dir) == "" {
			return nil, fmt.Errorf("--side-by-side: %q is not label=dir", part)
		}
		ps = append(ps, player{label: strings.TrimSpace(label), dir: strings.TrimSpace(dir)})
	}
	if len(ps) < 2 {
		return nil, errors.New("--side-by-side: give two runs or more, label=dir,label=dir")
	}
	return ps, nil
}

// readPlayers reads each player's figures.json (dir relative to repo when not absolute).
func readPlayers(repo string, ps []player) error {
	var errs []error
	for i := range ps {
		dir := ps[i].dir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(repo, dir)
		}
		b, err := os.ReadFile(filepath.Join(dir, figuresFileName))
		if err == nil {
			err = json.Unmarshal(b, &ps[i].figures)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ps[i].label, err))
		}
	}
	return errors.Join(errs...)
}

// sideBySide sets the players' figures side by side: a table per API and size that the first
// player played and another did too, a column per player, and whether the first is ahead of each
// other (every median the row compares lower: yes; none higher: level).
func sideBySide(ps []player) string {
	var b strings.Builder
	b.WriteString("# make bench-scale side by side (issue 19)\n\n")
	for _, p := range ps {
		fmt.Fprintf(&b, "**%s** (`%s`, %s): %s\n\n", p.label, p.figures.Operator, p.dir, strings.ReplaceAll(strings.TrimSpace(p.figures.Header), "  \n", " "))
	}
	first, others := ps[0], ps[1:]
	for _, t := range first.figures.Tables {
		if !slices.ContainsFunc(others, func(p player) bool { return p.figures.played(t.API, t.Size) }) {
			continue // the first's other API: nothing to set beside it
		}
		fmt.Fprintf(&b, "## %s, %s\n\n| figure |", api(t.API).kind(), t.Title)
		for _, p := range ps {
			fmt.Fprintf(&b, " %s |", p.label)
		}
		b.WriteString(" target |")
		for _, p := range others {
			fmt.Fprintf(&b, " %s ahead of %s |", first.label, p.label)
		}
		b.WriteString("\n|---|" + strings.Repeat("---|", 2*len(ps)) + "\n")
		for _, row := range t.Rows {
			fmt.Fprintf(&b, "| %s | %s |", row.Figure, dash(row.Measured))
			var theirs []*figuresRow
			for _, p := range others {
				r := p.figures.row(t.API, t.Size, row.Figure)
				theirs = append(theirs, r)
				if r == nil {
					b.WriteString(" not played |")
				} else {
					fmt.Fprintf(&b, " %s |", dash(r.Measured))
				}
			}
			fmt.Fprintf(&b, " %s |", dash(row.Target))
			for _, r := range theirs {
				fmt.Fprintf(&b, " %s |", dash(aheadOf(row.Values, r)))
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("Each column is its own invocation of make bench-scale on the same harness (hack/cluster.sh, the same nodes, jobs and identity rules); its results.md and figures.json are in its directory. \"ahead\" compares the medians a row measures, lower is better. " +
		"Invocations of the same work differ by up to a fifth on a 2-core machine (docs/benchmarks.md): a lead smaller than that is not one.\n")
	return b.String()
}

// played: the run played the API at the size.
func (f figuresFile) played(apiName, size string) bool {
	return slices.ContainsFunc(f.Tables, func(t figuresTable) bool { return t.API == apiName && t.Size == size })
}

// row finds a figure of an API at a size; nil when the run did not play it.
func (f figuresFile) row(apiName, size, figure string) *figuresRow {
	for _, t := range f.Tables {
		if t.API != apiName || t.Size != size {
			continue
		}
		if i := slices.IndexFunc(t.Rows, func(r figuresRow) bool { return r.Figure == figure }); i >= 0 {
			return &t.Rows[i]
		}
	}
	return nil
}

// aheadOf: "" when the figures cannot be compared (either measured nothing), else ahead's verdict
// on every value together.
func aheadOf(mine []float64, theirs *figuresRow) string {
	if theirs == nil || len(mine) == 0 || len(mine) != len(theirs.Values) {
		return ""
	}
	better, asGood := true, true
	for i, v := range mine {
		better = better && v < theirs.Values[i]
		asGood = asGood && v <= theirs.Values[i]
	}
	return ahead(better, asGood)
}

// writeSideBySide reads the players' figures and writes <dir>/side-by-side.md.
func writeSideBySide(repo string, o options) error {
	if err := readPlayers(repo, o.players); err != nil {
		return err
	}
	md := sideBySide(o.players)
	fmt.Print(md)
	out := filepath.Join(o.dir, "side-by-side.md")
	if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
		return err
	}
	logf("side by side written to %s", out)
	return nil
}
