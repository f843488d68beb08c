module github.com/redlockplus/redlock

go 1.26

require github.com/gomodule/redigo v1.9.3
