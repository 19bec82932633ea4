package sharedinformers

import (
	admissionregistration "k8s.io/client-go/informers/admissionregistration"
	apiserverinternal "k8s.io/client-go/informers/apiserverinternal"
	apps "k8s.io/client-go/informers/apps"
	autoscaling "k8s.io/client-go/informers/autoscaling"
	batch "k8s.io/client-go/informers/batch"
	certificates "k8s.io/client-go/informers/certificates"
	coordination "k8s.io/client-go/informers/coordination"
	core "k8s.io/client-go/informers/core"
	discovery "k8s.io/client-go/informers/discovery"
	events "k8s.io/client-go/informers/events"
	extensions "k8s.io/client-go/informers/extensions"
	flowcontrol "k8s.io/client-go/informers/flowcontrol"
	lifecycle "k8s.io/client-go/informers/lifecycle"
	networking "k8s.io/client-go/informers/networking"
	node "k8s.io/client-go/informers/node"
	policy "k8s.io/client-go/informers/policy"
	rbac "k8s.io/client-go/informers/rbac"
	resource "k8s.io/client-go/informers/resource"
	scheduling "k8s.io/client-go/informers/scheduling"
	storage "k8s.io/client-go/informers/storage"
	storagemigration "k8s.io/client-go/informers/storagemigration"
)

// The API groups, as the client-go factory builds them, but on the view:
// the pool's factory has no namespace or list-option tweaks.
func (v *View) Admissionregistration() admissionregistration.Interface {
	return admissionregistration.New(v, "", nil)
}

func (v *View) Internal() apiserverinternal.Interface {
	return apiserverinternal.New(v, "", nil)
}

func (v *View) Apps() apps.Interface {
	return apps.New(v, "", nil)
}

func (v *View) Autoscaling() autoscaling.Interface {
	return autoscaling.New(v, "", nil)
}

func (v *View) Batch() batch.Interface {
	return batch.New(v, "", nil)
}

func (v *View) Certificates() certificates.Interface {
	return certificates.New(v, "", nil)
}

func (v *View) Coordination() coordination.Interface {
	return coordination.New(v, "", nil)
}

func (v *View) Core() core.Interface {
	return core.New(v, "", nil)
}

func (v *View) Discovery() discovery.Interface {
	return discovery.New(v, "", nil)
}

func (v *View) Events() events.Interface {
	return events.New(v, "", nil)
}

func (v *View) Extensions() extensions.Interface {
	return extensions.New(v, "", nil)
}

func (v *View) Flowcontrol() flowcontrol.Interface {
	return flowcontrol.New(v, "", nil)
}

func (v *View) Lifecycle() lifecycle.Interface {
	return lifecycle.New(v, "", nil)
}

func (v *View) Networking() networking.Interface {
	return networking.New(v, "", nil)
}

func (v *View) Node() node.Interface {
	return node.New(v, "", nil)
}

func (v *View) Policy() policy.Interface {
	return policy.New(v, "", nil)
}

func (v *View) Rbac() rbac.Interface {
	return rbac.New(v, "", nil)
}

func (v *View) Resource() resource.Interface {
	return resource.New(v, "", nil)
}

func (v *View) Scheduling() scheduling.Interface {
	return scheduling.New(v, "", nil)
}

func (v *View) Storage() storage.Interface {
	return storage.New(v, "", nil)
}

func (v *View) Storagemigration() storagemigration.Interface {
	return storagemigration.New(v, "", nil)
}
