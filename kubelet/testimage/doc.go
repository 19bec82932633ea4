// Package testimage builds the container image the node-agent tests run:
// the program in ./app compiled statically and packed, as the only layer, into
// an OCI image-layout tarball that containerd imports without a registry.
//
// Pack writes any single-layer image from files on disk; Build compiles ./app
// and packs it for a test. BuildLogDriver compiles the log driver that a
// containerd runtime under test writes container output through.
package testimage
