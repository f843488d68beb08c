package redlocktest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// LocalImageRepository is the repository of the images Start builds from
// the local redis-server binary when the configured image cannot be had.
// The tag is the Redis version and a hash of the binary and its libraries,
// such as "redlocktest-redis:7.0.15-3f2a9c01d4e5".
const LocalImageRepository = "redlocktest-redis"

// imageMu serialises image checks and builds within one test binary.
var imageMu sync.Mutex

// ensureImage returns the image to run: cfg.image when it is present or can
// be pulled, else an image built from the local redis-server. note tells
// what was done when it was not the plain case.
func ensureImage(pool *dockertest.Pool, cfg config) (image, note string, err error) {
	imageMu.Lock()
	defer imageMu.Unlock()
	if _, err := pool.Client.InspectImage(cfg.image); err == nil {
		return cfg.image, "", nil
	}
	repo, tag := splitImage(cfg.image)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pullErr := pool.Client.PullImage(dc.PullImageOptions{
		Repository: repo, Tag: tag, Context: ctx,
		InactivityTimeout: 30 * time.Second, OutputStream: io.Discard,
	}, dc.AuthConfiguration{})
	if pullErr == nil {
		return cfg.image, fmt.Sprintf("pulled image %s", cfg.image), nil
	}
	local, built, err := localImage(pool, cfg.redisServer)
	if err != nil {
		return "", "", fmt.Errorf("image %s is not present and could not be pulled (%v), and no image could be built from a local redis-server: %w", cfg.image, pullErr, err)
	}
	verb := "using"
	if built {
		verb = "built"
	}
	return local, fmt.Sprintf("image %s is not present and could not be pulled; %s %s from the local redis-server", cfg.image, verb, local), nil
}

// splitImage splits "repo[:tag]" (the repository may name a registry with a
// port) into repository and tag; the tag defaults to "latest".
func splitImage(image string) (repo, tag string) {
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[:i], image[i+1:]
	}
	return image, "latest"
}

// BuildLocalImage builds, unless it exists already, a Docker image FROM
// scratch that holds the machine's redis-server binary (the
// REDLOCKTEST_REDIS_SERVER environment variable or "redis-server" on the
// PATH), the shared libraries ldd lists for it and the dynamic loader. It
// returns the image's name, in LocalImageRepository. Start calls it by
// itself when the configured image is missing and cannot be pulled; CI may
// call it (through go test -run TestBuildLocalImage, say) to build the
// image ahead of the tests.
func BuildLocalImage() (string, error) {
	pool, err := dockerPool()
	if err != nil {
		return "", err
	}
	defer closeDockerClient(pool)
	imageMu.Lock()
	defer imageMu.Unlock()
	name, _, err := localImage(pool, newConfig(nil).redisServer)
	return name, err
}

