// Package pgtemp creates and drops throw-away PostgreSQL databases, so each
// benchmark run starts skiff and kine on empty databases of their own and
// leaves nothing behind.
package pgtemp
