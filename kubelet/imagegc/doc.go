// Package imagegc removes unused images when the image file system fills
// up, as the kubelet's ImageGCManager: every 5 minutes, if the file system
// holding containerd's images is at or above the high threshold (percent
// used), images no container uses (running or exited, in skiff's
// namespace) are deleted, least recently used first, until usage is back
// at the low threshold. Images younger than the minimum age (since first
// seen by this agent) are kept. Last-used times live in memory, as in the
// kubelet: after a restart every image counts from when it is first seen.
//
// The eviction manager calls FreeSpace (or DeleteUnusedImages) under
// DiskPressure. A failed collection is a Warning Event on the Node:
// FreeDiskSpaceFailed when too little could be freed, ImageGCFailed when
// collection fails twice in a row.
package imagegc
