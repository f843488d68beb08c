// Package sdlsuite holds the data, notification and lock tests of sdlstore
// as a suite that runs on any backend: sdlstore's own tests run it on
// redis-server processes, and the sdltest module runs it on its embedded
// servers, so both backends pass the same assertions.
package sdlsuite
