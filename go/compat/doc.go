// Package compat holds only a test: the same test body driven through
// opensearch-go's opensearchutil.BulkIndexer and through esbulk's, which must
// give the same outcome for every item. It is a module of its own so that
// the esbulk module itself needs no dependency and builds with older Go
// toolchains (opensearch-go v4.8.1 needs Go 1.26).
package compat
