package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// machine describes where the run happened: the CPUs, the memory, the
// kernel, the Go and Redis versions, and the load average once the run
// ended (how busy the shared machine was).
type machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model"`
	OS       string `json:"os"`
	Kernel   string `json:"kernel"` // /proc/sys/kernel/osrelease
	Memory   string `json:"memory"` // MemTotal of /proc/meminfo
	Go       string `json:"go"`
	Redis    string `json:"redis_server"`
	LoadAvg  string `json:"loadavg_at_end"`
}

func describeMachine(redisBin string) machine {
	m := machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version(),
		Redis: redisVersion(redisBin), CPUModel: "unknown", Kernel: "unknown", Memory: "unknown"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64); err == nil {
					m.Memory = fmt.Sprintf("%.1f GiB", kb/(1<<20))
				}
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAvg = strings.TrimSpace(string(b))
	}
	return m
}

// versions lists the measured libraries and the tool's dependencies, and
// the commit of this repository when git can tell.
func versions() map[string]string {
	v := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/go-redsync/redsync/v4", "github.com/gomodule/redigo", "gonum.org/v1/plot", "github.com/redis/rueidis",
				"github.com/schollz/progressbar/v3", "github.com/google/uuid":
				v[d.Path] = d.Version
			}
		}
	}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		v["github.com/redlockplus/redlock"] = "commit " + strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
			v["github.com/redlockplus/redlock"] += " (with uncommitted changes)"
		}
	}
	return v
}
