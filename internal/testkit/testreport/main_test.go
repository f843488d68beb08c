package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlockplus/redlock/internal/testkit/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m, nil) }

// stream is a `go test -json` run of two packages: p/ok passes with a
// skipped test, p/bad has a failed subtest and a passing test.
const stream = `{"Action":"start","Package":"p/ok"}
{"Action":"run","Package":"p/ok","Test":"TestA"}
{"Action":"output","Package":"p/ok","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p/ok","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"p/ok","Test":"TestA","Elapsed":0}
{"Action":"output","Package":"p/ok","Test":"TestS","Output":"--- SKIP: TestS (0.00s)\n"}
{"Action":"skip","Package":"p/ok","Test":"TestS","Elapsed":0}
{"Action":"output","Package":"p/ok","Output":"PASS\n"}
{"Action":"output","Package":"p/ok","Output":"ok  \tp/ok\t0.01s\n"}
{"Action":"pass","Package":"p/ok","Elapsed":0.01}
go: a line that is not JSON
{"Action":"output","Package":"p/bad","Test":"TestB","Output":"=== RUN   TestB\n"}
{"Action":"output","Package":"p/bad","Test":"TestB/one","Output":"=== RUN   TestB/one\n"}
{"Action":"output","Package":"p/bad","Test":"TestB/one","Output":"    x_test.go:9: boom\n"}
{"Action":"output","Package":"p/bad","Test":"TestB/one","Output":"--- FAIL: TestB/one (1.50s)\n"}
{"Action":"fail","Package":"p/bad","Test":"TestB/one","Elapsed":1.5}
{"Action":"output","Package":"p/bad","Test":"TestB/one/deep","Output":"--- PASS: TestB/one/deep (0.00s)\n"}
{"Action":"pass","Package":"p/bad","Test":"TestB/one/deep","Elapsed":0}
{"Action":"output","Package":"p/bad","Test":"TestB","Output":"--- FAIL: TestB (1.50s)\n"}
{"Action":"fail","Package":"p/bad","Test":"TestB","Elapsed":1.5}
{"Action":"output","Package":"p/bad","Test":"TestC","Output":"--- PASS: TestC (0.00s)\n"}
{"Action":"pass","Package":"p/bad","Test":"TestC","Elapsed":0}
{"Action":"output","Package":"p/bad","Output":"FAIL\n"}
{"Action":"output","Package":"p/bad","Output":"FAIL\tp/bad\t1.51s\n"}
{"Action":"fail","Package":"p/bad","Elapsed":1.51}
{"Action":"skip","Package":"p/none","Elapsed":0}
`

func TestReport(t *testing.T) {
	for _, progress := range []bool{false, true} {
		var out strings.Builder
		r := newReport(&out, progress)
		if err := r.read(strings.NewReader(stream)); err != nil {
			t.Fatal(err)
		}
		want := counts{Packages: 2, FailedPackages: 1, Passed: 3, Failed: 2, Skipped: 1}
		if r.counts != want {
			t.Errorf("progress %v: counts %+v, want %+v", progress, r.counts, want)
		}
		got := out.String()
		for _, line := range []string{
			"ok  \tp/ok\t0.01s\n",
			"go: a line that is not JSON\n",
			"    x_test.go:9: boom\n",
			"--- FAIL: TestB (1.50s)\n",
			"FAIL\tp/bad\t1.51s\n",
		} {
			if !strings.Contains(got, line) {
				t.Errorf("progress %v: output lacks %q:\n%s", progress, line, got)
			}
		}
		for _, quiet := range []string{"=== RUN   TestA", "--- PASS: TestC", "p/none", "PASS\n"} {
			if strings.Contains(got, quiet) {
				t.Errorf("progress %v: output has %q, which only a failure shows:\n%s", progress, quiet, got)
			}
		}
		scenario := "    FAIL TestB/one (1.5s)\n"
		if strings.Contains(got, scenario) != progress || strings.Contains(got, "TestB/one/deep (") {
			t.Errorf("progress %v: output:\n%s\nwant a line %q only with -progress, and none for deeper subtests", progress, got, scenario)
		}
	}
}

func TestSummary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	for _, c := range []counts{{Packages: 2, Passed: 10, Skipped: 1}, {Packages: 3, Passed: 5, Failed: 1, FailedPackages: 1}} {
		sum, _ := readCounts(path)
		sum.add(c)
		if err := sum.write(path); err != nil {
			t.Fatal(err)
		}
	}
	c, err := readCounts(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "test.sh: 2 modules, 5 packages, 15 passed, 1 failed, 1 skipped in 8m12s"
	if got := c.line(2, 8*time.Minute+12*time.Second+300*time.Millisecond); got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	// A package that failed outside its tests (a build error, a leak check
	// in TestMain) counts as a failure.
	if got := (counts{Packages: 1, FailedPackages: 1}).line(1, time.Second); !strings.Contains(got, " 1 failed,") {
		t.Errorf("summary %q, want 1 failed", got)
	}
}
