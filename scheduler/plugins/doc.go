// Package plugins assembles the in-tree plugins: Registry is the plain
// name→constructor map, and DefaultProfile lists which plugins run, in which
// order, and how much each score counts — the one place to read to know
// what the default scheduler checks.
package plugins
