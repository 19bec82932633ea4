// Package volumebinding is the VolumeBinding plugin, after kube-scheduler's:
//
//   - PreFilter: every persistentVolumeClaim volume's claim must exist and not
//     be terminating (`persistentvolumeclaim "x" not found`); an unbound
//     claim of an Immediate class makes the pod wait for the binder; bound
//     claims' volumes and unbound WaitForFirstConsumer claims are kept for
//     Filter.
//   - Filter: a node fits when it satisfies every bound volume's node
//     affinity, and each delayed claim either has an available volume that
//     fits it on this node or a class with a provisioner.
//   - PreBind: each delayed claim is annotated with the chosen node
//     (volume.kubernetes.io/selected-node), which lets the binder pick a
//     volume there or the provisioner make one; binding then waits, at most
//     Args.BindTimeout (Kubernetes' 600s by default), until every claim is
//     Bound. A provisioner that cannot serve the node removes the
//     annotation; PreBind then fails at once (`provisioning failed for PVC
//     "x"`, as Kubernetes' checkBindings) and the pod is scheduled again.
package volumebinding
