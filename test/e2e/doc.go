// Package e2e drives a real `skiff server` binary, built once per test
// binary, with the real kubectl releases installed on the machine (by path,
// so the version under test is explicit) and with client-go informers.
package e2e
