//go:build linux

package podruntime

import (
	"context"
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/kubelet/agent"
	"github.com/skiffkube/skiff/kubelet/testimage"
)

// TestImagePullSecrets runs pods whose image lives in a registry on
// 127.0.0.1 that requires a login: with the right imagePullSecret the
// image is pulled and runs; without one, with a missing one, or with a
// wrong password, the container waits in ErrImagePull with the registry's
// 401 and then in ImagePullBackOff.
func TestImagePullSecrets(t *testing.T) {
	e := newEnv(t, "sktpull0", "10.251.52.0/24")
	rec := record.NewFakeRecorder(1000)
	e.rt.rec = rec
	host, _ := testimage.ServeRegistry(t, "puller", "s3cret")
	image := host + "/skiff/private:v1"
	tarPath, _ := testimage.Build(t, t.TempDir())
	testimage.Push(t, tarPath, image, "puller", "s3cret")
	t.Cleanup(func() { _ = e.ctr.RemoveImage(context.Background(), image) })

	dockerConfig := func(name, registry, user, password string) {
		authJSON := `{"auths": {"` + registry + `": {"auth": "` + base64.StdEncoding.EncodeToString([]byte(user+":"+password)) + `"}}}`
		e.objs.mu.Lock()
		e.objs.secrets["default/"+name] = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(authJSON)}}
		e.objs.mu.Unlock()
	}
	dockerConfig("wrong", host, "puller", "wrong")
	dockerConfig("other-registry", "registry.example.com", "puller", "s3cret")
	dockerConfig("regcred", "http://"+host+"/skiff", "puller", "s3cret")

	podWith := func(name string, secrets ...string) *corev1.Pod {
		pod := newTestPod(name)
		c := appContainer("main", "sleep")
		c.Image, c.ImagePullPolicy = image, corev1.PullIfNotPresent
		pod.Spec.Containers = []corev1.Container{c}
		for _, s := range secrets {
			pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
		}
		t.Cleanup(func() { e.rt.KillPod(context.Background(), pod, 0) })
		return pod
	}

	for i, pod := range []*corev1.Pod{
		podWith("anonymous"),
		podWith("wrong-password", "wrong"),
		podWith("other-registry", "other-registry"),
		podWith("missing-secret", "absent"),
	} {
		ip := "10.251.52." + string(rune('2'+i))
		for j, want := range []string{"ErrImagePull", "ImagePullBackOff"} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			st, err := e.rt.SyncPod(ctx, pod, ip)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			w := st.Containers[0].State.Waiting
			if w == nil || w.Reason != want || !strings.Contains(w.Message, "401 Unauthorized") {
				t.Errorf("%s, sync %d: %+v, want waiting %s with the registry's 401", pod.Name, j, st.Containers[0].State, want)
			}
			if j == 0 && w != nil {
				t.Logf("%s: %s: %s", pod.Name, w.Reason, w.Message)
			}
			if j == 0 && w != nil && !strings.HasPrefix(w.Message, `failed to pull and unpack image "`+image+`": `) {
				t.Errorf("%s: message %q, want containerd CRI's wording", pod.Name, w.Message)
			}
		}
	}

	// The right secret, after a wrong one: the pull tries both, in order.
	// Another pod's back-off on the same image does not hold it back.
	good := podWith("good", "wrong", "absent", "regcred")
	st := e.syncUntil(t, good, "10.251.52.9", "running with the pulled image", func(s agent.PodState) bool {
		return s.Containers[0].State.Running != nil
	})
	if st.Containers[0].ImageID == "" {
		t.Errorf("no image ID: %+v", st.Containers[0])
	}

	// Node status lists the pulled image by repo digest and tag (with the
	// names of the imported test image: they are the same image).
	nodeImages, err := e.rt.NodeImages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ni := range nodeImages {
		if slices.Contains(ni.Names, host+"/skiff/private@"+st.Containers[0].ImageID) && slices.Contains(ni.Names, image) && ni.SizeBytes > 0 {
			found = true
		}
	}
	if !found {
		t.Errorf("NodeImages = %+v, want names %s@%s and %s", nodeImages, host+"/skiff/private", st.Containers[0].ImageID, image)
	}

	var events []string
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	all := strings.Join(events, "\n")
	for _, want := range []string{
		`Normal Pulling Pulling image "` + image + `"`,
		`Normal Pulled Successfully pulled image "` + image + `" in `,
		"Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets (default/absent); attempting to pull the image may not succeed.",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("events lack %q:\n%s", want, all)
		}
	}
}
