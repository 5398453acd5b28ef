module github.com/libesbulk/libesbulk/go/compat

go 1.26.0

require (
	github.com/libesbulk/libesbulk/go v0.0.0
	github.com/opensearch-project/opensearch-go/v4 v4.8.1
)

require golang.org/x/sync v0.23.0 // indirect

replace github.com/libesbulk/libesbulk/go => ../
