// Package runner drives a controller's workers: it pops keys from a rate-limited workqueue, calls the
// controller's sync function, and requeues with exponential backoff on error. Every controller in
// skiff shares this loop so retry and shutdown behave the same everywhere.
package runner
