// Package balancedallocation is the NodeResourcesBalancedAllocation plugin:
// it favours nodes whose CPU and memory would be used in similar proportion
// after placing the pod, so neither runs out while the other idles.
package balancedallocation