// localImage returns the name of the image built from the local
// redis-server, building it when it does not exist yet.
func localImage(pool *dockertest.Pool, redisServer string) (name string, built bool, err error) {
	bin, err := lookRedisServer(redisServer)
	if err != nil {
		return "", false, err
	}
	files, err := imageFiles(bin)
	if err != nil {
		return "", false, err
	}
	version, err := redisVersion(bin)
	if err != nil {
		return "", false, err
	}
	sum, err := hashFiles(files)
	if err != nil {
		return "", false, err
	}
	name = fmt.Sprintf("%s:%s-%s", LocalImageRepository, version, sum)
	if _, err := pool.Client.InspectImage(name); err == nil {
		return name, false, nil
	}
	ctxTar, err := buildContext(files)
	if err != nil {
		return "", false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	err = pool.Client.BuildImage(dc.BuildImageOptions{
		Name:           name,
		Dockerfile:     "Dockerfile",
		InputStream:    ctxTar,
		OutputStream:   &out,
		RmTmpContainer: true,
		Labels:         map[string]string{labelOwner: "image", "redlocktest.source": bin},
		Context:        ctx,
	})
	if err != nil {
		return "", false, fmt.Errorf("docker build of %s: %w\n%s", name, err, out.String())
	}
	return name, true, nil
}

// imageFile is one file of the image: where it goes and where its content
// is read from (symbolic links resolved).
type imageFile struct {
	dest, src string
	mode      int64
}

// imageFiles lists the binary, its libraries and the loader.
func imageFiles(bin string) ([]imageFile, error) {
	target, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", bin, err)
	}
	// The name matters: redis-server runs as redis-check-rdb when it is
	// started under that name, which is what Debian's symlink points at.
	files := []imageFile{{dest: "usr/local/bin/redis-server", src: target, mode: 0o755}}
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s (is it a dynamically linked Linux binary?): %w", bin, err)
	}
	libs, err := parseLdd(out)
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", bin, err)
	}
	for _, lib := range libs {
		src, err := filepath.EvalSymlinks(lib)
		if err != nil {
			return nil, fmt.Errorf("resolve library %s: %w", lib, err)
		}
		files = append(files, imageFile{dest: strings.TrimPrefix(lib, "/"), src: src, mode: 0o755})
	}
	return files, nil
}

// parseLdd returns the absolute paths ldd printed: "libx.so => /path (0x..)"
// and the loader's "/lib64/ld-linux-x86-64.so.2 (0x..)". The vDSO has no
// file and is skipped; a library ldd could not find is an error.
func parseLdd(out []byte) ([]string, error) {
	var libs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 3 && f[1] == "=>" && f[2] == "not":
			return nil, fmt.Errorf("library %s not found", f[0])
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			libs = append(libs, f[2])
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			libs = append(libs, f[0])
		}
	}
	if len(libs) == 0 {
		return nil, fmt.Errorf("no libraries listed; a static binary needs no loader, but this one printed:\n%s", out)
	}
	return libs, nil
}

var versionRE = regexp.MustCompile(`v=([0-9][0-9A-Za-z.\-]*)`)

// redisVersion returns the version redis-server --version reports.
func redisVersion(bin string) (string, error) {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	m := versionRE.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("%s --version printed no version: %q", bin, out)
	}
	return string(m[1]), nil
}

// hashFiles returns a short hash of the files' places and contents, so that
// a new redis-server or library gives a new image tag.
func hashFiles(files []imageFile) (string, error) {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00", f.dest)
		r, err := os.Open(f.src)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, r)
		r.Close()
		if err != nil {
			return "", fmt.Errorf("read %s: %w", f.src, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// dockerfile is the recipe of the local image. Its default command is a
// plain server; Start passes its own arguments.
const dockerfile = `FROM scratch
COPY rootfs/ /
ENV PATH=/usr/local/bin:/usr/bin:/bin
WORKDIR /data
EXPOSE 6379
CMD ["redis-server", "--protected-mode", "no"]
`

// buildContext returns the build context: the Dockerfile and rootfs/ with
// the files, /data and /tmp.
func buildContext(files []imageFile) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h *tar.Header, body io.Reader) error {
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if body != nil {
			_, err := io.Copy(tw, body)
			return err
		}
		return nil
	}
	if err := add(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile))}, strings.NewReader(dockerfile)); err != nil {
		return nil, err
	}
	for _, d := range []struct {
		name string
		mode int64
	}{{"rootfs/data/", 0o755}, {"rootfs/tmp/", 0o1777}} {
		if err := add(&tar.Header{Name: d.name, Mode: d.mode, Typeflag: tar.TypeDir}, nil); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		st, err := os.Stat(f.src)
		if err != nil {
			return nil, err
		}
		r, err := os.Open(f.src)
		if err != nil {
			return nil, err
		}
		err = add(&tar.Header{Name: "rootfs/" + f.dest, Mode: f.mode, Size: st.Size()}, r)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("add %s to the build context: %w", f.src, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return &buf, nil
}
