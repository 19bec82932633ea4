// Package nodeports is the NodePorts plugin: a pod asking for host ports fits
// only on nodes where no other pod holds the same protocol/port on an
// overlapping address.
package nodeports
