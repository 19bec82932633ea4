// Package apiservertest starts a real API server in-process for tests: a
// SQLite store in the test's temporary directory, the cluster PKI, HTTPS on
// 127.0.0.1 with a free port, and an admin client configuration.
package apiservertest
