module github.com/redlockplus/redlock/rueidis

go 1.26.0

require (
	github.com/redis/rueidis v1.0.79
	github.com/redlockplus/redlock v0.3.0
)

require (
	github.com/gomodule/redigo v1.9.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
