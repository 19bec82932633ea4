package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/skiffkube/skiff/kubelet/testimage"
)

// Image pull secrets through kubectl, with the embedded agent on real
// containerd and a registry on 127.0.0.1 that requires a login: a pod
// naming a docker-registry secret runs; one without it waits in
// ErrImagePull/ImagePullBackOff with the registry's 401 (also in its
// Failed event); a pod of a service account with the secret gets it
// (admission copies it) and runs. Node status lists the pulled image.
func TestImagePullSecrets(t *testing.T) {
	_, k := startNodeServer(t)
	host, _ := testimage.ServeRegistry(t, "puller", "s3cret")
	image := host + "/skiff/private:v1"
	tarPath, _ := testimage.Build(t, t.TempDir())
	testimage.Push(t, tarPath, image, "puller", "s3cret")
	t.Cleanup(func() { _ = exec.Command("ctr", "--namespace", "skiff", "images", "rm", image).Run() })

	k.ok("create", "secret", "docker-registry", "regcred", "--docker-server="+host, "--docker-username=puller", "--docker-password=s3cret")
	k.ok("create", "serviceaccount", "puller")
	k.ok("patch", "serviceaccount", "puller", "-p", `{"imagePullSecrets": [{"name": "regcred"}]}`)
	pod := func(name, extra string) string {
		return podManifest(name, extra+`  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+image+`
    imagePullPolicy: Always
`)
	}
	k.okIn(pod("with-secret", "  imagePullSecrets: [{name: regcred}]\n"), "apply", "-f", "-")
	k.okIn(pod("anonymous", ""), "apply", "-f", "-")
	k.okIn(pod("by-account", "  serviceAccountName: puller\n"), "apply", "-f", "-")

	for _, name := range []string{"with-secret", "by-account"} {
		waitFor(t, k, 2*time.Minute, name+" running", func(out string) bool { return out == "true" },
			"get", "pod", name, "-o", "jsonpath={.status.containerStatuses[0].ready}")
	}
	if got := k.ok("get", "pod", "by-account", "-o", "jsonpath={.spec.imagePullSecrets[*].name}"); got != "regcred" {
		t.Errorf("by-account's imagePullSecrets = %q, want the account's regcred", got)
	}
	waitFor(t, k, 2*time.Minute, "anonymous refused with the registry's 401", func(out string) bool {
		reason, msg, _ := strings.Cut(out, " ")
		return (reason == "ErrImagePull" || reason == "ImagePullBackOff") && strings.Contains(msg, "401 Unauthorized")
	}, "get", "pod", "anonymous", "-o", "jsonpath={.status.containerStatuses[0].state.waiting.reason} {.status.containerStatuses[0].state.waiting.message}")
	waitFor(t, k, time.Minute, "the Failed event", func(out string) bool {
		return strings.Contains(out, `Failed to pull image "`+image+`": failed to pull and unpack image`) && strings.Contains(out, "401 Unauthorized")
	}, "get", "events", "--field-selector", "involvedObject.name=anonymous", "-o", "jsonpath={.items[*].message}")

	// The node's status lists the image under the name it was pulled by.
	waitFor(t, k, 2*time.Minute, "node status lists the pulled image", func(out string) bool {
		return strings.Contains(out, image)
	}, "get", "node", nodeName, "-o", "jsonpath={.status.images[*].names}")
}
