// Package services gives Services their cluster IP and node ports when they
// are created and takes them back when they are deleted, using the
// store-backed range allocators of package allocator. It plugs into the
// generic handler as the services resource's registry.Lifecycle.
package services
