// Package balancedallocation is the NodeResourcesBalancedAllocation plugin:
// it favours nodes whose resources (CPU and memory unless configured) would
// be used in similar proportion after placing the pod, so that none runs
// out while the others idle.
package balancedallocation
