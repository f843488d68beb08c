// Package sdlsuite holds the data, notification and lock tests of sdlstore
// as a suite that runs on any backend: sdlstore's own tests run it on
// redis-server processes, over redigo pools and over redlock.PoolNode
// nodes (sdlstore.NewFromNodes), the goredis and rueidis modules run it
// over their nodes, and the sdltest module runs it on its embedded
// servers, so every backend and client passes the same assertions.
package sdlsuite
