package sdlstore

import (
	"errors"
	"reflect"
	"testing"
)

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []instanceConfig
		err  bool
	}{
		{"host only, default port", map[string]string{"DBAAS_SERVICE_HOST": "db"},
			[]instanceConfig{{Addr: "db:6379"}}, false},
		{"host and port", map[string]string{"DBAAS_SERVICE_HOST": "db", "DBAAS_SERVICE_PORT": "7000"},
			[]instanceConfig{{Addr: "db:7000"}}, false},
		{"cluster list wins over host", map[string]string{"DBAAS_SERVICE_HOST": "db", "DBAAS_CLUSTER_ADDR_LIST": "a,b", "DBAAS_SERVICE_PORT": "1,2"},
			[]instanceConfig{{Addr: "a:1"}, {Addr: "b:2"}}, false},
		{"ports padded with the last", map[string]string{"DBAAS_CLUSTER_ADDR_LIST": "a, b ,c", "DBAAS_SERVICE_PORT": "1,2"},
			[]instanceConfig{{Addr: "a:1"}, {Addr: "b:2"}, {Addr: "c:2"}}, false},
		{"extra ports ignored", map[string]string{"DBAAS_SERVICE_HOST": "a", "DBAAS_SERVICE_PORT": "1,2,3"},
			[]instanceConfig{{Addr: "a:1"}}, false},
		{"IPv6 host", map[string]string{"DBAAS_SERVICE_HOST": "::1", "DBAAS_SERVICE_PORT": "7000"},
			[]instanceConfig{{Addr: "[::1]:7000"}}, false},
		{"sentinel", map[string]string{"DBAAS_SERVICE_HOST": "s", "DBAAS_SERVICE_SENTINEL_PORT": "26379", "DBAAS_MASTER_NAME": "m"},
			[]instanceConfig{{SentinelAddr: "s:26379", MasterName: "m"}}, false},
		{"sentinel cluster padded", map[string]string{"DBAAS_CLUSTER_ADDR_LIST": "s1,s2,s3", "DBAAS_SERVICE_SENTINEL_PORT": "1,2", "DBAAS_MASTER_NAME": "m1"},
			[]instanceConfig{{SentinelAddr: "s1:1", MasterName: "m1"}, {SentinelAddr: "s2:2", MasterName: "m1"}, {SentinelAddr: "s3:2", MasterName: "m1"}}, false},
		{"sentinel masters per instance", map[string]string{"DBAAS_CLUSTER_ADDR_LIST": "s1,s2", "DBAAS_SERVICE_SENTINEL_PORT": "1", "DBAAS_MASTER_NAME": "m1,m2"},
			[]instanceConfig{{SentinelAddr: "s1:1", MasterName: "m1"}, {SentinelAddr: "s2:1", MasterName: "m2"}}, false},
		{"nothing set", map[string]string{}, nil, true},
		{"blank host", map[string]string{"DBAAS_SERVICE_HOST": "  "}, nil, true},
		{"empty list entry", map[string]string{"DBAAS_CLUSTER_ADDR_LIST": "a,,b"}, nil, true},
		{"bad port", map[string]string{"DBAAS_SERVICE_HOST": "a", "DBAAS_SERVICE_PORT": "http"}, nil, true},
		{"port out of range", map[string]string{"DBAAS_SERVICE_HOST": "a", "DBAAS_SERVICE_PORT": "70000"}, nil, true},
		{"empty port entry", map[string]string{"DBAAS_SERVICE_HOST": "a", "DBAAS_SERVICE_PORT": "1,"}, nil, true},
		{"sentinel without master", map[string]string{"DBAAS_SERVICE_HOST": "s", "DBAAS_SERVICE_SENTINEL_PORT": "26379"}, nil, true},
		{"sentinel and standalone mixed", map[string]string{"DBAAS_CLUSTER_ADDR_LIST": "a,b", "DBAAS_SERVICE_SENTINEL_PORT": "26379,", "DBAAS_MASTER_NAME": "m"}, nil, true},
		{"standalone and sentinel mixed", map[string]string{"DBAAS_CLUSTER_ADDR_LIST": "a,b,c", "DBAAS_SERVICE_SENTINEL_PORT": " ,26379", "DBAAS_MASTER_NAME": "m"}, nil, true},
		{"sentinel list of blanks", map[string]string{"DBAAS_SERVICE_HOST": "a", "DBAAS_SERVICE_SENTINEL_PORT": " , ", "DBAAS_MASTER_NAME": "m"}, nil, true},
		{"bad sentinel port", map[string]string{"DBAAS_SERVICE_HOST": "s", "DBAAS_SERVICE_SENTINEL_PORT": "x", "DBAAS_MASTER_NAME": "m"}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := configFromEnv(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if tc.err {
				if !errors.Is(err, ErrInvalidArgument) || !errors.Is(err, ErrSDL) {
					t.Fatalf("error = %v, want ErrInvalidArgument", err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("configFromEnv = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestNodeCountFromEnv(t *testing.T) {
	for v, want := range map[string]int{"": 1, " ": 1, "1": 1, "3": 3, " 5 ": 5} {
		got, err := nodeCountFromEnv(func(string) (string, bool) { return v, v != "" })
		if err != nil || got != want {
			t.Errorf("DBAAS_NODE_COUNT=%q: %d, %v; want %d", v, got, err, want)
		}
	}
	for _, v := range []string{"0", "-1", "three", "3,3"} {
		if _, err := nodeCountFromEnv(func(string) (string, bool) { return v, true }); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("DBAAS_NODE_COUNT=%q: %v, want ErrInvalidArgument", v, err)
		}
	}
}
