//go:build !unix

package redlocktest

import "errors"

// newProcessBackend reports that processes cannot be paused here: the
// process backend needs Unix signals (SIGSTOP, SIGCONT, SIGKILL).
func newProcessBackend(cfg config, root string) (backend, error) {
	return nil, errors.New("the process backend needs a Unix system; use the Docker backend")
}

// processGone cannot tell here, so it keeps everything.
func processGone(pid int) bool { return false }
