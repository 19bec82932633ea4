// Package localpath is skiff's built-in dynamic provisioner (provisioner
// name skiff.io/local-path, the default StorageClass local-path), in the
// manner of k3s' local-path-provisioner: for a claim of a class it serves,
// once the scheduler has annotated the claim with the node its first pod
// goes to (volume.kubernetes.io/selected-node) and the binder has found no
// existing volume and marked it volume.kubernetes.io/storage-provisioner:
// skiff.io/local-path, it creates a `local`
// PersistentVolume named pvc-<claim uid> at <dir>/pvc-<claim uid> with a
// required node affinity to that node, pre-bound to the claim; the binder
// (controllers/persistentvolume) then binds the pair. <dir> is the node's
// skiff.io/local-path-dir annotation, which the node agent sets to
// <agent data dir>/storage (hollow nodes announce DefaultDir).
//
// Failures are ProvisioningFailed events worded as Kubernetes' external
// provisioners word them ("failed to provision volume with StorageClass
// \"local-path\": …"). A claim with a selector, a volumeMode Block claim
// (local-path volumes are filesystems only) and access modes other than
// ReadWriteOnce(Pod) fail for good. A failure of the selected node — it does
// not exist, or names no (absolute) local-path directory — also removes the
// claim's volume.kubernetes.io/selected-node annotation, as the
// external-provisioner does to reschedule: the scheduler's VolumeBinding
// plugin, waiting in PreBind, sees the annotation gone and schedules the
// pod again.
//
// Nothing here touches a disk: the node agent creates the directory when a
// pod first mounts the volume and removes it once the volume object is gone.
package localpath
