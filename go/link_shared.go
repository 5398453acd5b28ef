//go:build !esbulk_static

package esbulk

// The shared library, found through its pkg-config file (libesbulk.pc).

// #cgo pkg-config: libesbulk
import "C"
