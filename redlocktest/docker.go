package redlocktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// Labels put on every container and network the Docker backend creates, so
// that those left behind by a test binary that died can be found and removed.
const (
	labelOwner = "redlocktest"
	labelPID   = "redlocktest.pid"
	labelHost  = "redlocktest.host"
)

// redisPort is the port redis-server listens on inside its container.
const redisPort = "6379/tcp"

// dockerBackend runs each node in a container of its own, all on one
// network created for the cluster. A node's port is published on 127.0.0.1
// and re-read after every restart, as Docker may choose another one.
type dockerBackend struct {
	cfg     config
	pool    *dockertest.Pool
	network *dockertest.Network
	image   string
	id      string
	labels  map[string]string
	nodes   []*dockertest.Resource
}

// dockerPool connects to the local Docker engine and checks that it
// answers. The error says why it does not.
func dockerPool() (*dockertest.Pool, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := pool.Client.PingWithContext(ctx); err != nil {
		closeDockerClient(pool)
		return nil, fmt.Errorf("no Docker engine answers: %w", err)
	}
	return pool, nil
}

// closeDockerClient drops the client's idle HTTP connections, whose
// goroutines would otherwise outlive the test.
func closeDockerClient(pool *dockertest.Pool) {
	if pool.Client.HTTPClient != nil {
		pool.Client.HTTPClient.CloseIdleConnections()
	}
}

// newDockerBackend prepares the image and the cluster's network. It owns
// pool from then on, and closes it on error.
func newDockerBackend(cfg config, pool *dockertest.Pool, id string) (b *dockerBackend, note string, err error) {
	defer func() {
		if err != nil {
			closeDockerClient(pool)
		}
	}()
	removeStale(pool)
	image, note, err := ensureImage(pool, cfg)
	if err != nil {
		return nil, "", err
	}
	host, _ := os.Hostname()
	labels := map[string]string{labelOwner: "1", labelPID: strconv.Itoa(os.Getpid()), labelHost: host}
	network, err := pool.CreateNetwork("redlocktest-"+id, func(o *dc.CreateNetworkOptions) {
		o.Labels = labels
	})
	if err != nil {
		return nil, "", fmt.Errorf("create network: %w", err)
	}
	return &dockerBackend{cfg: cfg, pool: pool, network: network, image: image, id: id, labels: labels}, note, nil
}

func (b *dockerBackend) name() string { return string(BackendDocker) }

func (b *dockerBackend) add(i int) (string, error) {
	repo, tag := splitImage(b.image)
	cmd := append([]string{"redis-server", "--port", "6379", "--dir", "/data"}, b.cfg.redisArgs()...)
	var mounts, env []string
	if clock := b.cfg.clockFor(i); clock != nil {
		mounts, env = dockerClock(clock)
	}
	res, err := b.pool.RunWithOptions(&dockertest.RunOptions{
		Name:         fmt.Sprintf("redlocktest-%s-%d", b.id, i),
		Hostname:     fmt.Sprintf("node%d", i),
		Repository:   repo,
		Tag:          tag,
		Cmd:          cmd,
		Env:          env,
		Mounts:       mounts,
		ExposedPorts: []string{redisPort},
		PortBindings: map[dc.Port][]dc.PortBinding{redisPort: {{HostIP: "127.0.0.1"}}},
		Networks:     []*dockertest.Network{b.network},
		Labels:       b.labels,
	}, func(hc *dc.HostConfig) {
		hc.AutoRemove = false
		hc.RestartPolicy = dc.RestartPolicy{Name: "no"}
	})
	if err != nil {
		return "", fmt.Errorf("run container from %s: %w", b.image, err)
	}
	b.nodes = append(b.nodes, res)
	return b.waitReady(i)
}

