module github.com/jepsen-lite/jepsen-lite/lockapi

go 1.26.8
