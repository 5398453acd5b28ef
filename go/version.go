package esbulk

// Version is this module's version. It is the version of the libesbulk
// release it comes with: the module and the library are released together,
// and a module is tagged go/vX.Y.Z in the repository when the library is
// released as X.Y.Z. LibraryVersion tells the version of the library that is
// linked in, which may be a later release with the same major version.
const Version = "1.0.0"