// waitReady finds node i's address (its address on the cluster's network,
// else its published port) and waits until it answers PING.
func (b *dockerBackend) waitReady(i int) (string, error) {
	id := b.nodes[i].Container.ID
	deadline := time.Now().Add(b.cfg.startTimeout)
	for {
		c, err := b.pool.Client.InspectContainer(id)
		if err != nil {
			return "", fmt.Errorf("inspect container %.12s: %w", id, err)
		}
		if !c.State.Running {
			return "", fmt.Errorf("container %.12s is not running (exit code %d): %s", id, c.State.ExitCode, b.logs(id))
		}
		// The container's own address on the cluster's network is used when
		// this host can route to it (Linux): it spares every connection the
		// trip through Docker's userland port proxy, which cannot keep up
		// with the connection churn of timeouts. Else the published port.
		var addrs []string
		if nw, ok := c.NetworkSettings.Networks[b.network.Network.Name]; ok && nw.IPAddress != "" {
			addrs = append(addrs, net.JoinHostPort(nw.IPAddress, "6379"))
		}
		if addr, ok := publishedAddr(c); ok {
			addrs = append(addrs, addr)
		}
		for _, addr := range addrs {
			if err = ping(addr); err == nil {
				return addr, nil
			}
		}
		if time.Now().After(deadline) {
			if len(addrs) == 0 {
				return "", fmt.Errorf("container %.12s: port %s not published within %v", id, redisPort, b.cfg.startTimeout)
			}
			return "", fmt.Errorf("container %.12s: no PONG on %v within %v: %v; its log:\n%s", id, addrs, b.cfg.startTimeout, err, b.logs(id))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// publishedAddr returns the host address of a container's Redis port.
func publishedAddr(c *dc.Container) (string, bool) {
	if c.NetworkSettings == nil {
		return "", false
	}
	for _, pb := range c.NetworkSettings.Ports[redisPort] {
		if pb.HostPort == "" {
			continue
		}
		ip := pb.HostIP
		if ip == "" || ip == "0.0.0.0" || ip == "::" {
			ip = "127.0.0.1"
		}
		return net.JoinHostPort(ip, pb.HostPort), true
	}
	return "", false
}

// logs returns the tail of a container's output, for error messages.
func (b *dockerBackend) logs(id string) string {
	var buf bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := b.pool.Client.Logs(dc.LogsOptions{
		Context: ctx, Container: id, OutputStream: &buf, ErrorStream: &buf,
		Stdout: true, Stderr: true, Tail: "40",
	})
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return buf.String()
}

// kill sends SIGKILL to node i's container and waits until it has stopped.
func (b *dockerBackend) kill(i int) error {
	id := b.nodes[i].Container.ID
	err := b.pool.Client.KillContainer(dc.KillContainerOptions{ID: id, Signal: dc.SIGKILL})
	var notRunning *dc.ContainerNotRunning
	if err != nil && !errors.As(err, &notRunning) {
		return fmt.Errorf("kill container %.12s: %w", id, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.startTimeout)
	defer cancel()
	if _, err := b.pool.Client.WaitContainerWithContext(id, ctx); err != nil {
		return fmt.Errorf("wait for container %.12s to stop: %w", id, err)
	}
	return nil
}

// restart starts node i's stopped container again and returns its new
// published address.
func (b *dockerBackend) restart(i int) (string, error) {
	id := b.nodes[i].Container.ID
	if err := b.pool.Client.StartContainer(id, nil); err != nil {
		return "", fmt.Errorf("start container %.12s: %w", id, err)
	}
	return b.waitReady(i)
}

func (b *dockerBackend) pause(i int) error {
	id := b.nodes[i].Container.ID
	if err := b.pool.Client.PauseContainer(id); err != nil {
		return fmt.Errorf("pause container %.12s: %w", id, err)
	}
	return nil
}

func (b *dockerBackend) unpause(i int) error {
	id := b.nodes[i].Container.ID
	if err := b.pool.Client.UnpauseContainer(id); err != nil {
		return fmt.Errorf("unpause container %.12s: %w", id, err)
	}
	return nil
}

// close removes every container and the network.
func (b *dockerBackend) close() error {
	defer closeDockerClient(b.pool)
	var errs []error
	for _, r := range b.nodes {
		if err := b.pool.Purge(r); err != nil {
			errs = append(errs, fmt.Errorf("remove container %.12s: %w", r.Container.ID, err))
		}
	}
	if err := b.pool.Client.RemoveNetwork(b.network.Network.ID); err != nil {
		errs = append(errs, fmt.Errorf("remove network %s: %w", b.network.Network.Name, err))
	}
	return errors.Join(errs...)
}

// removeStale removes the containers and networks that an earlier test
// binary on this host created and left behind when it died (its process is
// gone). Failures are ignored: this is housekeeping.
func removeStale(pool *dockertest.Pool) {
	host, _ := os.Hostname()
	stale := func(labels map[string]string) bool {
		if labels[labelHost] != host {
			return false
		}
		pid, err := strconv.Atoi(labels[labelPID])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			return false
		}
		return processGone(pid)
	}
	filter := map[string][]string{"label": {labelPID}}
	if cs, err := pool.Client.ListContainers(dc.ListContainersOptions{All: true, Filters: filter}); err == nil {
		for _, c := range cs {
			if stale(c.Labels) {
				_ = pool.Client.RemoveContainer(dc.RemoveContainerOptions{ID: c.ID, Force: true, RemoveVolumes: true})
			}
		}
	}
	if ns, err := pool.Client.FilteredListNetworks(dc.NetworkFilterOpts{"label": {labelPID: true}}); err == nil {
		for _, n := range ns {
			if stale(n.Labels) {
				_ = pool.Client.RemoveNetwork(n.ID)
			}
		}
	}
}
