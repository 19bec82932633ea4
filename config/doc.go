// Package config turns flags, SKIFF_* environment variables, an optional YAML
// file and defaults into one validated, typed configuration.
//
// Precedence is flag > environment > file > default, as with every viper-based
// tool: a value given explicitly for this run beats one kept in the
// environment, which beats the file an operator keeps under version control.
// Each setting has one name used three ways: the flag --https-listen-port, the
// variable SKIFF_HTTPS_LISTEN_PORT and the file key https-listen-port. Names
// follow k3s where k3s has the same setting, because that is what users of
// SQL-backed Kubernetes already know.
//
// Loading is pure: LoadServer validates every value and reports all bad ones at
// once, each naming the setting, where the value came from and what would be
// valid. Side effects on disk (the data directory, the generated token and the
// encryption key) happen only in Server.Prepare, so a typo never leaves a
// half-created data directory behind.
package config
