// Package volumerestrictions is the VolumeRestrictions plugin, for the
// part that applies to skiff's volumes: a PersistentVolumeClaim with the
// ReadWriteOncePod access mode is used by one pod in the whole cluster at
// a time, so a second pod using it fits no node until the first is gone
// (or preemption removes it). (kube-scheduler's plugin also refuses two
// pods mounting the same GCE PD, EBS, RBD or iSCSI volume; skiff's node
// agent mounts none of those.)
package volumerestrictions
