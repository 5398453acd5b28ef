//go:build esbulk_static

package esbulk

// With -tags esbulk_static: libesbulk.a linked into the program, its
// dependencies (libcurl, jansson, libxxhash, zlib) shared as usual. The
// header and libesbulk.a are looked for where the compiler and linker look
// by default (/usr/local/include and /usr/local/lib after `make install`);
// elsewhere set CGO_CFLAGS=-I<includedir> and CGO_LDFLAGS=-L<libdir>.

// #cgo pkg-config: libcurl jansson libxxhash zlib
// #cgo LDFLAGS: -l:libesbulk.a -lpthread -lm
import "C"
