module libesbulk/bench/esbulk_go

go 1.19

require github.com/libesbulk/libesbulk/go v0.0.0

replace github.com/libesbulk/libesbulk/go => ../../../go
