module github.com/libesbulk/libesbulk/go

go 1.19
