package cache

import "time"

// SetNow replaces the cache's clock in tests.
func SetNow(c *Cache, now func() time.Time) { c.now = now }
