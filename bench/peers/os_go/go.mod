module libesbulk/bench/os_go

go 1.26.0

require github.com/opensearch-project/opensearch-go/v4 v4.8.1

require golang.org/x/sync v0.23.0 // indirect
