// Package persistentvolume is the PersistentVolume binder, as Kubernetes'
// persistentvolume-binder-controller: it binds each claim to the smallest
// available volume that fits it (same class, enough capacity, every access
// mode, same volume mode, labels matching the claim's spec.selector, node
// affinity matching the claim's selected node for WaitForFirstConsumer
// classes), keeps the phases of both sides
// (Pending/Available/Bound/Released/Lost), marks claims it cannot bind for
// their class's provisioner to serve, and reclaims released volumes: Delete
// removes the PersistentVolume object, Retain keeps it Released.
//
// Binding is written in Kubernetes' order — volume claimRef, volume status,
// claim volumeName, claim status — so that a crash between two writes is
// finished by the next sync of either side.
package persistentvolume
