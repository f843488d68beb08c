// Command testreport reads the output of `go test -json` on stdin and
// prints what a reader of scripts/test.sh needs: one "ok" line per package
// that passed, the whole output of every test that failed (and of a
// package that failed outside its tests, such as a build error or a leak
// check in TestMain), and with -progress one line per finished scenario
// (a top-level test or one of its direct subtests), so that a long suite
// is seen to move. It adds its counts to the -state file, and
// `testreport -summary FILE` prints the last line of test.sh:
//
//	test.sh: 9 modules, 52 packages, 1234 passed, 0 failed, 7 skipped in 8m12s
//
// Tests are counted as test2json reports them: top-level tests, subtests
// and examples alike. It exits 1 when a test or package failed, so that
// the caller fails even if it ignores the go command's status.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

func main() {
	progress := flag.Bool("progress", false, "print one line per finished top-level test and direct subtest")
	state := flag.String("state", "", "file to add the counts to")
	summary := flag.String("summary", "", "print the summary line of the counts in this file and exit")
	modules := flag.Int("modules", 0, "with -summary: how many modules were tested")
	elapsed := flag.Duration("elapsed", 0, "with -summary: how long the run took")
	flag.Parse()
	if *summary != "" {
		c, err := readCounts(*summary)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		fmt.Println(c.line(*modules, *elapsed))
		if c.Failed > 0 || c.FailedPackages > 0 {
			os.Exit(1)
		}
		return
	}
	r := newReport(os.Stdout, *progress)
	if err := r.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if *state != "" {
		c, err := readCounts(*state)
		if err != nil && !os.IsNotExist(err) {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		c.add(r.counts)
		if err := c.write(*state); err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
	}
	if r.counts.Failed > 0 || r.counts.FailedPackages > 0 {
		os.Exit(1)
	}
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string // build-output events
}

// counts are what a run of test.sh adds up.
type counts struct {
	Packages       int // packages whose tests ran
	FailedPackages int
	Passed         int
	Failed         int
	Skipped        int
}

func (c *counts) add(o counts) {
	c.Packages += o.Packages
	c.FailedPackages += o.FailedPackages
	c.Passed += o.Passed
	c.Failed += o.Failed
	c.Skipped += o.Skipped
}

// line is the summary line.
func (c counts) line(modules int, elapsed time.Duration) string {
	failed := c.Failed
	if failed == 0 && c.FailedPackages > 0 {
		failed = c.FailedPackages // a package that failed outside its tests
	}
	return fmt.Sprintf("test.sh: %s, %s, %d passed, %d failed, %d skipped in %s",
		plural(modules, "module"), plural(c.Packages, "package"), c.Passed, failed, c.Skipped, elapsed.Round(time.Second))
}

// plural is "1 module" or "2 modules".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func readCounts(path string) (counts, error) {
	var c counts
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	return c, json.Unmarshal(data, &c)
}

func (c counts) write(path string) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// report follows the events of one go test run.
type report struct {
	w        io.Writer
	progress bool
	counts   counts
	// out holds the output of every test of a package not yet finished,
	// by package and test; "" is the package's own output.
	out map[string]map[string]*strings.Builder
	// failed lists the failed tests of each package in the order they
	// ended, for printing their output when the package ends.
	failed map[string][]string
}

func newReport(w io.Writer, progress bool) *report {
	return &report{w: w, progress: progress, out: map[string]map[string]*strings.Builder{}, failed: map[string][]string{}}
}

// read consumes the stream; a line that is not an event (the go command's
// own messages) is printed as it is.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(r.w, "%s\n", line)
			continue
		}
		r.event(e)
	}
	return sc.Err()
}

func (r *report) buf(pkg, test string) *strings.Builder {
	tests := r.out[pkg]
	if tests == nil {
		tests = map[string]*strings.Builder{}
		r.out[pkg] = tests
	}
	b := tests[test]
	if b == nil {
		b = &strings.Builder{}
		tests[test] = b
	}
	return b
}

func (r *report) event(e event) {
	switch e.Action {
	case "build-output":
		fmt.Fprint(r.w, e.Output) // compiler errors: shown as they come
	case "output":
		r.buf(e.Package, e.Test).WriteString(e.Output)
	case "pass", "fail", "skip":
		if e.Test != "" {
			r.testEnded(e)
		} else {
			r.packageEnded(e)
		}
	}
}

func (r *report) testEnded(e event) {
	switch e.Action {
	case "pass":
		r.counts.Passed++
	case "fail":
		r.counts.Failed++
		r.failed[e.Package] = append(r.failed[e.Package], e.Test)
	case "skip":
		r.counts.Skipped++
	}
	if r.progress && strings.Count(e.Test, "/") <= 1 {
		fmt.Fprintf(r.w, "    %s %s (%s)\n", strings.ToUpper(e.Action), e.Test, time.Duration(e.Elapsed*float64(time.Second)).Round(100*time.Millisecond))
	}
	if e.Action != "fail" {
		delete(r.out[e.Package], e.Test)
	}
}

func (r *report) packageEnded(e event) {
	own := r.buf(e.Package, "").String()
	switch e.Action {
	case "pass":
		r.counts.Packages++
		fmt.Fprint(r.w, resultLines(own))
	case "fail":
		r.counts.Packages++
		r.counts.FailedPackages++
		for _, t := range r.failed[e.Package] {
			if b := r.out[e.Package][t]; b != nil {
				fmt.Fprint(r.w, b.String())
			}
		}
		fmt.Fprint(r.w, own)
	case "skip": // no test files: nothing to say
	}
	delete(r.out, e.Package)
	delete(r.failed, e.Package)
}

// resultLines keeps the "ok" line of a package that passed, and drops
// the bare "PASS" and any output of its TestMain.
func resultLines(own string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(own, "\n") {
		if strings.HasPrefix(l, "ok ") {
			b.WriteString(l)
		}
	}
	return b.String()
}
