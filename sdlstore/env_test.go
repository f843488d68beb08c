package sdlstore_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockplus/redlock/internal/testkit/redistest"
	"github.com/redlockplus/redlock/sdlstore"
)

// lookup serves variables from a map instead of the process environment.
func lookup(env map[string]string) sdlstore.Option {
	return sdlstore.WithLookupEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
}

// NewFromEnv against real servers: the cluster list gives instances in
// hashing order, each with its port.
func TestNewFromEnvStandalone(t *testing.T) {
	c := redistest.Start(t, 3)
	ports := make([]string, 3)
	for i, n := range c.Nodes {
		ports[i] = strconv.Itoa(n.Port)
	}
	s, err := sdlstore.NewFromEnv(lookup(map[string]string{
		"DBAAS_CLUSTER_ADDR_LIST": "127.0.0.1,127.0.0.1,localhost",
		"DBAAS_SERVICE_PORT":      strings.Join(ports, ","),
	}))
	must(t, err)
	defer s.Close()
	cx := ctx(t)
	if !s.IsActive(cx) || s.Instances() != 3 {
		t.Fatalf("IsActive = false or %d instances", s.Instances())
	}
	for _, ns := range []string{"x1", "x2", "x3", "x4", "x5", "x6"} {
		must(t, s.Set(cx, ns, map[string][]byte{"k": []byte(ns)}))
		v, _ := redis.String(c.Nodes[s.InstanceIndex(ns)].Do("GET", "{"+ns+"},k"), nil)
		if v != ns {
			t.Fatalf("namespace %s not on instance %d", ns, s.InstanceIndex(ns))
		}
	}
}

// The process environment is the default source.
func TestNewFromEnvProcessEnvironment(t *testing.T) {
	c := redistest.Start(t, 1)
	t.Setenv("DBAAS_CLUSTER_ADDR_LIST", "")
	t.Setenv("DBAAS_SERVICE_SENTINEL_PORT", "")
	t.Setenv("DBAAS_SERVICE_HOST", "127.0.0.1")
	t.Setenv("DBAAS_SERVICE_PORT", strconv.Itoa(c.Nodes[0].Port))
	s, err := sdlstore.NewFromEnv()
	must(t, err)
	defer s.Close()
	must(t, s.Set(ctx(t), "ns", map[string][]byte{"k": []byte("v")}))
	if v, _ := redis.String(c.Nodes[0].Do("GET", "{ns},k"), nil); v != "v" {
		t.Fatalf("GET = %q", v)
	}
}

func TestNewFromEnvInvalid(t *testing.T) {
	_, err := sdlstore.NewFromEnv(lookup(map[string]string{}))
	wantErr(t, err, sdlstore.ErrInvalidArgument)
	_, err = sdlstore.NewFromEnv(sdlstore.WithLookupEnv(nil))
	wantErr(t, err, sdlstore.ErrInvalidArgument)
}

// DBAAS_NODE_COUNT sets NodeCount; WithNodeCount overrides it; bad values
// are refused.
func TestNodeCount(t *testing.T) {
	env := map[string]string{"DBAAS_SERVICE_HOST": "127.0.0.1", "DBAAS_NODE_COUNT": "3"}
	s, err := sdlstore.NewFromEnv(lookup(env))
	must(t, err)
	defer s.Close()
	if s.NodeCount() != 3 {
		t.Fatalf("NodeCount = %d, want 3 from DBAAS_NODE_COUNT", s.NodeCount())
	}
	s2, err := sdlstore.NewFromEnv(lookup(env), sdlstore.WithNodeCount(2))
	must(t, err)
	defer s2.Close()
	if s2.NodeCount() != 2 {
		t.Fatalf("NodeCount = %d, want 2 from WithNodeCount", s2.NodeCount())
	}
	env["DBAAS_NODE_COUNT"] = "0"
	_, err = sdlstore.NewFromEnv(lookup(env))
	wantErr(t, err, sdlstore.ErrInvalidArgument)
	_, err = sdlstore.NewFromEnv(lookup(env), sdlstore.WithNodeCount(0))
	wantErr(t, err, sdlstore.ErrInvalidArgument)
	mixed := map[string]string{"DBAAS_CLUSTER_ADDR_LIST": "a,b", "DBAAS_SERVICE_SENTINEL_PORT": "26379,", "DBAAS_MASTER_NAME": "m"}
	_, err = sdlstore.NewFromEnv(lookup(mixed))
	wantErr(t, err, sdlstore.ErrInvalidArgument)
	if !strings.Contains(err.Error(), "all sentinel-managed or all standalone") {
		t.Fatalf("mixed instances refused with %q", err)
	}
}
