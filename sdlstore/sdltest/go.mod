module github.com/redlockplus/redlock/sdlstore/sdltest

go 1.26

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/redlockplus/redlock v0.3.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/gomodule/redigo v1.9.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
)
